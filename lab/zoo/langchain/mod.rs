//! LangChain v1 agent middleware: `SummarizationMiddleware` (a rewriting
//! design: the state's messages are replaced) and `ContextEditingMiddleware`
//! with `ClearToolUsesEdit` (a projecting design: each model call edits a copy).
//!
//! Upstream: the `langchain` 1.5.0 package on PyPI (langchain-ai/langchain,
//! `libs/langchain_v1/langchain/agents/middleware/summarization.py` and
//! `context_editing.py` as installed, read 2026-12-03; MIT, constants and
//! strings only are reproduced).
//!
//! LangChain's message list has one `ToolMessage` per call; the lab's history
//! has one user message carrying every result of a model response. Both
//! designs work on the LangChain list ([`to_lc`]) and the result is turned
//! back ([`from_lc`]), so cut indices and `keep` counts are upstream's.

pub mod clear_tool_uses;
pub mod summarization;

use crate::message::{Block, Content, Message, Role};

pub use clear_tool_uses::{clear_tool_uses, ClearToolUses, ClearToolUsesEdit};
pub use summarization::{summarization, Summarization, SummarizationMiddleware};

/// One LangChain message.
#[derive(Debug, Clone, PartialEq)]
pub enum Lc {
    /// `HumanMessage`: a user message of its own in the lab's history.
    Human(Message),
    /// `HumanMessage` too, made of the blocks that sat beside results in one
    /// lab message; marked at conversion so that only these go back into
    /// the results' message (a user message after the results, a new prompt
    /// or an interrupt notice, stays a message of its own).
    Beside(Message),
    /// `AIMessage` (with its `tool_calls` as `tool_use` blocks).
    Ai(Message),
    /// `ToolMessage`.
    Tool {
        /// `tool_call_id`.
        id: String,
        /// `content`.
        content: String,
    },
}

/// The LangChain message list of a lab history.
pub fn to_lc(history: &[Message]) -> Vec<Lc> {
    let mut out = Vec::new();
    for m in history {
        match m.role {
            Role::Assistant => out.push(Lc::Ai(m.clone())),
            Role::User if m.is_tool_result() => {
                let mut texts = Vec::new();
                for b in m.blocks() {
                    match b {
                        Block::ToolResult {
                            tool_use_id,
                            content,
                        } => out.push(Lc::Tool {
                            id: tool_use_id.clone(),
                            content: content.clone(),
                        }),
                        other => texts.push(other.clone()),
                    }
                }
                if !texts.is_empty() {
                    out.push(Lc::Beside(Message::user_blocks(texts)));
                }
            }
            Role::User => out.push(Lc::Human(m.clone())),
        }
    }
    out
}

/// The lab history of a LangChain list: consecutive tool messages become one
/// user message of results, and the blocks split off it go back into it.
pub fn from_lc(lc: &[Lc]) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::new();
    let mut results: Vec<(String, String)> = Vec::new();
    for m in lc {
        if let Lc::Tool { id, content } = m {
            results.push((id.clone(), content.clone()));
            continue;
        }
        if !results.is_empty() {
            let mut merged = Message::tool_results(std::mem::take(&mut results));
            if let (Lc::Beside(h), Content::Blocks(blocks)) = (m, &mut merged.content) {
                blocks.extend(h.blocks().iter().cloned());
                out.push(merged);
                continue;
            }
            out.push(merged);
        }
        match m {
            Lc::Human(h) | Lc::Beside(h) | Lc::Ai(h) => out.push(h.clone()),
            Lc::Tool { .. } => {}
        }
    }
    if !results.is_empty() {
        out.push(Message::tool_results(results));
    }
    out
}

#[cfg(test)]
mod tests;
