//! JSON Lines read one record at a time: the one line reader of every
//! line-per-record log (Claude Code sessions, Codex CLI rollouts), for the
//! importers and for the recorded requests alike.
//!
//! Blank lines are skipped; with [`Rules::comments`] so are lines whose first
//! non-blank characters are `//` (some published fixtures start with a
//! provenance header), and they are counted. A UTF-8 byte-order mark on the
//! first line is dropped. A line that is not JSON is an error naming its line
//! and column, unless it is the file's last line and ends inside a value: the
//! log was cut while being written, and the read stops before it
//! ([`LinesEnd::truncated`]). Only one line is held at a time, and a line
//! longer than [`crate::input::MAX_LINE_BYTES`] is refused with its line
//! number before it is held whole: parsing a record takes many times its
//! size in memory, so one huge line must not decide the process's peak.

use std::io::BufRead;
use std::path::Path;

use super::stream::without_position;
use crate::error::{LabError, LabResult};

/// How a format's lines are read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rules {
    /// Lines starting `//` are comments.
    pub(crate) comments: bool,
    /// The fix an invalid line's error suggests.
    pub(crate) fix: &'static str,
}

/// Where a record sits in its file.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Place {
    /// 1-based line.
    pub(crate) line: usize,
    /// 1-based column of the record's first byte.
    pub(crate) column: usize,
    /// Byte offset and length of the record in the file.
    pub(crate) span: (u64, usize),
}

/// How a read ended without an error.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct LinesEnd {
    /// The last line ends inside a record: (line, column) of the cut.
    pub(crate) truncated: Option<(usize, usize)>,
    /// Comment lines skipped.
    pub(crate) comment_lines: usize,
}

/// Parse every record line of `reader` (`source` names it in errors) with
/// `parse`, handing each to `f` with its place, in file order.
pub(crate) fn for_each<R: BufRead, T>(
    mut reader: R,
    source: &Path,
    rules: Rules,
    parse: impl Fn(&[u8]) -> serde_json::Result<T>,
    mut f: impl FnMut(T, Place) -> LabResult<()>,
) -> LabResult<LinesEnd> {
    let mut end = LinesEnd::default();
    let mut buf = Vec::new();
    let (mut line, mut offset) = (0usize, 0u64);
    loop {
        buf.clear();
        let cap = crate::input::MAX_LINE_BYTES;
        let n = read_line_capped(&mut reader, &mut buf, cap)
            .map_err(|e| LabError::io("reading transcript", source, e))?;
        if n == 0 {
            return Ok(end);
        }
        if buf.len() > cap {
            return Err(line_too_long(source, line + 1, cap));
        }
        let line_start = offset;
        offset += n as u64;
        line += 1;
        let had_newline = buf.last() == Some(&b'\n');
        let (text, bom) = body(&buf, line);
        let trimmed = text.trim_ascii_start();
        if trimmed.is_empty() {
            continue;
        }
        if rules.comments && trimmed.starts_with(b"//") {
            end.comment_lines += 1;
            continue;
        }
        match parse(text) {
            Ok(v) => {
                let column = text.len() - trimmed.len() + 1;
                let span = (line_start + bom, text.len());
                f(v, Place { line, column, span })?
            }
            Err(e) if e.is_eof() && (!had_newline || at_end(&mut reader, source)?) => {
                end.truncated = Some((line, e.column()));
                return Ok(end);
            }
            Err(e) => {
                return Err(LabError::Input {
                    file: source.to_path_buf(),
                    line,
                    column: e.column(),
                    message: format!("invalid JSON record: {}", without_position(&e)),
                    fix: rules.fix.to_string(),
                })
            }
        }
    }
}

/// One line into `buf` (its newline kept), as `read_until` does, but
/// stopping once `buf` holds more than `cap` bytes. Returns the bytes read.
fn read_line_capped<R: BufRead>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    cap: usize,
) -> std::io::Result<usize> {
    let mut n = 0;
    loop {
        let available = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(n);
        }
        let (done, used) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (true, i + 1),
            None => (false, available.len()),
        };
        buf.extend_from_slice(&available[..used]);
        reader.consume(used);
        n += used;
        if done || buf.len() > cap {
            return Ok(n);
        }
    }
}

