//! Recorded sessions as cache requests, and the check that the cache model
//! reproduces the `usage` Claude Code recorded.
//!
//! [`requests_of`] turns a session's recorded requests into
//! [`CacheRequest`]s sized by the recorded totals: each new message gets
//! its share (by the Claude estimator) of the growth in recorded tokens, the
//! first request's remainder is the conversation's system prompt and tools,
//! and the request's uncached `input_tokens` become a tail after the last
//! breakpoint. The sizes are therefore the real ones; what [`validate`]
//! tests is the cache model: which prefix is alive, read, written and when
//! a read collapses (TTL expiry, a new conversation, a changed prefix).

use std::collections::HashMap;

use serde::Serialize;

use super::{cost, CacheRequest, CostReport, PriceSheet, Provider, Segment};
use crate::message::Message;
use crate::tokens::recorded::{RecordedRequest, Usage};
use crate::tokens::{claude::Claude, TokenCounter};

/// Sizes and keys shared by the requests of one conversation.
#[derive(Default)]
struct Conversation<'a> {
    stream: u32,
    /// The latest known send time.
    last_ms: Option<i64>,
    sizes: HashMap<u64, u64>,
    /// The previous request's messages and their content keys: a request
    /// resends them, and hashing each message's JSON again per request is
    /// quadratic in the conversation (minutes on the 20,163-call corpus).
    sent: &'a [Message],
    sent_keys: Vec<u64>,
}

/// Empirical rewrite rules of the recorded-cache model that the shared
/// logs contradict: each is a switch, off by default, so what the model
/// predicts by default rests only on rules without counter-evidence.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RewriteRules {
    /// A new prompt after a Stop hook rewrites everything after the system
    /// prompt ([`crate::tokens::recorded::stop_hooks`]). For: 9 of 9 such
    /// prompts in the five sessions it was read from (dmux 41 and 48 are
    /// the rewrites only it explains). Against: 14 false alarms in
    /// claude-agentic-framework (Claude Code 2.1.38), whose prompts after a
    /// Stop hook kept their cache. Off: 40 of 46 recorded rewrites flagged
    /// with 11 false alarms on the nine shared sessions; on: 42 with 25.
    pub stop_hook_prompts: bool,
}

/// The cache requests of a recorded session, in log order, one stream per
/// conversation (chain root), breakpoints on the system prompt and the last
/// message. The system segment is keyed by conversation and model: a
/// request to another model (a Haiku side call) starts from a cold cache.
/// Default [`RewriteRules`].
pub fn requests_of(recorded: &[RecordedRequest]) -> Vec<CacheRequest> {
    requests_with(recorded, RewriteRules::default())
}

/// [`requests_of`] under the given rewrite rules.
pub fn requests_with(recorded: &[RecordedRequest], rules: RewriteRules) -> Vec<CacheRequest> {
    let mut convs: HashMap<&str, Conversation> = HashMap::new();
    let counter = Claude::default();
    recorded
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let next = convs.len() as u32;
            let conv = convs.entry(&r.chain).or_insert_with(|| Conversation {
                stream: next,
                ..Default::default()
            });
            // A request with no usable time was sent no earlier than the
            // last one with a time; without this it would make the cache
            // entries it writes immortal.
            let at_ms = r.sent_ms.or(r.at_ms).or(conv.last_ms);
            conv.last_ms = at_ms;
            let mut segments = sized_segments(conv, r, &counter, rules);
            let last = segments.len() - 1;
            segments.push(Segment::new("uncached tail", ("tail", i), tail_tokens(r)));
            CacheRequest {
                segments,
                breakpoints: vec![0, last],
                at_ms,
                stream: conv.stream,
                turn: i,
                call_cause: None,
            }
        })
        .collect()
}

/// The request's tokens after its last breakpoint, which no later request
/// reads: the uncached `input_tokens` under explicit breakpoints; none under
/// an implicit cache, whose every prompt token is prefix (sizing the
/// messages by the cached tokens alone would make a model predict the
/// previous request's recorded read, not the prompt it cached).
fn tail_tokens(r: &RecordedRequest) -> u64 {
    if r.implicit_cache {
        0
    } else {
        r.usage.input_tokens
    }
}

