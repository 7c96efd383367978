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

use super::claude_records::{slim_record, Backing, Records};
use super::stream::without_position;
use super::{DiagnosticKind, ImportedSession, Sink};
use crate::error::{LabError, LabResult};

/// Read the records of a log; with `backing` (the file `reader` reads from
/// its start), message contents are read back from the file when needed
/// instead of being kept.
pub(crate) fn read<R: BufRead>(
    mut reader: R,
    session: &mut ImportedSession,
    sink: &mut Sink<'_>,
    backing: Option<Backing>,
) -> LabResult<()> {
    let mut records = Records::new(backing);
    let mut buf = Vec::new();
    let mut line_no = 0usize;
    // Byte offset of the line in `buf`.
    let mut offset = 0u64;
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| LabError::io("reading transcript", sink.source, e))?;
        if n == 0 {
            break;
        }
        let line_start = offset;
        offset += n as u64;
        line_no += 1;
        let had_newline = buf.last() == Some(&b'\n');
        let (text, bom) = body(&buf, line_no);
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
                let span = (line_start + bom, text.len());
                records.record(v, (line_no, column), Some(span), session, sink)?
            }
            Err(e) => {
                // Only a cut last line is not an error; import stops before it.
                cut_last_line(&e, had_newline, &mut reader, line_no, sink)?;
                break;
            }
        }
    }
    records.finish(session, sink)
}

/// Line `line_no` without its trailing white space and, on the first line,
/// without a UTF-8 byte-order mark (not JSON; editors on some systems write
/// one); the mark's length in bytes.
fn body(buf: &[u8], line_no: usize) -> (&[u8], u64) {
    let mut end = buf.len();
    while end > 0 && buf[end - 1].is_ascii_whitespace() {
        end -= 1;
    }
    let text = &buf[..end];
    if line_no == 1 {
        if let Some(rest) = text.strip_prefix(b"\xEF\xBB\xBF") {
            return (rest, 3);
        }
    }
    (text, 0)
}

/// A line that is not JSON: reported as the cut it is when the JSON ends
/// early on the file's last line, else the import's error.
fn cut_last_line<R: BufRead>(
    e: &serde_json::Error,
    had_newline: bool,
    reader: &mut R,
    line_no: usize,
    sink: &mut Sink<'_>,
) -> LabResult<()> {
    let at_end = !had_newline
        || reader
            .fill_buf()
            .map_err(|e| LabError::io("reading transcript", sink.source, e))?
            .is_empty();
    if e.is_eof() && at_end {
        return sink.report(
            line_no,
            e.column(),
            DiagnosticKind::Truncated,
            "last line ends inside a JSON record (cut while writing); import stops before it"
                .into(),
        );
    }
    Err(sink.error(
        line_no,
        e.column(),
        format!("invalid JSON record: {}", without_position(e)),
        "each line must hold one JSON record; repair or remove this line",
    ))
}
