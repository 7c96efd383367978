//! `make bench`: what the external-policy protocol costs per model call,
//! and what a dump weighs per call.
//!
//! A generated session (a task, then tool calls with results of 300 to
//! 3,000 characters; ChaCha12, seed 11) is replayed under `none` and under
//! `exec:python3 examples/policies/echo.py`, the smallest policy that
//! speaks `ctxlab.policy/1` (it sends the history unchanged, so both runs
//! make the same requests). The difference per call is the protocol's
//! overhead: ctxlab writing the `prepare` line (the new messages and their
//! token counts), Python reading and answering it, ctxlab reading the
//! answer. Target: at most 1 ms per call. Then `none` is replayed with
//! `--dump`, and the bytes written per call are printed.
//!
//! Sizes: 400 calls under `cargo bench`, 20 under `cargo test
//! --all-targets` (so the bench cannot rot). Without python3 the protocol
//! part prints a skip message.

use std::time::Instant;

use ctxlab::message::{Block, Message};
use ctxlab::replay::dump::DumpTarget;
use ctxlab::replay::policies::{compare_one, compare_set_up, Measure, SessionSetup};
use rand::{Rng, SeedableRng};

fn session(calls: usize) -> Vec<Message> {
    let mut rng = rand_chacha::ChaCha12Rng::seed_from_u64(11);
    let mut out = vec![Message::user_text("fix the failing test")];
    for t in 0..calls {
        let id = format!("toolu_{t:05}");
        out.push(Message::assistant(vec![Block::ToolUse {
            id: id.clone(),
            name: "bash".into(),
            input: serde_json::json!({"command": format!("cat src/m{t}.rs")}).into(),
        }]));
        let size = rng.gen_range(300..3_000);
        out.push(Message::tool_results(vec![(id, "x".repeat(size))]));
    }
    out.push(Message::assistant(vec![Block::Text {
        text: "done".into(),
    }]));
    out
}

fn timed(messages: &[Message], policy: &str, measure: &Measure) -> (f64, usize) {
    let start = Instant::now();
    let run = compare_one("bench", messages, policy, 60, measure).expect("the replay runs");
    (start.elapsed().as_secs_f64(), run.run.calls.len())
}

fn dir_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| match e.file_type() {
                    Ok(t) if t.is_dir() => dir_bytes(&e.path()),
                    _ => e.metadata().map(|m| m.len()).unwrap_or(0),
                })
                .sum()
        })
        .unwrap_or(0)
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let calls = if bench { 400 } else { 20 };
    let messages = session(calls);
    let measure = Measure::default();
    let (none_s, n) = timed(&messages, "none", &measure);
    let echo = format!("{}/examples/policies/echo.py", env!("CARGO_MANIFEST_DIR"));
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok()
    {
        let spec = format!("exec:python3 {echo}");
        let (exec_s, m) = timed(&messages, &spec, &measure);
        assert_eq!(n, m, "the echo policy makes the same calls");
        let per_call_ms = (exec_s - none_s) * 1e3 / n as f64;
        println!(
            "exec protocol: {n} calls, none {none_s:.3} s, exec (python echo) {exec_s:.3} s: \
             {per_call_ms:.3} ms per call beyond none (target <= 1 ms; includes the process start)"
        );
    } else {
        println!("SKIP exec protocol: python3 is not installed");
    }
    let dir = tempfile::tempdir().expect("a temp dir");
    let setup = SessionSetup {
        dump: Some(DumpTarget {
            dir: dir.path().join("bench"),
            session: "bench".into(),
            lines: (1..=messages.len()).collect(),
            wire: Default::default(),
            to: Default::default(),
            source_format: "anthropic",
            system: Vec::new(),
        }),
        ..SessionSetup::default()
    };
    let run = compare_set_up(
        "bench",
        &messages,
        &"none".parse().expect("a policy spec"),
        60,
        &measure,
        &setup,
    )
    .expect("the replay runs");
    let n = run.run.calls.len();
    let bytes = dir_bytes(dir.path());
    assert!(bytes > 0, "the dump was written");
    println!(
        "dump: {n} calls, {bytes} bytes, {:.1} KiB per call (each call's whole request; it grows with the session)",
        bytes as f64 / 1024.0 / n as f64
    );
}
