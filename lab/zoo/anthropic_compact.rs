//! Anthropic API server-side compaction, strategy `compact_20260112`
//! (beta header `compact-2026-01-12`).
//!
//! Source: <https://platform.claude.com/docs/en/build-with-claude/compaction>,
//! read in the dated mirror johnzfitch/claude-wiki@8e5484c6522ab2f4d34aa3c87cc6804942d977d0
//! `docs/04-API-Reference/Guides/compaction-claude-api-docs-54d4071243.md`
//! (fetched from the page 2026-02-07; read 2026-12-03): sections "How
//! compaction works", "Parameters", "Custom summarization instructions",
//! "Pausing after compaction", "Working with compaction blocks".
//!
//! Documented behaviour: when input tokens exceed `trigger` (default 150,000,
//! at least 50,000) the API summarises the whole conversation with the
//! default prompt (or `instructions`, which replace it entirely), puts the
//! summary in a `compaction` block at the start of the assistant response and
//! continues the response from that block alone; on later requests every
//! block before the last `compaction` block is ignored. The client may drop
//! those blocks itself, which is what this *rewriting* policy does.
//! With `pause_after_compaction` the response stops after the block; the
//! page's own example then re-appends the last 2 messages verbatim, which
//! this policy follows (`preserved_after_pause`).
//!
//! The lab's message model has no `compaction` block: it is a text block
//! opening an assistant message, and the assistant response recorded next is
//! merged into that message at the following call (the API returns both in
//! one response).

use serde::{Deserialize, Serialize};

use crate::error::LabResult;
use crate::message::{Block, Content, Message, Role};
use crate::policy::{
    PointerRule, Policy, PolicyCtx, PolicyEvent, PolicyInfo, Prepared, Source, SummaryRequest, Unit,
};

/// The policy name in `lab policies`.
pub const NAME: &str = "anthropic-compact";

/// The documented default summarisation prompt, byte for byte.
pub const DEFAULT_PROMPT: &str = "You have written a partial transcript for the initial task above. Please write a summary of the transcript. The purpose of this summary is to provide continuity so you can continue to make progress towards solving the task in a future context, where the raw history above may not be accessible and will be replaced with this summary. Write down anything that would be helpful, including the state, next steps, learnings etc. You must wrap your summary in a <summary></summary> block.";

/// The documented lowest `trigger` the API accepts.
pub const TRIGGER_MIN: usize = 50_000;

/// When compaction runs: input tokens above this.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
pub enum Trigger {
    /// Tokens of the whole prompt.
    InputTokens(usize),
}

/// The strategy's parameters under their API names; `Default` is documented
/// (`trigger` 150,000 input tokens, no pause, no instructions). The two
/// lab-only fields are marked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Switches {
    /// When to compact (default 150,000 input tokens).
    pub trigger: Trigger,
    /// Stop the response after the compaction block (default false).
    pub pause_after_compaction: bool,
    /// A prompt that replaces the default entirely (default none).
    pub instructions: Option<String>,
    /// Lab: messages the client re-appends after a paused compaction (2, the
    /// documentation's example).
    pub preserved_after_pause: usize,
    /// Fault (off by default): when the summary call fails, commit the error
    /// text as the summary, as openclaw's `summarizeWithFallback` returned its
    /// fallback string on the success path
    /// (<https://github.com/openclaw/openclaw/issues/115413>, also
    /// <https://github.com/openclaw/openclaw/issues/5224>).
    pub fault_error_as_summary: bool,
}

impl Default for Switches {
    fn default() -> Self {
        Switches {
            trigger: Trigger::InputTokens(150_000),
            pause_after_compaction: false,
            instructions: None,
            preserved_after_pause: 2,
            fault_error_as_summary: false,
        }
    }
}

/// The policy: switches plus whether the last call compacted (so the next
/// recorded assistant response joins the compaction block's message).
#[derive(Debug, Clone, Default)]
pub struct Compact {
    /// Parameters.
    pub switches: Switches,
    /// The history opens with a compaction message awaiting its response.
    awaiting_response: bool,
}

/// A boxed policy with the documented defaults.
pub fn make() -> Box<dyn Policy> {
    Box::new(Compact::default())
}

