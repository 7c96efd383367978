//! Streaming over the elements of a JSON array, one element at a time.
//!
//! The array is either the whole document or the value of one of a few keys
//! of a top-level object (`{"messages": [...]}`, a `.traj`'s `"history"`).
//! A small scanner walks the document chunk by chunk from the [`BufRead`]'s
//! own buffer, tracking line and column; it cuts out one element's bytes at a
//! time (string- and escape-aware bracket matching), which serde_json then
//! parses into a [`Value`] for the callback. Only one element is held at a
//! time; values of keys that are neither streamed nor captured are skipped
//! without being kept (their brackets are matched, their content is not
//! validated).
//!
//! Memory: an element held for parsing is at most
//! [`crate::input::MAX_LINE_BYTES`] (64 MiB, the cap on a JSON Lines
//! record); a longer one is refused with the line and column it starts at
//! before more of it is kept, since parsing takes many times its size.
//!
//! Positions: the callback gets the 1-based line and column of the element's
//! first byte (so a one-line minified file still names each element's place);
//! errors inside an element carry serde_json's position shifted to the file;
//! errors between elements carry the scanner's own position.

use std::io::{self, BufRead};
use std::path::Path;

use serde_json::Value;

use crate::error::{LabError, LabResult};

/// How a stream ended without a hard error.
#[derive(Debug, Default)]
pub(crate) struct StreamEnd {
    /// The document ended inside a value: (line, column) of the end.
    pub(crate) truncated: Option<(usize, usize)>,
    /// Captured top-level keys (only for an object document).
    pub(crate) captured: Vec<(String, Value)>,
    /// The input held nothing but whitespace: not a cut file, just empty.
    pub(crate) empty: bool,
}

enum Stop {
    /// The input ended inside the document.
    Eof,
    /// The input holds no document at all (only whitespace).
    Empty,
    /// Bad JSON at (line, column).
    Syntax(usize, usize, String),
    /// The reader failed.
    Io(io::Error),
    /// The callback refused.
    Callback(LabError),
    /// A value to hold was longer than the cap: (line, column) of its start.
    TooLarge(usize, usize),
}

impl From<io::Error> for Stop {
    fn from(e: io::Error) -> Self {
        Stop::Io(e)
    }
}

struct Scanner<R> {
    r: R,
    line: usize,
    /// Column of the last consumed byte (0 at a line start).
    col: usize,
    /// Most bytes of one value held for parsing.
    cap: usize,
}

/// Where the scan of one JSON value stands: a scalar ends before the first
/// delimiter, a string, array or object after the byte that closes it.
#[derive(Default)]
struct ValueEnd {
    scalar: bool,
    depth: usize,
    in_str: bool,
    esc: bool,
}

/// What one byte does to a value scan.
#[derive(PartialEq, Eq)]
enum Next {
    More,
    /// The value ended before this byte.
    EndBefore,
    /// This byte ends the value.
    EndAfter,
}

impl ValueEnd {
    #[inline]
    fn step(&mut self, b: u8) -> Next {
        if self.scalar {
            return if matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b',' | b']' | b'}') {
                Next::EndBefore
            } else {
                Next::More
            };
        }
        if self.in_str {
            if self.esc {
                self.esc = false;
            } else if b == b'\\' {
                self.esc = true;
            } else if b == b'"' {
                self.in_str = false;
                if self.depth == 0 {
                    return Next::EndAfter;
                }
            }
            return Next::More;
        }
        match b {
            b'"' => self.in_str = true,
            b'{' | b'[' => self.depth += 1,
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
                if self.depth == 0 {
                    return Next::EndAfter;
                }
            }
            _ => {}
        }
        Next::More
    }
}

impl<R: BufRead> Scanner<R> {
    fn peek(&mut self) -> Result<Option<u8>, Stop> {
        Ok(self.r.fill_buf()?.first().copied())
    }

    fn bump(&mut self) -> Result<Option<u8>, Stop> {
        let b = self.peek()?;
        if let Some(b) = b {
            self.advance(b);
            self.r.consume(1);
        }
        Ok(b)
    }

