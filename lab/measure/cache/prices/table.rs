//! Prices as data: one dated entry per model (input, output, cache writes
//! with a 5-minute and a 1-hour lifetime, cache reads, batch discount) with
//! that model's cache rules (minimum cacheable prefix, whether writes carry
//! a premium). The lab's own table is the data file beside this module,
//! built into the binary; `--prices FILE` reads another one, in this format
//! or as LiteLLM's `model_prices_and_context_window.json` ([`super::file`]).
//!
//! A price file is checked while it is parsed, so every error (not JSON, a
//! missing field, a negative price) names the file, line and column; a
//! table is never used half-read.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{LabError, LabResult};

/// Where the built-in table lives in the repository (its name is its date).
pub const BUILTIN_PATH: &str = "lab/measure/cache/prices/2026-12-04.json";
const BUILTIN: &str = include_str!("2026-12-04.json");
/// The `format` value of ctxlab's own price files.
pub const FORMAT: &str = "ctxlab-prices/1";

/// The higher tier a provider bills for every token of a request whose
/// prompt exceeds `above_tokens` (Gemini Pro above 200k).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LongContext {
    /// Prompt tokens above which the tier applies.
    pub above_tokens: u64,
    /// Dollars per million uncached input tokens.
    #[serde(deserialize_with = "non_negative")]
    pub input: f64,
    /// Dollars per million output tokens.
    #[serde(deserialize_with = "non_negative")]
    pub output: f64,
    /// Dollars per million tokens read from the cache.
    #[serde(deserialize_with = "non_negative")]
    pub cache_read: f64,
}

/// One model's list prices, in dollars per million tokens, and cache rules.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    /// The model id as the API reports it (`message.model`).
    pub model: String,
    /// Other ids of the same model (a dated id's alias, a provider prefix).
    #[serde(default)]
    pub aliases: Vec<String>,
    /// `anthropic`, `openai`, `google`, or LiteLLM's provider name.
    pub provider: String,
    /// Uncached input.
    #[serde(deserialize_with = "non_negative")]
    pub input: f64,
    /// Output (generated) tokens.
    #[serde(deserialize_with = "non_negative")]
    pub output: f64,
    /// Tokens written to the cache with a 5-minute lifetime.
    #[serde(deserialize_with = "non_negative")]
    pub cache_write_5m: f64,
    /// Tokens written to the cache with a 1-hour lifetime.
    #[serde(deserialize_with = "non_negative")]
    pub cache_write_1h: f64,
    /// Tokens read from the cache.
    #[serde(deserialize_with = "non_negative")]
    pub cache_read: f64,
    /// Fraction of every price the batch API takes off (0 to 1).
    #[serde(deserialize_with = "fraction")]
    pub batch_discount: f64,
    /// A prefix shorter than this is never cached.
    pub min_cache_tokens: u64,
    /// Whether a cache write costs more than plain input; when not, a written
    /// token is billed as input (OpenAI before GPT-5.6, Gemini implicit caching).
    pub writes_billed: bool,
    /// A higher tier for long prompts, if the provider has one.
    #[serde(default)]
    pub long_context: Option<LongContext>,
    /// Explicit-cache storage, dollars per million tokens per hour (Gemini).
    #[serde(default, deserialize_with = "opt_non_negative")]
    pub storage_per_mtok_hour: Option<f64>,
    /// Where the figures were read.
    pub source: String,
    /// When they were read (YYYY-MM-DD).
    pub date: String,
}

/// The tokens of one request, split the way they are billed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tokens {
    /// Uncached input.
    pub uncached: u64,
    /// Written to the cache with a 5-minute lifetime.
    pub write_5m: u64,
    /// Written with a 1-hour lifetime.
    pub write_1h: u64,
    /// Read from the cache.
    pub read: u64,
    /// Generated.
    pub output: u64,
}

