//! `make bench`: corpus replay throughput, every policy with cost and
//! retention, on one core and on two.
//!
//! The corpus is generated at bench time, in a temp dir, from the shapes of
//! the shared sessions (`../shared/transcripts/claude_code/*` and
//! `openai_format/*`, or `$TRANSCRIPTS`): each generated session takes, with
//! a fixed seed (ChaCha12, seed 7), a shared session and a run of its tool
//! results (their sizes, one call per turn, 8 to 40 calls), so sizes follow
//! the real sessions' while the corpus stays replayable in minutes. Nothing
//! of it is kept. Without the transcripts the bench prints a skip message
//! and exits 0.
//!
//! Sizes: 1,000 sessions under `cargo bench`, 3 under `cargo test
//! --all-targets` (so the bench cannot rot); `CORPUS_BENCH_SESSIONS=N`
//! overrides both. Printed per `--jobs` value: policy-calls (reported calls;
//! each is replayed twice, the retention run plants facts in a second run),
//! wall seconds, policy-calls per second, peak resident set (`VmHWM`, reset
//! before each phase), and the 1→2 speed-up. The speed-up is the machine's
//! as much as the code's: on a shared machine it shows what the scheduler
//! gave this process.

use std::path::{Path, PathBuf};
use std::time::Instant;

use ctxlab::import::{import_file_sessions, ImportOptions};
use ctxlab::message::{Block, Message};
use ctxlab::replay::policies::{Measure, Pricing};
use ctxlab::replay::stream::{self, Streamed};
use rand::{Rng, SeedableRng};

fn transcripts() -> PathBuf {
    std::env::var_os("TRANSCRIPTS")
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
            input: serde_json::json!({"command": format!("cat src/lib{t}.rs")}),
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

/// One replay of the corpus on `jobs` threads: (policy-calls, seconds, peak MB).
fn run(dir: &Path, jobs: usize) -> (f64, f64, Option<f64>) {
    let inputs = ctxlab::import::corpus::expand(&[dir.to_path_buf()]).unwrap();
    let how = Streamed {
        format: ctxlab::render::Format::Table,
        jsonl: false,
        per_session: false,
        jobs,
        shard: None,
    };
    reset_peak();
    let t = Instant::now();
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
    let secs = t.elapsed().as_secs_f64();
    let calls: f64 = agg
        .policies()
        .iter()
        .map(|p| agg.values(p, "calls").iter().sum::<f64>())
        .sum();
    (calls, secs, peak_mb())
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let dir = transcripts();
    let shapes = shapes(&dir);
    if shapes.is_empty() {
        println!(
            "corpus bench skipped: no shared sessions under {} (set TRANSCRIPTS=DIR)",
            dir.display()
        );
        return;
    }
    let n = std::env::var("CORPUS_BENCH_SESSIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if full { 1000 } else { 3 });
    let tmp = tempfile::tempdir().unwrap();
    corpus(tmp.path(), &shapes, n);
    let policies = ctxlab::zoo::list::names().len();
    println!(
        "corpus replay: {n} generated sessions (shapes of {} shared ones, seed 7) × {policies} policies, --cost --retention",
        shapes.len()
    );
    let mut first = None;
    for jobs in [1, 2] {
        let (calls, secs, peak) = run(tmp.path(), jobs);
        let rate = calls / secs;
        let peak = peak.map_or("n/a".to_string(), |m| format!("{m:.0} MB"));
        let speedup = first.map_or(String::new(), |r: f64| {
            format!(", {:.2}x of --jobs 1", rate / r)
        });
        println!(
            "  --jobs {jobs}: {calls:.0} policy-calls in {secs:.1} s = {rate:.0} policy-calls/s, peak RSS {peak}{speedup}"
        );
        first.get_or_insert(rate);
    }
    println!(
        "  (each policy-call is replayed twice: retention plants facts in a second run; the speed-up is what this machine's scheduler gave)"
    );
}
