//! `CompactionEdit`: reasoning cleared outside the newest assistant turns,
//! tool results outside the newest `keep_tool_uses` replaced by
//! `(Tool result removed)` (or call and result replaced by a note), memory
//! calls' content cleared, trailing assistant messages dropped.

use serde::{Deserialize, Serialize};

use super::{clear_memory_content, Compacted, Fresh, Im, ImContent, ImRole, Strategy};
use crate::error::{LabError, LabResult};
use crate::message::Block;
use crate::policy::{Policy, PolicyCtx, PolicyEvent};

/// The policy's name.
pub const NAME: &str = "inspect-edit";
/// `TOOL_RESULT_REMOVED`, byte for byte.
pub const TOOL_RESULT_REMOVED: &str = "(Tool result removed)";
/// `TOOL_SEARCH_NAME`: its result carries tool definitions, never cleared.
pub const TOOL_SEARCH_NAME: &str = "tool_search";

/// `_replace_tool_call_with_text`'s note, byte for byte.
pub fn call_removed(function: &str) -> String {
    format!("[Tool call: {function} (parameters and results removed from history)]")
}

/// `CompactionEdit(...)`'s arguments under upstream's names; `Default` is
/// upstream's, with the window of a model Inspect does not know.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CompactionEdit {
    /// `threshold`: tokens when above 1, else a fraction of `context_window`.
    pub threshold: f64,
    /// The model's input window (`get_model_input_tokens`; 128,000 unknown).
    pub context_window: usize,
    /// `memory`: clear the content of `memory` tool calls.
    pub memory: bool,
    /// `keep_thinking_turns`: `null` is `"all"`.
    pub keep_thinking_turns: Option<usize>,
    /// `keep_tool_uses`.
    pub keep_tool_uses: usize,
    /// `keep_tool_inputs`: `false` removes the call too, leaving a note.
    pub keep_tool_inputs: bool,
    /// `exclude_tools`.
    pub exclude_tools: Vec<String>,
}

impl Default for CompactionEdit {
    fn default() -> Self {
        CompactionEdit {
            threshold: 0.9,
            context_window: super::DEFAULT_CONTEXT_WINDOW,
            memory: true,
            keep_thinking_turns: Some(1),
            keep_tool_uses: 3,
            keep_tool_inputs: true,
            exclude_tools: Vec::new(),
        }
    }
}

/// `_clear_reasoning`: reasoning parts dropped; list content always gets a
/// new id, empty content becomes `""`.
fn clear_reasoning(m: &mut Im, fresh: &mut Fresh) {
    let ImContent::List(parts) = &m.content else {
        return;
    };
    let kept: Vec<Block> = parts
        .iter()
        .filter(|b| !matches!(b, Block::Thinking { .. }))
        .cloned()
        .collect();
    m.content = if kept.is_empty() {
        ImContent::Str(String::new())
    } else {
        ImContent::List(kept)
    };
    m.id = fresh.id();
    m.original = None;
}

impl Strategy for CompactionEdit {
    fn threshold(&self) -> f64 {
        self.threshold
    }

    fn context_window(&self) -> usize {
        self.context_window
    }

