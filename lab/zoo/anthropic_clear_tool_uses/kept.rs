//! The clearing kept between calls: the request grows by the messages
//! appended since the last call, and only what became a candidate since (or
//! whose result arrived since) is measured and cleared.
//!
//! Each call of the whole edit clears a fresh copy of the whole history; a
//! long run then copied and counted the whole history at every call. The
//! edit is monotone on a history that only grows: its token count and its
//! tool uses only grow, so once past the trigger it stays past; the
//! candidates (every pair but the newest `keep`, excluded tools left out)
//! only grow; what clearing a candidate frees is fixed once its result has
//! arrived, so the freed sum only grows and once `clear_at_least` is met it
//! stays met. So the request kept here is exactly what the whole edit makes
//! of each call's history, with the same events in the same order. A count
//! that fell back under the trigger after clearing began (a counter that is
//! not monotone) is left to the whole edit.

use super::{ClearAtLeast, Keep, Pair, Switches, Trigger};
use crate::message::{Block, Message};
use crate::policy::PolicyEvent;
use crate::tokens::TokenCounter;

/// A pair older than the newest `keep`, of a tool not excluded.
#[derive(Debug, Clone)]
struct Candidate {
    /// Index into the pairs.
    pair: usize,
    /// Whether its call's input is cleared too.
    input: bool,
    /// Whether its result was measured (it had arrived).
    measured: bool,
}

/// The clearing as of the last call.
#[derive(Debug, Clone)]
pub struct Kept {
    /// The switches it was made with (a change starts it again).
    switches: Switches,
    /// The counter it was counted with.
    counter: &'static str,
    /// The history so far, cleared parts edited once the edit applies.
    request: Vec<Message>,
    /// Tokens of the unedited history.
    tokens: usize,
    pairs: Vec<Pair>,
    /// `pairs[..decided]` were considered as candidates.
    decided: usize,
    candidates: Vec<Candidate>,
    /// Candidates whose result has not arrived yet.
    unmeasured: Vec<usize>,
    /// What clearing every candidate frees, in tokens.
    freed: usize,
    /// Edits measured but not yet made: (message, block) of a result or a call.
    due: Vec<(usize, usize)>,
    /// Whether the request holds edits.
    applied: bool,
}

impl Kept {
    /// Nothing seen yet.
    pub fn new(switches: &Switches, tokens: &dyn TokenCounter) -> Kept {
        Kept {
            switches: switches.clone(),
            counter: tokens.name(),
            request: Vec::new(),
            tokens: 0,
            pairs: Vec::new(),
            decided: 0,
            candidates: Vec::new(),
            unmeasured: Vec::new(),
            freed: 0,
            due: Vec::new(),
            applied: false,
        }
    }

    /// Whether this state can go on for a history of `len` messages: made
    /// with the same switches and counter, from a history that only grew.
    pub fn fits(&self, switches: &Switches, tokens: &dyn TokenCounter, len: usize) -> bool {
        self.switches == *switches && self.counter == tokens.name() && self.request.len() <= len
    }

    /// The request for `history`, with this call's events; `None` when the
    /// caller must run the whole edit.
    pub fn advance(
        &mut self,
        history: &[Message],
        tokens: &dyn TokenCounter,
        events: &mut Vec<PolicyEvent>,
    ) -> Option<&[Message]> {
        for m in &history[self.request.len()..] {
            self.tokens += tokens.count_message(m);
            super::fold_pairs(&mut self.pairs, self.request.len(), m);
            self.request.push(m.clone());
        }
        let triggered = match self.switches.trigger {
            Trigger::InputTokens(n) => self.tokens > n,
            Trigger::ToolUses(n) => self.pairs.len() > n,
        };
        if !triggered {
            return (!self.applied).then_some(&self.request[..]);
        }
        self.take_candidates();
        self.measure(tokens);
        if let Some(ClearAtLeast::InputTokens(min)) = self.switches.clear_at_least {
            if self.freed < min {
                return (!self.applied).then_some(&self.request[..]);
            }
        }
        self.apply();
        self.events(events);
        Some(&self.request)
    }

    /// Pairs that fell out of the newest `keep` since the last call.
    fn take_candidates(&mut self) {
        let Keep::ToolUses(keep) = self.switches.keep;
        let end = self.pairs.len().saturating_sub(keep).max(self.decided);
        for k in self.decided..end {
            let name = &self.pairs[k].name;
            if self.switches.exclude_tools.contains(name) {
                continue;
            }
            let input = self.switches.clear_tool_inputs.applies_to(name);
            if input {
                let (mi, bi) = self.pairs[k].call;
                self.due.push((mi, bi));
            }
            self.unmeasured.push(self.candidates.len());
            self.candidates.push(Candidate {
                pair: k,
                input,
                measured: false,
            });
        }
        self.decided = end;
    }

    /// Add what clearing newly measurable parts frees: inputs when they
    /// become candidates, results once arrived.
    fn measure(&mut self, tokens: &dyn TokenCounter) {
        let placeholder = tokens.count(&self.switches.placeholder);
        let empty = tokens.count(&serde_json::json!({}).to_string());
        let mut waiting = Vec::new();
        for c in std::mem::take(&mut self.unmeasured) {
            let cand = &mut self.candidates[c];
            let pair = &self.pairs[cand.pair];
            if cand.input && !cand.measured {
                let (mi, bi) = pair.call;
                if let Block::ToolUse { input, .. } = &self.request[mi].blocks()[bi] {
                    self.freed += tokens.count_input(input).saturating_sub(empty);
                }
            }
            cand.measured = true;
            match pair.result {
                Some((mi, bi)) => {
                    if let Block::ToolResult { content, .. } = &self.request[mi].blocks()[bi] {
                        self.freed += tokens.count(content).saturating_sub(placeholder);
                    }
                    self.due.push((mi, bi));
                }
                None => waiting.push(c),
            }
        }
        self.unmeasured = waiting;
    }

    /// Make the measured edits in the request.
    fn apply(&mut self) {
        for (mi, bi) in self.due.drain(..) {
            match &mut self.request[mi].blocks_mut()[bi] {
                Block::ToolResult { content, .. } => content.clone_from(&self.switches.placeholder),
                Block::ToolUse { input, .. } => *input = serde_json::json!({}).into(),
                _ => {}
            }
            self.applied = true;
        }
    }

    /// What the whole edit records at every call: per candidate, its result
    /// (once arrived) and its input.
    fn events(&self, events: &mut Vec<PolicyEvent>) {
        for c in &self.candidates {
            let p = &self.pairs[c.pair];
            if p.result.is_some() {
                events.push(PolicyEvent::Cleared {
                    id: p.id.clone(),
                    part: "result",
                    placeholder: self.switches.placeholder.clone(),
                });
            }
            if c.input {
                events.push(PolicyEvent::Cleared {
                    id: p.id.clone(),
                    part: "input",
                    placeholder: "{}".into(),
                });
            }
        }
    }
}
