//! Retention tables and the cost–retention frontier: pure functions of runs
//! and their retention reports.

use serde::Serialize;

use super::drift::DriftCurve;
use super::{ArtifactKind, RetentionReport, Status};
use crate::policy::engine::PolicyRun;
use crate::render::{json, table, Format};

/// One policy on one session, with what it kept and what it sent.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Scored {
    /// Session name.
    pub session: String,
    /// Policy name.
    pub policy: String,
    /// Tokens of every request, summed (by the run's tokenizer).
    pub tokens_sent: usize,
    /// Artifact recall at the last request, percent.
    pub artifact_recall: f64,
    /// Dollars under the run's price sheet, when priced (the frontier then
    /// weighs dollars instead of tokens sent).
    pub dollars: Option<f64>,
    /// Another policy on this session costs no more and keeps no less, and
    /// is better on one of the two.
    pub dominated: bool,
    /// The full retention report.
    pub retention: RetentionReport,
    /// The run closed-loop (`--closed-loop`): what its removals cost the
    /// agent later, and its place on the closed-loop frontier.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closed: Option<ClosedPoint>,
    /// Why the run stopped before the session's end, when it did (a
    /// design's own error, e.g. Inspect's "compaction insufficient"). Such
    /// a run is off the frontier both ways: its low cost is that of calls
    /// it never made, so it must not beat runs that finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_by_error: Option<String>,
}

/// A run's point on the closed-loop frontier: in-request recall against
/// closed-loop dollars.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ClosedPoint {
    /// Dollars of the closed-loop run (recovery calls and re-fetches
    /// inserted and priced); tokens sent by it when unpriced.
    pub dollars: f64,
    /// Percent of the artifacts verbatim in the last request (a pointer
    /// does not count: following it is a call the dollars pay for).
    pub in_request_recall: f64,
    /// Reads inserted to follow the policy's pointers.
    pub recovery_calls: usize,
    /// Original calls inserted again.
    pub refetches: usize,
    /// Demands neither in the request, nor reachable, nor re-fetchable.
    pub lost_demands: usize,
    /// Another run of the session costs no more closed-loop and keeps no
    /// less in the request, and is better on one of the two.
    pub dominated: bool,
}

/// Mark every closed-loop point another one on the same session beats.
pub fn mark_closed_dominated(rows: &mut [Scored]) {
    // A run that ended by error is no one's better.
    let points: Vec<(String, String, Option<ClosedPoint>)> = rows
        .iter()
        .map(|s| {
            let closed = if s.ended_by_error.is_some() {
                None
            } else {
                s.closed
            };
            (s.session.clone(), s.policy.clone(), closed)
        })
        .collect();
    for s in rows.iter_mut() {
        let ended = s.ended_by_error.is_some();
        let Some(me) = s.closed.as_mut() else {
            continue;
        };
        if ended {
            me.dominated = false;
            continue;
        }
        me.dominated = points.iter().any(|(session, policy, o)| {
            let Some(o) = o else { return false };
            *session == s.session
                && *policy != s.policy
                && o.dollars <= me.dollars
                && o.in_request_recall >= me.in_request_recall
                && (o.dollars < me.dollars || o.in_request_recall > me.in_request_recall)
        });
    }
}

/// Score runs and mark the dominated ones per session.
pub fn score(runs: &[(PolicyRun, RetentionReport)]) -> Vec<Scored> {
    let mut out: Vec<Scored> = runs
        .iter()
        .map(|(run, r)| Scored {
            session: run.session.clone(),
            policy: run.policy.clone(),
            tokens_sent: run.calls.iter().map(|c| c.tokens).sum(),
            artifact_recall: r.artifact_recall,
            dollars: None,
            dominated: false,
            retention: r.clone(),
            closed: None,
            ended_by_error: run.ended_by_error.clone(),
        })
        .collect();
    mark_dominated(&mut out);
    out
}

/// A policy's cost on the frontier: dollars when priced, else tokens sent.
fn cost_of(s: &Scored) -> f64 {
    s.dollars.unwrap_or(s.tokens_sent as f64)
}

/// Mark every policy that another one on the same session beats: no more
/// cost, no less recall, strictly better on one.
pub fn mark_dominated(rows: &mut [Scored]) {
    for i in 0..rows.len() {
        let me = &rows[i];
        // A run that ended by error is neither on the frontier nor beaten:
        // its table cell says it ended (see [`Scored::ended_by_error`]).
        if me.ended_by_error.is_some() {
            rows[i].dominated = false;
            continue;
        }
        let dominated = rows.iter().any(|o| {
            o.session == me.session
                && o.ended_by_error.is_none()
                && o.policy != me.policy
                && cost_of(o) <= cost_of(me)
                && o.artifact_recall >= me.artifact_recall
                && (cost_of(o) < cost_of(me) || o.artifact_recall > me.artifact_recall)
        });
        rows[i].dominated = dominated;
    }
}

/// The cost–retention cell: on the frontier, dominated, or off it because
/// the run ended by error.
pub fn frontier_cell(s: &Scored) -> &'static str {
    if s.ended_by_error.is_some() {
        "ended by error"
    } else if s.dominated {
        "dominated"
    } else {
        "frontier"
    }
}

fn pct(x: f64) -> String {
    format!("{x:.1}%")
}

fn kind_recall(r: &RetentionReport, k: ArtifactKind) -> String {
    match r.by_kind.get(&k) {
        Some(f) if f.seen > 0 => format!("{}/{}", f.kept, f.seen),
        _ => "-".into(),
    }
}