/// System segment plus one per message; sizes of prefixes seen before are
/// reused, the growth is split over the new messages by estimated tokens.
fn sized_segments<'a>(
    conv: &mut Conversation<'a>,
    r: &'a RecordedRequest,
    counter: &Claude,
    rules: RewriteRules,
) -> Vec<Segment> {
    let stop_hook_prompts = if rules.stop_hook_prompts {
        r.prompts_after_stop_hook
    } else {
        0
    };
    let mut segments = vec![Segment::new(
        "system",
        ("system", r.chain.as_str(), r.model.as_str()),
        0,
    )];
    let content = content_keys(conv, &r.messages);
    segments.extend(
        r.messages
            .iter()
            .zip(&content)
            .enumerate()
            .map(|(i, (m, &c))| message_segment(i, m, c, stop_hook_prompts)),
    );
    (conv.sent, conv.sent_keys) = (&r.messages, content);
    let keys = prefix_keys(&segments);
    let target = r.usage.total() - tail_tokens(r);
    let known: u64 = keys.iter().filter_map(|k| conv.sizes.get(k)).sum();
    let fresh: Vec<usize> = (0..keys.len())
        .filter(|i| !conv.sizes.contains_key(&keys[*i]))
        .collect();
    let weights: Vec<u64> = fresh
        .iter()
        .map(|&i| match i {
            0 => 0,
            _ => counter.count_message(&r.messages[i - 1]).max(1) as u64,
        })
        .collect();
    let shares = split(
        target.saturating_sub(known),
        &weights,
        fresh.first() == Some(&0),
    );
    for (&i, s) in fresh.iter().zip(shares) {
        conv.sizes.insert(keys[i], s);
    }
    for (seg, k) in segments.iter_mut().zip(&keys) {
        seg.tokens = conv.sizes[k];
    }
    segments
}

/// A message's segment. The first message is keyed by the prompts after a
/// Stop hook so far ([`crate::tokens::recorded::stop_hooks`]): each such
/// prompt changes the prefix right after the system prompt.
fn message_segment(i: usize, m: &Message, content: u64, stop_hook_prompts: u32) -> Segment {
    let role = if m.role == crate::message::Role::User {
        "user"
    } else {
        "assistant"
    };
    let epoch = if i == 0 { stop_hook_prompts } else { 0 };
    Segment::new(format!("msg {i} {role}"), (epoch, content), 0)
}

/// A key per message of its JSON; the previous request's keys are reused
/// for the messages it sent at the same places.
fn content_keys(conv: &Conversation, messages: &[Message]) -> Vec<u64> {
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| match conv.sent.get(i) {
            Some(old) if old == m => conv.sent_keys[i],
            _ => super::hash_of(&serde_json::to_string(m).unwrap_or_default()),
        })
        .collect()
}

/// Chained keys, so a size belongs to a prefix, not to equal text elsewhere.
fn prefix_keys(segments: &[Segment]) -> Vec<u64> {
    let mut acc = 0u64;
    segments
        .iter()
        .map(|s| {
            acc = super::hash_of(&(acc, s.key));
            acc
        })
        .collect()
}

/// Splits `total` over `weights` (the last share takes the rounding); when
/// `system_first`, the first entry (the system prompt) takes what the
/// estimated message tokens leave.
fn split(total: u64, weights: &[u64], system_first: bool) -> Vec<u64> {
    let sum: u64 = weights.iter().fold(0, |a, &w| a.saturating_add(w));
    // With the system first, messages get their estimate (scaled down only
    // when it exceeds the total) and the system the rest.
    let budget = if system_first { sum.min(total) } else { total };
    let mut out: Vec<u64> = weights
        .iter()
        .map(|&w| {
            let share = (w as u128 * budget as u128).checked_div(sum as u128);
            share.unwrap_or(0) as u64
        })
        .collect();
    let rest = total - out.iter().sum::<u64>();
    let slot = if system_first {
        out.first_mut()
    } else {
        out.last_mut()
    };
    if let Some(slot) = slot {
        *slot += rest;
    }
    out
}

/// The recorded usage and the model's prediction for one request.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Compared {
    /// Request index in the session.
    pub index: usize,
    /// What Claude Code recorded.
    pub recorded: Usage,
    /// Predicted cache reads.
    pub predicted_read: u64,
    /// Predicted cache writes.
    pub predicted_write: u64,
    /// The recorded read collapsed (a full-prefix rewrite).
    pub recorded_rewrite: bool,
    /// The predicted read collapsed.
    pub predicted_rewrite: bool,
}

