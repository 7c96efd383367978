//! The Complexity Trap's `SummarizeEveryNTurns` history processor: when at
//! least `n + keep_last_m_turns` (action, observation) turns are unprocessed,
//! the oldest `n` of them become one assistant message
//! `Checkpoint for the last {n} turns:\n{summary}`.
//!
//! Read in `Recursive-Safeguarding/the-complexity-trap@1b07decf4ca4b5d722d25a57810fe18a2d8b60fb`
//! `sweagent/agent/history_processors.py` (`SummarizeEveryNTurns`),
//! `sweagent/agent/models.py` (`query_for_summary`) and the
//! `summary_system_template` of
//! `config/default_no_demo_checkpoint_same_model_openhands_N=21_M=10.yaml`
//! (identical in the `N=43_M=10_masking_M=10` hybrid config).
//!
//! Upstream's prefix is `history[:2]` (system prompt and instance template);
//! the lab does not model the system prompt, so its prefix is the first
//! message. Upstream behaviour kept on purpose, since it is what the study
//! measured: every request after the first summary is rebuilt from the prefix,
//! the summaries and the (action, observation) turns only, so any other
//! message (a user's interjection, a final answer) leaves the request; with
//! static checkpointing only the summarising call sends the newest checkpoint
//! alone, later calls send every checkpoint made so far.

use serde::{Deserialize, Serialize};

use crate::error::{LabError, LabResult};
use crate::message::{Content, Message, Role};
use crate::policy::{PolicyCtx, PolicyEvent, SummaryRequest};

/// The summariser's system prompt, byte for byte from the study's configs.
pub const SUMMARY_SYSTEM_TEMPLATE: &str = include_str!("summary_system_template.txt");

/// Faults from public bug reports, each off by default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SummaryFaults {
    /// The request keeps only the prefix and the summary: every kept turn is
    /// wiped instead of the summarised range alone
    /// (<https://github.com/letta-ai/letta/issues/2601>).
    pub wipe_all: bool,
    /// `keep_last_m_turns` is ignored: summarising starts at `n` turns and
    /// takes every unprocessed turn, the newest included
    /// (<https://github.com/letta-ai/letta/issues/2512>).
    pub ignore_keep_last: bool,
    /// A failed summary call still counts its turns as processed, so they
    /// leave the request with no summary
    /// (<https://github.com/SynapseKit/SynapseKit/issues/551>, fixed by PR 552).
    pub drop_on_error: bool,
    /// The cut lands one message late: the first kept turn's action is
    /// summarised and its tool result follows the summary without its call
    /// (<https://github.com/letta-ai/letta/pull/935>).
    pub tool_result_first: bool,
}

/// Switches of `summarize_every_n_turns`, under their upstream names.
///
/// `Default` is upstream's field defaults (`n = 2`, `keep_last_m_turns = 0`,
/// no static checkpointing); the study's configs are the named variants.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SummarizeEveryNTurns {
    /// Turns summarised at once (> 0).
    pub n: usize,
    /// Newest turns never summarised.
    pub keep_last_m_turns: usize,
    /// Send only the newest checkpoint on the summarising call.
    pub enable_static_checkpointing: bool,
    /// Replace turns by `Previous {n} turns omitted for brevity.` instead of a summary.
    pub omit_turns: bool,
    /// Bug-report faults (all off).
    pub faults: SummaryFaults,
}

impl Default for SummarizeEveryNTurns {
    fn default() -> Self {
        SummarizeEveryNTurns {
            n: 2,
            keep_last_m_turns: 0,
            enable_static_checkpointing: false,
            omit_turns: false,
            faults: SummaryFaults::default(),
        }
    }
}

/// What the processor remembers between calls (upstream's `_processed_history_cache`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SummaryState {
    /// The prefix followed by every summary made so far (empty before the first).
    pub cache: Vec<Message>,
    /// Turns already summarised (upstream derives it as `(len(cache) - 2) * n`;
    /// counting it lets the faults take other amounts).
    pub processed_turns: usize,
}

/// (action, observation) turns as index pairs: a tool-result message right
/// after an assistant message. The prefix (index 0) is never part of a turn.
pub fn turns(history: &[Message]) -> Vec<(usize, usize)> {
    (2..history.len())
        .filter(|&i| history[i].is_tool_result() && history[i - 1].role == Role::Assistant)
        .map(|i| (i - 1, i))
        .collect()
}

fn flatten(history: &[Message], turns: &[(usize, usize)]) -> Vec<Message> {
    turns
        .iter()
        .flat_map(|&(a, o)| [history[a].clone(), history[o].clone()])
        .collect()
}

fn assistant_text(text: String) -> Message {
    Message {
        role: Role::Assistant,
        content: Content::Text(text),
    }
}

