//! The provider validity oracle: would a provider accept this request?
//!
//! Two rule sets, run on every request of every policy:
//! - **Anthropic Messages**: every `tool_use` is answered in the next message,
//!   which is a user message whose `tool_result` blocks come first; every
//!   `tool_result` answers a `tool_use` of the message just before; ids unique.
//! - **OpenAI Chat**: the request as OpenAI's wire shape (an assistant message
//!   with `tool_calls`, then one `tool` message per call id, right after it;
//!   Anthropic-shaped user messages split into `tool` messages and a user
//!   message, in block order). Violations are named as OpenHands' API-compliance
//!   monitor names them (`interleaved_message`, `unmatched_tool_result`,
//!   `duplicate_tool_result`), plus `unmatched_tool_use` for a call still
//!   unanswered when the request ends and `duplicate_tool_call_id` for a call id
//!   used twice.
//!
//! A third set, OpenAI's Responses input-item rules, lives in
//! [`super::responses`] and is run only on the requests of policies that send
//! `/responses` requests ([`super::Policy::sends_responses`]).
//!
//! OpenHands' eight malformed-history patterns (OpenHands/software-agent-sdk
//! `tests/integration/api_compliance/patterns.py`) are planted in this module's
//! tests; each is detected with the violation OpenHands expects.

use serde::Serialize;

use crate::message::{Block, Content, Message, Role};

/// Which provider's rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    /// Anthropic Messages API.
    Anthropic,
    /// OpenAI Chat Completions.
    OpenAi,
    /// OpenAI Responses (`/responses` input items; checked only for the
    /// policies that send it, by `policy::responses`).
    OpenAiResponses,
}

/// What rule a request breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A call whose result does not follow it (before another message or the end).
    UnansweredToolUse,
    /// A result with no call just before it.
    OrphanToolResult,
    /// A result block after other content in its user message (Anthropic).
    ResultNotFirst,
    /// The same call id twice among the calls.
    DuplicateToolCallId,
    /// A second result for a call already answered.
    DuplicateToolResult,
    /// A message between a call and its result (OpenAI `interleaved_message`).
    InterleavedMessage,
    /// A result for an id no earlier call has (OpenAI `unmatched_tool_result`).
    UnmatchedToolResult,
    /// A call still unanswered when the request ends (OpenAI).
    UnmatchedToolUse,
    /// A `function_call` no `function_call_output` in the input answers
    /// (Responses: "No tool output found for function call …").
    MissingFunctionCallOutput,
    /// A `function_call_output` no earlier `function_call` has the `call_id`
    /// of (Responses: "No tool call found for function call output with
    /// call_id …").
    OrphanFunctionCallOutput,
    /// A `reasoning` item not followed by the message or function call it
    /// belongs to (Responses: "… of type 'reasoning' was provided without its
    /// required following item").
    ReasoningWithoutFollowingItem,
    /// A `compaction` item without `encrypted_content` (a required field).
    EmptyCompaction,
    /// A `function_call_output` after the latest `compaction` item answering
    /// a `function_call` before it, which the compaction pruned.
    OutputAcrossCompaction,
}

impl Kind {
    /// Every rule, in declaration order (counters list each, zero when clean).
    pub const ALL: [Kind; 13] = [
        Kind::UnansweredToolUse,
        Kind::OrphanToolResult,
        Kind::ResultNotFirst,
        Kind::DuplicateToolCallId,
        Kind::DuplicateToolResult,
        Kind::InterleavedMessage,
        Kind::UnmatchedToolResult,
        Kind::UnmatchedToolUse,
        Kind::MissingFunctionCallOutput,
        Kind::OrphanFunctionCallOutput,
        Kind::ReasoningWithoutFollowingItem,
        Kind::EmptyCompaction,
        Kind::OutputAcrossCompaction,
    ];

