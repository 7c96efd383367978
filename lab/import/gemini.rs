//! Gemini CLI chat recordings (`~/.gemini/tmp/<project>/chats/session-*`),
//! as `packages/core/src/services/chatRecordingService.ts` and
//! `chatRecordingTypes.ts` write them (read at google-gemini/gemini-cli
//! 5411f113cafae26161b4969b0237b8e1e024e2c2; the fixture is written by
//! `@google/gemini-cli-core` 0.61.0's own recorder):
//!
//! * **JSON Lines** (since April 2026): a metadata line (`sessionId`,
//!   `projectHash`, …), then one line per write: a `MessageRecord` (a record
//!   whose `id` was seen before replaces it: the recorder rewrites a reply
//!   when its tokens or tool calls arrive), `{"$set": {...}}` metadata
//!   updates, `{"$set": {"messages": [...]}}` checkpoints (the whole history
//!   as the chat holds it) and `{"$rewindTo": ID}` (the user rewound: that
//!   message and what follows are dropped). Read with upstream's own
//!   precedence (`loadConversationRecord`).
//! * **One JSON document** (before): the whole `ConversationRecord`,
//!   `{"sessionId", "projectHash", …, "messages": [...]}`, streamed message
//!   by message.
//!
//! Messages: `user` records are user turns (`text` parts; `functionResponse`
//! parts are the `tool_result`s answering the calls by their `id`);
//! `gemini` records are replies (`thoughts` become thinking blocks, the
//! text, `functionCall` parts and `toolCalls` become `tool_use`s). A call
//! whose response is in no `user` record (the one-document format keeps it
//! only in `toolCalls[].result`) is answered from its `result` in the next
//! user message. Consecutive turns of one role join one message, as Gemini
//! CLI's `coalesceConsecutiveRoles` sends them. `info` / `error` /
//! `warning` records are the UI's, never sent: counted in `skipped`. A
//! reply's `tokens` (`input` = `promptTokenCount`) is kept in
//! `recorded_tokens`.
//!
//! **Compression**: Gemini CLI's chat compression (automatic, or `/compress`)
//! starts a new chat on the same file whose history is the environment
//! context, a user turn holding the `<state_snapshot>` summary, the
//! model's "Got it. Thanks for the additional context!", then the turns it
//! kept; the recorder writes that history as a checkpoint. A checkpoint that
//! brings a new user turn holding `<state_snapshot>` is a real compaction:
//! the summary and the acknowledgement follow the history they replaced in
//! `main` (as Claude Code's continuation does), the kept turns stay where
//! they were. Any other checkpoint (a rollback after an aborted turn, a
//! synced start) replaces the history after the last compaction, as upstream
//! reads it. The one-document format records no compression.
//!
//! Damage: a cut last line (or a cut document) is `truncated`; invalid JSON
//! before the last line is an input error; a record of no known shape is
//! `unknown_record_type`, a message whose `type` is unknown `unknown_role`,
//! one with no string `type` or a `content` that is no part list
//! `invalid_record`, an unknown part `unknown_block_type`; unanswered calls
//! and stray responses are repaired like any other.

use std::collections::{HashMap, HashSet};
use std::io::BufRead;

use serde_json::Value;

use super::aider::RecordedTokens;
use super::lines::{self, Rules};
use super::stream::for_each_element;
use super::{finish_document, DiagnosticKind, ImportedSession, Origin, RealCompaction, Sink};
use crate::error::{LabError, LabResult};
use crate::message::{Block, Content, Message, Role};

/// The marker of Gemini CLI's compression summary; upstream's compression
/// service itself looks for it (`p.text?.includes('<state_snapshot>')`).
pub const STATE_SNAPSHOT: &str = "<state_snapshot>";

/// The model turn Gemini CLI's compression puts after the summary.
pub const COMPRESSION_ACK: &str = "Got it. Thanks for the additional context!";

/// (line, column) of a record.
type Pos = (usize, usize);

/// One message record as the log holds it last.
struct Entry {
    id: String,
    record: Value,
    pos: Pos,
    /// A compression brought it (summary or acknowledgement).
    compression: bool,
}

