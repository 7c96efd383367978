//! The cheapest schedule: a lower bound on what a session's context could
//! cost under a compaction mechanism, a cache model and a price sheet.
//!
//! The mechanism is *clear the oldest tool results*: at a compaction point
//! (any model call), every tool result older than the last `k` becomes the
//! placeholder a real design writes (`[cleared]`, Anthropic context
//! editing's). The mechanism is monotone: a later compaction clears a
//! superset of what an earlier one cleared, so the request at call `i`
//! depends only on the last compaction point `j <= i`. [`dp::cheapest`]
//! is an exact dynamic program over the states `(i, j)`, O(n²) of them,
//! whose step prices each request as [`crate::cache::cost`] prices it
//! ([`price`]); [`brute::cheapest`] enumerates every schedule to check it.
//!
//! Constraints: every request (the envelope included) at most `limit`
//! tokens, and artifact recall at the last request at least a floor `r`
//! (percent)
//! (recall as the retention frontier measures it, [`recall_at_end`]:
//! verbatim search, exact; the only estimate is the token counter sizing
//! the requests).

pub mod archive;
pub mod brute;
pub mod dp;
pub mod price;
pub mod render;

use std::collections::HashMap;

use serde::Serialize;

use crate::cache::session::{starts_turn, RequestBuilder};
use crate::cache::{CacheRequest, PriceSheet, Provider};
use crate::message::{Block, Message, Role};
use crate::tokens::{TokenCounter, Tokens};

/// What a cleared result becomes: the placeholder of Anthropic's context
/// editing as the lab writes it.
pub const PLACEHOLDER: &str = "[cleared]";

/// The mechanism names of [`Schedule::mechanism`].
pub const CLEAR: &str = "clear-results";
/// See [`CLEAR`].
pub const ARCHIVE: &str = "archive-messages";

/// The keep-last grid the optimum ranges over: one dynamic program per `k`.
pub const KEEP_GRID: &[usize] = &[0, 1, 2, 4, 8, 16, 32];

/// One session to schedule, with the prices and the constraints.
#[derive(Debug, Clone)]
pub struct Problem<'a> {
    /// The recorded messages (as replayed: without the product's artefacts).
    pub messages: &'a [Message],
    /// Milliseconds since the start, per message, when recorded.
    pub times_ms: Option<&'a [Option<u64>]>,
    /// Tokens of the fixed prefix every request carries (the system segment).
    pub envelope: u64,
    /// The cache model.
    pub provider: Provider,
    /// The price sheet.
    pub sheet: PriceSheet,
    /// Most tokens one request may carry, envelope included (`None`: no limit).
    pub limit: Option<u64>,
}

/// A schedule: where the compactions happen and what they clear.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Schedule {
    /// The mechanism: `clear-results` ([`dp`]) or `archive-messages` ([`archive`]).
    pub mechanism: String,
    /// What each compaction keeps: the last `keep` tool results
    /// (`clear-results`) or messages (`archive-messages`).
    pub keep: usize,
    /// 0-based model calls where a compaction happens.
    pub points: Vec<usize>,
    /// Dollars of the schedule's requests under the cache model (prompt side).
    pub dollars: f64,
    /// Tool results cleared at the last request (`clear-results`).
    pub cleared: usize,
    /// The largest request, envelope included (tokens, an estimate of the counter).
    pub peak_tokens: u64,
    /// Model calls (requests) priced.
    pub requests: usize,
}

/// A session's shape under the mechanism: the calls, the results, and the
/// size of every message in every version the mechanism makes of it.
#[derive(Debug)]
pub struct Shape<'a> {
    messages: &'a [Message],
    /// Per call: the index of the assistant message it produced.
    pub calls: Vec<usize>,
    /// Per call: the request's send time (ms).
    pub times: Vec<Option<i64>>,
    /// Per call: results in the messages before it.
    pub results_before: Vec<usize>,
    /// Per result ordinal: the message holding it.
    result_msg: Vec<usize>,
    /// Per result ordinal `r`: the first ordinal `>= r` whose content is
    /// not already the placeholder (clearing it changes the message).
    real_from: Vec<usize>,
    /// Per message: its first result ordinal and one past its last.
    msg_results: Vec<(usize, usize)>,
    /// Prefix sums of message sizes, original and fully cleared.
    pref_orig: Vec<u64>,
    pref_full: Vec<u64>,
    /// Sizes of messages with some but not all of their results cleared.
    partial: HashMap<(usize, usize), u64>,
    /// The envelope's tokens.
    pub envelope: u64,
}