/// A keyed-fact class: requests where it held, with the keys held so at the
/// last request.
fn class(c: &super::facts::ClassFigures) -> String {
    match c.requests {
        0 => "0".into(),
        n => format!("{n} req ({} at end)", c.at_end),
    }
}

/// Policy × session: artifact recall (overall and per kind), re-fetch demand,
/// tokens sent, and whether the policy is dominated on the frontier.
pub fn retention(rows: &[Scored], format: Format) -> String {
    if format == Format::Json {
        return json(&rows);
    }
    let body = rows
        .iter()
        .map(|s| {
            let r = &s.retention;
            vec![
                s.session.clone(),
                s.policy.clone(),
                s.tokens_sent.to_string(),
                pct(s.artifact_recall),
                format!("{}+{}/{}", r.present, r.reachable, r.artifacts),
                kind_recall(r, ArtifactKind::File),
                kind_recall(r, ArtifactKind::Command),
                kind_recall(r, ArtifactKind::Error),
                r.tiers.cell(),
                origins(r),
                format!("{} ({} tok)", r.refetch_calls, r.refetch_tokens),
                class(&r.classes.mutated),
                class(&r.classes.stale),
                frontier_cell(s).to_string(),
            ]
        })
        .collect();
    let mut t = table(
        &[
            "session",
            "policy",
            "tokens sent",
            "artifact recall",
            "present+reachable/seen",
            "files",
            "commands",
            "errors",
            "tiers: verbatim/pointer/re-fetchable/lost",
            "kept (verbatim+pointer): instruction/task state/tool output",
            "re-fetches",
            "mutated",
            "stale",
            "cost–retention",
        ],
        body,
        format == Format::Markdown,
    );
    t.push('\n');
    t
}

/// Kept (in the request or behind a pointer) of seen, per origin:
/// `instruction/task state/tool output`, each `kept of seen` or `-`.
fn origins(r: &super::RetentionReport) -> String {
    super::Origin::ALL
        .iter()
        .map(|o| match r.by_origin.get(o) {
            Some(t) => format!("{} of {}", t.in_request + t.behind_pointer, t.total()),
            None => "-".into(),
        })
        .collect::<Vec<_>>()
        .join(" / ")
}

/// A fact's tier at the end.
fn tier(f: &super::Artifact) -> &'static str {
    match (f.status, f.refetchable) {
        (Status::Present, _) => "verbatim",
        (Status::Reachable, _) => "pointer",
        (Status::Gone, true) => "re-fetchable",
        (Status::Gone, false) => "lost",
    }
}

/// Planted facts: position × policy, with the status at the end and the
/// mechanisms that ran where the fact was first gone.
pub fn facts(rows: &[Scored], format: Format) -> String {
    #[derive(Serialize)]
    struct Fact<'a> {
        session: &'a str,
        policy: &'a str,
        position: &'a str,
        status: Status,
        tier: &'static str,
        origin: super::Origin,
        first_gone: Option<usize>,
        mechanisms: &'a [&'static str],
    }
    let facts: Vec<Fact<'_>> = rows
        .iter()
        .flat_map(|s| {
            s.retention.facts.iter().map(move |f| Fact {
                session: &s.session,
                policy: &s.policy,
                position: &f.label,
                status: f.status,
                tier: tier(f),
                origin: f.origin,
                first_gone: f.first_gone,
                mechanisms: &f.mechanisms,
            })
        })
        .collect();
    if format == Format::Json {
        return json(&facts);
    }
    let body = facts
        .iter()
        .map(|f| {
            let fate = match (f.status, f.first_gone) {
                (Status::Gone, Some(c)) => format!("gone @{c} ({})", f.mechanisms.join("+")),
                (st, Some(c)) => format!("{st:?} (gone @{c}, back later)").to_lowercase(),
                (st, None) => format!("{st:?}").to_lowercase(),
            };
            vec![
                f.session.into(),
                f.policy.into(),
                f.position.into(),
                f.origin.name().into(),
                fate,
                f.tier.into(),
            ]
        })
        .collect();
    let mut t = table(
        &["session", "policy", "planted at", "kind", "fate", "tier"],
        body,
        format == Format::Markdown,
    );
    t.push('\n');
    t
}

/// Multi-pass drift: for each strategy, the facts alive after each pass.
pub fn drift(curves: &[DriftCurve], format: Format) -> String {
    if format == Format::Json {
        return json(&curves);
    }
    let passes = curves.first().map_or(0, |c| c.alive.len());
    let mut header = vec!["strategy".to_string(), "capacity".to_string()];
    header.extend((1..=passes).map(|k| format!("k={k}")));
    header.push("constraint lost at".into());
    let body = curves
        .iter()
        .map(|c| {
            let mut row = vec![
                format!("{:?}", c.strategy).to_lowercase(),
                c.capacity.to_string(),
            ];
            for r in &c.alive {
                let facts = r[1..].iter().filter(|x| **x).count();
                row.push(format!("{}{facts}", if r[0] { "C+" } else { "" }));
            }
            row.push(
                c.constraint_lost_at
                    .map_or("never".into(), |k| format!("k={k}")),
            );
            row
        })
        .collect();
    let refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut t = table(&refs, body, format == Format::Markdown);
    t.push_str("\n\ncell: C+ when the first-turn constraint is in context, then the number of per-pass facts alive\n");
    t
}