/// The conversation as the records so far build it.
#[derive(Default)]
struct Log {
    entries: Vec<Entry>,
    /// Index in `entries` by id.
    index: HashMap<String, usize>,
    /// Entries before this are history a compression replaced: checkpoints
    /// and rewinds leave them.
    frozen: usize,
    /// Entry index of each compression summary.
    summaries: Vec<usize>,
}

pub(crate) fn read<R: BufRead>(
    mut reader: R,
    session: &mut ImportedSession,
    sink: &mut Sink<'_>,
) -> LabResult<()> {
    let source = sink.source.to_path_buf();
    let head = reader
        .fill_buf()
        .map_err(|e| LabError::io("reading transcript", &source, e))?;
    let mut log = Log::default();
    let truncated = if is_one_document(head) {
        let end = for_each_element(reader, &source, &["messages"], &[], |v, line, column| {
            session.stats.records += 1;
            log.message(v, (line, column), session, sink)
        })?;
        end.truncated
    } else {
        let end = lines::for_each(
            reader,
            &source,
            RULES,
            |b| serde_json::from_slice::<Value>(b),
            |v, at| log.record(v, (at.line, at.column), session, sink),
        )?;
        end.truncated
    };
    let (main, origins, summary_lines) = convert(log, session, sink)?;
    finish_document(session, main, origins, truncated, sink)?;
    mark_compactions(session, &summary_lines);
    Ok(())
}

/// How recordings are read line by line: no comment lines.
const RULES: Rules = Rules {
    comments: false,
    fix: "each line of a Gemini CLI session is one JSON record; repair or remove this line",
};

/// The whole `ConversationRecord` as one document: its first line is not a
/// whole JSON value (pretty-printed, or one long cut line).
fn is_one_document(head: &[u8]) -> bool {
    let text = head.trim_ascii_start();
    let first = &text[..text.iter().position(|&b| b == b'\n').unwrap_or(text.len())];
    serde_json::from_slice::<Value>(first).is_err()
}

