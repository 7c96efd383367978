//! OpenAI's server-side compaction on `/responses`: a request carrying
//! `context_management: [{"type": "compaction", "compact_threshold": N}]`
//! is compacted by the server once its rendered token count crosses `N`.
//!
//! There is no upstream code (the compaction runs inside the API); the
//! sources are OpenAI's documentation and SDK types, read 2026-12-05:
//! - the compaction guide, <https://developers.openai.com/api/docs/guides/compaction>
//!   (also served as `…/guides/context-management`): "When the rendered token
//!   count crosses the configured threshold, the server runs server-side
//!   compaction"; the server "emits a compaction output item in the same
//!   stream, and prunes context before continuing inference"; the item "is
//!   opaque and not intended to be human-interpretable"; with stateless
//!   input-array chaining the client appends output items as usual and "can
//!   drop items that came before the most recent compaction item";
//! - the SDK types generated from the API spec (openai/openai-python
//!   `src/openai/types/responses/response_compaction_item.py`,
//!   `response_compaction_item_param_param.py`): an item `{type:
//!   "compaction", encrypted_content, id}`, `encrypted_content` required;
//!   `context_management` entries `{type: "compaction", compact_threshold}`
//!   with the threshold optional and no documented default.
//!
//! How Codex treats a compaction's result (the only client read): it
//! replaces its history with what the server returned
//! (openai/codex `codex-rs/core/src/compact_remote.rs`,
//! `run_remote_compact_task_inner_impl`: `replace_history(new_history)`).
//!
//! The lab's model: before each call, when the envelope (instructions and
//! tools are rendered too) plus the history is over `compact_threshold`
//! tokens, the whole input becomes one compaction item, and the history is
//! that item (the client drops what came before it, as the guide allows);
//! later calls append to it. The item's content is encrypted and its size
//! undocumented: the lab's item holds the run's summariser's text (by
//! default the extractive model, at most 2,000 chars, about 500 tokens: an
//! estimate), the previous item's text passed on as the summary to extend.
//! Every difference is in [`DIFFERENCES`]; the policy is approximate.
//!
//! Its requests are checked against the Responses input-item rules too
//! ([`crate::policy::responses`]).

use serde::{Deserialize, Serialize};

use crate::error::LabResult;
use crate::message::Message;
use crate::policy::responses::{compaction_content, compaction_message};
use crate::policy::{
    PointerRule, Policy, PolicyCtx, PolicyEvent, PolicyInfo, Prepared, Source, SummaryRequest, Unit,
};

/// The policy name in `lab policies`.
pub const NAME: &str = "openai-server-compaction";

/// `context_window` of Codex's default model, `gpt-5.2-codex` (openai/codex
/// `codex-rs/core/models.json` at 21dac7d7a4d1cef78f2b399180653b3b8f03f2f7).
pub const CODEX_CONTEXT_WINDOW: usize = 272_000;

/// The default `compact_threshold`: the API has none, so the lab takes the
/// limit at which Codex compacts its own history, 90 % of the window
/// (`auto_compact_token_limit`, `(context_window * 9) / 10`, openai/codex
/// `codex-rs/protocol/src/openai_models.rs`): 244,800 tokens.
pub const DEFAULT_COMPACT_THRESHOLD: usize = CODEX_CONTEXT_WINDOW * 9 / 10;

/// What the lab's summariser is asked: OpenAI publishes no prompt for the
/// server's compaction pass, so this names the stand-in rather than quoting.
pub const PROMPT: &str =
    "(OpenAI server-side compaction: no published prompt; the lab's summariser stands in)";

/// The `context_management` entry, under the API's field names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Switches {
    /// `compact_threshold`: rendered tokens past which the server compacts.
    pub compact_threshold: usize,
}

impl Default for Switches {
    fn default() -> Self {
        Switches {
            compact_threshold: DEFAULT_COMPACT_THRESHOLD,
        }
    }
}

/// The server's compaction as a policy: the switches and a count of
/// compactions so far.
#[derive(Debug, Clone, Default)]
pub struct ServerCompaction {
    /// The `context_management` entry.
    pub config: Switches,
    /// Compactions made so far.
    pub compactions: usize,
}

/// `openai-server-compaction` with the lab's default threshold.
pub fn make() -> Box<dyn Policy> {
    Box::new(ServerCompaction::default())
}

impl ServerCompaction {
    /// The rendered token count of a request: the envelope (instructions,
    /// tools) plus the input items.
    fn rendered(history: &[Message], ctx: &PolicyCtx<'_>) -> usize {
        ctx.envelope + ctx.tokens.count_messages(history)
    }

