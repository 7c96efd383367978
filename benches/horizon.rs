//! `make bench`: a 10 M-token horizon (`lab horizon`) for every registered
//! policy, on two threads; the target is 5 minutes in total on 2 cores.
//!
//! The session is [`ctxlab::horizon::generate`]'s (seed 7), streamed
//! through the engine: memory is the live context, not the session.
//! Printed: per policy its wall seconds, model calls, calls per second and
//! how its run ended (a policy that never gets under the context window is
//! stopped there, as `lab horizon` does); then the total wall time and the
//! peak resident set (`VmHWM`). Each policy's time is also written to
//! stderr as it ends.
//!
//! Sizes: 10,000,000 tokens under `cargo bench`, 100,000 under `cargo test
//! --all-targets` (so the bench cannot rot); `HORIZON_BENCH_TOKENS=N`
//! overrides both. `HORIZON_BENCH_CAP_SECS=S` stops each policy after S
//! seconds, so a run that would not finish still says per policy how far it
//! got (`stopped by the cap at N tokens`).

use std::time::Instant;

use ctxlab::horizon::{self, render, DEFAULT_LIMIT, DEFAULT_SEED};

/// Peak resident set of the process, in MB.
fn peak_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let tokens: u64 = std::env::var("HORIZON_BENCH_TOKENS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if full { 10_000_000 } else { 100_000 });
    let names = horizon::every_policy();
    println!(
        "horizon: {tokens} tokens appended (seed {DEFAULT_SEED}, window {DEFAULT_LIMIT}) × {} policies, 2 threads",
        names.len()
    );
    let cap: Option<f64> = std::env::var("HORIZON_BENCH_CAP_SECS")
        .ok()
        .and_then(|s| s.parse().ok());
    let start = Instant::now();
    let runs = ctxlab::jobs::try_collect(
        2,
        |push| names.iter().all(|n| push(n.clone())),
        |name| {
            let t = Instant::now();
            let deadline = cap.map(|s| t + std::time::Duration::from_secs_f64(s));
            let r =
                horizon::run_policy_until(&name, DEFAULT_SEED, tokens, DEFAULT_LIMIT, deadline)?;
            let secs = t.elapsed().as_secs_f64();
            // Progress as each policy ends, so a long run shows where its time goes.
            eprintln!(
                "  done: {name} in {secs:.1} s, {} tokens appended",
                r.appended
            );
            Ok::<_, ctxlab::error::LabError>((r, secs))
        },
    )
    .expect("every built-in policy runs");
    for (r, secs) in &runs {
        let capped = r.appended < tokens && r.stalled_for_good_at.is_none() && r.error.is_none();
        let ending = if capped {
            format!("stopped by the cap at {} tokens", r.appended)
        } else {
            render::ending(r)
        };
        println!(
            "  {:<32} {secs:>7.1} s {:>7} calls {:>8.0} calls/s  {ending}",
            r.policy,
            r.calls,
            r.calls as f64 / secs.max(1e-9),
        );
    }
    let total = start.elapsed().as_secs_f64();
    let peak = peak_mb().map_or("n/a".to_string(), |m| format!("{m:.0} MB"));
    println!("  total {total:.1} s wall (target: 300 s on 2 cores), peak RSS {peak}");
}
