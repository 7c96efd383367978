//! Pi's automatic compaction (the coding agent of badlogic/pi-mono), as
//! the release that wrote the shared Pi session ran it: after each
//! assistant reply, when the context the API reported for it passes the
//! model's window less a reserve, everything since the last compaction up
//! to a cut point is summarised; the request is then the summary (a user
//! message), the kept tail since the cut, and what follows.
//!
//! Upstream: badlogic/pi-mono at bd0d0676 (2025-12-08, the last commit
//! before the shared session's compactions; `compaction.ts` is the same
//! blob from 86e5a70e, its last change before the session, to 4227fd59):
//! `packages/coding-agent/src/compaction.ts` (`DEFAULT_COMPACTION_SETTINGS`,
//! `calculateContextTokens`, `shouldCompact`, `findCutPoint`,
//! `SUMMARIZATION_PROMPT`, `compact`), `src/tui/tui-renderer.ts`
//! (`checkAutoCompaction` after every assistant `message_end`),
//! `src/session-manager.ts` (`loadSessionFromEntries`,
//! `createSummaryMessage`: the summary first, then the entries from
//! `firstKeptEntryIndex`) and `packages/ai/src/models.generated.ts`
//! (`claude-opus-4-5`: `contextWindow` 200,000). MIT; constants and
//! strings only are reproduced.
//!
//! * **Trigger** (`shouldCompact`): `contextTokens > contextWindow -
//!   reserveTokens`, `contextTokens` the last non-aborted reply's usage
//!   (`input + output + cacheRead + cacheWrite`). The lab has no API
//!   usage for its own requests: it counts the request up to and including
//!   the last reply with the run's counter, plus the envelope (an estimate).
//! * **Cut point** (`findCutPoint`): walking the replies since the last
//!   compaction from the newest, the first whose usage is at least
//!   `keepRecentTokens` below the newest's; the kept tail starts at the
//!   user message (not a tool result) at or before the reply after it.
//!   Without user messages in range nothing is cut; without usage only the
//!   last turn is kept.
//! * **Summary** (`compact`): the messages from the last compaction to the
//!   cut, after the previous summary as a user message `Previous session
//!   summary:\n…`, then `SUMMARIZATION_PROMPT`.
//! * **Placement** (`loadSessionFromEntries`): the summary as a user
//!   message (`SUMMARY_PREFIX` + summary + `SUMMARY_SUFFIX`), then the
//!   kept messages. Messages kept by the previous compaction (before its
//!   entry) are *neither kept nor summarised again* by the next one: the
//!   next `boundaryStart` is the previous entry plus one. The port keeps
//!   that loss; `lab replay` reports it as what the design forgets.

use serde::{Deserialize, Serialize};

use crate::error::LabResult;
use crate::import::pi::summary_message;
use crate::message::{Message, Role};
use crate::policy::{
    PointerRule, Policy, PolicyCtx, PolicyEvent, PolicyInfo, Prepared, Source, SummaryRequest, Unit,
};

/// The policy's name in `lab policies`.
pub const NAME: &str = "pi-auto-compact";

/// `SUMMARIZATION_PROMPT` at bd0d0676, byte for byte.
pub const SUMMARIZATION_PROMPT: &str = "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another LLM that will resume the task.

Include:
- Current progress and key decisions made
- Important context, constraints, or user preferences
- Absolute file paths of any relevant files that were read or modified
- What remains to be done (clear next steps)
- Any critical data, examples, or references needed to continue

Be concise, structured, and focused on helping the next LLM seamlessly continue the work.";

/// The message `compact` puts the previous summary in, before the messages.
pub const PREVIOUS_SUMMARY_PREFIX: &str = "Previous session summary:\n";

