//! Codex CLI rollout logs (`~/.codex/sessions/…/rollout-*.jsonl`): one
//! `{"timestamp", "type", "payload"}` record per line, `type` one of
//! `session_meta`, `response_item`, `event_msg`, `turn_context`, `compacted`
//! (`codex-rs/protocol`, `RolloutItem`, `#[serde(tag = "type", content = "payload")]`).
//!
//! * `response_item` payloads are the Responses API items the model saw:
//!   `message` (`user` / `assistant` text parts; `developer` / `system` go
//!   to `system`), `reasoning` (its summary texts, a thinking block),
//!   `function_call` / `custom_tool_call` / `local_shell_call` (a
//!   `tool_use` with the item's `call_id`), `function_call_output` /
//!   `custom_tool_call_output` (the `tool_result` answering it). Items of
//!   the model's side join one assistant message until an item of the
//!   user's side comes, and the other way round, so each model call is one
//!   assistant message.
//! * `compacted` is the product's compaction: its `message` (the summary)
//!   becomes a user message there and its index a real compaction; the
//!   history before it stays in `main`, as for Claude Code logs; a
//!   recorded `trigger` string is kept. What its `replacement_history`
//!   kept is not modelled yet (the continued context is read from the
//!   items that follow).
//! * `event_msg` `token_count` records (`info.last_token_usage`) are the
//!   product's own per-call counts, kept in `recorded_tokens`; other
//!   events, `session_meta` and `turn_context` are counted in `skipped`.
//!
//! Damage: a cut last line is `truncated` (what precedes it is kept);
//! invalid JSON before the last line is an input error; a record type or
//! item type the importer does not know is `unknown_record_type` /
//! `unknown_block_type`; a record whose `payload` is not an object, or a
//! call with no `call_id`, is `invalid_record`; a result answering no call
//! is repaired like any orphan result.

use std::io::BufRead;

use serde_json::Value;

use super::aider::RecordedTokens;
use super::lines::{self, Rules};
use super::{finish_document, DiagnosticKind, ImportedSession, Origin, RealCompaction, Sink};
use crate::error::LabResult;
use crate::message::{Block, Content, Message, Role};

/// Which side of the conversation an item belongs to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Model,
    User,
}

#[derive(Default)]
struct Rollout {
    main: Vec<Message>,
    origins: Vec<Origin>,
    /// The side of the last message of `main`, when it may take more items.
    open: Option<Side>,
}

pub(crate) fn read<R: BufRead>(
    reader: R,
    session: &mut ImportedSession,
    sink: &mut Sink<'_>,
) -> LabResult<()> {
    let mut rollout = Rollout::default();
    let source = sink.source.to_path_buf();
    let end = lines::for_each(
        reader,
        &source,
        RULES,
        |b| serde_json::from_slice::<Value>(b),
        |v, at| rollout.record(&v, at.line, session, sink),
    )?;
    finish_document(session, rollout.main, rollout.origins, end.truncated, sink)
}

/// How rollouts are read line by line: no comment lines.
const RULES: Rules = Rules {
    comments: false,
    fix: "each line of a rollout is one JSON record; repair or remove this line",
};

impl Rollout {
    fn record(
        &mut self,
        v: &Value,
        line: usize,
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        session.stats.records += 1;
        let kind = v.get("type").and_then(Value::as_str).unwrap_or("(none)");
        let payload = match v.get("payload") {
            Some(p @ Value::Object(_)) => p,
            _ => {
                session.skip(kind);
                let msg = format!("`{kind}` record whose payload is not an object; skipped");
                return sink.report(line, 1, DiagnosticKind::InvalidRecord, msg);
            }
        };
        match kind {
            "response_item" => self.item(payload, line, session, sink),
            "compacted" => {
                self.compacted(payload, line, session);
                Ok(())
            }
            "event_msg" => {
                self.event(payload, line, session);
                Ok(())
            }
            "session_meta" | "turn_context" => {
                session.skip(kind);
                Ok(())
            }
            other => {
                session.skip(other);
                let msg = format!("unknown record type `{other}`; counted and skipped");
                sink.report(line, 1, DiagnosticKind::UnknownRecordType, msg)
            }
        }
    }

