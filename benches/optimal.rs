//! `make bench`: the cheapest schedule's dynamic program on the largest
//! shared session, and beside brute force on generated sessions small
//! enough for it.
//!
//! Run by `cargo bench` (full sizes) and by `cargo test --all-targets`
//! (smoke sizes, so the bench cannot rot). Prints Markdown rows for
//! notes/optimal.md.

use std::path::{Path, PathBuf};
use std::time::Instant;

use ctxlab::cache::{prices, Provider};
use ctxlab::message::Message;
use ctxlab::optimal::{brute, dp, Problem, Shape, KEEP_GRID};
use ctxlab::tokens::Approx;

#[global_allocator]
static ALLOC: ctxlab::alloc::Mimalloc = ctxlab::alloc::Mimalloc;

/// A session of `calls` calls, each with one tool result of a varied size.
fn generated(calls: usize) -> Vec<Message> {
    let mut out = vec![Message::user_text("bench")];
    for i in 0..calls {
        let id = format!("t{i:05}");
        out.push(Message::assistant(vec![ctxlab::message::Block::ToolUse {
            id: id.clone(),
            name: "read".into(),
            input: serde_json::json!({ "path": format!("f{i}.rs") }).into(),
        }]));
        out.push(Message::tool_results(vec![(
            id,
            "x".repeat(400 + (i * 7919) % 12_000),
        )]));
    }
    out
}

fn problem(messages: &[Message]) -> Problem<'_> {
    Problem {
        messages,
        times_ms: None,
        envelope: 3_000,
        provider: Provider::Anthropic(Default::default()),
        sheet: prices::sheet("claude-sonnet-4.5-5m")
            .expect("a built-in sheet")
            .clone(),
        limit: None,
    }
}

/// The largest session file under the shared transcripts, if they are there.
fn largest_shared() -> Option<PathBuf> {
    let dir = std::env::var_os("CTXLAB_TRANSCRIPTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/transcripts"));
    let mut files: Vec<(u64, PathBuf)> = ["claude_code", "openai_format"]
        .iter()
        .filter_map(|s| std::fs::read_dir(dir.join(s)).ok())
        .flatten()
        .filter_map(|e| {
            let e = e.ok()?;
            Some((e.metadata().ok()?.len(), e.path()))
        })
        .collect();
    files.sort();
    files.pop().map(|(_, p)| p)
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    println!("| session | calls | program, every keep (s) | brute force, one keep (s) |");
    println!("|---|---|---|---|");
    let sizes: &[usize] = if full { &[8, 12, 16, 200, 1_000] } else { &[6] };
    for &calls in sizes {
        let messages = generated(calls);
        let p = problem(&messages);
        let shape = Shape::new(&p, &Approx);
        let t = Instant::now();
        let best = KEEP_GRID
            .iter()
            .filter_map(|&k| dp::cheapest(&shape, &p, k, usize::MAX))
            .map(|s| s.dollars)
            .fold(f64::INFINITY, f64::min);
        let program = t.elapsed().as_secs_f64();
        let brute = (calls <= 16).then(|| {
            let t = Instant::now();
            brute::cheapest(&shape, &p, 1, &|_| true, &Approx).expect("no limit");
            t.elapsed().as_secs_f64()
        });
        assert!(best.is_finite());
        println!(
            "| generated | {calls} | {program:.3} | {} |",
            brute.map_or("-".into(), |b| format!("{b:.3}"))
        );
    }
    if !full {
        return;
    }
    let Some(path) = largest_shared() else {
        eprintln!("SKIP: no shared transcripts");
        return;
    };
    let opts = ctxlab::import::ImportOptions::default();
    let sessions =
        ctxlab::import::import_file_sessions(&path, &opts).expect("the shared session imports");
    for s in &sessions {
        let messages = ctxlab::import::artefacts::without_product_artefacts(s);
        let p = problem(&messages);
        let t = Instant::now();
        let shape = Shape::new(&p, &Approx);
        for &k in KEEP_GRID {
            dp::cheapest(&shape, &p, k, usize::MAX).expect("no limit");
        }
        println!(
            "| {} | {} | {:.3} | - |",
            s.label,
            shape.n(),
            t.elapsed().as_secs_f64()
        );
    }
}
