//! Prompt-cache accounting: what each request a policy sends would read from
//! and write to a provider's prompt cache, and what that costs.
//!
//! The module is pure: [`cost`] takes the requests (as [`CacheRequest`]s: a
//! list of content [`Segment`]s with their token counts, breakpoints and the
//! time the request was sent), a [`Provider`] model and a [`PriceSheet`], and
//! returns a [`CostReport`]. Nothing is read from disk or the clock.
//!
//! ```
//! use ctxlab_measure::cache::{cost, prices, CacheRequest, Provider, Segment};
//!
//! let system = Segment::new("system", "You are...", 2_000);
//! let turn = |n: u64| Segment::new(format!("msg {n}"), format!("text {n}"), 300);
//! let requests: Vec<CacheRequest> = (1..=3)
//!     .map(|n| {
//!         let mut segments = vec![system.clone()];
//!         segments.extend((1..=n).map(turn));
//!         CacheRequest::with_last_breakpoint(segments, Some(n as i64 * 1_000), n as usize)
//!     })
//!     .collect();
//! let sheet = prices::sheet("claude-sonnet-4.5-5m").unwrap();
//! let report = cost(&requests, &Provider::Anthropic(Default::default()), sheet);
//! // The second request reads what the first wrote and writes only its new turn.
//! assert_eq!(report.requests[1].cache_read_tokens, 2_300);
//! assert_eq!(report.requests[1].cache_write_tokens, 300);
//! assert_eq!(report.breaks, 0);
//! ```
//!
//! Segment sizes are in whatever unit the caller counted them in; a policy
//! that sizes its context in characters (the course profiles) must count its
//! requests with a token counter before calling [`cost`].

pub mod bill;
pub mod compaction;
pub mod observe;
pub mod prices;
pub mod provider;
pub mod recorded;
pub mod session;
mod sim;

use std::hash::{Hash, Hasher};

use serde::Serialize;

use crate::message::{Message, Role};
use crate::tokens::TokenCounter;
pub use prices::PriceSheet;
pub use provider::Provider;

/// One unit of a request's prefix: the tools and system prompt, or a message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Segment {
    /// What the segment is ("system", "msg 12 user", an event name); named
    /// as the place where a break happened.
    pub label: String,
    /// Hash of the segment's content: equal content, equal key.
    pub key: u64,
    /// Tokens of the segment.
    pub tokens: u64,
    /// What changed it since the previous request, when the caller knows
    /// (a policy's event); named as a break's cause if it breaks the prefix.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<BreakCause>,
}

impl Segment {
    /// A segment whose key is the hash of `content`.
    pub fn new(label: impl Into<String>, content: impl Hash, tokens: u64) -> Segment {
        Segment {
            label: label.into(),
            key: hash_of(&content),
            tokens,
            cause: None,
        }
    }
}

/// Deterministic within a build; keys never leave the process.
fn hash_of(value: &impl Hash) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    value.hash(&mut h);
    h.finish()
}

/// One request as the provider sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CacheRequest {
    /// The prefix, in order: tools and system first, then messages.
    pub segments: Vec<Segment>,
    /// Indices of segments carrying a `cache_control` breakpoint (the prefix
    /// through that segment is cached). Ignored by automatic caching.
    pub breakpoints: Vec<usize>,
    /// When the request was sent, in milliseconds; `None` = unknown, and the
    /// cache never expires between such requests.
    pub at_ms: Option<i64>,
    /// Which conversation the request belongs to (main agent, a subagent):
    /// breaks are judged against the previous request of the same stream.
    pub stream: u32,
    /// The user turn the request serves (breaks are reported per turn).
    pub turn: usize,
    /// What changed the request when no segment names it (messages
    /// removed from its end): the call's first policy event.
    pub call_cause: Option<BreakCause>,
}

impl CacheRequest {
    /// A request with breakpoints on the system segment and on the last
    /// segment, as Claude Code places them.
    pub fn with_last_breakpoint(segments: Vec<Segment>, at_ms: Option<i64>, turn: usize) -> Self {
        let last = segments.len().saturating_sub(1);
        let breakpoints = if last == 0 { vec![0] } else { vec![0, last] };
        CacheRequest {
            segments,
            breakpoints,
            at_ms,
            stream: 0,
            turn,
            call_cause: None,
        }
    }

    /// Tokens of the whole request.
    pub fn tokens(&self) -> u64 {
        self.segments
            .iter()
            .fold(0, |a, s| a.saturating_add(s.tokens))
    }
}

