//! `make bench`: policy replay throughput and memory, every policy with
//! cost and retention, on one core and on two, for three workloads side by
//! side: generated sessions, the shared real Claude Code logs, and the
//! 500-run real corpus; then the time per call of one real log cut to 31
//! and to 124 calls.
//!
//! - **generated**: made at bench time, in a temp dir, from the shapes of
//!   the shared sessions (`claude_code/*` and `openai_format/*` under the
//!   transcripts): each generated session takes, with a fixed seed
//!   (ChaCha12, seed 7), a shared session and a run of its tool results
//!   (their sizes, one call per turn, 8 to 40 calls), so sizes follow the
//!   real sessions' while the corpus stays replayable in minutes.
//! - **real logs**: the four largest `claude_code/*` logs, read in place.
//! - **500-run corpus**: `corpus/*.tar.xz` (mini-swe-agent trajectories),
//!   read from the archive as a user would (decompression included).
//! - **per call**: the largest Claude Code log cut (whole records, in a temp
//!   dir) before its 32nd and its 125th main-chain reply; CPU time per
//!   policy-call of each, one job. Quadratic work shows as a ratio well
//!   over 1.
//!
//! The transcripts are `$CTXLAB_TRANSCRIPTS` (or `$TRANSCRIPTS`), else
//! `../shared/transcripts`; without them the bench prints a skip message
//! and exits 0. Nothing it writes is kept.
//!
//! Sizes: 1,000 generated sessions under `cargo bench`, 3 under `cargo test
//! --all-targets` (so the bench cannot rot; the real workloads are then
//! cut to 8 calls, the archive skipped); `CORPUS_BENCH_SESSIONS=N`
//! overrides the generated count. Printed per workload and `--jobs` value:
//! policy-calls (reported calls; each is replayed twice, the retention run
//! plants facts in a second run), policy-calls per wall second and per CPU
//! second, peak resident set (`VmHWM`, reset before each run) against the
//! target (4x the largest session file + 50 MB), and the 1→2 speed-up. The
//! speed-up is the machine's as much as the code's: on a shared machine it
//! shows what the scheduler gave this process.

use std::path::{Path, PathBuf};
use std::time::Instant;

use ctxlab::import::{import_file_sessions, ImportOptions};
use ctxlab::message::{Block, Message};
use ctxlab::replay::policies::{Measure, Pricing};
use ctxlab::replay::stream::{self, Streamed};
use rand::{Rng, SeedableRng};

fn transcripts() -> PathBuf {
    std::env::var_os("CTXLAB_TRANSCRIPTS")
        .or_else(|| std::env::var_os("TRANSCRIPTS"))
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/transcripts"))
}

/// Each shared session's tool result sizes, in order (sessions with at least 8).
fn shapes(dir: &Path) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    for sub in ["claude_code", "openai_format"] {
        let Ok(entries) = std::fs::read_dir(dir.join(sub)) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        files.sort();
        for f in files {
            for s in import_file_sessions(&f, &ImportOptions::default()).unwrap_or_default() {
                let sizes: Vec<usize> = s
                    .main
                    .iter()
                    .flat_map(|m| m.blocks())
                    .filter_map(|b| match b {
                        Block::ToolResult { content, .. } => Some(content.chars().count()),
                        _ => None,
                    })
                    .collect();
                if sizes.len() >= 8 {
                    out.push(sizes);
                }
            }
        }
    }
    out
}

/// A coding session whose tool results have `sizes`, one call per turn.
fn session(sizes: &[usize]) -> Vec<Message> {
    let mut out = vec![Message::user_text("fix the failing test")];
    for (t, size) in sizes.iter().enumerate() {
        let id = format!("toolu_{t:04}");
        out.push(Message::assistant(vec![Block::ToolUse {
            id: id.clone(),
            name: "bash".into(),
            input: serde_json::json!({"command": format!("cat src/lib{t}.rs")}).into(),
        }]));
        let line = format!("fn f{t}() {{ /* line of src/lib{t}.rs */ }}\n");
        let text: String = line.chars().cycle().take((*size).max(1)).collect();
        out.push(Message::tool_results(vec![(id, text)]));
    }
    out.push(Message::assistant(vec![Block::Text {
        text: "done".into(),
    }]));
    out
}

/// Write `n` generated sessions into `dir`.
fn corpus(dir: &Path, shapes: &[Vec<usize>], n: usize) {
    let mut rng = rand_chacha::ChaCha12Rng::seed_from_u64(7);
    for i in 0..n {
        let shape = &shapes[rng.gen_range(0..shapes.len())];
        let len = rng.gen_range(8..=40usize).min(shape.len());
        let start = rng.gen_range(0..=shape.len() - len);
        let text = serde_json::to_string(&session(&shape[start..start + len])).unwrap();
        std::fs::write(dir.join(format!("s{i:04}.json")), text).unwrap();
    }
}

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

