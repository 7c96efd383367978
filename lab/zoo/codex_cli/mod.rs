//! OpenAI Codex CLI (openai/codex, `codex-rs`, Apache-2.0): model-visible
//! truncation of tool outputs, auto-compaction that keeps recent user
//! messages verbatim, and history normalisation.
//!
//! Read from the stored code index (2026-12-03), one commit per file:
//! - `codex-rs/core/src/context_manager/truncate.rs@1579d7d5a5c6a36b1c30803de7fd3d092ac89f4a`:
//!   `MODEL_FORMAT_MAX_BYTES` 10 KiB, `MODEL_FORMAT_MAX_LINES` 256, head+tail
//!   with `Total output lines: N`, `[... omitted X of N lines ...]` and
//!   `[... output truncated to fit N bytes ...]` ("clients get full streams;
//!   only content sent to the model is truncated");
//! - `codex-rs/core/src/compact.rs@0100b103625752f6a10c21b79a8c423761dc4c6a`:
//!   `COMPACT_USER_MESSAGE_MAX_TOKENS` 20,000, `build_compacted_history`
//!   (newest user messages first until the budget, the oldest kept one cut
//!   with `truncate_text(.., Tokens(remaining))`, then the summary as a user
//!   message `SUMMARY_PREFIX\n<summary>`; every tool item dropped);
//! - `codex-rs/core/templates/compact/prompt.md@11baefb5183c7d61c631dee6c3fd6aa9cc93aa73`
//!   and `summary_prefix.md@50a53333786249f03284067b997c41d84365c7cd`;
//! - `codex-rs/core/src/context_manager/normalize.rs@0803cc58789f6445cd3829bc33c6ca21fde17fac`:
//!   `ensure_call_outputs_present` (synthetic `aborted`), `remove_orphan_outputs`;
//! - the `TruncationPolicy::Tokens` middle truncation (`[…N tokens truncated…]`,
//!   4 bytes per token) from a `codex-rs/core/src/truncate.rs` of the
//!   `compact.rs` era, whose commit the index did not name;
//! - the auto-compaction default `context_window * 9 / 10` of
//!   `codex-rs/protocol/src/openai_models.rs` (openai/codex@cbc83d961e8132bfff4d340ab8342d181b79e95e,
//!   as quoted by third-party notes), with the 272,000-token window of the
//!   GPT-5 Codex models.

mod normalize;
mod truncate;

#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

use crate::error::LabResult;
use crate::message::{tool_results_mut, Block, Content, Message, Role};
use crate::policy::{
    PointerRule, Policy, PolicyCtx, PolicyEvent, PolicyInfo, Prepared, Source, SummaryRequest, Unit,
};

pub use normalize::ABORTED;
pub use truncate::{format_output_for_model, truncate_to_tokens};

/// The policy name in `lab policies`.
pub const NAME: &str = "codex-cli";

/// `SUMMARIZATION_PROMPT` (`templates/compact/prompt.md`), byte for byte.
pub const SUMMARIZATION_PROMPT: &str = "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another LLM that will resume the task.\n\nInclude:\n- Goal / user objective\n- Current progress and key decisions made\n- Important context, constraints, or user preferences\n- What remains to be done (clear next steps)\n- Any critical data, examples, or references needed to continue\n\nBe concise, structured, and focused on helping the next LLM seamlessly continue the work.\n";

/// `SUMMARY_PREFIX` (`templates/compact/summary_prefix.md`), byte for byte
/// (the double space before "assist" is upstream's).
pub const SUMMARY_PREFIX: &str = "Another language model started to solve this problem and produced a summary of its thinking process. You also have access to the state of the tools that were used by that language model. Use this to build on the work that has already been done and avoid duplicating work. Here is the summary produced by the other language model, use the information in this summary to  assist with your own analysis:";

/// Constants under their upstream names; `Default` is upstream's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[allow(non_snake_case)]
pub struct Switches {
    /// Model-visible byte cap of one tool output (10 KiB).
    pub MODEL_FORMAT_MAX_BYTES: usize,
    /// Model-visible line cap of one tool output (256).
    pub MODEL_FORMAT_MAX_LINES: usize,
    /// Token budget of the user messages kept verbatim by compaction (20,000).
    pub COMPACT_USER_MESSAGE_MAX_TOKENS: usize,
    /// The model's context window (272,000, GPT-5 Codex).
    pub context_window: usize,
    /// Explicit auto-compaction limit; `None` means 90% of `context_window`.
    pub auto_compact_token_limit: Option<usize>,
    /// Fault (off): normalisation keeps outputs whose call is gone, as
    /// harnesses did before their fixes (<https://github.com/cline/cline/pull/7225>,
    /// <https://github.com/anthropics/claude-code/issues/13964>).
    pub fault_keep_orphan_outputs: bool,
    /// The call (0-based) at which the session is resumed from its rollout, if any.
    pub resume_at_turn: Option<usize>,
    /// Fault (off): the resume replays every tool output twice
    /// (<https://github.com/google-gemini/gemini-cli/pull/29366>).
    pub fault_resume_duplicates_outputs: bool,
}

