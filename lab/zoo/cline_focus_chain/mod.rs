//! Cline's auto-compaction with the focus chain: near the window the model
//! is asked to summarise the task (`summarize_task`), the history beyond the
//! first user–assistant pair is deleted and the summary comes back as the
//! tool's result; the focus chain, the task-progress checklist the model
//! keeps in its tool calls, lives in the task's state, not in the messages,
//! so it survives every summary and is shown again in the periodic reminder.
//!
//! Source: `cline/cline@9ee618111d58630fea30b27439216448225458e0` (Apache-2.0;
//! the last commit with the extension's engine under `src/`, before it moved
//! to `apps/vscode` and the SDK): `src/core/task/index.ts` (the auto-condense
//! branch: `useAutoCondense`, `currentlySummarizing`, the active-message
//! guard, `summarizeTask` appended to the user message; the reminder added
//! in `loadContext`; `apiRequestsSinceLastTodoUpdate++` per request),
//! `src/core/context/context-management/ContextManager.ts`
//! (`shouldCompactContextWindow`: the previous request's tokens in, out and
//! cached against `maxAllowedSize`; `getNextTruncationRange` with keep
//! `none`; `ensureToolResultsFollowToolUse`),
//! `context-window-utils.ts` (`getContextWindowInfo`: 200,000 → 160,000),
//! `src/core/task/tools/handlers/SummarizeTaskHandler.ts` (the result is
//! `continuationPrompt(context)`, files listed under "9. Required Files"
//! read in), `src/core/task/focus-chain/` (the checklist from a call's
//! `task_progress`, the reminder every `remindClineInterval` 6 requests),
//! `src/shared/FocusChainSettings.ts`; texts in [`prompts`].
//!
//! As modelled: when the request before this one (its input and output)
//! reached `maxAllowedSize`, and more than the continuation and one reply
//! follow the last compaction, the lab's summariser answers the
//! `summarize_task` prompt; the history becomes the first two messages and
//! one user message, `[summarize_task] Result:` and the continuation (the
//! two messages of the summarising exchange are deleted at the next request,
//! as upstream extends the deleted range by two), with "result missing" for
//! the kept reply's calls. The checklist is the newest `task_progress` a call
//! carried (the summary call returns it unchanged); every sixth request
//! since it last changed, the reminder with the list is appended to the
//! user message sent.

pub mod prompts;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

use crate::error::LabResult;
use crate::message::{Block, Content, Message, Role};
use crate::policy::{
    PointerRule, Policy, PolicyCtx, PolicyEvent, PolicyInfo, Prepared, Source, SummaryRequest, Unit,
};

/// The policy name in `lab policies`.
pub const NAME: &str = "cline-focus-chain";

/// Constants under Cline's names; `Default` is upstream's for Claude models.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[allow(non_snake_case)]
pub struct Switches {
    /// The model's window (Claude: 200,000).
    pub contextWindow: usize,
    /// Requests between focus-chain reminders (`DEFAULT_FOCUS_CHAIN_SETTINGS`: 6).
    pub remindClineInterval: usize,
}

impl Default for Switches {
    fn default() -> Self {
        Switches {
            contextWindow: 200_000,
            remindClineInterval: 6,
        }
    }
}

impl Switches {
    /// `getContextWindowInfo(...).maxAllowedSize`.
    pub fn max_allowed_size(&self) -> usize {
        let w = self.contextWindow;
        match w {
            64_000 => w - 27_000,
            128_000 => w - 30_000,
            200_000 => w - 40_000,
            // `Math.max(w − 40,000, w * 0.8)`; the count is whole, so the
            // fractional bound is reached at its ceiling.
            _ => w.saturating_sub(40_000).max((w * 4).div_ceil(5)),
        }
    }
}

/// The policy: switches, whether a compaction happened, the checklist and
/// the requests since it last changed.
#[derive(Debug, Clone, Default)]
pub struct ClineFocusChain {
    /// Constants.
    pub switches: Switches,
    compacted: bool,
    checklist: Option<String>,
    since_update: usize,
    seen: usize,
}

/// A boxed policy with upstream's defaults.
pub fn make() -> Box<dyn Policy> {
    Box::new(ClineFocusChain::default())
}

impl ClineFocusChain {
    /// Checklists the arriving replies carried (`updateFCListFromToolResponse`).
    fn read_arrivals(&mut self, history: &[Message]) {
        for m in &history[self.seen.min(history.len())..] {
            for b in m.blocks() {
                let Block::ToolUse { input, .. } = b else {
                    continue;
                };
                let Some(list) = input.get("task_progress").and_then(|v| v.as_str()) else {
                    continue;
                };
                if !list.trim().is_empty() {
                    self.checklist = Some(list.trim().to_string());
                    self.since_update = 0;
                }
            }
        }
    }

    /// `shouldCompactContextWindow` and the guard after a compaction.
    fn should_compact(&self, history: &[Message], ctx: &PolicyCtx<'_>) -> bool {
        let Some(last_reply) = history.iter().rposition(|m| m.role == Role::Assistant) else {
            return false;
        };
        let previous = ctx.envelope + ctx.tokens.count_messages(&history[..=last_reply]);
        // Upstream counts the messages after the deleted range before the
        // next user message: the continuation and the replies since.
        let active = (last_reply + 1).saturating_sub(2);
        previous >= self.switches.max_allowed_size() && !(self.compacted && active <= 2)
    }