impl Log {
    /// One line of the JSON Lines format, by upstream's precedence.
    fn record(
        &mut self,
        v: Value,
        pos: Pos,
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        session.stats.records += 1;
        let str_of = |k: &str| v.get(k).and_then(Value::as_str);
        if let Some(id) = str_of("$rewindTo") {
            let id = id.to_string();
            session.skip("$rewindTo");
            self.rewind(&id, session);
            return Ok(());
        }
        if str_of("id").is_some() {
            return self.message(v, pos, session, sink);
        }
        if let Some(set) = v.get("$set").filter(|s| s.is_object()) {
            match set.get("messages").and_then(Value::as_array) {
                Some(messages) => self.checkpoint(messages, pos, session, sink)?,
                None => session.skip("$set"),
            }
            return Ok(());
        }
        if str_of("sessionId").is_some() && str_of("projectHash").is_some() {
            session.skip("metadata");
            // A whole legacy record on one line carries its messages.
            for m in v
                .get("messages")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                self.message(m.clone(), pos, session, sink)?;
            }
            return Ok(());
        }
        session.skip("(unknown)");
        sink.report(
            pos.0,
            pos.1,
            DiagnosticKind::UnknownRecordType,
            "record is no message, `$set`, `$rewindTo` or session metadata; counted and skipped"
                .into(),
        )
    }

    /// A message record: a new id is appended, a known one replaced.
    fn message(
        &mut self,
        v: Value,
        pos: Pos,
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        let Some(id) = v.get("id").and_then(Value::as_str).map(str::to_string) else {
            session.skip("(no id)");
            return sink.report(
                pos.0,
                pos.1,
                DiagnosticKind::InvalidRecord,
                "message record has no string `id`; skipped".into(),
            );
        };
        session.stats.message_records += 1;
        match self.index.get(&id) {
            Some(&i) => {
                self.entries[i].record = v;
                self.entries[i].pos = pos;
            }
            None => self.push(Entry {
                id,
                record: v,
                pos,
                compression: false,
            }),
        }
        Ok(())
    }

    fn push(&mut self, entry: Entry) {
        self.index.insert(entry.id.clone(), self.entries.len());
        self.entries.push(entry);
    }

    /// `$rewindTo`: drop that message and everything after it (all of the
    /// history after the last compression when it is not found, as upstream
    /// clears).
    fn rewind(&mut self, id: &str, session: &mut ImportedSession) {
        let at = match self.index.get(id) {
            Some(&i) => i.max(self.frozen),
            None => self.frozen,
        };
        let dropped = self.entries.len().saturating_sub(at);
        *session.skipped.entry("rewound message".into()).or_insert(0) += dropped;
        self.entries.truncate(at);
        self.reindex();
    }

    fn reindex(&mut self) {
        self.index = self
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.id.clone(), i))
            .collect();
        self.summaries.retain(|&s| s < self.entries.len());
    }

    /// `$set.messages`: the chat's whole history. With a new
    /// `<state_snapshot>` turn it is a compression (its new turns follow the
    /// history); otherwise it replaces the history after the last compression.
    fn checkpoint(
        &mut self,
        messages: &[Value],
        pos: Pos,
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        session.skip("$set messages");
        let compression = messages.iter().any(|m| {
            id_of(m).is_some_and(|id| !self.index.contains_key(&id)) && is_snapshot_turn(m)
        });
        if compression {
            self.compress(messages, pos, session);
            return Ok(());
        }
        self.replace_tail(messages, pos, session, sink)
    }

    /// A compression: its new turns (the summary, the acknowledgement)
    /// follow the history, which they freeze.
    fn compress(&mut self, messages: &[Value], pos: Pos, session: &mut ImportedSession) {
        for m in messages {
            let Some(id) = id_of(m).filter(|id| !self.index.contains_key(id)) else {
                continue;
            };
            if is_snapshot_turn(m) {
                self.summaries.push(self.entries.len());
            }
            session.stats.message_records += 1;
            let record = m.clone();
            self.push(Entry {
                id,
                record,
                pos,
                compression: true,
            });
        }
        self.frozen = self.entries.len();
    }

    /// Any other checkpoint: the history after the last compression becomes
    /// the checkpoint's, in its order (known messages keep their records).
    fn replace_tail(
        &mut self,
        messages: &[Value],
        pos: Pos,
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        let frozen: HashSet<String> = self.entries[..self.frozen]
            .iter()
            .map(|e| e.id.clone())
            .collect();
        let mut old: HashMap<String, Entry> = self
            .entries
            .drain(self.frozen..)
            .map(|e| (e.id.clone(), e))
            .collect();
        for m in messages {
            let Some(id) = id_of(m) else {
                let msg = "checkpoint message has no string `id`; skipped".to_string();
                sink.report(pos.0, pos.1, DiagnosticKind::InvalidRecord, msg)?;
                continue;
            };
            if frozen.contains(&id) {
                continue;
            }
            let entry = old.remove(&id).unwrap_or_else(|| {
                session.stats.message_records += 1;
                let record = m.clone();
                Entry {
                    id,
                    record,
                    pos,
                    compression: false,
                }
            });
            self.entries.push(entry);
        }
        *session.skipped.entry("rewound message".into()).or_insert(0) += old.len();
        self.reindex();
        Ok(())
    }
}

/// A message record's `id`.
fn id_of(m: &Value) -> Option<String> {
    m.get("id").and_then(Value::as_str).map(str::to_string)
}

/// A user turn holding Gemini CLI's compression summary.
fn is_snapshot_turn(m: &Value) -> bool {
    m.get("type").and_then(Value::as_str) == Some("user")
        && parts_of(m.get("content")).iter().any(|p| {
            p.get("text")
                .and_then(Value::as_str)
                .is_some_and(|t| t.contains(STATE_SNAPSHOT))
        })
}

/// A `PartListUnion` as parts: a string is one text part, a part one part.
fn parts_of(content: Option<&Value>) -> Vec<Value> {
    match content {
        Some(Value::String(s)) => vec![serde_json::json!({ "text": s })],
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| match i {
                Value::String(s) => serde_json::json!({ "text": s }),
                other => other.clone(),
            })
            .collect(),
        Some(o @ Value::Object(_)) => vec![o.clone()],
        _ => Vec::new(),
    }
}