/// The segments of a request: a system segment (`system_key` names the tools
/// and system prompt, sized `system_tokens`) and one segment per message,
/// counted by `counter`.
pub fn segments_of(
    system_key: &str,
    system_tokens: u64,
    messages: &[Message],
    counter: &dyn TokenCounter,
) -> Vec<Segment> {
    let mut out = vec![Segment::new("system", system_key, system_tokens)];
    for (i, m) in messages.iter().enumerate() {
        let role = if m.role == Role::User {
            "user"
        } else {
            "assistant"
        };
        let content = serde_json::to_string(m).unwrap_or_default();
        out.push(Segment::new(
            format!("msg {i} {role}"),
            content,
            counter.count_message(m) as u64,
        ));
    }
    out
}

/// Why a cached prefix broke, in the provider's own cache-miss vocabulary:
/// Anthropic's cache diagnostics answer a miss with a `cache_miss_reason`
/// of `model_changed`, `system_changed`, `tools_changed`,
/// `messages_changed`, `previous_message_not_found` or `unavailable`
/// (platform.claude.com/docs/en/build-with-claude/cache-diagnostics, read
/// 2026-12); OpenAI's prompt caching names none (a miss is an uncached
/// prefix). A replay's fixed prefix holds system prompt and tools as one
/// segment, so a change there is `system_changed`; a call another model
/// answered reads that model's own cache and is judged apart
/// ([`observe::CallPricing`]), so `model_changed` is never a break. A TTL expiry is no change
/// of content: it is [`RequestCost::expired`], not a break.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum BreakCause {
    /// The fixed prefix (system prompt, tools, first-turn context) changed:
    /// the envelope switched, as after a product's own compaction.
    SystemChanged,
    /// A message inside the cached prefix changed or was removed.
    MessagesChanged {
        /// The kind of the policy event that changed it (`cleared`,
        /// `summarised`, ...); `None` when the caller knows no event.
        event: Option<String>,
        /// The tool call the event names, when it names one.
        id: Option<String>,
    },
    /// `messages_changed` in a call where the policy recorded no event: the
    /// design re-derived a message it had sent (a view rebuilt from the
    /// history) without a decision of its own.
    Rederived,
}

impl std::fmt::Display for BreakCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BreakCause::SystemChanged => write!(f, "system_changed"),
            BreakCause::MessagesChanged { event: None, .. } => {
                write!(f, "messages_changed (no event)")
            }
            BreakCause::MessagesChanged { event: Some(e), .. } => {
                write!(f, "messages_changed: {e}")
            }
            BreakCause::Rederived => write!(f, "messages_changed: re-derived without an event"),
        }
    }
}

/// Where a request's prefix first differed from the previous request's cached prefix.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct BreakAt {
    /// Index of the first differing segment (0: the system segment; `i`:
    /// message `i − 1` of the request).
    pub segment: usize,
    /// Its label (`removed` when the request ended before it).
    pub label: String,
    /// Why it differed.
    pub cause: BreakCause,
}

/// What one request cost.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RequestCost {
    /// Position in the input.
    pub index: usize,
    /// The request's stream.
    pub stream: u32,
    /// The request's turn.
    pub turn: usize,
    /// Tokens sent.
    pub input_tokens: u64,
    /// Tokens of the longest prefix shared with a live cached prefix.
    pub lcp_tokens: u64,
    /// Tokens billed as cache reads.
    pub cache_read_tokens: u64,
    /// Tokens billed as cache writes.
    pub cache_write_tokens: u64,
    /// Tokens billed at the plain input price.
    pub uncached_tokens: u64,
    /// The content changed inside the previous request's cached prefix.
    pub broke: bool,
    /// Where it changed.
    pub break_at: Option<BreakAt>,
    /// The previous request's cache had expired (time gap over the TTL).
    pub expired: bool,
    /// For a break that shrank the request (a compaction): cached turns after
    /// which the saving repays the rewrite.
    pub payback_turns: Option<f64>,
    /// Dollars under the sheet (a compaction call's output included).
    pub dollars: f64,
    /// A policy's summary request, sent before the model call of its turn
    /// ([`compaction`]); not serialized when false.
    #[serde(default, skip_serializing_if = "is_false")]
    pub compaction: bool,
    /// Output tokens priced with the request: a compaction call's summary,
    /// counted by the run's counter (an estimate); 0 for a replayed call,
    /// whose recorded reply is the same whatever the policy (not
    /// serialized when 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub output_tokens: u64,
    /// The sheet this request was priced at when it is not the report's
    /// (a conversation whose calls more than one model answered, each
    /// priced at its own); not serialized when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sheet: Option<String>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
    *n == T::default()
}