fn measure() -> Measure {
    let o = ctxlab::replay::cost_arms::CostOptions::default()
        .with_sheet(ctxlab::cache::prices::DEFAULT_SHEET)
        .unwrap();
    Measure {
        retention: true,
        pricing: Some(Pricing {
            provider: o.provider,
            sheet: o.sheet,
            prices: o.prices,
            by_model: false,
        }),
        ..Measure::default()
    }
}

/// CPU seconds (user + system) this process has used, from `/proc/self/stat`
/// (at the usual 100 ticks per second): per CPU second, a rate does not
/// depend on how busy the shared machine is.
fn cpu_s() -> f64 {
    let read = || -> Option<f64> {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        let after = &stat[stat.rfind(')')? + 2..];
        let f: Vec<&str> = after.split_whitespace().collect();
        Some((f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?) / 100.0)
    };
    read().unwrap_or(f64::NAN)
}

/// One replay's figures.
struct Figures {
    calls: f64,
    wall: f64,
    cpu: f64,
    peak: Option<f64>,
}

/// One replay of `paths` (files, directories, archives) as a streamed corpus
/// on `jobs` threads, JSON Lines to nowhere (what `lab replay … --format
/// jsonl` does).
fn run(paths: &[PathBuf], jobs: usize) -> Figures {
    let inputs = ctxlab::import::corpus::expand(paths).unwrap();
    let how = Streamed {
        format: ctxlab::render::Format::Json,
        jsonl: true,
        per_session: false,
        jobs,
        shard: None,
    };
    reset_peak();
    let (t, cpu) = (Instant::now(), cpu_s());
    let agg = stream::run(
        &inputs,
        &["all".to_string()],
        ctxlab::replay::profiles::DEFAULT_PATH_LEN,
        &ImportOptions::default(),
        &measure(),
        how,
        &mut std::io::sink(),
    )
    .unwrap();
    let (wall, cpu) = (t.elapsed().as_secs_f64(), cpu_s() - cpu);
    let calls: f64 = agg
        .policies()
        .iter()
        .map(|p| agg.values(p, "calls").iter().sum::<f64>())
        .sum();
    Figures {
        calls,
        wall,
        cpu,
        peak: peak_mb(),
    }
}

/// The Claude Code log array at `src` cut before the first record of its
/// main chain's `calls + 1`-th reply (replies counted by message id), in
/// `dir`; `None` when it is not a JSON array.
fn cut(src: &Path, calls: usize, dir: &Path) -> Option<PathBuf> {
    let records: Vec<serde_json::Value> = serde_json::from_slice(&std::fs::read(src).ok()?).ok()?;
    let mut ids: Vec<&str> = Vec::new();
    let mut keep = records.len();
    for (i, r) in records.iter().enumerate() {
        let main = r["type"] == "assistant" && r["isSidechain"] != true;
        let Some(id) = r["message"]["id"].as_str().filter(|_| main) else {
            continue;
        };
        if !ids.contains(&id) {
            ids.push(id);
            if ids.len() == calls + 1 {
                keep = i;
                break;
            }
        }
    }
    let name = src.file_stem()?.to_string_lossy().into_owned();
    let out = dir.join(format!("{name}-cut{calls}.json"));
    std::fs::write(&out, serde_json::to_string(&records[..keep]).ok()?).ok()?;
    Some(out)
}

/// The `n` largest files of `dir`, largest first.
fn largest(dir: &Path, n: usize) -> Vec<(u64, PathBuf)> {
    let mut files: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.metadata().ok()?.len(), e.path())))
        .filter(|(_, p)| p.is_file())
        .collect();
    files.sort_by(|a, b| b.cmp(a));
    files.truncate(n);
    files
}

/// The largest member of a tar archive in MB, as `tar -tv` lists it (NaN
/// without `tar`).
fn largest_member_mb(archive: &Path) -> f64 {
    let Ok(out) = std::process::Command::new("tar")
        .arg("-tvf")
        .arg(archive)
        .output()
    else {
        return f64::NAN;
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2)?.parse::<f64>().ok())
        .fold(f64::NAN, f64::max)
        / 1e6
}

