//! goose sessions as goose's JSON Lines store wrote them
//! (`~/.local/share/goose/sessions/ID.jsonl`, releases before the SQLite
//! `sessions.db`, which [`super::goose_db`] reads through `Messages` too):
//! a `SessionMetadata` first line, then one serialised
//! `Message` per line. Read at block/goose
//! 0fc5e54062be2712f705269265e928c17bceee83 (`crates/goose/src/session/legacy.rs`:
//! the first line is metadata unless it parses as a message) and
//! 05132966065f7dd80b97af7d080a41328d103073
//! (`crates/goose/src/conversation/message.rs`: `Message {id, role, created,
//! content, metadata: {userVisible, agentVisible}}`, `MessageContent`
//! tagged by a camelCase `type`).
//!
//! * `text` is text, `image` an image block (by `mimeType`), `thinking` a
//!   thinking block; `toolRequest` / `frontendToolRequest` a `tool_use`
//!   (`toolCall.value.name` / `.arguments`; a call that failed to parse,
//!   `status: "error"`, keeps its error as the input); `toolResponse` the
//!   `tool_result` answering it by `id` (the text items of
//!   `toolResult.value`, a list or a `CallToolResult`'s `content`; an error
//!   result its `error`).
//! * What goose never sends the model is counted in `skipped`:
//!   `redactedThinking`, `toolConfirmationRequest`, `actionRequired`,
//!   `systemNotification`, the pre-1.14 `conversationCompacted` notice, and
//!   the older `summarizationRequested` / `contextLengthExceeded` notices.
//! * **Compaction** (`context_mgmt::compact_messages`, as stored at
//!   0036b819bdd7dd02042fb6038e946d22ef56d926): goose keeps the originals
//!   (now `agentVisible: false`), then writes the summary as an agent-only
//!   user message (`userVisible: false, agentVisible: true`), an agent-only
//!   assistant continuation ("Your context was compacted…") and a fresh
//!   copy of the newest text-only user message. An agent-only user message
//!   after an agent-invisible one is a real compaction (by the importer's
//!   index, as for Codex); the continuation names its trigger (`manual` for
//!   "…at the user's request", else `auto`). Everything stays in `main`
//!   in file order; [`super::artefacts`] drops the summary, the
//!   continuation and the copy for a policy replay.
//!
//! Damage: a cut last line is `truncated`; a line that is not JSON before
//! it is an input error at its line:column; a message with no string
//! `role` or no `content` array is `invalid_record`; an unknown content
//! type `unknown_block_type`; a tool request or response with no `id`
//! `invalid_record`.

use std::io::BufRead;

use serde_json::Value;

use super::lines::{self, Rules};
use super::{finish_document, DiagnosticKind, ImportedSession, Origin, RealCompaction, Sink};
use crate::error::LabResult;
use crate::message::{Block, Content, Message, Role};

/// The start of every continuation note `compact_messages` writes.
pub const CONTINUATION_START: &str = "Your context was compacted";

/// Words only the manual continuation note holds.
const MANUAL_MARK: &str = "at the user's request";

/// Content goose shows the user (or keeps) but never sends the model.
const SILENT: &[&str] = &[
    "redactedThinking",
    "toolConfirmationRequest",
    "actionRequired",
    "systemNotification",
    "conversationCompacted",
    "summarizationRequested",
    "contextLengthExceeded",
];

const RULES: Rules = Rules {
    comments: false,
    fix: "each line of a goose session is one JSON record (metadata first, then messages); repair or remove this line",
};

/// One goose session read a serialised `Message` at a time: a line of the
/// JSON Lines store, or a row of `sessions.db` ([`super::goose_db`]).
#[derive(Default)]
pub(crate) struct Messages {
    main: Vec<Message>,
    origins: Vec<Origin>,
    /// The last message kept was hidden from the agent (a compacted original).
    after_hidden: bool,
    /// Lines of the summaries found.
    summaries: Vec<usize>,
}