fn line_too_long(source: &Path, line: usize, cap: usize) -> LabError {
    LabError::Input {
        file: source.to_path_buf(),
        line,
        column: 1,
        message: format!(
            "a record line of more than {} MiB; ctxlab reads one record at a time and \
             holds at most this much of one",
            cap / (1024 * 1024)
        ),
        fix: "a single record this large is not a transcript record: check the file, or split \
              the record's content"
            .to_string(),
    }
}

/// Nothing follows in `reader`.
fn at_end<R: BufRead>(reader: &mut R, source: &Path) -> LabResult<bool> {
    Ok(reader
        .fill_buf()
        .map_err(|e| LabError::io("reading transcript", source, e))?
        .is_empty())
}

/// Line `line` without its trailing white space and, on the first line,
/// without a UTF-8 byte-order mark (not JSON; editors on some systems write
/// one); the mark's length in bytes.
fn body(buf: &[u8], line: usize) -> (&[u8], u64) {
    let mut end = buf.len();
    while end > 0 && buf[end - 1].is_ascii_whitespace() {
        end -= 1;
    }
    let text = &buf[..end];
    if line == 1 {
        if let Some(rest) = text.strip_prefix(b"\xEF\xBB\xBF") {
            return (rest, 3);
        }
    }
    (text, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULES: Rules = Rules {
        comments: true,
        fix: "repair it",
    };

    #[test]
    fn a_line_is_read_up_to_its_cap_and_no_further() {
        let text = b"ab\ncdefgh\nij";
        let mut r = &text[..];
        let mut buf = Vec::new();
        assert_eq!(read_line_capped(&mut r, &mut buf, 4).unwrap(), 3);
        assert_eq!(buf, b"ab\n");
        buf.clear();
        // The second line is cut once it passes 4 bytes (a 1-byte reader
        // buffer would stop at 5; a slice hands the whole rest at once).
        read_line_capped(&mut r, &mut buf, 4).unwrap();
        assert!(buf.len() > 4 && !buf.contains(&b'i'), "{buf:?}");
        let mut r = std::io::BufReader::with_capacity(2, &text[3..]);
        buf.clear();
        read_line_capped(&mut r, &mut buf, 4).unwrap();
        assert_eq!(buf, b"cdefgh", "stops at the first read past the cap");
        let mut r = &text[10..];
        buf.clear();
        assert_eq!(read_line_capped(&mut r, &mut buf, 4).unwrap(), 2);
        assert_eq!(buf, b"ij");
    }

    #[test]
    fn a_line_over_the_limit_is_refused_with_its_line_number() {
        let mut text = b"{\"type\":\"user\"}\n\n".to_vec();
        text.extend(std::iter::repeat_n(b'x', crate::input::MAX_LINE_BYTES + 10));
        let e = for_each(
            &text[..],
            Path::new("big.jsonl"),
            RULES,
            |b| serde_json::from_slice::<serde_json::Value>(b),
            |_, _| Ok(()),
        )
        .unwrap_err();
        assert_eq!(e.exit_code(), 3);
        let msg = e.to_string();
        assert!(
            msg.contains("big.jsonl:3:1: a record line of more than 64 MiB"),
            "{msg}"
        );
    }

    fn read(text: &str) -> LabResult<(Vec<(usize, usize)>, LinesEnd)> {
        let mut places = Vec::new();
        let end = for_each(
            text.as_bytes(),
            Path::new("s.jsonl"),
            RULES,
            |b| serde_json::from_slice::<serde_json::Value>(b),
            |_, p| {
                places.push((p.line, p.column));
                Ok(())
            },
        )?;
        Ok((places, end))
    }

    #[test]
    fn blank_and_comment_lines_are_skipped_and_places_kept() {
        let (places, end) = read("\u{feff}// header\n\n  {\"a\":1}\n{}\n").unwrap();
        assert_eq!(places, vec![(3, 3), (4, 1)]);
        assert_eq!((end.comment_lines, end.truncated), (1, None));
    }

    #[test]
    fn only_a_cut_last_line_is_a_cut() {
        let (places, end) = read("{}\n{\"a\":").unwrap();
        assert_eq!((places.len(), end.truncated.map(|t| t.0)), (1, Some(2)));
        let (_, end) = read("{}\n{\"a\":\n").unwrap();
        assert_eq!(
            end.truncated.map(|t| t.0),
            Some(2),
            "a final newline after the cut"
        );
        match read("{\"a\":\n{}\n").unwrap_err() {
            LabError::Input { line, fix, .. } => assert_eq!((line, fix.as_str()), (1, "repair it")),
            other => panic!("expected an input error, got {other:?}"),
        }
    }
}