impl Compact {
    /// Join the response recorded after a compaction into the compaction's
    /// assistant message (one response in the API).
    fn merge_response(&mut self, history: &mut Vec<Message>) {
        if !std::mem::take(&mut self.awaiting_response) {
            return;
        }
        if history.len() < 2 || history[1].role != Role::Assistant {
            return;
        }
        let next = history.remove(1);
        let extra = match next.content {
            Content::Blocks(b) => b,
            Content::Text(text) => vec![Block::Text { text }],
        };
        if let Content::Blocks(blocks) = &mut history[0].content {
            blocks.extend(extra);
        }
    }

    /// The summary, or what replaces it when the call fails (`None`: no compaction).
    fn summarise(
        &self,
        history: &[Message],
        ctx: &mut PolicyCtx<'_>,
    ) -> (Option<String>, Option<PolicyEvent>) {
        let prompt = self
            .switches
            .instructions
            .as_deref()
            .unwrap_or(DEFAULT_PROMPT);
        let req = SummaryRequest {
            prompt,
            messages: history,
            previous: None,
        };
        match ctx.model.summarise(&req) {
            Ok(s) => (Some(s), None),
            Err(e) if self.switches.fault_error_as_summary => (Some(e.0), None),
            Err(e) => (
                None,
                Some(PolicyEvent::ModelFailed {
                    role: "summary",
                    outcome: format!("no compaction; the request goes out whole (the API would return the error: {e})"),
                }),
            ),
        }
    }
}

impl Policy for Compact {
    fn configure(&mut self, overrides: &crate::policy::variant::Overrides) -> Result<(), String> {
        crate::policy::variant::set_fields(&mut self.switches, overrides)
    }

    fn variant_keys(&self) -> crate::policy::variant::Overrides {
        crate::policy::variant::fields(&self.switches)
    }

    fn info(&self) -> PolicyInfo {
        PolicyInfo {
            name: NAME.into(),
            family: "Anthropic API",
            summary: "server-side compaction: past the trigger the whole conversation becomes one summary block; earlier blocks are ignored".into(),
            source: Source {
                upstream: "https://platform.claude.com/docs/en/build-with-claude/compaction (mirror johnzfitch/claude-wiki@8e5484c6, fetched 2026-02-07; read 2026-12-03)".into(),
                files: &[
                    "How compaction works",
                    "Parameters",
                    "Pausing after compaction",
                    "Working with compaction blocks",
                ],
                license: "documentation (no code reproduced)",
                approximate: false,
            },
            constants: serde_json::json!({
                "switches": self.switches,
                "default_prompt": DEFAULT_PROMPT,
                "trigger_min": TRIGGER_MIN,
            }),
            unit: Unit::Tokens,
            differences: vec![
                "the `compaction` block is a text block opening an assistant message (the lab has no compaction block type)",
                "triggers below the API minimum of 50,000 tokens are accepted, so small scripted histories can be replayed",
                "tokens come from the run's counter, not the API's tokenizer",
                "a failed summary call leaves the request whole (the API would fail the request)",
            ],
        }
    }

