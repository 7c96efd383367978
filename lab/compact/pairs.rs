//! The two API rules on tool pairs, checked on one request. Both the session
//! (to refuse a request the API would reject) and the checker (to count
//! violations) need them, so they live below both.

use std::collections::BTreeSet;

use crate::message::{Message, Role};

/// Both API rules on one request: every `tool_use` is answered in the next
/// message, and every `tool_result` answers a `tool_use` of the previous one.
pub fn pair_violations(messages: &[Message]) -> Vec<String> {
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