    fn advance(&mut self, b: u8) {
        if b == b'\n' {
            self.line += 1;
            self.col = 0;
        } else {
            self.col += 1;
        }
    }

    /// Position of the next byte.
    fn here(&self) -> (usize, usize) {
        (self.line, self.col + 1)
    }

    fn skip_ws(&mut self) -> Result<(), Stop> {
        loop {
            let buf = self.r.fill_buf()?;
            if buf.is_empty() {
                return Ok(());
            }
            let (mut n, mut line, mut col) = (0, self.line, self.col);
            for &b in buf {
                match b {
                    b'\n' => {
                        line += 1;
                        col = 0;
                    }
                    b' ' | b'\t' | b'\r' => col += 1,
                    _ => break,
                }
                n += 1;
            }
            let all = n == buf.len();
            self.line = line;
            self.col = col;
            self.r.consume(n);
            if !all {
                return Ok(());
            }
        }
    }

    /// Consume the next byte if it is one of `allowed`.
    fn expect(&mut self, allowed: &[u8], what: &str) -> Result<u8, Stop> {
        match self.peek()? {
            None => Err(Stop::Eof),
            Some(b) if allowed.contains(&b) => {
                self.bump()?;
                Ok(b)
            }
            Some(_) => Err(self.syntax(what)),
        }
    }

    fn syntax(&self, what: &str) -> Stop {
        let (l, c) = self.here();
        Stop::Syntax(l, c, what.to_string())
    }

    /// Consume one JSON value (whitespace already skipped), appending its
    /// bytes to `out` when given, at most `cap` of them.
    fn value(&mut self, mut out: Option<&mut Vec<u8>>) -> Result<(), Stop> {
        let start = self.here();
        let first = self.peek()?.ok_or(Stop::Eof)?;
        if matches!(first, b',' | b']' | b'}' | b':') {
            return Err(self.syntax("expected a value"));
        }
        let mut state = ValueEnd {
            scalar: !matches!(first, b'{' | b'[' | b'"'),
            ..ValueEnd::default()
        };
        loop {
            let buf = self.r.fill_buf()?;
            if buf.is_empty() {
                // A scalar may end at the end of input; serde_json judges it.
                return if state.scalar { Ok(()) } else { Err(Stop::Eof) };
            }
            let mut n = 0;
            let mut done = false;
            let mut line = self.line;
            let mut col = self.col;
            for &b in buf {
                let next = state.step(b);
                if next == Next::EndBefore {
                    done = true;
                    break;
                }
                n += 1;
                if b == b'\n' {
                    line += 1;
                    col = 0;
                } else {
                    col += 1;
                }
                if next == Next::EndAfter {
                    done = true;
                    break;
                }
            }
            if let Some(out) = out.as_deref_mut() {
                // Checked before the bytes are kept: one value must not
                // decide the process's peak.
                if out.len() + n > self.cap {
                    return Err(Stop::TooLarge(start.0, start.1));
                }
                out.extend_from_slice(&buf[..n]);
            }
            self.line = line;
            self.col = col;
            self.r.consume(n);
            if done {
                return Ok(());
            }
        }
    }

    /// Consume and parse one value.
    fn parse<T: serde::de::DeserializeOwned>(&mut self, buf: &mut Vec<u8>) -> Result<T, Stop> {
        buf.clear();
        let (l0, c0) = self.here();
        self.value(Some(buf))?;
        serde_json::from_slice(buf).map_err(|e| {
            if e.is_eof() {
                return Stop::Eof;
            }
            let (l, c) = if e.line() <= 1 {
                (l0, c0 + e.column().saturating_sub(1))
            } else {
                (l0 + e.line() - 1, e.column())
            };
            Stop::Syntax(l, c, without_position(&e))
        })
    }
}

/// Stream the elements of the document's array.
///
/// `keys`: when the document is an object, the keys whose value is the array
/// (every one present is streamed, in document order). `capture`: object keys
/// whose values are returned whole. A bare array is always accepted.
pub(crate) fn for_each_element<R: BufRead>(
    reader: R,
    source: &Path,
    keys: &[&str],
    capture: &[&str],
    f: impl FnMut(Value, usize, usize) -> LabResult<()>,
) -> LabResult<StreamEnd> {
    for_each_element_capped(
        reader,
        source,
        keys,
        capture,
        crate::input::MAX_LINE_BYTES,
        f,
    )
}