/// `CompactionSettings` under Pi's names, plus the model's window;
/// `Default` is `DEFAULT_COMPACTION_SETTINGS` and `claude-opus-4-5`'s
/// `contextWindow`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct PiCompaction {
    /// `enabled`: auto-compaction on.
    pub enabled: bool,
    /// `reserveTokens`: room left for the reply (16,384).
    pub reserve_tokens: u64,
    /// `keepRecentTokens`: how much recent context the cut keeps (20,000).
    pub keep_recent_tokens: u64,
    /// The model's `contextWindow` (200,000 for `claude-opus-4-5`).
    pub context_window: u64,
}

impl Default for PiCompaction {
    fn default() -> Self {
        PiCompaction {
            enabled: true,
            reserve_tokens: 16_384,
            keep_recent_tokens: 20_000,
            context_window: 200_000,
        }
    }
}

/// One entry as `findCutPoint` sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// A user message (a turn boundary; a tool result is not one).
    User,
    /// An assistant reply with its context tokens, `None` when it has no
    /// usage (aborted).
    Assistant(Option<u64>),
    /// Anything else (a tool result, a setting change).
    Other,
}

impl PiCompaction {
    /// `shouldCompact(contextTokens, contextWindow, settings)`.
    pub fn should_compact(&self, context_tokens: u64) -> bool {
        self.enabled
            && context_tokens as i64 > self.context_window as i64 - self.reserve_tokens as i64
    }

    /// `findCutPoint(entries, start, end, keepRecentTokens)`: the index of
    /// the first entry kept.
    pub fn find_cut_point(&self, slots: &[Slot], start: usize, end: usize) -> usize {
        let boundaries: Vec<usize> = (start..end).filter(|&i| slots[i] == Slot::User).collect();
        let Some(&last_boundary) = boundaries.last() else {
            return start;
        };
        let usages: Vec<(usize, i64)> = (start..end)
            .rev()
            .filter_map(|i| match slots[i] {
                Slot::Assistant(Some(t)) => Some((i, t as i64)),
                _ => None,
            })
            .collect();
        let Some(&(_, newest)) = usages.first() else {
            return last_boundary;
        };
        for k in 1..usages.len() {
            if newest - usages[k].1 >= self.keep_recent_tokens as i64 {
                let last_kept = usages[k - 1].0;
                return boundaries
                    .iter()
                    .rev()
                    .find(|&&b| b <= last_kept)
                    .copied()
                    .unwrap_or(start);
            }
        }
        start
    }
}

/// Pi as a policy: the context it would send.
#[derive(Debug, Clone, Default)]
pub struct Pi {
    /// The switches.
    pub config: PiCompaction,
    /// The last summary, if it compacted.
    summary: Option<String>,
    /// Messages the last compaction kept (before its entry): sent, never cut.
    kept: Vec<Message>,
    /// Messages since the last compaction (its `boundaryStart` on).
    since: Vec<Message>,
    /// History messages already taken into `since`.
    seen: usize,
}

/// `pi-auto-compact` with Pi's defaults.
pub fn auto_compact() -> Box<dyn Policy> {
    Box::new(Pi::default())
}

impl Pi {
    fn request(&self) -> Vec<Message> {
        let mut out: Vec<Message> = self.summary.iter().map(|s| summary_message(s)).collect();
        out.extend(self.kept.iter().cloned());
        out.extend(self.since.iter().cloned());
        out
    }

    /// The slots of `since`, each reply's usage the request up to and
    /// including it (plus `base`, what precedes `since` in the request).
    fn slots(&self, base: u64, ctx: &PolicyCtx<'_>) -> Vec<Slot> {
        let mut total = base;
        self.since
            .iter()
            .map(|m| {
                total += ctx.tokens.count_messages(std::slice::from_ref(m)) as u64;
                match m.role {
                    Role::Assistant => Slot::Assistant(Some(total)),
                    Role::User if !m.is_tool_result() => Slot::User,
                    Role::User => Slot::Other,
                }
            })
            .collect()
    }
}

impl Policy for Pi {
    fn configure(&mut self, overrides: &crate::policy::variant::Overrides) -> Result<(), String> {
        crate::policy::variant::set_fields(&mut self.config, overrides)
    }

