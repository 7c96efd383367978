//! Frozen variants: `frozen:P` records each decision of a policy `P` once
//! and re-sends it byte-identically afterwards, so a cached prefix is
//! rewritten only when `P` decides again, never because `P` re-derived the
//! same kind of edit from the untouched history.
//!
//! A *decision* is the edit one call of `P` makes: the difference between
//! the history `P` was given and the request it returned. The two shapes of
//! design (see [`super`]) differ in where that edit lives afterwards:
//!
//! - a *rewriting* design (Claude Code's compaction, Codex, Aider, the
//!   course, a condenser that keeps its own view) already keeps its edit:
//!   the summary it wrote is in the history (or in its own state) and is
//!   sent again as it was. `frozen:P` changes nothing for it: such a design
//!   is frozen by nature, and a design whose summary is regenerated is
//!   frozen up to the regeneration, which is a new decision;
//! - a *projecting* design (Anthropic context editing, observation
//!   masking) returns an edited copy and keeps the history whole, so the
//!   next call re-derives its edits from the originals: when the cleared
//!   set moves (one more result falls out of "keep the last k"), the
//!   request changes inside the cached prefix on every call over the
//!   trigger. `frozen:P` writes the request back as the history, so `P`
//!   next sees what it sent plus what arrived since: earlier messages stay
//!   verbatim, and `P` edits them again only when its own rule, applied to
//!   what it sent, fires (a trigger crossed again).
//!
//! Each message's fate is decided once, as Claude Code's replacement state
//! keeps it ("once seen, the result's fate is frozen"): a message sent
//! edited is sent as it was ever after, even when the design would edit it
//! again (a placeholder that counts the lines it replaced, re-applied to
//! itself); a message sent whole can still be edited by a later decision.
//! A call without events made no decision: a change it makes to messages
//! already sent is a re-rendering (a design that formats what it is given
//! again), so they are sent as they were; new messages are taken as the
//! design rendered them.
//!
//! The write-back happens only for a call whose request is a one-to-one
//! edit of the history ([`one_to_one`]: same messages in the same order,
//! same roles and tool ids, contents edited); a request that replaced
//! messages (a summary, a window) is a rewriting decision, already kept by
//! `P`, and `P`'s own bookkeeping of its history (designs that track how
//! many messages they have seen) stays intact.
//!
//! The wrapped policy's pointer rules, storage and shape are `P`'s, so the
//! checker and validity oracle judge `frozen:P` as they judge `P`.

use super::{PointerRule, Policy, PolicyCtx, PolicyInfo, Prepared};
use crate::error::LabResult;
use crate::message::Message;

/// The spec prefix: `frozen:P` for any policy spec `P`.
pub const PREFIX: &str = "frozen:";

/// A policy whose projected edits are written back into its history.
pub struct Frozen {
    inner: Box<dyn Policy>,
    name: String,
    /// Messages of the history at the end of the last call (what arrived
    /// since is new).
    sent: usize,
    /// Per message of the history: was it sent edited (its fate decided)?
    edited: Vec<bool>,
}

impl Frozen {
    /// `inner` frozen, named `spec` (`frozen:P`).
    pub fn new(inner: Box<dyn Policy>, spec: &str) -> Frozen {
        Frozen {
            inner,
            name: spec.to_string(),
            sent: 0,
            edited: Vec::new(),
        }
    }
}

/// Is `request` the same messages as `history`, only with contents edited:
/// equal length, and per message the same role, tool-call ids and
/// tool-result ids? (A projecting design's clearing or masking is; a
/// summary or a dropped message is not.)
pub fn one_to_one(history: &[Message], request: &[Message]) -> bool {
    history.len() == request.len()
        && history.iter().zip(request).all(|(h, r)| {
            h.role == r.role
                && h.tool_use_ids() == r.tool_use_ids()
                && h.tool_result_ids() == r.tool_result_ids()
        })
}

impl Policy for Frozen {
    fn info(&self) -> PolicyInfo {
        let mut info = self.inner.info();
        info.name = self.name.clone();
        info.differences.push(
            "frozen: a request that edits the history one-to-one is written back as the history, so the policy's next call starts from what it sent",
        );
        info
    }

    fn pointer_rules(&self) -> Vec<PointerRule> {
        self.inner.pointer_rules()
    }

    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        let mut prepared = self.inner.prepare(history, ctx)?;
        if !one_to_one(history, &prepared.request) {
            // A rewriting decision: the design keeps it itself.
            self.edited = vec![false; history.len()];
            return Ok(prepared);
        }
        let sent = self.sent.min(history.len());
        self.edited.resize(history.len(), false);
        let no_decision = prepared.events.is_empty();
        let kept = history[..sent].iter().zip(&self.edited);
        for (r, (h, &edited)) in prepared.request.iter_mut().zip(kept) {
            // No decision this call: a change to what was sent is a
            // re-rendering (a design that formats what it is given again);
            // an edited message's fate was decided when it was first sent.
            if no_decision || edited {
                r.clone_from(h);
            }
        }
        for (i, (h, r)) in history.iter().zip(&prepared.request).enumerate() {
            self.edited[i] |= h != r;
        }
        history.clone_from(&prepared.request);
        self.inner.history_replaced();
        self.sent = history.len();
        Ok(prepared)
    }

    fn resumed(&mut self, history: &[Message], dropped: bool) {
        self.inner.resumed(history, dropped);
    }

    forward_to_inner!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_to_one_accepts_edited_contents_and_refuses_replaced_messages() {
        let h = vec![
            Message::user_text("task"),
            Message::tool_results(vec![("t1".into(), "long output".into())]),
        ];
        let mut cleared = h.clone();
        cleared[1] = Message::tool_results(vec![("t1".into(), "[cleared]".into())]);
        assert!(one_to_one(&h, &cleared));
        let summary = vec![Message::user_text("summary"), Message::user_text("task")];
        assert!(!one_to_one(&h, &summary));
        assert!(!one_to_one(&h, &h[..1]));
    }
}