    /// The name used in counters and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Kind::UnansweredToolUse => "unanswered_tool_use",
            Kind::OrphanToolResult => "orphan_tool_result",
            Kind::ResultNotFirst => "result_not_first",
            Kind::DuplicateToolCallId => "duplicate_tool_call_id",
            Kind::DuplicateToolResult => "duplicate_tool_result",
            Kind::InterleavedMessage => "interleaved_message",
            Kind::UnmatchedToolResult => "unmatched_tool_result",
            Kind::UnmatchedToolUse => "unmatched_tool_use",
            Kind::MissingFunctionCallOutput => "missing_function_call_output",
            Kind::OrphanFunctionCallOutput => "orphan_function_call_output",
            Kind::ReasoningWithoutFollowingItem => "reasoning_without_following_item",
            Kind::EmptyCompaction => "empty_compaction",
            Kind::OutputAcrossCompaction => "output_across_compaction",
        }
    }
}

/// One broken rule at one place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Violation {
    /// Whose rules.
    pub provider: Provider,
    /// Which rule.
    pub kind: Kind,
    /// 0-based message index in the request.
    pub message: usize,
    /// The tool call id involved.
    pub id: String,
}

/// Every violation of the Anthropic and OpenAI Chat rules, Anthropic first.
pub fn check(messages: &[Message]) -> Vec<Violation> {
    let mut out = anthropic(messages);
    out.extend(openai(messages));
    out
}

/// A set of tool call ids, hashed with a fixed seed (membership only).
type IdSet<'a> = std::collections::HashSet<&'a str, foldhash::fast::FixedState>;

/// Anthropic Messages rules.
pub fn anthropic(messages: &[Message]) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut push = |kind, message, id: &str| {
        out.push(Violation {
            provider: Provider::Anthropic,
            kind,
            message,
            id: id.to_string(),
        })
    };
    // Sets for membership only (no order is read from them): hashed, as
    // the oracle runs on every request of a replay.
    let mut calls_seen = IdSet::default();
    let mut results_seen = IdSet::default();
    for (i, m) in messages.iter().enumerate() {
        match m.role {
            Role::Assistant => {
                let next = messages.get(i + 1).filter(|n| n.role == Role::User);
                // A message holds a few ids: a list beats a set.
                let answered: Vec<&str> = next.map(|n| n.tool_result_ids()).unwrap_or_default();
                for id in m.tool_use_ids() {
                    if !calls_seen.insert(id) {
                        push(Kind::DuplicateToolCallId, i, id);
                    }
                    if !answered.contains(&id) {
                        push(Kind::UnansweredToolUse, i, id);
                    }
                }
            }
            Role::User => {
                let calls: Vec<&str> = i
                    .checked_sub(1)
                    .map(|p| &messages[p])
                    .filter(|p| p.role == Role::Assistant)
                    .map(|p| p.tool_use_ids())
                    .unwrap_or_default();
                let mut other_before = false;
                for b in m.blocks() {
                    let Block::ToolResult {
                        tool_use_id: id, ..
                    } = b
                    else {
                        other_before = true;
                        continue;
                    };
                    if other_before {
                        push(Kind::ResultNotFirst, i, id);
                    }
                    if !results_seen.insert(id.as_str()) {
                        push(Kind::DuplicateToolResult, i, id);
                    } else if !calls.contains(&id.as_str()) {
                        push(Kind::OrphanToolResult, i, id);
                    }
                }
            }
        }
    }
    out
}

/// One message of OpenAI's wire shape, as far as tool pairing needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Wire<'a> {
    /// A user (or system) message with content.
    User,
    /// An assistant message and its call ids (possibly none).
    Assistant(Vec<&'a str>),
    /// A `tool` message answering one call.
    Tool(&'a str),
}

/// The request in OpenAI's shape: each result block becomes a `tool` message,
/// each run of other user blocks a user message, in block order.
fn wire(messages: &[Message]) -> Vec<(usize, Wire<'_>)> {
    let mut out = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        match (&m.role, &m.content) {
            (Role::Assistant, _) => out.push((i, Wire::Assistant(m.tool_use_ids()))),
            (Role::User, Content::Text(_)) => out.push((i, Wire::User)),
            (Role::User, Content::Blocks(blocks)) => {
                let mut in_user = false;
                for b in blocks {
                    if let Block::ToolResult { tool_use_id, .. } = b {
                        out.push((i, Wire::Tool(tool_use_id)));
                        in_user = false;
                    } else if !in_user {
                        out.push((i, Wire::User));
                        in_user = true;
                    }
                }
            }
        }
    }
    out
}