    /// Compact the input before the first unanswered call into one item
    /// (the whole input when every call is answered; nothing when such a
    /// call comes first), or say why the summary failed.
    fn compact(&mut self, history: &mut Vec<Message>, ctx: &mut PolicyCtx<'_>) -> Vec<PolicyEvent> {
        let previous = history.first().and_then(compaction_content);
        let start = usize::from(previous.is_some());
        let end = first_pending(history);
        if end <= start {
            return Vec::new();
        }
        let req = SummaryRequest {
            prompt: PROMPT,
            messages: &history[start..end],
            previous,
        };
        match ctx.model.summarise(&req) {
            Ok(summary) => {
                let item = compaction_message(stand_in(&summary));
                let replaced = history.splice(..end, [item]).count();
                self.compactions += 1;
                vec![PolicyEvent::Summarised {
                    replaced,
                    kept: history.len() - 1,
                    archive: None,
                }]
            }
            Err(e) => vec![PolicyEvent::ModelFailed {
                role: "summary",
                outcome: format!("{e}; the input is sent whole, over the threshold"),
            }],
        }
    }
}

/// The first message with a call no later message answers (the history's
/// length when there is none). The API refuses an input with an unanswered
/// call (`missing_function_call_output`), so a real client never sends one; a
/// recorded session can (a reply split over several messages, an
/// interrupted turn), and the lab keeps such a call and what follows it
/// after the item rather than summarise half a pair.
fn first_pending(history: &[Message]) -> usize {
    let mut answered = std::collections::BTreeSet::new();
    let mut first = history.len();
    for (i, m) in history.iter().enumerate().rev() {
        answered.extend(m.tool_result_ids());
        if m.tool_use_ids().iter().any(|id| !answered.contains(id)) {
            first = i;
        }
    }
    first
}

/// The item's stand-in content: the summary, or a note when the summariser
/// kept nothing (the server's item always has content).
fn stand_in(summary: &str) -> &str {
    if summary.trim().is_empty() {
        EMPTY_SUMMARY
    } else {
        summary
    }
}

/// The stand-in when the summariser kept nothing.
pub const EMPTY_SUMMARY: &str = "(the lab's summariser kept nothing of the compacted items)";

impl Policy for ServerCompaction {
    fn info(&self) -> PolicyInfo {
        PolicyInfo {
            name: NAME.into(),
            family: "OpenAI API",
            summary: "past compact_threshold rendered tokens, the server turns the whole input into one opaque compaction item; the client keeps only what follows it".into(),
            source: Source {
                upstream: "https://developers.openai.com/api/docs/guides/compaction (read 2026-12-05); openai/openai-python response_compaction_item*.py".into(),
                files: &[
                    "guide: Server-side compaction, User journey (rendered token count, compaction output item, prunes context, drop items before the most recent compaction item)",
                    "openai/codex codex-rs/core/src/compact_remote.rs (replace_history with the returned items)",
                    "openai/codex codex-rs/protocol/src/openai_models.rs auto_compact_token_limit; codex-rs/core/models.json@21dac7d7 (the default threshold)",
                ],
                license: "documentation (no code reproduced)",
                approximate: true,
            },
            constants: serde_json::json!({
                "context_management": [{
                    "type": "compaction",
                    "compact_threshold": self.config.compact_threshold,
                }],
            }),
            unit: Unit::Tokens,
            differences: DIFFERENCES.to_vec(),
        }
    }

    fn pointer_rules(&self) -> Vec<PointerRule> {
        // The compaction item names no place the originals went.
        Vec::new()
    }

    fn sends_responses(&self) -> bool {
        true
    }

    fn configure(&mut self, overrides: &crate::policy::variant::Overrides) -> Result<(), String> {
        crate::policy::variant::set_fields(&mut self.config, overrides)
    }

    fn variant_keys(&self) -> crate::policy::variant::Overrides {
        crate::policy::variant::fields(&self.config)
    }

    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        let events = if Self::rendered(history, ctx) > self.config.compact_threshold {
            self.compact(history, ctx)
        } else {
            Vec::new()
        };
        Ok(Prepared {
            request: history.clone(),
            events,
        })
    }
}

/// Every deliberate difference from the documented behaviour, for `lab
/// policies` and GUIDE.md.
pub const DIFFERENCES: &[&str] = &[
    "server-side and closed: read from OpenAI's guide and SDK types only (approximate)",
    "the compaction item's content is encrypted and its size undocumented: the lab's item holds the run's summariser's text (default extractive, at most 2,000 chars, about 500 tokens: an estimate), extending the previous item's text",
    "compact_threshold has no documented default: the lab uses 244,800 tokens, 90 % of Codex's 272,000-token window, the limit at which Codex compacts its own history",
    "a call still unanswered when the threshold is crossed (a recorded reply split over messages, an interrupted turn; the API would refuse such an input) stays verbatim after the item with everything after it",
    "the whole input becomes one item (the guide lets the client drop everything before the latest compaction item); the standalone /responses/compact endpoint, which returns the user messages verbatim beside the item, is not modelled",
    "compaction happens before the call and the recorded reply follows the item; the server compacts mid-stream, after the threshold is crossed",
    "tokens are the run's counter over the lab's messages plus the session's envelope estimate, not OpenAI's rendered count",
];

#[cfg(test)]
mod tests;