impl<'a> Shape<'a> {
    /// Sizes every version of every message with `counter`.
    pub fn new(p: &Problem<'a>, counter: &dyn TokenCounter) -> Shape<'a> {
        let messages = p.messages;
        let mut calls = Vec::new();
        let mut times = Vec::new();
        for (i, m) in messages.iter().enumerate() {
            if m.role == Role::Assistant {
                calls.push(i);
                let t = p.times_ms.and_then(|t| t.get(i).copied().flatten());
                times.push(t.and_then(|t| i64::try_from(t).ok()));
            }
        }
        let positions: Vec<(usize, usize, bool)> = crate::message::tool_result_positions(messages)
            .map(|(mi, bi, c)| (mi, bi, c != PLACEHOLDER))
            .collect();
        let result_msg: Vec<usize> = positions.iter().map(|p| p.0).collect();
        let mut real_from = vec![positions.len(); positions.len() + 1];
        for r in (0..positions.len()).rev() {
            real_from[r] = if positions[r].2 { r } else { real_from[r + 1] };
        }
        let mut msg_results = vec![(0, 0); messages.len()];
        let mut next = 0;
        for (mi, slot) in msg_results.iter_mut().enumerate() {
            let lo = next;
            while next < result_msg.len() && result_msg[next] == mi {
                next += 1;
            }
            *slot = (lo, next);
        }
        let results_before = calls.iter().map(|&at| msg_results[at].0).collect();
        let mut pref_orig = vec![0u64];
        let mut pref_full = vec![0u64];
        let mut partial = HashMap::new();
        for (mi, m) in messages.iter().enumerate() {
            let (lo, hi) = msg_results[mi];
            let orig = counter.count_message(m) as u64;
            let full = if hi > lo {
                counter.count_message(&cleared(m, hi - lo)) as u64
            } else {
                orig
            };
            for n in 1..hi.saturating_sub(lo) {
                partial.insert((mi, n), counter.count_message(&cleared(m, n)) as u64);
            }
            pref_orig.push(pref_orig[mi] + orig);
            pref_full.push(pref_full[mi] + full);
        }
        Shape {
            messages,
            calls,
            times,
            results_before,
            result_msg,
            real_from,
            msg_results,
            pref_orig,
            pref_full,
            partial,
            envelope: p.envelope,
        }
    }

    /// Model calls.
    pub fn n(&self) -> usize {
        self.calls.len()
    }

    /// Segments of call `i`'s request: the system segment and its messages.
    pub fn segments(&self, i: usize) -> usize {
        1 + self.calls[i]
    }

    /// Tokens of the first `count` messages with the first `c` results cleared.
    pub fn message_tokens(&self, count: usize, c: usize) -> u64 {
        let split = self.result_msg.get(c).copied().unwrap_or(usize::MAX);
        if split >= count {
            return self.pref_full[count];
        }
        let (lo, _) = self.msg_results[split];
        let own = if c > lo {
            self.partial[&(split, c - lo)]
        } else {
            self.pref_orig[split + 1] - self.pref_orig[split]
        };
        self.pref_full[split] + own + self.pref_orig[count] - self.pref_orig[split + 1]
    }

    /// Tokens of call `i`'s request with the first `c` results cleared.
    pub fn tokens(&self, i: usize, c: usize) -> u64 {
        self.envelope + self.message_tokens(self.calls[i], c)
    }

    /// Leading segments two requests share when one clears the first
    /// `old` results and the other the first `new` (`old <= new`):
    /// `usize::MAX` when clearing the extra ones changes nothing.
    pub fn agreement(&self, old: usize, new: usize) -> usize {
        let r = self.real_from[old.min(self.result_msg.len())];
        if r >= new || r >= self.result_msg.len() {
            usize::MAX
        } else {
            1 + self.result_msg[r]
        }
    }

    /// Results cleared at call `i` by a compaction keeping the last `keep`.
    pub fn clears_at(&self, i: usize, keep: usize) -> usize {
        self.results_before[i].saturating_sub(keep)
    }

    /// The messages before call `i`, as recorded.
    pub fn messages_before(&self, i: usize) -> &'a [Message] {
        &self.messages[..self.calls[i]]
    }

