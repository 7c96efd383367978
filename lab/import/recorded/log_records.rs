//! The records of a Claude Code log, whole, through the importer's own
//! readers: the line reader (`import::lines`) for a `.jsonl` log and the
//! array streamer (`import::stream`) for a `chat.json`. What reads the
//! recorded requests of a log ([`crate::tokens::recorded`]) reads it here,
//! so a log is read by one reader with one set of damage rules whatever
//! asks: a cut last line or a cut array keeps the records before the cut;
//! invalid JSON elsewhere is an error naming its line and column.

use std::io::BufRead;
use std::path::Path;

use serde_json::Value;

use crate::error::{LabError, LabResult};
use crate::{claude_jsonl, lines, stream};

/// A log's records in file order, with the 1-based (line, column) where
/// each starts.
pub type Placed = (Vec<Value>, Vec<(usize, usize)>);

/// Every record of the log at `path`, in file order, never holding its text whole.
pub fn read(path: &Path) -> LabResult<Vec<Value>> {
    Ok(read_placed(path)?.0)
}

/// [`read`], with the 1-based (line, column) where each record starts:
/// its place, which tells records apart whatever the file's layout.
pub fn read_placed(path: &Path) -> LabResult<Placed> {
    // A member of a tar archive (`ARCHIVE[MEMBER]`) or a Parquet row
    // (`FILE#row=N`) is read back from it.
    if crate::member_source::is_member(path) {
        let text = crate::member_source::read_text(path)
            .map_err(|e| LabError::io("reading a recorded session", path, e))?;
        return from_reader_placed(text.as_bytes(), path);
    }
    let file = std::fs::File::open(path)
        .map_err(|e| LabError::io("reading a recorded session", path, e))?;
    from_reader_placed(std::io::BufReader::new(file), path)
}

/// [`read`] on any reader; `source` names it in errors.
pub fn from_reader<R: BufRead>(reader: R, source: &Path) -> LabResult<Vec<Value>> {
    Ok(from_reader_placed(reader, source)?.0)
}

/// [`read_placed`] on any reader; `source` names it in errors.
pub fn from_reader_placed<R: BufRead>(mut reader: R, source: &Path) -> LabResult<Placed> {
    let (mut out, mut places) = (Vec::new(), Vec::new());
    if starts_with_array(&mut reader, source)? {
        stream::for_each_element(reader, source, &[], &[], |v, line, column| {
            out.push(v);
            places.push((line, column));
            Ok(())
        })?;
    } else {
        let parse = |b: &[u8]| serde_json::from_slice::<Value>(b);
        lines::for_each(reader, source, claude_jsonl::RULES, parse, |v, at| {
            out.push(v);
            places.push((at.line, at.column));
            Ok(())
        })?;
    }
    Ok((out, places))
}

/// The first byte after a byte-order mark and white space is `[`: a
/// `chat.json` array (looked at in the reader's buffer, nothing consumed).
fn starts_with_array<R: BufRead>(reader: &mut R, source: &Path) -> LabResult<bool> {
    let buf = reader
        .fill_buf()
        .map_err(|e| LabError::io("reading a recorded session", source, e))?;
    let buf = buf.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(buf);
    Ok(buf.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'['))
}