impl Tokens {
    /// Every prompt token (what a long-context tier is judged on).
    pub fn prompt(&self) -> u64 {
        [self.uncached, self.write_5m, self.write_1h, self.read]
            .iter()
            .fold(0u64, |a, &b| a.saturating_add(b))
    }
}

/// Dollars of one request: the prompt side and the output side apart, so a
/// replayed arm (prompt only) stays comparable with a recorded one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Bill {
    /// Uncached input, cache writes and cache reads.
    pub input_side: f64,
    /// Generated tokens.
    pub output: f64,
}

impl ModelPrice {
    /// What `t` costs at this model's list prices (no batch discount).
    pub fn bill(&self, t: &Tokens) -> Bill {
        let mut input = self.input;
        let (mut output, mut read) = (self.output, self.cache_read);
        // Writes scale with input: a long-context tier raises them alike.
        let mut write_scale = 1.0;
        if let Some(lc) = self.long_context.filter(|lc| t.prompt() > lc.above_tokens) {
            write_scale = if self.input > 0.0 {
                lc.input / self.input
            } else {
                1.0
            };
            (input, output, read) = (lc.input, lc.output, lc.cache_read);
        }
        let per = |n: u64, price: f64| n as f64 * price / 1e6;
        Bill {
            input_side: per(t.uncached, input)
                + per(t.write_5m, self.cache_write_5m * write_scale)
                + per(t.write_1h, self.cache_write_1h * write_scale)
                + per(t.read, read),
            output: per(t.output, output),
        }
    }

    /// Cache-read price as a multiple of input (0.1 for most models).
    pub fn read_mult(&self) -> f64 {
        ratio(self.cache_read, self.input)
    }

    /// 5-minute write price as a multiple of input (1.25 on Anthropic, 1 where writes are free).
    pub fn write_mult(&self) -> f64 {
        ratio(self.cache_write_5m, self.input)
    }

    /// Whether `id` names this model.
    pub fn answers_to(&self, id: &str) -> bool {
        self.model == id || self.aliases.iter().any(|a| a == id)
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// A dated set of model prices.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PriceTable {
    /// Where it was read: the built-in data file's path or the `--prices` file.
    pub origin: String,
    /// When the prices were read off (`undated` for LiteLLM's map, which has no date).
    pub date: String,
    /// Ids that name no model and cost nothing (Claude Code's `<synthetic>`).
    pub not_models: Vec<String>,
    /// The entries.
    pub models: Vec<ModelPrice>,
}

/// The layout of ctxlab's own price file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PriceFile {
    format: String,
    date: String,
    #[serde(default)]
    #[allow(dead_code)]
    unit: String,
    #[serde(default)]
    #[allow(dead_code)]
    notes: Vec<String>,
    #[serde(default)]
    not_models: Vec<String>,
    models: Vec<ModelPrice>,
}

/// What looking a model up found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Lookup<'a> {
    /// A priced model.
    Priced(&'a ModelPrice),
    /// An id that names no model (zero dollars).
    NotAModel,
}

impl PriceTable {
    /// The lab's own table, from the data file built into the binary.
    pub fn builtin() -> Arc<PriceTable> {
        static TABLE: OnceLock<Arc<PriceTable>> = OnceLock::new();
        TABLE
            .get_or_init(|| {
                let t = PriceTable::parse_own(Path::new(BUILTIN_PATH), BUILTIN);
                Arc::new(t.expect("the built-in price file parses (tested)"))
            })
            .clone()
    }

    /// Parses `text`, read from `path` (named in errors), in ctxlab's own
    /// format; [`super::file::parse`] tells the two formats apart.
    pub fn parse_own(path: &Path, text: &str) -> LabResult<PriceTable> {
        let text = text.trim_start_matches('\u{feff}');
        let file: PriceFile = serde_json::from_str(text).map_err(|e| {
            bad_file(
                path,
                &e,
                "every model needs model, provider, input, output, cache_write_5m, cache_write_1h, cache_read, batch_discount, min_cache_tokens, writes_billed, source and date, prices zero or more (see lab/measure/cache/prices/2026-12-04.json)",
            )
        })?;
        if file.format != FORMAT {
            return Err(input_error(
                path,
                (0, 0),
                &format!("unknown price-file format `{}`", file.format),
                &format!("set \"format\": \"{FORMAT}\""),
            ));
        }
        Ok(PriceTable {
            origin: path.display().to_string(),
            date: file.date,
            not_models: file.not_models,
            models: file.models,
        })
    }

