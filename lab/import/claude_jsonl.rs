//! Claude Code session logs (`.jsonl`), read line by line.
//!
//! Lines are read by the shared line reader (`import::lines`): blank lines
//! are ignored; `//` comment lines are skipped and counted in
//! [`super::FileStats::comment_lines`]. Each other line must be one JSON
//! record. A last line that ends inside a JSON value
//! (the log was cut while being written) is a
//! [`super::DiagnosticKind::Truncated`] diagnostic and the import keeps
//! everything before it (an error under `strict`); invalid JSON anywhere
//! else is a [`crate::error::LabError::Input`] with its line and column.
//! Record handling is shared with [`super::chat_json`].

use std::io::BufRead;

use super::claude_records::{slim_record, Backing, Records};
use super::lines::{self, Rules};
use super::{DiagnosticKind, ImportedSession, Sink};
use crate::error::LabResult;

/// How Claude Code logs are read line by line.
pub(crate) const RULES: Rules = Rules {
    comments: true,
    fix: "each line must hold one JSON record; repair or remove this line",
};

/// Read the records of a log; with `backing` (the file `reader` reads from
/// its start), message contents are read back from the file when needed
/// instead of being kept.
pub(crate) fn read<R: BufRead>(
    reader: R,
    session: &mut ImportedSession,
    sink: &mut Sink<'_>,
    backing: Option<Backing>,
) -> LabResult<()> {
    let mut records = Records::new(backing);
    let source = sink.source.to_path_buf();
    let end = lines::for_each(reader, &source, RULES, slim_record, |v, at| {
        let place = (at.line, at.column);
        records.record(v, place, Some(at.span), session, sink)
    })?;
    session.stats.comment_lines += end.comment_lines;
    if let Some((line, column)) = end.truncated {
        // Only a cut last line is not an error; the import stops before it.
        sink.report(
            line,
            column,
            DiagnosticKind::Truncated,
            "last line ends inside a JSON record (cut while writing); import stops before it"
                .into(),
        )?;
    }
    records.finish(session, sink)
}

/// The `claude_jsonl` format's registration (`format_list.rs`).
pub const FORMAT: crate::format::Format = crate::format::Format {
    name: "claude_jsonl",
    sniff: Some((75, crate::sniff::claude_jsonl)),
    name_endings: &[],
    extensions: &["jsonl"],
    product: Some("claude-code"),
    compaction_by_index: false,
    read: |input| {
        let backing = input.backing.clone();
        input.one(|r, s, k| read(r, s, k, backing))
    },
};
