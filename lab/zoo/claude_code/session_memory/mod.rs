//! Claude Code's session-memory compaction: a session-memory file, kept up
//! to date by a side extraction after replies, becomes the summary, and the
//! messages after the last one it covers are kept verbatim, never split
//! from their tool pairs.
//!
//! Source: public mirrors of Claude Code's source, so approximate. The flow
//! is `claude-code-best/claude-code@50049c61ccb0c14d8f9fbd6daec14a32d11f3a3b`,
//! `src/services/compact/sessionMemoryCompact.ts` (`DEFAULT_SM_COMPACT_CONFIG`
//! `minTokens` 10,000, `minTextBlockMessages` 5, `maxTokens` 40,000;
//! `calculateMessagesToKeepIndex`, `trySessionMemoryCompaction`, see
//! [`keep`]); that mirror translated its strings into Chinese, so the strings
//! and the extraction are read in `DroxKiwi/claude-code-leak-packaged@fb1320d1`
//! (same code): `src/services/SessionMemory/sessionMemory.ts`
//! (`shouldExtractMemory`, `updateLastSummarizedMessageIdIfSafe`),
//! `sessionMemoryUtils.ts` (`DEFAULT_SESSION_MEMORY_CONFIG`
//! `minimumMessageTokensToInit` 10,000, `minimumTokensBetweenUpdate` 5,000,
//! `toolCallsBetweenUpdates` 3), `prompts.ts` and `compact/prompt.ts` (see
//! [`memory`]), `compact/autoCompact.ts` (`autoCompactIfNeeded` tries this
//! first, then the legacy compaction; both reset the last summarised id).
//!
//! What the mirror's code does, as modelled here:
//! - after each reply, extraction runs once the context reached
//!   `minimumMessageTokensToInit`, when it grew by `minimumTokensBetweenUpdate`
//!   since the last extraction and either `toolCallsBetweenUpdates` calls
//!   were made since then or the reply made none; after a reply without
//!   calls the reply becomes the last summarised message;
//! - at the auto-compaction threshold (the `claude-code` policy's), with a
//!   file that is not the bare template: keep from after the last summarised
//!   message (none: from the end), grown back to both minimums or the
//!   maximum, pulled back to keep every kept result's call; the summary is the
//!   file, each section cut to `MAX_SECTION_LENGTH * 4` chars; if the kept
//!   messages plus the summary still reach the threshold, or there is no file,
//!   the legacy compaction runs instead.
//!
//! The summary names the transcript and the notes file where upstream keeps
//! them; the lab models neither store (as `hermes-lean` does not model
//! Hermes' session search), so what the summary drops counts as lost and
//! the two paths are not pointers the checker follows: recorded Claude Code
//! sessions quote the same sentence with the user's own paths.
//!
//! Faithful findings: the token count at the last extraction is never reset,
//! so after a compaction extraction waits until the context has grown past
//! its size before the compaction; a summary message held as a plain string
//! counts no token in `estimateMessageTokens`.

pub mod keep;
pub mod memory;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{ClaudeCode, SAVED_TO, SUMMARY_PROMPT};
use crate::error::LabResult;
use crate::message::{Message, Role};
use crate::policy::{
    PointerRule, Policy, PolicyCtx, PolicyEvent, PolicyInfo, Prepared, Source, SummaryRequest, Unit,
};
use keep::KeepConfig;

/// The policy name in `lab policies`.
pub const NAME: &str = "claude-code-session-memory";

/// The transcript the summary names, under the policy's root (not written).
pub const TRANSCRIPT: &str = "transcript.jsonl";

/// The notes file the summary names, under the policy's root (not written).
pub const MEMORY_FILE: &str = "session-memory/summary.md";

/// `DEFAULT_SM_COMPACT_CONFIG` and `DEFAULT_SESSION_MEMORY_CONFIG`, under
/// their upstream names; `Default` is upstream's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[allow(non_snake_case)]
pub struct Switches {
    /// Tokens the kept messages reach at least.
    pub minTokens: usize,
    /// Messages with text the kept messages hold at least.
    pub minTextBlockMessages: usize,
    /// Tokens past which the kept range stops growing.
    pub maxTokens: usize,
    /// Context tokens before the first extraction.
    pub minimumMessageTokensToInit: usize,
    /// Context growth, in tokens, between extractions.
    pub minimumTokensBetweenUpdate: usize,
    /// Calls between extractions (unless the reply made none).
    pub toolCallsBetweenUpdates: usize,
}

