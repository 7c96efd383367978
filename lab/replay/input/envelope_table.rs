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
    /// The Claude estimator's tokens of the system text and the tools'
    /// compact JSON as captured (an estimate, not a count the API gave;
    /// `tests/replay/wire_envelopes.rs` counts the capture again), for the
    /// products whose replay counts with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claude_tokens: Option<usize>,
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

/// The table's release of `product` nearest to `version` (the release that
/// wrote a log): the same release, else the closest by (major, minor,
/// patch); `None` when the table has no release of the product.
pub fn nearest(product: &str, version: Option<&str>) -> Option<ProductEnvelope> {
    let want = version.and_then(release_key);
    table()
        .into_iter()
        .filter(|e| e.product == product)
        .min_by_key(|e| match (want, release_key(&e.release)) {
            (Some(w), Some(r)) => distance(w, r),
            // An unreadable release is farthest; the table's order breaks ties.
            _ => u64::MAX,
        })
}

/// `major.minor.patch` as numbers (a missing part is 0).
fn release_key(v: &str) -> Option<(u64, u64, u64)> {
    let mut parts = v.trim().split('.').map(|p| {
        p.chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse::<u64>()
            .ok()
    });
    let major = parts.next().flatten()?;
    let minor = parts.next().flatten().unwrap_or(0);
    let patch = parts.next().flatten().unwrap_or(0);
    Some((major, minor, patch))
}

/// How far apart two releases are: a major release outweighs any minor,
/// a minor any patch.
fn distance(a: (u64, u64, u64), b: (u64, u64, u64)) -> u64 {
    let key = |(x, y, z): (u64, u64, u64)| x.min(999) * 1_000_000 + y.min(999) * 1_000 + z.min(999);
    key(a).abs_diff(key(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_release_is_by_major_then_minor_then_patch() {
        assert_eq!(release_key("2.0.5"), Some((2, 0, 5)));
        assert_eq!(release_key("2.1"), Some((2, 1, 0)));
        assert_eq!(release_key("x"), None);
        assert!(distance((2, 0, 5), (2, 1, 153)) < distance((2, 0, 5), (1, 0, 0)));
        assert!(distance((2, 1, 0), (2, 1, 153)) < distance((2, 1, 0), (2, 3, 0)));
        let cc = nearest("claude-code", Some("2.0.5")).unwrap();
        assert_eq!(cc.product, "claude-code");
        assert_eq!(
            nearest("claude-code", Some("not a release"))
                .unwrap()
                .product,
            "claude-code"
        );
        assert!(nearest("no-such-product", Some("1.0.0")).is_none());
    }
}
