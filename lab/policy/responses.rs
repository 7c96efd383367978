//! OpenAI Responses API input-item rules: would `POST /responses` accept
//! this `input`?
//!
//! **Mapping.** A lab history is the Anthropic message model; a Responses
//! `input` is a flat list of items (`message`, `reasoning`, `function_call`,
//! `function_call_output`, `compaction`: `ResponseInputItemParam` in
//! openai/openai-python `src/openai/types/responses/`). Each message becomes
//! items in block order, the inverse of what the Codex rollout importer
//! (`lab/import/codex.rs`) does with a rollout's response items: a thinking block is a `reasoning` item, a `tool_use` a
//! `function_call` (its id the `call_id`), a `tool_result` a
//! `function_call_output`, a run of text or image blocks one `message` of
//! the sender's role, and a user message whose text starts with
//! [`COMPACTION_PREFIX`] a `compaction` item (the lab's stand-in for the
//! opaque item the server returns; the rest of the text is its
//! `encrypted_content`).
//!
//! **Rules**, each with the evidence that the API rejects it:
//! - `orphan_function_call_output`: a `function_call_output` whose `call_id`
//!   no earlier `function_call` has. The API answers 400 "No tool call found
//!   for function call output with call_id …" (`param: input`; quoted in
//!   continuedev/continue and microsoft/vscode bug reports against
//!   api.openai.com); Codex drops such outputs before sending
//!   (openai/codex `codex-rs/core/src/context_manager/normalize.rs`,
//!   `remove_orphan_outputs`).
//! - `missing_function_call_output`: a `function_call` no later
//!   `function_call_output` answers. The API answers 400 "No tool output
//!   found for function call …" (quoted in openai/openai-support-agent-demo's
//!   bug reports); Codex inserts an `aborted` output for such calls
//!   (`ensure_call_outputs_present`, same file).
//! - `reasoning_without_following_item`: a `reasoning` item not followed by
//!   the assistant `message` or `function_call` it was produced with. The API
//!   answers 400 "Item 'rs_…' of type 'reasoning' was provided without its
//!   required following item." (quoted from api.openai.com in
//!   continuedev/continue and openai/openai-agents-js bug reports).
//! - `empty_compaction`: a `compaction` item without `encrypted_content`, a
//!   required field (`ResponseCompactionItemParamParam`, openai/openai-python
//!   `response_compaction_item_param_param.py`).
//! - `output_across_compaction`: a `function_call_output` after the latest
//!   `compaction` item answering a `function_call` before it. OpenAI's
//!   compaction guide (developers.openai.com/api/docs/guides/compaction, read
//!   2026-12-05) says the server "prunes context" at a compaction and that
//!   items before the most recent compaction item may be dropped; once they
//!   are, the output is an orphan. Derived from the guide, not an observed
//!   error message.
//!
//! **Not a rule.** The API pairs an output with its call by `call_id`, not by
//! position: no source shows it rejecting a user message between a call and
//! its output (Codex pairs by `call_id` anywhere in the list; the one
//! positional rejection on record is a DeepSeek-compatible server), so the
//! lab does not flag it. The Chat rules of [`super::validity`] still do.

use std::collections::{BTreeMap, BTreeSet};

use super::validity::{Kind, Provider, Violation};
use crate::message::{Block, Content, Message, Role};

/// The first line of a lab message that stands for a Responses `compaction`
/// item; the text after it is the item's `encrypted_content` stand-in.
pub const COMPACTION_PREFIX: &str =
    "[compaction item: encrypted_content, opaque to the client; the lab's stand-in follows]\n";

/// A `compaction` item holding `content` as its stand-in `encrypted_content`.
pub fn compaction_message(content: &str) -> Message {
    Message::user_text(format!("{COMPACTION_PREFIX}{content}"))
}

/// The stand-in `encrypted_content` of `m` when it is a compaction item.
pub fn compaction_content(m: &Message) -> Option<&str> {
    match (&m.role, &m.content) {
        (Role::User, Content::Text(t)) => t.strip_prefix(COMPACTION_PREFIX),
        _ => None,
    }
}