impl Default for Switches {
    fn default() -> Self {
        Switches {
            MODEL_FORMAT_MAX_BYTES: truncate::MODEL_FORMAT_MAX_BYTES,
            MODEL_FORMAT_MAX_LINES: truncate::MODEL_FORMAT_MAX_LINES,
            COMPACT_USER_MESSAGE_MAX_TOKENS: 20_000,
            context_window: 272_000,
            auto_compact_token_limit: None,
            fault_keep_orphan_outputs: false,
            resume_at_turn: None,
            fault_resume_duplicates_outputs: false,
        }
    }
}

impl Switches {
    /// The token count at which auto-compaction runs.
    pub fn compact_limit(&self) -> usize {
        self.auto_compact_token_limit
            .unwrap_or(self.context_window * 9 / 10)
    }
}

/// The policy: switches plus how many outputs are already formatted for the
/// model (upstream formats every output once, when it is recorded).
#[derive(Debug, Clone, Default)]
pub struct CodexCli {
    /// Constants and faults.
    pub switches: Switches,
    /// Outputs of the history already formatted. Between calls the history
    /// only grows at its end, so they are its first ones: counting positions,
    /// not call ids, formats an output whose id an earlier one reused.
    recorded: usize,
}

/// A boxed policy with upstream's defaults.
pub fn make() -> Box<dyn Policy> {
    Box::new(CodexCli::default())
}

impl CodexCli {
    /// Format every output not yet recorded, as `record_items` does
    /// (`process_item` on each output item, with no memory of call ids).
    fn record(&self, history: &mut [Message], events: &mut Vec<PolicyEvent>) {
        let s = &self.switches;
        for (tool_use_id, content) in tool_results_mut(history).skip(self.recorded) {
            let shown = format_output_for_model(
                content,
                s.MODEL_FORMAT_MAX_BYTES,
                s.MODEL_FORMAT_MAX_LINES,
            );
            if shown != *content {
                events.push(PolicyEvent::Truncated {
                    id: tool_use_id.clone(),
                    from_chars: content.chars().count(),
                    to_chars: shown.chars().count(),
                    saved_to: None,
                });
                *content = shown;
            }
        }
    }

    /// The faulty resume: every output of a tool-result message appears twice.
    fn resume(&self, history: &mut [Message], turn: usize) {
        let s = &self.switches;
        if s.resume_at_turn != Some(turn) || !s.fault_resume_duplicates_outputs {
            // An intact resume rebuilds exactly the history it saved.
            return;
        }
        for m in history.iter_mut().filter(|m| m.is_tool_result()) {
            if let Content::Blocks(blocks) = &mut m.content {
                *blocks = blocks
                    .drain(..)
                    .flat_map(|b| {
                        let twice = matches!(b, Block::ToolResult { .. });
                        std::iter::repeat_n(b, if twice { 2 } else { 1 })
                    })
                    .collect();
            }
        }
    }

    /// `run_compact_task_inner` + `build_compacted_history`.
    fn compact(
        &self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
        events: &mut Vec<PolicyEvent>,
    ) {
        let req = SummaryRequest {
            prompt: SUMMARIZATION_PROMPT,
            messages: history,
            previous: None,
        };
        let summary = match ctx.model.summarise(&req) {
            Ok(s) => s,
            Err(e) => {
                events.push(PolicyEvent::ModelFailed {
                    role: "summary",
                    outcome: format!("compaction abandoned, history unchanged: {e}"),
                });
                return;
            }
        };
        let kept = select_user_messages(history, self.switches.COMPACT_USER_MESSAGE_MAX_TOKENS);
        let replaced = history.len();
        let mut new: Vec<Message> = kept.into_iter().map(Message::user_text).collect();
        new.push(Message::user_text(format!("{SUMMARY_PREFIX}\n{summary}")));
        events.push(PolicyEvent::Summarised {
            replaced,
            kept: new.len() - 1,
            archive: None,
        });
        *history = new;
    }
}

