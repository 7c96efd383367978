//! A price file in either format: ctxlab's own (it says
//! `"format": "ctxlab-prices/1"`, [`super::table`]) or LiteLLM's map of
//! model names ([`super::litellm`]). Every error names the file, line and
//! column, and a table is never used half-read.

use std::path::Path;

use super::table::{bad_file, input_error, PriceTable};
use crate::error::LabResult;

/// Reads the price file at `path`.
pub fn load(path: &Path) -> LabResult<PriceTable> {
    // The shared reader: a FIFO or device refused, invalid UTF-8 (random
    // bytes) exit 3 with its line and column and a fix.
    let text = crate::input::read_text(path, "a price file")?;
    parse(path, &text)
}

/// Parses `text`, read from `path` (named in errors), in whichever format it is.
pub fn parse(path: &Path, text: &str) -> LabResult<PriceTable> {
    let text = text.trim_start_matches('\u{feff}');
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| bad_file(path, &e, "a price file must be JSON; repair it here"))?;
    if !value.is_object() {
        return Err(input_error(
            path,
            (1, 1),
            "a price file must be a JSON object",
            "use ctxlab's format (see lab/measure/cache/prices/2026-12-04.json) or LiteLLM's model_prices_and_context_window.json",
        ));
    }
    // ctxlab's files say their format; LiteLLM's map is model names only.
    if value.get("format").is_some() {
        PriceTable::parse_own(path, text)
    } else {
        super::litellm::parse(path, text)
    }
}

#[cfg(test)]
mod tests;
