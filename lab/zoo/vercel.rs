//! Vercel AI SDK `pruneMessages`: drop reasoning and whole tool call/result
//! pairs outside the newest messages, then messages left empty (a projecting
//! design: it is called in `prepareStep` on the messages of one step).
//!
//! Upstream: the `ai` package 7.0.173 on npm (vercel/ai,
//! `packages/ai/src/generate-text/prune-messages.ts`, read as built in
//! `dist/index.js` on 2026-12-03; Apache-2.0, constants and strings only).
//!
//! The AI SDK has `tool` messages; the lab's tool-result user messages are
//! treated as such, text beside results as a user message of its own.

use serde::{Deserialize, Serialize};

use crate::error::{LabError, LabResult};
use crate::message::{Block, Content, Message, Role};
use crate::policy::{
    PointerRule, Policy, PolicyCtx, PolicyEvent, PolicyInfo, Prepared, Source, Unit,
};

/// One `toolCalls` entry: `type` is `all`, `before-last-message` or
/// `before-last-N-messages`; `tools`, when given, limits pruning to those tools.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCallsRule {
    /// Which messages are pruned.
    #[serde(rename = "type")]
    pub kind: String,
    /// Only these tools (all when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
}

/// Options of `pruneMessages`, under upstream's names. `Default` is upstream's:
/// `reasoning: 'none'`, `toolCalls: []`, `emptyMessages: 'remove'`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct PruneMessages {
    /// `none`, `all` or `before-last-message`.
    pub reasoning: String,
    /// The tool-call rules, applied in order.
    pub tool_calls: Vec<ToolCallsRule>,
    /// `remove` or `keep`.
    pub empty_messages: String,
}

impl Default for PruneMessages {
    fn default() -> Self {
        PruneMessages {
            reasoning: "none".into(),
            tool_calls: Vec::new(),
            empty_messages: "remove".into(),
        }
    }
}

/// One AI SDK model message: the lab message, whether it is a `tool`
/// message, and whether it is a `user` message split off a tool-result
/// message (marked at conversion, so that only it goes back into the results'
/// message: a user message after the results stays one of its own).
#[derive(Debug, Clone, PartialEq)]
struct Am {
    tool: bool,
    beside: bool,
    message: Message,
}

fn to_am(history: &[Message]) -> Vec<Am> {
    let mut out = Vec::new();
    for m in history {
        if !m.is_tool_result() {
            out.push(Am {
                tool: false,
                beside: false,
                message: m.clone(),
            });
            continue;
        }
        let (results, rest): (Vec<Block>, Vec<Block>) = m
            .blocks()
            .iter()
            .cloned()
            .partition(|b| matches!(b, Block::ToolResult { .. }));
        for (blocks, tool) in [(results, true), (rest, false)] {
            if tool || !blocks.is_empty() {
                out.push(Am {
                    tool,
                    beside: !tool,
                    message: Message::user_blocks(blocks),
                });
            }
        }
    }
    out
}

fn from_am(ams: Vec<Am>) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::new();
    let mut prev_tool = false;
    for am in ams {
        if prev_tool && am.beside {
            if let Some(Content::Blocks(b)) = out.last_mut().map(|m| &mut m.content) {
                b.extend(am.message.blocks().iter().cloned());
                prev_tool = false;
                continue;
            }
        }
        prev_tool = am.tool;
        out.push(am.message);
    }
    out
}

/// The id of a tool part (call or result).
fn tool_part_id(b: &Block) -> Option<&str> {
    match b {
        Block::ToolUse { id, .. } => Some(id),
        Block::ToolResult { tool_use_id, .. } => Some(tool_use_id),
        _ => None,
    }
}

