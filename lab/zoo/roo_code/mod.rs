//! Roo Code's automatic context condensing: before each request, when the
//! context reaches `autoCondenseContextPercent` of the window or passes the
//! allowed tokens (window less a 10 % buffer less the reserved output), the
//! messages between the first and the last three are summarised by a model
//! into one assistant message placed before the kept three; when condensing
//! is off or refused and the context is over the allowed tokens, a sliding
//! window hides an even number of the oldest messages after the first.
//!
//! Upstream: `RooCodeInc/Roo-Code@d1e74cb` (d1e74cb3e35bebdac3daab28919a87f643b09ec7,
//! the last commit before "Intelligent Context Condensation v2", which
//! replaced kept messages by a summary-only "fresh start"); Apache-2.0,
//! constants and strings only are reproduced:
//! - `src/core/context-management/index.ts` (`manageContext`, the renamed
//!   `truncateConversationIfNeeded` of `sliding-window/index.ts`;
//!   `TOKEN_BUFFER_PERCENTAGE`, `truncateConversation`);
//! - `src/core/condense/index.ts` (`summarizeConversation`,
//!   `getKeepMessagesWithToolBlocks`, `getMessagesSinceLastSummary`,
//!   `getEffectiveApiHistory`, `N_MESSAGES_TO_KEEP`, the threshold bounds);
//! - `src/shared/support-prompt.ts` (the `CONDENSE` prompt);
//! - `src/core/task/Task.ts` (`attemptApiRequest`: the defaults
//!   `autoCondenseContext = true`, `autoCondenseContextPercent = 100`, the
//!   request built from the effective history; `buildCleanConversationHistory`);
//! - `src/shared/api.ts` (`getModelMaxOutputTokens`) and
//!   `packages/types/src/providers/anthropic.ts` (the default model
//!   `claude-sonnet-4-5`: 200 000 tokens of window, 8 192 reserved);
//! - `src/i18n/locales/en/common.json` (the refusal texts).
//!
//! A projecting design in the lab: Roo keeps every message and tags the
//! hidden ones (`condenseParent`, `truncationParent`), so the history stays
//! whole and the request is the effective history this policy keeps.

mod condense;

use serde::{Deserialize, Serialize};

use crate::error::LabResult;
use crate::message::{Block, Content, Message, Role};
use crate::policy::{
    PointerRule, Policy, PolicyCtx, PolicyEvent, PolicyInfo, Prepared, Source, Unit,
};

pub use condense::{
    effective_api_history, keep_tool_uses, messages_since_last_summary, truncate_conversation,
    ApiMessage,
};

/// `TOKEN_BUFFER_PERCENTAGE` (RooCodeInc/Roo-Code@d1e74cb,
/// `src/core/context-management/index.ts`): the share of the window kept free.
pub const TOKEN_BUFFER_PERCENTAGE: f64 = 0.1;
/// `N_MESSAGES_TO_KEEP` (RooCodeInc/Roo-Code@d1e74cb, `src/core/condense/index.ts`).
pub const N_MESSAGES_TO_KEEP: usize = 3;
/// `MIN_CONDENSE_THRESHOLD` (RooCodeInc/Roo-Code@d1e74cb,
/// `src/core/condense/index.ts`): lowest valid profile threshold, percent.
pub const MIN_CONDENSE_THRESHOLD: f64 = 5.0;
/// `MAX_CONDENSE_THRESHOLD` (RooCodeInc/Roo-Code@d1e74cb,
/// `src/core/condense/index.ts`): highest valid profile threshold, percent.
pub const MAX_CONDENSE_THRESHOLD: f64 = 100.0;
/// `ANTHROPIC_DEFAULT_MAX_TOKENS` (RooCodeInc/Roo-Code@d1e74cb,
/// `packages/types/src/providers/anthropic.ts`): reserved output when
/// `maxTokens` is unset, and what `getModelMaxOutputTokens` returns for a
/// Claude hybrid-reasoning model with reasoning off.
pub const ANTHROPIC_DEFAULT_MAX_TOKENS: usize = 8192;
/// `contextWindow` of `claude-sonnet-4-5`, Roo's default Anthropic model
/// (RooCodeInc/Roo-Code@d1e74cb, `packages/types/src/providers/anthropic.ts`).
pub const DEFAULT_CONTEXT_WINDOW: usize = 200_000;
/// The fraction `manageContext` passes to `truncateConversation`
/// (RooCodeInc/Roo-Code@d1e74cb, `src/core/context-management/index.ts`).
pub const TRUNCATION_FRACTION: f64 = 0.5;
/// `supportPrompt.default.CONDENSE`, the summary call's system prompt, byte
/// for byte (RooCodeInc/Roo-Code@d1e74cb, `src/shared/support-prompt.ts`).
pub const SUMMARY_PROMPT: &str = include_str!("condense_prompt.txt");
/// The final user message of the summary call (RooCodeInc/Roo-Code@d1e74cb,
/// `src/core/condense/index.ts`, `finalRequestMessage`).
pub const FINAL_REQUEST: &str =
    "Summarize the conversation so far, as described in the prompt instructions.";