/// [`for_each_element`] holding at most `cap` bytes of one element.
fn for_each_element_capped<R: BufRead>(
    reader: R,
    source: &Path,
    keys: &[&str],
    capture: &[&str],
    cap: usize,
    mut f: impl FnMut(Value, usize, usize) -> LabResult<()>,
) -> LabResult<StreamEnd> {
    let mut sc = Scanner {
        r: reader,
        line: 1,
        col: 0,
        cap,
    };
    let mut end = StreamEnd::default();
    let mut found = false;
    let result = document(&mut sc, keys, capture, &mut f, &mut end, &mut found);
    let input_error = |line, column, message: String| LabError::Input {
        file: source.to_path_buf(),
        line,
        column,
        message,
        fix: "the file must be one JSON document; repair the JSON at this position".to_string(),
    };
    match result {
        Ok(()) => {}
        Err(Stop::Empty) => {
            end.empty = true;
            return Ok(end);
        }
        Err(Stop::Eof) => {
            end.truncated = Some(sc.here());
            return Ok(end);
        }
        Err(Stop::Syntax(l, c, m)) => return Err(input_error(l, c, format!("invalid JSON: {m}"))),
        Err(Stop::Io(e)) => return Err(LabError::io("reading transcript", source, e)),
        Err(Stop::Callback(e)) => return Err(e),
        Err(Stop::TooLarge(line, column)) => return Err(too_large(source, line, column, cap)),
    }
    if !found {
        let what = if keys.is_empty() {
            "a JSON array".to_string()
        } else {
            format!(
                "a JSON array or an object with a {} array",
                keys.join(" / ")
            )
        };
        return Err(LabError::Input {
            file: source.to_path_buf(),
            line: 1,
            column: 1,
            message: format!("expected {what}, found none"),
            fix: "pass a file of this format, or name the right one with --format-in".to_string(),
        });
    }
    Ok(end)
}

fn document<R: BufRead>(
    sc: &mut Scanner<R>,
    keys: &[&str],
    capture: &[&str],
    f: &mut impl FnMut(Value, usize, usize) -> LabResult<()>,
    end: &mut StreamEnd,
    found: &mut bool,
) -> Result<(), Stop> {
    let mut buf = Vec::new();
    // A UTF-8 byte-order mark is not JSON; editors on some systems write one.
    if sc.r.fill_buf()?.starts_with(b"\xEF\xBB\xBF") {
        sc.r.consume(3);
    }
    sc.skip_ws()?;
    match sc.peek()? {
        None => return Err(Stop::Empty),
        Some(b'[') => {
            *found = true;
            array(sc, f, &mut buf)?;
        }
        Some(b'{') => object(sc, keys, capture, f, end, found, &mut buf)?,
        Some(_) => return Err(sc.syntax("expected a JSON array or object")),
    }
    sc.skip_ws()?;
    if sc.peek()?.is_some() {
        return Err(sc.syntax(
            "trailing characters after the JSON document (one JSON value per line is JSON Lines: --format-in claude_jsonl)",
        ));
    }
    Ok(())
}

/// The document's top-level object: the arrays under `keys` streamed, the
/// values under `capture` kept, the rest skipped.
fn object<R: BufRead>(
    sc: &mut Scanner<R>,
    keys: &[&str],
    capture: &[&str],
    f: &mut impl FnMut(Value, usize, usize) -> LabResult<()>,
    end: &mut StreamEnd,
    found: &mut bool,
    buf: &mut Vec<u8>,
) -> Result<(), Stop> {
    sc.bump()?;
    sc.skip_ws()?;
    if sc.peek()? == Some(b'}') {
        sc.bump()?;
        return Ok(());
    }
    loop {
        sc.skip_ws()?;
        if sc.peek()? != Some(b'"') {
            return match sc.peek()? {
                None => Err(Stop::Eof),
                Some(_) => Err(sc.syntax("expected a string key")),
            };
        }
        let key: String = sc.parse(buf)?;
        sc.skip_ws()?;
        sc.expect(b":", "expected `:` after an object key")?;
        sc.skip_ws()?;
        if keys.contains(&key.as_str()) {
            match sc.peek()? {
                Some(b'[') => {
                    *found = true;
                    array(sc, f, buf)?;
                }
                None => return Err(Stop::Eof),
                Some(_) => return Err(sc.syntax(&format!("`{key}` must be an array"))),
            }
        } else if capture.contains(&key.as_str()) {
            let v: Value = sc.parse(buf)?;
            end.captured.push((key, v));
        } else {
            sc.value(None)?;
        }
        sc.skip_ws()?;
        if sc.expect(b",}", "expected `,` or `}`")? == b'}' {
            return Ok(());
        }
    }
}

