//! The cache state machine behind [`super::cost`].

use std::collections::HashMap;

use super::prices::PriceSheet;
use super::provider::{Anthropic, Provider};
use super::{BreakAt, BreakCause, CacheRequest, RequestCost};

/// What the previous request of a stream left behind.
struct Previous {
    keys: Vec<u64>,
    cached_segments: usize,
    tokens: u64,
    at_ms: Option<i64>,
}

/// Live cache entries, keyed by the chained hash of a prefix.
pub(super) struct Cache {
    provider: Provider,
    /// Readable entries (Anthropic: breakpoints only; OpenAI: every prefix).
    entries: HashMap<u64, Option<i64>>,
    /// Every prefix position covered by a live entry (for the LCP).
    covered: HashMap<u64, Option<i64>>,
    previous: HashMap<u32, Previous>,
}

/// Read and write of one request, in segments and tokens.
struct Access {
    read: u64,
    cached_end: Option<usize>,
    write: u64,
}

fn alive(expires: Option<&Option<i64>>, now: Option<i64>) -> bool {
    match (expires, now) {
        (None, _) => false,
        (Some(Some(exp)), Some(now)) => now <= *exp,
        (Some(_), _) => true,
    }
}

impl Cache {
    pub(super) fn new(provider: Provider) -> Cache {
        Cache {
            provider,
            entries: HashMap::new(),
            covered: HashMap::new(),
            previous: HashMap::new(),
        }
    }

    /// Sends one request: reads, writes, judges the break, prices it.
    pub(super) fn send(
        &mut self,
        index: usize,
        r: &CacheRequest,
        sheet: &PriceSheet,
    ) -> RequestCost {
        let keys = chain_keys(r);
        let cum = cumulative(r);
        let total = cum.last().copied().unwrap_or(0);
        let lcp_seg = (0..keys.len())
            .rev()
            .find(|&i| alive(self.covered.get(&keys[i]), r.at_ms));
        let access = match self.provider {
            Provider::Anthropic(a) => self.anthropic(&a, r, &keys, &cum),
            Provider::OpenAi(o) => {
                let read = lcp_seg.map_or(0, |i| o.hit_tokens(cum[i]));
                self.automatic(o.min_tokens, read, &keys, &cum, r.at_ms)
            }
            // Gemini's implicit caching writes as OpenAI's does and reads
            // whole blocks.
            Provider::Gemini(g) => {
                let read = lcp_seg.map_or(0, |i| g.hit_tokens(cum[i]));
                self.automatic(g.min_tokens, read, &keys, &cum, r.at_ms)
            }
        };
        let (broke, break_at, expired, payback) = self.judge(r, &keys, total, sheet);
        self.previous.insert(
            r.stream,
            Previous {
                keys,
                cached_segments: access.cached_end.map_or(0, |e| e + 1),
                tokens: total,
                at_ms: r.at_ms,
            },
        );
        let uncached = total.saturating_sub(access.read.saturating_add(access.write));
        RequestCost {
            index,
            stream: r.stream,
            turn: r.turn,
            input_tokens: total,
            lcp_tokens: lcp_seg.map_or(0, |i| cum[i]),
            cache_read_tokens: access.read,
            cache_write_tokens: access.write,
            uncached_tokens: uncached,
            broke,
            break_at,
            expired,
            payback_turns: payback,
            dollars: sheet.dollars(uncached, access.write, access.read),
            compaction: false,
            output_tokens: 0,
            sheet: None,
        }
    }

    fn expiry(&self, now: Option<i64>) -> Option<i64> {
        now.map(|t| t + self.provider.ttl_ms())
    }

    fn cover(&mut self, keys: &[u64], through: usize, now: Option<i64>) {
        let exp = self.expiry(now);
        for k in &keys[..=through] {
            self.covered.insert(*k, exp);
        }
    }

