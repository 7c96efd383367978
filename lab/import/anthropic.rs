//! Anthropic Messages requests: `{"system": ..., "messages": [...]}` or a bare
//! array of messages, streamed message by message.
//!
//! Content blocks are converted like Claude Code's (the shapes are the API's).
//! A `system` key (string or text blocks) and `role: system` array entries go
//! to [`super::ImportedSession::system`]. Unknown roles are a
//! [`super::DiagnosticKind::UnknownRole`] diagnostic and are skipped.

use std::io::BufRead;

use serde_json::Value;

use super::claude_records::convert_content;
use super::stream::for_each_element;
use super::{finish_document, ImportedSession, Origin, Sink};
use crate::error::LabResult;
use crate::message::{Message, Role};

pub(crate) fn read<R: BufRead>(
    reader: R,
    session: &mut ImportedSession,
    sink: &mut Sink<'_>,
) -> LabResult<()> {
    let source = sink.source.to_path_buf();
    let mut doc = Document::default();
    let end = for_each_element(
        reader,
        &source,
        &["messages"],
        &["system"],
        |v, line, column| doc.element(&v, (line, column), session, sink),
    )?;
    if session.stats.records > 0 && doc.with_role == 0 {
        let first = doc.first.unwrap_or((1, 1));
        return Err(super::openai::not_messages(
            sink,
            session.stats.records,
            first,
        ));
    }
    for (key, value) in &end.captured {
        if key == "system" {
            session.system.insert(0, super::system_text(Some(value)));
        }
    }
    finish_document(session, doc.main, doc.origins, end.truncated, sink)
}

/// What the elements read so far gave.
#[derive(Default)]
struct Document {
    main: Vec<Message>,
    origins: Vec<Origin>,
    /// Elements with a string `role`.
    with_role: usize,
    /// Where the first element starts.
    first: Option<(usize, usize)>,
}

impl Document {
    /// One element of the messages array, at `pos` (line, column).
    fn element(
        &mut self,
        v: &Value,
        pos: (usize, usize),
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        session.stats.records += 1;
        self.first.get_or_insert(pos);
        let role = v.get("role").and_then(Value::as_str);
        self.with_role += usize::from(role.is_some());
        match role {
            Some(r @ ("user" | "assistant")) => {
                session.stats.message_records += 1;
                let role = if r == "user" {
                    Role::User
                } else {
                    Role::Assistant
                };
                self.message(v, role, pos, session, sink)
            }
            Some("system") => {
                session.stats.message_records += 1;
                session.system.push(super::system_text(v.get("content")));
                Ok(())
            }
            other => session.skip_role(other, pos, sink),
        }
    }

    /// A user or assistant message; one whose content cannot be read is
    /// reported (by the conversion) and skipped whole.
    fn message(
        &mut self,
        v: &Value,
        role: Role,
        pos: (usize, usize),
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        let Some(content) = convert_content(v.get("content"), pos, &mut session.stats, sink)?
        else {
            return Ok(());
        };
        self.main.push(Message { role, content });
        self.origins
            .push(Origin::at(pos.0, pos.1, crate::pyjson::dumps_len(v)));
        Ok(())
    }
}

/// The `anthropic` format's registration (`format_list.rs`).
pub const FORMAT: crate::format::Format = crate::format::Format {
    name: "anthropic",
    sniff: Some((90, crate::sniff::anthropic)),
    name_endings: &[],
    extensions: &[],
    product: None,
    compaction_by_index: false,
    read: |input| input.one(|r, s, k| read(r, s, k)),
};
