//! LiteLLM's `model_prices_and_context_window.json` (BerriAI/litellm), the
//! map that LLM cost tools share, read as a [`PriceTable`].
//!
//! Per-token dollars become dollars per million tokens. Rules where the map
//! says nothing (each stated, so a user can check the table it gives):
//! - an entry without both `input_cost_per_token` and
//!   `output_cost_per_token` (images, embeddings, audio, `sample_spec`) is
//!   not a token-priced model and is left out;
//! - no `cache_read_input_token_cost`: reads cost plain input (no discount known);
//! - no `cache_creation_input_token_cost`: writes cost plain input and
//!   `writes_billed` is false; with one, `writes_billed` is whether it exceeds input;
//! - no `cache_creation_input_token_cost_above_1hr`: a 1-hour write costs
//!   2× input on Anthropic (its rule for every model) and the 5-minute
//!   write price elsewhere;
//! - `input_cost_per_token_batches` gives the batch discount, else none;
//! - the `*_above_200k_tokens` prices give a long-context tier above 200k;
//! - the minimum cacheable prefix is the built-in table's for the same
//!   model id, else 1,024 (Anthropic's and OpenAI's smallest documented one);
//! - a key `provider/name` also answers to `name` when no other key is `name`;
//! - the map has no date: the table's date is `undated`.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use serde::Deserialize;

use super::table::{bad_file, opt_non_negative, LongContext, ModelPrice, PriceTable};
use crate::error::LabResult;

/// The fields of one entry the lab reads; the rest are skipped.
#[derive(Deserialize)]
struct Entry {
    #[serde(default, deserialize_with = "opt_non_negative")]
    input_cost_per_token: Option<f64>,
    #[serde(default, deserialize_with = "opt_non_negative")]
    output_cost_per_token: Option<f64>,
    #[serde(default, deserialize_with = "opt_non_negative")]
    cache_creation_input_token_cost: Option<f64>,
    #[serde(default, deserialize_with = "opt_non_negative")]
    cache_creation_input_token_cost_above_1hr: Option<f64>,
    #[serde(default, deserialize_with = "opt_non_negative")]
    cache_read_input_token_cost: Option<f64>,
    #[serde(default, deserialize_with = "opt_non_negative")]
    input_cost_per_token_batches: Option<f64>,
    #[serde(default, deserialize_with = "opt_non_negative")]
    input_cost_per_token_above_200k_tokens: Option<f64>,
    #[serde(default, deserialize_with = "opt_non_negative")]
    output_cost_per_token_above_200k_tokens: Option<f64>,
    #[serde(default, deserialize_with = "opt_non_negative")]
    cache_read_input_token_cost_above_200k_tokens: Option<f64>,
    #[serde(default)]
    litellm_provider: Option<String>,
}

/// Parses LiteLLM's map read from `path`.
pub fn parse(path: &Path, text: &str) -> LabResult<PriceTable> {
    let map: BTreeMap<String, Entry> = serde_json::from_str(text).map_err(|e| {
        bad_file(
            path,
            &e,
            "LiteLLM's map holds one object per model with per-token prices zero or more; repair the entry here",
        )
    })?;
    let builtin = PriceTable::builtin();
    let keys: HashSet<&str> = map.keys().map(String::as_str).collect();
    let origin = path.display().to_string();
    let models = map
        .iter()
        .filter(|(k, _)| k.as_str() != "sample_spec")
        .filter_map(|(k, e)| {
            let mut m = model(k, e, &origin)?;
            if let Some(super::table::Lookup::Priced(known)) = builtin.lookup(k) {
                m.min_cache_tokens = known.min_cache_tokens;
            }
            if let Some((_, bare)) = k.rsplit_once('/') {
                if !keys.contains(bare) {
                    m.aliases.push(bare.to_string());
                }
            }
            Some(m)
        })
        .collect();
    Ok(PriceTable {
        origin,
        date: "undated".to_string(),
        not_models: vec!["<synthetic>".to_string()],
        models,
    })
}

/// One entry as a [`ModelPrice`], if it prices tokens both ways.
fn model(key: &str, e: &Entry, origin: &str) -> Option<ModelPrice> {
    let mtok = |x: f64| x * 1e6;
    let input = mtok(e.input_cost_per_token?);
    let output = mtok(e.output_cost_per_token?);
    let provider = e.litellm_provider.clone().unwrap_or_default();
    let write_5m = e.cache_creation_input_token_cost.map_or(input, mtok);
    let write_1h = match e.cache_creation_input_token_cost_above_1hr {
        Some(x) => mtok(x),
        None if provider == "anthropic" => 2.0 * input,
        None => write_5m,
    };
    let batch = e
        .input_cost_per_token_batches
        .filter(|_| input > 0.0)
        .map_or(0.0, |b| (1.0 - mtok(b) / input).clamp(0.0, 1.0));
    let read = e.cache_read_input_token_cost.map_or(input, mtok);
    let long_context = match (
        e.input_cost_per_token_above_200k_tokens,
        e.output_cost_per_token_above_200k_tokens,
    ) {
        (Some(i), Some(o)) => Some(LongContext {
            above_tokens: 200_000,
            input: mtok(i),
            output: mtok(o),
            cache_read: e
                .cache_read_input_token_cost_above_200k_tokens
                .map_or(mtok(i), mtok),
        }),
        _ => None,
    };
    Some(ModelPrice {
        model: key.to_string(),
        aliases: Vec::new(),
        writes_billed: write_5m > input,
        provider,
        input,
        output,
        cache_write_5m: write_5m,
        cache_write_1h: write_1h,
        cache_read: read,
        batch_discount: batch,
        min_cache_tokens: 1_024,
        long_context,
        storage_per_mtok_hour: None,
        source: format!("LiteLLM map {origin}"),
        date: "undated".to_string(),
    })
}
