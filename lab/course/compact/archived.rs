//! The checker's view of an archived transcript: only the texts it scans for
//! pointers and fingerprints, borrowed from the file's bytes.
//!
//! Parsing every archived line into [`Message`]s copied every string of
//! every archive (the course archives the whole context on each snip) and
//! buffered each block to find its `type` tag; that was a fifth of an oracle
//! cell. [`for_each_archived_text`] reads one line into a flat, borrowed view
//! instead and visits the same texts, in the same order, that
//! [`for_each_text`] visits on the parsed message. A line the view cannot
//! vouch for (any shape it does not know to be a valid message) is parsed as
//! a [`Message`] after all, so a line is used exactly when it parses as one.

use std::borrow::Cow;

use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde::Deserialize;

use crate::message::{for_each_text, Message, Role, Thinking};

/// Any JSON value, noting only that one was there (a present `null` counts,
/// as it does for [`crate::message::Block::ToolUse`]'s `input`).
#[derive(Default)]
struct Seen(bool);

impl<'de> Deserialize<'de> for Seen {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(d).map(|_| Seen(true))
    }
}

/// A JSON string, borrowed from the line when it has no escapes. (serde's
/// own `Cow<str>` borrows only as a bare field, never inside an `Option`.)
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_string())))
            }
        }
        d.deserialize_str(V)
    }
}

impl std::ops::Deref for Text<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

/// One content block, every variant's fields side by side.
#[derive(Deserialize)]
struct BlockView<'a> {
    #[serde(rename = "type", borrow)]
    kind: Text<'a>,
    #[serde(default, borrow)]
    text: Option<Text<'a>>,
    #[serde(default, borrow)]
    tool_use_id: Option<Text<'a>>,
    #[serde(default, borrow)]
    content: Option<Text<'a>>,
    #[serde(default, borrow)]
    thinking: Option<Text<'a>>,
    #[serde(default, borrow)]
    id: Option<Text<'a>>,
    #[serde(default, borrow)]
    name: Option<Text<'a>>,
    #[serde(default)]
    input: Seen,
    #[serde(default, borrow)]
    source: Option<Text<'a>>,
}

impl BlockView<'_> {
    /// Would [`crate::message::Block`] accept this block? Every field its
    /// variant requires is present (as a string here; a field of another
    /// variant is ignored by the block, so the view is only stricter).
    fn is_valid(&self) -> bool {
        match &*self.kind {
            "text" => self.text.is_some(),
            "tool_use" => self.id.is_some() && self.name.is_some() && self.input.0,
            "tool_result" => self.tool_use_id.is_some() && self.content.is_some(),
            "thinking" => self.thinking.is_some(),
            "image" => self.source.is_some(),
            _ => false,
        }
    }
}

/// Message content: a string or a list of blocks.
enum ContentView<'a> {
    Text(Text<'a>),
    Blocks(Vec<BlockView<'a>>),
}

impl<'de: 'a, 'a> Deserialize<'de> for ContentView<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ContentView<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or a list of content blocks")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(ContentView::Text(Text(Cow::Borrowed(v))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(ContentView::Text(Text(Cow::Owned(v.to_string()))))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(4));
                while let Some(b) = seq.next_element()? {
                    blocks.push(b);
                }
                Ok(ContentView::Blocks(blocks))
            }
        }
        d.deserialize_any(V)
    }
}

/// One archived line as the view reads it.
#[derive(Deserialize)]
struct MessageView<'a> {
    #[allow(dead_code)] // Parsed so that a line with a bad role is refused, as by `Message`.
    role: Role,
    #[serde(borrow)]
    content: ContentView<'a>,
}

/// Visit the texts of one archived JSONL line as [`for_each_text`] with
/// [`Thinking::Skip`] visits those of the message it parses to; a line that
/// is not a message visits nothing.
pub fn for_each_archived_text(line: &str, f: impl FnMut(Option<&str>, &str)) {
    for_each_line_text(line, &mut Vec::new(), f)
}

