//! Claude Code (Anthropic's CLI agent, closed source): large-result
//! persistence, time-based microcompaction, auto-compaction.
//!
//! Official and observed facts:
//! - <https://code.claude.com/docs/en/context-window> (read 2026-12-03 through
//!   the stored-docs index): auto-compaction runs near the window and
//!   replaces the conversation with a summary, like `/compact`; the window is
//!   200,000 tokens;
//! - the recorded session `claude_code/templar__chat@a46211b.json` of the
//!   shared transcripts (read in place, nothing copied but the wrapper): the
//!   summary comes back as one user message (`isCompactSummary`) that opens
//!   with [`SUMMARY_OPEN`] and ends with [`SUMMARY_CLOSE`].
//!
//! Facts from unofficial mirrors only (so the policy is approximate; no code
//! copied), as collected in the project's research notes: the auto-compact
//! threshold is the window minus `min(max output, 20,000)` minus a 13,000-token
//! buffer (also quoted in <https://github.com/anthropics/claude-code/issues/31806>);
//! three consecutive failures stop auto-compaction; results over a size cap
//! are written once (exclusive create, an existing file reused) under
//! `tool-results/<tool_use_id>.txt` and replaced by a `<persisted-output>`
//! wrapper with the path and a 2,000-byte preview, and text that already
//! opens with `<persisted-output>` is never persisted again; after a long
//! idle gap (a cold cache) all but the newest few results of the compactable
//! tools are content-cleared to `[Old tool result content cleared]`.
//! The size cap, the idle gap and the number kept are not known exactly: the
//! defaults below are marked as the lab's.
//!
//! The trigger was since read in Claude Code's published package (2.0.5,
//! 2.0.22, 2.1.38): by model and release it is data, [`trigger`]. The count
//! it compares is the whole request the product sends: the replay's fixed
//! prefix ([`PolicyCtx::envelope`]) plus the history, up to the last reply
//! for releases that count the last response's usage alone.

pub mod api_mc;
pub mod reattach;
pub mod session_memory;
pub mod time_mc;
pub mod trigger;

use serde::{Deserialize, Serialize};

use crate::error::LabResult;
use crate::message::{tool_results_mut, Block, Message};
use crate::policy::{
    PointerRule, Policy, PolicyCtx, PolicyEvent, PolicyInfo, Prepared, Source, SummaryRequest, Unit,
};

/// The policy name in `lab policies`.
pub const NAME: &str = "claude-code";

/// Opening of the post-compaction user message (recorded session).
pub const SUMMARY_OPEN: &str = "This session is being continued from a previous conversation that ran out of context. The conversation is summarized below:\n";

/// Closing of the post-compaction user message (recorded session).
pub const SUMMARY_CLOSE: &str = "\nPlease continue the conversation from where we left it off without asking the user any further questions. Continue with the last task that you were asked to work on.";

/// What a content-cleared result becomes (unofficial mirrors).
pub const CLEARED: &str = time_mc::TIME_BASED_MC_CLEARED_MESSAGE;

/// Opening tag of a persisted result (unofficial mirrors); also the
/// idempotence mark: text that starts with it is never persisted again.
pub const PERSISTED_OPEN: &str = "<persisted-output>";

/// Text before the path inside the wrapper.
pub const SAVED_TO: &str = "Full output saved to: ";

/// The lab's summary instruction (Claude Code's own prompt is not published).
pub const SUMMARY_PROMPT: &str = "Summarise the conversation so far so the work can continue: the user's requests, decisions, files and code touched, errors and fixes, pending tasks and the current step.";