    /// The summary replaces everything after the first pair.
    fn compact(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
        events: &mut Vec<PolicyEvent>,
    ) {
        let req = SummaryRequest {
            prompt: prompts::SUMMARIZE_TASK,
            messages: history,
            previous: None,
        };
        let context = match ctx.model.summarise(&req) {
            Ok(c) => c,
            Err(e) => {
                events.push(PolicyEvent::ModelFailed {
                    role: "summary",
                    outcome: format!("no summarize_task answer, history unchanged: {e}"),
                });
                return;
            }
        };
        if self.checklist.is_some() {
            // The summary call returns the list with its task_progress.
            self.since_update = 0;
        }
        let keep = history.len().min(2);
        let replaced = history.len() - keep;
        history.truncate(keep);
        let mut blocks: Vec<Block> = Vec::new();
        if let Some(reply) = history.get(1).filter(|m| m.role == Role::Assistant) {
            for id in reply.tool_use_ids() {
                events.push(PolicyEvent::Repaired {
                    id: id.to_string(),
                    what: format!(
                        "`{}` for a kept call whose result was deleted",
                        prompts::RESULT_MISSING
                    ),
                });
                blocks.push(Block::ToolResult {
                    tool_use_id: id.to_string(),
                    content: prompts::RESULT_MISSING.into(),
                });
            }
        }
        blocks.push(Block::Text {
            text: format!(
                "{}{}",
                prompts::RESULT_OF_SUMMARIZE,
                prompts::continuation(&context)
            ),
        });
        history.push(Message::user_blocks(blocks));
        events.insert(
            0,
            PolicyEvent::Summarised {
                replaced,
                kept: keep,
                archive: None,
            },
        );
        self.compacted = true;
    }

    /// The reminder with the list, appended to the user message sent.
    fn remind(&mut self, history: &mut [Message]) {
        let Some(list) = &self.checklist else { return };
        if self.since_update < self.switches.remindClineInterval {
            return;
        }
        let Some(last) = history.last_mut().filter(|m| m.role == Role::User) else {
            return;
        };
        let text = prompts::reminder_for(list);
        match &mut last.content {
            Content::Blocks(blocks) => blocks.push(Block::Text { text }),
            Content::Text(t) => {
                last.content = Content::Blocks(vec![
                    Block::Text {
                        text: std::mem::take(t),
                    },
                    Block::Text { text },
                ])
            }
        }
        self.since_update = 0;
    }
}

impl Policy for ClineFocusChain {
    fn configure(&mut self, overrides: &crate::policy::variant::Overrides) -> Result<(), String> {
        crate::policy::variant::set_fields(&mut self.switches, overrides)
    }

    fn variant_keys(&self) -> crate::policy::variant::Overrides {
        crate::policy::variant::fields(&self.switches)
    }

    fn info(&self) -> PolicyInfo {
        PolicyInfo {
            name: NAME.into(),
            family: "Cline",
            summary: "summarize_task once the last request reached the window less 40k: the first pair and the summary stay; the focus-chain checklist, kept in task state, returns in a reminder every 6 requests".into(),
            source: Source {
                upstream: "cline/cline@9ee618111d58630fea30b27439216448225458e0".into(),
                files: &[
                    "src/core/task/index.ts: the auto-condense branch, loadContext's focus-chain reminder",
                    "src/core/context/context-management/ContextManager.ts: shouldCompactContextWindow, getNextTruncationRange, ensureToolResultsFollowToolUse",
                    "src/core/context/context-management/context-window-utils.ts: getContextWindowInfo",
                    "src/core/task/tools/handlers/SummarizeTaskHandler.ts",
                    "src/core/prompts/contextManagement.ts: summarizeTask, continuationPrompt",
                    "src/core/task/focus-chain/{index,prompts}.ts, src/shared/FocusChainSettings.ts",
                ],
                license: "Apache-2.0",
                approximate: true,
            },
            constants: serde_json::json!({
                "switches": self.switches,
                "maxAllowedSize": self.switches.max_allowed_size(),
                "RESULT_MISSING": prompts::RESULT_MISSING,
            }),
            unit: Unit::Tokens,
            differences: vec![
                "the summarize_task answer is the lab's summariser, asked with upstream's prompt; its exchange (the instruction message and the tool call) is a side call, not a request of the replay",
                "the summary's task_progress is the current checklist unchanged, and the lab's summary never lists \"9. Required Files\", so no file is read in",
                "the file-read optimisation that can spare a compaction (attemptFileReadOptimization) is not modelled",
                "the prompts asking for a new list (no list yet, plan mode, a list the user edited) are not added: a recorded session cannot answer them; only the reminder of an existing list is",
                "environment details and rules that Cline adds to each user message are not modelled",
                "results travel as Cline's XML tool protocol sends them (`[summarize_task] Result:` text), not as native tool results",
            ],
        }
    }

    fn pointer_rules(&self) -> Vec<PointerRule> {
        Vec::new()
    }

    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        self.read_arrivals(history);
        self.since_update += 1;
        let mut events = Vec::new();
        if self.should_compact(history, ctx) {
            self.compact(history, ctx, &mut events);
        } else {
            self.remind(history);
        }
        self.seen = history.len();
        Ok(Prepared {
            request: history.clone(),
            events,
        })
    }
}
