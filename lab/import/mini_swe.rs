//! mini-swe-agent trajectories (`*.traj.json`, `trajectory_format:
//! "mini-swe-agent-1"`): `{"info": {...}, "messages": [...], "trajectory_format"}`.
//!
//! Upstream (`SWE-agent/mini-swe-agent`, `agents/default.py`, version 1.x)
//! keeps one linear list of OpenAI-style `{role, content}` messages: a
//! system prompt, the task, then for every step the model's reply and one
//! user message. The reply's action is its one fenced `bash` block
//! ([`super::text_action::mini_swe_action`]); the user message after a reply
//! with an action is that action's result (the rendered observation, a
//! timeout message, or the submitted output), and after a reply without one
//! it is the format error. So:
//!
//! * a reply with an action becomes its text plus a `tool_use` (`bash`, id
//!   `text-action-N`, N the message's index in `messages`, input `{"command"}`);
//! * the user message after it becomes one `tool_result` answering that id,
//!   holding the whole message text;
//! * every other message stays text; `system` goes to `system`.
//!
//! [`super::ImportedSession::action_shape`] records
//! [`super::ActionShape::TextActions`], so the recorded shape can be restored.
//!
//! Damage: content that is neither a string nor a list of `{type: "text"}`
//! parts is an `invalid_record` (the message is kept with what text it has);
//! a user message that reads as an observation (`<returncode>`, a timeout)
//! after a reply with no action is an `observation_without_action` (kept as
//! user text); a cut file is `truncated`; a reply whose action has no answer
//! is repaired like any call without a result (`dangling_tool_use`).
//! `info` and `trajectory_format` are skipped unread (the stream keeps one
//! message at a time).
//!
//! Sizes: a message's recorded size is `len(json.dumps({"role", "content"}))`
//! of the message as written; the `extra` field (the raw API response) is
//! left out, since it is the harness's record, not part of what the model
//! was sent.

use std::io::BufRead;

use serde_json::Value;

use super::stream::for_each_element;
use super::text_action::{action_id, looks_like_observation, mini_swe_action, TEXT_ACTION_TOOL};
use super::{finish_document, ActionShape, DiagnosticKind, ImportedSession, Origin, Sink};
use crate::error::LabResult;
use crate::message::{Block, Content, Message, Role};

pub(crate) fn read<R: BufRead>(
    reader: R,
    session: &mut ImportedSession,
    sink: &mut Sink<'_>,
) -> LabResult<()> {
    let source = sink.source.to_path_buf();
    let mut conv = Steps::default();
    let end = for_each_element(reader, &source, &["messages"], &[], |v, line, column| {
        conv.message(&v, (line, column), session, sink)
    })?;
    if session.stats.records > 0 && conv.with_role == 0 {
        return Err(super::openai::not_messages(
            sink,
            session.stats.records,
            (1, 1),
        ));
    }
    if conv.actions > 0 {
        session.action_shape = ActionShape::TextActions;
    }
    finish_document(session, conv.main, conv.origins, end.truncated, sink)
}

/// The trajectory under construction, message by message.
#[derive(Default)]
struct Steps {
    main: Vec<Message>,
    origins: Vec<Origin>,
    /// The id of the action the next user message answers.
    pending: Option<String>,
    /// Index of the next element of `messages`.
    index: usize,
    /// Elements with a string `role`.
    with_role: usize,
    /// Actions imported.
    actions: usize,
}

impl Steps {
    fn message(
        &mut self,
        v: &Value,
        pos: (usize, usize),
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        let index = self.index;
        self.index += 1;
        session.stats.records += 1;
        let role = v.get("role").and_then(Value::as_str);
        if role.is_some() {
            self.with_role += 1;
        }
        let pending = self.pending.take();
        match role {
            Some("system") => {
                session.stats.message_records += 1;
                session.system.push(content_text(v, pos, sink)?);
            }
            Some("assistant") => {
                session.stats.message_records += 1;
                let text = content_text(v, pos, sink)?;
                let content = match mini_swe_action(&text) {
                    Some(command) => {
                        let id = action_id(index);
                        session.stats.tool_uses += 1;
                        self.actions += 1;
                        self.pending = Some(id.clone());
                        let call = Block::ToolUse {
                            id,
                            name: TEXT_ACTION_TOOL.to_string(),
                            input: serde_json::json!({ "command": command }).into(),
                        };
                        Content::Blocks(vec![Block::Text { text }, call])
                    }
                    None => Content::Text(text),
                };
                self.push(Role::Assistant, content, v, pos);
            }
            Some("user") => {
                session.stats.message_records += 1;
                let text = content_text(v, pos, sink)?;
                let content = match pending {
                    Some(id) => {
                        session.stats.tool_results += 1;
                        let chars = text.chars().count();
                        let largest = &mut session.stats.largest_tool_result_chars;
                        *largest = (*largest).max(chars);
                        Content::Blocks(vec![Block::ToolResult {
                            tool_use_id: id,
                            content: text,
                        }])
                    }
                    None => {
                        self.orphan_observation(&text, pos, sink)?;
                        Content::Text(text)
                    }
                };
                self.push(Role::User, content, v, pos);
            }
            other => {
                // An unknown element does not break the action's pairing.
                self.pending = pending;
                session.skip_role(other, pos, sink)?;
            }
        }
        Ok(())
    }