impl Default for Switches {
    fn default() -> Self {
        let k = KeepConfig::default();
        Switches {
            minTokens: k.minTokens,
            minTextBlockMessages: k.minTextBlockMessages,
            maxTokens: k.maxTokens,
            minimumMessageTokensToInit: 10_000,
            minimumTokensBetweenUpdate: 5_000,
            toolCallsBetweenUpdates: 3,
        }
    }
}

impl Switches {
    /// The keep rule's part.
    pub fn keep(&self) -> KeepConfig {
        KeepConfig {
            minTokens: self.minTokens,
            minTextBlockMessages: self.minTextBlockMessages,
            maxTokens: self.maxTokens,
        }
    }
}

/// Where the extraction's tool count starts (`lastMemoryMessageUuid`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Mark {
    /// Never set: every call counts.
    #[default]
    Start,
    /// After the message at this index.
    At(usize),
    /// The message is gone (compacted away): upstream never finds its id
    /// again, so no call counts until the next extraction sets it.
    Gone,
}

impl Mark {
    /// The mark after a compaction kept `history[start..]` behind one summary.
    fn after_compaction(self, start: Option<usize>) -> Mark {
        match (self, start) {
            (Mark::At(i), Some(s)) if i >= s => Mark::At(1 + i - s),
            (Mark::At(_), _) => Mark::Gone,
            (m, _) => m,
        }
    }
}

/// The policy: the `claude-code` policy's persistence, microcompaction and
/// trigger, and the session-memory state.
#[derive(Debug, Clone, Default)]
pub struct SessionMemory {
    /// Session-memory constants.
    pub switches: Switches,
    /// The rest of Claude Code (trigger, persistence, idle clearing, breaker).
    pub cc: ClaudeCode,
    /// The notes the extraction wrote (`None`: no file yet).
    notes: Option<String>,
    /// `sessionMemoryInitialized`.
    initialized: bool,
    /// `tokensAtLastExtraction`.
    tokens_at_last_extraction: usize,
    /// `lastMemoryMessageUuid`.
    last_memory_message: Mark,
    /// `lastSummarizedMessageId`, as an index into the history.
    last_summarized: Option<usize>,
    /// Messages of the history the extraction has already read.
    extracted: usize,
    /// Messages of the history already seen (arrivals come after them).
    seen: usize,
}

/// A boxed policy with upstream's defaults.
pub fn make() -> Box<dyn Policy> {
    Box::new(SessionMemory::default())
}

impl SessionMemory {
    fn transcript_path(root: &Path) -> PathBuf {
        root.join(TRANSCRIPT)
    }

    /// The post-sampling hook (`extractSessionMemory`) for the newest reply
    /// among the arrivals.
    fn after_reply(
        &mut self,
        history: &[Message],
        ctx: &mut PolicyCtx<'_>,
        events: &mut Vec<PolicyEvent>,
    ) {
        let from = self.seen.min(history.len());
        let Some(a) = history[from..]
            .iter()
            .rposition(|m| m.role == Role::Assistant)
        else {
            return;
        };
        let upto = &history[..=from + a];
        let current = ctx.envelope + ctx.tokens.count_messages(upto);
        if !self.should_extract(upto, current) {
            return;
        }
        self.last_memory_message = Mark::At(from + a);
        let path = ctx.root.join(MEMORY_FILE).display().to_string();
        let file = memory::render(self.notes.as_deref().unwrap_or(""));
        let prompt = memory::update_prompt(&file, &path);
        let req = SummaryRequest {
            prompt: &prompt,
            messages: &upto[self.extracted.min(upto.len())..],
            previous: self.notes.as_deref(),
        };
        match ctx.model.summarise(&req) {
            Ok(notes) => {
                self.notes = Some(notes);
                self.extracted = upto.len();
                self.tokens_at_last_extraction = current;
                if !upto[from + a].has_tool_use() {
                    self.last_summarized = Some(from + a);
                }
            }
            Err(e) => events.push(PolicyEvent::ModelFailed {
                role: "session_memory",
                outcome: format!("extraction failed, the file is unchanged: {e}"),
            }),
        }
    }

