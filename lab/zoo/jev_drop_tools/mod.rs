//! Jev-style drop-tools compaction: no summary; every tool call outside a
//! pinned head and tail is scored, and stale calls are dropped with their
//! results (or their results cut to a head and a note); user and assistant
//! text stays verbatim.
//!
//! Read at `NousResearch/hermes-agent@2416cfceb0db4a7590776c93f8546906388a3744`
//! (MIT): `evals/compaction/jev_arm.py`, Hermes' Python port of
//! tamaratran/fast-jev-compaction (`JevOptions`, `is_pinned`,
//! `collect_tool_calls`, `decide_call`, `_truncated_result`,
//! `apply_decisions`, `JevCompactor.compress`, `fake_asker`) and
//! `evals/compaction/policies.py` (the `jev` arm: plugin defaults, run where
//! Hermes' `ContextCompressor` compresses).
//!
//! The scores come from TypeSafe's Jev model over OpenRouter, which the lab
//! cannot call: upstream's own offline stand-in, `fake_asker`, gives every
//! candidate `keep_call` 0.2 and `keep_result` 0.1, so at the 0.5 threshold
//! every unpinned call is dropped (the eval notes Jev's own scores sit near
//! 0.15 on Hermes transcripts, below the plugin's calibration point).

#[cfg(test)]
mod tests;

use std::sync::OnceLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::error::LabResult;
use crate::hermes_lean::threshold_tokens;
use crate::message::{Block, Message};
use crate::policy::{
    PointerRule, Policy, PolicyCtx, PolicyEvent, PolicyInfo, Prepared, Source, Unit,
};

/// The policy name in `lab policies`.
pub const NAME: &str = "jev-drop-tools";

/// `JevOptions` (the plugin defaults; `goal`, `max_state_tokens` and
/// `max_request_tokens` only shape the request to Jev), `fake_asker`'s
/// answers, and where Hermes compresses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Switches {
    /// A call is kept when its score reaches this (0.5).
    pub keep_threshold: f64,
    /// Rows at the end never touched (6), besides the first row.
    pub preserve_recent_messages: usize,
    /// Characters a dropped result keeps before its note (300).
    pub truncate_head_chars: usize,
    /// `fake_asker`'s `keep_call` for every candidate (0.2).
    pub keep_call: f64,
    /// `fake_asker`'s `keep_result` for every candidate (0.1).
    pub keep_result: f64,
    /// Hermes' window (`EVAL_WINDOW`, 1,000,000).
    pub context_length: usize,
    /// Hermes compresses at this share of it (0.50; 0.75 below 512k).
    pub threshold_percent: f64,
}

impl Default for Switches {
    fn default() -> Self {
        Switches {
            keep_threshold: 0.5,
            preserve_recent_messages: 6,
            truncate_head_chars: 300,
            keep_call: 0.2,
            keep_result: 0.1,
            context_length: 1_000_000,
            threshold_percent: 0.50,
        }
    }
}

/// `Decision.action`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Pinned, or the result is worth keeping.
    Keep,
    /// The call stays; its result is cut to a head and a note.
    DropResult,
    /// The call and its result leave the history.
    DropCall,
}

/// One tool call as `collect_tool_calls` sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    /// The call's id in the history.
    pub tool_call_id: String,
    /// Row of the call and row of its result (Hermes rows: one per result).
    pub rows: (usize, usize),
    /// `len(result text)` in characters.
    pub result_chars: usize,
    /// The result opens like an error.
    pub is_error: bool,
    /// Inside the pinned head or tail.
    pub pinned: bool,
}

/// `is_pinned`: the first row and the last `preserve` rows.
pub fn is_pinned(index: usize, total: usize, preserve: usize) -> bool {
    index == 0 || index + preserve >= total
}

/// The `is_error` test: the first 40 characters open with `{"error"`,
/// `error` as a word or `error:`, case-insensitive, after spaces.
pub fn is_error(text: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r#"(?i)^\s*(\{"error"|Error\b|error:)"#).expect("the upstream pattern compiles")
    });
    let head: String = text.chars().take(40).collect();
    re.is_match(&head)
}