/// The user message put before a summary when the history does not start
/// with a user message (RooCodeInc/Roo-Code@d1e74cb, `src/core/condense/index.ts`,
/// `getMessagesSinceLastSummary`).
pub const CONTINUE_FROM_SUMMARY: &str = "Please continue from the following summary:";
/// `common:errors.condense_not_enough_messages` (RooCodeInc/Roo-Code@d1e74cb,
/// `src/i18n/locales/en/common.json`).
pub const CONDENSE_NOT_ENOUGH_MESSAGES: &str = "Not enough messages to condense context";
/// `common:errors.condensed_recently` (RooCodeInc/Roo-Code@d1e74cb,
/// `src/i18n/locales/en/common.json`).
pub const CONDENSED_RECENTLY: &str = "Context was condensed recently; skipping this attempt";
/// `common:errors.condense_failed` (an empty summary; RooCodeInc/Roo-Code@d1e74cb,
/// `src/i18n/locales/en/common.json`).
pub const CONDENSE_FAILED: &str = "Failed to condense context";
/// `common:errors.condense_context_grew` (RooCodeInc/Roo-Code@d1e74cb,
/// `src/i18n/locales/en/common.json`).
pub const CONDENSE_CONTEXT_GREW: &str =
    "Context size increased during condensing; skipping this attempt";

/// The truncation marker's text (RooCodeInc/Roo-Code@d1e74cb,
/// `src/core/context-management/index.ts`, `truncateConversation`).
pub fn truncation_marker(removed: usize) -> String {
    format!("[Sliding window truncation: {removed} messages hidden to reduce context]")
}

/// Switches, under Roo's setting names; `Default` is Roo's defaults with its
/// default model (`claude-sonnet-4-5`, reasoning off).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AutoCondense {
    /// `autoCondenseContext` (default `true`): condense before truncating.
    pub auto_condense_context: bool,
    /// `autoCondenseContextPercent` (default 100): condense at this percent
    /// of the window.
    pub auto_condense_context_percent: f64,
    /// `profileThresholds[currentProfileId]`: `-1` inherits the global
    /// percent; values outside `MIN..=MAX_CONDENSE_THRESHOLD` are ignored.
    pub profile_threshold: Option<f64>,
    /// The model's `contextWindow`, tokens.
    pub context_window: usize,
    /// `getModelMaxOutputTokens` for the model; 0 means unset
    /// (`ANTHROPIC_DEFAULT_MAX_TOKENS`, as upstream's `maxTokens || …`).
    pub max_tokens: usize,
}

impl Default for AutoCondense {
    fn default() -> Self {
        AutoCondense {
            auto_condense_context: true,
            auto_condense_context_percent: 100.0,
            profile_threshold: None,
            context_window: DEFAULT_CONTEXT_WINDOW,
            max_tokens: ANTHROPIC_DEFAULT_MAX_TOKENS,
        }
    }
}

impl AutoCondense {
    /// `allowedTokens = contextWindow * (1 - TOKEN_BUFFER_PERCENTAGE) - reservedTokens`,
    /// in floating point as upstream computes it.
    pub fn allowed_tokens(&self) -> f64 {
        let reserved = if self.max_tokens == 0 {
            ANTHROPIC_DEFAULT_MAX_TOKENS
        } else {
            self.max_tokens
        };
        self.context_window as f64 * (1.0 - TOKEN_BUFFER_PERCENTAGE) - reserved as f64
    }

    /// `effectiveThreshold`: the profile's threshold when valid, else the global one.
    pub fn effective_threshold(&self) -> f64 {
        match self.profile_threshold {
            Some(t)
                if t != -1.0 && (MIN_CONDENSE_THRESHOLD..=MAX_CONDENSE_THRESHOLD).contains(&t) =>
            {
                t
            }
            _ => self.auto_condense_context_percent,
        }
    }