/// Constants; `Default` marks which are documented, observed or the lab's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Switches {
    /// Context window in tokens (documented: 200,000).
    pub context_window: usize,
    /// Output reserve subtracted from the window (mirrors: min(max output, 20,000)).
    pub output_reserve: usize,
    /// `AUTOCOMPACT_BUFFER_TOKENS` (mirrors: 13,000).
    pub autocompact_buffer: usize,
    /// Whether the count includes the messages that arrived since the last
    /// reply (2.1.38: yes; 2.0.x counted the last response's usage alone).
    pub counts_arrivals: bool,
    /// Whether the count starts from the usage the log recorded for the
    /// last reply, where the replay has it, as the product's own
    /// `tokenCountWithEstimation` starts from the usage the API returned
    /// (lab's choice: yes; the lab's counter alone otherwise). Moved by how
    /// much the port's history differs from the product's logged one; see
    /// [`Anchor`](crate::policy::engine::Anchor).
    pub counts_recorded_usage: bool,
    /// `MAX_CONSECUTIVE_AUTOCOMPACT_FAILURES` (mirrors: 3).
    pub max_consecutive_failures: usize,
    /// Results longer than this many chars are persisted (lab's choice: 50,000).
    pub max_result_size_chars: usize,
    /// Preview bytes inside the wrapper (mirrors: 2,000).
    pub preview_bytes: usize,
    /// Tools whose results microcompaction may clear (mirrors).
    pub compactable_tools: Vec<String>,
    /// Whether old results are cleared after an idle gap at all (the
    /// mirrors' time-based microcompaction; the releases read for
    /// `triggers.json`, 2.0.5 to 2.1.38, do not have it, so a replay of
    /// their logs runs without it).
    pub idle_microcompact: bool,
    /// Idle gap, in minutes, after which microcompaction clears (lab's choice: 60).
    pub idle_gap_minutes: u64,
    /// Newest compactable results kept by microcompaction (lab's choice: 5).
    pub keep_recent: usize,
    /// Whether the newest files and the plan come back after compaction
    /// ([`reattach`], mirrors). A replay of a Claude Code log whose recorded
    /// post-compaction prefix already holds them turns it off, so they are
    /// not counted twice.
    pub reattach: bool,
    /// `POST_COMPACT_MAX_FILES_TO_RESTORE` (mirrors: 5).
    pub post_compact_max_files_to_restore: usize,
    /// `POST_COMPACT_TOKEN_BUDGET` (mirrors: 50,000).
    pub post_compact_token_budget: usize,
    /// `POST_COMPACT_MAX_TOKENS_PER_FILE` (mirrors: 5,000).
    pub post_compact_max_tokens_per_file: usize,
    /// Whether a resumed process rebuilds its read-file state from the
    /// loaded messages' whole Reads and Writes (2.0.59 on: yes; before, it
    /// starts empty), so which files a compaction after a resume
    /// re-attaches ([`reattach::Resumed`], `triggers.json`).
    pub resume_rebuilds_read_state: bool,
}

impl Default for Switches {
    fn default() -> Self {
        Switches {
            context_window: 200_000,
            output_reserve: 20_000,
            autocompact_buffer: 13_000,
            counts_arrivals: true,
            counts_recorded_usage: true,
            max_consecutive_failures: 3,
            max_result_size_chars: 50_000,
            preview_bytes: 2_000,
            compactable_tools: [
                "Read",
                "Bash",
                "Grep",
                "Glob",
                "WebSearch",
                "WebFetch",
                "Edit",
                "Write",
            ]
            .map(String::from)
            .to_vec(),
            idle_microcompact: true,
            idle_gap_minutes: 60,
            keep_recent: 5,
            reattach: true,
            post_compact_max_files_to_restore: reattach::POST_COMPACT_MAX_FILES_TO_RESTORE,
            post_compact_token_budget: reattach::POST_COMPACT_TOKEN_BUDGET,
            post_compact_max_tokens_per_file: reattach::POST_COMPACT_MAX_TOKENS_PER_FILE,
            resume_rebuilds_read_state: true,
        }
    }
}

impl Switches {
    /// Tokens at which auto-compaction runs.
    pub fn autocompact_at(&self) -> usize {
        self.context_window
            .saturating_sub(self.output_reserve)
            .saturating_sub(self.autocompact_buffer)
    }

