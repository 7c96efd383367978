//! `lab horizon` output: one row per policy (table, Markdown, JSON) and the
//! plot of freed fraction against compaction cycle. Pure functions of a
//! [`HorizonReport`].

use super::{Compaction, HorizonReport, PolicyHorizon};
use crate::render::{json, table, Format};

/// Compaction cycles the plot shows (the first ones of each run): designs
/// that clear a little at every call make thousands, which no panel could
/// draw; the table summarises every cycle.
pub const PLOT_CYCLES: usize = 100;

/// Compactions averaged at each end of a run for the "first" and "last" columns.
pub const ENDS: usize = 10;

/// A share as a percentage with one decimal.
pub fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// Mean freed fraction of `cs`, or `None` when empty.
fn mean_freed(cs: &[Compaction]) -> Option<f64> {
    (!cs.is_empty()).then(|| cs.iter().map(Compaction::freed).sum::<f64>() / cs.len() as f64)
}

/// The freed-fraction summary of a run: mean of the first [`ENDS`]
/// compactions, median of all, mean of the last [`ENDS`].
pub fn freed_summary(p: &PolicyHorizon) -> [Option<f64>; 3] {
    let cs = &p.compactions;
    let n = cs.len();
    let mut all: Vec<f64> = cs.iter().map(Compaction::freed).collect();
    all.sort_by(f64::total_cmp);
    [
        mean_freed(&cs[..n.min(ENDS)]),
        all.get(n / 2).copied().filter(|_| n > 0),
        mean_freed(&cs[n.saturating_sub(ENDS)..]),
    ]
}

/// Re-fetch calls when half the run's tokens were appended, and at its end.
pub fn refetch_growth(p: &PolicyHorizon) -> (usize, usize) {
    let half = p.appended / 2;
    let mid = p
        .refetch
        .iter()
        .take_while(|r| r.appended <= half)
        .last()
        .map_or(0, |r| r.calls);
    (mid, p.refetch.last().map_or(0, |r| r.calls))
}

/// How a run ended: the horizon's end, stalled for good, or the error.
pub fn ending(p: &PolicyHorizon) -> String {
    match (&p.error, p.stalled_for_good_at) {
        (Some(e), _) => format!("failed: {}", e.lines().next().unwrap_or("")),
        (None, Some(at)) => format!("stalled for good at {at}"),
        (None, None) => "horizon reached".into(),
    }
}

/// The columns of the horizon table.
pub const COLUMNS: [&str; 11] = [
    "policy",
    "tokens appended",
    "calls",
    "peak request",
    "compactions",
    "freed: first 10",
    "freed: median",
    "freed: last 10",
    "stalls (<5%)",
    "re-fetches: half / end",
    "ended",
];

/// One row of text cells per policy, in [`COLUMNS`] order.
pub fn rows(r: &HorizonReport) -> Vec<Vec<String>> {
    r.policies
        .iter()
        .map(|p| {
            let [first, median, last] = freed_summary(p).map(|x| x.map_or("-".into(), pct));
            let (mid, end) = refetch_growth(p);
            vec![
                p.policy.clone(),
                p.appended.to_string(),
                p.calls.to_string(),
                p.peak_tokens.to_string(),
                p.compactions.len().to_string(),
                first,
                median,
                last,
                p.stalls.to_string(),
                format!("{mid} / {end}"),
                ending(p),
            ]
        })
        .collect()
}

/// The legend under every text table.
pub fn legend(r: &HorizonReport) -> String {
    format!(
        "horizon: {} tokens of transcript appended (tokenizer {}), seed {}, context window {}; \
         freed = (before - after) / before per compaction; a stall frees under 5%; \
         stalled for good = {} requests in a row over the window",
        r.tokens,
        r.tokenizer,
        r.seed,
        r.limit,
        super::STUCK_CALLS
    )
}

/// The report in `format`.
pub fn render(r: &HorizonReport, format: Format) -> String {
    if format == Format::Json {
        return json(r);
    }
    let mut t = table(&COLUMNS, rows(r), format == Format::Markdown);
    t.push_str("\n\n");
    t.push_str(&legend(r));
    t.push('\n');
    t
}

/// The plot: freed fraction against compaction cycle, one line per policy,
/// one panel per policy group (the others drawn grey behind); `command`
/// names what made it in the caption.
pub fn svg(r: &HorizonReport, command: &str) -> String {
    use crate::plot::{Figure, Panel, Rule, Series};
    use crate::replay::family::{group, style_index, GROUPS};
    let names: Vec<&str> = r.policies.iter().map(|p| p.policy.as_str()).collect();
    let mut panels = vec![stalls_panel(r)];
    panels.extend(
        GROUPS
            .iter()
            .filter(|g| {
                r.policies
                    .iter()
                    .any(|p| group(&p.policy) == **g && !p.compactions.is_empty())
            })
            .map(|g| Panel {
                title: g.to_string(),
                y_label: "freed (% of context)".into(),
                series: r
                    .policies
                    .iter()
                    .filter(|p| !p.compactions.is_empty())
                    .map(|p| Series {
                        label: p.policy.clone(),
                        points: p
                            .compactions
                            .iter()
                            .take(PLOT_CYCLES)
                            .enumerate()
                            .map(|(i, c)| ((i + 1) as f64, c.freed() * 100.0))
                            .collect(),
                        style: Some(style_index(&p.policy, &names)),
                        context: group(&p.policy) != *g,
                        ..Series::default()
                    })
                    .collect(),
                h_rules: vec![Rule {
                    at: super::STALL_FREED * 100.0,
                    label: "stall (5%)".into(),
                }],
                ..Panel::default()
            }),
    );
    crate::plot::svg(&Figure {
        title: "stalls over a long horizon, and the freed fraction per compaction".into(),
        x_label: format!("compaction cycle (count; the first {PLOT_CYCLES} of each run)"),
        panels,
        caption: format!("{command} · {}", legend(r)),
    })
}

/// The stalls of every policy over its whole run, one row each: a tick at
/// the tokens appended when each stall happened ([`super::STALL_FREED`]),
/// a cross where the run stalled for good (or failed), the row as long as
/// the run.
pub fn stalls_panel(r: &HorizonReport) -> crate::plot::Panel {
    use crate::plot::{Panel, Strip};
    let names: Vec<&str> = r.policies.iter().map(|p| p.policy.as_str()).collect();
    let strips = r
        .policies
        .iter()
        .map(|p| {
            let stalls = p
                .compactions
                .iter()
                .filter(|c| c.freed() < super::STALL_FREED)
                .map(|c| c.appended as f64)
                .collect();
            let end = match (&p.error, p.stalled_for_good_at) {
                (Some(_), _) => Some(p.appended),
                (None, at) => at,
            };
            let ended = match (&p.error, p.stalled_for_good_at) {
                (Some(_), _) => format!("; failed at {}", p.appended),
                (None, Some(at)) => format!("; stalled for good at {at}"),
                (None, None) => String::new(),
            };
            Strip {
                label: format!("{}: {} stalls{ended}", p.policy, p.stalls),
                span: (0.0, p.appended as f64),
                events: stalls,
                end: end.map(|e| e as f64),
                style: Some(crate::replay::family::style_index(&p.policy, &names)),
            }
        })
        .collect();
    Panel {
        title: format!(
            "stalls over the whole run: a tick per compaction freeing under {}, a cross where the run stalled for good",
            pct(super::STALL_FREED)
        ),
        y_label: "policy".into(),
        strips,
        own_x: true,
        x_label: format!("tokens of transcript appended ({}), the whole run", r.tokenizer),
        ..Panel::default()
    }
}
