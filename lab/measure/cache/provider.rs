//! How a provider decides which prefix of a request it reads from its cache
//! and which it writes.

use serde::{Deserialize, Serialize};

/// Anthropic's explicit caching: prefixes are cached only at `cache_control`
/// breakpoints; a request reads the longest live entry found within
/// `lookback` blocks before one of its breakpoints.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Anthropic {
    /// Entry lifetime in seconds, refreshed on every hit (300 or 3600).
    pub ttl_secs: i64,
    /// Blocks searched backwards from each breakpoint (about 20).
    pub lookback: usize,
    /// A prefix shorter than this is never cached (1,024 for Sonnet/Opus).
    pub min_tokens: u64,
    /// At most this many breakpoints per request are honoured (4).
    pub max_breakpoints: usize,
}

/// Default: the 5-minute TTL, 20-block lookback, 1,024-token minimum, 4 breakpoints.
impl Default for Anthropic {
    fn default() -> Self {
        Anthropic {
            ttl_secs: 300,
            lookback: 20,
            min_tokens: 1_024,
            max_breakpoints: 4,
        }
    }
}

/// OpenAI's automatic caching: any previously sent prefix of at least
/// `min_tokens` is read, in steps of `granularity` tokens; writes are free.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct OpenAi {
    /// Idle lifetime of a cached prefix in seconds (5 to 10 minutes in memory).
    pub ttl_secs: i64,
    /// Prompts shorter than this are not cached (1,024).
    pub min_tokens: u64,
    /// Hits are counted in multiples of this many tokens past the minimum (128).
    pub granularity: u64,
}

/// Default: 5-minute retention, 1,024-token minimum, 128-token steps.
impl Default for OpenAi {
    fn default() -> Self {
        OpenAi {
            ttl_secs: 300,
            min_tokens: 1_024,
            granularity: 128,
        }
    }
}

/// Google Gemini's implicit caching (on by default since 2025-05-08): like
/// OpenAI's, a previously sent prefix of at least `min_tokens` is read,
/// best effort, and there is no write premium (cache creation is billed at
/// the input price). Explicit caches (`cachedContent`, default TTL 1 h)
/// add storage per token-hour ([`Gemini::storage_dollars`]). Sources:
/// ai.google.dev/gemini-api/docs/caching and the Vertex context-cache
/// overview, as summarised in shared/research/designs-and-prices-2026.md.
///
/// What Google does not document, measured on the 20,163 calls of the
/// shared mini-swe-agent corpus (500 SWE-bench runs of Gemini 3 Pro via
/// OpenRouter, notes/cost.md): a read is a whole number of blocks
/// (`block_tokens`), never the exact prefix.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Gemini {
    /// Idle lifetime of an implicitly cached prefix in seconds; Google
    /// states none (best effort), 5 minutes is assumed like OpenAI's. The
    /// corpus cannot tell: only 8 of its calls came more than 300 s after
    /// the previous call to the same backend (4 still read, the latest
    /// after 605 s), and 300, 600, 900 or 3,600 s move the calls predicted
    /// within 5 % by at most 2 of 20,163.
    pub ttl_secs: i64,
    /// Prompts shorter than this are not cached (Google documents 1,024 on
    /// Flash, 4,096 on Pro; the corpus shows Gemini 3 Pro reading one block
    /// from prompts of 2,121 tokens: see the price data).
    pub min_tokens: u64,
    /// Reads come in whole blocks of this many reported prompt tokens.
    /// 17,744 of the corpus's 17,751 non-zero reads (99.96 %) lie within
    /// 5 % of a multiple of 2,048, at a median 0.985 of it (1st to 99th
    /// percentile 0.961 to 1.017): blocks of 2,048 tokens of Google's own
    /// count, which usage reports about 1.5 % smaller, so 2,017 reported
    /// tokens a block. The read is the whole blocks of the longest live
    /// prefix: 83 % of non-zero reads have exactly as many blocks as the
    /// previous prompt to the same backend holds at 2,017 a block (79 % at 2,048).
    pub block_tokens: u64,
}

/// Default: 5-minute lifetime (an assumption), 1,024-token minimum (Flash),
/// 2,017-token blocks (measured on Gemini 3 Pro, the only model measured).
impl Default for Gemini {
    fn default() -> Self {
        Gemini {
            ttl_secs: 300,
            min_tokens: 1_024,
            block_tokens: 2_017,
        }
    }
}

impl Gemini {
    /// Dollars of keeping `tokens` in an explicit cache for `hours` at
    /// `per_mtok_hour` (the model's `storage_per_mtok_hour`).
    pub fn storage_dollars(tokens: u64, hours: f64, per_mtok_hour: f64) -> f64 {
        tokens as f64 / 1e6 * hours * per_mtok_hour
    }