/// `N` of a rule's type, `None` for `all`.
fn keep_last(kind: &str) -> LabResult<Option<usize>> {
    match kind {
        "all" => Ok(None),
        "before-last-message" => Ok(Some(1)),
        k => k
            .strip_prefix("before-last-")
            .and_then(|r| r.strip_suffix("-messages"))
            .and_then(|n| n.parse().ok())
            .map(Some)
            .ok_or_else(|| {
                LabError::usage(
                    format!("pruneMessages: unknown toolCalls type `{kind}`"),
                    "use all, before-last-message or before-last-N-messages",
                )
            }),
    }
}

impl PruneMessages {
    fn prune_reasoning(&self, ams: &mut [Am]) {
        let last = ams.len().saturating_sub(1);
        for (i, am) in ams.iter_mut().enumerate() {
            let skip_last = self.reasoning == "before-last-message" && i == last;
            if am.message.role != Role::Assistant || skip_last {
                continue;
            }
            if let Content::Blocks(b) = &mut am.message.content {
                b.retain(|p| !matches!(p, Block::Thinking { .. }));
            }
        }
    }

    /// Apply one rule; the number of results removed with their calls.
    fn prune_tools(rule: &ToolCallsRule, ams: &mut [Am]) -> LabResult<usize> {
        let mut removed = 0;
        let keep = keep_last(&rule.kind)?.filter(|&n| n > 0);
        let len = ams.len();
        let tail = keep.map_or(len, |n| len.saturating_sub(n));
        let kept: Vec<String> = ams[if keep.is_some() { tail } else { len }..]
            .iter()
            .flat_map(|a| a.message.blocks())
            .filter_map(tool_part_id)
            .map(String::from)
            .collect();
        let names: std::collections::BTreeMap<String, String> = ams
            .iter()
            .flat_map(|a| a.message.blocks())
            .filter_map(|b| match b {
                Block::ToolUse { id, name, .. } => Some((id.clone(), name.clone())),
                _ => None,
            })
            .collect();
        for am in ams[..tail].iter_mut() {
            let Content::Blocks(blocks) = &mut am.message.content else {
                continue;
            };
            if am.message.role != Role::Assistant && !am.tool {
                continue;
            }
            let keep_parts: Vec<bool> = blocks
                .iter()
                .map(|b| match tool_part_id(b) {
                    None => true,
                    Some(id) if kept.iter().any(|k| k == id) => true,
                    Some(id) => match (&rule.tools, names.get(id)) {
                        (Some(tools), Some(name)) => !tools.contains(name),
                        _ => false,
                    },
                })
                .collect();
            let keep_parts = drop_orphan_reasoning(blocks, keep_parts);
            let mut i = 0;
            blocks.retain(|b| {
                let k = keep_parts[i];
                i += 1;
                removed += usize::from(!k && matches!(b, Block::ToolResult { .. }));
                k
            });
        }
        Ok(removed)
    }

    /// Prune `history` as `pruneMessages` would.
    pub fn apply(
        &self,
        history: &[Message],
        events: &mut Vec<PolicyEvent>,
    ) -> LabResult<Vec<Message>> {
        let mut ams = to_am(history);
        if self.reasoning == "all" || self.reasoning == "before-last-message" {
            self.prune_reasoning(&mut ams);
        }
        let mut results = 0;
        for rule in &self.tool_calls {
            results += Self::prune_tools(rule, &mut ams)?;
        }
        let before = ams.len();
        if self.empty_messages == "remove" {
            ams.retain(|a| match &a.message.content {
                Content::Text(t) => !t.is_empty(),
                Content::Blocks(b) => !b.is_empty(),
            });
        }
        if results > 0 || ams.len() < before {
            events.push(PolicyEvent::Dropped {
                messages: before - ams.len(),
                why: format!("pruneMessages removed {results} tool results with their calls"),
            });
        }
        Ok(from_am(ams))
    }
}

