//! `make bench`: pipeline cost as the transcript grows, and experiment throughput.
//!
//! Run by `cargo bench` (full sizes) and by `cargo test --all-targets` (smoke
//! sizes, so the bench cannot rot). Prints Markdown rows for the README.

use std::time::Instant;

use ctxlab::compact::config::profile;
use ctxlab::compact::probe;
use ctxlab::compact::session::{Action, Call, Script, Turn};
use ctxlab::registry::{self, RunOptions};

fn session(turns: usize) -> Script {
    let mut a = vec![Action::User("bench".into())];
    for i in 0..turns {
        a.push(Action::Assistant(Turn {
            text: None,
            calls: vec![Call::sized(
                &format!("t{i:05}"),
                1_000 + (i * 7919) % 40_000,
            )],
        }));
    }
    a.push(Action::Prepare);
    Script(a)
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let sizes: &[usize] = if full {
        &[10, 100, 1_000, 10_000]
    } else {
        &[10, 100]
    };
    println!("| profile | turns | total ms | µs per turn |");
    println!("|---|---|---|---|");
    for name in ["course-f9e8b28", "course-main", "hardened"] {
        let cfg = profile(name).unwrap().config;
        for &n in sizes {
            let script = session(n);
            let t = Instant::now();
            let o = probe::run(&cfg, &script, Some(120)).unwrap();
            let ms = t.elapsed().as_secs_f64() * 1e3;
            assert_eq!(o.request_chars.len(), n + 1);
            println!("| {name} | {n} | {ms:.1} | {:.1} |", ms * 1e3 / n as f64);
        }
    }
    let rounds = if full { 20 } else { 1 };
    let t = Instant::now();
    let mut cells = 0usize;
    for _ in 0..rounds {
        for e in registry::all() {
            cells += (e.run)(&RunOptions::default()).unwrap().cells.len() * 2;
        }
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "\nregistry: {cells} runs in {secs:.2} s = {:.0} runs/s",
        cells as f64 / secs
    );
}
