//! Multi-pass drift: what survives k = 1…n successive compactions.
//!
//! One generated session: a constraint in the first user turn, then passes
//! of [`TURNS_PER_PASS`] tool calls, the first of each pass answering with a
//! fact line. After each pass the context is compacted by one strategy:
//! - **regenerate**: the summariser sees the previous summary and the new
//!   turns and writes a fresh summary (newest lines win when it is full);
//! - **anchored**: the previous summary is kept verbatim and the new turns'
//!   lines are merged after it (the anchor wins when it is full);
//! - **masking**: no summary; results older than the newest
//!   [`MASK_KEEP`] become a placeholder, user turns stay.
//!
//! The summariser is the deterministic [`Extractive`] one with a stated
//! capacity, so the curve is a property of the design, not of a model.

use serde::Serialize;

use crate::message::{Block, Message};
use crate::policy::model::{salient_lines, Extractive, ModelRole, SummaryRequest};

/// Tool calls per pass.
pub const TURNS_PER_PASS: usize = 3;
/// Results masking keeps verbatim.
pub const MASK_KEEP: usize = 3;
/// The constraint stated in the first user turn.
pub const CONSTRAINT: &str = "CONSTRAINT-1: do not edit vendor/";

/// How the context is compacted after each pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// A fresh summary of the previous summary and the new turns.
    Regenerate,
    /// The previous summary kept, new lines merged after it.
    Anchored,
    /// Old results replaced by a placeholder.
    Masking,
}

impl Strategy {
    /// Every strategy, in table order.
    pub const ALL: [Strategy; 3] = [Strategy::Regenerate, Strategy::Anchored, Strategy::Masking];
}

/// The fact of pass `p` (1-based), as a result line.
pub fn fact(p: usize) -> String {
    format!("error: FACT-P{p:02} cache key is k{p:02}")
}

/// The messages of pass `p`: three calls, the first answered with the fact.
fn pass(p: usize) -> Vec<Message> {
    let mut out = Vec::new();
    for t in 0..TURNS_PER_PASS {
        let id = format!("p{p:02}t{t}");
        out.push(Message::assistant(vec![Block::ToolUse {
            id: id.clone(),
            name: "bash".into(),
            input: serde_json::json!({ "command": format!("step {p:02}.{t} run") }).into(),
        }]));
        let text = if t == 0 {
            format!("ok\n{}", fact(p))
        } else {
            "ok".to_string()
        };
        out.push(Message::tool_results(vec![(id, text)]));
    }
    out
}

/// The survival of each fact after each pass.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DriftCurve {
    /// The strategy.
    pub strategy: Strategy,
    /// Summariser capacity in chars.
    pub capacity: usize,
    /// `alive[k-1][f]`: after pass k, is fact f (0 = the constraint, p = pass p's fact) still in context.
    pub alive: Vec<Vec<bool>>,
    /// The first pass after which the constraint is no longer in context.
    pub constraint_lost_at: Option<usize>,
}

/// Keep the oldest lines that fit `capacity` chars (with a newline each).
fn keep_oldest(lines: Vec<String>, capacity: usize) -> String {
    let mut used = 0;
    let mut kept = Vec::new();
    for l in lines {
        let n = l.chars().count() + 1;
        if used + n > capacity {
            break;
        }
        used += n;
        kept.push(l);
    }
    kept.join("\n")
}

/// Run `passes` passes of `strategy`.
pub fn run(strategy: Strategy, passes: usize, capacity: usize) -> DriftCurve {
    let mut model = Extractive { capacity };
    let mut context = vec![Message::user_text(CONSTRAINT)];
    let mut summary: Option<String> = None;
    let mut alive = Vec::new();
    for p in 1..=passes {
        let new = pass(p);
        match strategy {
            Strategy::Masking => {
                context.extend(new);
                mask(&mut context);
            }
            Strategy::Regenerate | Strategy::Anchored => {
                let mut fresh = context.clone();
                fresh.extend(new);
                let text = if strategy == Strategy::Regenerate {
                    let req = SummaryRequest {
                        prompt: "",
                        messages: if summary.is_some() {
                            &fresh[1..]
                        } else {
                            &fresh
                        },
                        previous: summary.as_deref(),
                    };
                    model.summarise(&req).unwrap_or_default()
                } else {
                    let mut lines: Vec<String> = match &summary {
                        Some(s) => s.lines().map(String::from).collect(),
                        None => Vec::new(),
                    };
                    let skip = usize::from(summary.is_some());
                    lines.extend(salient_lines(&fresh[skip..]));
                    keep_oldest(lines, capacity)
                };
                context = vec![Message::user_text(text.clone())];
                summary = Some(text);
            }
        }
        let text = crate::retention::request_text(&context);
        let mut row = vec![text.contains(CONSTRAINT)];
        row.extend((1..=passes).map(|q| q <= p && text.contains(&fact(q)[7..])));
        alive.push(row);
    }
    let constraint_lost_at = alive.iter().position(|r| !r[0]).map(|k| k + 1);
    DriftCurve {
        strategy,
        capacity,
        alive,
        constraint_lost_at,
    }
}

/// Replace every result but the newest [`MASK_KEEP`] with a placeholder.
fn mask(context: &mut [Message]) {
    let total: usize = context.iter().map(|m| m.tool_result_ids().len()).sum();
    let mut seen = 0;
    for m in context.iter_mut() {
        for b in m.blocks_mut() {
            if let Block::ToolResult { content, .. } = b {
                seen += 1;
                if seen + MASK_KEEP <= total {
                    *content = "[masked]".into();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every salient line is 40 chars with its newline, so capacities read as lines.
    #[test]
    fn salient_lines_are_forty_chars_with_their_newline() {
        let mut msgs = vec![Message::user_text(CONSTRAINT)];
        msgs.extend(pass(1));
        let lines = salient_lines(&msgs);
        assert_eq!(lines.len(), 1 + TURNS_PER_PASS + 1);
        assert!(lines.iter().all(|l| l.chars().count() == 39), "{lines:?}");
    }

    /// By hand: each pass adds 4 lines (3 calls, 1 fact). With room for 9
    /// lines, regenerate holds the constraint + 8 lines after pass 2, then
    /// keeps the newest 9 of 13 after pass 3: the constraint is gone at k = 3.
    #[test]
    fn regenerate_loses_the_constraint_on_the_third_pass() {
        let c = run(Strategy::Regenerate, 5, 9 * 40);
        assert_eq!(c.constraint_lost_at, Some(3));
        assert!(c.alive[1][0] && !c.alive[2][0]);
        // Pass 1's fact (line 3 of the summary) goes at pass 3 too; pass 3's stays.
        assert!(!c.alive[2][1] && c.alive[2][3]);
    }

    /// Anchored keeps the constraint forever and drops what no longer fits:
    /// after pass 2 (9 lines) nothing new enters, so pass 3's fact never lands.
    #[test]
    fn anchored_keeps_the_constraint_and_drops_new_facts() {
        let c = run(Strategy::Anchored, 5, 9 * 40);
        assert_eq!(c.constraint_lost_at, None);
        assert!(c.alive[4][1] && c.alive[4][2]);
        assert!(!c.alive[2][3] && !c.alive[4][5]);
    }

    /// Masking never summarises: the constraint stays, each fact is masked
    /// once three newer results exist (one pass later).
    #[test]
    fn masking_keeps_user_turns_and_masks_old_facts() {
        let c = run(Strategy::Masking, 4, 9 * 40);
        assert_eq!(c.constraint_lost_at, None);
        assert!(c.alive[0][1] && !c.alive[1][1] && c.alive[1][2]);
    }
}