fn array<R: BufRead>(
    sc: &mut Scanner<R>,
    f: &mut impl FnMut(Value, usize, usize) -> LabResult<()>,
    buf: &mut Vec<u8>,
) -> Result<(), Stop> {
    sc.bump()?; // '['
    sc.skip_ws()?;
    if sc.peek()? == Some(b']') {
        sc.bump()?;
        return Ok(());
    }
    loop {
        sc.skip_ws()?;
        let (line, column) = sc.here();
        let v: Value = sc.parse(buf)?;
        f(v, line, column).map_err(Stop::Callback)?;
        sc.skip_ws()?;
        if sc.expect(b",]", "expected `,` or `]` after an array element")? == b']' {
            return Ok(());
        }
    }
}

/// An element longer than `cap` bytes, refused where it starts.
fn too_large(source: &Path, line: usize, column: usize, cap: usize) -> LabError {
    LabError::Input {
        file: source.to_path_buf(),
        line,
        column,
        message: format!(
            "a JSON value of more than {} MiB; ctxlab reads one record at a time and holds at \
             most this much of one",
            cap / (1024 * 1024)
        ),
        fix: "a single record this large is not a transcript record: check the file, or split \
              the record's content"
            .to_string(),
    }
}

/// serde_json's message without its " at line L column C" suffix.
pub(crate) fn without_position(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The elements' start places, or the error.
    fn places(text: &[u8], keys: &[&str], cap: usize) -> LabResult<Vec<(usize, usize)>> {
        let mut out = Vec::new();
        for_each_element_capped(text, Path::new("s.json"), keys, &[], cap, |_, l, c| {
            out.push((l, c));
            Ok(())
        })?;
        Ok(out)
    }

    #[test]
    fn an_element_over_the_cap_is_refused_where_it_starts() {
        let big = format!("\"{}\"", "x".repeat(200));
        let text = format!("[\n  {{\"a\": 1}},\n  {{\"t\": {big}}}\n]");
        let e = places(text.as_bytes(), &[], 100).unwrap_err();
        assert_eq!(e.exit_code(), 3);
        let msg = e.to_string();
        assert!(
            msg.contains("s.json:3:3: a JSON value of more than"),
            "{msg}"
        );
        // Under the cap the same file streams.
        assert_eq!(
            places(text.as_bytes(), &[], 1_000).unwrap(),
            [(2, 3), (3, 3)]
        );
    }

    #[test]
    fn a_skipped_value_over_the_cap_is_not_held_so_not_refused() {
        let text = format!(
            "{{\"meta\": \"{}\", \"messages\": [1, 2]}}",
            "y".repeat(500)
        );
        assert_eq!(
            places(text.as_bytes(), &["messages"], 100).unwrap().len(),
            2
        );
    }

    #[test]
    fn an_element_over_64_mib_is_refused_with_its_place() {
        let mut text = b"[{\"a\": 1},\n  \"".to_vec();
        text.extend(std::iter::repeat_n(b'x', crate::input::MAX_LINE_BYTES + 10));
        text.extend(b"\"]");
        let e = for_each_element(&text[..], Path::new("big.json"), &[], &[], |_, _, _| Ok(()))
            .unwrap_err();
        assert_eq!(e.exit_code(), 3);
        let msg = e.to_string();
        assert!(
            msg.contains("big.json:2:3: a JSON value of more than 64 MiB"),
            "{msg}"
        );
    }
}