    /// The session's messages.
    pub fn all_messages(&self) -> &'a [Message] {
        self.messages
    }

    /// Call `i`'s messages with the first `c` results cleared.
    pub fn request_messages(&self, i: usize, c: usize) -> Vec<Message> {
        let mut out = self.messages[..self.calls[i]].to_vec();
        for (_, content) in crate::message::tool_results_mut(&mut out).take(c) {
            *content = PLACEHOLDER.to_string();
        }
        out
    }

    /// The cache requests a schedule sends, built as the replay's cost
    /// observer builds them: `cleared[i]` results cleared at call `i`.
    pub fn requests(&self, cleared: &[usize], counter: &dyn TokenCounter) -> Vec<CacheRequest> {
        let mut builder = RequestBuilder::new(Tokens::Approx, self.envelope);
        if self.envelope > 0 {
            builder.set_system_tokens(self.envelope);
        }
        let mut turn = 0;
        let mut next = 0;
        let mut out = Vec::new();
        for (mi, m) in self.messages.iter().enumerate() {
            if next < self.calls.len() && self.calls[next] == mi {
                let msgs = self.request_messages(next, cleared[next]);
                let mut r = builder.request_counted(&msgs, turn, counter);
                r.at_ms = self.times[next];
                out.push(r);
                next += 1;
            }
            turn += starts_turn(m) as usize;
        }
        out
    }
}

/// `m` with its first `n` results cleared.
fn cleared(m: &Message, n: usize) -> Message {
    let mut out = m.clone();
    let mut left = n;
    for b in out.blocks_mut() {
        if let Block::ToolResult { content, .. } = b {
            if left == 0 {
                break;
            }
            *content = PLACEHOLDER.to_string();
            left -= 1;
        }
    }
    out
}

/// Per call, results cleared at it under `points` with `keep`.
pub fn cleared_per_call(shape: &Shape<'_>, keep: usize, points: &[usize]) -> Vec<usize> {
    let mut c = 0;
    (0..shape.n())
        .map(|i| {
            if points.contains(&i) {
                c = c.max(shape.clears_at(i, keep));
            }
            c
        })
        .collect()
}

/// Artifact recall at the last request with the first `c` results cleared,
/// as the retention frontier measures it: the [`crate::retention`]
/// observer sees every message and the last request. 1 when the session
/// has no model call.
pub fn recall_at_end(messages: &[Message], facts: &[(String, String)], c: usize) -> f64 {
    use crate::policy::engine::{Observer, View};
    let Some(last) = messages.iter().rposition(|m| m.role == Role::Assistant) else {
        return 1.0;
    };
    let storage = crate::storage::MemFs::new();
    let view = View {
        storage: &storage,
        root: std::path::Path::new("/ctxlab/optimal"),
        rules: &[],
        tokens: &crate::tokens::Approx,
        envelope: 0,
        sizes: &[],
        same: &[],
    };
    let mut retention = crate::retention::Retention::for_session(messages, facts.to_vec());
    let call = messages[..last]
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .count();
    for (i, m) in messages.iter().enumerate() {
        if i == last {
            let mut request = messages[..last].to_vec();
            for (_, content) in crate::message::tool_results_mut(&mut request).take(c) {
                *content = PLACEHOLDER.to_string();
            }
            retention.on_request(call, last, &request, &[], &view);
        }
        retention.on_message(i, m);
    }
    retention.finish().artifact_recall
}

/// The most results a schedule may have cleared at the end and keep recall
/// at least `floor`: recall only falls as more are cleared, so a binary
/// search over the count. `None` when even clearing nothing misses the floor.
pub fn max_cleared(
    messages: &[Message],
    facts: &[(String, String)],
    floor: f64,
    total: usize,
) -> Option<usize> {
    if floor <= 0.0 {
        return Some(total);
    }
    if recall_at_end(messages, facts, 0) < floor {
        return None;
    }
    let (mut lo, mut hi) = (0, total);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if recall_at_end(messages, facts, mid) >= floor {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Some(lo)
}
