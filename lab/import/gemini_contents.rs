//! Gemini CLI saved chats and checkpoints: a history of Gemini API
//! `contents`, as `Logger.saveCheckpoint` writes it for `/chat save TAG`
//! (`checkpoint-TAG.json`) and as `/restore` checkpoints hold it. Read at
//! google-gemini/gemini-cli 5411f113cafae26161b4969b0237b8e1e024e2c2
//! (`packages/core/src/core/logger.ts`: `Checkpoint {history: Content[],
//! authType?}`, written `JSON.stringify(checkpoint, null, 2)`; a bare
//! `Content[]` is the older layout `loadCheckpoint` still reads).
//!
//! Each `Content` is `{role: "user" | "model", parts: [...]}`:
//!
//! * `text` is text, or thinking when the part has `thought: true`;
//! * `functionCall {id?, name, args}` is a `tool_use`; `functionResponse
//!   {id?, name, response}` the `tool_result` answering it: by `id`, or,
//!   for histories without ids, the first unanswered call of the same name
//!   in the model turn before (then the first unanswered call). The result
//!   is `response.output`, else `response.error`, else the response as
//!   JSON;
//! * `inlineData` / `fileData` are images (by `mimeType`); other parts
//!   (`executableCode`, `codeExecutionResult`, …) `unknown_block_type`.
//!
//! **The product's own context management:**
//! * a user turn holding `<state_snapshot>` is Gemini CLI's compression
//!   summary: a real compaction at that message (its acknowledgement, the
//!   model's "Got it. Thanks for the additional context!", follows it),
//!   as in a chat recording ([`super::gemini`]);
//! * a function response holding `<tool_output_masked` was masked by Gemini
//!   CLI's tool output masking (`toolOutputMaskingService.ts`,
//!   `MASKING_INDICATOR_TAG`): its index is kept in
//!   [`ImportedSession::product_masked`](super::ImportedSession::product_masked).
//!
//! Damage: a cut document is `truncated`; invalid JSON an input error at
//! its line:column; a content whose role is neither `user` nor `model`
//! `unknown_role`; one with no `parts` list `invalid_record`.

use std::io::BufRead;

use serde_json::Value;

use super::stream::for_each_element;
use super::{finish_document, DiagnosticKind, ImportedSession, Origin, RealCompaction, Sink};
use crate::error::LabResult;
use crate::message::{Block, Content, Message, Role};

/// `MASKING_INDICATOR_TAG` as a masked response starts it.
pub const MASKED_TAG: &str = "<tool_output_masked";

/// What the elements read so far gave.
#[derive(Default)]
struct History {
    main: Vec<Message>,
    origins: Vec<Origin>,
    /// Calls of the last model turn not yet answered: (id, name).
    open: Vec<(String, String)>,
    /// Calls seen, for ids Gemini CLI did not write.
    calls: usize,
    /// Lines of the snapshot turns and of the masked responses' messages.
    snapshots: Vec<usize>,
    masked: Vec<usize>,
}

pub(crate) fn read<R: BufRead>(
    reader: R,
    session: &mut ImportedSession,
    sink: &mut Sink<'_>,
) -> LabResult<()> {
    let source = sink.source.to_path_buf();
    let mut h = History::default();
    let end = for_each_element(reader, &source, &["history"], &[], |v, line, column| {
        h.element(&v, (line, column), session, sink)
    })?;
    let History {
        main,
        origins,
        snapshots,
        masked,
        ..
    } = h;
    finish_document(session, main, origins, end.truncated, sink)?;
    let index_of = |line: usize| session.main_lines.iter().position(|&l| l == line);
    for line in snapshots {
        if let Some(at) = index_of(line) {
            session.real_compactions.push(at);
            session.real_compaction_meta.push(RealCompaction {
                at,
                trigger: None,
                pre_tokens: None,
                dropped: None,
                first_kept: None,
            });
        }
    }
    session.product_masked = masked.into_iter().filter_map(index_of).collect();
    session.product_masked.dedup();
    Ok(())
}

