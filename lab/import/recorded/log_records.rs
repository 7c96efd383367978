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
        stream::for_each_element(reader, source, &[], &[], |mut v, line, column| {
            slim(&mut v);
            out.push(v);
            places.push((line, column));
            Ok(())
        })?;
    } else {
        let parse = |b: &[u8]| serde_json::from_slice::<Value>(b);
        lines::for_each(reader, source, claude_jsonl::RULES, parse, |mut v, at| {
            slim(&mut v);
            out.push(v);
            places.push((at.line, at.column));
            Ok(())
        })?;
    }
    Ok((out, places))
}

/// `record` without what no reader of the recorded wing reads: Claude
/// Code writes each tool's own result beside the message (`toolUseResult`),
/// which repeats what the model was sent (a Read's `file.content`) or
/// more (an Edit's `originalFile`, the whole file before the edit,
/// and its patch): 20-60 % of a shared log's bytes. The records of a log
/// are held together while its requests are assembled (they are chained
/// by `parentUuid`), so that copy was most of a replay's peak memory.
/// Only a Read's line count is read from it (`log_facts`: how much of a
/// file a partial Read did not show); that is kept.
fn slim(record: &mut Value) {
    let Some(obj) = record.as_object_mut() else {
        return;
    };
    let Some(result) = obj.remove("toolUseResult") else {
        return;
    };
    if let Some(total) = result.pointer("/file/totalLines") {
        let kept = serde_json::json!({"file": {"totalLines": total}});
        obj.insert("toolUseResult".into(), kept);
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A tool's own result is dropped but for a Read's line count, and
    /// everything else of the record is kept as read.
    #[test]
    fn records_keep_all_but_the_tools_own_results() {
        let log = concat!(
            r#"{"uuid":"a","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":"1→x"}]},"#,
            r#""toolUseResult":{"file":{"filePath":"/f","content":"x\n","numLines":1,"startLine":1,"totalLines":40}}}"#,
            "\n",
            r#"{"uuid":"b","toolUseResult":{"originalFile":"a whole file","structuredPatch":[]}}"#,
            "\n",
            r#"{"uuid":"c","toolUseResult":"Error: no such file"}"#,
            "\n",
        );
        let (records, places) = from_reader_placed(log.as_bytes(), Path::new("log.jsonl")).unwrap();
        assert_eq!(places, [(1, 1), (2, 1), (3, 1)]);
        assert_eq!(
            records[0]["toolUseResult"],
            serde_json::json!({"file": {"totalLines": 40}})
        );
        assert_eq!(records[0]["message"]["content"][0]["content"], "1→x");
        assert!(records[1].get("toolUseResult").is_none());
        assert!(records[2].get("toolUseResult").is_none());
        assert_eq!(records[2]["uuid"], "c");
        // The same records from a `chat.json` array.
        let array = format!("[{}]", log.trim_end().replace('\n', ","));
        let (from_array, _) = from_reader_placed(array.as_bytes(), Path::new("chat.json")).unwrap();
        assert_eq!(from_array, records);
    }
}
