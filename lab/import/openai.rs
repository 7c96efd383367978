//! OpenAI chat messages: a bare array, `{"messages": [...]}`, or a SWE-agent
//! `.traj` (`{"history": [...], "trajectory": ...}`, the rest skipped unread).
//!
//! * `system` / `developer` messages go to [`super::ImportedSession::system`].
//! * `user` content is a string or parts (`text`, `image_url`).
//! * `assistant` content (string, parts or null) becomes a text block,
//!   followed by one `tool_use` per `tool_calls` entry; `function.arguments`
//!   (a JSON string) is parsed into the input, or kept as a string with a
//!   [`super::DiagnosticKind::BadToolArguments`] diagnostic.
//! * consecutive `tool` messages (`tool_call_id`, or SWE-agent's
//!   `tool_call_ids`) become one user message of `tool_result` blocks.
//! * the legacy `function_call` / `role: function` pair becomes a `tool_use`
//!   with id `function-call-line-N` and its result.
//! * a SWE-agent `thought_action` entry (an assistant message with no tool
//!   calls that records its `action` / `thought`, as SWE-agent 0.x and 1.x's
//!   text parser write them) holds its action as text: the last top-level
//!   fenced block ([`super::text_action::thought_action`]) becomes a `bash`
//!   `tool_use` with id `text-action-N` (N the element's index), and the next
//!   user message (the observation) its result; the session's
//!   [`super::ActionShape`] says so.

use std::io::BufRead;

use serde_json::Value;

use super::stream::for_each_element;
use super::{finish_document, DiagnosticKind, ImportedSession, Origin, Sink};
use crate::error::{LabError, LabResult};
use crate::message::{Block, Content, Message, Role};

pub(crate) fn read<R: BufRead>(
    reader: R,
    session: &mut ImportedSession,
    sink: &mut Sink<'_>,
) -> LabResult<()> {
    let source = sink.source.to_path_buf();
    let mut conv = Conversation::default();
    let mut first = None;
    let end = for_each_element(
        reader,
        &source,
        &["messages", "history"],
        &[],
        |v, line, column| {
            first.get_or_insert((line, column));
            conv.message(&v, (line, column), session, sink)
        },
    )?;
    if session.stats.records > 0 && conv.with_role == 0 {
        return Err(not_messages(
            sink,
            session.stats.records,
            first.unwrap_or((1, 1)),
        ));
    }
    conv.finish(session, end.truncated, sink)
}

/// The refusal of an array none of whose elements is a message.
pub(crate) fn not_messages(sink: &Sink<'_>, elements: usize, first: (usize, usize)) -> LabError {
    sink.error(
        first.0,
        first.1,
        format!(
            "none of the {elements} array element(s) is a message (none has a string `role`)"
        ),
        "pass an array of messages or of trajectory objects (`traj`), or name the format with --format-in",
    )
}

/// One OpenAI conversation under construction, fed message by message.
#[derive(Default)]
pub(crate) struct Conversation {
    main: Vec<Message>,
    origins: Vec<Origin>,
    last_was_tool: bool,
    /// Legacy `function_call` id, answered by the next `role: function` message.
    pending_function: Option<String>,
    /// Elements that had a string `role`.
    pub(crate) with_role: usize,
    /// Index of the next element.
    index: usize,
    /// The text action the next user message answers.
    pending_text_action: Option<String>,
}

impl Conversation {
    /// Repair pairs and store the conversation in `session`.
    pub(crate) fn finish(
        self,
        session: &mut ImportedSession,
        truncated: Option<(usize, usize)>,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        finish_document(session, self.main, self.origins, truncated, sink)
    }

    /// Take one message element at `pos` (line, column).
    pub(crate) fn message(
        &mut self,
        v: &Value,
        pos: (usize, usize),
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        session.stats.records += 1;
        let index = self.index;
        self.index += 1;
        let answers = self.pending_text_action.take();
        let role = v.get("role").and_then(Value::as_str).map(str::to_string);
        if role.is_some() {
            self.with_role += 1;
        }
        let was_tool = self.last_was_tool;
        self.last_was_tool = false;
        let recorded = crate::pyjson::dumps_len(v);
        // OpenAI content is a string, a list of parts or null.
        if let Some(c) = v
            .get("content")
            .filter(|c| !(c.is_string() || c.is_array() || c.is_null()))
        {
            let msg = format!(
                "message content {c} is not a string, a list of parts or null; read as empty text"
            );
            sink.report(pos.0, pos.1, DiagnosticKind::InvalidRecord, msg)?;
        }
        match role.as_deref() {
            Some("system") | Some("developer") => {
                session.stats.message_records += 1;
                session.system.push(text_of(v.get("content")));
            }
            Some("user") => {
                session.stats.message_records += 1;
                let content = match answers {
                    Some(id) => observation(v, id, session),
                    None => user_content(v.get("content"), pos, sink)?,
                };
                self.push(Role::User, content, pos, recorded);
            }
            Some("assistant") => {
                session.stats.message_records += 1;
                let mut content = self.assistant(v, pos, session, sink)?;
                if let Some(id) = text_action(v, &mut content, index) {
                    session.stats.tool_uses += 1;
                    session.action_shape = super::ActionShape::TextActions;
                    self.pending_text_action = Some(id);
                }
                self.push(Role::Assistant, content, pos, recorded);
            }
            Some(role @ ("tool" | "function")) => {
                self.tool(v, role, pos, was_tool, recorded, session, sink)?;
            }
            other => session.skip_role(other, pos, sink)?,
        }
        Ok(())
    }