/// [`for_each_archived_text`] with the scanner's texts in `texts`.
fn for_each_line_text<'a>(
    line: &'a str,
    texts: &mut Vec<Visit<'a>>,
    mut f: impl FnMut(Option<&str>, &str),
) {
    if scan_written_line(line, texts).is_some() {
        for (id, text) in texts.iter() {
            f(id.as_deref(), text);
        }
        return;
    }
    let view = serde_json::from_str::<MessageView>(line)
        .ok()
        .filter(|v| match &v.content {
            ContentView::Text(_) => true,
            ContentView::Blocks(b) => b.iter().all(BlockView::is_valid),
        });
    let Some(view) = view else {
        // Not a shape the view vouches for: the full parse decides.
        if let Ok(m) = serde_json::from_str::<Message>(line) {
            for_each_text(std::slice::from_ref(&m), Thinking::Skip, f);
        }
        return;
    };
    match &view.content {
        ContentView::Text(t) => f(None, &t.0),
        ContentView::Blocks(blocks) => {
            for b in blocks {
                match &*b.kind {
                    "text" => f(None, b.text.as_deref().unwrap_or_default()),
                    "tool_result" => f(
                        b.tool_use_id.as_deref(),
                        b.content.as_deref().unwrap_or_default(),
                    ),
                    _ => {}
                }
            }
        }
    }
}

/// Visit the texts of every line of an archived transcript, as
/// [`for_each_archived_text`] visits those of each of `text.lines()`.
///
/// A line in the writer's form ends right after its object, so the
/// scanner finds where the next one starts without a separate search for
/// the line break; any other line is split off as `str::lines` splits it.
pub fn for_each_archive_text(text: &str, mut f: impl FnMut(Option<&str>, &str)) {
    let mut rest = text;
    // One vector for every line's texts (an archive has a line per message).
    let mut texts = Vec::new();
    while !rest.is_empty() {
        let scanned = scan_written_object(rest, &mut texts)
            .filter(|after| after.is_empty() || after.starts_with('\n'));
        if let Some(after) = scanned {
            for (id, t) in &texts {
                f(id.as_deref(), t);
            }
            rest = after.get(1..).unwrap_or_default();
            continue;
        }
        let (line, after) = split_line(rest);
        for_each_line_text(line, &mut texts, &mut f);
        rest = after;
    }
}

/// The first line of `text` as `str::lines` yields it (a `\r` right
/// before the `\n` dropped), and the text after its line break.
fn split_line(text: &str) -> (&str, &str) {
    match memchr::memchr(b'\n', text.as_bytes()) {
        Some(i) => {
            let line = &text[..i];
            (line.strip_suffix('\r').unwrap_or(line), &text[i + 1..])
        }
        None => (text, ""),
    }
}

/// One visited text: the tool id of a result, and the text.
type Visit<'a> = (Option<Cow<'a, str>>, Cow<'a, str>);

/// The texts of a line in exactly the form [`Message::write_pyjson`] writes
/// (Python's separators, fields in their order, an empty tool `input`),
/// put in `out` (cleared first), or `None` for anything else, which the
/// serde view then reads. Strings are borrowed unless they hold escapes; a
/// `\u` escape is left to serde.
fn scan_written_line<'a>(line: &'a str, out: &mut Vec<Visit<'a>>) -> Option<()> {
    scan_written_object(line, out)
        .filter(|rest| rest.is_empty())
        .map(|_| ())
}

