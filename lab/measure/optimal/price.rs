//! One request's dollars from what the cache holds that it can use, the
//! way [`crate::cache::cost`] computes them.
//!
//! Under the clearing mechanism the entries a request can read are few:
//! the system segment's, and the full prefixes of earlier requests that
//! are prefixes of it. Between compactions every request extends the
//! previous one; after a compaction, only requests of the previous run
//! sent before the first newly cleared result still match, and the requests
//! sent before any tool result existed (a compaction that clears something
//! changes every later run's earlier messages). Of the candidates the
//! longest is the one the cache finds: it is also the latest written, so
//! it expires last, and it is nearest the breakpoint.

use crate::cache::provider::Provider;
use crate::cache::PriceSheet;

/// An earlier request's cached prefix a request may read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Entry {
    /// Segments of that request (its breakpoint is the last).
    pub segments: usize,
    /// Its tokens (the prefix read on a hit).
    pub tokens: u64,
    /// When it expires (`None`: never, the times were not recorded).
    pub expires: Option<i64>,
}

/// The request being priced and its surroundings.
#[derive(Debug, Clone, Copy)]
pub struct Request {
    /// Segments (the system segment and the messages).
    pub segments: usize,
    /// Tokens, envelope included.
    pub tokens: u64,
    /// When it is sent.
    pub at: Option<i64>,
    /// Tokens of the system segment.
    pub system: u64,
    /// When the previous request was sent (`None` for the first request
    /// as `first`, or with no recorded time).
    pub previous_at: Option<i64>,
    /// Whether this is the session's first request (an empty cache).
    pub first: bool,
}

/// Whether an entry expiring at `expires` is alive at `now`, as the cache does.
pub fn alive(expires: Option<i64>, now: Option<i64>) -> bool {
    match (expires, now) {
        (Some(e), Some(n)) => n <= e,
        _ => true,
    }
}

/// When an entry written or read at `at` expires.
pub fn expiry(p: &Provider, at: Option<i64>) -> Option<i64> {
    at.map(|t| t + p.ttl_ms())
}

/// The minimum cacheable prefix of the provider.
pub fn min_tokens(p: &Provider) -> u64 {
    match p {
        Provider::Anthropic(a) => a.min_tokens,
        Provider::OpenAi(o) => o.min_tokens,
        Provider::Gemini(g) => g.min_tokens,
    }
}

/// Whether an explicit-breakpoint request reads `e`: written (long enough),
/// alive, and within the lookback of the last breakpoint.
pub fn anthropic_reads(p: &Provider, r: &Request, e: &Entry) -> bool {
    let Provider::Anthropic(a) = p else {
        return false;
    };
    let last = r.segments - 1;
    let low = (last + 1).saturating_sub(a.lookback.max(1));
    e.tokens >= a.min_tokens
        && e.segments >= 1
        && e.segments > low
        && e.segments - 1 <= last
        && alive(e.expires, r.at)
}

/// Dollars of `r`, with `best` the longest earlier request that is a prefix
/// of it (explicit breakpoints), or the tokens it shares with the previous
/// request and when that one's prefix expires (automatic caching).
pub fn dollars(p: &Provider, sheet: &PriceSheet, r: &Request, best: Reuse) -> (f64, bool) {
    match p {
        Provider::Anthropic(a) => {
            let system_alive =
                !r.first && r.system >= a.min_tokens && alive(expiry(p, r.previous_at), r.at);
            let mut read = if system_alive { r.system } else { 0 };
            let mut hit = false;
            if let Reuse::Entry(e) = best {
                if anthropic_reads(p, r, &e) && e.tokens >= read {
                    read = e.tokens;
                    hit = true;
                }
            }
            let write = if r.tokens >= a.min_tokens {
                r.tokens - read
            } else {
                0
            };
            let uncached = r.tokens - read - write;
            (sheet.dollars(uncached, write, read), hit)
        }
        Provider::OpenAi(o) => (
            automatic(o.min_tokens, |t| o.hit_tokens(t), sheet, r, best),
            false,
        ),
        Provider::Gemini(g) => (
            automatic(g.min_tokens, |t| g.hit_tokens(t), sheet, r, best),
            false,
        ),
    }
}

/// Automatic caching with the provider's hit rule `hit` (tokens read of a
/// live shared prefix) and minimum cached prompt `min_tokens`.
fn automatic(
    min_tokens: u64,
    hit: impl Fn(u64) -> u64,
    sheet: &PriceSheet,
    r: &Request,
    best: Reuse,
) -> f64 {
    let read = match best {
        Reuse::Shared {
            tokens,
            covered: true,
            expires,
        } if alive(expires, r.at) => hit(tokens),
        _ => 0,
    };
    if r.tokens < min_tokens {
        return sheet.dollars(r.tokens, 0, 0);
    }
    sheet.dollars(0, r.tokens - read, read)
}

/// What a request can reuse.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reuse {
    /// Nothing (the first request, or no candidate).
    Nothing,
    /// Explicit breakpoints: the longest earlier request that is a prefix.
    Entry(Entry),
    /// Automatic caching: the prefix shared with the previous request.
    Shared {
        /// Tokens of the shared prefix.
        tokens: u64,
        /// Whether the previous request was cached at all (long enough).
        covered: bool,
        /// When its prefix expires.
        expires: Option<i64>,
    },
}
