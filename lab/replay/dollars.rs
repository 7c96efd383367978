//! What a priced replay run costs over time: the rows of priced runs, the
//! line that names what priced them, and the plot of cumulative dollars
//! over model calls, one line per policy. Pure functions of runs; `lab
//! reports` renders the same rows as its cost table.

use serde::Serialize;

use super::policies::Compared;
use crate::cache::CostReport;
use crate::plot::{Figure, Panel, Series};

/// One policy priced on one session.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyCost {
    /// Session label.
    pub session: String,
    /// Policy name.
    pub policy: String,
    /// The tokenizer the requests were sized with.
    pub tokenizer: String,
    /// Totals and per-request series.
    pub report: CostReport,
}

/// The priced runs among `runs`, in order (unpriced runs are left out).
pub fn policy_costs(runs: &[Compared]) -> Vec<PolicyCost> {
    runs.iter()
        .filter_map(|c| {
            c.cost.as_ref().map(|r| PolicyCost {
                session: c.run.session.clone(),
                policy: c.run.policy.clone(),
                tokenizer: c.run.tokenizer.clone(),
                report: r.clone(),
            })
        })
        .collect()
}

/// What priced the rows: cache model, dated price sheet (or "each
/// session's model" when sessions were priced at their own), tokenizer.
pub fn pricing_line(rows: &[PolicyCost]) -> String {
    let Some(p) = rows.first() else {
        return "no priced runs".to_string();
    };
    let sheet = if rows
        .iter()
        .all(|r| r.report.sheet.name == p.report.sheet.name)
    {
        p.report.sheet.name.to_string()
    } else {
        "each session's model".to_string()
    };
    format!(
        "cache {}, prices {sheet} as of {} (output not priced), tokenizer {}",
        p.report.provider, p.report.sheet.date, p.tokenizer
    )
}

/// Cumulative dollars after each model call, numbered from 1.
pub fn cumulative_dollars(report: &CostReport) -> Vec<(f64, f64)> {
    let mut total = 0.0;
    report
        .requests
        .iter()
        .enumerate()
        .map(|(i, r)| {
            total += r.dollars;
            (i as f64 + 1.0, total)
        })
        .collect()
}

/// The sessions of `rows` in first-seen order, and how many calls each
/// made under its longest-running policy.
fn sessions(rows: &[PolicyCost]) -> Vec<(&str, usize)> {
    let mut out: Vec<(&str, usize)> = Vec::new();
    for p in rows {
        let calls = p.report.requests.len();
        match out.iter_mut().find(|(s, _)| *s == p.session) {
            Some((_, n)) => *n = (*n).max(calls),
            None => out.push((&p.session, calls)),
        }
    }
    out
}

/// Small multiples: per session of more than one call (in first-seen
/// order; a single point is no curve), one panel per policy group (whole
/// families, [`super::family`]), its policies highlighted, every other
/// policy in grey; each session's panels span its own calls.
fn panels(rows: &[PolicyCost]) -> Vec<Panel> {
    use super::family::{group, style_index, GROUPS};
    let names: Vec<&str> = rows.iter().map(|p| p.policy.as_str()).collect();
    let mut out = Vec::new();
    for (s, _) in sessions(rows).into_iter().filter(|&(_, n)| n > 1) {
        let of_session: Vec<&PolicyCost> = rows.iter().filter(|p| p.session == s).collect();
        for g in GROUPS {
            if !of_session.iter().any(|p| group(&p.policy) == g) {
                continue;
            }
            let series = of_session
                .iter()
                .map(|p| Series {
                    label: p.policy.clone(),
                    points: cumulative_dollars(&p.report),
                    style: Some(style_index(&p.policy, &names)),
                    context: group(&p.policy) != g,
                    ..Series::default()
                })
                .collect();
            out.push(Panel {
                title: format!("session {s} · {g}"),
                y_label: "cumulative cost (dollars)".into(),
                series,
                own_x: true,
                ..Panel::default()
            });
        }
    }
    out
}

/// The plot: cumulative dollars over model calls, one line per policy, one
/// panel per session and policy family; `command` names what made it in the
/// caption, beside the sessions of one call it does not draw.
pub fn dollars_svg(rows: &[PolicyCost], command: &str) -> String {
    let single = sessions(rows).iter().filter(|&&(_, n)| n <= 1).count();
    let not_drawn = match single {
        0 => String::new(),
        1 => " · 1 session of one call not drawn".to_string(),
        n => format!(" · {n} sessions of one call not drawn"),
    };
    crate::plot::svg(&Figure {
        title: "cumulative prompt cost over model calls, per policy".into(),
        x_label: "model call (count)".into(),
        panels: panels(rows),
        caption: format!("{command} · {}{not_drawn}", pricing_line(rows)),
    })
}
