//! What retention reads of each message of a request, read once per
//! message a run sends instead of once per request.
//!
//! Matching the session's artifacts, finding the policy's pointers,
//! fingerprinting the tool results and reading the keyed facts of a whole
//! request at every call made a retention replay quadratic in its session:
//! a request is mostly the previous one. Each of these is a pure function
//! of one message (a pattern without a newline cannot span two messages'
//! pieces; pointers are found block by block), so a [`MessageScan`] holds
//! them for one message and [`Scans`] keeps the last request's, in order.
//! The engine's sizes memo already compared every message of a request
//! with the previous request's ([`View::same`]); a message it found equal
//! takes the scan of the message it equals, and only the others are read.
//! What depends on more than one message (which of the matched patterns
//! are registered artifacts by now, patterns with a newline, the files the
//! pointers reach) is resolved per request by the caller.

use std::sync::Arc;

use super::finder::Finder;
use crate::fingerprint::fingerprint;
use crate::message::{Block, Message};
use crate::policy::engine::View;
use crate::policy::findings::pointers_in_messages;

/// What one message holds, as retention reads it.
#[derive(Debug)]
pub struct MessageScan {
    /// The memo's key of the message when the request was measured: a scan
    /// is reused only for a message with the same key, so a map that does
    /// not describe this observer's last request cannot mislead it.
    key: Option<u64>,
    /// The finder's foreseen patterns without a newline that its pieces
    /// hold (registered or not), sorted, each once.
    pub lines: Vec<usize>,
    /// The pointers the policy's rules find in it.
    pub pointers: Vec<String>,
    /// Its tool results: call id and the content's fingerprint.
    pub results: Arc<Vec<(String, (u64, usize))>>,
    /// The keyed facts its prose states, in order.
    pub facts: Vec<(String, String)>,
}

impl MessageScan {
    fn of(m: &Message, key: Option<u64>, view: &View<'_>, finder: &mut Finder) -> MessageScan {
        let one = std::slice::from_ref(m);
        let (text, ends) = super::request_pieces(one);
        let pointers = if view.rules.is_empty() {
            Vec::new()
        } else {
            pointers_in_messages(view.rules, one).into_iter().collect()
        };
        let results = Arc::new(result_fingerprints(std::slice::from_ref(m)));
        MessageScan {
            key,
            lines: finder.lines_in(&text, &ends),
            pointers,
            results,
            facts: super::facts::facts_in(one),
        }
    }
}

/// The scans of the last request's messages, in order.
#[derive(Debug, Default)]
pub struct Scans {
    last: Vec<Arc<MessageScan>>,
    /// How many leading messages of the last request equal those of the
    /// request before it, in place.
    kept: usize,
}

impl Scans {
    /// Scan `request`: a message that [`View::same`] maps to an equal
    /// message of the previous request (with the same key) takes that
    /// message's scan; every other message is read. Without a map (a
    /// caller that did not measure the request) every message is read.
    pub fn update(&mut self, request: &[Message], view: &View<'_>, finder: &mut Finder) {
        let mapped = view.same.len() == request.len() && view.sizes.len() == request.len();
        let mut kept = 0;
        let next = (0..request.len())
            .map(|i| {
                let key = mapped.then(|| view.sizes[i].key);
                let same = mapped.then(|| view.same[i]).flatten();
                let old = same
                    .and_then(|j| self.last.get(j))
                    .filter(|s| s.key.is_some() && s.key == key);
                if kept == i && same == Some(i) && old.is_some() {
                    kept += 1;
                }
                match old {
                    Some(s) => Arc::clone(s),
                    None => Arc::new(MessageScan::of(&request[i], key, view, finder)),
                }
            })
            .collect();
        self.last = next;
        self.kept = kept;
    }

    /// How many leading messages of the request last given to
    /// [`Scans::update`] are, unchanged and in place, those of the request
    /// given before it.
    pub fn kept(&self) -> usize {
        self.kept
    }

    /// The scans of the request last given to [`Scans::update`].
    pub fn current(&self) -> &[Arc<MessageScan>] {
        &self.last
    }
}

/// The tool results of `messages`: call id and the content's fingerprint,
/// in order (what re-fetch demand compares between requests).
pub(super) fn result_fingerprints(messages: &[Message]) -> Vec<(String, (u64, usize))> {
    messages
        .iter()
        .flat_map(|m| m.blocks())
        .filter_map(|b| match b {
            Block::ToolResult {
                tool_use_id,
                content,
            } => Some((tool_use_id.clone(), fingerprint(content))),
            _ => None,
        })
        .collect()
}
