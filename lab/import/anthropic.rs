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
use super::{finish_document, DiagnosticKind, ImportedSession, Origin, Sink};
use crate::error::LabResult;
use crate::message::{Message, Role};

pub(crate) fn read<R: BufRead>(
    reader: R,
    session: &mut ImportedSession,
    sink: &mut Sink<'_>,
) -> LabResult<()> {
    let source = sink.source.to_path_buf();
    let mut main = Vec::new();
    let mut origins = Vec::new();
    let (mut with_role, mut first) = (0usize, None);
    let end = for_each_element(
        reader,
        &source,
        &["messages"],
        &["system"],
        |v, line, column| {
            session.stats.records += 1;
            first.get_or_insert((line, column));
            let role = v.get("role").and_then(Value::as_str).map(str::to_string);
            with_role += usize::from(role.is_some());
            match role.as_deref() {
                Some("user") | Some("assistant") => {
                    session.stats.message_records += 1;
                    let Some(content) = convert_content(
                        v.get("content"),
                        (line, column),
                        &mut session.stats,
                        sink,
                    )?
                    else {
                        // Reported; a message whose content cannot be read is skipped whole.
                        return Ok(());
                    };
                    main.push(Message {
                        role: if role.as_deref() == Some("user") {
                            Role::User
                        } else {
                            Role::Assistant
                        },
                        content,
                    });
                    origins.push(Origin::at(line, column, crate::pyjson::dumps_len(&v)));
                    Ok(())
                }
                Some("system") => {
                    session.stats.message_records += 1;
                    session.system.push(super::system_text(v.get("content")));
                    Ok(())
                }
                Some(other) => {
                    session.skip(&format!("role:{other}"));
                    sink.report(
                        line,
                        column,
                        DiagnosticKind::UnknownRole,
                        format!("unknown role `{other}`; counted and skipped"),
                    )
                }
                None => {
                    session.skip("(no role)");
                    sink.report(
                        line,
                        column,
                        DiagnosticKind::InvalidRecord,
                        "message has no string `role`; skipped".into(),
                    )
                }
            }
        },
    )?;
    if session.stats.records > 0 && with_role == 0 {
        let first = first.unwrap_or((1, 1));
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
    finish_document(session, main, origins, end.truncated, sink)
}