    /// The same write rule as OpenAI's (every prompt of at least
    /// `min_tokens` is cached), with hits in whole blocks.
    pub fn as_automatic(&self) -> OpenAi {
        OpenAi {
            ttl_secs: self.ttl_secs,
            min_tokens: self.min_tokens,
            granularity: self.block_tokens,
        }
    }

    /// Tokens read for a live common prefix of `lcp` tokens: its whole
    /// blocks, none below the minimum.
    pub fn hit_tokens(&self, lcp: u64) -> u64 {
        if lcp < self.min_tokens {
            return 0;
        }
        let block = self.block_tokens.max(1);
        lcp / block * block
    }
}

/// The provider whose cache is modelled.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Provider {
    /// Explicit breakpoints.
    Anthropic(Anthropic),
    /// Automatic prefix caching.
    OpenAi(OpenAi),
    /// Implicit prefix caching without a write premium.
    Gemini(Gemini),
}

impl Provider {
    /// Short name for report headers.
    pub fn name(&self) -> String {
        match self {
            Provider::Anthropic(a) => format!("anthropic-ttl{}s", a.ttl_secs),
            Provider::OpenAi(o) => format!("openai-ttl{}s", o.ttl_secs),
            Provider::Gemini(g) => format!("gemini-implicit-ttl{}s", g.ttl_secs),
        }
    }

    /// The same provider with a model's cache rule: its minimum cacheable
    /// prefix (1,024 to 4,096 tokens by model on Anthropic).
    pub fn with_min_tokens(self, min_tokens: u64) -> Provider {
        match self {
            Provider::Anthropic(a) => Provider::Anthropic(Anthropic { min_tokens, ..a }),
            Provider::OpenAi(o) => Provider::OpenAi(OpenAi { min_tokens, ..o }),
            Provider::Gemini(g) => Provider::Gemini(Gemini { min_tokens, ..g }),
        }
    }

    /// The provider family's name in price data (`anthropic`, `openai`).
    pub fn family(&self) -> &'static str {
        match self {
            Provider::Anthropic(_) => "anthropic",
            Provider::OpenAi(_) => "openai",
            Provider::Gemini(_) => "google",
        }
    }

    /// Entry lifetime in milliseconds.
    pub fn ttl_ms(&self) -> i64 {
        match self {
            Provider::Anthropic(a) => a.ttl_secs * 1000,
            Provider::OpenAi(o) => o.ttl_secs * 1000,
            Provider::Gemini(g) => g.ttl_secs * 1000,
        }
    }
}

/// The cache models a command line can name (`--cache`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum CacheChoice {
    /// Anthropic, 5-minute TTL.
    #[default]
    Anthropic,
    /// Anthropic, 1-hour TTL.
    Anthropic1h,
    /// OpenAI automatic caching.
    Openai,
    /// Google Gemini implicit caching.
    Gemini,
}

impl CacheChoice {
    /// The provider model with its defaults.
    pub fn provider(self) -> Provider {
        match self {
            CacheChoice::Anthropic => Provider::Anthropic(Anthropic::default()),
            CacheChoice::Anthropic1h => Provider::Anthropic(Anthropic {
                ttl_secs: 3_600,
                ..Anthropic::default()
            }),
            CacheChoice::Openai => Provider::OpenAi(OpenAi::default()),
            CacheChoice::Gemini => Provider::Gemini(Gemini::default()),
        }
    }
}

impl OpenAi {
    /// Tokens billed as a cache hit for a live common prefix of `lcp` tokens.
    pub fn hit_tokens(&self, lcp: u64) -> u64 {
        if lcp < self.min_tokens {
            return 0;
        }
        let step = self.granularity.max(1);
        self.min_tokens + (lcp - self.min_tokens) / step * step
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_hits_start_at_the_minimum_and_grow_in_steps() {
        let o = OpenAi::default();
        assert_eq!(o.hit_tokens(1_023), 0);
        assert_eq!(o.hit_tokens(1_024), 1_024);
        assert_eq!(o.hit_tokens(1_151), 1_024);
        assert_eq!(o.hit_tokens(1_152), 1_152);
    }

    #[test]
    fn gemini_reads_whole_blocks_from_the_minimum() {
        let g = Gemini {
            min_tokens: 2_048,
            ..Gemini::default()
        };
        assert_eq!(g.hit_tokens(2_047), 0);
        assert_eq!(g.hit_tokens(2_048), 2_017);
        assert_eq!(g.hit_tokens(6_130), 6_051);
        assert_eq!(Gemini::default().hit_tokens(1_500), 0);
    }
}
