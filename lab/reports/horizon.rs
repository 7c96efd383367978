//! The long-horizon report: every policy over one generated session of
//! [`TOKENS`] tokens ([`crate::horizon`]), as a table and the plot of freed
//! fraction against compaction cycle. The 10 M-token figures come from
//! `make bench` (`benches/horizon.rs`) and are recorded in `notes/horizon.md`;
//! the report's horizon is shorter so that `cargo test` (a debug build)
//! regenerates it in reasonable time.

use super::{Cell, Table};
use crate::error::LabResult;
use crate::horizon::{render, HorizonReport, DEFAULT_LIMIT, DEFAULT_SEED};

/// Tokens of transcript appended in the report's horizon.
pub const TOKENS: u64 = 400_000;

/// Every policy over the report's horizon.
pub fn horizon_data() -> LabResult<HorizonReport> {
    let specs = crate::horizon::every_policy();
    crate::horizon::run(
        &specs,
        DEFAULT_SEED,
        TOKENS,
        DEFAULT_LIMIT,
        crate::jobs::default_jobs(),
    )
}

/// `horizon`: per policy, compactions, freed fraction at the start, middle
/// and end, stalls, re-fetch growth and how the run ended.
pub fn horizon_table(r: &HorizonReport) -> Table {
    let rows = r
        .policies
        .iter()
        .zip(render::rows(r))
        .map(|(p, text)| {
            let (mid, end) = render::refetch_growth(p);
            vec![
                Cell::Text(p.policy.clone()),
                Cell::Int(p.appended),
                Cell::Int(p.calls as u64),
                Cell::Int(p.peak_tokens as u64),
                Cell::Int(p.compactions.len() as u64),
                Cell::Text(text[5].clone()),
                Cell::Text(text[6].clone()),
                Cell::Text(text[7].clone()),
                Cell::Int(p.stalls as u64),
                Cell::Int(mid as u64),
                Cell::Int(end as u64),
                Cell::Text(text[10].clone()),
            ]
        })
        .collect();
    let mut columns: Vec<String> = render::COLUMNS[..9].iter().map(|c| c.to_string()).collect();
    columns.extend(["re-fetches: half", "re-fetches: end", "ended"].map(String::from));
    Table {
        name: "horizon".into(),
        title: format!(
            "Long horizon: every policy over {} tokens of a generated session (seed {}, window {}, tokenizer approx)",
            r.tokens, r.seed, r.limit
        ),
        columns,
        rows,
    }
}

/// The plot ([`render::svg`]).
pub fn horizon_svg(r: &HorizonReport) -> String {
    render::svg(r, "lab reports --out reports/")
}