    fn compact(
        &mut self,
        messages: &[Im],
        fresh: &mut Fresh,
        _ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Compacted> {
        let mut result = messages.to_vec();
        let mut events = Vec::new();
        // Phase 1: reasoning outside the newest turns.
        if let Some(keep) = self.keep_thinking_turns {
            let mut turns = 0;
            for m in result.iter_mut().rev() {
                if m.role == ImRole::Assistant {
                    turns += 1;
                    if turns > keep {
                        clear_reasoning(m, fresh);
                    }
                }
            }
        }
        // Phase 2: every answered call, oldest first (one budget).
        let mut uses: Vec<(usize, String, String, usize)> = Vec::new();
        for (i, m) in result.iter().enumerate() {
            if m.role != ImRole::Assistant {
                continue;
            }
            for c in &m.tool_calls {
                if c.function == TOOL_SEARCH_NAME || self.exclude_tools.contains(&c.function) {
                    continue;
                }
                let found = result[i + 1..].iter().position(|t| {
                    t.role == ImRole::Tool && t.tool_call_id.as_deref() == Some(c.id.as_str())
                });
                if let Some(k) = found {
                    uses.push((i, c.id.clone(), c.function.clone(), i + 1 + k));
                }
            }
        }
        let keep = self.keep_tool_uses;
        let clear = if keep > 0 && uses.len() > keep {
            &uses[..uses.len() - keep]
        } else if keep == 0 {
            &uses[..]
        } else {
            &[]
        };
        // Phase 3, newest first so that a deleted message moves no index
        // still to come (upstream's order, indices as collected).
        for (assistant, id, function, tool) in clear.iter().rev() {
            if *tool >= result.len() || *assistant >= result.len() {
                return Err(LabError::usage(
                    format!("inspect-edit: tool message index {tool} out of range (upstream raises IndexError here)"),
                    "keep_tool_inputs=true avoids deleting messages",
                ));
            }
            if self.keep_tool_inputs {
                let t = &mut result[*tool];
                if t.content != ImContent::Str(TOOL_RESULT_REMOVED.into()) {
                    events.push(PolicyEvent::Cleared {
                        id: id.clone(),
                        part: "result",
                        placeholder: TOOL_RESULT_REMOVED.into(),
                    });
                }
                t.content = ImContent::Str(TOOL_RESULT_REMOVED.into());
                t.id = fresh.id();
            } else {
                result.remove(*tool);
                let a = &mut result[*assistant];
                a.tool_calls.retain(|c| c.id != *id);
                let note = Block::Text {
                    text: call_removed(function),
                };
                a.content = match std::mem::replace(&mut a.content, ImContent::List(Vec::new())) {
                    ImContent::Str(s) if s.is_empty() => ImContent::List(vec![note]),
                    ImContent::Str(s) => ImContent::List(vec![Block::Text { text: s }, note]),
                    ImContent::List(mut parts) => {
                        parts.push(note);
                        ImContent::List(parts)
                    }
                };
                a.id = fresh.id();
                a.original = None;
                events.push(PolicyEvent::Cleared {
                    id: id.clone(),
                    part: "input",
                    placeholder: call_removed(function),
                });
            }
        }
        // Phase 4: memory calls' content.
        if self.memory {
            clear_memory_content(&mut result, fresh);
        }
        // Some APIs want the conversation to end with a user message.
        while result.last().is_some_and(|m| m.role == ImRole::Assistant) {
            result.pop();
        }
        Ok(Compacted {
            input: result,
            message: None,
            events,
        })
    }
}

/// `CompactionEdit` under Inspect's compaction handler.
pub type Edit = super::Compaction<CompactionEdit>;

/// `inspect-edit` with upstream's defaults.
pub fn edit() -> Box<dyn Policy> {
    Box::new(Edit::default())
}

impl super::Row for CompactionEdit {
    const NAME: &'static str = NAME;
    const SUMMARY: &'static str = "past the threshold, clear reasoning outside the last turn and every tool result but the newest keep_tool_uses to `(Tool result removed)`";

    fn constants(&self) -> serde_json::Value {
        serde_json::json!({
            "threshold": self.threshold,
            "DEFAULT_CONTEXT_WINDOW": super::DEFAULT_CONTEXT_WINDOW,
            "context_window": self.context_window,
            "keep_thinking_turns": self.keep_thinking_turns.map_or(serde_json::json!("all"), |n| serde_json::json!(n)),
            "keep_tool_uses": self.keep_tool_uses,
            "keep_tool_inputs": self.keep_tool_inputs,
            "exclude_tools": self.exclude_tools,
            "memory": self.memory,
            "TOOL_RESULT_REMOVED": TOOL_RESULT_REMOVED,
            "MAX_ITERATIONS": super::MAX_ITERATIONS,
        })
    }
}
