//! `make bench`: pipeline cost as the transcript grows, and experiment throughput.
//!
//! Run by `cargo bench` (full sizes) and by `cargo test --all-targets` (smoke
//! sizes, so the bench cannot rot). Prints Markdown rows for the README.

use std::time::Instant;

use ctxlab::compact::config::profile;
use ctxlab::compact::session::{Action, Call, Script, Session, Turn};
use ctxlab::compact::{check, Compactor, LabRoot};
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
    // The session (pipeline before every model call, real files) is timed
    // apart from the checker, which reads every archive once at the end.
    println!("| profile | turns | session ms | µs per turn | check ms | archived MB |");
    println!("|---|---|---|---|---|---|");
    for name in ["course-f9e8b28", "course-main", "hardened"] {
        let cfg = profile(name).unwrap().config;
        for &n in sizes {
            let script = session(n);
            let root = LabRoot::new(Some(120), 6).unwrap();
            let mut s = Session::new(Compactor::new(cfg.clone(), root).unwrap());
            let t = Instant::now();
            s.run(&script).unwrap();
            let ms = t.elapsed().as_secs_f64() * 1e3;
            assert_eq!(s.requests.len(), n + 1);
            let t = Instant::now();
            let c = check::check(&s.compactor, &s.messages, &s.ledger, &s.requests);
            let check_ms = t.elapsed().as_secs_f64() * 1e3;
            assert!(c.get("lost_forever").is_some());
            // The course archives the whole context on every snip, so archive
            // volume (and the checker, which reads it) grows with turns × context.
            let archived: u64 = std::fs::read_dir(s.compactor.root.transcripts())
                .unwrap()
                .map(|e| e.unwrap().metadata().unwrap().len())
                .sum();
            println!(
                "| {name} | {n} | {ms:.1} | {:.1} | {check_ms:.1} | {:.1} |",
                ms * 1e3 / n as f64,
                archived as f64 / 1e6
            );
        }
    }
    // Replay: synthetic sessions of growing length under every profile, and the
    // largest real transcript when ../shared/transcripts is there.
    println!("\n| replay profile | turns | ms | µs per message |");
    println!("|---|---|---|---|");
    let turns: &[usize] = if full { &[100, 1_000, 5_000] } else { &[20] };
    for name in ctxlab::replay::profile_names() {
        for &n in turns {
            let main = ctxlab::replay::synthetic_main(n, 3_000);
            let t = Instant::now();
            let r =
                ctxlab::replay::replay_messages("synthetic", &main, &[], name, &Default::default())
                    .unwrap();
            let ms = t.elapsed().as_secs_f64() * 1e3;
            assert!(r.counters.get("lost_forever").is_some());
            println!(
                "| {name} | {n} | {ms:.1} | {:.1} |",
                ms * 1e3 / main.len() as f64
            );
        }
    }
    let largest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/transcripts/claude_code/attio-mcp-server__chat@816b68a.json");
    if largest.exists() {
        let t = Instant::now();
        let run =
            ctxlab::replay::run_files(&[largest], &[], &Default::default(), &Default::default())
                .unwrap();
        println!(
            "\nreplay of the largest transcript (887 records) under {} profiles: {:.0} ms",
            run.reports.len(),
            t.elapsed().as_secs_f64() * 1e3
        );
    } else {
        println!("\n(../shared/transcripts not found: real-transcript replay skipped)");
    }

    // Cells per second of the default sweep (`lab sweep`).
    let spec = ctxlab::sweep::SweepSpec {
        profile: "prototype".into(),
        vary: ctxlab::sweep::parse_vary(
            "order,unseen_guard,pair_protection,idempotent_placeholders,save_before_omit",
        )
        .unwrap(),
        path_lens: if full {
            (60..=200).collect()
        } else {
            vec![60, 160]
        },
        seeds: 1,
    };
    let t = Instant::now();
    let result = ctxlab::sweep::run(&spec, None, &mut |_, _| {}).unwrap();
    let secs = t.elapsed().as_secs_f64();
    println!(
        "\nsweep: {} cells in {secs:.2} s = {:.0} cells/s",
        spec.total_cells(),
        spec.total_cells() as f64 / secs
    );
    assert_eq!(
        serde_json::to_value(&result).unwrap()["cells"]
            .as_array()
            .map(Vec::len),
        Some(spec.total_cells())
    );

    let rounds = if full { 20 } else { 1 };
    let t = Instant::now();
    let mut cells = 0usize;
    for _ in 0..rounds {
        for e in registry::list::all() {
            cells += (e.run)(&RunOptions::default()).unwrap().cells.len() * 2;
        }
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "\nregistry: {cells} runs in {secs:.2} s = {:.0} runs/s",
        cells as f64 / secs
    );
}
