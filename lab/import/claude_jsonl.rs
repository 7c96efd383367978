//! Claude Code session logs (`.jsonl`), read line by line.
//!
//! Blank lines are ignored; lines whose first non-blank characters are `//`
//! are comments (some published fixtures start with a provenance header),
//! skipped and counted in [`super::FileStats::comment_lines`]. Each other
//! line must be one JSON record. A last line that ends inside a JSON value
//! (the log was cut while being written) is a
//! [`super::DiagnosticKind::Truncated`] diagnostic and the import keeps
//! everything before it (an error under `strict`); invalid JSON anywhere
//! else is a [`crate::error::LabError::Input`] with its line and column.
//! Record handling is shared with [`super::chat_json`].

use std::io::BufRead;

use super::claude_records::Records;
use super::stream::without_position;
use super::{DiagnosticKind, ImportedSession, Sink};
use crate::error::{LabError, LabResult};

pub(crate) fn read<R: BufRead>(
    mut reader: R,
    session: &mut ImportedSession,
    sink: &mut Sink<'_>,
) -> LabResult<()> {
    let mut records = Records::default();
    let mut buf = Vec::new();
    let mut line_no = 0usize;
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| LabError::io("reading transcript", sink.source, e))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        let had_newline = buf.last() == Some(&b'\n');
        let mut end = buf.len();
        while end > 0 && buf[end - 1].is_ascii_whitespace() {
            end -= 1;
        }
        let mut text = &buf[..end];
        if line_no == 1 {
            // A UTF-8 byte-order mark is not JSON; editors on some systems write one.
            text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
        }
        let trimmed = text.trim_ascii_start();
        if trimmed.is_empty() {
            continue;
        }
        if trimmed.starts_with(b"//") {
            session.stats.comment_lines += 1;
            continue;
        }
        match slim_record(text) {
            Ok(v) => {
                let column = text.len() - trimmed.len() + 1;
                records.record(v, (line_no, column), session, sink)?
            }
            Err(e) => {
                let at_end = !had_newline
                    || reader
                        .fill_buf()
                        .map_err(|e| LabError::io("reading transcript", sink.source, e))?
                        .is_empty();
                if e.is_eof() && at_end {
                    sink.report(
                        line_no,
                        e.column(),
                        DiagnosticKind::Truncated,
                        "last line ends inside a JSON record (cut while writing); import stops before it"
                            .into(),
                    )?;
                    break;
                }
                return Err(sink.error(
                    line_no,
                    e.column(),
                    format!("invalid JSON record: {}", without_position(&e)),
                    "each line must hold one JSON record; repair or remove this line",
                ));
            }
        }
    }
    records.finish(session, sink)
}

/// The fields of a Claude Code record the import reads; the rest (tool
/// results' `toolUseResult` copies, `cwd`, versions…) are skipped by the
/// parser without being built.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Slim {
    #[serde(rename = "type")]
    kind: Option<serde_json::Value>,
    uuid: Option<serde_json::Value>,
    parent_uuid: Option<serde_json::Value>,
    logical_parent_uuid: Option<serde_json::Value>,
    is_sidechain: Option<serde_json::Value>,
    is_compact_summary: Option<serde_json::Value>,
    subtype: Option<serde_json::Value>,
    compact_metadata: Option<serde_json::Value>,
    message: Option<SlimMessage>,
}

#[derive(serde::Deserialize)]
struct SlimMessage {
    id: Option<serde_json::Value>,
    content: Option<serde_json::Value>,
}

/// Parse one record, building only the fields the import reads. Anything
/// the slim shape cannot hold (not an object, a `message` that is not an
/// object, a duplicate key) is parsed whole, so the record handling and its
/// diagnostics are the same either way.
fn slim_record(text: &[u8]) -> serde_json::Result<serde_json::Value> {
    use serde_json::{Map, Value};
    let Ok(slim) = serde_json::from_slice::<Slim>(text) else {
        return serde_json::from_slice(text);
    };
    let mut map = Map::new();
    let mut put = |key: &str, v: Option<Value>| {
        if let Some(v) = v {
            map.insert(key.to_string(), v);
        }
    };
    put("type", slim.kind);
    put("uuid", slim.uuid);
    put("parentUuid", slim.parent_uuid);
    put("logicalParentUuid", slim.logical_parent_uuid);
    put("isSidechain", slim.is_sidechain);
    put("isCompactSummary", slim.is_compact_summary);
    put("subtype", slim.subtype);
    put("compactMetadata", slim.compact_metadata);
    if let Some(m) = slim.message {
        let mut message = Map::new();
        if let Some(id) = m.id {
            message.insert("id".into(), id);
        }
        if let Some(c) = m.content {
            message.insert("content".into(), c);
        }
        map.insert("message".into(), Value::Object(message));
    }
    Ok(Value::Object(map))
}
