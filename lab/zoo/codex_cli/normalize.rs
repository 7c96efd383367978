//! Codex's history normalisation (`ensure_call_outputs_present`,
//! `remove_orphan_outputs`), on Anthropic-shaped messages: a call's output
//! lives in the user message that follows the call's assistant message.

use std::collections::HashSet;

use crate::message::{Block, Content, Message, Role};
use crate::policy::PolicyEvent;

/// The text upstream gives a call that has no output.
pub const ABORTED: &str = "aborted";

/// Give every unanswered call a synthetic `aborted` output right after it.
pub fn ensure_call_outputs_present(history: &mut Vec<Message>, events: &mut Vec<PolicyEvent>) {
    let answered: HashSet<String> = history
        .iter()
        .flat_map(|m| m.tool_result_ids())
        .map(String::from)
        .collect();
    let mut mi = 0;
    while mi < history.len() {
        let calls: Vec<String> = history[mi]
            .tool_use_ids()
            .into_iter()
            .map(String::from)
            .collect();
        let missing: Vec<&String> = calls.iter().filter(|id| !answered.contains(*id)).collect();
        if !missing.is_empty() {
            let next_is_results = history
                .get(mi + 1)
                .is_some_and(|m| m.role == Role::User && matches!(m.content, Content::Blocks(_)));
            if !next_is_results {
                history.insert(mi + 1, Message::user_blocks(Vec::new()));
            }
            for id in missing {
                insert_in_call_order(&mut history[mi + 1], &calls, id);
                events.push(PolicyEvent::Repaired {
                    id: id.clone(),
                    what: format!(
                        "call had no output: synthetic `{ABORTED}` output inserted after it"
                    ),
                });
            }
        }
        mi += 1;
    }
}

/// Put a synthetic result for `id` after the results of the calls before it.
fn insert_in_call_order(results: &mut Message, calls: &[String], id: &str) {
    let rank = calls.iter().position(|c| c == id).unwrap_or(calls.len());
    let Content::Blocks(blocks) = &mut results.content else {
        return;
    };
    let at = blocks
        .iter()
        .position(|b| match b {
            Block::ToolResult { tool_use_id, .. } => {
                calls
                    .iter()
                    .position(|c| c == tool_use_id)
                    .unwrap_or(usize::MAX)
                    > rank
            }
            _ => true,
        })
        .unwrap_or(blocks.len());
    blocks.insert(
        at,
        Block::ToolResult {
            tool_use_id: id.to_string(),
            content: ABORTED.to_string(),
        },
    );
}

/// Drop every output whose call is nowhere in the history; a message left
/// with no content goes too (an output is an item of its own upstream).
pub fn remove_orphan_outputs(history: &mut Vec<Message>, events: &mut Vec<PolicyEvent>) {
    let calls: HashSet<String> = history
        .iter()
        .flat_map(|m| m.tool_use_ids())
        .map(String::from)
        .collect();
    for m in history.iter_mut().filter(|m| m.role == Role::User) {
        if let Content::Blocks(blocks) = &mut m.content {
            blocks.retain(|b| match b {
                Block::ToolResult { tool_use_id, .. } if !calls.contains(tool_use_id) => {
                    events.push(PolicyEvent::Repaired {
                        id: tool_use_id.clone(),
                        what: "orphan output (no call in the history) removed".into(),
                    });
                    false
                }
                _ => true,
            });
        }
    }
    history.retain(|m| {
        !(m.role == Role::User && matches!(&m.content, Content::Blocks(b) if b.is_empty()))
    });
}
