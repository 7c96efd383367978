//! Arrays of trajectory objects, one session each.
//!
//! tau-bench publishes its runs as `[{"task_id", "reward", "info", "traj":
//! [messages…], "trial"}, …]`. Each element whose `traj` is an array becomes
//! its own [`ImportedSession`], labelled `FILE#INDEX task ID` (plus `trial N`
//! when recorded), its messages read as OpenAI chat messages
//! ([`super::openai`]). Positions in its diagnostics are the element's own
//! (line and column of its first byte). An element that is not a trajectory
//! is an `invalid_record`, skipped; an array with no trajectory at all is
//! refused.

use std::io::BufRead;

use serde_json::Value;

use super::openai::Conversation;
use super::stream::for_each_element;
use super::{DiagnosticKind, ImportedSession, Sink, TranscriptFormat};
use crate::error::{LabError, LabResult};

pub(crate) fn read<R: BufRead>(reader: R, sink: &mut Sink<'_>) -> LabResult<Vec<ImportedSession>> {
    let source = sink.source.to_path_buf();
    let mut sessions = Vec::new();
    let mut index = 0usize;
    let mut first_pos = None;
    let end = for_each_element(reader, &source, &[], &[], |v, line, column| {
        first_pos.get_or_insert((line, column));
        let i = index;
        index += 1;
        match v.get("traj").and_then(Value::as_array) {
            Some(messages) => {
                sessions.push(trajectory(&v, messages, i, (line, column), sink)?);
                Ok(())
            }
            None => sink.report(
                line,
                column,
                DiagnosticKind::InvalidRecord,
                format!("array element {i} is not a trajectory (no `traj` array); skipped"),
            ),
        }
    })?;
    if sessions.is_empty() {
        let (line, column) = first_pos.unwrap_or((1, 1));
        return Err(LabError::Input {
            file: source,
            line,
            column,
            message: format!(
                "no element of the array is a trajectory ({index} element(s), none with a `traj` array of messages)"
            ),
            fix: "pass an array of trajectory objects, or name the file's format with --format-in"
                .to_string(),
        });
    }
    // File-level findings (elements that are not trajectories) go with the first session.
    let file_level = std::mem::take(&mut sink.diagnostics);
    sessions[0].diagnostics.splice(0..0, file_level);
    if let Some((line, column)) = end.truncated {
        let last = sessions.last_mut().expect("checked non-empty");
        let mut cut = sink.fork();
        cut.report(
            line,
            column,
            DiagnosticKind::Truncated,
            "the JSON array ends early (file cut); trajectories before the cut are kept".into(),
        )?;
        last.diagnostics.extend(cut.diagnostics);
    }
    Ok(sessions)
}

/// One trajectory element as a session.
fn trajectory(
    element: &Value,
    messages: &[Value],
    index: usize,
    pos: (usize, usize),
    sink: &Sink<'_>,
) -> LabResult<ImportedSession> {
    let mut session = ImportedSession::new(sink.source, TranscriptFormat::Trajectories);
    session.label = label(&session.label, element, index);
    let mut own = sink.fork();
    let mut conv = Conversation::default();
    for m in messages {
        conv.message(m, pos, &mut session, &mut own)?;
    }
    conv.finish(&mut session, None, &mut own)?;
    own.finish_into(&mut session);
    Ok(session)
}

/// `FILE#INDEX task ID trial N`.
fn label(file: &str, element: &Value, index: usize) -> String {
    let show = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut out = format!("{file}#{index}");
    if let Some(t) = element.get("task_id").filter(|v| !v.is_null()) {
        out.push_str(&format!(" task {}", show(t)));
    }
    if let Some(t) = element.get("trial").filter(|v| !v.is_null()) {
        out.push_str(&format!(" trial {}", show(t)));
    }
    out
}

/// The `trajectories` format's registration (`format_list.rs`).
pub const FORMAT: crate::format::Format = crate::format::Format {
    name: "trajectories",
    sniff: Some((10, crate::sniff::trajectories)),
    name_endings: &[],
    extensions: &[],
    product: None,
    compaction_by_index: false,
    read: |mut input| read(input.reader, &mut input.sink),
};