    /// The entry for `model`, or the note that it names no model.
    pub fn lookup(&self, model: &str) -> Option<Lookup<'_>> {
        if self.not_models.iter().any(|m| m == model) {
            return Some(Lookup::NotAModel);
        }
        let find = |id: &str| self.models.iter().find(|m| m.answers_to(id));
        // A router names a provider's model `provider/model` (OpenRouter's
        // `google/gemini-3-pro-preview`, LiteLLM's `gemini/…`): the model
        // after the last `/` is the one priced, unless the table names the
        // routed id itself.
        let routed = || model.rsplit_once('/').and_then(|(_, m)| find(m));
        find(model).or_else(routed).map(Lookup::Priced)
    }

    /// [`PriceTable::lookup`], or a usage error naming the model, the
    /// transcript that asked for it (`source`) and the fix.
    pub fn require(&self, model: &str, source: &str) -> LabResult<Lookup<'_>> {
        self.lookup(model).ok_or_else(|| {
            LabError::usage(
                format!(
                    "{source}: no price for model `{model}` in {} (prices of {})",
                    self.origin, self.date
                ),
                "pass --prices FILE with an entry for it (ctxlab's format, see lab/measure/cache/prices/2026-12-04.json, or LiteLLM's model_prices_and_context_window.json)",
            )
        })
    }

    /// One line naming the table: origin and date.
    pub fn label(&self) -> String {
        format!("{} as of {}", self.origin, self.date)
    }
}

/// Serialises a shared table as its origin and date only (a run's options
/// name the prices; the entries are in the file).
pub fn serialize_summary<S: Serializer>(t: &Arc<PriceTable>, s: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Summary<'a> {
        origin: &'a str,
        date: &'a str,
        models: usize,
    }
    Summary {
        origin: &t.origin,
        date: &t.date,
        models: t.models.len(),
    }
    .serialize(s)
}

pub(super) fn input_error(path: &Path, at: (usize, usize), message: &str, fix: &str) -> LabError {
    LabError::Input {
        file: path.to_path_buf(),
        line: at.0,
        column: at.1,
        message: message.to_string(),
        fix: fix.to_string(),
    }
}

pub(super) fn bad_file(path: &Path, e: &serde_json::Error, fix: &str) -> LabError {
    // The position is in the error's own place (file:line:column), not repeated.
    let text = e.to_string();
    let at = format!(" at line {} column {}", e.line(), e.column());
    let message = text.strip_suffix(&at).unwrap_or(&text);
    input_error(
        path,
        (e.line(), e.column()),
        &format!("bad price file: {message}"),
        fix,
    )
}

/// A price: finite and zero or more. Refused while parsing, so the error
/// carries the line and column.
pub(super) fn non_negative<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let v = f64::deserialize(d)?;
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(serde::de::Error::custom(format!(
            "price {v} is negative; a price is zero or more"
        )))
    }
}

/// [`non_negative`] for an optional field.
pub(super) fn opt_non_negative<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    #[derive(Deserialize)]
    struct P(#[serde(deserialize_with = "non_negative")] f64);
    Ok(Option::<P>::deserialize(d)?.map(|p| p.0))
}

fn fraction<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let v = non_negative(d)?;
    if v <= 1.0 {
        Ok(v)
    } else {
        Err(serde::de::Error::custom(format!(
            "batch_discount {v} is above 1; it is the fraction taken off (0.5 = half price)"
        )))
    }
}
