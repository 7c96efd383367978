//! What a priced replay run costs over time: the rows of priced runs, the
//! line that names what priced them, and the plot of cumulative dollars
//! over model calls, one line per policy. Pure functions of runs; `lab
//! reports` renders the same rows as its cost table.

use serde::Serialize;

use crate::cache::CostReport;
use crate::error::{LabError, LabResult};
use crate::plot::{Figure, Panel, Series};
use crate::replay::runs::policies::Compared;

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
    /// The calls made, when the run ended by the design's own error (its
    /// line stops there, or is absent when it ended before its first
    /// call); `None` for a run that finished.
    pub ended_after: Option<usize>,
}

impl PolicyCost {
    /// The run's name in a legend: the policy, and the call (0-based, as
    /// the tables count) at which it ended by error.
    fn legend(&self) -> String {
        match self.ended_after {
            Some(n) => format!("{} (ended by error at call {n})", self.policy),
            None => self.policy.clone(),
        }
    }
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
                ended_after: c.run.ended_by_error.as_ref().map(|_| c.run.calls.len()),
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

/// The log a subagent session belongs to and its number, from its label
/// (`FILE › subagent N`); `None` for a main chain.
pub fn subagent_of(session: &str) -> Option<(&str, usize)> {
    let (log, n) = session.rsplit_once(" › subagent ")?;
    Some((log, n.trim().parse().ok()?))
}

/// One policy's cumulative dollars over the model calls of several
/// sessions, one after another (the subagents of a log, in their order):
/// what the subagents cost together.
pub fn cumulative_over(reports: &[&CostReport]) -> Vec<(f64, f64)> {
    let mut total = 0.0;
    reports
        .iter()
        .flat_map(|r| r.requests.iter())
        .enumerate()
        .map(|(i, r)| {
            total += r.dollars;
            (i as f64 + 1.0, total)
        })
        .collect()
}

/// A policy's line: its name, its legend, its points.
type Curve<'a> = (&'a str, String, Vec<(f64, f64)>);

/// One panel per policy group over `curves`: the group's
/// policies highlighted, every other policy in grey.
fn group_panels(title: &str, curves: &[Curve<'_>], names: &[&str]) -> Vec<Panel> {
    use super::family::{group, style_index, GROUPS};
    GROUPS
        .iter()
        .filter(|g| curves.iter().any(|(p, _, _)| group(p) == **g))
        .map(|g| Panel {
            title: format!("{title} · {g}"),
            y_label: "cumulative cost (dollars)".into(),
            series: curves
                .iter()
                .map(|(p, label, points)| Series {
                    label: label.clone(),
                    points: points.clone(),
                    style: Some(style_index(p, names)),
                    context: group(p) != *g,
                    ..Series::default()
                })
                .collect(),
            own_x: true,
            ..Panel::default()
        })
        .collect()
}

/// Small multiples: per main session of more than one call (in first-seen
/// order; a single point is no curve), one panel per policy group (whole
/// families, [`super::family`]), its policies highlighted, every other
/// policy in grey; each session's panels span its own calls. A log's
/// subagents are not a panel set each: they are aggregated into one set
/// after their log's (each policy's dollars over every subagent's calls,
/// one subagent after another), and [`subagent_table`] gives each one.
fn panels(rows: &[PolicyCost]) -> Vec<Panel> {
    let names: Vec<&str> = rows.iter().map(|p| p.policy.as_str()).collect();
    let all = sessions(rows);
    let mut out = Vec::new();
    for &(s, n) in all.iter().filter(|(s, _)| subagent_of(s).is_none()) {
        if n > 1 {
            let curves: Vec<Curve<'_>> = rows
                .iter()
                .filter(|p| p.session == s)
                .map(|p| (p.policy.as_str(), p.legend(), cumulative_dollars(&p.report)))
                .collect();
            out.extend(group_panels(&format!("session {s}"), &curves, &names));
        }
        out.extend(subagent_panels(rows, s));
    }
    out
}

/// The subagents of log `log` aggregated: per policy group, one panel of
/// each policy's dollars over every subagent's calls, one subagent after
/// another; none when the log had no subagent.
pub fn subagent_panels(rows: &[PolicyCost], log: &str) -> Vec<Panel> {
    let names: Vec<&str> = rows.iter().map(|p| p.policy.as_str()).collect();
    let mut subs: Vec<&str> = Vec::new();
    let mut policies: Vec<&str> = Vec::new();
    for p in rows {
        if subagent_of(&p.session).is_some_and(|(l, _)| l == log)
            && !subs.contains(&p.session.as_str())
        {
            subs.push(&p.session);
        }
        if !policies.contains(&p.policy.as_str()) {
            policies.push(&p.policy);
        }
    }
    if subs.is_empty() {
        return Vec::new();
    }
    let curves: Vec<Curve<'_>> = policies
        .iter()
        .map(|&policy| {
            let runs: Vec<&PolicyCost> = subs
                .iter()
                .filter_map(|sub| {
                    rows.iter()
                        .find(|p| p.session == *sub && p.policy == policy)
                })
                .collect();
            let reports: Vec<&CostReport> = runs.iter().map(|p| &p.report).collect();
            let ended = runs.iter().filter(|p| p.ended_after.is_some()).count();
            let label = match ended {
                0 => policy.to_string(),
                n => format!(
                    "{policy} (ended by error in {n} of {} subagents)",
                    runs.len()
                ),
            };
            (policy, label, cumulative_over(&reports))
        })
        .filter(|(_, _, points)| points.len() > 1)
        .collect();
    let title = format!("session {log} · its {} subagents together", subs.len());
    group_panels(&title, &curves, &names)
}

/// One subagent of a log, priced under every policy: the row of
/// [`subagent_table`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SubagentRow {
    /// The log's session label.
    pub log: String,
    /// The subagent's number.
    pub subagent: usize,
    /// Its model calls (under the policy that made the most).
    pub calls: usize,
    /// The cheapest policy and its dollars.
    pub cheapest: (String, f64),
    /// The median over policies, dollars.
    pub median: f64,
    /// The dearest policy and its dollars.
    pub dearest: (String, f64),
}