/// One Responses input item, as far as the rules need it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item<'a> {
    /// A `message` from this role.
    Message(Role),
    /// A `reasoning` item.
    Reasoning,
    /// A `function_call` and its `call_id`.
    FunctionCall(&'a str),
    /// A `function_call_output` and its `call_id`.
    FunctionCallOutput(&'a str),
    /// A `compaction` item; `true` when it has `encrypted_content`.
    Compaction(bool),
}

/// The request as Responses input items, each with the index of the
/// message it comes from.
pub fn items(messages: &[Message]) -> Vec<(usize, Item<'_>)> {
    let mut out = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        if let Some(content) = compaction_content(m) {
            out.push((i, Item::Compaction(!content.trim().is_empty())));
            continue;
        }
        let blocks = match &m.content {
            Content::Text(_) => {
                out.push((i, Item::Message(m.role)));
                continue;
            }
            Content::Blocks(b) => b,
        };
        let mut in_message = false;
        for b in blocks {
            let item = match b {
                Block::Thinking { .. } => Item::Reasoning,
                Block::ToolUse { id, .. } => Item::FunctionCall(id),
                Block::ToolResult { tool_use_id, .. } => Item::FunctionCallOutput(tool_use_id),
                Block::Text { .. } | Block::Image { .. } | Block::Unlogged { .. } => {
                    // A run of content blocks is one message item.
                    if !in_message {
                        out.push((i, Item::Message(m.role)));
                    }
                    in_message = true;
                    continue;
                }
            };
            in_message = false;
            out.push((i, item));
        }
    }
    out
}

/// Every violation of the Responses input-item rules (see the module doc).
pub fn check(messages: &[Message]) -> Vec<Violation> {
    let items = items(messages);
    let mut out = Vec::new();
    let mut push = |kind, message, id: &str| {
        out.push(Violation {
            provider: Provider::OpenAiResponses,
            kind,
            message,
            id: id.to_string(),
        })
    };
    let last_compaction = items
        .iter()
        .rposition(|(_, it)| matches!(it, Item::Compaction(_)));
    let mut calls: BTreeMap<&str, usize> = BTreeMap::new();
    for (pos, &(msg, item)) in items.iter().enumerate() {
        match item {
            Item::FunctionCall(id) => {
                calls.entry(id).or_insert(pos);
            }
            Item::FunctionCallOutput(id) => match calls.get(id) {
                None => push(Kind::OrphanFunctionCallOutput, msg, id),
                Some(&call) if last_compaction.is_some_and(|c| call < c && c < pos) => {
                    push(Kind::OutputAcrossCompaction, msg, id)
                }
                Some(_) => {}
            },
            Item::Reasoning if !followed_by_its_item(&items[pos + 1..]) => {
                push(Kind::ReasoningWithoutFollowingItem, msg, "reasoning")
            }
            Item::Compaction(false) => push(Kind::EmptyCompaction, msg, "compaction"),
            _ => {}
        }
    }
    for (msg, id) in unanswered_calls(&items) {
        push(Kind::MissingFunctionCallOutput, msg, id);
    }
    out
}

