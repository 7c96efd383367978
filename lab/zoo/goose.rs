//! goose auto-compaction: once the agent-visible conversation passes
//! `threshold` of the context limit, the whole of it is summarised; the
//! originals stay in the session, visible to the user but not to the agent,
//! followed by the summary (a user message), a continuation note from the
//! assistant and a fresh copy of the newest text-only user message.
//!
//! Upstream: block/goose, `crates/goose/src/context_mgmt/mod.rs` as stored at
//! 0036b819bdd7dd02042fb6038e946d22ef56d926 (`compact_messages`,
//! `check_if_compaction_needed`, `DEFAULT_COMPACTION_THRESHOLD`, the
//! continuation texts), `crates/goose/src/prompts/compaction.md` at
//! 11453df8179021e38633c5ef30ec542f410170d7 and `crates/goose/src/model.rs`
//! at 0514da8447306e6ad256e80843ecff3eb19d5773 (`DEFAULT_CONTEXT_LIMIT`).
//! Apache-2.0; constants and strings only are reproduced. The three files
//! are the versions the search index holds, not one commit: the policy is
//! marked approximate.
//!
//! A projecting design in the lab: the history stays whole (goose keeps the
//! originals); the request is the agent-visible list this policy keeps.

use serde::{Deserialize, Serialize};

use crate::error::LabResult;
use crate::message::{Block, Content, Message, Role};
use crate::policy::{
    PointerRule, Policy, PolicyCtx, PolicyEvent, PolicyInfo, Prepared, Source, SummaryRequest, Unit,
};

/// `DEFAULT_COMPACTION_THRESHOLD`.
pub const DEFAULT_COMPACTION_THRESHOLD: f64 = 0.8;
/// `DEFAULT_CONTEXT_LIMIT` (a model goose has no limit for).
pub const DEFAULT_CONTEXT_LIMIT: usize = 128_000;
/// `CONVERSATION_CONTINUATION_TEXT`, byte for byte.
pub const CONVERSATION_CONTINUATION_TEXT: &str = "Your context was compacted. The previous message contains a summary of the conversation so far.
Do not mention that you read a summary or that conversation summarization occurred.
Just continue the conversation naturally based on the summarized context.";
/// `TOOL_LOOP_CONTINUATION_TEXT`, byte for byte.
pub const TOOL_LOOP_CONTINUATION_TEXT: &str = "Your context was compacted. The previous message contains a summary of the conversation so far.
Do not mention that you read a summary or that conversation summarization occurred.
Continue calling tools as necessary to complete the task.";
/// `prompts/compaction.md`, byte for byte (its `{{ messages }}` is filled by
/// the summariser with the messages it is given).
pub const COMPACTION_PROMPT: &str = include_str!("goose_compaction.md");

/// Switches, under goose's names; `Default` is goose's defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GooseCompaction {
    /// `GOOSE_AUTO_COMPACT_THRESHOLD` (0 or ≥ 1 turns auto-compaction off).
    pub threshold: f64,
    /// The model's context limit in tokens.
    pub context_limit: usize,
}

impl Default for GooseCompaction {
    fn default() -> Self {
        GooseCompaction {
            threshold: DEFAULT_COMPACTION_THRESHOLD,
            context_limit: DEFAULT_CONTEXT_LIMIT,
        }
    }
}

/// goose as a policy: the agent-visible conversation it keeps.
#[derive(Debug, Clone, Default)]
pub struct Goose {
    /// The switches.
    pub config: GooseCompaction,
    visible: Vec<Message>,
    seen: usize,
}

/// `goose-auto-compact` with goose's defaults.
pub fn auto_compact() -> Box<dyn Policy> {
    Box::new(Goose::default())
}