/// The messages being built from the entries.
#[derive(Default)]
struct Builder {
    main: Vec<Message>,
    origins: Vec<Origin>,
    /// Results (from `toolCalls[].result`) of the last reply's calls that no
    /// user record has answered yet.
    pending: Vec<(String, String)>,
    /// The last message may take the next turn of its role.
    open: bool,
    /// Lines of the compression summaries.
    summary_lines: Vec<usize>,
}

/// Convert the final entries into messages; the lines of the summaries.
fn convert(
    log: Log,
    session: &mut ImportedSession,
    sink: &mut Sink<'_>,
) -> LabResult<(Vec<Message>, Vec<Origin>, Vec<usize>)> {
    let mut b = Builder::default();
    for (i, e) in log.entries.iter().enumerate() {
        let summary = log.summaries.contains(&i);
        match e.record.get("type").and_then(Value::as_str) {
            Some("user") => b.user(e, summary, session, sink)?,
            Some("gemini") => b.reply(e, session, sink)?,
            Some(kind @ ("info" | "error" | "warning")) => session.skip(kind),
            other => session.skip_role(other, e.pos, sink)?,
        }
    }
    b.flush_pending(None, session);
    Ok((b.main, b.origins, b.summary_lines))
}

impl Builder {
    fn user(
        &mut self,
        e: &Entry,
        summary: bool,
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        let Some(parts) = content_parts(e, sink)? else {
            return Ok(());
        };
        let mut blocks = Vec::new();
        let mut answered = HashSet::new();
        for p in &parts {
            if let Some(r) = p.get("functionResponse") {
                let id = r
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                answered.insert(id.clone());
                let content = response_text(r.get("response"));
                note_result(session, &content);
                blocks.push(Block::ToolResult {
                    tool_use_id: id,
                    content,
                });
            } else if let Some(block) = part_block(p, e.pos, session, sink)? {
                blocks.push(block);
            }
        }
        // Calls this record does not answer are answered from their `result`.
        self.pending.retain(|(id, _)| !answered.contains(id));
        if summary {
            // The summary opens the compressed chat: a message of its own.
            self.flush_pending(Some(e.pos), session);
            self.open = false;
            self.summary_lines.push(e.pos.0);
            self.push(Role::User, blocks, e.pos, false);
            return Ok(());
        }
        let mut results = self.take_pending(session);
        results.extend(blocks);
        if results.is_empty() {
            session.skip("empty user turn");
            return Ok(());
        }
        self.push(Role::User, results, e.pos, true);
        Ok(())
    }

    /// The pending results as `tool_result` blocks.
    fn take_pending(&mut self, session: &mut ImportedSession) -> Vec<Block> {
        std::mem::take(&mut self.pending)
            .into_iter()
            .map(|(tool_use_id, content)| {
                note_result(session, &content);
                Block::ToolResult {
                    tool_use_id,
                    content,
                }
            })
            .collect()
    }

    fn reply(
        &mut self,
        e: &Entry,
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        self.flush_pending(Some(e.pos), session);
        let mut blocks = thought_blocks(&e.record);
        let Some(parts) = content_parts(e, sink)? else {
            return Ok(());
        };
        let mut called = HashSet::new();
        for p in &parts {
            if let Some(c) = p.get("functionCall") {
                let id = c.get("id").and_then(Value::as_str).unwrap_or_default();
                called.insert(id.to_string());
                blocks.push(tool_use(
                    id.to_string(),
                    c.get("name"),
                    c.get("args"),
                    session,
                ));
            } else if let Some(block) = part_block(p, e.pos, session, sink)? {
                blocks.push(block);
            }
        }
        self.tool_calls(e, &mut called, &mut blocks, session, sink)?;
        if blocks.is_empty() {
            session.skip("empty reply");
        } else {
            self.push(Role::Assistant, blocks, e.pos, !e.compression);
        }
        record_tokens(session, &e.record, e.pos.0, self.main.len());
        Ok(())
    }