/// Reasoning parts go when every part after them (up to the next reasoning)
/// goes.
fn drop_orphan_reasoning(blocks: &[Block], mut keep: Vec<bool>) -> Vec<bool> {
    let is_r = |b: &Block| matches!(b, Block::Thinking { .. });
    let mut i = 0;
    while i < blocks.len() {
        if !is_r(&blocks[i]) {
            i += 1;
            continue;
        }
        let mut end = i + 1;
        while end < blocks.len() && is_r(&blocks[end]) {
            end += 1;
        }
        let mut follow = end;
        let mut any_kept = false;
        while follow < blocks.len() && !is_r(&blocks[follow]) {
            any_kept |= keep[follow];
            follow += 1;
        }
        if follow > end && !any_kept {
            keep[i..end].iter_mut().for_each(|k| *k = false);
        }
        i = follow.max(i + 1);
    }
    keep
}

/// `pruneMessages` as a policy.
#[derive(Debug, Clone, Default)]
pub struct Vercel {
    /// The options.
    pub config: PruneMessages,
    /// The pruning kept between calls (upstream prunes afresh each step;
    /// `kept` says why it is kept).
    kept: Option<kept::Kept>,
}

/// `vercel-prune-messages`: reasoning before the last message and tool calls
/// before the last 2 messages pruned (a lab choice: upstream's defaults prune
/// only empty messages).
pub fn prune_messages() -> Box<dyn Policy> {
    Box::new(Vercel {
        config: PruneMessages {
            reasoning: "before-last-message".into(),
            tool_calls: vec![ToolCallsRule {
                kind: "before-last-2-messages".into(),
                tools: None,
            }],
            empty_messages: "remove".into(),
        },
        kept: None,
    })
}

impl Policy for Vercel {
    fn configure(&mut self, overrides: &crate::policy::variant::Overrides) -> Result<(), String> {
        crate::policy::variant::set_fields(&mut self.config, overrides)
    }

    fn variant_keys(&self) -> crate::policy::variant::Overrides {
        crate::policy::variant::fields(&self.config)
    }

    fn info(&self) -> PolicyInfo {
        PolicyInfo {
            name: "vercel-prune-messages".into(),
            family: "Vercel AI SDK",
            summary: "drop reasoning and whole tool call/result pairs outside the newest messages, then empty messages".into(),
            source: Source {
                upstream: "npm:ai@7.0.173 (vercel/ai packages/ai/src/generate-text/prune-messages.ts), read 2026-12-03".into(),
                files: &["dist/index.js (pruneMessages)"],
                license: "Apache-2.0",
                approximate: false,
            },
            constants: serde_json::to_value(&self.config).unwrap_or_default(),
            unit: Unit::Messages,
            differences: vec![
                "the registered options are a lab choice (upstream's defaults remove only empty messages)",
                "tool-approval parts are not modelled",
            ],
        }
    }

    fn acts_on(&self) -> crate::policy::shape::ActsOn {
        use crate::policy::shape::ActsOn;
        let c = &self.config;
        match (!c.tool_calls.is_empty(), c.reasoning != "none") {
            (true, true) => ActsOn::ToolCallsOrReasoning,
            (true, false) => ActsOn::ToolResults,
            (false, true) => ActsOn::Reasoning,
            // Removing empty messages can find one anywhere.
            (false, false) => ActsOn::Messages,
        }
    }

    fn pointer_rules(&self) -> Vec<PointerRule> {
        // Pruned pairs leave no placeholder at all.
        Vec::new()
    }

    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        _ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        let mut events = Vec::new();
        if !kept::Kept::applies(&self.config) {
            let request = self.config.apply(history, &mut events)?;
            return Ok(Prepared { request, events });
        }
        let fits = |k: &kept::Kept| k.fits(&self.config, history.len());
        if !self.kept.as_ref().is_some_and(fits) {
            self.kept = Some(kept::Kept::new(&self.config));
        }
        let kept = self
            .kept
            .get_or_insert_with(|| kept::Kept::new(&self.config));
        let request = kept.advance(history, &mut events)?;
        Ok(Prepared { request, events })
    }

    fn history_replaced(&mut self) {
        self.kept = None;
    }
}

mod kept;

#[cfg(test)]
mod tests;
