//! `lab horizon`: the table of a short horizon (snapshotted), what the runs
//! measured, the plot's layout and refused input.

use ctxlab::horizon::{self, render, HorizonArgs};
use ctxlab::render::Format;

fn args(tokens: u64, policy: &str, format: Format) -> HorizonArgs {
    HorizonArgs {
        tokens,
        seed: horizon::DEFAULT_SEED,
        policy: policy.into(),
        limit: horizon::DEFAULT_LIMIT,
        jobs: Some(1),
        plot: None,
        format,
    }
}

/// The reports' horizon ([`ctxlab::reports::horizon::TOKENS`] tokens, run
/// once per test binary), three of its policies: `none` passes the
/// 200,000-token window and is stalled for good 20 requests later; Claude
/// Code compacts and frees most of its context; SWE-agent's mask clears a
/// little at nearly every call, so most of its compactions are stalls.
#[test]
fn a_short_horizon_table_and_what_it_measured() {
    let all = &crate::shared::data().horizon;
    let tokens = ctxlab::reports::horizon::TOKENS;
    let names = ["none", "claude-code", "swe-agent-mask-5"];
    let r = horizon::HorizonReport {
        policies: names
            .iter()
            .map(|n| {
                all.policies
                    .iter()
                    .find(|p| p.policy == *n)
                    .unwrap()
                    .clone()
            })
            .collect(),
        ..all.clone()
    };
    let [none, cc, mask] = [&r.policies[0], &r.policies[1], &r.policies[2]];
    let at = none
        .stalled_for_good_at
        .expect("none never gets under the window");
    assert!((200_000..tokens).contains(&at), "{at}");
    assert!(none.compactions.is_empty() && none.over_limit >= horizon::STUCK_CALLS);
    assert!(cc.stalled_for_good_at.is_none() && cc.appended >= tokens);
    assert!(!cc.compactions.is_empty() && cc.compactions[0].freed() > 0.5);
    assert!(
        cc.peak_tokens <= horizon::DEFAULT_LIMIT,
        "{}",
        cc.peak_tokens
    );
    assert!(mask.compactions.len() > 100 && mask.stalls * 2 > mask.compactions.len());
    for p in &r.policies {
        for c in &p.compactions {
            assert!(c.after < c.before, "{}: {c:?}", p.policy);
        }
        let growth: Vec<usize> = p.refetch.iter().map(|x| x.calls).collect();
        assert!(growth.windows(2).all(|w| w[0] <= w[1]), "{}", p.policy);
    }
    insta::assert_snapshot!("horizon_table", render::render(&r, Format::Markdown));
    let problems = ctxlab::plot::lint::check(&render::svg(&r, "test"));
    assert!(problems.is_empty(), "{problems:#?}");
}

/// Every stall of every policy is its own mark on the reports' horizon
/// plot (a tick on the policy's row, over the whole run), counted from the
/// drawing against `stalls` in the horizon's JSON; a run that stalled for
/// good ends in a cross, and the description names each row's count.
#[test]
fn every_stall_is_a_mark_on_the_horizon_plot() {
    let r = &crate::shared::data().horizon;
    let svg = render::svg(r, "test");
    let json: serde_json::Value = serde_json::from_str(&render::render(r, Format::Json)).unwrap();
    let policies = json["policies"].as_array().unwrap();
    let mut total = 0;
    for p in policies {
        let name = p["policy"].as_str().unwrap();
        let stalls = p["stalls"].as_u64().unwrap() as usize;
        let label = format!("{name}: {stalls} stalls");
        let row: Vec<&str> = svg
            .lines()
            .filter(|l| l.contains(&format!("data-strip=\"{label}")))
            .collect();
        let marks: usize = row
            .iter()
            .map(|l| l.split(" d=\"").nth(1).unwrap().matches('M').count())
            .sum();
        assert_eq!(marks, stalls, "{name}: {row:?}");
        assert!(svg.contains(&label), "{name}: no row named");
        total += stalls;
    }
    assert!(total > 1_000, "the reports' horizon stalls often: {total}");
    let stuck = policies
        .iter()
        .filter(|p| !p["stalled_for_good_at"].is_null())
        .count();
    assert!(stuck > 0);
    // One cross per run stalled for good: the marker_shape cross of the strips.
    assert_eq!(
        svg.matches(r##"stroke="#B22222" stroke-width="1.5""##)
            .count(),
        stuck
    );
    let desc = svg.split("<desc").nth(1).unwrap();
    assert!(
        desc.contains("none: 0 stalls; stalled for good at"),
        "{desc}"
    );
    assert!(desc.contains("rows of marks"), "{desc}");
    let problems = ctxlab::plot::lint::check(&svg);
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn out_of_range_and_unknown_policies_are_refused() {
    for a in [
        args(0, "none", Format::Table),
        args(100_000_001, "none", Format::Table),
        args(1_000, "no-such-policy", Format::Table),
        args(1_000, " , ", Format::Table),
        args(1_000, "exec:true", Format::Table),
    ] {
        let e = horizon::command(&a).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{e}");
    }
}
