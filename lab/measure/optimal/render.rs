//! The optimum over the keep grid, per session, and its table.

use serde::Serialize;

use super::archive::{Archive, KEEP_MESSAGES};
use super::{dp, max_cleared, recall_at_end, Problem, Schedule, Shape, CLEAR, KEEP_GRID};
use crate::message::Message;
use crate::tokens::TokenCounter;

/// The family the optimum ranges over, as printed.
pub const FAMILY: &str = "clear-results|archive-messages";

/// A session's cheapest schedule at one retention floor.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Optimum {
    /// Session name.
    pub session: String,
    /// The mechanism family searched (every keep of the grid, compactions at any call).
    pub family: String,
    /// The retention floor: artifact recall at the last request at least
    /// this, percent.
    pub floor: f64,
    /// The request limit in tokens, envelope included (`null`: none).
    pub limit: Option<u64>,
    /// The cheapest schedule; `null` when no schedule meets the limit and the floor.
    pub schedule: Option<Schedule>,
    /// Its artifact recall at the last request (planted facts included),
    /// percent.
    pub recall: Option<f64>,
    /// `optimal`, or `infeasible` with the reason.
    pub status: String,
}

/// A policy run's dollars against the cheapest schedule.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Regret {
    /// The run's dollars minus the bound's (never negative for a sound bound).
    pub dollars: f64,
    /// The bound: the cheapest schedule's dollars at the floor.
    pub bound: f64,
    /// The floor: the run's artifact recall, percent (0 without `--retention`).
    pub floor: f64,
    /// The family the bound ranges over.
    pub family: String,
}

/// The optima of the sessions and the regret of each run (in run order).
#[derive(Debug, Clone, Default)]
pub struct OptimalPart {
    /// Each session's cheapest schedule at `--optimal-floor`.
    pub optima: Vec<Optimum>,
    /// Per run of the replay: its regret, when it was priced and a bound exists.
    pub regret: Vec<Option<Regret>>,
}

/// What the retention floor is measured on: the session with planted facts.
#[derive(Debug, Clone, Copy)]
pub struct Planted<'a> {
    /// The session with the facts planted (as `--retention` replays it).
    pub messages: &'a [Message],
    /// The facts.
    pub facts: &'a [(String, String)],
}

/// The cheapest schedule of `p` over [`KEEP_GRID`] with recall at least `floor`.
pub fn optimum(
    session: &str,
    p: &Problem<'_>,
    counter: &dyn TokenCounter,
    planted: Planted<'_>,
    floor: f64,
) -> Optimum {
    let shape = Shape::new(p, counter);
    let total = shape.results_before.last().copied().unwrap_or(0);
    let mut out = Optimum {
        session: session.to_string(),
        family: FAMILY.to_string(),
        floor,
        limit: p.limit,
        schedule: None,
        recall: None,
        status: String::new(),
    };
    let Some(cap) = max_cleared(planted.messages, planted.facts, floor, total) else {
        out.status = format!("infeasible: recall without any compaction is under {floor}%");
        return out;
    };
    // Archiving loses nothing to recall (every archived artifact stays
    // reachable), so it meets any floor the uncompacted session meets.
    let clear = KEEP_GRID
        .iter()
        .filter_map(|&k| dp::cheapest(&shape, p, k, cap));
    let archive = KEEP_MESSAGES
        .iter()
        .filter_map(|&m| Archive::new(&shape, m, counter).cheapest(p));
    let best = clear
        .chain(archive)
        .min_by(|a, b| a.dollars.total_cmp(&b.dollars));
    match best {
        Some(s) => {
            let cleared = if s.mechanism == CLEAR { s.cleared } else { 0 };
            out.recall = Some(recall_at_end(planted.messages, planted.facts, cleared));
            out.schedule = Some(s);
            out.status = "optimal".to_string();
        }
        None => {
            out.status =
                "infeasible: some request exceeds the limit under every schedule".to_string();
        }
    }
    out
}

/// The optima as a table: one row per session.
pub fn table(optima: &[Optimum], format: crate::render::Format) -> String {
    let rows = optima
        .iter()
        .map(|o| {
            let s = o.schedule.as_ref();
            vec![
                o.session.clone(),
                format!("{}%", o.floor),
                s.map_or("-".into(), |s| s.mechanism.clone()),
                s.map_or("-".into(), |s| s.keep.to_string()),
                s.map_or("-".into(), |s| points(&s.points)),
                s.map_or("-".into(), |s| s.requests.to_string()),
                s.map_or("-".into(), |s| s.peak_tokens.to_string()),
                o.recall.map_or("-".into(), |r| format!("{r:.1}%")),
                s.map_or("-".into(), |s| format!("{:.4}", s.dollars)),
                o.status.clone(),
            ]
        })
        .collect();
    let mut s = crate::render::table(
        &[
            "session",
            "floor",
            "mechanism",
            "keep",
            "compactions at",
            "requests",
            "peak tokens",
            "recall",
            "dollars",
            "status",
        ],
        rows,
        format == crate::render::Format::Markdown,
    );
    s.push_str(&format!(
        "\ncheapest schedule, compactions at any calls, over clear-results (results older than the last k of {KEEP_GRID:?} become [cleared]) \
         and archive-messages (messages before the last m of {KEEP_MESSAGES:?} saved to a file, a pointer in their place): \
         a lower bound for that family; recall exact, tokens and dollars estimates of the token counter\n"
    ));
    s
}

/// `3, 17, 40` (calls, 0-based), the first and last few when there are many.
fn points(p: &[usize]) -> String {
    if p.is_empty() {
        return "none".into();
    }
    let show = |v: &[usize]| {
        v.iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    if p.len() <= 8 {
        show(p)
    } else {
        format!(
            "{}, … {} more …, {}",
            show(&p[..4]),
            p.len() - 6,
            show(&p[p.len() - 2..])
        )
    }
}
