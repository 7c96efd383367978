//! `gated:P`: the break-even gate skips a decision whose cache rewrite
//! costs more than the reads it saves over the calls expected to follow
//! (the calls made so far), and lets through one that repays itself. The
//! skips are the run's `gate_skips` counter.

use super::frozen::{assert_clean, priced};
use crate::common;

#[test]
fn the_gate_skips_a_clearing_that_rewrites_a_large_result_to_free_little() {
    // A 15k-token result at call 5, small ones around it: crossing the
    // trigger clears only small results older than the last three and
    // rewrites the large one behind them.
    let session = common::tool_session(24, 5);
    let spec = "langchain-clear-tool-uses:trigger=2000";
    let (p, pc) = priced(spec, &session);
    let (g, gc) = priced(&format!("gated:{spec}"), &session);
    assert_clean(&p);
    assert_clean(&g);
    let skips = g.counters().count_of("gate_skips").unwrap();
    assert!(skips >= 3, "the gate fires: {skips}");
    assert_eq!(p.counters().count_of("gate_skips"), Some(0));
    let first_break = |c: &ctxlab::cache::CostReport| c.requests.iter().position(|r| r.broke);
    assert!(
        first_break(&gc) > first_break(&pc),
        "gated breaks later: {:?} vs {:?}",
        first_break(&gc),
        first_break(&pc)
    );
    assert!(gc.breaks < pc.breaks, "{} vs {}", gc.breaks, pc.breaks);
    assert!(gc.dollars < pc.dollars, "{} vs {}", gc.dollars, pc.dollars);
    // Once the large result falls out of the last three, clearing it pays.
    assert!(gc.breaks >= 1, "the gate lets the paying clearing through");
}

#[test]
fn the_gate_lets_a_clearing_through_that_repays_its_rewrite() {
    // The 15k-token result comes first; the one clearing (frozen: no
    // re-derivation afterwards) frees it late in the session.
    let session = common::tool_session(30, 1);
    let spec = "frozen:langchain-clear-tool-uses:trigger=16000";
    let (f, fc) = priced(spec, &session);
    let (g, gc) = priced(&format!("gated:{spec}"), &session);
    assert_clean(&g);
    assert!(f.event_count("cleared") > 0, "the design clears");
    assert_eq!(g.counters().count_of("gate_skips"), Some(0));
    assert_eq!(gc.requests, fc.requests);
    assert_eq!(g.event_count("cleared"), f.event_count("cleared"));
}

#[test]
fn the_default_weights_are_the_default_sheet_s() {
    let w = ctxlab::policy::gate::Weights::default();
    let s = ctxlab::cache::prices::sheet(ctxlab::cache::prices::DEFAULT_SHEET).unwrap();
    assert_eq!(
        (w.sheet.as_str(), w.read_mult, w.write_mult),
        (s.name.as_ref(), s.read_mult, s.write_mult)
    );
}

#[test]
fn a_replay_refuses_a_gate_with_an_unknown_sheet() {
    let Some(dir) = common::transcripts() else {
        return;
    };
    let file = dir.join("claude_code/dmux__chat@eef6c28.json");
    let f = file.to_str().unwrap();
    let (code, out, err) = common::lab(&["replay", f, "--policy", "gated@nope:none", "--cost"]);
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert!(err.contains("unknown price sheet `nope`"), "{err}");
    let out = common::lab_ok(&[
        "replay",
        f,
        "--policy",
        "gated@gemini-2.5-pro:none",
        "--cost",
    ]);
    assert!(out.contains("gated@gemini-2.5-pro:none"), "{out}");
}