/// [`scan_written_line`] of the object at the start of `text`; the text
/// after it.
fn scan_written_object<'a>(text: &'a str, out: &mut Vec<Visit<'a>>) -> Option<&'a str> {
    let mut c = Cursor(text);
    out.clear();
    if !c.eat(r#"{"role": "user", "content": "#) {
        c.expect(r#"{"role": "assistant", "content": "#)?;
    }
    if c.0.starts_with('"') {
        out.push((None, c.string()?));
    } else {
        c.expect("[")?;
        let mut first = true;
        while !c.eat("]") {
            if !first {
                c.expect(", ")?;
            }
            first = false;
            scan_block(&mut c, out)?;
        }
    }
    c.expect("}")?;
    Some(c.0)
}

/// One block of [`scan_written_line`]; its visited text, if any, goes to `out`.
fn scan_block<'a>(c: &mut Cursor<'a>, out: &mut Vec<Visit<'a>>) -> Option<()> {
    c.expect(r#"{"type": ""#)?;
    if c.eat(r#"text", "text": "#) {
        out.push((None, c.string()?));
    } else if c.eat(r#"tool_result", "tool_use_id": "#) {
        let id = c.string()?;
        c.expect(r#", "content": "#)?;
        out.push((Some(id), c.string()?));
    } else if c.eat(r#"tool_use", "id": "#) {
        c.string()?;
        c.expect(r#", "name": "#)?;
        c.string()?;
        c.expect(r#", "input": {}"#)?;
    } else if c.eat(r#"thinking", "thinking": "#) || c.eat(r#"image", "source": "#) {
        c.string()?;
    } else {
        return None;
    }
    c.expect("}")
}

/// The unread rest of a line.
struct Cursor<'a>(&'a str);

impl<'a> Cursor<'a> {
    /// Skip `lit` if the rest starts with it.
    fn eat(&mut self, lit: &str) -> bool {
        match self.0.strip_prefix(lit) {
            Some(rest) => {
                self.0 = rest;
                true
            }
            None => false,
        }
    }

    fn expect(&mut self, lit: &str) -> Option<()> {
        self.eat(lit).then_some(())
    }

    /// A JSON string literal, decoded.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        let body = self.0.strip_prefix('"')?;
        let stop = crate::scan::ESCAPE;
        let bytes = body.as_bytes();
        let end = crate::scan::find(bytes, stop)?;
        if bytes[end] == b'"' {
            self.0 = &body[end + 1..];
            return Some(Cow::Borrowed(&body[..end]));
        }
        // Room for a typical escaped text (a persisted preview), not the
        // whole rest of the line: it grows if needed.
        let mut text = String::with_capacity(body.len().min(512));
        let mut at = 0;
        loop {
            let next = at + crate::scan::find(&bytes[at..], stop)?;
            text.push_str(&body[at..next]);
            match bytes[next] {
                b'"' => {
                    self.0 = &body[next + 1..];
                    return Some(Cow::Owned(text));
                }
                b'\\' => {
                    text.push(match bytes.get(next + 1)? {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        // `\u` (and anything invalid): serde decides.
                        _ => return None,
                    });
                    at = next + 2;
                }
                // A raw control char: not JSON.
                _ => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Block;
    use proptest::prelude::*;

    /// The texts of a line as the full parse visits them.
    fn by_parsing(line: &str) -> Vec<(Option<String>, String)> {
        let mut out = Vec::new();
        if let Ok(m) = serde_json::from_str::<Message>(line) {
            for_each_text(std::slice::from_ref(&m), Thinking::Skip, |id, t| {
                out.push((id.map(str::to_string), t.to_string()))
            });
        }
        out
    }

    /// The texts the serde view (and its fallback) reads, without the scanner.
    fn by_serde(line: &str) -> Option<Vec<(Option<String>, String)>> {
        let view = serde_json::from_str::<MessageView>(line).ok()?;
        let mut out = Vec::new();
        match &view.content {
            ContentView::Text(t) => out.push((None, t.0.to_string())),
            ContentView::Blocks(blocks) => {
                for b in blocks.iter().filter(|b| b.is_valid()) {
                    match &*b.kind {
                        "text" => out.push((None, b.text.as_deref()?.to_string())),
                        "tool_result" => out.push((
                            b.tool_use_id.as_deref().map(str::to_string),
                            b.content.as_deref()?.to_string(),
                        )),
                        _ => {}
                    }
                }
            }
        }
        Some(out)
    }

    fn by_scan(line: &str) -> Option<Vec<(Option<String>, String)>> {
        let mut texts = Vec::new();
        scan_written_line(line, &mut texts)?;
        Some(
            texts
                .into_iter()
                .map(|(id, t)| (id.map(|i| i.into_owned()), t.into_owned()))
                .collect(),
        )
    }

    #[test]
    fn the_scanner_reads_written_lines_and_declines_the_rest() {
        let written = r#"{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a1", "content": "x\ny \"q\" \\ \t\/"}, {"type": "text", "text": "t"}]}"#;
        assert_eq!(by_scan(written), by_serde(written));
        assert_eq!(by_scan(written).unwrap()[0].1, "x\ny \"q\" \\ \t/");
        for declined in [
            r#"{"role": "user", "content": "\u00e9"}"#,
            r#"{"role":"user","content":"compact"}"#,
            r#"{"role": "user", "content": "x"} "#,
            r#"{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "n", "input": {"a": 1}}]}"#,
            r#"{"role": "user", "content": "raw"#,
            "{\"role\": \"user\", \"content\": \"a\tb\"}",
        ] {
            assert_eq!(by_scan(declined), None, "{declined}");
        }
    }

    fn by_view(line: &str) -> Vec<(Option<String>, String)> {
        let mut out = Vec::new();
        for_each_archived_text(line, |id, t| {
            out.push((id.map(str::to_string), t.to_string()))
        });
        out
    }

    #[test]
    fn odd_lines_agree_with_the_full_parse() {
        let lines = [
            r#"{"role": "user", "content": "a \"quoted\" \n text"}"#,
            r#"{"role": "system", "content": "x"}"#,
            r#"{"role": "user", "content": 3}"#,
            r#"{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": null}]}"#,
            r#"{"role": "user", "content": [{"type": "text", "text": "a", "content": 5}]}"#,
            r#"{"role": "user", "content": [{"type": "text", "text": "a", "content": "x", "content": "y"}]}"#,
            r#"{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "n"}]}"#,
            r#"{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "n", "input": null}, {"type": "text", "text": "b"}]}"#,
            r#"{"role": "user", "content": [{"type": "video", "text": "a"}]}"#,
            r#"{"role": "user", "content": [{"type": "thinking", "thinking": "hm"}, {"type": "image", "source": "png"}]}"#,
            r#"{"content": "no role", "role": "user", "extra": [1, {"a": 2}]}"#,
            "not json",
            "",
        ];
        for line in lines {
            assert_eq!(by_view(line), by_parsing(line), "{line}");
        }
    }

    fn block() -> impl Strategy<Value = Block> {
        let s = "(?s).{0,12}";
        prop_oneof![
            s.prop_map(|text| Block::Text { text }),
            (s, s, any::<bool>()).prop_map(|(id, name, empty)| Block::ToolUse {
                id,
                name,
                input: if empty {
                    serde_json::json!({})
                } else {
                    serde_json::json!({"k": [1, null]})
                }
                .into(),
            }),
            (s, s).prop_map(|(tool_use_id, content)| Block::ToolResult {
                tool_use_id,
                content,
            }),
            s.prop_map(|thinking| Block::Thinking { thinking }),
            s.prop_map(|source| Block::Image { source }),
        ]
    }

    /// What visiting every `str::lines` line gives.
    fn by_lines(text: &str) -> Vec<(Option<String>, String)> {
        text.lines().flat_map(by_view).collect()
    }

    fn by_archive(text: &str) -> Vec<(Option<String>, String)> {
        let mut out = Vec::new();
        for_each_archive_text(text, |id, t| {
            out.push((id.map(str::to_string), t.to_string()))
        });
        out
    }

    proptest! {
        #[test]
        fn a_whole_archive_reads_as_its_lines(
            parts in proptest::collection::vec(
                prop_oneof![
                    (block(), any::<bool>()).prop_map(|(b, user)| {
                        let m = Message::assistant(vec![b]);
                        let m = if user { Message { role: Role::User, ..m } } else { m };
                        crate::pyjson::dumps(&m)
                    }),
                    "[{}\\[\\]\"a:, ]{0,6}",
                    Just(r#"{"role": "user", "content": "x"}"#.to_string()),
                ],
                0..6,
            ),
            breaks in proptest::collection::vec(
                prop_oneof![Just("\n"), Just("\r\n"), Just("\r"), Just("\n\n"), Just("")],
                6,
            ),
        ) {
            let text: String = parts
                .iter()
                .zip(&breaks)
                .flat_map(|(p, b)| [p.as_str(), b])
                .collect();
            prop_assert_eq!(by_archive(&text), by_lines(&text));
        }

        #[test]
        fn written_lines_read_as_the_parsed_message(
            text in proptest::option::of("(?s).{0,12}"),
            blocks in proptest::collection::vec(block(), 0..5),
            user in any::<bool>(),
        ) {
            let m = match text {
                Some(t) => Message::user_text(t),
                None if user => Message { role: Role::User, ..Message::assistant(blocks) },
                None => Message::assistant(blocks),
            };
            let line = crate::pyjson::dumps(&m);
            prop_assert_eq!(by_view(&line), by_parsing(&line));
            // The scanner reads every line the writer writes unless a string
            // needed a \u escape or a tool input is not empty, and agrees
            // with serde when it reads one.
            let scanned = by_scan(&line);
            if !line.contains("\\u") && !line.contains(r#""input": {""#) {
                prop_assert!(scanned.is_some(), "{}", line);
            }
            if scanned.is_some() {
                prop_assert_eq!(scanned, by_serde(&line));
            }
        }
    }
}