    /// The re-attachment limits.
    pub fn reattach_limits(&self) -> reattach::Limits {
        reattach::Limits {
            max_files: self.post_compact_max_files_to_restore,
            token_budget: self.post_compact_token_budget,
            max_tokens_per_file: self.post_compact_max_tokens_per_file,
        }
    }
}

/// The policy: switches, consecutive compaction failures, the time of
/// the last call (for the idle gap) and where the latest resume left the
/// read-file state.
#[derive(Debug, Clone, Default)]
pub struct ClaudeCode {
    /// Constants.
    pub switches: Switches,
    failures: usize,
    last_call_ms: Option<u64>,
    resumed: Option<reattach::Resumed>,
}

/// A boxed policy with the defaults above.
pub fn make() -> Box<dyn Policy> {
    Box::new(ClaudeCode::default())
}

impl ClaudeCode {
    /// The policy as the release `version` ran it for `model` (the trigger
    /// from [`trigger::table`]).
    /// `reattached_in_prefix`: the replay's recorded post-compaction prefix
    /// already holds what the product re-attached, so the port adds nothing.
    pub fn for_product(
        model: &str,
        version: Option<&str>,
        reattached_in_prefix: bool,
    ) -> ClaudeCode {
        let mut switches = trigger::table().switches(model, version);
        switches.reattach = !reattached_in_prefix;
        ClaudeCode {
            switches,
            ..ClaudeCode::default()
        }
    }

    /// What the trigger compares: the prefix plus the history as the product
    /// counts it. Before any reply a release that counts usage alone sees
    /// nothing (no usage yet), and one that estimates sees the messages only.
    pub fn context_tokens(&self, history: &[Message], ctx: &PolicyCtx<'_>) -> usize {
        let last_reply = history
            .iter()
            .rposition(|m| m.role == crate::message::Role::Assistant);
        let anchor = ctx.anchor.filter(|_| self.switches.counts_recorded_usage);
        if let (Some(a), Some(i)) = (anchor, last_reply) {
            let arrivals = if self.switches.counts_arrivals {
                ctx.tokens.count_messages(&history[i + 1..])
            } else {
                0
            };
            return a.count(ctx.tokens.count_messages(&history[..=i])) + arrivals;
        }
        match (last_reply, self.switches.counts_arrivals) {
            (None, false) => 0,
            (None, true) => ctx.tokens.count_messages(history),
            (Some(i), false) => ctx.envelope + ctx.tokens.count_messages(&history[..=i]),
            (Some(_), true) => ctx.envelope + ctx.tokens.count_messages(history),
        }
    }
}

/// The wrapper the model sees instead of a persisted result.
pub fn wrapper(path: &str, content: &str, preview_bytes: usize) -> String {
    let mut end = preview_bytes.min(content.len());
    while !content.is_char_boundary(end) {
        end -= 1;
    }
    let more = if end < content.len() { "\n...\n" } else { "\n" };
    format!(
        "{PERSISTED_OPEN}\nOutput too large ({} chars). {SAVED_TO}{path}\n\nPreview (first {preview_bytes} bytes):\n{}{more}</persisted-output>",
        content.chars().count(),
        &content[..end]
    )
}

impl ClaudeCode {
    /// Persist every oversized result not already a wrapper.
    fn persist(&self, history: &mut [Message], ctx: &PolicyCtx<'_>, events: &mut Vec<PolicyEvent>) {
        let dir = ctx.root.join("tool-results");
        for (tool_use_id, content) in tool_results_mut(history) {
            if content.starts_with(PERSISTED_OPEN)
                || content.chars().count() <= self.switches.max_result_size_chars
            {
                continue;
            }
            let path = dir.join(format!(
                "{}.txt",
                crate::storage::root::safe_id(tool_use_id, 120)
            ));
            let written = ctx
                .storage
                .create_dir_all(&dir)
                .and_then(|()| ctx.storage.write_new(&path, content.as_bytes()));
            match written {
                Ok(()) => {}
                // An existing file is the same result persisted before: reuse it.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                // A failed write keeps the result whole (no loss).
                Err(_) => continue,
            }
            let shown = wrapper(
                &path.display().to_string(),
                content,
                self.switches.preview_bytes,
            );
            events.push(PolicyEvent::Persisted {
                id: tool_use_id.clone(),
                path: path.display().to_string(),
                chars: content.chars().count(),
            });
            *content = shown;
        }
    }