    /// `shouldExtractMemory` on the messages up to the newest reply.
    fn should_extract(&mut self, upto: &[Message], current: usize) -> bool {
        let s = &self.switches;
        if !self.initialized {
            if current < s.minimumMessageTokensToInit {
                return false;
            }
            self.initialized = true;
        }
        let grown = current >= self.tokens_at_last_extraction + s.minimumTokensBetweenUpdate;
        let from = match self.last_memory_message {
            Mark::Start => Some(0),
            Mark::At(i) => Some(i + 1),
            Mark::Gone => None,
        };
        let calls: usize = from.map_or(0, |f| {
            upto.get(f..)
                .unwrap_or_default()
                .iter()
                .map(|m| m.tool_use_ids().len())
                .sum()
        });
        let last_has_calls = upto.last().is_some_and(Message::has_tool_use);
        grown && (calls >= s.toolCallsBetweenUpdates || !last_has_calls)
    }

    /// `autoCompactIfNeeded`: session memory first, the legacy compaction
    /// when it declines.
    fn autocompact(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
        events: &mut Vec<PolicyEvent>,
    ) {
        let cc = &self.cc;
        if cc.failures >= cc.switches.max_consecutive_failures
            || cc.context_tokens(history, ctx) < cc.switches.autocompact_at()
        {
            return;
        }
        let start = match self.try_session_memory(history, ctx) {
            Some((start, text)) => {
                events.push(Self::compacted(history, text, start));
                Some(start)
            }
            None => match self.legacy(history, ctx) {
                Ok(e) => {
                    events.push(e);
                    None
                }
                Err(e) => {
                    events.push(e);
                    return;
                }
            },
        };
        self.last_summarized = None;
        self.last_memory_message = self.last_memory_message.after_compaction(start);
        self.extracted = match start {
            Some(s) if self.extracted >= s => 1 + self.extracted - s,
            _ => 1,
        };
    }

    /// `trySessionMemoryCompaction`: where the kept messages start and the
    /// summary text, or `None` when it declines.
    fn try_session_memory(
        &self,
        history: &[Message],
        ctx: &PolicyCtx<'_>,
    ) -> Option<(usize, String)> {
        let file = memory::render(self.notes.as_deref()?);
        if memory::is_empty(&file) {
            return None;
        }
        let last = self.last_summarized.or(history.len().checked_sub(1));
        let start = keep::messages_to_keep_index(history, last, &self.switches.keep());
        let text = memory::session_memory_message(
            &file,
            &Self::transcript_path(ctx.root).display().to_string(),
            &ctx.root.join(MEMORY_FILE).display().to_string(),
        );
        let mut post = vec![Message::user_text(text.clone())];
        post.extend_from_slice(&history[start..]);
        if keep::estimate_message_tokens(&post) >= self.cc.switches.autocompact_at() {
            return None;
        }
        Some((start, text))
    }

    /// Replace `history[..start]` by the summary `text`.
    fn compacted(history: &mut Vec<Message>, text: String, start: usize) -> PolicyEvent {
        let kept = history.split_off(start);
        let replaced = history.len();
        *history = std::iter::once(Message::user_text(text))
            .chain(kept)
            .collect();
        PolicyEvent::Summarised {
            replaced,
            kept: history.len() - 1,
            archive: None,
        }
    }

    /// The legacy compaction (`compactConversation`): the whole history
    /// becomes one summary pointing at the transcript. `Err` is the failure event.
    fn legacy(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
    ) -> Result<PolicyEvent, PolicyEvent> {
        let req = SummaryRequest {
            prompt: SUMMARY_PROMPT,
            messages: history,
            previous: None,
        };
        match ctx.model.summarise(&req) {
            Ok(summary) => {
                self.cc.failures = 0;
                let path = Self::transcript_path(ctx.root).display().to_string();
                let text = memory::user_summary_message(&summary, Some(&path), false);
                let replaced = history.len();
                *history = vec![Message::user_text(text)];
                Ok(PolicyEvent::Summarised {
                    replaced,
                    kept: 0,
                    archive: None,
                })
            }
            Err(e) => {
                self.cc.failures += 1;
                Err(PolicyEvent::ModelFailed {
                    role: "summary",
                    outcome: format!(
                        "auto-compaction failed ({} in a row), history unchanged: {e}",
                        self.cc.failures
                    ),
                })
            }
        }
    }
}