    fn anthropic(&mut self, a: &Anthropic, r: &CacheRequest, keys: &[u64], cum: &[u64]) -> Access {
        let mut bps: Vec<usize> = r
            .breakpoints
            .iter()
            .copied()
            .filter(|&b| b < keys.len())
            .collect();
        bps.sort_unstable();
        bps.dedup();
        let skip = bps.len().saturating_sub(a.max_breakpoints);
        let bps = &bps[skip..];
        let hit = bps
            .iter()
            .filter_map(|&b| {
                let low = (b + 1).saturating_sub(a.lookback.max(1));
                (low..=b)
                    .rev()
                    .find(|&j| alive(self.entries.get(&keys[j]), r.at_ms))
            })
            .max();
        let read = hit.map_or(0, |j| cum[j]);
        let exp = self.expiry(r.at_ms);
        let mut cached_end = hit;
        for &b in bps.iter().filter(|&&b| cum[b] >= a.min_tokens) {
            self.entries.insert(keys[b], exp);
            cached_end = cached_end.max(Some(b));
        }
        if let Some(j) = hit {
            self.entries.insert(keys[j], exp);
        }
        if let Some(end) = cached_end {
            self.cover(keys, end, r.at_ms);
        }
        let write = cached_end.map_or(0, |e| cum[e].saturating_sub(read));
        Access {
            read,
            cached_end,
            write,
        }
    }

    /// Automatic prefix caching: read `read` tokens of the live prefix
    /// (the provider's hit rule), cache all that was sent.
    fn automatic(
        &mut self,
        min_tokens: u64,
        read: u64,
        keys: &[u64],
        cum: &[u64],
        now: Option<i64>,
    ) -> Access {
        let access = Self::written(min_tokens, read, cum);
        if let Some(end) = access.cached_end {
            self.cover(keys, end, now);
        }
        access
    }

    fn written(min_tokens: u64, read: u64, cum: &[u64]) -> Access {
        let total = cum.last().copied().unwrap_or(0);
        if total < min_tokens || cum.is_empty() {
            return Access {
                read,
                cached_end: None,
                write: 0,
            };
        }
        // Every prefix sent is cached; writes cost the plain input price.
        Access {
            read,
            cached_end: Some(cum.len() - 1),
            write: total - read,
        }
    }

    /// Did this request change the previous request's cached prefix, did
    /// that cache expire, and (for a shrinking break) when does it pay back?
    fn judge(
        &self,
        r: &CacheRequest,
        keys: &[u64],
        total: u64,
        sheet: &PriceSheet,
    ) -> (bool, Option<BreakAt>, bool, Option<f64>) {
        let Some(prev) = self.previous.get(&r.stream) else {
            return (false, None, false, None);
        };
        let expired = match (prev.at_ms, r.at_ms) {
            (Some(a), Some(b)) => b - a > self.provider.ttl_ms(),
            _ => false,
        };
        let first_diff = keys
            .iter()
            .zip(&prev.keys)
            .take_while(|(a, b)| a == b)
            .count();
        if first_diff >= prev.cached_segments {
            return (false, None, expired, None);
        }
        let seg = r.segments.get(first_diff);
        let label = seg.map_or("removed", |s| s.label.as_str());
        let at = BreakAt {
            segment: first_diff,
            label: label.to_string(),
            cause: cause_of(first_diff, seg, r),
        };
        (true, Some(at), expired, payback(prev.tokens, total, sheet))
    }
}

/// Why segment `index` (`seg`, `None` when the request ended before it)
/// differs: what the caller named, else by position (segment 0 is the
/// system prefix), else the request's call cause.
fn cause_of(index: usize, seg: Option<&super::Segment>, r: &CacheRequest) -> BreakCause {
    if let Some(c) = seg.and_then(|s| s.cause.clone()) {
        return c;
    }
    if index == 0 {
        return BreakCause::SystemChanged;
    }
    r.call_cause.clone().unwrap_or(BreakCause::MessagesChanged {
        event: None,
        id: None,
    })
}

/// Cached turns until a compaction from `before` to `after` tokens repays
/// its rewrite: `(w·after − r·before) / (r·saved)`; `None` when nothing shrank.
fn payback(before: u64, after: u64, sheet: &PriceSheet) -> Option<f64> {
    let saved = before.checked_sub(after).filter(|&s| s > 0)? as f64;
    let cost = sheet.write_mult * after as f64 - sheet.read_mult * before as f64;
    Some((cost / (sheet.read_mult * saved)).max(0.0))
}

/// Chained prefix keys: key `i` names segments `0..=i` in order.
fn chain_keys(r: &CacheRequest) -> Vec<u64> {
    let mut acc = 0u64;
    r.segments
        .iter()
        .map(|s| {
            acc = super::hash_of(&(acc, s.key));
            acc
        })
        .collect()
}

/// Running token totals: entry `i` is the tokens of segments `0..=i`.
fn cumulative(r: &CacheRequest) -> Vec<u64> {
    let mut acc = 0u64;
    r.segments
        .iter()
        .map(|s| {
            acc = acc.saturating_add(s.tokens);
            acc
        })
        .collect()
}
