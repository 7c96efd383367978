//! The two API rules on tool pairs, checked on one request. Both the session
//! (to refuse a request the API would reject) and the checker (to count
//! violations) need them, so they live below both.

use crate::message::{Block, Message, Role};

/// Ids of the `tool_use` blocks of an assistant message.
fn uses(m: &Message) -> impl Iterator<Item = &str> {
    let blocks = if m.role == Role::Assistant {
        m.blocks()
    } else {
        &[]
    };
    blocks.iter().filter_map(|b| match b {
        Block::ToolUse { id, .. } => Some(id.as_str()),
        _ => None,
    })
}

/// Ids answered by the `tool_result` blocks of a user message.
fn results(m: &Message) -> impl Iterator<Item = &str> {
    let blocks = if m.role == Role::User {
        m.blocks()
    } else {
        &[]
    };
    blocks.iter().filter_map(|b| match b {
        Block::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
        _ => None,
    })
}

/// Both API rules on one request: every `tool_use` is answered in the next
/// message, and every `tool_result` answers a `tool_use` of the previous one.
///
/// Runs on every request: the neighbour's ids are scanned in place (a
/// message holds a handful of blocks) instead of collected into sets.
pub fn pair_violations(messages: &[Message]) -> Vec<String> {
    let mut out = Vec::new();
    // Whether message i's results answer message i-1's calls one for one,
    // in order: the usual shape, where both directions hold without a
    // search (every request of a run is checked).
    let mut answered_in_order = false;
    for (i, m) in messages.iter().enumerate() {
        let next = messages.get(i + 1);
        let in_order = next.is_some_and(|n| uses(m).eq(results(n)));
        if !in_order {
            for id in uses(m) {
                if !next.is_some_and(|n| results(n).any(|r| r == id)) {
                    out.push(format!("msg {i}: tool_use {id} unanswered"));
                }
            }
        }
        if !answered_in_order {
            let prev = i.checked_sub(1).map(|p| &messages[p]);
            for id in results(m) {
                if !prev.is_some_and(|p| uses(p).any(|u| u == id)) {
                    out.push(format!("msg {i}: tool_result {id} without its tool_use"));
                }
            }
        }
        answered_in_order = in_order;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    /// The rules as first written, with sets of the neighbour's ids.
    fn by_sets(messages: &[Message]) -> Vec<String> {
        let mut out = Vec::new();
        for (i, m) in messages.iter().enumerate() {
            if m.role == Role::Assistant {
                let answered: BTreeSet<&str> = messages
                    .get(i + 1)
                    .map(|n| n.tool_result_ids().into_iter().collect())
                    .unwrap_or_default();
                for id in m.tool_use_ids() {
                    if !answered.contains(id) {
                        out.push(format!("msg {i}: tool_use {id} unanswered"));
                    }
                }
            }
            if m.role == Role::User {
                let calls: BTreeSet<&str> = match i.checked_sub(1).map(|p| &messages[p]) {
                    Some(p) => p.tool_use_ids().into_iter().collect(),
                    None => BTreeSet::new(),
                };
                for id in m.tool_result_ids() {
                    if !calls.contains(id) {
                        out.push(format!("msg {i}: tool_result {id} without its tool_use"));
                    }
                }
            }
        }
        out
    }

    fn message() -> impl Strategy<Value = Message> {
        let id = "[abc]";
        let block = prop_oneof![
            id.prop_map(|id| Block::ToolUse {
                id,
                name: "bash".into(),
                input: serde_json::json!({}).into(),
            }),
            id.prop_map(|id| Block::ToolResult {
                tool_use_id: id,
                content: "x".into(),
            }),
            Just(Block::Text { text: "t".into() }),
        ];
        (any::<bool>(), proptest::collection::vec(block, 0..4)).prop_map(|(user, blocks)| {
            let mut m = Message::assistant(blocks);
            if user {
                m.role = Role::User;
            }
            m
        })
    }

    proptest! {
        // More cases than the default: the in-order shortcut must agree on
        // every mix of answered, reordered, doubled and missing results.
        #![proptest_config(ProptestConfig::with_cases(2048))]
        #[test]
        fn in_place_scan_equals_the_set_version(
            messages in proptest::collection::vec(message(), 0..6)
        ) {
            prop_assert_eq!(pair_violations(&messages), by_sets(&messages));
        }
    }
}