    /// Report an observation that follows a reply with no action (or
    /// another user message): upstream never writes one there.
    fn orphan_observation(
        &self,
        text: &str,
        pos: (usize, usize),
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        let after_reply = self.main.last().is_some_and(|m| m.role == Role::Assistant);
        // The task (the first message of `main`) is never an observation.
        let is_task = self.main.is_empty();
        if looks_like_observation(text) && !is_task {
            let before = if after_reply {
                "the reply before it holds no single ```bash block"
            } else {
                "no reply comes before it"
            };
            sink.report(
                pos.0,
                pos.1,
                DiagnosticKind::ObservationWithoutAction,
                format!("an observation answers no action ({before}); kept as user text"),
            )?;
        }
        Ok(())
    }

    fn push(&mut self, role: Role, content: Content, v: &Value, pos: (usize, usize)) {
        let recorded = recorded_len(v);
        self.main.push(Message { role, content });
        self.origins.push(Origin::at(pos.0, pos.1, recorded));
    }
}

/// `len(json.dumps({"role": ..., "content": ...}))` of the element as written.
fn recorded_len(v: &Value) -> usize {
    let mut m = serde_json::Map::new();
    for key in ["role", "content"] {
        if let Some(x) = v.get(key) {
            m.insert(key.to_string(), x.clone());
        }
    }
    crate::pyjson::dumps_len(&Value::Object(m))
}

/// The text of `content`: a string, or the `text` of `{type: "text"}` parts
/// joined by newlines. Any other shape is reported and read as what text it holds.
fn content_text(v: &Value, pos: (usize, usize), sink: &mut Sink<'_>) -> LabResult<String> {
    let found = match v.get("content") {
        Some(Value::String(s)) => return Ok(s.clone()),
        Some(Value::Array(parts)) if parts.iter().all(is_text_part) => {
            return Ok(super::system_text(v.get("content")))
        }
        Some(Value::Array(_)) => "a list with a part that is not {type: \"text\", text}",
        Some(Value::Null) | None => "no content",
        Some(Value::Object(_)) => "an object",
        Some(Value::Number(_)) => "a number",
        Some(Value::Bool(_)) => "a boolean",
    };
    sink.report(
        pos.0,
        pos.1,
        DiagnosticKind::InvalidRecord,
        format!("message content is {found}, not a string or text parts; read as its text only"),
    )?;
    Ok(super::system_text(v.get("content")))
}

fn is_text_part(p: &Value) -> bool {
    p.get("type").and_then(Value::as_str) == Some("text")
        && p.get("text").is_some_and(Value::is_string)
}

/// One reply's raw API response, if it kept one, and the 1-based line and
/// column of its message.
pub type Response = (Option<Value>, (usize, usize));

/// The raw API response each assistant message of a trajectory keeps
/// (`extra.response`), with the 1-based line and column of its message, in
/// order; a message without one gives `None`. Read by streaming, so a cut
/// file yields the replies before the cut (the import reports the damage).
pub fn responses(path: &std::path::Path) -> LabResult<Vec<Response>> {
    let file = std::fs::File::open(path)
        .map_err(|e| crate::error::LabError::io("reading a trajectory", path, e))?;
    let reader = std::io::BufReader::new(file);
    let mut out = Vec::new();
    for_each_element(reader, path, &["messages"], &[], |mut v, line, column| {
        if v.get("role").and_then(Value::as_str) == Some("assistant") {
            let response = v.pointer_mut("/extra/response").map(Value::take);
            out.push((response, (line, column)));
        }
        Ok(())
    })?;
    Ok(out)
}

/// The `mini_swe_agent` format's registration (`format_list.rs`).
pub const FORMAT: crate::format::Format = crate::format::Format {
    name: "mini_swe_agent",
    sniff: Some((20, crate::sniff::mini_swe_agent)),
    name_endings: &[".traj.json"],
    extensions: &[],
    product: None,
    compaction_by_index: false,
    read: |input| input.one(|r, s, k| read(r, s, k)),
};