impl History {
    fn element(
        &mut self,
        v: &Value,
        pos: (usize, usize),
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        session.stats.records += 1;
        let role = match v.get("role").and_then(Value::as_str) {
            Some("user") => Role::User,
            Some("model") => Role::Assistant,
            other => return session.skip_role(other, pos, sink),
        };
        let Some(parts) = v.get("parts").and_then(Value::as_array) else {
            session.skip("(no parts)");
            let msg = "content with no `parts` list; skipped".to_string();
            return sink.report(pos.0, pos.1, DiagnosticKind::InvalidRecord, msg);
        };
        session.stats.message_records += 1;
        if role == Role::Assistant {
            self.open.clear();
        }
        let mut blocks = Vec::new();
        let mut masked = false;
        for p in parts {
            if let Some(b) = self.part(p, pos, &mut masked, session, sink)? {
                blocks.push(b);
            }
        }
        if blocks.is_empty() {
            session.skip("content with nothing sent");
            return Ok(());
        }
        let m = Message {
            role,
            content: Content::Blocks(blocks),
        };
        if super::gemini::holds_snapshot(&m.content) && role == Role::User {
            self.snapshots.push(pos.0);
        }
        if masked {
            self.masked.push(pos.0);
        }
        self.main.push(m);
        self.origins.push(Origin::at(pos.0, pos.1, 0));
        Ok(())
    }

    fn part(
        &mut self,
        p: &Value,
        pos: (usize, usize),
        masked: &mut bool,
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<Option<Block>> {
        if let Some(text) = p.get("text").and_then(Value::as_str) {
            return Ok(Some(
                if p.get("thought").and_then(Value::as_bool) == Some(true) {
                    Block::Thinking {
                        thinking: text.into(),
                    }
                } else {
                    Block::Text { text: text.into() }
                },
            ));
        }
        if let Some(call) = p.get("functionCall") {
            self.calls += 1;
            session.stats.tool_uses += 1;
            let name = call.get("name").and_then(Value::as_str).unwrap_or_default();
            let id = match call.get("id").and_then(Value::as_str) {
                Some(id) => id.to_string(),
                None => format!("gemini-call-{}", self.calls),
            };
            self.open.push((id.clone(), name.to_string()));
            return Ok(Some(Block::ToolUse {
                id,
                name: name.into(),
                input: call
                    .get("args")
                    .cloned()
                    .unwrap_or(Value::Object(Default::default()))
                    .into(),
            }));
        }
        if let Some(resp) = p.get("functionResponse") {
            let name = resp.get("name").and_then(Value::as_str).unwrap_or_default();
            let id = match resp.get("id").and_then(Value::as_str) {
                Some(id) => {
                    self.open.retain(|(o, _)| o != id);
                    id.to_string()
                }
                None => {
                    let k = self
                        .open
                        .iter()
                        .position(|(_, n)| n == name)
                        .or((!self.open.is_empty()).then_some(0));
                    match k {
                        Some(k) => self.open.remove(k).0,
                        None => format!("gemini-response-{}", session.stats.tool_results + 1),
                    }
                }
            };
            let content = response_text(resp.get("response"));
            *masked |= content.contains(MASKED_TAG);
            session.stats.tool_results += 1;
            let largest = &mut session.stats.largest_tool_result_chars;
            *largest = (*largest).max(content.chars().count());
            return Ok(Some(Block::ToolResult {
                tool_use_id: id,
                content,
            }));
        }
        for key in ["inlineData", "fileData"] {
            if let Some(d) = p.get(key) {
                let mime = d
                    .get("mimeType")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                return Ok(Some(Block::Image {
                    source: mime.into(),
                }));
            }
        }
        let kind = p
            .as_object()
            .and_then(|o| o.keys().find(|k| *k != "thoughtSignature"))
            .map(String::as_str)
            .unwrap_or("(none)");
        session.skip(&format!("part:{kind}"));
        let msg = format!("unknown part `{kind}`; counted and skipped");
        sink.report(pos.0, pos.1, DiagnosticKind::UnknownBlockType, msg)?;
        Ok(None)
    }
}

/// A function response's text: `output`, else `error`, else the response as JSON.
fn response_text(r: Option<&Value>) -> String {
    let Some(r) = r else {
        return String::new();
    };
    for key in ["output", "error"] {
        if let Some(s) = r.get(key).and_then(Value::as_str) {
            return s.to_string();
        }
    }
    match r {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The `gemini_contents` format's registration (`format_list.rs`).
pub const FORMAT: crate::format::Format = crate::format::Format {
    name: "gemini_contents",
    sniff: Some((30, crate::sniff::gemini_contents)),
    name_endings: &[],
    extensions: &[],
    product: Some("gemini-cli"),
    compaction_by_index: false,
    read: |input| input.one(|r, s, k| read(r, s, k)),
};