/// What a sequence of requests cost.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CostReport {
    /// The provider model's name.
    pub provider: String,
    /// The price sheet.
    pub sheet: PriceSheet,
    /// Sum of tokens sent.
    pub input_tokens: u64,
    /// Sum of cache reads.
    pub cache_read_tokens: u64,
    /// Sum of cache writes.
    pub cache_write_tokens: u64,
    /// Sum of uncached tokens.
    pub uncached_tokens: u64,
    /// Total dollars.
    pub dollars: f64,
    /// Distinct turns.
    pub turns: usize,
    /// Requests that broke the prefix.
    pub breaks: usize,
    /// `breaks / turns`.
    pub breaks_per_turn: f64,
    /// Requests that found their stream's cache expired.
    pub expiries: usize,
    /// Median payback over the compactions, if any.
    pub payback_turns_median: Option<f64>,
    /// Requests that were a policy's summary call ([`compaction`]); not
    /// serialized when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub compaction_calls: usize,
    /// Output tokens priced (the compaction calls' summaries); not
    /// serialized when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub output_tokens: u64,
    /// The per-request series.
    pub requests: Vec<RequestCost>,
}

/// Replays `requests` in order against an empty cache of `provider` and
/// prices them with `sheet`. Pure: equal input, equal report.
pub fn cost(requests: &[CacheRequest], provider: &Provider, sheet: &PriceSheet) -> CostReport {
    cost_each(requests, provider, sheet, &[])
}

/// [`cost`] with request `i` priced at `sheets[i]` where it names one (a
/// call another model answered, as a recorded bill prices each request at
/// its own model), else at `sheet`; the report's sheet stays `sheet`.
pub fn cost_each(
    requests: &[CacheRequest],
    provider: &Provider,
    sheet: &PriceSheet,
    sheets: &[Option<PriceSheet>],
) -> CostReport {
    let mut cache = sim::Cache::new(*provider);
    let series: Vec<RequestCost> = requests
        .iter()
        .enumerate()
        .map(|(i, r)| match sheets.get(i).and_then(Option::as_ref) {
            Some(own) if own != sheet => {
                let mut c = cache.send(i, r, own);
                c.sheet = Some(own.name.to_string());
                c
            }
            _ => cache.send(i, r, sheet),
        })
        .collect();
    summarize(provider.name(), sheet.clone(), series)
}

pub fn summarize(provider: String, sheet: PriceSheet, requests: Vec<RequestCost>) -> CostReport {
    let sum = |f: fn(&RequestCost) -> u64| requests.iter().map(f).fold(0u64, u64::saturating_add);
    let mut turns: Vec<(u32, usize)> = requests.iter().map(|r| (r.stream, r.turn)).collect();
    turns.sort_unstable();
    turns.dedup();
    let breaks = requests.iter().filter(|r| r.broke).count();
    let mut paybacks: Vec<f64> = requests.iter().filter_map(|r| r.payback_turns).collect();
    paybacks.sort_by(f64::total_cmp);
    CostReport {
        provider,
        sheet,
        input_tokens: sum(|r| r.input_tokens),
        cache_read_tokens: sum(|r| r.cache_read_tokens),
        cache_write_tokens: sum(|r| r.cache_write_tokens),
        uncached_tokens: sum(|r| r.uncached_tokens),
        dollars: requests.iter().map(|r| r.dollars).sum(),
        turns: turns.len(),
        breaks,
        breaks_per_turn: breaks as f64 / turns.len().max(1) as f64,
        expiries: requests.iter().filter(|r| r.expired).count(),
        payback_turns_median: paybacks.get(paybacks.len() / 2).copied(),
        compaction_calls: requests.iter().filter(|r| r.compaction).count(),
        output_tokens: sum(|r| r.output_tokens),
        requests,
    }
}

/// A policy's cost next to the no-compaction baseline on the same session.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Tradeoff {
    /// Baseline input tokens minus the policy's (negative: the policy sent more).
    pub tokens_saved: i64,
    /// The policy's write tokens minus the baseline's.
    pub extra_write_tokens: i64,
    /// The policy's write tokens per token saved; `None` when nothing was saved.
    pub write_per_saved: Option<f64>,
    /// Baseline dollars minus the policy's.
    pub dollars_saved: f64,
}

/// Compares a policy's report with the baseline's.
pub fn tradeoff(policy: &CostReport, baseline: &CostReport) -> Tradeoff {
    let saved = baseline.input_tokens as i64 - policy.input_tokens as i64;
    Tradeoff {
        tokens_saved: saved,
        extra_write_tokens: policy.cache_write_tokens as i64 - baseline.cache_write_tokens as i64,
        write_per_saved: (saved > 0).then(|| policy.cache_write_tokens as f64 / saved as f64),
        dollars_saved: baseline.dollars - policy.dollars,
    }
}

#[cfg(test)]
mod tests;
