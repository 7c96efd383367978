//! `chat.json`: a JSON array of Claude Code records, streamed element by element.
//!
//! Same records as [`super::claude_jsonl`] (the handling is shared); positions
//! in diagnostics are the line and column each element starts at (a minified
//! one-line file still names each element). An array cut before its
//! closing `]` is a [`super::DiagnosticKind::Truncated`] diagnostic (elements
//! before the cut are kept; an error under `strict`).

use std::io::BufRead;

use super::claude_records::Records;
use super::stream::for_each_element;
use super::{DiagnosticKind, ImportedSession, Sink};
use crate::error::LabResult;

pub(crate) fn read<R: BufRead>(
    reader: R,
    session: &mut ImportedSession,
    sink: &mut Sink<'_>,
) -> LabResult<()> {
    let mut records = Records::default();
    let source = sink.source.to_path_buf();
    let end = for_each_element(reader, &source, &[], &[], |v, line, column| {
        records.record(v, (line, column), None, session, sink)
    })?;
    if let Some((line, column)) = end.truncated {
        sink.report(
            line,
            column,
            DiagnosticKind::Truncated,
            "the JSON array ends early (file cut); records before the cut are kept".into(),
        )?;
    }
    records.finish(session, sink)
}

/// The `chat_json` format's registration (`format_list.rs`).
pub const FORMAT: crate::format::Format = crate::format::Format {
    name: "chat_json",
    sniff: Some((35, crate::sniff::chat_json)),
    name_endings: &[],
    extensions: &[],
    product: Some("claude-code"),
    compaction_by_index: false,
    read: |input| input.one(|r, s, k| read(r, s, k)),
};