/// One workload at `--jobs 1` and `--jobs 2`, printed as a table row.
fn row(name: &str, paths: &[PathBuf], largest_mb: f64) {
    let one = run(paths, 1);
    let two = run(paths, 2);
    let target = 4.0 * largest_mb + 50.0;
    let mb = |p: Option<f64>| p.map_or("n/a".to_string(), |m| format!("{m:.0}"));
    println!(
        "| {name} | {:.0} | {:.0} | {:.0} | {:.0} | {:.2}x | {} / {} | {target:.0} |",
        one.calls,
        one.calls / one.wall,
        one.calls / one.cpu,
        two.calls / two.wall,
        (two.calls / two.wall) / (one.calls / one.wall),
        mb(one.peak),
        mb(two.peak),
    );
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let dir = transcripts();
    let shapes = shapes(&dir);
    if shapes.is_empty() {
        println!(
            "corpus bench skipped: no shared sessions under {} (set CTXLAB_TRANSCRIPTS=DIR)",
            dir.display()
        );
        return;
    }
    let n = std::env::var("CORPUS_BENCH_SESSIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if full { 1000 } else { 3 });
    let tmp = tempfile::tempdir().unwrap();
    let generated = tmp.path().join("generated");
    std::fs::create_dir(&generated).unwrap();
    corpus(&generated, &shapes, n);
    let policies = ctxlab::zoo::list::names().len();
    println!(
        "policy replays, {policies} policies, --cost --retention, JSON Lines (each policy-call is replayed twice: retention plants facts in a second run; the 1→2 speed-up is what this machine's scheduler gave)"
    );
    println!();
    println!("| workload | policy-calls | --jobs 1 calls/s | --jobs 1 calls/CPU s | --jobs 2 calls/s | 1→2 | peak RSS MB (1 / 2 jobs) | RSS target MB |");
    println!("|---|---|---|---|---|---|---|---|");
    let biggest = |paths: &[PathBuf]| {
        paths
            .iter()
            .filter_map(|p| std::fs::metadata(p).ok())
            .map(|m| m.len() as f64 / 1e6)
            .fold(0.0, f64::max)
    };
    let gen_files: Vec<PathBuf> = largest(&generated, usize::MAX)
        .into_iter()
        .map(|(_, p)| p)
        .collect();
    row(
        &format!(
            "generated ({n} sessions, shapes of {}, seed 7)",
            shapes.len()
        ),
        std::slice::from_ref(&generated),
        biggest(&gen_files),
    );
    let logs = largest(&dir.join("claude_code"), 4);
    let real: Vec<PathBuf> = if full {
        logs.iter().map(|(_, p)| p.clone()).collect()
    } else {
        // Under `cargo test` the logs are cut to 8 calls each.
        logs.iter()
            .filter_map(|(_, p)| cut(p, 8, tmp.path()))
            .collect()
    };
    let total: u64 = real
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    let names: Vec<String> = real
        .iter()
        .filter_map(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .collect();
    row(
        &format!(
            "{} real Claude Code logs ({:.1} MB: {})",
            real.len(),
            total as f64 / 1e6,
            names.join(", ")
        ),
        &real,
        biggest(&real),
    );
    let archives: Vec<PathBuf> = largest(&dir.join("corpus"), usize::MAX)
        .into_iter()
        .map(|(_, p)| p)
        .filter(|p| p.to_string_lossy().ends_with(".tar.xz"))
        .collect();
    match archives.first() {
        Some(archive) if full => {
            // A session's state is bounded by its member, not the archive.
            row(
                &format!(
                    "real corpus ({})",
                    archive.file_name().unwrap().to_string_lossy()
                ),
                std::slice::from_ref(archive),
                largest_member_mb(archive),
            );
        }
        Some(_) => println!(
            "| real corpus | skipped under cargo test (decompresses ~100 MB) | | | | | | |"
        ),
        None => println!("| real corpus | no corpus/*.tar.xz under the transcripts | | | | | | |"),
    }
    println!();
    let Some((_, log)) = logs.first() else {
        println!("per call: no Claude Code log to cut");
        return;
    };
    let (short, long) = if full { (31, 124) } else { (4, 8) };
    let mut per = Vec::new();
    for calls in [short, long] {
        let Some(file) = cut(log, calls, tmp.path()) else {
            println!("per call: {} is not a JSON array log", log.display());
            return;
        };
        let f = run(&[file], 1);
        per.push(1e6 * f.cpu / f.calls);
    }
    println!(
        "per call ({} cut to {short} and {long} main-chain replies, --jobs 1, CPU): {:.0} µs at {short}, {:.0} µs at {long} = {:.2}x (target ≤ 1.3x)",
        log.file_name().unwrap().to_string_lossy(),
        per[0],
        per[1],
        per[1] / per[0]
    );
}
