//! What every policy costs under a prompt cache: the cost table of `lab
//! reports` (tokens sent, cache reads and writes, breaks per turn, dollars)
//! and the plot of cumulative dollars over model calls, one line per policy.
//!
//! Pure functions of priced runs ([`PolicyCost`]); `lab reports` prices the
//! frontier's generated session ([`super::frontier::session`]), `lab replay
//! --policy … --cost --plot FILE` the sessions it replays.

use serde::Serialize;

use super::{Cell, Table};
use crate::cache::CostReport;
use std::path::PathBuf;

use crate::compare::{recorded_usage, render_with_recorded, replay_files, Compared, Measure};
use crate::error::{LabError, LabResult};
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

/// What priced the rows: cache model, dated price sheet, tokenizer (from the
/// first row; every row of one report is priced alike).
pub fn pricing_line(rows: &[PolicyCost]) -> String {
    match rows.first() {
        Some(p) => format!(
            "cache {}, prices {} as of {} (output not priced), tokenizer {}",
            p.report.provider, p.report.sheet.name, p.report.sheet.date, p.tokenizer
        ),
        None => "no priced runs".to_string(),
    }
}

/// Dollars with four decimals (a fixed precision: Rust prints floats
/// exactly, so every machine writes the same digits).
fn money(x: f64) -> String {
    format!("{x:.4}")
}

/// `cost`: per policy, the prompt-cache totals of its run.
pub fn cost_table(rows: &[PolicyCost]) -> Table {
    let columns = [
        "policy",
        "model calls",
        "tokens sent",
        "cache read",
        "cache write",
        "uncached",
        "breaks",
        "breaks/turn",
        "payback turns (median)",
        "dollars",
    ];
    let body = rows
        .iter()
        .map(|p| {
            let r = &p.report;
            vec![
                Cell::Text(p.policy.clone()),
                Cell::Int(r.requests.len() as u64),
                Cell::Int(r.input_tokens),
                Cell::Int(r.cache_read_tokens),
                Cell::Int(r.cache_write_tokens),
                Cell::Int(r.uncached_tokens),
                Cell::Int(r.breaks as u64),
                Cell::Text(format!("{:.3}", r.breaks_per_turn)),
                Cell::Text(
                    r.payback_turns_median
                        .map_or("-".into(), |x| format!("{x:.2}")),
                ),
                Cell::Text(money(r.dollars)),
            ]
        })
        .collect();
    let session = rows.first().map_or("", |p| p.session.as_str());
    Table {
        name: "cost".into(),
        title: format!(
            "Prompt-cache cost of every policy on the {session} session: {}",
            pricing_line(rows)
        ),
        columns: columns.iter().map(|c| c.to_string()).collect(),
        rows: body,
    }
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

/// One panel per session (in first-seen order), one line per policy.
fn panels(rows: &[PolicyCost]) -> Vec<Panel> {
    let mut sessions: Vec<&str> = Vec::new();
    for p in rows {
        if !sessions.contains(&p.session.as_str()) {
            sessions.push(&p.session);
        }
    }
    sessions
        .iter()
        .map(|s| Panel {
            title: format!("session {s}"),
            y_label: "cumulative cost (dollars)".into(),
            series: rows
                .iter()
                .filter(|p| p.session == *s)
                .map(|p| Series {
                    label: p.policy.clone(),
                    points: cumulative_dollars(&p.report),
                    step: false,
                })
                .collect(),
            ..Panel::default()
        })
        .collect()
}

/// The plot: cumulative dollars over model calls, one line per policy, one
/// panel per session; `command` names what made it in the caption.
pub fn dollars_svg(rows: &[PolicyCost], command: &str) -> String {
    crate::plot::svg(&Figure {
        title: "cumulative prompt cost over model calls, per policy".into(),
        x_label: "model call (count)".into(),
        panels: panels(rows),
        caption: format!("{command} · {}", pricing_line(rows)),
    })
}

/// `lab replay FILE… --policy …`: every file under every policy, rendered;
/// when priced, the recorded usage of Claude Code logs beside the
/// prediction, and with `plot` the cumulative-dollars plot written there.
pub fn replay_command(
    files: &[PathBuf],
    names: &[String],
    path_len: usize,
    import: &crate::import::ImportOptions,
    measure: Measure,
    plot: Option<PathBuf>,
    format: crate::report::Format,
) -> LabResult<String> {
    let pricing = measure.pricing.clone();
    let out = replay_files(files, names, path_len, import, measure)?;
    let recorded = match &pricing {
        Some(p) => recorded_usage(files, import, p)?,
        None => Vec::new(),
    };
    if let Some(path) = plot {
        write_plot(&path, &out)?;
    }
    Ok(render_with_recorded(&out, &recorded, format))
}

/// `lab replay --policy … --cost --plot FILE`: writes the plot of `runs`
/// (replacing FILE whole, never half-written).
pub fn write_plot(path: &std::path::Path, runs: &[Compared]) -> LabResult<()> {
    let rows = policy_costs(runs);
    let svg = dollars_svg(&rows, "lab replay --policy … --cost");
    crate::compact::root::cleanup::write_replacing(path, svg.as_bytes())
        .map_err(|e| LabError::io("writing the plot", path, e))
}

#[cfg(test)]
mod tests;
