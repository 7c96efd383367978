//! `ContextEditingMiddleware` with `ClearToolUsesEdit`: past `trigger` tokens,
//! every tool message but the newest `keep` gets the content `[cleared]`
//! (optionally the call's arguments become `{}`), on a copy sent to the model.

use serde::{Deserialize, Serialize};

use super::{from_lc, to_lc, Lc};
use crate::error::LabResult;
use crate::message::{Block, Message};
use crate::policy::{
    PointerRule, Policy, PolicyCtx, PolicyEvent, PolicyInfo, Prepared, Source, Unit,
};
use crate::tokens::TokenCounter;
use kept::Kept;

mod kept;

/// `DEFAULT_TOOL_PLACEHOLDER`, byte for byte.
pub const DEFAULT_TOOL_PLACEHOLDER: &str = "[cleared]";

/// Switches of `ClearToolUsesEdit`, under upstream's names; `Default` is the
/// dataclass's defaults.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClearToolUsesEdit {
    /// Tokens above which the edit applies.
    pub trigger: usize,
    /// Stop once this many tokens were cleared (0: clear every candidate).
    pub clear_at_least: usize,
    /// Newest tool messages never cleared.
    pub keep: usize,
    /// Also replace the call's arguments by `{}`.
    pub clear_tool_inputs: bool,
    /// Tools whose results are never cleared.
    pub exclude_tools: Vec<String>,
    /// The text put in place of a result.
    pub placeholder: String,
}

impl Default for ClearToolUsesEdit {
    fn default() -> Self {
        ClearToolUsesEdit {
            trigger: 100_000,
            clear_at_least: 0,
            keep: 3,
            clear_tool_inputs: false,
            exclude_tools: Vec::new(),
            placeholder: DEFAULT_TOOL_PLACEHOLDER.into(),
        }
    }
}

fn tokens_of(tokens: &dyn TokenCounter, lc: &[Lc]) -> usize {
    tokens.count_messages(&from_lc(lc))
}

/// The call `id` in `ai`, with its tool name.
fn call_name<'m>(ai: &'m Message, id: &str) -> Option<&'m str> {
    ai.blocks().iter().find_map(|b| match b {
        Block::ToolUse { id: i, name, .. } if i == id => Some(name.as_str()),
        _ => None,
    })
}

/// Replace the arguments of call `id` in `ai` by `{}`.
fn clear_input(ai: &mut Message, id: &str) {
    for b in ai.blocks_mut() {
        if let Block::ToolUse { id: i, input, .. } = b {
            if i == id {
                *input = serde_json::json!({}).into();
            }
        }
    }
}

impl ClearToolUsesEdit {
    /// `apply` on a copy: the edited list and what was cleared.
    pub fn apply(
        &self,
        mut lc: Vec<Lc>,
        tokens: &dyn TokenCounter,
        events: &mut Vec<PolicyEvent>,
    ) -> Vec<Lc> {
        let before = tokens_of(tokens, &lc);
        if before <= self.trigger {
            return lc;
        }
        let tools: Vec<usize> = (0..lc.len())
            .filter(|&i| matches!(lc[i], Lc::Tool { .. }))
            .collect();
        let candidates = &tools[..tools.len().saturating_sub(self.keep)];
        for &idx in candidates {
            let Lc::Tool { id, .. } = &lc[idx] else {
                continue;
            };
            let id = id.clone();
            // The nearest AI message before it must hold the call.
            let Some(ai) = (0..idx).rev().find(|&j| matches!(lc[j], Lc::Ai(_))) else {
                continue;
            };
            let Lc::Ai(ai_msg) = &lc[ai] else { continue };
            let Some(name) = call_name(ai_msg, &id) else {
                continue;
            };
            if self.exclude_tools.iter().any(|t| t == name) {
                continue;
            }
            lc[idx] = Lc::Tool {
                id: id.clone(),
                content: self.placeholder.clone(),
            };
            events.push(PolicyEvent::Cleared {
                id: id.clone(),
                part: "result",
                placeholder: self.placeholder.clone(),
            });
            if self.clear_tool_inputs {
                if let Lc::Ai(m) = &mut lc[ai] {
                    clear_input(m, &id);
                }
                events.push(PolicyEvent::Cleared {
                    id,
                    part: "input",
                    placeholder: "{}".into(),
                });
            }
            if self.clear_at_least > 0
                && before.saturating_sub(tokens_of(tokens, &lc)) >= self.clear_at_least
            {
                break;
            }
        }
        lc
    }
}

/// The middleware as a policy.
#[derive(Debug, Clone, Default)]
pub struct ClearToolUses {
    /// The switches.
    pub config: ClearToolUsesEdit,
    /// The edit as of the last call, grown by each call's new messages.
    kept: Option<Kept>,
}

impl ClearToolUses {
    /// The middleware with these switches.
    pub fn new(config: ClearToolUsesEdit) -> ClearToolUses {
        ClearToolUses { config, kept: None }
    }

    /// The edited list of `history` from the kept edit, when it can go on.
    fn advance(
        &mut self,
        history: &[Message],
        tokens: &dyn TokenCounter,
        events: &mut Vec<PolicyEvent>,
    ) -> Option<Vec<Message>> {
        let fits = |k: &Kept| k.fits(&self.config, tokens, history.len());
        if !self.kept.as_ref().is_some_and(fits) {
            self.kept = Some(Kept::new(&self.config, tokens));
        }
        let kept = self.kept.as_mut()?;
        match kept.advance(history, tokens, events) {
            Some(lc) => Some(from_lc(lc)),
            None => {
                self.kept = None;
                None
            }
        }
    }
}

/// `langchain-clear-tool-uses` with the dataclass defaults.
pub fn clear_tool_uses() -> Box<dyn Policy> {
    Box::new(ClearToolUses::default())
}

impl Policy for ClearToolUses {
    fn configure(&mut self, overrides: &crate::policy::variant::Overrides) -> Result<(), String> {
        crate::policy::variant::set_fields(&mut self.config, overrides)
    }

    fn variant_keys(&self) -> crate::policy::variant::Overrides {
        crate::policy::variant::fields(&self.config)
    }

    fn info(&self) -> PolicyInfo {
        PolicyInfo {
            name: "langchain-clear-tool-uses".into(),
            family: "LangChain",
            summary: "past trigger tokens, replace all but the newest keep tool results by [cleared] in the request".into(),
            source: Source {
                upstream: "pypi:langchain==1.5.0 (langchain-ai/langchain libs/langchain_v1), read 2026-12-03".into(),
                files: &["langchain/agents/middleware/context_editing.py"],
                license: "MIT",
                approximate: false,
            },
            constants: serde_json::to_value(&self.config).unwrap_or_default(),
            unit: Unit::Tokens,
            differences: vec![
                "tokens are counted by the run's counter (upstream: count_tokens_approximately, or the model's own count)",
            ],
        }
    }

    fn acts_on(&self) -> crate::policy::shape::ActsOn {
        crate::policy::shape::ActsOn::ToolResults
    }

    fn pointer_rules(&self) -> Vec<PointerRule> {
        // `[cleared]` names no place: the result is only in the agent state.
        Vec::new()
    }

    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        let mut events = Vec::new();
        if let Some(request) = self.advance(history, ctx.tokens, &mut events) {
            return Ok(Prepared { request, events });
        }
        events.clear();
        let edited = self.config.apply(to_lc(history), ctx.tokens, &mut events);
        Ok(Prepared {
            request: from_lc(&edited),
            events,
        })
    }

    fn history_replaced(&mut self) {
        self.kept = None;
    }
}