/// The rows a message takes in Hermes' transcript: a user message carrying
/// results is one `tool` row per result plus a user row for any text.
fn row_count(m: &Message) -> usize {
    let results = m.tool_result_ids().len();
    if results == 0 {
        1
    } else {
        results + usize::from(!m.text().is_empty())
    }
}

/// `collect_tool_calls` over the lab's messages.
pub fn collect_tool_calls(history: &[Message], preserve: usize) -> Vec<ToolCall> {
    let mut first_row = Vec::with_capacity(history.len());
    let mut total = 0;
    for m in history {
        first_row.push(total);
        total += row_count(m);
    }
    // tool_call_id -> (row, text): the last result for an id wins, as
    // upstream's dict does.
    let mut results = std::collections::HashMap::new();
    for (i, m) in history.iter().enumerate() {
        let blocks = m.blocks().iter().filter_map(|b| match b {
            Block::ToolResult {
                tool_use_id,
                content,
            } => Some((tool_use_id, content)),
            _ => None,
        });
        for (k, (id, content)) in blocks.enumerate() {
            results.insert(id.as_str(), (first_row[i] + k, content.as_str()));
        }
    }
    let mut calls = Vec::new();
    for (i, m) in history.iter().enumerate() {
        for id in m.tool_use_ids() {
            let Some(&(result_row, text)) = results.get(id) else {
                continue;
            };
            let row = first_row[i];
            calls.push(ToolCall {
                tool_call_id: id.to_string(),
                rows: (row, result_row),
                result_chars: text.chars().count(),
                is_error: is_error(text),
                pinned: is_pinned(row, total, preserve) || is_pinned(result_row, total, preserve),
            });
        }
    }
    calls
}

/// `decide_call`.
pub fn decide(call: &ToolCall, keep_call: f64, keep_result: f64, threshold: f64) -> Action {
    if call.pinned || keep_result >= threshold {
        Action::Keep
    } else if keep_call >= threshold {
        Action::DropResult
    } else {
        Action::DropCall
    }
}

/// `_truncated_result`: a head of `head` characters and a note.
pub fn truncated_result(text: &str, is_error: bool, head: usize) -> String {
    let len = text.chars().count();
    if len <= head + 120 {
        return text.to_string();
    }
    let lead = if head > 0 {
        format!("{}\n", text.chars().take(head).collect::<String>())
    } else {
        String::new()
    };
    let error = if is_error { " (error)" } else { "" };
    format!(
        "{lead}[fast-jev-compaction truncated {} chars of this tool result{error}; re-run the tool if needed]",
        len - head
    )
}

/// A call or a result (what upstream's rows carry besides text).
fn is_call(b: &Block) -> bool {
    matches!(b, Block::ToolUse { .. } | Block::ToolResult { .. })
}

/// `apply_decisions` on the lab's messages: dropped calls vanish with their
/// results (and a message left with nothing goes), dropped results keep a
/// head and a note; the events.
pub fn apply(
    history: &[Message],
    actions: &std::collections::HashMap<String, (Action, bool)>,
    head: usize,
) -> (Vec<Message>, Vec<PolicyEvent>) {
    let mut events = Vec::new();
    let mut out = Vec::with_capacity(history.len());
    for m in history {
        let mut m = m.clone();
        if let crate::message::Content::Blocks(blocks) = &mut m.content {
            let had_calls = blocks.iter().any(is_call);
            blocks.retain(|b| match b {
                Block::ToolUse { id, .. }
                | Block::ToolResult {
                    tool_use_id: id, ..
                } => !matches!(actions.get(id), Some((Action::DropCall, _))),
                _ => true,
            });
            for b in blocks.iter_mut() {
                let Block::ToolResult {
                    tool_use_id,
                    content,
                } = b
                else {
                    continue;
                };
                if let Some((Action::DropResult, error)) = actions.get(tool_use_id) {
                    let cut = truncated_result(content, *error, head);
                    if cut != *content {
                        events.push(PolicyEvent::Truncated {
                            id: tool_use_id.clone(),
                            from_chars: content.chars().count(),
                            to_chars: cut.chars().count(),
                            saved_to: None,
                        });
                        *content = cut;
                    }
                }
            }
            let has_calls = blocks.iter().any(is_call);
            if had_calls && !has_calls && m.text().trim().is_empty() {
                continue;
            }
        }
        out.push(m);
    }
    (out, events)
}