    fn variant_keys(&self) -> crate::policy::variant::Overrides {
        crate::policy::variant::fields(&self.config)
    }

    fn info(&self) -> PolicyInfo {
        PolicyInfo {
            name: NAME.into(),
            family: "pi",
            summary: "past the window less a reserve, summarise since the last compaction up to a turn ~keepRecentTokens back; summary first, then the kept tail".into(),
            source: Source {
                upstream: "badlogic/pi-mono@bd0d0676 (coding-agent compaction.ts, tui-renderer.ts, session-manager.ts)".into(),
                files: &[
                    "packages/coding-agent/src/compaction.ts",
                    "packages/coding-agent/src/tui/tui-renderer.ts",
                    "packages/coding-agent/src/session-manager.ts",
                    "packages/ai/src/models.generated.ts",
                ],
                license: "MIT",
                approximate: false,
            },
            constants: serde_json::json!({
                "enabled": self.config.enabled,
                "reserveTokens": self.config.reserve_tokens,
                "keepRecentTokens": self.config.keep_recent_tokens,
                "contextWindow": self.config.context_window,
            }),
            unit: Unit::Tokens,
            differences: vec![
                "each reply's usage is the run's count of the request up to it plus the envelope (upstream: the API's reported usage of that reply)",
                "ports the release that wrote the shared session (bd0d0676); the current cut (83378aad: chars/4 estimates, cuts at replies, split-turn prefix summaries, iterative summary update) is not modelled",
                "the check runs before the next call on the whole history (upstream: at the reply's message_end, before its tool results; a tool call cut off by the compaction is answered by the importer's `[missing result]`)",
                "manual /compact and custom instructions are not modelled",
                "a user's `!` command (bashExecution, user text in the lab) is a turn boundary for the cut (upstream at bd0d0676: only `user` messages)",
            ],
        }
    }