impl SummarizeEveryNTurns {
    /// Turns that must be unprocessed before a summary is made.
    fn trigger(&self) -> usize {
        if self.faults.ignore_keep_last {
            self.n
        } else {
            self.n + self.keep_last_m_turns
        }
    }

    /// The request for `history`, summarising once if due.
    pub fn apply(
        &self,
        state: &mut SummaryState,
        history: &[Message],
        ctx: &mut PolicyCtx<'_>,
        events: &mut Vec<PolicyEvent>,
    ) -> LabResult<Vec<Message>> {
        if self.n == 0 {
            return Err(LabError::usage(
                "summarize_every_n_turns: n must be a positive integer",
                "set n to 1 or more",
            ));
        }
        let all = turns(history);
        let unprocessed = &all[state.processed_turns.min(all.len())..];
        if history.is_empty() || unprocessed.len() < self.trigger() {
            return Ok(self.unchanged(state, history, &all, unprocessed, events));
        }
        let take = if self.faults.ignore_keep_last {
            unprocessed.len()
        } else {
            self.n
        };
        let (summarised, kept) = unprocessed.split_at(take);
        let mut kept = flatten(history, kept);
        let mut replaced = flatten(history, summarised);
        if self.faults.tool_result_first && !kept.is_empty() {
            replaced.push(kept.remove(0));
        }
        let Some(summary) = self.summary(state, history, &replaced, take, ctx, events) else {
            return Ok(self.unchanged(state, history, &all, unprocessed, events));
        };
        if state.cache.is_empty() {
            state.cache.push(history[0].clone());
        }
        state.cache.extend(summary.clone());
        state.processed_turns += take;
        if self.faults.wipe_all {
            kept.clear();
        }
        events.push(PolicyEvent::Summarised {
            replaced: replaced.len(),
            kept: kept.len() + 1,
            archive: None,
        });
        let mut request = if self.enable_static_checkpointing {
            let mut r = vec![history[0].clone()];
            r.extend(summary);
            r
        } else {
            state.cache.clone()
        };
        note_dropped(history.len(), all.len(), events);
        request.extend(kept);
        Ok(request)
    }

    /// The request when no summary is made: the history itself before the
    /// first summary, then the cache followed by the unprocessed turns.
    fn unchanged(
        &self,
        state: &SummaryState,
        history: &[Message],
        all: &[(usize, usize)],
        unprocessed: &[(usize, usize)],
        events: &mut Vec<PolicyEvent>,
    ) -> Vec<Message> {
        if state.cache.is_empty() {
            return history.to_vec();
        }
        note_dropped(history.len(), all.len(), events);
        let mut r = state.cache.clone();
        r.extend(flatten(history, unprocessed));
        r
    }

    /// The summary message(s) for `replaced`, or `None` when the call failed
    /// and the turns stay for the next call. Under `drop_on_error` a failure
    /// gives an empty summary list, so the turns are lost.
    fn summary(
        &self,
        state: &SummaryState,
        history: &[Message],
        replaced: &[Message],
        take: usize,
        ctx: &mut PolicyCtx<'_>,
        events: &mut Vec<PolicyEvent>,
    ) -> Option<Vec<Message>> {
        if self.omit_turns {
            return Some(vec![assistant_text(format!(
                "Previous {take} turns omitted for brevity."
            ))]);
        }
        let context = match state.cache.last() {
            Some(last) => format!(
                "<PREVIOUS_CHECKPOINT>\n{}\n</PREVIOUS_CHECKPOINT>\n",
                last.text()
            ),
            None => format!(
                "<PROBLEM_STATEMENT>\n{}\n</PROBLEM_STATEMENT>\n",
                history[0].text()
            ),
        };
        let req = SummaryRequest {
            prompt: SUMMARY_SYSTEM_TEMPLATE,
            messages: replaced,
            previous: Some(&context),
        };
        match ctx.model.summarise(&req) {
            Ok(s) => Some(vec![assistant_text(format!(
                "Checkpoint for the last {take} turns:\n{s}"
            ))]),
            Err(e) if self.faults.drop_on_error => {
                events.push(PolicyEvent::ModelFailed {
                    role: "summary",
                    outcome: format!("{e}; {take} turns dropped without a summary (fault)"),
                });
                Some(Vec::new())
            }
            Err(e) => {
                events.push(PolicyEvent::ModelFailed {
                    role: "summary",
                    outcome: format!("{e}; turns left unsummarised until the next call"),
                });
                None
            }
        }
    }
}

/// Record the messages a turn-rebuilt request leaves out.
fn note_dropped(history_len: usize, turns: usize, events: &mut Vec<PolicyEvent>) {
    let other = history_len.saturating_sub(1 + 2 * turns);
    if other > 0 {
        events.push(PolicyEvent::Dropped {
            messages: other,
            why: "not part of an (action, observation) turn: the request is rebuilt from turns"
                .into(),
        });
    }
}
