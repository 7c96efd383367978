//! The envelope a product sends, per product and release, as data
//! (`envelope_table.json`): the system prompt's size and the tool
//! definitions' count and size, each with its source and date.
//!
//! Read from wire captures ([`crate::import::claude_trace`]), which hold the
//! request body as sent; a product's own log holds neither. Sizes are in
//! characters, which every tokenizer can count again; the tokens a replay
//! charges for them are the counter's estimate.

use serde::{Deserialize, Serialize};

/// One product release's envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProductEnvelope {
    /// The lab's product name (`claude-code`, `codex-cli`, `opencode`).
    pub product: String,
    /// Its release, as its user-agent names it.
    pub release: String,
    /// Characters of the system prompt's text (Anthropic `system` blocks,
    /// OpenAI `instructions`).
    pub system_chars: usize,
    /// How many blocks the system prompt is sent as.
    pub system_blocks: usize,
    /// Tool definitions sent with every call.
    pub tools: usize,
    /// Characters of the tool definitions as compact JSON.
    pub tool_chars: usize,
    /// Where the numbers come from.
    pub source: String,
    /// When they were read.
    pub date: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    #[allow(dead_code)]
    read: String,
    envelopes: Vec<ProductEnvelope>,
}

const TABLE_JSON: &str = include_str!("envelope_table.json");

/// Every product release in the table, in file order.
pub fn table() -> Vec<ProductEnvelope> {
    // The file is part of the build and tested; a malformed one cannot ship.
    let t: Table = serde_json::from_str(TABLE_JSON).expect("envelope_table.json parses");
    t.envelopes
}

/// The envelope of `product` at `release`, when the table has it.
pub fn of(product: &str, release: &str) -> Option<ProductEnvelope> {
    table()
        .into_iter()
        .find(|e| e.product == product && e.release == release)
}