    /// A reply's `toolCalls`: a `tool_use` for each not already `called`
    /// by a part, and its recorded `result` kept pending.
    fn tool_calls(
        &mut self,
        e: &Entry,
        called: &mut HashSet<String>,
        blocks: &mut Vec<Block>,
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        let calls = e.record.get("toolCalls").and_then(Value::as_array);
        for call in calls.into_iter().flatten() {
            let Some(id) = call.get("id").and_then(Value::as_str) else {
                let msg = "tool call with no string `id`; skipped".to_string();
                sink.report(e.pos.0, e.pos.1, DiagnosticKind::InvalidRecord, msg)?;
                continue;
            };
            if called.insert(id.to_string()) {
                blocks.push(tool_use(
                    id.into(),
                    call.get("name"),
                    call.get("args"),
                    session,
                ));
            }
            if let Some(result) = call.get("result").filter(|v| !v.is_null()) {
                self.pending.push((id.to_string(), result_text(result)));
            }
        }
        Ok(())
    }

    /// The last reply's unanswered calls get their recorded results in a
    /// user message of their own (before the next reply, or at the end).
    fn flush_pending(&mut self, pos: Option<Pos>, session: &mut ImportedSession) {
        if self.pending.is_empty() {
            return;
        }
        let blocks = self.take_pending(session);
        let pos = pos
            .or(self.origins.last().map(|o| (o.line, o.column)))
            .unwrap_or((0, 0));
        self.open = false;
        self.push(Role::User, blocks, pos, false);
    }

    /// Add `blocks` to the last message when it is open and of `role`, else
    /// start a message; `open`: whether the next turn may join it.
    fn push(&mut self, role: Role, blocks: Vec<Block>, pos: Pos, open: bool) {
        if self.open {
            if let Some(Message {
                role: r,
                content: Content::Blocks(b),
            }) = self.main.last_mut()
            {
                if *r == role {
                    b.extend(blocks);
                    self.open = open;
                    return;
                }
            }
        }
        self.main.push(Message {
            role,
            content: Content::Blocks(blocks),
        });
        self.origins.push(Origin::at(pos.0, pos.1, 0));
        self.open = open;
    }
}

/// A record's `content` as parts; `None` (reported) when it is no part list.
fn content_parts(e: &Entry, sink: &mut Sink<'_>) -> LabResult<Option<Vec<Value>>> {
    match e.record.get("content") {
        None | Some(Value::Null | Value::String(_) | Value::Array(_) | Value::Object(_)) => {
            Ok(Some(parts_of(e.record.get("content"))))
        }
        Some(_) => {
            sink.report(
                e.pos.0,
                e.pos.1,
                DiagnosticKind::InvalidRecord,
                "message `content` is no part list; message skipped".into(),
            )?;
            Ok(None)
        }
    }
}

/// A part that is not a call or a response: text, thought, image or file.
fn part_block(
    p: &Value,
    pos: Pos,
    session: &mut ImportedSession,
    sink: &mut Sink<'_>,
) -> LabResult<Option<Block>> {
    if let Some(text) = p.get("text").and_then(Value::as_str) {
        if p.get("thought").and_then(Value::as_bool) == Some(true) {
            return Ok(Some(Block::Thinking {
                thinking: text.to_string(),
            }));
        }
        return Ok((!text.is_empty()).then(|| Block::Text {
            text: text.to_string(),
        }));
    }
    for key in ["inlineData", "fileData"] {
        if let Some(d) = p.get(key) {
            let source = d
                .get("mimeType")
                .and_then(Value::as_str)
                .unwrap_or(key)
                .to_string();
            return Ok(Some(Block::Image { source }));
        }
    }
    let kind = p
        .as_object()
        .and_then(|o| o.keys().next().cloned())
        .unwrap_or_else(|| "(none)".into());
    session.skip(&format!("part:{kind}"));
    sink.report(
        pos.0,
        pos.1,
        DiagnosticKind::UnknownBlockType,
        format!("unknown part `{kind}`; counted and skipped"),
    )?;
    Ok(None)
}