    /// Time-based microcompaction after an idle gap ([`time_mc`]'s mechanism).
    fn microcompact(
        &self,
        history: &mut [Message],
        now: Option<u64>,
        events: &mut Vec<PolicyEvent>,
    ) {
        let threshold = self.switches.idle_gap_minutes as f64;
        if !self.switches.idle_microcompact || !time_mc::fires(self.last_call_ms, now, threshold) {
            return;
        }
        events.extend(time_mc::clear_old(
            history,
            &self.switches.compactable_tools,
            self.switches.keep_recent,
        ));
    }

    /// Auto-compaction near the window; stops after repeated failures.
    fn autocompact(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
        events: &mut Vec<PolicyEvent>,
    ) {
        if self.failures >= self.switches.max_consecutive_failures
            || self.context_tokens(history, ctx) < self.switches.autocompact_at()
        {
            return;
        }
        let req = SummaryRequest {
            prompt: SUMMARY_PROMPT,
            messages: history,
            previous: None,
        };
        match ctx.model.summarise(&req) {
            Ok(summary) => {
                self.failures = 0;
                events.push(PolicyEvent::Summarised {
                    replaced: history.len(),
                    kept: 0,
                    archive: None,
                });
                let text = format!("{SUMMARY_OPEN}{summary}{SUMMARY_CLOSE}");
                *history = vec![self.continuation(text, history, ctx, events)];
            }
            Err(e) => {
                self.failures += 1;
                events.push(PolicyEvent::ModelFailed {
                    role: "summary",
                    outcome: format!(
                        "auto-compaction failed ({} in a row), history unchanged: {e}",
                        self.failures
                    ),
                });
            }
        }
    }
}

impl ClaudeCode {
    /// The one user message after a compaction: the summary, then what
    /// comes back with it (the API merges consecutive user messages).
    fn continuation(
        &self,
        summary: String,
        history: &[Message],
        ctx: &PolicyCtx<'_>,
        events: &mut Vec<PolicyEvent>,
    ) -> Message {
        let restored = if self.switches.reattach {
            reattach::restore(
                history,
                self.switches.reattach_limits(),
                ctx.tokens,
                ctx.read_lines,
                self.resumed.as_ref(),
            )
        } else {
            reattach::Restored::default()
        };
        if restored.blocks.is_empty() && restored.unlogged.is_empty() {
            return Message::user_text(summary);
        }
        events.push(PolicyEvent::Restored {
            chars: restored.chars(),
            items: restored.items,
        });
        let texts = std::iter::once(summary).chain(restored.blocks);
        let mut blocks: Vec<Block> = texts.map(|text| Block::Text { text }).collect();
        let unlogged = restored.unlogged.into_iter();
        blocks.extend(unlogged.map(|(what, tokens)| Block::Unlogged { what, tokens }));
        Message::user_blocks(blocks)
    }
}

impl Policy for ClaudeCode {
    fn resumed(&mut self, history: &[Message], _dropped: bool) {
        // The read-file state is the process's: a resumed one starts it
        // from the loaded messages, or empty. Nothing else is kept.
        let rebuilds = self.switches.resume_rebuilds_read_state;
        self.resumed = Some(reattach::Resumed::at(history, rebuilds));
    }

    fn configure(&mut self, overrides: &crate::policy::variant::Overrides) -> Result<(), String> {
        crate::policy::variant::set_fields(&mut self.switches, overrides)
    }

