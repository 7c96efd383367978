//! The summary of each wrapper against its design (`lab replay`'s last
//! table and the JSON's `variants`): sums over the sessions where both ran
//! priced, the gate's skips from its own counter, and no row for a wrapper
//! whose design did not run.

use super::frozen::priced;
use crate::common;
use ctxlab::replay::policies::Compared;
use ctxlab::replay::variants::{summaries, table};

fn compared(spec: &str, session: &str, rounds: usize, large_at: usize) -> Compared {
    let (mut run, cost) = priced(spec, &common::tool_session(rounds, large_at));
    run.session = session.to_string();
    Compared {
        spec: spec.parse().unwrap(),
        run,
        retention: None,
        cost: Some(cost),
        closed_loop: None,
        anchor: None,
    }
}

#[test]
fn each_wrapper_is_summed_against_its_design_over_shared_sessions() {
    let spec = "langchain-clear-tool-uses:trigger=2000";
    let gated = format!("gated:{spec}");
    let frozen = format!("frozen:{spec}");
    let mut out = Vec::new();
    for (session, rounds) in [("a", 24), ("b", 30)] {
        for s in [spec, gated.as_str(), frozen.as_str()] {
            out.push(compared(s, session, rounds, 5));
        }
    }
    // A wrapper without its design, and a design on a session its wrapper
    // did not run on: neither makes a row or enters a sum.
    out.push(compared("gated:none", "a", 24, 5));
    out.push(compared(spec, "c", 20, 5));
    let priced: Vec<_> = out.iter().filter_map(Compared::priced).collect();
    let rows = summaries(&priced);
    assert_eq!(
        rows.iter().map(|r| r.variant.as_str()).collect::<Vec<_>>(),
        [gated.as_str(), frozen.as_str()]
    );
    let g = &rows[0];
    assert_eq!((g.base.as_str(), g.sessions), (spec, 2));
    let of = |policy: &str| {
        out[..6]
            .iter()
            .filter(|c| c.run.policy == policy)
            .collect::<Vec<_>>()
    };
    let dollars = |p: &str| {
        of(p)
            .iter()
            .map(|c| c.cost.as_ref().unwrap().dollars)
            .sum::<f64>()
    };
    assert_eq!(g.base_dollars, dollars(spec));
    assert_eq!(g.variant_dollars, dollars(&gated));
    let skips: u64 = of(&gated)
        .iter()
        .map(|c| c.run.counters().count_of("gate_skips").unwrap())
        .sum();
    assert!(skips >= 3, "{skips}");
    assert_eq!(g.gate_skips as u64, skips);
    assert!(
        g.saved_percent() > 0.0 && g.variant_breaks < g.base_breaks,
        "{g:?}"
    );
    assert_eq!(rows[1].gate_skips, 0);
    assert_eq!((g.base_recall, g.variant_recall), (None, None));
    insta::assert_snapshot!(
        "variants_summary",
        table(&rows, ctxlab::render::Format::Markdown)
    );
    assert!(table(&[], ctxlab::render::Format::Markdown).is_empty());
}