    /// A user or assistant message of the main conversation, recorded at `pos`.
    fn push(&mut self, role: Role, content: Content, pos: (usize, usize), recorded: usize) {
        self.main.push(Message { role, content });
        self.origins.push(Origin::at(pos.0, pos.1, recorded));
    }

    /// An assistant message: its text, then one `tool_use` per call.
    fn assistant(
        &mut self,
        v: &Value,
        pos: (usize, usize),
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<Content> {
        let line = pos.0;
        let mut blocks = Vec::new();
        let text = text_of(v.get("content"));
        if !text.is_empty() {
            blocks.push(Block::Text { text });
        }
        let calls = v
            .get("tool_calls")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for (k, call) in calls.iter().enumerate() {
            session.stats.tool_uses += 1;
            blocks.push(tool_call(call, k, pos, sink)?);
        }
        if let Some(fc) = v.get("function_call").filter(|f| f.is_object()) {
            session.stats.tool_uses += 1;
            let (id, block) = function_call(fc, line);
            blocks.push(block);
            self.pending_function = Some(id);
        }
        Ok(assistant_content(blocks))
    }

    /// A `tool` (or legacy `function`) message: a `tool_result`, merged into
    /// the user message of the tool message right before it.
    #[allow(clippy::too_many_arguments)]
    fn tool(
        &mut self,
        v: &Value,
        role: &str,
        pos: (usize, usize),
        was_tool: bool,
        recorded: usize,
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        let (line, column) = pos;
        session.stats.message_records += 1;
        session.stats.tool_results += 1;
        let legacy = if role == "function" {
            self.pending_function.take()
        } else {
            None
        };
        let ids = answered_ids(v, legacy);
        let Some(id) = ids.first().cloned() else {
            return sink.report(
                line,
                column,
                DiagnosticKind::InvalidRecord,
                "tool message names no tool_call_id; skipped".into(),
            );
        };
        if ids.len() > 1 {
            sink.report(
                line,
                column,
                DiagnosticKind::InvalidRecord,
                format!(
                    "tool message answers {} calls; its result is kept for the first only",
                    ids.len()
                ),
            )?;
        }
        let content = text_of(v.get("content"));
        session.stats.largest_tool_result_chars = session
            .stats
            .largest_tool_result_chars
            .max(content.chars().count());
        let block = Block::ToolResult {
            tool_use_id: id,
            content,
        };
        self.push_result(block, pos, was_tool, recorded);
        self.last_was_tool = true;
        Ok(())
    }

    /// A result joins the user message of the tool message right before it,
    /// or starts a user message of its own.
    fn push_result(&mut self, block: Block, pos: (usize, usize), was_tool: bool, recorded: usize) {
        match (self.main.last_mut(), self.origins.last_mut()) {
            (
                Some(Message {
                    role: Role::User,
                    content: Content::Blocks(b),
                }),
                Some(origin),
            ) if was_tool => {
                b.push(block);
                // One more element of the recorded list: its size and a ", ".
                origin.recorded += recorded + 2;
            }
            _ => {
                self.main.push(Message::user_blocks(vec![block]));
                self.origins.push(Origin::at(pos.0, pos.1, recorded));
            }
        }
    }
}

/// A SWE-agent `thought_action` reply: when `v` records an `action` or
/// `thought`, calls no tool, and its text holds a fenced block, add the
/// block's command as a `tool_use` after the text; its id.
fn text_action(v: &Value, content: &mut Content, index: usize) -> Option<String> {
    let recorded_as_text = v.get("action").is_some_and(Value::is_string)
        || v.get("thought").is_some_and(Value::is_string);
    let Content::Text(text) = &*content else {
        return None;
    };
    if !recorded_as_text {
        return None;
    }
    let command = super::text_action::thought_action(text)?;
    let id = super::text_action::action_id(index);
    let call = Block::ToolUse {
        id: id.clone(),
        name: super::text_action::TEXT_ACTION_TOOL.to_string(),
        input: serde_json::json!({ "command": command }).into(),
    };
    *content = Content::Blocks(vec![Block::Text { text: text.clone() }, call]);
    Some(id)
}

/// The user message after a text action: its text, as the action's result.
fn observation(v: &Value, id: String, session: &mut ImportedSession) -> Content {
    let text = text_of(v.get("content"));
    session.stats.tool_results += 1;
    let largest = &mut session.stats.largest_tool_result_chars;
    *largest = (*largest).max(text.chars().count());
    Content::Blocks(vec![Block::ToolResult {
        tool_use_id: id,
        content: text,
    }])
}

/// The call ids a tool message answers: the pending legacy function call,
/// else `tool_call_id`, else the strings of `tool_call_ids`.
fn answered_ids(v: &Value, legacy: Option<String>) -> Vec<String> {
    match (v.get("tool_call_id"), v.get("tool_call_ids")) {
        _ if legacy.is_some() => legacy.into_iter().collect(),
        (Some(Value::String(id)), _) => vec![id.clone()],
        (_, Some(Value::Array(ids))) => ids
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

/// One element `k` of `tool_calls` as a `tool_use`; arguments that are not
/// JSON are kept as a string, with a diagnostic.
fn tool_call(call: &Value, k: usize, pos: (usize, usize), sink: &mut Sink<'_>) -> LabResult<Block> {
    let (line, column) = pos;
    let id = call
        .get("id")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| format!("call-line-{line}-{k}"));
    let function = call.get("function");
    let name = function
        .and_then(|f| f.get("name"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let input = match function.and_then(|f| f.get("arguments")) {
        Some(Value::String(s)) => match serde_json::from_str(s) {
            Ok(v) => v,
            Err(_) => {
                sink.report(
                    line,
                    column,
                    DiagnosticKind::BadToolArguments,
                    format!("arguments of tool call `{id}` are not JSON; kept as a string"),
                )?;
                Value::String(s.clone())
            }
        },
        Some(other) => other.clone(),
        None => Value::Object(Default::default()),
    };
    Ok(Block::ToolUse {
        id,
        name,
        input: input.into(),
    })
}

/// A legacy `function_call` as a `tool_use` with an id made from its line
/// (the later `function` message answers it); arguments that are not JSON
/// are kept as a string, silently, as before.
fn function_call(fc: &Value, line: usize) -> (String, Block) {
    let id = format!("function-call-line-{line}");
    let name = fc
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let input = match fc.get("arguments") {
        Some(Value::String(s)) => {
            serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
        }
        Some(other) => other.clone(),
        None => Value::Object(Default::default()),
    };
    let block = Block::ToolUse {
        id: id.clone(),
        name,
        input: input.into(),
    };
    (id, block)
}

/// Blocks when the message calls a tool, else its text alone.
fn assistant_content(blocks: Vec<Block>) -> Content {
    let has_calls = blocks.iter().any(|b| matches!(b, Block::ToolUse { .. }));
    if has_calls {
        Content::Blocks(blocks)
    } else {
        Content::Text(
            blocks
                .into_iter()
                .map(|b| match b {
                    Block::Text { text } => text,
                    _ => String::new(),
                })
                .collect(),
        )
    }
}

/// Text of OpenAI content: a string, or the `text` of its parts; null is empty.
fn text_of(v: Option<&Value>) -> String {
    super::system_text(v)
}

fn user_content(v: Option<&Value>, pos: (usize, usize), sink: &mut Sink<'_>) -> LabResult<Content> {
    let (line, column) = pos;
    match v {
        Some(Value::Array(parts)) => {
            let mut blocks = Vec::new();
            for part in parts {
                match part.get("type").and_then(Value::as_str) {
                    Some("text") => blocks.push(Block::Text {
                        text: part
                            .get("text")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string(),
                    }),
                    Some("image_url") => blocks.push(Block::Image {
                        source: "url".into(),
                    }),
                    other => {
                        let t = other.unwrap_or("(none)");
                        sink.report(
                            line,
                            column,
                            DiagnosticKind::UnknownBlockType,
                            format!("unknown content part type `{t}`; kept as a text placeholder"),
                        )?;
                        blocks.push(Block::Text {
                            text: format!("[unsupported block: {t}]"),
                        });
                    }
                }
            }
            Ok(Content::Blocks(blocks))
        }
        other => Ok(Content::Text(text_of(other))),
    }
}

/// The `openai` format's registration (`format_list.rs`).
pub const FORMAT: crate::format::Format = crate::format::Format {
    name: "openai",
    sniff: Some((80, crate::sniff::openai)),
    name_endings: &[],
    extensions: &["traj"],
    product: None,
    compaction_by_index: false,
    read: |input| input.one(|r, s, k| read(r, s, k)),
};