    fn variant_keys(&self) -> crate::policy::variant::Overrides {
        crate::policy::variant::fields(&self.switches)
    }

    fn info(&self) -> PolicyInfo {
        PolicyInfo {
            name: NAME.into(),
            family: "Claude Code",
            summary: "oversized results persisted once behind a <persisted-output> preview; idle-gap microcompaction of compactable tools; auto-compaction 33k tokens below the window into a continuation message".into(),
            source: Source {
                upstream: "https://code.claude.com/docs/en/context-window (read 2026-12-03); recorded sessions; unofficial mirrors for the rest".into(),
                files: &[
                    "context-window: auto-compaction, window",
                    "shared transcripts claude_code/templar__chat@a46211b.json: continuation wrapper",
                    "npm @anthropic-ai/claude-code 2.0.5, 2.0.22, 2.1.38 cli.js (read 2026-12-04): the trigger by model and release (trigger.rs, triggers.json)",
                "npm @anthropic-ai/claude-code 1.0.57, 2.0.5 to 2.0.59, 2.1.14, 2.1.38 cli.js (read 2026-12-08): the read-file state a resumed process starts with (triggers.json resume_read_state)",
                "research notes (unofficial mirrors): persistence, microcompaction",
                ],
                license: "closed source (no code reproduced)",
                approximate: true,
            },
            constants: serde_json::json!({
                "switches": self.switches,
                "autocompact_at": self.switches.autocompact_at(),
                "SUMMARY_OPEN": SUMMARY_OPEN,
                "SUMMARY_CLOSE": SUMMARY_CLOSE,
                "CLEARED": CLEARED,
            }),
            unit: Unit::Tokens,
            differences: vec![
                "the persisted-output wrapper's wording and size formatting, the persistence cap, the idle gap and the number kept by microcompaction are the lab's approximations",
                "the summary prompt is the lab's (Claude Code's is not published)",
                "after compaction, CLAUDE.md, memory, skills and background agents are not re-injected; files and the plan are (reattach.rs), each file as the log last showed it (its last Read result, or what the session wrote, numbered as Read numbers lines) since a replay cannot read it again, a file whose content the log does not show as a path only, the plan from the last ExitPlanMode call at a placeholder path, and the budget's rough size counted on the rendered text rather than the attachment's JSON",
                "on a Claude Code log whose recorded post-compaction prefix already holds the re-attached files, the port re-attaches nothing (reattach = false) so they are not counted twice",
                "the cache-editing microcompaction path (server-side cache_edits) is not modelled",
                "at a resume the read-file state is rebuilt (2.0.59 on) from the history the port holds, not from the messages the product loaded from its log, and the rebuild's 100-file LRU is not kept (only the 5 newest files come back)",
                "replaying a log with recorded usage as the product's own policy (counts_recorded_usage), the count starts from the usage the log recorded for the last reply (prompt tokens plus its output, as tokenCountWithEstimation starts from the API's usage), moved by the run counter's estimate of how much the port's history differs from the product's logged one (an estimate); elsewhere it is the envelope plus the run's counter",
                "replaying a Claude Code log as the product's own policy, each summary is the one the product's model wrote at its compaction, in order (the recorded answer, as every reply of a replay is); past the last recorded summary, and in every other replay, the run's summariser writes it",
            ],
        }
    }

