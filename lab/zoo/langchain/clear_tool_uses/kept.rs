//! `ClearToolUsesEdit` kept between calls: the edited LangChain list grows
//! by the messages appended since the last call, and only the results that
//! became candidates since are cleared.
//!
//! Upstream edits a fresh copy of the whole state at every model call; done
//! that way here, a run cost the square of its history (every call converted,
//! counted and copied every message again). The edit is monotone while
//! `clear_at_least` is 0: the history only grows, so its token count only
//! grows and once past `trigger` it stays past; the candidates (every tool
//! message but the newest `keep`) only grow; and whether a candidate is
//! cleared (its call found in the nearest AI message before it, its tool not
//! excluded) depends on messages before it only. So the list kept here is
//! exactly what [`ClearToolUsesEdit::apply`] makes of the whole history, and
//! the events are the same, in the same order. Outside that case (a minimum
//! to clear, or a count that fell back under the trigger) the caller runs the
//! whole edit instead.

use super::super::{to_lc, Lc};
use super::{call_name, clear_input, ClearToolUsesEdit};
use crate::message::Message;
use crate::policy::PolicyEvent;
use crate::tokens::TokenCounter;

/// Tokens of [`super::from_lc`] of the unedited list, kept as the list
/// grows: messages closed so far are counted once; the open run of tool
/// messages (which the next message may still join) is counted when asked.
#[derive(Debug, Default, Clone)]
struct Tally {
    closed: usize,
    /// Unedited results of the open run: `from_lc` merges consecutive tool
    /// messages into one lab message.
    open: Vec<(String, String)>,
}

impl Tally {
    fn push(&mut self, m: &Lc, tokens: &dyn TokenCounter) {
        match m {
            Lc::Tool { id, content } => self.open.push((id.clone(), content.clone())),
            Lc::Beside(h) if !self.open.is_empty() => {
                let mut merged = Message::tool_results(std::mem::take(&mut self.open));
                if let crate::message::Content::Blocks(b) = &mut merged.content {
                    b.extend(h.blocks().iter().cloned());
                }
                self.closed += tokens.count_message(&merged);
            }
            Lc::Human(h) | Lc::Beside(h) | Lc::Ai(h) => {
                self.close(tokens);
                self.closed += tokens.count_message(h);
            }
        }
    }

    fn close(&mut self, tokens: &dyn TokenCounter) {
        if !self.open.is_empty() {
            let run = Message::tool_results(std::mem::take(&mut self.open));
            self.closed += tokens.count_message(&run);
        }
    }

    fn total(&self, tokens: &dyn TokenCounter) -> usize {
        if self.open.is_empty() {
            return self.closed;
        }
        self.closed + tokens.count_message(&Message::tool_results(self.open.clone()))
    }
}

/// The edit as of the last call.
#[derive(Debug, Clone)]
pub struct Kept {
    /// The switches it was made with (a change starts it again).
    config: ClearToolUsesEdit,
    /// The counter it was counted with.
    counter: &'static str,
    /// History messages converted so far.
    seen: usize,
    /// Their LangChain list, cleared results (and inputs) edited.
    lc: Vec<Lc>,
    /// Tokens of the unedited list.
    tally: Tally,
    /// Indices of the tool messages in `lc`.
    tools: Vec<usize>,
    /// `tools[..decided]` were candidates already, each cleared or skipped.
    decided: usize,
    /// Ids of the cleared results, in order.
    cleared: Vec<String>,
}

impl Kept {
    /// Nothing converted yet.
    pub fn new(config: &ClearToolUsesEdit, tokens: &dyn TokenCounter) -> Kept {
        Kept {
            config: config.clone(),
            counter: tokens.name(),
            seen: 0,
            lc: Vec::new(),
            tally: Tally::default(),
            tools: Vec::new(),
            decided: 0,
            cleared: Vec::new(),
        }
    }

    /// Whether this state can go on for `history` under `config`: made with
    /// the same switches and counter, from a history that only grew since.
    pub fn fits(&self, config: &ClearToolUsesEdit, tokens: &dyn TokenCounter, len: usize) -> bool {
        self.config == *config && self.counter == tokens.name() && self.seen <= len
    }

    /// The edited list of `history`, with the events of this call; `None`
    /// when the edit is not monotone here (the caller runs it whole).
    pub fn advance(
        &mut self,
        history: &[Message],
        tokens: &dyn TokenCounter,
        events: &mut Vec<PolicyEvent>,
    ) -> Option<&[Lc]> {
        if self.config.clear_at_least > 0 {
            return None;
        }
        for m in to_lc(&history[self.seen..]) {
            self.tally.push(&m, tokens);
            if matches!(m, Lc::Tool { .. }) {
                self.tools.push(self.lc.len());
            }
            self.lc.push(m);
        }
        self.seen = history.len();
        if self.tally.total(tokens) <= self.config.trigger {
            // Under the trigger nothing is cleared; once something was, the
            // count fell back (a counter that is not monotone): start over.
            return (self.decided == 0).then_some(&self.lc[..]);
        }
        let candidates = self.tools.len().saturating_sub(self.config.keep);
        for k in self.decided..candidates.max(self.decided) {
            self.decide(self.tools[k]);
        }
        self.decided = self.decided.max(candidates);
        self.events(events);
        Some(&self.lc)
    }

    /// Clear the tool message at `idx` if upstream would: its call is in the
    /// nearest AI message before it and its tool is not excluded.
    fn decide(&mut self, idx: usize) {
        let Lc::Tool { id, .. } = &self.lc[idx] else {
            return;
        };
        let id = id.clone();
        let Some(ai) = (0..idx).rev().find(|&j| matches!(self.lc[j], Lc::Ai(_))) else {
            return;
        };
        let Lc::Ai(ai_msg) = &self.lc[ai] else { return };
        let Some(name) = call_name(ai_msg, &id) else {
            return;
        };
        if self.config.exclude_tools.iter().any(|t| t == name) {
            return;
        }
        self.lc[idx] = Lc::Tool {
            id: id.clone(),
            content: self.config.placeholder.clone(),
        };
        if self.config.clear_tool_inputs {
            if let Lc::Ai(m) = &mut self.lc[ai] {
                clear_input(m, &id);
            }
        }
        self.cleared.push(id);
    }

    /// What the whole edit records at every call: every cleared result
    /// (and input), oldest first.
    fn events(&self, events: &mut Vec<PolicyEvent>) {
        for id in &self.cleared {
            events.push(PolicyEvent::Cleared {
                id: id.clone(),
                part: "result",
                placeholder: self.config.placeholder.clone(),
            });
            if self.config.clear_tool_inputs {
                events.push(PolicyEvent::Cleared {
                    id: id.clone(),
                    part: "input",
                    placeholder: "{}".into(),
                });
            }
        }
    }
}