/// OpenAI Chat rules, named as OpenHands' compliance monitor names them.
pub fn openai(messages: &[Message]) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut push = |kind, message, id: &str| {
        out.push(Violation {
            provider: Provider::OpenAi,
            kind,
            message,
            id: id.to_string(),
        })
    };
    let mut pending: Vec<&str> = Vec::new();
    let (mut called, mut completed, mut interrupted) =
        (IdSet::default(), IdSet::default(), IdSet::default());
    for (i, w) in wire(messages) {
        match w {
            Wire::User | Wire::Assistant(_) => {
                for id in pending.drain(..) {
                    push(Kind::InterleavedMessage, i, id);
                    interrupted.insert(id);
                }
                if let Wire::Assistant(calls) = w {
                    for id in calls {
                        if !called.insert(id) {
                            push(Kind::DuplicateToolCallId, i, id);
                        }
                        pending.push(id);
                    }
                }
            }
            Wire::Tool(id) => {
                if let Some(pos) = pending.iter().position(|p| *p == id) {
                    pending.remove(pos);
                    completed.insert(id);
                } else if completed.contains(id) {
                    push(Kind::DuplicateToolResult, i, id);
                } else if !called.contains(id) {
                    push(Kind::UnmatchedToolResult, i, id);
                } else if interrupted.contains(id) {
                    // Already reported as interleaved where the gap began.
                    completed.insert(id);
                } else {
                    push(Kind::UnmatchedToolResult, i, id);
                }
            }
        }
    }
    let end = messages.len().saturating_sub(1);
    for id in pending {
        push(Kind::UnmatchedToolUse, end, id);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeSet;

    fn user(t: &str) -> Message {
        Message::user_text(t)
    }
    fn asst(text: &str, calls: &[&str]) -> Message {
        let mut blocks = vec![Block::Text { text: text.into() }];
        for id in calls {
            blocks.push(Block::ToolUse {
                id: (*id).into(),
                name: "terminal".into(),
                input: json!({"command": "ls"}).into(),
            });
        }
        Message::assistant(blocks)
    }
    /// OpenAI's `tool` message: a user message holding one result.
    fn tool(id: &str, text: &str) -> Message {
        Message::tool_results(vec![(id.into(), text.into())])
    }
    fn kinds(v: &[Violation], p: Provider) -> BTreeSet<Kind> {
        v.iter()
            .filter(|x| x.provider == p)
            .map(|x| x.kind)
            .collect()
    }

    #[test]
    fn a_valid_history_breaks_no_rule() {
        let h = vec![
            user("go"),
            asst("two", &["a", "b"]),
            Message::tool_results(vec![("a".into(), "1".into()), ("b".into(), "2".into())]),
            asst("done", &[]),
            user("thanks"),
        ];
        assert_eq!(check(&h), vec![]);
    }

    /// The eight planted patterns, each built as OpenHands builds it (system
    /// messages left out: the message model has none), each detected with the
    /// violation OpenHands' monitor expects for it.
    #[test]
    fn openhands_eight_patterns_are_each_detected() {
        let patterns: Vec<(&str, Vec<Message>, Kind)> = vec![
            (
                "unmatched_tool_use",
                vec![user("List"), asst("I'll", &["call_abc123"]), user("What?")],
                Kind::InterleavedMessage,
            ),
            (
                "unmatched_tool_result",
                vec![
                    user("List"),
                    asst("What directory?", &[]),
                    tool("call_nonexistent_xyz", "f"),
                ],
                Kind::UnmatchedToolResult,
            ),
            (
                "interleaved_user_message",
                vec![
                    user("List"),
                    asst("I'll", &["call_abc123"]),
                    user("Actually"),
                    tool("call_abc123", "f"),
                ],
                Kind::InterleavedMessage,
            ),
            (
                "interleaved_assistant_message",
                vec![
                    user("List"),
                    asst("I'll", &["call_abc123"]),
                    asst("running", &[]),
                    tool("call_abc123", "f"),
                ],
                Kind::InterleavedMessage,
            ),
            (
                "duplicate_tool_call_id",
                vec![
                    user("List"),
                    asst("I'll", &["call_abc123"]),
                    tool("call_abc123", "f"),
                    user("Thanks"),
                    asst("welcome", &[]),
                    user("again"),
                    tool("call_abc123", "g"),
                ],
                Kind::DuplicateToolResult,
            ),
            (
                "wrong_tool_call_id",
                vec![
                    user("Run two"),
                    asst("ls", &["call_A_ls"]),
                    tool("call_A_ls", "f"),
                    asst("pwd", &["call_B_pwd"]),
                    tool("call_A_ls", "/home"),
                ],
                Kind::DuplicateToolResult,
            ),
            (
                "parallel_missing_result",
                vec![
                    user("weather"),
                    asst("three", &["call_sf", "call_tokyo", "call_paris"]),
                    tool("call_sf", "65"),
                    tool("call_tokyo", "72"),
                    user("Paris?"),
                ],
                Kind::InterleavedMessage,
            ),
            (
                "parallel_wrong_order",
                vec![
                    user("weather"),
                    tool("call_sf", "65"),
                    tool("call_tokyo", "72"),
                    asst("both", &["call_sf", "call_tokyo"]),
                ],
                Kind::UnmatchedToolResult,
            ),
        ];
        for (name, h, want) in patterns {
            let v = check(&h);
            assert!(
                kinds(&v, Provider::OpenAi).contains(&want),
                "{name}: OpenAI rules should report {want:?}, got {v:?}"
            );
            assert!(
                !kinds(&v, Provider::Anthropic).is_empty(),
                "{name}: Anthropic rules should reject it too, got {v:?}"
            );
        }
    }

    #[test]
    fn anthropic_wants_results_first_and_unique_call_ids() {
        let text_then_result = Message {
            role: Role::User,
            content: Content::Blocks(vec![
                Block::Text {
                    text: "note".into(),
                },
                Block::ToolResult {
                    tool_use_id: "a".into(),
                    content: "1".into(),
                },
            ]),
        };
        let h = vec![user("go"), asst("x", &["a"]), text_then_result];
        let v = anthropic(&h);
        assert_eq!(
            kinds(&v, Provider::Anthropic),
            [Kind::ResultNotFirst].into()
        );
        // OpenAI splits it into a user message then a tool message: interleaved.
        assert!(kinds(&openai(&h), Provider::OpenAi).contains(&Kind::InterleavedMessage));

        let h = vec![
            user("go"),
            asst("x", &["a"]),
            tool("a", "1"),
            asst("y", &["a"]),
            tool("a", "2"),
        ];
        assert!(kinds(&anthropic(&h), Provider::Anthropic).contains(&Kind::DuplicateToolCallId));
        assert!(kinds(&openai(&h), Provider::OpenAi).contains(&Kind::DuplicateToolCallId));
    }

    #[test]
    fn a_call_unanswered_at_the_end_is_reported_by_both() {
        let h = vec![user("go"), asst("x", &["a"])];
        let v = check(&h);
        assert_eq!(
            kinds(&v, Provider::Anthropic),
            [Kind::UnansweredToolUse].into()
        );
        assert_eq!(kinds(&v, Provider::OpenAi), [Kind::UnmatchedToolUse].into());
    }
}