    fn pointer_rules(&self) -> Vec<PointerRule> {
        vec![PointerRule::after(SAVED_TO)]
    }

    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        let mut events = Vec::new();
        self.persist(history, ctx, &mut events);
        self.microcompact(history, ctx.now_ms, &mut events);
        self.last_call_ms = ctx.now_ms;
        self.autocompact(history, ctx, &mut events);
        Ok(Prepared {
            request: history.clone(),
            events,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Block;
    use crate::policy::model::Scripted;
    use crate::storage::{MemFs, Storage};
    use crate::tokens::Approx;
    use std::path::Path;

    fn run(
        p: &mut ClaudeCode,
        h: &mut Vec<Message>,
        fs: &MemFs,
        now_ms: Option<u64>,
        model: &mut Scripted,
    ) -> Prepared {
        let mut ctx = PolicyCtx {
            storage: fs,
            root: Path::new("/run/cc"),
            tokens: &Approx,
            turn: 0,
            envelope: 0,
            anchor: None,
            read_lines: None,
            now_ms,
            model,
        };
        p.prepare(h, &mut ctx).unwrap()
    }

    fn call(id: &str, tool: &str) -> Message {
        Message::assistant(vec![Block::ToolUse {
            id: id.into(),
            name: tool.into(),
            input: serde_json::json!({}).into(),
        }])
    }

    fn text_of(m: &Message) -> &str {
        match &m.blocks()[0] {
            Block::ToolResult { content, .. } => content,
            other => panic!("not a result: {other:?}"),
        }
    }

    #[test]
    fn the_count_starts_from_the_recorded_usage_of_the_last_reply() {
        let h = vec![
            Message::user_text("go"),
            call("t1", "Bash"),
            Message::tool_results(vec![("t1".into(), "x".repeat(4_000))]),
        ];
        let mut model = Scripted::default();
        PolicyCtx::with_test("/run/cc", &mut model, |ctx| {
            let logged = ctx.tokens.count_messages(&h[..2]);
            ctx.anchor = Some(crate::policy::engine::Anchor {
                recorded: 150_000,
                logged,
            });
            ctx.envelope = 40_000;
            let only_usage = ClaudeCode {
                switches: Switches {
                    counts_arrivals: false,
                    ..Switches::default()
                },
                ..ClaudeCode::default()
            };
            // The product's own history: exactly what the API reported.
            assert_eq!(only_usage.context_tokens(&h, ctx), 150_000);
            // The result after the reply is estimated on top (2.1).
            let arrivals = ctx.tokens.count_messages(&h[2..]);
            assert_eq!(
                ClaudeCode::default().context_tokens(&h, ctx),
                150_000 + arrivals
            );
            // A history smaller than the product's counts that much less.
            let shorter = [Message::user_text(""), h[1].clone()];
            let less = logged - ctx.tokens.count_messages(&shorter);
            assert_eq!(only_usage.context_tokens(&shorter, ctx), 150_000 - less);
            // Switched off: the envelope and the lab's counter.
            let own = ClaudeCode {
                switches: Switches {
                    counts_arrivals: false,
                    counts_recorded_usage: false,
                    ..Switches::default()
                },
                ..ClaudeCode::default()
            };
            assert_eq!(own.context_tokens(&h, ctx), 40_000 + logged);
        });
    }

    #[test]
    fn oversized_result_is_persisted_once_and_an_existing_file_reused() {
        let fs = MemFs::new();
        let big = "y".repeat(60_000);
        let mut h = vec![
            Message::user_text("go"),
            call("t1", "Bash"),
            Message::tool_results(vec![("t1".into(), big.clone())]),
        ];
        let out = run(
            &mut ClaudeCode::default(),
            &mut h,
            &fs,
            None,
            &mut Scripted::default(),
        );
        let path = "/run/cc/tool-results/t1.txt";
        let shown = text_of(&out.request[2]).to_string();
        assert!(shown.starts_with(PERSISTED_OPEN) && shown.ends_with("</persisted-output>"));
        assert_eq!(
            crate::policy::pointers_in(&ClaudeCode::default().pointer_rules(), &shown),
            [path]
        );
        assert_eq!(fs.read(Path::new(path)).unwrap(), big.as_bytes());
        // The wrapper is never persisted again.
        let again = run(
            &mut ClaudeCode::default(),
            &mut h,
            &fs,
            None,
            &mut Scripted::default(),
        );
        assert!(again.events.is_empty());
        assert_eq!(text_of(&again.request[2]), shown);
        // A replayed original whose file exists reuses it.
        let mut replayed = vec![Message::tool_results(vec![("t1".into(), big)])];
        let out = run(
            &mut ClaudeCode::default(),
            &mut replayed,
            &fs,
            None,
            &mut Scripted::default(),
        );
        assert_eq!(out.events.len(), 1);
        assert_eq!(text_of(&replayed[0]), shown);
    }

    #[test]
    fn microcompaction_clears_old_compactable_results_after_an_idle_gap_only() {
        let mut h = vec![Message::user_text("go")];
        for i in 0..7 {
            let tool = if i == 0 { "TodoWrite" } else { "Read" };
            h.push(call(&format!("t{i}"), tool));
            h.push(Message::tool_results(vec![(
                format!("t{i}"),
                format!("out {i}"),
            )]));
        }
        let fs = MemFs::new();
        let mut p = ClaudeCode::default();
        let quiet = run(&mut p, &mut h, &fs, Some(0), &mut Scripted::default());
        assert!(quiet.events.is_empty());
        assert!(run(
            &mut p,
            &mut h,
            &fs,
            Some(59 * 60_000),
            &mut Scripted::default()
        )
        .events
        .is_empty());
        let out = run(
            &mut p,
            &mut h,
            &fs,
            Some(59 * 60_000 + 60 * 60_000),
            &mut Scripted::default(),
        );
        // Six compactable Reads, five kept: only t1 goes; TodoWrite is not compactable.
        let cleared: Vec<&str> = out
            .events
            .iter()
            .filter_map(|e| match e {
                PolicyEvent::Cleared { id, .. } => Some(id.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(cleared, ["t1"]);
        assert_eq!(text_of(&h[4]), CLEARED);
        assert_eq!(text_of(&h[2]), "out 0");
    }

    /// After a compaction the read file and the plan come back in the same
    /// user message as the summary; switched off, the summary comes alone.
    #[test]
    fn autocompaction_reattaches_the_newest_files_and_the_plan_unless_switched_off() {
        let history = || {
            vec![
                Message::user_text("build it"),
                Message::assistant(vec![Block::ToolUse {
                    id: "r".into(),
                    name: "Read".into(),
                    input: serde_json::json!({"file_path": "/src/a.rs"}).into(),
                }]),
                Message::tool_results(vec![("r".into(), "     1→fn a() {}".into())]),
                Message::assistant(vec![Block::ToolUse {
                    id: "p".into(),
                    name: "ExitPlanMode".into(),
                    input: serde_json::json!({"plan": "step 1"}).into(),
                }]),
                Message::tool_results(vec![("p".into(), "x".repeat(400))]),
            ]
        };
        let fs = MemFs::new();
        let mut p = ClaudeCode::default();
        p.switches.context_window = 33_010;
        let mut h = history();
        let out = run(&mut p, &mut h, &fs, None, &mut Scripted::replies(["did A"]));
        let texts: Vec<&str> = out.request[0]
            .blocks()
            .iter()
            .map(|b| match b {
                Block::Text { text } => text.as_str(),
                other => panic!("not text: {other:?}"),
            })
            .collect();
        assert_eq!(out.request.len(), 1);
        assert_eq!(texts[0], format!("{SUMMARY_OPEN}did A{SUMMARY_CLOSE}"));
        assert!(texts[2]
            .ends_with("Result of calling the Read tool:\n     1→fn a() {}\n</system-reminder>"));
        assert!(texts[3].contains("Plan contents:\n\nstep 1"));
        assert!(out.events.iter().any(|e| matches!(
            e,
            PolicyEvent::Restored { items, .. } if items == &["/src/a.rs", "plan"]
        )));
        p.switches.reattach = false;
        let mut h = history();
        let out = run(&mut p, &mut h, &fs, None, &mut Scripted::replies(["did A"]));
        assert_eq!(
            out.request,
            vec![Message::user_text(format!(
                "{SUMMARY_OPEN}did A{SUMMARY_CLOSE}"
            ))]
        );
    }

    /// Through the engine: a file read before the product resumed comes
    /// back after the port's next compaction only where the release
    /// rebuilds the read-file state at a resume (2.0.59 on); with no resume
    /// it comes back under either release (the control).
    #[test]
    fn a_compaction_after_a_resume_restores_what_the_resumed_process_read() {
        let read = |id: &str, path: &str| {
            Message::assistant(vec![Block::ToolUse {
                id: id.into(),
                name: "Read".into(),
                input: serde_json::json!({ "file_path": path }).into(),
            }])
        };
        let session = vec![
            Message::user_text("build it"),
            read("a", "/src/a.rs"),
            Message::tool_results(vec![("a".into(), "     1→fn a() {}".into())]),
            // The product resumed here (index 3).
            Message::user_text("go on"),
            read("b", "/src/b.rs"),
            Message::tool_results(vec![("b".into(), "x".repeat(2_000))]),
            Message::assistant(vec![Block::Text {
                text: "y".repeat(400),
            }]),
            Message::user_text("and now?"),
            Message::assistant(vec![Block::Text {
                text: "done".into(),
            }]),
        ];
        let restored = |version: &str, resumes: Vec<usize>| {
            let mut p = ClaudeCode::for_product("claude-sonnet-4-5", Some(version), false);
            // Past the threshold at the last call only, counted either way
            // (to the last reply, or with what arrived since).
            p.switches.context_window = p.switches.output_reserve
                + p.switches.autocompact_buffer
                + crate::tokens::TokenCounter::count_messages(&Approx, &session[..7])
                - 10;
            let mut env = crate::policy::engine::Env {
                prefix: crate::policy::engine::Prefix {
                    resumes,
                    ..Default::default()
                },
                ..Default::default()
            };
            let s = crate::policy::engine::Session {
                name: "resumed",
                messages: &session,
                times_ms: None,
            };
            let run = crate::policy::engine::replay(&mut p, s, &mut env).unwrap();
            run.events
                .iter()
                .find_map(|(_, e)| match e {
                    PolicyEvent::Restored { items, .. } => Some(items.clone()),
                    _ => None,
                })
                .unwrap_or_default()
        };
        assert_eq!(restored("2.0.22", vec![3]), ["/src/b.rs"]);
        assert_eq!(restored("2.1.38", vec![3]), ["/src/b.rs", "/src/a.rs"]);
        assert_eq!(restored("2.0.22", vec![]), ["/src/b.rs", "/src/a.rs"]);
    }

    /// The continuation message as the recorded session shows it.
    #[test]
    fn autocompaction_wraps_the_summary_and_stops_after_three_failures() {
        assert_eq!(Switches::default().autocompact_at(), 167_000);
        let mut p = ClaudeCode::default();
        p.switches.context_window = 33_010;
        let fs = MemFs::new();
        let mut h = vec![
            Message::user_text("build it"),
            Message::assistant(vec![Block::Text { text: "ok".into() }]),
            Message::user_text("x".repeat(100)),
        ];
        let out = run(
            &mut p,
            &mut h,
            &fs,
            None,
            &mut Scripted::replies(["did A; next B"]),
        );
        assert_eq!(
            out.request,
            vec![Message::user_text(format!(
                "{SUMMARY_OPEN}did A; next B{SUMMARY_CLOSE}"
            ))]
        );
        let mut h = vec![Message::user_text("x".repeat(100))];
        for _ in 0..3 {
            run(&mut p, &mut h, &fs, None, &mut Scripted::default());
        }
        assert_eq!(p.failures, 3);
        let quiet = run(&mut p, &mut h, &fs, None, &mut Scripted::replies(["s"]));
        assert!(quiet.events.is_empty(), "the circuit breaker holds");
    }
}
