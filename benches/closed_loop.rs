//! `make bench`: the closed loop's price in wall time. Times `lab replay
//! FILE --policy all --cost --retention` open-loop and with `--closed-loop`,
//! side by side, on the generated frontier session
//! ([`ctxlab::reports::frontier::session`]) and on one shared session when
//! the transcripts are there (`CTXLAB_TRANSCRIPTS`, else
//! `../shared/transcripts`: dmux, 144 messages). Printed: per session the
//! two wall times and their ratio (the target is at most 2×).
//!
//! Under `cargo test --all-targets` (no `--bench`) it runs two policies on
//! the generated session only, so the bench cannot rot.

use std::path::{Path, PathBuf};
use std::time::Instant;

use ctxlab::replay::policies::{replay_files_on, Measure, Pricing};

/// `--cost --retention`, closed-loop or not, as `lab replay` sets them.
fn measure(closed: bool) -> Measure {
    let sheet = ctxlab::cache::prices::sheet(ctxlab::cache::prices::DEFAULT_SHEET)
        .expect("the default price sheet exists")
        .clone();
    Measure {
        retention: true,
        pricing: Some(Pricing {
            provider: ctxlab::cache::provider::CacheChoice::Anthropic.provider(),
            sheet,
            prices: ctxlab::cache::prices::table::PriceTable::builtin(),
            by_model: true,
        }),
        closed_loop: closed.then(Default::default),
        ..Measure::default()
    }
}

/// Wall seconds of one replay of `file` under `names`.
fn time(file: &Path, names: &[String], closed: bool) -> f64 {
    let t = Instant::now();
    let (runs, _) = replay_files_on(
        &[file.to_path_buf()],
        names,
        ctxlab::replay::profiles::DEFAULT_PATH_LEN,
        &Default::default(),
        &measure(closed),
        1,
    )
    .expect("the replay runs");
    assert_eq!(runs.iter().any(|c| c.closed_loop.is_some()), closed);
    t.elapsed().as_secs_f64()
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let names: Vec<String> = if full {
        vec!["all".into()]
    } else {
        vec!["none".into(), "prototype".into()]
    };
    let generated = std::env::temp_dir().join(format!(
        "ctxlab-closed-loop-bench-{}.json",
        std::process::id()
    ));
    std::fs::write(
        &generated,
        serde_json::to_string(&ctxlab::reports::frontier::session()).unwrap(),
    )
    .expect("the generated session is written");
    let mut sessions: Vec<(String, PathBuf)> = vec![("generated".into(), generated)];
    let shared = std::env::var_os("CTXLAB_TRANSCRIPTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/transcripts"))
        .join("claude_code/dmux__chat@eef6c28.json");
    if full && shared.is_file() {
        sessions.push(("dmux (shared)".into(), shared));
    } else if full {
        println!("skipped the shared session: {} not found", shared.display());
    }
    println!(
        "closed loop vs open loop: --policy {} --cost --retention, 1 thread",
        names.join(",")
    );
    println!(
        "{:<16} {:>10} {:>12} {:>7}",
        "session", "open (s)", "closed (s)", "ratio"
    );
    for (label, file) in &sessions {
        let open = time(file, &names, false);
        let closed = time(file, &names, true);
        println!(
            "{label:<16} {open:>10.2} {closed:>12.2} {:>6.2}×",
            closed / open
        );
    }
    let _ = std::fs::remove_file(&sessions[0].1);
}