    /// One Responses API item.
    fn item(
        &mut self,
        p: &Value,
        line: usize,
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        let str_of = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or_default();
        let kind = str_of("type");
        match kind {
            "message" => match str_of("role") {
                "user" => self.push(Side::User, Block::Text { text: text_of(p) }, line, session),
                "assistant" => {
                    self.push(Side::Model, Block::Text { text: text_of(p) }, line, session)
                }
                _ => {
                    session.stats.message_records += 1;
                    session.system.push(text_of(p));
                }
            },
            "reasoning" => {
                let thinking = summary_of(p);
                if !thinking.is_empty() {
                    self.push(Side::Model, Block::Thinking { thinking }, line, session);
                }
            }
            "function_call" | "custom_tool_call" | "local_shell_call" => {
                let Some(id) = p.get("call_id").and_then(Value::as_str) else {
                    let msg = format!("`{kind}` item with no call_id; skipped");
                    return sink.report(line, 1, DiagnosticKind::InvalidRecord, msg);
                };
                let name = match kind {
                    "local_shell_call" => "local_shell".to_string(),
                    _ => str_of("name").to_string(),
                };
                let input = call_input(p);
                session.stats.tool_uses += 1;
                let block = Block::ToolUse {
                    id: id.to_string(),
                    name,
                    input: input.into(),
                };
                self.push(Side::Model, block, line, session);
            }
            "function_call_output" | "custom_tool_call_output" => {
                let id = str_of("call_id").to_string();
                let content = output_of(p.get("output"));
                session.stats.tool_results += 1;
                let largest = &mut session.stats.largest_tool_result_chars;
                *largest = (*largest).max(content.chars().count());
                let block = Block::ToolResult {
                    tool_use_id: id,
                    content,
                };
                self.push(Side::User, block, line, session);
            }
            other => {
                session.skip(&format!("item:{other}"));
                let msg = format!("unknown response item type `{other}`; counted and skipped");
                sink.report(line, 1, DiagnosticKind::UnknownBlockType, msg)?;
            }
        }
        Ok(())
    }

    /// Add `block` to the open message of its side, or start one.
    fn push(&mut self, side: Side, block: Block, line: usize, session: &mut ImportedSession) {
        if self.open == Some(side) {
            if let Some(Message {
                content: Content::Blocks(b),
                ..
            }) = self.main.last_mut()
            {
                b.push(block);
                return;
            }
        }
        session.stats.message_records += 1;
        let role = match side {
            Side::Model => Role::Assistant,
            Side::User => Role::User,
        };
        self.main.push(Message {
            role,
            content: Content::Blocks(vec![block]),
        });
        self.origins.push(Origin::at(line, 1, 0));
        self.open = Some(side);
    }

    /// The product's compaction: its summary as the first message of the
    /// continued context.
    fn compacted(&mut self, p: &Value, line: usize, session: &mut ImportedSession) {
        let summary = p.get("message").and_then(Value::as_str).unwrap_or_default();
        let trigger = p.get("trigger").and_then(Value::as_str).map(str::to_string);
        let at = self.main.len();
        self.main.push(Message::user_text(summary));
        self.origins.push(Origin::at(line, 1, 0));
        self.open = None;
        session.real_compactions.push(at);
        session.real_compaction_meta.push(RealCompaction {
            dropped: None,
            first_kept: None,
            at,
            trigger,
            pre_tokens: None,
        });
    }

    /// `token_count` events are the product's own per-call counts.
    fn event(&mut self, p: &Value, line: usize, session: &mut ImportedSession) {
        let kind = p.get("type").and_then(Value::as_str).unwrap_or("(none)");
        session.skip(&format!("event:{kind}"));
        let usage = p.pointer("/info/last_token_usage");
        let count = |k: &str| usage.and_then(|u| u.get(k)).and_then(Value::as_u64);
        if let (Some(sent), Some(received)) = (count("input_tokens"), count("output_tokens")) {
            session.recorded_tokens.push(RecordedTokens {
                line,
                after_messages: self.main.len(),
                sent,
                sent_min: sent,
                sent_max: sent,
                received,
            });
        }
    }
}

/// The text parts of a `message` item, joined by newlines.
fn text_of(p: &Value) -> String {
    let parts = p
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let texts: Vec<&str> = parts
        .iter()
        .filter_map(|c| c.get("text").and_then(Value::as_str))
        .collect();
    texts.join("\n")
}

/// The summary texts of a `reasoning` item (its encrypted content is unreadable).
fn summary_of(p: &Value) -> String {
    text_of(&serde_json::json!({ "content": p.get("summary").cloned().unwrap_or_default() }))
}

/// A call's input: `arguments` parsed when it is JSON, else `input`, else the shell `action`.
fn call_input(p: &Value) -> Value {
    match p.get("arguments") {
        Some(Value::String(s)) => {
            serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
        }
        Some(other) => other.clone(),
        None => p
            .get("input")
            .or_else(|| p.get("action"))
            .cloned()
            .unwrap_or_default(),
    }
}

/// A call output: a string, `{content}`, or content items' text.
fn output_of(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Object(o)) => output_of(o.get("content")),
        Some(Value::Array(items)) => {
            let texts: Vec<&str> = items
                .iter()
                .filter_map(|i| i.get("text").and_then(Value::as_str))
                .collect();
            texts.join("\n")
        }
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// The `codex_rollout` format's registration (`format_list.rs`).
pub const FORMAT: crate::format::Format = crate::format::Format {
    name: "codex_rollout",
    sniff: Some((70, crate::sniff::codex_rollout)),
    name_endings: &[],
    extensions: &[],
    product: Some("codex-cli"),
    compaction_by_index: true,
    read: |input| input.one(|r, s, k| read(r, s, k)),
};
