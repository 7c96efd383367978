//! Whether a session has anything of the kind a policy acts on. A policy
//! that finds nothing (SWE-agent masking on a trajectory whose observations
//! are plain user messages) sends exactly `none`'s requests; the replay says
//! so in a note on that row instead of leaving the reader to guess.

use crate::message::{Block, Message};

/// What a policy's mechanism works on. A design that can act on any message
/// (summarising, windowing, token budgets) always has something; one that
/// works only on tool output or reasoning may find none in a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActsOn {
    /// Any message: every session has some.
    Messages,
    /// Tool results (`tool_result` blocks): clearing, masking, truncating
    /// or pruning outputs.
    ToolResults,
    /// Tool calls with their results, or reasoning (`thinking` blocks).
    ToolCallsOrReasoning,
    /// Reasoning (`thinking` blocks) only.
    Reasoning,
}

impl ActsOn {
    /// What a session lacks when it has nothing of this kind, in words;
    /// `None` when it has some (or when anything will do).
    pub fn missing(self, messages: &[Message]) -> Option<&'static str> {
        let any = |f: fn(&Block) -> bool| messages.iter().flat_map(Message::blocks).any(f);
        let results = |b: &Block| matches!(b, Block::ToolResult { .. });
        let calls = |b: &Block| matches!(b, Block::ToolUse { .. } | Block::ToolResult { .. });
        let thinking = |b: &Block| matches!(b, Block::Thinking { .. });
        match self {
            ActsOn::Messages => None,
            ActsOn::ToolResults => (!any(results)).then_some("tool results"),
            ActsOn::ToolCallsOrReasoning => {
                (!any(calls) && !any(thinking)).then_some("tool calls, tool results or reasoning")
            }
            ActsOn::Reasoning => (!any(thinking)).then_some("reasoning blocks"),
        }
    }

    /// The note on a run's row when the session has nothing of this kind.
    pub fn note(self, messages: &[Message]) -> Option<String> {
        self.missing(messages).map(|what| {
            format!("nothing to act on: the session has no {what}, so every request is none's")
        })
    }
}