impl Policy for SessionMemory {
    fn configure(&mut self, overrides: &crate::policy::variant::Overrides) -> Result<(), String> {
        let mine: Vec<String> = match serde_json::to_value(self.switches) {
            Ok(serde_json::Value::Object(m)) => m.keys().cloned().collect(),
            _ => Vec::new(),
        };
        let (own, rest): (crate::policy::variant::Overrides, _) = overrides
            .clone()
            .into_iter()
            .partition(|(k, _)| mine.contains(k));
        let mut switches = self.switches;
        crate::policy::variant::set_fields(&mut switches, &own)?;
        self.cc
            .configure(&rest)
            .map_err(|e| format!("{e} (or one of {})", mine.join(", ")))?;
        self.switches = switches;
        Ok(())
    }

    fn variant_keys(&self) -> crate::policy::variant::Overrides {
        let mut keys = crate::policy::variant::fields(&self.switches);
        keys.extend(self.cc.variant_keys());
        keys
    }

    fn info(&self) -> PolicyInfo {
        PolicyInfo {
            name: NAME.into(),
            family: "Claude Code",
            summary: "session-memory compaction: the continuously extracted notes file is the summary; the messages after the last summarised one stay (10k–40k tokens, 5 with text), tool pairs whole".into(),
            source: Source {
                upstream: "claude-code-best/claude-code@50049c61, DroxKiwi/claude-code-leak-packaged@fb1320d1 (mirrors of Claude Code's source)".into(),
                files: &[
                    "src/services/compact/sessionMemoryCompact.ts (50049c61)",
                    "src/services/compact/microCompact.ts: estimateMessageTokens",
                    "src/services/compact/prompt.ts: getCompactUserSummaryMessage, formatCompactSummary (fb1320d1)",
                    "src/services/compact/autoCompact.ts: autoCompactIfNeeded (fb1320d1)",
                    "src/services/SessionMemory/{sessionMemory,sessionMemoryUtils,prompts}.ts (fb1320d1)",
                ],
                license: "closed source, read in public mirrors (constants and strings only)",
                approximate: true,
            },
            constants: serde_json::json!({
                "switches": self.switches,
                "claude_code": self.cc.switches,
                "autocompact_at": self.cc.switches.autocompact_at(),
                "MAX_SECTION_LENGTH": memory::MAX_SECTION_LENGTH,
                "IMAGE_MAX_TOKEN_SIZE": keep::IMAGE_MAX_TOKEN_SIZE,
                "DEFAULT_SESSION_MEMORY_TEMPLATE": memory::DEFAULT_SESSION_MEMORY_TEMPLATE,
            }),
            unit: Unit::Tokens,
            differences: vec![
                "the extraction's forked agent is the lab's summariser, shown the messages since its last run and its previous notes; its notes go under the template's last section (`# Worklog`), the other sections stay empty, and the section-size reminders are not appended to its prompt",
                "the extraction calls are not requests of the replay: their tokens and cost are not counted (upstream sends each with the whole context, sharing the prompt cache)",
                "extraction runs at once after the reply it follows (upstream runs it in the background and compaction waits up to 15 s for it)",
                "the transcript and the notes file the summary names are not modelled (upstream keeps both on disk): what the summary drops counts as lost, and their paths are not pointers",
                "runs enabled: upstream gates it behind the flags `tengu_session_memory` and `tengu_sm_compact`",
                "the legacy fallback uses the `claude-code` policy's summary prompt; neither path re-attaches files, the plan or CLAUDE.md (session-start hooks)",
                "the trigger, persistence and idle clearing are the `claude-code` policy's, with its approximations",
                "streamed replies are whole messages in the lab (no `message.id` records to pull back) and there is no boundary record, so the keep rule's floor is the previous summary, message 0",
            ],
        }
    }

    fn pointer_rules(&self) -> Vec<PointerRule> {
        // The transcript and notes paths name stores the lab does not model.
        vec![PointerRule::after(SAVED_TO)]
    }

    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        let mut events = Vec::new();
        self.cc.persist(history, ctx, &mut events);
        self.cc.microcompact(history, ctx.now_ms, &mut events);
        self.cc.last_call_ms = ctx.now_ms;
        self.after_reply(history, ctx, &mut events);
        self.autocompact(history, ctx, &mut events);
        self.seen = history.len();
        Ok(Prepared {
            request: history.clone(),
            events,
        })
    }
}
