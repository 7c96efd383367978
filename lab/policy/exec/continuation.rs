//! Whether an external policy's messages continue the history it was given.
//!
//! A policy may edit a message (clear or shorten a result, drop blocks),
//! drop messages, and put a summary in place of some; it may not invent a
//! tool call or result, or move messages. The check walks the new list once
//! against the old one and takes every message it can as an edit, so a
//! design that only edits and drops is never refused:
//! - a message carrying tool ids matches the next old message whose ids
//!   include all of its own; ids found only further back mean it moved,
//!   ids found nowhere mean it was invented (unless a `repaired` event names
//!   each one: a synthetic result for a dangling call);
//! - a message without tool ids matches the next equal old message, else the
//!   next old message of the same role (an edit); when none is left it is
//!   new, which a `summarised` or `repaired` event must account for.

use crate::message::{Block, Message};
use crate::PolicyEvent;

/// Why a list is not a continuation: the 0-based index of the offending
/// message in the new list and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Index in the new list.
    pub index: usize,
    /// A sentence.
    pub what: String,
}

/// Check `new` against `old` with the answer's `events`.
pub fn check(old: &[Message], new: &[Message], events: &[PolicyEvent]) -> Result<(), Violation> {
    let repaired: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            PolicyEvent::Repaired { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    let mut allowance = events
        .iter()
        .filter(|e| matches!(e, PolicyEvent::Summarised { .. }))
        .count()
        + repaired.len();
    let mut next = 0;
    for (index, m) in new.iter().enumerate() {
        let ids = ids_of(m);
        let step = if ids.is_empty() {
            match_text(old, next, m)
        } else {
            match_ids(old, next, &ids, &repaired).map_err(|what| Violation { index, what })?
        };
        match step {
            Some(k) => next = k + 1,
            None if allowance > 0 => allowance -= 1,
            None => {
                return Err(Violation {
                    index,
                    what: format!(
                        "is a new {} message that no `summarised` or `repaired` event accounts for",
                        role_name(m)
                    ),
                })
            }
        }
    }
    Ok(())
}

/// The tool ids a message carries: calls and results apart, so that a
/// result never passes for an edit of its call.
fn ids_of(m: &Message) -> Vec<(bool, &str)> {
    m.blocks()
        .iter()
        .filter_map(|b| match b {
            Block::ToolUse { id, .. } => Some((true, id.as_str())),
            Block::ToolResult { tool_use_id, .. } => Some((false, tool_use_id.as_str())),
            _ => None,
        })
        .collect()
}

/// The old index a message with tool ids edits; `Ok(None)` for a message
/// every id of which a `repaired` event names.
fn match_ids(
    old: &[Message],
    from: usize,
    ids: &[(bool, &str)],
    repaired: &[&str],
) -> Result<Option<usize>, String> {
    let holds = |o: &Message| {
        let have = ids_of(o);
        ids.iter().all(|id| have.contains(id))
    };
    if let Some(k) = (from..old.len()).find(|&k| holds(&old[k])) {
        return Ok(Some(k));
    }
    if ids.iter().all(|(_, id)| repaired.contains(id)) {
        return Ok(None);
    }
    if let Some(k) = (0..from.min(old.len())).find(|&k| holds(&old[k])) {
        return Err(format!(
            "carries tool id `{}` of history message {k}, which an earlier message already followed: messages were reordered",
            ids[0].1
        ));
    }
    let unknown = ids
        .iter()
        .find(|id| !old.iter().any(|o| ids_of(o).contains(id)))
        .unwrap_or(&ids[0]);
    let (kind, id) = unknown;
    let kind = if *kind { "call" } else { "result" };
    Err(format!(
        "carries a tool {kind} `{id}` that no message of the history has: it was invented"
    ))
}

/// The old index a message without tool ids edits, if any is left.
fn match_text(old: &[Message], from: usize, m: &Message) -> Option<usize> {
    let rest = from.min(old.len())..old.len();
    rest.clone()
        .find(|&k| old[k] == *m)
        .or_else(|| rest.into_iter().find(|&k| old[k].role == m.role))
}

fn role_name(m: &Message) -> &'static str {
    match m.role {
        crate::message::Role::User => "user",
        crate::message::Role::Assistant => "assistant",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str) -> Message {
        Message::assistant(vec![Block::ToolUse {
            id: id.into(),
            name: "bash".into(),
            input: serde_json::json!({}).into(),
        }])
    }

    fn result(id: &str, text: &str) -> Message {
        Message::tool_results(vec![(id.to_string(), text.to_string())])
    }

    fn history() -> Vec<Message> {
        vec![
            Message::user_text("task"),
            call("a"),
            result("a", "long output"),
            call("b"),
            result("b", "more output"),
        ]
    }

    #[test]
    fn edits_drops_and_a_summary_with_its_event_continue() {
        let old = history();
        let mut cleared = old.clone();
        cleared[2] = result("a", "[cleared]");
        assert_eq!(check(&old, &cleared, &[]), Ok(()));
        assert_eq!(check(&old, &old[3..], &[]), Ok(()));
        let summary = [vec![Message::user_text("summary")], old[3..].to_vec()].concat();
        assert_eq!(check(&old, &summary, &[]), Ok(()), "an edit of the task");
    }

    #[test]
    fn invented_and_reordered_messages_are_named_by_index() {
        let old = history();
        let mut invented = old.clone();
        invented.insert(3, call("zz"));
        let v = check(&old, &invented, &[]).unwrap_err();
        assert_eq!(v.index, 3);
        assert!(
            v.what.contains("call `zz`") && v.what.contains("invented"),
            "{v:?}"
        );
        let reordered = vec![
            old[0].clone(),
            old[3].clone(),
            old[4].clone(),
            old[1].clone(),
        ];
        let v = check(&old, &reordered, &[]).unwrap_err();
        assert_eq!(v.index, 3);
        assert!(v.what.contains("reordered"), "{v:?}");
        let extra = [
            old.clone(),
            vec![Message::assistant(vec![Block::Text {
                text: "made up".into(),
            }])],
        ]
        .concat();
        let v = check(&old, &extra, &[]).unwrap_err();
        assert_eq!(v.index, 5);
        let summarised = PolicyEvent::Summarised {
            replaced: 0,
            kept: 5,
            archive: None,
        };
        assert_eq!(check(&old, &extra, &[summarised]), Ok(()));
    }

    #[test]
    fn a_repaired_event_accounts_for_a_synthetic_result() {
        let old = history()[..4].to_vec();
        let repaired = [old.clone(), vec![result("b", "interrupted")]].concat();
        let v = check(&old, &repaired, &[]).unwrap_err();
        assert!(
            v.what.contains("result `b`"),
            "a result is no edit of its call: {v:?}"
        );
        let event = PolicyEvent::Repaired {
            id: "b".into(),
            what: "synthetic result".into(),
        };
        assert!(check(&old, &repaired, &[event]).is_ok());
    }
}