/// `collect_user_messages` then the newest-first selection within `max_tokens`.
fn select_user_messages(history: &[Message], max_tokens: usize) -> Vec<String> {
    let summary_start = format!("{SUMMARY_PREFIX}\n");
    let all: Vec<String> = history
        .iter()
        .filter(|m| m.role == Role::User)
        .map(Message::text)
        .filter(|t| !t.is_empty() && !t.starts_with(&summary_start))
        .collect();
    let mut selected = Vec::new();
    let mut remaining = max_tokens;
    for text in all.iter().rev() {
        if remaining == 0 {
            break;
        }
        let tokens = truncate::approx_token_count(text);
        if tokens <= remaining {
            selected.push(text.clone());
            remaining -= tokens;
        } else {
            selected.push(truncate_to_tokens(text, remaining));
            break;
        }
    }
    selected.reverse();
    selected
}

impl Policy for CodexCli {
    fn configure(&mut self, overrides: &crate::policy::variant::Overrides) -> Result<(), String> {
        crate::policy::variant::set_fields(&mut self.switches, overrides)
    }

    fn variant_keys(&self) -> crate::policy::variant::Overrides {
        crate::policy::variant::fields(&self.switches)
    }

    fn info(&self) -> PolicyInfo {
        PolicyInfo {
            name: NAME.into(),
            family: "Codex CLI",
            summary: "tool outputs cut to 10 KiB / 256 lines for the model; compaction keeps ≤20k tokens of user messages plus a summary; calls and outputs kept paired".into(),
            source: Source {
                upstream: "openai/codex@0100b103625752f6a10c21b79a8c423761dc4c6a (compact.rs; other files at the commits in the module doc)".into(),
                files: &[
                    "codex-rs/core/src/context_manager/truncate.rs@1579d7d5",
                    "codex-rs/core/src/compact.rs@0100b103",
                    "codex-rs/core/templates/compact/prompt.md@11baefb5",
                    "codex-rs/core/templates/compact/summary_prefix.md@50a53333",
                    "codex-rs/core/src/context_manager/normalize.rs@0803cc58",
                    "codex-rs/protocol/src/openai_models.rs@cbc83d96 (auto-compact 90%)",
                ],
                license: "Apache-2.0 (constants and strings reproduced, no code copied)",
                approximate: false,
            },
            constants: serde_json::json!({
                "switches": self.switches,
                "auto_compact_at": self.switches.compact_limit(),
                "SUMMARIZATION_PROMPT": SUMMARIZATION_PROMPT,
                "SUMMARY_PREFIX": SUMMARY_PREFIX,
            }),
            unit: Unit::Tokens,
            differences: vec![
                "mechanisms read at different upstream commits (listed in the source) and combined in one policy",
                "Responses API items are mapped to Anthropic-shaped messages: a synthetic `aborted` output joins the user message after its call",
                "the initial context (instructions, AGENTS.md, environment) is not modelled, so compaction rebuilds only user messages and the summary",
                "compaction runs when the run's token counter reaches the limit, not on the API's reported usage",
                "the overflow trim of the compaction request and the stable v5-UUID ids of synthetic outputs are not modelled",
            ],
        }
    }

    fn sends_responses(&self) -> bool {
        // Codex talks to `/responses`: its requests are checked against
        // the Responses input-item rules too.
        true
    }

    fn pointer_rules(&self) -> Vec<PointerRule> {
        // Truncated output and compaction point nowhere: the client keeps the
        // full stream, the model never sees where.
        Vec::new()
    }

    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        let mut events = Vec::new();
        // Recorded first: a resumed rollout replays outputs already formatted.
        self.record(history, &mut events);
        self.resume(history, ctx.turn);
        self.normalize(history, &mut events);
        if ctx.tokens.count_messages(history) >= self.switches.compact_limit() {
            self.compact(history, ctx, &mut events);
        }
        // Whatever the steps above inserted, dropped or compacted away is
        // counted as it now stands; the next call appends after it.
        self.recorded = tool_results_mut(history).count();
        Ok(Prepared {
            request: history.clone(),
            events,
        })
    }
}

impl CodexCli {
    /// `normalize_history` before every prompt.
    fn normalize(&self, history: &mut Vec<Message>, events: &mut Vec<PolicyEvent>) {
        normalize::ensure_call_outputs_present(history, events);
        if !self.switches.fault_keep_orphan_outputs {
            normalize::remove_orphan_outputs(history, events);
        }
    }
}