    /// `manageContext`'s condense test: `contextPercent >= effectiveThreshold
    /// || prevContextTokens > allowedTokens`, only with condensing on.
    pub fn should_condense(&self, prev_tokens: usize) -> bool {
        let percent = 100.0 * prev_tokens as f64 / self.context_window as f64;
        self.auto_condense_context
            && (percent >= self.effective_threshold() || self.over_allowed(prev_tokens))
    }

    /// `prevContextTokens > allowedTokens`: the fallback truncation's test.
    pub fn over_allowed(&self, prev_tokens: usize) -> bool {
        prev_tokens as f64 > self.allowed_tokens()
    }
}

/// Roo Code as a policy: its stored API history with the tags that hide
/// messages, and the request built from it.
#[derive(Debug, Clone, Default)]
pub struct RooCode {
    /// The switches.
    pub config: AutoCondense,
    /// Roo's `apiConversationHistory`: every message, tagged when hidden.
    pub stored: Vec<ApiMessage>,
    /// The refusal or failure text of the last management step, if any
    /// (what Roo shows as `condense_context_error`).
    pub last_error: Option<String>,
    seen: usize,
    calls: usize,
    next_id: u32,
}

/// `roo-code-auto-condense` with Roo's defaults.
pub fn auto_condense() -> Box<dyn Policy> {
    Box::new(RooCode::default())
}

/// The name this policy is registered under.
pub const NAME: &str = "roo-code-auto-condense";

impl RooCode {
    /// The policy with these switches and an empty history.
    pub fn new(config: AutoCondense) -> Self {
        RooCode {
            config,
            ..RooCode::default()
        }
    }

    /// What Task sends: `getMessagesSinceLastSummary(getEffectiveApiHistory(history))`.
    pub fn request(&self) -> Vec<Message> {
        let effective = effective_api_history(&self.stored);
        messages_since_last_summary(&effective)
    }

    /// Append `m` as Roo's history holds it: one user message per turn
    /// (Roo sends the user's words during a tool loop in the same message as
    /// the results), so a user message after a user message joins it, its
    /// results first as the provider wants them. Such a pair only ever
    /// arrives in one batch, so no message already sent changes.
    fn store(&mut self, m: Message) {
        match self.stored.last_mut() {
            Some(last) if last.message.role == Role::User && m.role == Role::User => {
                let mut blocks = content_blocks(std::mem::replace(
                    &mut last.message.content,
                    Content::Blocks(Vec::new()),
                ));
                blocks.extend(content_blocks(m.content));
                // A stable sort: results first, each group in its order.
                blocks.sort_by_key(|b| !matches!(b, Block::ToolResult { .. }));
                last.message.content = Content::Blocks(blocks);
            }
            _ => self.stored.push(ApiMessage::from(m)),
        }
    }

    /// A fresh id for a summary or a truncation (upstream: a random UUID).
    fn fresh_id(&mut self) -> u32 {
        self.next_id += 1;
        self.next_id
    }

    /// `manageContext` at `prev_tokens` of context: condense when due, fall
    /// back to the sliding window when condensing is off or refused and the
    /// context is over the allowed tokens.
    pub fn manage(&mut self, prev_tokens: usize, ctx: &mut PolicyCtx<'_>) -> Vec<PolicyEvent> {
        let mut events = Vec::new();
        self.last_error = None;
        if self.config.should_condense(prev_tokens) {
            let id = self.fresh_id();
            match condense::summarize(&self.stored, prev_tokens, id, ctx) {
                Ok(done) => {
                    events.push(PolicyEvent::Summarised {
                        replaced: done.replaced,
                        kept: done.kept,
                        archive: None,
                    });
                    self.stored = done.stored;
                    return events;
                }
                Err(e) => {
                    if e.model_called {
                        events.push(PolicyEvent::ModelFailed {
                            role: "summary",
                            outcome: self.failure_outcome(&e.message, prev_tokens),
                        });
                    }
                    self.last_error = Some(e.message);
                }
            }
        }
        if self.config.over_allowed(prev_tokens) {
            self.truncate(&mut events);
        }
        events
    }

    fn failure_outcome(&self, message: &str, prev_tokens: usize) -> String {
        let next = if self.config.over_allowed(prev_tokens) {
            "sliding window truncation follows"
        } else {
            "context left whole"
        };
        format!("{message}; {next}")
    }

    /// `truncateConversation(messages, 0.5)`, with its event.
    fn truncate(&mut self, events: &mut Vec<PolicyEvent>) {
        let id = self.fresh_id();
        let removed = truncate_conversation(&mut self.stored, TRUNCATION_FRACTION, id);
        if removed > 0 {
            events.push(PolicyEvent::Dropped {
                messages: removed,
                why: truncation_marker(removed),
            });
        }
    }
}