/// How well the model reproduces a recorded session.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Validation {
    /// Requests compared.
    pub requests: usize,
    /// Requests whose predicted read and write are both within ±5 % of the
    /// recorded ones (the read alone under an implicit cache, which reports
    /// no writes).
    pub within_5pct: usize,
    /// Recorded full-prefix rewrites (a collapsed cache read).
    pub recorded_rewrites: usize,
    /// Of those, the ones the model also predicts.
    pub flagged_rewrites: usize,
    /// Predicted rewrites that were not recorded.
    pub false_rewrites: usize,
    /// Up to 5 request indices outside ±5 %.
    pub misses: Vec<usize>,
    /// Up to 5 recorded rewrites the model did not predict.
    pub unflagged: Vec<usize>,
    /// Up to 5 predicted rewrites that were not recorded.
    pub false_alarms: Vec<usize>,
    /// Per request, recorded beside predicted.
    pub series: Vec<Compared>,
}

fn close(predicted: u64, recorded: u64) -> bool {
    predicted.abs_diff(recorded) as f64 <= 0.05 * recorded as f64
}

/// A collapse: the read fell more than 5 % and at least 2,000 tokens below
/// what the stream's previous request left cached (Claude Code's own
/// break detector uses the same thresholds).
fn collapsed(read: u64, cached_before: u64) -> bool {
    read as f64 <= 0.95 * cached_before as f64 && cached_before.saturating_sub(read) >= 2_000
}

/// Replays a recorded session under `provider` and compares with its usage.
pub fn validate(
    recorded: &[RecordedRequest],
    provider: &Provider,
    sheet: &PriceSheet,
) -> (CostReport, Validation) {
    validate_with(recorded, provider, sheet, RewriteRules::default())
}

/// [`validate`] under the given rewrite rules.
pub fn validate_with(
    recorded: &[RecordedRequest],
    provider: &Provider,
    sheet: &PriceSheet,
    rules: RewriteRules,
) -> (CostReport, Validation) {
    let report = cost(&requests_with(recorded, rules), provider, sheet);
    let mut v = Validation {
        requests: recorded.len(),
        within_5pct: 0,
        recorded_rewrites: 0,
        flagged_rewrites: 0,
        false_rewrites: 0,
        misses: Vec::new(),
        unflagged: Vec::new(),
        false_alarms: Vec::new(),
        series: Vec::new(),
    };
    let mut before: HashMap<&str, (u64, u64)> = HashMap::new();
    for (i, (r, p)) in recorded.iter().zip(&report.requests).enumerate() {
        let u = r.usage;
        // An implicit cache reports no writes (they are billed as input),
        // so only its read is compared.
        let ok = close(p.cache_read_tokens, u.cache_read_input_tokens)
            && (r.implicit_cache || close(p.cache_write_tokens, u.cache_creation_input_tokens));
        v.within_5pct += ok as usize;
        if !ok && v.misses.len() < 5 {
            v.misses.push(i);
        }
        let (mut was, mut will) = (false, false);
        if let Some(&(rec, pred)) = before.get(r.chain.as_str()) {
            was = collapsed(u.cache_read_input_tokens, rec);
            will = collapsed(p.cache_read_tokens, pred);
            v.recorded_rewrites += was as usize;
            v.flagged_rewrites += (was && will) as usize;
            v.false_rewrites += (will && !was) as usize;
            if was && !will && v.unflagged.len() < 5 {
                v.unflagged.push(i);
            }
            if will && !was && v.false_alarms.len() < 5 {
                v.false_alarms.push(i);
            }
        }
        let cached = |read: u64, write: u64| read.saturating_add(write);
        before.insert(
            &r.chain,
            (
                cached(u.cache_read_input_tokens, u.cache_creation_input_tokens),
                cached(p.cache_read_tokens, p.cache_write_tokens),
            ),
        );
        v.series.push(Compared {
            index: i,
            recorded: u,
            predicted_read: p.cache_read_tokens,
            predicted_write: p.cache_write_tokens,
            recorded_rewrite: was,
            predicted_rewrite: will,
        });
    }
    (report, v)
}

#[cfg(test)]
mod tests;