    fn pointer_rules(&self) -> Vec<PointerRule> {
        // The summary replaces the past; nothing points to where it went.
        Vec::new()
    }

    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        self.merge_response(history);
        let Trigger::InputTokens(trigger) = self.switches.trigger;
        if ctx.tokens.count_messages(history) <= trigger {
            return Ok(Prepared {
                request: history.clone(),
                events: Vec::new(),
            });
        }
        let (summary, failed) = self.summarise(history, ctx);
        let Some(summary) = summary else {
            return Ok(Prepared {
                request: history.clone(),
                events: failed.into_iter().collect(),
            });
        };
        let keep = if self.switches.pause_after_compaction {
            self.switches.preserved_after_pause.min(history.len())
        } else {
            0
        };
        let preserved = history.split_off(history.len() - keep);
        let replaced = history.len();
        *history = vec![Message::assistant(vec![Block::Text { text: summary }])];
        history.extend(preserved);
        // Only an unpaused compaction continues the same response.
        self.awaiting_response = keep == 0;
        Ok(Prepared {
            request: history.clone(),
            events: vec![PolicyEvent::Summarised {
                replaced,
                kept: keep,
                archive: None,
            }],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::model::Scripted;
    use crate::storage::MemFs;
    use crate::tokens::Approx;
    use std::path::Path;

    fn run(p: &mut Compact, h: &mut Vec<Message>, model: &mut Scripted) -> Prepared {
        let fs = MemFs::new();
        let mut ctx = PolicyCtx {
            storage: &fs,
            root: Path::new("/run/p"),
            tokens: &Approx,
            turn: 0,
            envelope: 0,
            anchor: None,
            read_lines: None,
            now_ms: None,
            model,
        };
        p.prepare(h, &mut ctx).unwrap()
    }

    fn history() -> Vec<Message> {
        vec![
            Message::user_text("build the site; never touch prod.env"),
            Message::assistant(vec![Block::ToolUse {
                id: "t1".into(),
                name: "bash".into(),
                input: serde_json::json!({"command": "ls"}).into(),
            }]),
            Message::tool_results(vec![("t1".into(), "x".repeat(400))]),
        ]
    }

    fn small() -> Compact {
        let mut p = Compact::default();
        p.switches.trigger = Trigger::InputTokens(50);
        p
    }

    /// Expected output derived from the documentation (the strategy runs only
    /// inside Anthropic's API): over the trigger the whole conversation is
    /// replaced by one compaction block; the next response joins that message.
    #[test]
    fn golden_compaction_replaces_everything_and_the_response_joins_it() {
        let mut p = small();
        let mut h = history();
        let mut model = Scripted::replies(["<summary>site half built</summary>"]);
        let out = run(&mut p, &mut h, &mut model);
        let block = Message::assistant(vec![Block::Text {
            text: "<summary>site half built</summary>".into(),
        }]);
        assert_eq!(out.request, vec![block.clone()]);
        assert_eq!(h, out.request);
        assert_eq!(
            out.events,
            vec![PolicyEvent::Summarised {
                replaced: 3,
                kept: 0,
                archive: None
            }]
        );
        h.push(Message::assistant(vec![Block::Text {
            text: "done".into(),
        }]));
        h.push(Message::user_text("thanks"));
        let out = run(&mut p, &mut h, &mut model);
        assert_eq!(h.len(), 2);
        assert_eq!(
            h[0].blocks(),
            [
                Block::Text {
                    text: "<summary>site half built</summary>".into()
                },
                Block::Text {
                    text: "done".into()
                }
            ]
        );
        assert!(out.events.is_empty(), "under the trigger after compaction");
    }

    #[test]
    fn default_prompt_is_sent_unless_instructions_replace_it() {
        struct Spy(Vec<String>);
        impl crate::policy::ModelRole for Spy {
            fn name(&self) -> String {
                "spy".into()
            }
            fn summarise(
                &mut self,
                r: &SummaryRequest<'_>,
            ) -> Result<String, crate::policy::ModelError> {
                self.0.push(r.prompt.to_string());
                Ok("s".into())
            }
        }
        let fs = MemFs::new();
        let mut spy = Spy(Vec::new());
        for instructions in [None, Some("keep code".to_string())] {
            let mut p = small();
            p.switches.instructions = instructions;
            let mut ctx = PolicyCtx {
                storage: &fs,
                root: Path::new("/r"),
                tokens: &Approx,
                turn: 0,
                envelope: 0,
                anchor: None,
                read_lines: None,
                now_ms: None,
                model: &mut spy,
            };
            p.prepare(&mut history(), &mut ctx).unwrap();
        }
        assert_eq!(spy.0, [DEFAULT_PROMPT, "keep code"]);
    }

    #[test]
    fn pause_keeps_the_last_two_messages_after_the_block() {
        let mut p = small();
        p.switches.pause_after_compaction = true;
        let mut h = history();
        let out = run(&mut p, &mut h, &mut Scripted::replies(["s"]));
        assert_eq!(out.request.len(), 3);
        assert_eq!(&out.request[1..], &history()[1..]);
    }

    #[test]
    fn failed_summary_leaves_history_whole_and_the_fault_commits_the_error() {
        let mut p = small();
        let mut h = history();
        let mut failing = Scripted {
            replies: [Err("prompt is too long".to_string())].into(),
        };
        let out = run(&mut p, &mut h, &mut failing);
        assert_eq!(h, history());
        assert!(matches!(out.events[..], [PolicyEvent::ModelFailed { .. }]));

        p.switches.fault_error_as_summary = true;
        let mut failing = Scripted {
            replies: [Err("prompt is too long".to_string())].into(),
        };
        let out = run(&mut p, &mut h, &mut failing);
        // The damage: every message is gone and the "summary" is the error.
        assert_eq!(out.request.len(), 1);
        assert_eq!(out.request[0].text(), "prompt is too long");
        assert!(!out.request[0].text().contains("prod.env"));
    }
}