pub(crate) fn read<R: BufRead>(
    reader: R,
    session: &mut ImportedSession,
    sink: &mut Sink<'_>,
) -> LabResult<()> {
    let source = sink.source.to_path_buf();
    let mut log = Messages::default();
    let end = lines::for_each(
        reader,
        &source,
        RULES,
        |b| serde_json::from_slice::<Value>(b),
        |v, at| log.record(&v, at.line, session, sink),
    )?;
    log.finish(session, end.truncated, sink)
}

impl Messages {
    /// The session's messages into `session`, its compactions marked;
    /// `truncated`: where the input was cut, if it was.
    pub(crate) fn finish(
        mut self,
        session: &mut ImportedSession,
        truncated: Option<(usize, usize)>,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        let summaries = std::mem::take(&mut self.summaries);
        finish_document(session, self.main, self.origins, truncated, sink)?;
        mark_compactions(session, &summaries);
        Ok(())
    }

    fn record(
        &mut self,
        v: &Value,
        line: usize,
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        session.stats.records += 1;
        // The first line is the session's metadata unless it is a message.
        if line == 1 && v.get("content").is_none() && v.get("role").is_none() {
            session.skip("metadata");
            return Ok(());
        }
        self.message(v, line, session, sink)
    }

    /// One serialised `Message` at `line` (a row id in a database): kept
    /// with what of it is sent, if anything.
    pub(crate) fn message(
        &mut self,
        v: &Value,
        line: usize,
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        let Some(content) = v.get("content").and_then(Value::as_array) else {
            session.skip("(no content)");
            let msg = "message with no `content` array; skipped".to_string();
            return sink.report(line, 1, DiagnosticKind::InvalidRecord, msg);
        };
        let role = match v.get("role").and_then(Value::as_str) {
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            other => return session.skip_role(other, (line, 1), sink),
        };
        session.stats.message_records += 1;
        let mut blocks = Vec::new();
        for c in content {
            content_item(c, line, &mut blocks, session, sink)?;
        }
        if blocks.is_empty() {
            session.skip("message with nothing sent");
            return Ok(());
        }
        let (to_user, to_agent) = visibility(v);
        if role == Role::User && to_agent && !to_user && self.after_hidden {
            self.summaries.push(line);
        }
        self.after_hidden = !to_agent;
        self.main.push(Message {
            role,
            content: Content::Blocks(blocks),
        });
        self.origins.push(Origin::at(line, 1, 0));
        Ok(())
    }
}

/// `metadata.userVisible` and `metadata.agentVisible` (both true when absent,
/// as `MessageMetadata::default`).
fn visibility(v: &Value) -> (bool, bool) {
    let flag = |k: &str| {
        v.pointer(&format!("/metadata/{k}"))
            .and_then(Value::as_bool)
            .unwrap_or(true)
    };
    (flag("userVisible"), flag("agentVisible"))
}

/// One `MessageContent` item: the block it is sent as, if any.
fn content_item(
    c: &Value,
    line: usize,
    blocks: &mut Vec<Block>,
    session: &mut ImportedSession,
    sink: &mut Sink<'_>,
) -> LabResult<()> {
    let kind = c.get("type").and_then(Value::as_str).unwrap_or("(none)");
    let str_of = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or_default();
    match kind {
        "text" => blocks.push(Block::Text {
            text: str_of("text").to_string(),
        }),
        "image" => blocks.push(Block::Image {
            source: str_of("mimeType").to_string(),
        }),
        "thinking" => blocks.push(Block::Thinking {
            thinking: str_of("thinking").to_string(),
        }),
        "toolRequest" | "frontendToolRequest" | "toolResponse" => {
            let Some(id) = c.get("id").and_then(Value::as_str) else {
                session.skip(kind);
                let msg = format!("`{kind}` with no `id`; skipped");
                return sink.report(line, 1, DiagnosticKind::InvalidRecord, msg);
            };
            blocks.push(if kind == "toolResponse" {
                tool_result(id, c.get("toolResult"), session)
            } else {
                session.stats.tool_uses += 1;
                tool_use(id, c.get("toolCall"))
            });
        }
        k if SILENT.contains(&k) => session.skip(k),
        other => {
            session.skip(&format!("content:{other}"));
            let msg = format!("unknown content type `{other}`; counted and skipped");
            sink.report(line, 1, DiagnosticKind::UnknownBlockType, msg)?;
        }
    }
    Ok(())
}

