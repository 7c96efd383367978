//! What every policy costs under a prompt cache: the cost table of `lab
//! reports` (tokens sent, cache reads and writes, breaks per turn, dollars).
//!
//! A pure function of priced runs ([`PolicyCost`]); `lab reports` prices the
//! frontier's generated session ([`super::frontier::session`]); the plot of
//! cumulative dollars is [`crate::replay::dollars::dollars_svg`].

use super::{Cell, Table};
use crate::replay::dollars::{pricing_line, PolicyCost};

/// Dollars with four decimals (a fixed precision: Rust prints floats
/// exactly, so every machine writes the same digits).
fn money(x: f64) -> String {
    format!("{x:.4}")
}

/// `cost`: per policy, the prompt-cache totals of its run and its regret
/// (`regret`, in row order: dollars above the cheapest schedule at equal
/// or better recall).
pub fn cost_table(rows: &[PolicyCost], regret: &[Option<f64>]) -> Table {
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
        "regret",
    ];
    let body = rows
        .iter()
        .enumerate()
        .map(|(i, p)| {
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
                super::frontier::regret_cell(regret.get(i).copied().flatten()),
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

#[cfg(test)]
mod tests;