/// Per subagent of every log in `rows`, in order: its calls and its
/// dollars under the cheapest policy, the median policy and the dearest:
/// what the aggregated subagent panels sum.
pub fn subagent_rows(rows: &[PolicyCost]) -> Vec<SubagentRow> {
    sessions(rows)
        .into_iter()
        .filter_map(|(s, calls)| {
            let (log, n) = subagent_of(s)?;
            let mut priced: Vec<(&str, f64)> = rows
                .iter()
                .filter(|p| p.session == s)
                .map(|p| (p.policy.as_str(), p.report.dollars))
                .collect();
            priced.sort_by(|a, b| a.1.total_cmp(&b.1));
            let (first, last) = (*priced.first()?, *priced.last()?);
            let k = priced.len();
            let median = match k % 2 {
                1 => priced[k / 2].1,
                _ => (priced[k / 2 - 1].1 + priced[k / 2].1) / 2.0,
            };
            Some(SubagentRow {
                log: log.to_string(),
                subagent: n,
                calls,
                cheapest: (first.0.to_string(), first.1),
                median,
                dearest: (last.0.to_string(), last.1),
            })
        })
        .collect()
}

/// The columns of [`subagent_table`].
pub const SUBAGENT_COLUMNS: [&str; 6] = [
    "log",
    "subagent",
    "model calls",
    "cheapest policy ($)",
    "median ($)",
    "dearest policy ($)",
];

/// The cells of a [`SubagentRow`], in [`SUBAGENT_COLUMNS`] order.
pub fn subagent_cells(r: &SubagentRow) -> Vec<String> {
    vec![
        r.log.clone(),
        r.subagent.to_string(),
        r.calls.to_string(),
        format!("{} ({:.4})", r.cheapest.0, r.cheapest.1),
        format!("{:.4}", r.median),
        format!("{} ({:.4})", r.dearest.0, r.dearest.1),
    ]
}

/// The per-subagent table under the aggregated panels, as text or
/// Markdown, with a line saying what it is; empty when no log had
/// subagents.
pub fn subagent_table(rows: &[PolicyCost], markdown: bool) -> String {
    let subs = subagent_rows(rows);
    if subs.is_empty() {
        return String::new();
    }
    let cells = subs.iter().map(subagent_cells).collect();
    format!(
        "subagents (drawn together, one after another, in the plot's subagent panels), each priced under every policy: {}\n{}\n",
        pricing_line(rows),
        crate::render::table(&SUBAGENT_COLUMNS, cells, markdown)
    )
}

/// The plot: cumulative dollars over model calls, one line per policy, one
/// panel per session and policy family (a log's subagents together in one
/// set, [`subagent_panels`]); `command` names what made it in the
/// caption, beside the sessions of one call it does not draw.
pub fn dollars_svg(rows: &[PolicyCost], command: &str) -> String {
    // Subagents are drawn together with their log's, however short each is.
    let single = sessions(rows)
        .iter()
        .filter(|&&(s, n)| n <= 1 && subagent_of(s).is_none())
        .count();
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

/// `lab replay --policy … --cost --plot FILE`: writes the plot of `runs`
/// (replacing FILE whole, never half-written).
pub fn write_plot(path: &std::path::Path, runs: &[Compared]) -> LabResult<()> {
    write_plot_titled(path, runs, "lab replay --policy … --cost")
}

/// [`write_plot`] under the caption `title` (the command and its anchor).
pub fn write_plot_titled(path: &std::path::Path, runs: &[Compared], title: &str) -> LabResult<()> {
    let rows = policy_costs(runs);
    let svg = dollars_svg(&rows, title);
    crate::storage::root::cleanup::write_replacing(path, svg.as_bytes())
        .map_err(|e| LabError::io("writing the plot", path, e))
}