    fn pointer_rules(&self) -> Vec<PointerRule> {
        // Pi's summary names no place the originals can be read back from.
        Vec::new()
    }

    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        let mut events = Vec::new();
        self.since
            .extend_from_slice(&history[self.seen.min(history.len())..]);
        self.seen = history.len();
        let before = self.request();
        let base = ctx.envelope as u64
            + ctx
                .tokens
                .count_messages(&before[..before.len() - self.since.len()]) as u64;
        let slots = self.slots(base, ctx);
        // `checkAutoCompaction`: the last reply's context.
        let last = slots.iter().rev().find_map(|s| match s {
            Slot::Assistant(t) => *t,
            _ => None,
        });
        if last.is_some_and(|t| self.config.should_compact(t)) {
            let cut = self.config.find_cut_point(&slots, 0, slots.len());
            let mut to_summarise: Vec<Message> = self
                .summary
                .iter()
                .map(|s| Message::user_text(format!("{PREVIOUS_SUMMARY_PREFIX}{s}")))
                .collect();
            to_summarise.extend(self.since[..cut].iter().cloned());
            let req = SummaryRequest {
                prompt: SUMMARIZATION_PROMPT,
                messages: &to_summarise,
                previous: None,
            };
            match ctx.model.summarise(&req) {
                Ok(summary) => {
                    let forgotten = self.kept.len();
                    events.push(PolicyEvent::Summarised {
                        replaced: cut + forgotten,
                        kept: self.since.len() - cut,
                        archive: None,
                    });
                    self.kept = self.since.split_off(cut);
                    self.since.clear();
                    self.summary = Some(summary);
                }
                Err(e) => events.push(PolicyEvent::ModelFailed {
                    role: "summary",
                    outcome: format!("{e}; conversation left whole"),
                }),
            }
        }
        Ok(Prepared {
            request: self.request(),
            events,
        })
    }

    fn history_replaced(&mut self) {
        *self = Pi {
            config: self.config.clone(),
            ..Pi::default()
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `findCutPoint` read line by line: the kept tail starts at the user
    /// message at or before the reply after the first one far enough back.
    #[test]
    fn cut_point_is_the_turn_of_the_first_reply_within_keep_recent() {
        use Slot::*;
        let c = PiCompaction {
            keep_recent_tokens: 100,
            ..PiCompaction::default()
        };
        let slots = [
            User,
            Assistant(Some(50)),
            Other,
            User,
            Assistant(Some(120)),
            Other,
            Assistant(Some(160)),
            User,
            Assistant(Some(230)),
        ];
        // 230 - 120 = 110 >= 100 at the reply at 4; the reply after it is
        // at 6, whose turn starts at 3.
        assert_eq!(c.find_cut_point(&slots, 0, slots.len()), 3);
        // A wider keep reaches back to the first reply: nothing is cut.
        let wide = PiCompaction {
            keep_recent_tokens: 1_000,
            ..c.clone()
        };
        assert_eq!(wide.find_cut_point(&slots, 0, slots.len()), 0);
        // No usage: only the last turn stays.
        let bare = [User, Assistant(None), User, Assistant(None)];
        assert_eq!(c.find_cut_point(&bare, 0, 4), 2);
        // No user message in range: everything stays.
        assert_eq!(c.find_cut_point(&[Other, Assistant(Some(9))], 0, 2), 0);
        assert!(c.should_compact(183_617) && !c.should_compact(183_616));
    }

    fn step(i: usize) -> Vec<Message> {
        use crate::message::Block;
        let id = format!("t{i}");
        vec![
            Message::assistant(vec![Block::ToolUse {
                id: id.clone(),
                name: "read".into(),
                input: serde_json::json!({}).into(),
            }]),
            Message::tool_results(vec![(id, "y".repeat(400))]),
        ]
    }

    /// The whole design on a growing history: no compaction under the
    /// threshold; past it, the summary first, then the kept tail from a
    /// user message; the next compaction neither keeps nor summarises what
    /// the first one kept.
    #[test]
    fn compaction_puts_the_summary_before_the_kept_turns() {
        use crate::policy::model::Scripted;
        let mut p = Pi {
            config: PiCompaction {
                reserve_tokens: 100,
                keep_recent_tokens: 150,
                context_window: 400,
                ..PiCompaction::default()
            },
            ..Pi::default()
        };
        let mut model = Scripted::replies(["first", "second"]);
        let mut h = vec![Message::user_text("task one")];
        h.extend(step(0));
        let mut run = |p: &mut Pi, h: &mut Vec<Message>| {
            PolicyCtx::with_test("/pi", &mut model, |ctx| p.prepare(h, ctx).unwrap())
        };
        assert!(run(&mut p, &mut h).events.is_empty());
        for i in 1..4 {
            h.push(Message::user_text(format!("task {i}")));
            h.extend(step(i));
        }
        // Approx: a step is 2 + 100 tokens, a task 2; the last reply's
        // usage is 316 > 400 - 100. The cut: 316 - 108 >= 150 at the reply of
        // step 1, so the kept tail starts at task 2 (the turn of step 2's reply).
        let got = run(&mut p, &mut h);
        assert_eq!(got.events.len(), 1, "{:?}", got.events);
        assert!(crate::import::pi::is_summary(&got.request[0]));
        assert!(got.request[0].text().contains("first"));
        let kept = &got.request[1..];
        assert_eq!(kept[0], Message::user_text("task 2"));
        assert_eq!(kept.len(), 6);
        assert!(kept.len() < h.len());
        assert_eq!(kept, &h[h.len() - kept.len()..]);
        assert!(crate::policy::validity::check(&got.request).is_empty());
        for i in 4..8 {
            h.push(Message::user_text(format!("task {i}")));
            h.extend(step(i));
        }
        let next = run(&mut p, &mut h);
        assert_eq!(next.events.len(), 1);
        assert!(next.request[0].text().contains("second"));
        // What the first compaction kept is gone from the request.
        assert!(!next.request.iter().any(|m| m.text() == kept[0].text()));
        assert!(crate::policy::validity::check(&next.request).is_empty());
    }
}
