//! Thrash: how often a policy compacts, how full it
//! leaves the window, and whether the calls its removals cost land right
//! after its compactions, measured on the closed-loop run
//! ([`crate::replay::runs::policies::closed_loop`]).

use std::collections::BTreeSet;

use crate::policy::engine::{event_kind, PolicyRun};

/// Event kinds that take content out of the request: a call preceded by one
/// and smaller than the call before is a compaction.
const REMOVING: &[&str] = &["persisted", "cleared", "truncated", "summarised", "dropped"];

/// Calls after a compaction within which an inserted call counts as caused
/// by it (the "within 5 calls").
pub const NEAR: usize = 5;

/// One run's thrash.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct Thrash {
    /// Calls preceded by a removal whose request is smaller than the
    /// previous call's.
    pub compactions: usize,
    /// Compactions per 100k new tokens; new tokens are the sum of the
    /// request's growth from call to call (an estimate: what arrived at a
    /// compacting call is not counted, so it is a lower bound and the rate
    /// an upper bound).
    pub per_100k_new_tokens: f64,
    /// Mean tokens of the request right after a compaction (envelope
    /// included), as a share of the run's largest request: how full the
    /// window is left (the largest request stands in for the window, which
    /// not every policy states).
    pub filled_after: f64,
    /// Inserted calls (recovery calls and re-fetches) within [`NEAR`] calls
    /// after a compaction.
    pub refetches_near_compaction: usize,
    /// Median calls between two compactions (0 with fewer than two).
    pub calls_between_median: usize,
    /// Set when the run compacted at least twice and most compactions were
    /// followed within [`NEAR`] calls by a call to get content back: the
    /// policy removes what the agent needs next.
    pub looping: bool,
}

/// The thrash of `run`, whose inserted calls answer the messages at
/// `inserted` (indices in the replayed messages).
pub fn of(run: &PolicyRun, inserted: &BTreeSet<usize>) -> Thrash {
    let compacting: BTreeSet<usize> = run
        .events
        .iter()
        .filter(|(_, e)| REMOVING.contains(&event_kind(e)))
        .map(|(call, _)| *call)
        // A removal that leaves the request as large as before (a mask of
        // one old result among the new ones) is upkeep, not a compaction.
        .filter(|&call| {
            call > 0
                && run.calls.get(call).map(|c| c.tokens) < run.calls.get(call - 1).map(|c| c.tokens)
        })
        .collect();
    let size = |i: usize| run.calls.get(i).map_or(0, |c| c.tokens + c.envelope);
    let new_tokens: usize = (1..run.calls.len())
        .map(|i| run.calls[i].tokens.saturating_sub(run.calls[i - 1].tokens))
        .sum::<usize>()
        + run.calls.first().map_or(0, |c| c.tokens);
    let peak = (0..run.calls.len()).map(size).max().unwrap_or(0);
    let filled_after = if compacting.is_empty() || peak == 0 {
        0.0
    } else {
        compacting.iter().map(|&i| size(i) as f64).sum::<f64>()
            / compacting.len() as f64
            / peak as f64
    };
    let inserted_calls: Vec<usize> = run
        .calls
        .iter()
        .enumerate()
        .filter(|(_, c)| inserted.contains(&c.at))
        .map(|(i, _)| i)
        .collect();
    let near = |i: usize| {
        compacting
            .range(i.saturating_sub(NEAR)..=i)
            .next()
            .is_some()
    };
    let refetches_near_compaction = inserted_calls.iter().filter(|&&i| near(i)).count();
    let followed = compacting
        .iter()
        .filter(|&&c| inserted_calls.iter().any(|&i| i >= c && i <= c + NEAR))
        .count();
    let list: Vec<usize> = compacting.iter().copied().collect();
    let mut gaps: Vec<usize> = list.windows(2).map(|w| w[1] - w[0]).collect();
    gaps.sort_unstable();
    Thrash {
        compactions: compacting.len(),
        per_100k_new_tokens: if new_tokens == 0 {
            0.0
        } else {
            compacting.len() as f64 * 100_000.0 / new_tokens as f64
        },
        filled_after,
        refetches_near_compaction,
        calls_between_median: gaps.get(gaps.len() / 2).copied().unwrap_or(0),
        looping: compacting.len() >= 2 && 2 * followed > compacting.len(),
    }
}