/// The policy: its switches.
#[derive(Debug, Clone, Default)]
pub struct JevDropTools {
    /// Constants.
    pub switches: Switches,
}

/// A boxed policy with the plugin defaults and upstream's offline scores.
pub fn make() -> Box<dyn Policy> {
    Box::new(JevDropTools::default())
}

impl JevDropTools {
    /// `JevCompactor.compress` with `fake_asker`: the new history, how many
    /// calls it dropped, and the events.
    pub fn compress(&self, history: &[Message]) -> (Vec<Message>, usize, Vec<PolicyEvent>) {
        let s = &self.switches;
        let calls = collect_tool_calls(history, s.preserve_recent_messages);
        let actions: std::collections::HashMap<String, (Action, bool)> = calls
            .iter()
            .map(|c| {
                let action = decide(c, s.keep_call, s.keep_result, s.keep_threshold);
                (c.tool_call_id.clone(), (action, c.is_error))
            })
            .filter(|(_, (a, _))| *a != Action::Keep)
            .collect();
        let dropped = actions
            .values()
            .filter(|(a, _)| *a == Action::DropCall)
            .count();
        let (out, events) = apply(history, &actions, s.truncate_head_chars);
        (out, dropped, events)
    }
}

impl Policy for JevDropTools {
    fn configure(&mut self, overrides: &crate::policy::variant::Overrides) -> Result<(), String> {
        crate::policy::variant::set_fields(&mut self.switches, overrides)
    }

    fn variant_keys(&self) -> crate::policy::variant::Overrides {
        crate::policy::variant::fields(&self.switches)
    }

    fn info(&self) -> PolicyInfo {
        PolicyInfo {
            name: NAME.into(),
            family: "Jev",
            summary: "no summary: where Hermes compresses, tool calls outside the first row and the last 6 score below 0.5 and go with their results; text stays verbatim".into(),
            source: Source {
                upstream: "NousResearch/hermes-agent@2416cfceb0db4a7590776c93f8546906388a3744 (port of tamaratran/fast-jev-compaction)".into(),
                files: &[
                    "evals/compaction/jev_arm.py",
                    "evals/compaction/policies.py",
                ],
                license: "MIT (constants and strings only)",
                approximate: false,
            },
            constants: serde_json::json!({
                "switches": self.switches,
                "threshold_tokens": threshold_tokens(self.switches.context_length, self.switches.threshold_percent),
            }),
            unit: Unit::Tokens,
            differences: vec![
                "the scores are upstream's offline `fake_asker` (keep_call 0.2, keep_result 0.1 for every candidate), not TypeSafe's Jev model over OpenRouter: at the default threshold every unpinned call is dropped",
                "the request to Jev is not built: `fit_state`'s shrinking stages, the question batches and the error they raise past 25,000 state tokens (upon which the host falls back to its own summary) are not modelled, nor Jev's usage and cost",
                "a lab user message carrying results counts one Hermes row per result (plus one for its text), so `preserve_recent_messages` counts rows as upstream's port does",
                "runs where Hermes' ContextCompressor would compress (threshold_percent of the window, raised below 512k), the request counted by the run's counter",
            ],
        }
    }

    fn acts_on(&self) -> crate::policy::shape::ActsOn {
        crate::policy::shape::ActsOn::ToolResults
    }

    fn pointer_rules(&self) -> Vec<PointerRule> {
        // The note tells the model to re-run the tool; it names no place.
        Vec::new()
    }

    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        let s = &self.switches;
        let tokens = ctx.tokens.count_messages(history) + ctx.envelope;
        let mut events = Vec::new();
        if tokens >= threshold_tokens(s.context_length, s.threshold_percent) {
            let before = history.len();
            let (out, dropped, mut ev) = self.compress(history);
            if dropped > 0 {
                ev.push(PolicyEvent::Dropped {
                    messages: before - out.len(),
                    why: format!("{dropped} tool call(s) and their results dropped by score"),
                });
            }
            *history = out;
            events = ev;
        }
        Ok(Prepared {
            request: history.clone(),
            events,
        })
    }
}