/// A `toolRequest`'s call: `{"status": "success", "value": {name, arguments}}`
/// or `{"status": "error", "error": …}` (kept as the input: it is what the
/// model wrote).
fn tool_use(id: &str, call: Option<&Value>) -> Block {
    let value = call.and_then(|c| c.get("value"));
    let name = value
        .and_then(|v| v.get("name"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let input = match value.and_then(|v| v.get("arguments")) {
        Some(a @ Value::Object(_)) => a.clone(),
        _ => match call.and_then(|c| c.get("error")) {
            Some(e) => serde_json::json!({ "error": e }),
            None => Value::Object(Default::default()),
        },
    };
    Block::ToolUse {
        id: id.to_string(),
        name: name.to_string(),
        input: input.into(),
    }
}

/// A `toolResponse`'s result: the text items of its value, or its error.
fn tool_result(id: &str, result: Option<&Value>, session: &mut ImportedSession) -> Block {
    let value = result.and_then(|r| r.get("value"));
    let items = match value {
        Some(Value::Array(items)) => Some(items),
        Some(v) => v.get("content").and_then(Value::as_array),
        None => None,
    };
    let content = match items {
        Some(items) => items
            .iter()
            .filter_map(|i| i.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        None => result
            .and_then(|r| r.get("error"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
    };
    session.stats.tool_results += 1;
    let largest = &mut session.stats.largest_tool_result_chars;
    *largest = (*largest).max(content.chars().count());
    Block::ToolResult {
        tool_use_id: id.to_string(),
        content,
    }
}

/// Each summary that survived the repair is a real compaction; the
/// continuation note after it tells its trigger.
fn mark_compactions(session: &mut ImportedSession, lines: &[usize]) {
    for &line in lines {
        let Some(at) = (0..session.main.len()).find(|&i| session.main_lines[i] == line) else {
            continue;
        };
        let manual = session
            .main
            .get(at + 1)
            .is_some_and(|m| is_continuation(m) && m.text().contains(MANUAL_MARK));
        session.real_compactions.push(at);
        session.real_compaction_meta.push(RealCompaction {
            dropped: None,
            first_kept: None,
            at,
            trigger: Some(if manual { "manual" } else { "auto" }.to_string()),
            pre_tokens: None,
        });
    }
}

/// `m` is the assistant's continuation note after a goose summary.
pub(crate) fn is_continuation(m: &Message) -> bool {
    m.role == Role::Assistant && m.text().starts_with(CONTINUATION_START)
}

/// An SQLite store (opencode's is told apart by its tables when read), or
/// goose's first line.
fn sniffs(h: &crate::format::Head<'_>) -> bool {
    h.raw.starts_with(crate::format::SQLITE_HEADER)
        || h.first_object
            .as_ref()
            .is_some_and(crate::sniff::is_goose_line)
}

/// The `goose` format's registration (`format_list.rs`).
pub const FORMAT: crate::format::Format = crate::format::Format {
    name: "goose",
    sniff: Some((65, sniffs)),
    name_endings: &[],
    extensions: &[],
    product: Some("goose-auto-compact"),
    compaction_by_index: true,
    read: |mut input| {
        // goose's `sessions.db` and opencode's `opencode.db` are SQLite.
        if input.is_sqlite()? {
            return crate::sqlite_database(input.source, input.backing.is_some(), input.options);
        }
        input.one(|r, s, k| read(r, s, k))
    },
};
