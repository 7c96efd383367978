use super::*;
use crate::replay::dollars::{cumulative_dollars, dollars_svg, policy_costs};
use crate::replay::policies::{compare_one, Compared, Measure};

/// Three policies priced on a small synthetic session (24 tool calls of
/// 4,000 characters): the baseline, a course profile and a production design.
fn priced(session: &str) -> Vec<PolicyCost> {
    let measure = super::super::frontier::priced_measure(false, None);
    let messages = crate::replay::profiles::synthetic_main(24, 4_000);
    let runs: Vec<Compared> = ["none", "prototype", "vercel-prune-messages"]
        .iter()
        .map(|p| compare_one(session, &messages, p, 160, &measure).unwrap())
        .collect();
    policy_costs(&runs)
}

#[test]
fn cumulative_dollars_rise_to_the_total() {
    for p in priced("s") {
        let curve = cumulative_dollars(&p.report);
        assert_eq!(curve.len(), p.report.requests.len(), "{}", p.policy);
        assert!(curve
            .windows(2)
            .all(|w| w[1].1 >= w[0].1 && w[1].0 == w[0].0 + 1.0));
        let last = curve.last().unwrap().1;
        assert!((last - p.report.dollars).abs() < 1e-9, "{}", p.policy);
        assert!(last > 0.0);
    }
}

#[test]
fn unpriced_runs_are_left_out() {
    let messages = crate::replay::profiles::synthetic_main(3, 100);
    let run = compare_one("s", &messages, "none", 160, &Measure::default()).unwrap();
    assert!(policy_costs(&[run]).is_empty());
    assert_eq!(pricing_line(&[]), "no priced runs");
}

#[test]
fn the_table_names_its_pricing_and_has_a_row_per_policy() {
    let rows = priced("synthetic");
    let t = cost_table(&rows, &[]);
    assert_eq!(t.rows.len(), 3);
    assert!(t.rows.iter().all(|r| r.len() == t.columns.len()));
    for needle in [
        "claude-opus-4.1-5m",
        "as of 2025-11-24",
        "tokenizer approx",
        "anthropic",
    ] {
        assert!(t.title.contains(needle), "{needle} missing: {}", t.title);
    }
    // Pruning old messages breaks the prefix the baseline keeps; persisting
    // every result keeps the context under the cache minimum (nothing cached).
    let report = |policy: &str| &rows.iter().find(|p| p.policy == policy).unwrap().report;
    assert_eq!(report("none").breaks, 0);
    assert!(report("vercel-prune-messages").breaks > 0);
    assert_eq!(report("prototype").cache_read_tokens, 0);
    assert!(report("prototype").input_tokens < report("none").input_tokens);
    insta::assert_snapshot!("cost_table_md", crate::reports::markdown(&t));
}

#[test]
fn the_plot_has_a_panel_per_session_and_a_line_per_policy() {
    let mut rows = priced("first");
    rows.extend(priced("second"));
    let svg = dollars_svg(&rows, "test");
    // Small multiples: a panel per session and family.
    assert!(svg.contains(">session first · baseline and course<"));
    assert!(svg.contains(">session second · APIs and frameworks<"));
    assert!(!svg.contains("OpenHands<"), "no panel for a family not run");
    // Each policy named once per session, in its family's legend.
    for policy in ["none", "prototype", "vercel-prune-messages"] {
        assert_eq!(svg.matches(&format!(">{policy}")).count(), 2, "{policy}");
    }
    assert!(svg.contains("claude-opus-4.1-5m as of 2025-11-24"));
    assert!(svg.contains(">cumulative cost (dollars)<"));
    assert_eq!(svg, dollars_svg(&rows, "test"));
}

#[test]
fn a_session_of_one_call_is_named_not_drawn_and_each_session_spans_its_own_calls() {
    let mut rows = priced("long");
    let mut short = priced("short");
    let mut single = priced("single");
    for p in &mut short {
        p.report.requests.truncate(3);
    }
    for p in &mut single {
        p.report.requests.truncate(1);
    }
    rows.extend(short);
    rows.extend(single);
    let svg = dollars_svg(&rows, "test");
    assert!(
        !svg.contains(">session single"),
        "a single point is no curve"
    );
    assert!(svg.contains("· 1 session of one call not drawn"));
    // The short session's panel ends at its own last call (3), not at the
    // long one's: its x ticks stop before the long session's.
    let ticks_of = |title: &str| -> Vec<f64> {
        let from = svg.find(title).unwrap();
        let panel = &svg[from..];
        let end = panel[1..].find(">session ").map_or(panel.len(), |e| e + 1);
        panel[..end]
            .lines()
            .filter(|l| l.starts_with("<text") && l.contains(r#"text-anchor="middle">"#))
            .filter_map(|l| {
                l.rsplit('>')
                    .nth(1)?
                    .trim_end_matches("</text")
                    .parse()
                    .ok()
            })
            .collect()
    };
    let long = ticks_of(">session long · baseline and course<");
    let short = ticks_of(">session short · baseline and course<");
    assert!(long.len() > 1 && short.len() > 1, "{long:?} {short:?}");
    assert_eq!(short.last(), Some(&3.0), "{short:?}");
    assert!(long.last() > Some(&20.0), "{long:?}");
}