/// Text of a user message with text and no tool content (`has_text_only`),
/// its text parts joined by newlines (`extract_text`).
fn text_only(m: &Message) -> Option<String> {
    if m.role != Role::User || m.is_tool_result() {
        return None;
    }
    match &m.content {
        Content::Text(t) => Some(t.clone()),
        Content::Blocks(b) => {
            let texts: Vec<&str> = b
                .iter()
                .filter_map(|x| match x {
                    Block::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
    }
}

impl GooseCompaction {
    /// `check_if_compaction_needed` on `tokens` of the visible conversation.
    pub fn needed(&self, tokens: usize) -> bool {
        let ratio = tokens as f64 / self.context_limit.max(1) as f64;
        self.threshold > 0.0 && self.threshold < 1.0 && ratio > self.threshold
    }

    /// `compact_messages` (not manual): the new agent-visible conversation.
    pub fn compact(&self, visible: &[Message], summary: String) -> Vec<Message> {
        let preserved = visible
            .iter()
            .enumerate()
            .rev()
            .find_map(|(i, m)| text_only(m).map(|t| (i, t)));
        let most_recent = preserved
            .as_ref()
            .is_some_and(|(i, _)| *i + 1 == visible.len());
        let continuation = if most_recent {
            CONVERSATION_CONTINUATION_TEXT
        } else {
            TOOL_LOOP_CONTINUATION_TEXT
        };
        let mut out = vec![
            Message::user_text(summary),
            Message::assistant(vec![Block::Text {
                text: continuation.into(),
            }]),
        ];
        out.extend(preserved.map(|(_, t)| Message::user_text(t)));
        out
    }
}

impl Policy for Goose {
    fn configure(&mut self, overrides: &crate::policy::variant::Overrides) -> Result<(), String> {
        crate::policy::variant::set_fields(&mut self.config, overrides)
    }

    fn variant_keys(&self) -> crate::policy::variant::Overrides {
        crate::policy::variant::fields(&self.config)
    }

    fn info(&self) -> PolicyInfo {
        PolicyInfo {
            name: "goose-auto-compact".into(),
            family: "goose",
            summary: "past threshold of the context limit, summarise everything; originals stay user-visible, agent-invisible".into(),
            source: Source {
                upstream: "block/goose (context_mgmt/mod.rs@0036b81, prompts/compaction.md@11453df, model.rs@0514da8)".into(),
                files: &[
                    "crates/goose/src/context_mgmt/mod.rs",
                    "crates/goose/src/prompts/compaction.md",
                    "crates/goose/src/model.rs",
                ],
                license: "Apache-2.0",
                approximate: true,
            },
            constants: serde_json::json!({
                "DEFAULT_COMPACTION_THRESHOLD": self.config.threshold,
                "DEFAULT_CONTEXT_LIMIT": self.config.context_limit,
                "ENABLE_TOOL_PAIR_SUMMARIZATION": false,
            }),
            unit: Unit::Tokens,
            differences: vec![
                "source files read at three different stored commits (marked approximate)",
                "tokens are counted by the run's counter (upstream: session-reported totals when present, else its tokenizer)",
                "the summary call's retries with tool responses removed from the middle are not modelled; a failed call leaves the conversation whole",
                "manual compaction and tool-pair summarisation (off upstream) are not modelled",
            ],
        }
    }

    fn pointer_rules(&self) -> Vec<PointerRule> {
        // The originals stay in goose's session, but the agent cannot reach them.
        Vec::new()
    }

    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        let mut events = Vec::new();
        self.visible
            .extend_from_slice(&history[self.seen.min(history.len())..]);
        self.seen = history.len();
        if self.config.needed(ctx.tokens.count_messages(&self.visible)) {
            let req = SummaryRequest {
                prompt: COMPACTION_PROMPT,
                messages: &self.visible,
                previous: None,
            };
            match ctx.model.summarise(&req) {
                Ok(summary) => {
                    let compacted = self.config.compact(&self.visible, summary);
                    events.push(PolicyEvent::Summarised {
                        replaced: self.visible.len(),
                        kept: compacted.len() - 2,
                        archive: None,
                    });
                    self.visible = compacted;
                }
                Err(e) => events.push(PolicyEvent::ModelFailed {
                    role: "summary",
                    outcome: format!("{e}; conversation left whole"),
                }),
            }
        }
        Ok(Prepared {
            request: self.visible.clone(),
            events,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;

    use super::*;
    use crate::policy::model::Scripted;
    use crate::storage::MemFs;
    use crate::tokens::Approx;

    fn step(i: usize) -> Vec<Message> {
        let id = format!("t{i}");
        vec![
            Message::assistant(vec![Block::ToolUse {
                id: id.clone(),
                name: "shell".into(),
                input: json!({}).into(),
            }]),
            Message::tool_results(vec![(id, "y".repeat(40))]),
        ]
    }

    fn run(p: &mut Goose, h: &mut Vec<Message>, model: &mut Scripted) -> Prepared {
        let storage = MemFs::new();
        let mut ctx = PolicyCtx {
            storage: &storage,
            root: Path::new("/g"),
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

    /// Expectations derived from `compact_messages` read line by line.
    #[test]
    fn compaction_in_a_tool_loop_keeps_the_last_user_text_after_the_note() {
        let mut p = Goose {
            config: GooseCompaction {
                threshold: 0.8,
                context_limit: 40,
            },
            ..Default::default()
        };
        let mut model = Scripted::replies(["## Goal\nfix it"]);
        let mut h = vec![Message::user_text("fix it")];
        h.extend(step(0));
        // Task 2 tokens, a step 13 (name 2, input 1, result 10): 15 of 40, under 0.8.
        assert!(run(&mut p, &mut h, &mut model).events.is_empty());
        h.extend(step(1));
        h.extend(step(2));
        // 2 + 3 x 13 = 41 > 32: compaction, mid tool loop.
        let got = run(&mut p, &mut h, &mut model);
        assert_eq!(
            got.request,
            vec![
                Message::user_text("## Goal\nfix it"),
                Message::assistant(vec![Block::Text {
                    text: TOOL_LOOP_CONTINUATION_TEXT.into()
                }]),
                Message::user_text("fix it"),
            ]
        );
        assert_eq!(h.len(), 7, "the originals stay in the session");
        // New messages join the visible conversation after the compaction.
        h.extend(step(3));
        let next = run(&mut p, &mut h, &mut model);
        assert_eq!(next.request.len(), 5);
        assert!(crate::policy::validity::check(&next.request).is_empty());
    }

    #[test]
    fn compaction_on_a_fresh_user_message_uses_the_conversation_note() {
        let visible = vec![
            Message::user_text("a"),
            Message::assistant(vec![Block::Text { text: "b".into() }]),
            Message::user_text("now c"),
        ];
        let out = GooseCompaction::default().compact(&visible, "S".into());
        assert_eq!(out[1].text(), CONVERSATION_CONTINUATION_TEXT);
        assert_eq!(out[2], Message::user_text("now c"));
        assert!(!GooseCompaction {
            threshold: 1.0,
            context_limit: 1
        }
        .needed(1_000));
    }
}