/// Whether the items after a `reasoning` item start (past further reasoning
/// items of the same output) with the assistant message or function call
/// it was produced with.
fn followed_by_its_item(rest: &[(usize, Item<'_>)]) -> bool {
    matches!(
        rest.iter()
            .map(|(_, it)| *it)
            .find(|it| *it != Item::Reasoning),
        Some(Item::Message(Role::Assistant) | Item::FunctionCall(_))
    )
}

/// The `function_call`s no later `function_call_output` answers, in order.
fn unanswered_calls<'a>(items: &[(usize, Item<'a>)]) -> Vec<(usize, &'a str)> {
    let mut answered: BTreeSet<&str> = BTreeSet::new();
    let mut out = Vec::new();
    for &(msg, item) in items.iter().rev() {
        match item {
            Item::FunctionCallOutput(id) => {
                answered.insert(id);
            }
            Item::FunctionCall(id) if !answered.contains(id) => out.push((msg, id)),
            _ => {}
        }
    }
    out.reverse();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn user(t: &str) -> Message {
        Message::user_text(t)
    }
    fn call(id: &str) -> Block {
        Block::ToolUse {
            id: id.into(),
            name: "shell".into(),
            input: json!({"command": ["ls"]}).into(),
        }
    }
    fn think(t: &str) -> Block {
        Block::Thinking { thinking: t.into() }
    }
    fn text(t: &str) -> Block {
        Block::Text { text: t.into() }
    }
    fn output(id: &str) -> Message {
        Message::tool_results(vec![(id.into(), "ok".into())])
    }
    /// The rules broken, as (kind, message, id).
    fn broken(h: &[Message]) -> Vec<(Kind, usize, String)> {
        check(h)
            .into_iter()
            .inspect(|v| assert_eq!(v.provider, Provider::OpenAiResponses))
            .map(|v| (v.kind, v.message, v.id))
            .collect()
    }

    /// A Codex-shaped turn: reasoning, two parallel calls, their outputs,
    /// reasoning and a final message, then a compaction and a new turn.
    fn valid() -> Vec<Message> {
        vec![
            user("fix the test"),
            Message::assistant(vec![think("plan"), call("call_a"), call("call_b")]),
            Message::tool_results(vec![
                ("call_a".into(), "1".into()),
                ("call_b".into(), "2".into()),
            ]),
            Message::assistant(vec![think("done?"), text("fixed")]),
            compaction_message("user: fix the test"),
            Message::assistant(vec![call("call_c")]),
            output("call_c"),
        ]
    }

    #[test]
    fn a_valid_history_maps_to_items_and_breaks_no_rule() {
        let h = valid();
        let kinds: Vec<Item> = items(&h).into_iter().map(|(_, it)| it).collect();
        assert_eq!(
            kinds,
            vec![
                Item::Message(Role::User),
                Item::Reasoning,
                Item::FunctionCall("call_a"),
                Item::FunctionCall("call_b"),
                Item::FunctionCallOutput("call_a"),
                Item::FunctionCallOutput("call_b"),
                Item::Reasoning,
                Item::Message(Role::Assistant),
                Item::Compaction(true),
                Item::FunctionCall("call_c"),
                Item::FunctionCallOutput("call_c"),
            ]
        );
        assert_eq!(broken(&h), vec![]);
        // The validity oracle's Chat and Anthropic rules accept it too.
        assert_eq!(super::super::validity::check(&h), vec![]);
    }

    #[test]
    fn an_output_without_an_earlier_call_is_an_orphan() {
        let h = vec![user("go"), output("call_x")];
        assert_eq!(
            broken(&h),
            vec![(Kind::OrphanFunctionCallOutput, 1, "call_x".into())]
        );
        // Its call after it does not help: the output names no earlier call.
        let h = vec![
            user("go"),
            output("call_x"),
            Message::assistant(vec![call("call_x")]),
        ];
        assert_eq!(
            broken(&h),
            vec![
                (Kind::OrphanFunctionCallOutput, 1, "call_x".into()),
                (Kind::MissingFunctionCallOutput, 2, "call_x".into()),
            ]
        );
    }

    #[test]
    fn a_call_no_output_answers_is_missing_its_output() {
        let h = vec![
            user("go"),
            Message::assistant(vec![call("call_a"), call("call_b")]),
            output("call_a"),
        ];
        assert_eq!(
            broken(&h),
            vec![(Kind::MissingFunctionCallOutput, 1, "call_b".into())]
        );
    }

    #[test]
    fn a_user_message_between_a_call_and_its_output_is_accepted() {
        // Paired by call_id, not position (see the module doc), while the
        // Chat rules call it interleaved.
        let h = vec![
            user("go"),
            Message::assistant(vec![call("call_a")]),
            user("also this"),
            output("call_a"),
        ];
        assert_eq!(broken(&h), vec![]);
        assert!(super::super::validity::openai(&h)
            .iter()
            .any(|v| v.kind == Kind::InterleavedMessage));
    }

    #[test]
    fn reasoning_needs_its_following_item() {
        for (h, at) in [
            // Reasoning then the next user message: the reply was cut off.
            (
                vec![user("go"), Message::assistant(vec![think("hm")]), user("?")],
                1,
            ),
            // Reasoning last in the input.
            (vec![user("go"), Message::assistant(vec![think("hm")])], 1),
            // Reasoning after the calls it came with.
            (
                vec![
                    user("go"),
                    Message::assistant(vec![call("call_a"), think("hm")]),
                    output("call_a"),
                ],
                1,
            ),
        ] {
            assert_eq!(
                broken(&h),
                vec![(Kind::ReasoningWithoutFollowingItem, at, "reasoning".into())],
                "{h:?}"
            );
        }
        // Two reasoning items then a message (split over two lab messages).
        let h = vec![
            user("go"),
            Message::assistant(vec![think("a"), think("b")]),
            Message::assistant(vec![text("ok")]),
        ];
        assert_eq!(broken(&h), vec![]);
    }

    #[test]
    fn a_compaction_item_needs_encrypted_content() {
        let h = vec![compaction_message(" \n"), user("next")];
        assert_eq!(
            broken(&h),
            vec![(Kind::EmptyCompaction, 0, "compaction".into())]
        );
        assert_eq!(compaction_content(&h[0]), Some(" \n"));
        assert_eq!(compaction_content(&h[1]), None);
    }

    #[test]
    fn an_output_after_a_compaction_answering_a_call_before_it_is_cut_off() {
        let h = vec![
            user("go"),
            Message::assistant(vec![call("call_a")]),
            compaction_message("user: go"),
            output("call_a"),
        ];
        assert_eq!(
            broken(&h),
            vec![(Kind::OutputAcrossCompaction, 3, "call_a".into())]
        );
        // Only the latest compaction prunes: a pair wholly after it is fine,
        // and so is a pair before it, answered before it.
        let mut h = valid();
        h.insert(0, compaction_message("earlier"));
        assert_eq!(broken(&h), vec![]);
    }
}
