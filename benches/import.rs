//! `make bench`: import and replay throughput (MB/s) and peak memory on a
//! large synthetic Claude Code session.
//!
//! The session is built at bench time, in a temp dir, by repeating a shared
//! transcript (`../shared/transcripts/claude_code/*.jsonl`, or `$TRANSCRIPTS`)
//! with fresh ids: every id gets a `-rK` suffix and each repetition's root is
//! chained to the previous repetition's last record, so the file is one long
//! conversation. Nothing of it is kept. Without the transcripts the bench
//! prints a skip message and exits 0.
//!
//! Sizes: 300 MB under `cargo bench` (targets: import ≥ 50 MB/s, replay peak
//! memory < 100 MB), 4 MB under `cargo test --all-targets` (so the bench
//! cannot rot); `IMPORT_BENCH_MB=N` overrides both. Peak memory is the
//! process's peak resident set (`VmHWM`), reset before each phase through
//! `/proc/self/clear_refs` (Linux; `n/a` elsewhere).

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use ctxlab::import::{import_file_sessions_lazily, ImportOptions, ImportedSession};
use ctxlab::replay::profiles::{replay_with, ReplayOptions};
use serde_json::Value;

const SOURCE: &str = "claude_code/session-share__general-tool-calls.jsonl";
const PROFILE: &str = "hardened";

fn transcripts() -> PathBuf {
    std::env::var_os("TRANSCRIPTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/transcripts"))
}

/// Add `-rK` to every id-like string field of a record, recursively.
fn refresh_ids(v: &mut Value, k: usize) {
    const ID_KEYS: &[&str] = &[
        "uuid",
        "parentUuid",
        "logicalParentUuid",
        "leafUuid",
        "id",
        "tool_use_id",
        "sourceToolUseID",
        "toolUseID",
    ];
    match v {
        Value::Object(map) => {
            for (key, val) in map.iter_mut() {
                match val {
                    Value::String(s) if ID_KEYS.contains(&key.as_str()) => {
                        s.push_str(&format!("-r{k}"));
                    }
                    _ => refresh_ids(val, k),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|x| refresh_ids(x, k)),
        _ => {}
    }
}

/// Write at least `target` bytes of repetitions of `source` to `out`.
fn build(source: &Path, out: &Path, target: u64) -> u64 {
    let lines: Vec<Value> = BufReader::new(std::fs::File::open(source).unwrap())
        .lines()
        .map_while(Result::ok)
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with("//"))
        .filter_map(|l| serde_json::from_str(&l).ok())
        .collect();
    let mut w = BufWriter::new(std::fs::File::create(out).unwrap());
    let (mut written, mut k) = (0u64, 0usize);
    let mut last_uuid: Option<String> = None;
    while written < target {
        let mut tail = None;
        for rec in &lines {
            let mut r = rec.clone();
            refresh_ids(&mut r, k);
            if r.get("parentUuid").is_some_and(Value::is_null) && r.get("uuid").is_some() {
                if let Some(prev) = &last_uuid {
                    r["parentUuid"] = Value::String(prev.clone());
                }
            }
            if let Some(u) = r.get("uuid").and_then(Value::as_str) {
                if r.get("isSidechain") != Some(&Value::Bool(true)) {
                    tail = Some(u.to_string());
                }
            }
            let text = r.to_string();
            w.write_all(text.as_bytes()).unwrap();
            w.write_all(b"\n").unwrap();
            written += text.len() as u64 + 1;
        }
        last_uuid = tail.or(last_uuid);
        k += 1;
    }
    w.flush().unwrap();
    written
}

/// Reset the peak resident set so the next phase is measured alone.
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Peak resident set since the last reset, in MB.
fn peak_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// CPU seconds (user + system) this process has used, from `/proc/self/stat`
/// (at the usual 100 ticks per second): throughput per CPU second does not
/// depend on how busy the shared machine is.
fn cpu_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

fn per_cpu(mb: f64, start: Option<f64>) -> String {
    match (start, cpu_s()) {
        (Some(a), Some(b)) if b > a => format!("{:.1}", mb / (b - a)),
        _ => "n/a".to_string(),
    }
}

fn show(v: Option<f64>) -> String {
    v.map_or("n/a".to_string(), |v| format!("{v:.0}"))
}

/// The session as `lab replay` imports it: the main conversation left in
/// the file, streamed by the replay.
fn import(file: &Path) -> ImportedSession {
    let mut sessions = import_file_sessions_lazily(file, &ImportOptions::default()).unwrap();
    assert_eq!(sessions.len(), 1);
    sessions.remove(0)
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let source = transcripts().join(SOURCE);
    if !source.exists() {
        println!(
            "import bench skipped: {} not found (set TRANSCRIPTS=DIR)",
            source.display()
        );
        return;
    }
    let mb: u64 = std::env::var("IMPORT_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if full { 300 } else { 4 });
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.jsonl");
    let bytes = build(&source, &file, mb * 1_000_000);
    let size_mb = bytes as f64 / 1e6;

    reset_peak();
    let (t, cpu) = (Instant::now(), cpu_s());
    let session = import(&file);
    let import_s = t.elapsed().as_secs_f64();
    let import_cpu = per_cpu(size_mb, cpu);
    let import_peak = peak_mb();
    let messages = session.main_len();
    assert!(
        messages > 0,
        "the synthetic session has a main conversation"
    );
    drop(session);

    reset_peak();
    let (t, cpu) = (Instant::now(), cpu_s());
    let session = import(&file);
    let report = replay_with(&session, PROFILE, &ReplayOptions::default()).unwrap();
    let replay_s = t.elapsed().as_secs_f64();
    let replay_cpu = per_cpu(size_mb, cpu);
    let replay_peak = peak_mb();
    assert_eq!(report.messages, messages);
    let persisted_mb = report.bytes_persisted as f64 / 1e6;

    println!("| phase | file MB | main msgs | s | MB/s | MB per CPU s | peak MB |");
    println!("|---|---|---|---|---|---|---|");
    println!(
        "| import | {size_mb:.0} | {messages} | {import_s:.2} | {:.1} | {import_cpu} | {} |",
        size_mb / import_s,
        show(import_peak)
    );
    println!(
        "| import + replay ({PROFILE}) | {size_mb:.0} | {messages} | {replay_s:.2} | {:.1} | {replay_cpu} | {} |",
        size_mb / replay_s,
        show(replay_peak)
    );
    println!(
        "\nThe replay persisted {} tool results ({persisted_mb:.0} MB).",
        report.persisted_files
    );
}