fn tool_use(
    id: String,
    name: Option<&Value>,
    args: Option<&Value>,
    session: &mut ImportedSession,
) -> Block {
    session.stats.tool_uses += 1;
    Block::ToolUse {
        id,
        name: name.and_then(Value::as_str).unwrap_or_default().to_string(),
        input: args
            .cloned()
            .unwrap_or(Value::Object(Default::default()))
            .into(),
    }
}

fn note_result(session: &mut ImportedSession, content: &str) {
    session.stats.tool_results += 1;
    let largest = &mut session.stats.largest_tool_result_chars;
    *largest = (*largest).max(content.chars().count());
}

/// A `functionResponse.response`: its `output` or `error` text, else its JSON.
fn response_text(r: Option<&Value>) -> String {
    match r {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => ["output", "error"]
            .iter()
            .find_map(|k| v.get(k).and_then(Value::as_str))
            .map_or_else(|| v.to_string(), str::to_string),
    }
}

/// A `toolCalls[].result` (response parts): their responses' text, joined.
fn result_text(result: &Value) -> String {
    let texts: Vec<String> = parts_of(Some(result))
        .iter()
        .map(|p| match p.get("functionResponse") {
            Some(r) => response_text(r.get("response")),
            None => p
                .get("text")
                .and_then(Value::as_str)
                .map_or_else(|| p.to_string(), str::to_string),
        })
        .collect();
    texts.join("\n")
}

/// Record each compression summary that survived the repair as a real compaction.
fn mark_compactions(session: &mut ImportedSession, summary_lines: &[usize]) {
    for &line in summary_lines {
        let at = (0..session.main.len()).find(|&i| {
            session.main_lines[i] == line && super::is_product_summary(&session.main[i])
        });
        if let Some(at) = at {
            session.real_compactions.push(at);
            session.real_compaction_meta.push(RealCompaction {
                dropped: None,
                first_kept: None,
                at,
                trigger: None,
                pre_tokens: None,
            });
        }
    }
}

/// A reply's `thoughts` (`subject: description`) as thinking blocks.
fn thought_blocks(r: &Value) -> Vec<Block> {
    let thoughts = r.get("thoughts").and_then(Value::as_array);
    thoughts
        .into_iter()
        .flatten()
        .filter_map(|t| {
            let text_of = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or_default();
            let parts: Vec<&str> = [text_of("subject"), text_of("description")]
                .into_iter()
                .filter(|s| !s.is_empty())
                .collect();
            (!parts.is_empty()).then(|| Block::Thinking {
                thinking: parts.join(": "),
            })
        })
        .collect()
}

/// A reply's recorded `tokens` (`input` is `promptTokenCount`), after the
/// first `after` messages.
fn record_tokens(session: &mut ImportedSession, r: &Value, line: usize, after: usize) {
    let Some(t) = r.get("tokens").filter(|t| t.is_object()) else {
        return;
    };
    let count = |k: &str| t.get(k).and_then(Value::as_u64);
    if let (Some(sent), Some(received)) = (count("input"), count("output")) {
        session.recorded_tokens.push(RecordedTokens {
            line,
            after_messages: after,
            sent,
            sent_min: sent,
            sent_max: sent,
            received,
        });
    }
}

/// Content holding Gemini CLI's compression summary.
pub(crate) fn holds_snapshot(content: &Content) -> bool {
    match content {
        Content::Text(t) => t.contains(STATE_SNAPSHOT),
        Content::Blocks(b) => b
            .iter()
            .any(|x| matches!(x, Block::Text { text } if text.contains(STATE_SNAPSHOT))),
    }
}

/// The `gemini_cli` format's registration (`format_list.rs`).
pub const FORMAT: crate::format::Format = crate::format::Format {
    name: "gemini_cli",
    sniff: Some((25, crate::sniff::gemini_cli)),
    name_endings: &[],
    extensions: &[],
    product: Some("gemini-cli"),
    compaction_by_index: false,
    read: |input| input.one(|r, s, k| read(r, s, k)),
};