impl Policy for RooCode {
    fn configure(&mut self, overrides: &crate::policy::variant::Overrides) -> Result<(), String> {
        crate::policy::variant::set_fields(&mut self.config, overrides)
    }

    fn variant_keys(&self) -> crate::policy::variant::Overrides {
        crate::policy::variant::fields(&self.config)
    }

    fn info(&self) -> PolicyInfo {
        PolicyInfo {
            name: NAME.into(),
            family: "Roo Code",
            summary: "at the threshold, an assistant summary replaces all but the first and last 3 messages; else a sliding window hides an even count".into(),
            source: Source {
                upstream: "RooCodeInc/Roo-Code@d1e74cb".into(),
                files: &[
                    "src/core/context-management/index.ts",
                    "src/core/condense/index.ts",
                    "src/shared/support-prompt.ts",
                    "src/core/task/Task.ts",
                    "src/shared/api.ts",
                    "packages/types/src/providers/anthropic.ts",
                ],
                license: "Apache-2.0",
                approximate: false,
            },
            constants: self.constants(),
            unit: Unit::Tokens,
            differences: DIFFERENCES.to_vec(),
        }
    }

    fn pointer_rules(&self) -> Vec<PointerRule> {
        // Hidden messages stay in Roo's task history for rewinds, but no
        // placeholder names them to the model.
        Vec::new()
    }

    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        for m in history.get(self.seen..).unwrap_or_default() {
            self.store(m.clone());
        }
        self.seen = history.len();
        let mut request = self.request();
        let mut events = Vec::new();
        // Task manages context only once a request has reported usage
        // (`if (contextTokens)`), so never before the first call.
        if self.calls > 0 && !self.stored.is_empty() {
            events = self.manage(ctx.tokens.count_messages(&request), ctx);
            // Only a summary or a truncation changes the stored history, and
            // each records an event: without one the request stands.
            if !events.is_empty() {
                request = self.request();
            }
        }
        self.calls += 1;
        Ok(Prepared { request, events })
    }
}

impl RooCode {
    fn constants(&self) -> serde_json::Value {
        serde_json::json!({
            "TOKEN_BUFFER_PERCENTAGE": TOKEN_BUFFER_PERCENTAGE,
            "N_MESSAGES_TO_KEEP": N_MESSAGES_TO_KEEP,
            "MIN_CONDENSE_THRESHOLD": MIN_CONDENSE_THRESHOLD,
            "MAX_CONDENSE_THRESHOLD": MAX_CONDENSE_THRESHOLD,
            "autoCondenseContext": self.config.auto_condense_context,
            "autoCondenseContextPercent": self.config.auto_condense_context_percent,
            "contextWindow": self.config.context_window,
            "maxTokens": self.config.max_tokens,
            "truncateConversation fracToRemove": TRUNCATION_FRACTION,
        })
    }
}

/// A message's content as blocks (a plain string is one text block).
fn content_blocks(content: Content) -> Vec<Block> {
    match content {
        Content::Text(text) => vec![Block::Text { text }],
        Content::Blocks(blocks) => blocks,
    }
}

/// Every deliberate difference from upstream, for `lab policies` and GUIDE.md.
const DIFFERENCES: &[&str] = &[
    "read at d1e74cb, the last commit before Condensation v2 (upstream's newest code sends only a user-role summary, keeps no messages and folds read files into it)",
    "assumed model: claude-sonnet-4-5 with reasoning off (window 200 000, 8 192 reserved); no system prompt or tool definitions are counted",
    "context tokens are the run's counter over the request about to be sent (upstream: the previous request's reported usage plus the new last message)",
    "the summary is whatever the lab's deterministic summariser returns for the CONDENSE prompt, the messages since the last summary and the final request line",
    "the summary's synthetic reasoning block is not kept: buildCleanConversationHistory strips it for this model, so it is neither sent, counted nor re-summarised",
    "a failing summary call (upstream: an exception that fails the request) is treated like a refused condense: the sliding window follows when over the allowed tokens",
    "the lab's thinking blocks are Anthropic thinking, not Roo's `reasoning` blocks, so no reasoning is carried into the summary with preserved tool calls",
    "consecutive user messages of a transcript are stored as one (Roo's history alternates: a user's words during a tool loop travel with the results), tool results first; consecutive assistant messages are kept as they are",
    "not modelled: manual condensing, a custom condensing prompt, rewinds that restore hidden messages, image removal for models without images",
];

#[cfg(test)]
mod tests;
