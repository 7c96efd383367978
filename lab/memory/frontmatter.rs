//! YAML frontmatter of memory files, read with a real YAML parser.
//!
//! Reading goes through `yaml-rust2`'s event parser, so everything PyYAML
//! writes for the course (single-quoted `'a: b'`, descriptions folded onto a
//! second line, double-quoted escapes, CRLF line endings, a BOM) is read. The
//! scalar's text is taken as written, never resolved to a number or boolean:
//! memory fields are strings.
//!
//! Writing quotes every value that PyYAML (YAML 1.1 resolution) might read
//! back as anything other than the same string: `1_000`, `12:30`, `0x1A`,
//! `.inf`, `=`, `yes`, a leading `-`, DEL, U+2028... Only values made of
//! letters, digits, spaces and `-_.,` that start with a letter and are not a
//! YAML 1.1 boolean stay plain; everything else is double-quoted with escapes
//! for every character PyYAML would not accept literally.
//!
//! ```text
//! ---
//! name: user-preference-tabs
//! description: User prefers tabs for indentation
//! type: user
//! ---
//!
//! body text
//! ```

use yaml_rust2::parser::{Event, Parser};

/// The three metadata fields and the body of one memory file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// `name:` value.
    pub name: String,
    /// `description:` value.
    pub description: String,
    /// `type:` value (validated by the store, not here).
    pub mem_type: String,
    /// Everything after the closing `---` line, trimmed.
    pub body: String,
}

/// Where and why a file failed to parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line in the file.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What was found and what was expected.
    pub message: String,
}

const KEYS: [&str; 3] = ["name", "description", "type"];

/// PyYAML's YAML 1.1 booleans (and the null words): plain, they are not strings.
const RESOLVED_WORDS: [&str; 12] = [
    "yes", "no", "true", "false", "on", "off", "null", "y", "n", "~", "nan", "inf",
];

/// Render a document exactly as the store writes it.
pub fn render(doc: &Document) -> String {
    format!(
        "---\nname: {}\ndescription: {}\ntype: {}\n---\n\n{}\n",
        scalar(&doc.name),
        scalar(&doc.description),
        scalar(&doc.mem_type),
        doc.body.trim()
    )
}

/// Render one scalar: plain when PyYAML reads it back unchanged, else double-quoted.
pub fn scalar(v: &str) -> String {
    if is_plain_safe(v) {
        return v.to_string();
    }
    let mut out = String::with_capacity(v.len() + 2);
    out.push('"');
    for c in v.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if needs_escape(c) => out.push_str(&escape(c)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Characters PyYAML's reader refuses or its scanner folds: escaped in quotes.
fn needs_escape(c: char) -> bool {
    let u = c as u32;
    !(u == 0x20
        || (0x21..=0x7E).contains(&u)
        || (0xA0..=0xD7FF).contains(&u)
        || (0xE000..=0xFFFD).contains(&u) && u != 0xFEFF
        || u >= 0x10000)
        || matches!(u, 0x2028 | 0x2029 | 0x85)
}

fn escape(c: char) -> String {
    let u = c as u32;
    if u <= 0xFF {
        format!("\\x{u:02X}")
    } else if u <= 0xFFFF {
        format!("\\u{u:04X}")
    } else {
        format!("\\U{u:08X}")
    }
}

/// Would PyYAML read `v` back unchanged as a plain string scalar? Deliberately
/// narrow: a letter first, then letters, digits, spaces and `-_.,` only.
fn is_plain_safe(v: &str) -> bool {
    let mut chars = v.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    if !first.is_alphabetic() || needs_escape(first) || v.ends_with(' ') {
        return false;
    }
    let ok = |c: char| {
        (c.is_alphanumeric() && !needs_escape(c)) || matches!(c, ' ' | '-' | '_' | '.' | ',')
    };
    chars.all(ok) && !RESOLVED_WORDS.contains(&v.to_ascii_lowercase().as_str())
}

fn err(line: usize, column: usize, message: impl Into<String>) -> ParseError {
    ParseError {
        line,
        column,
        message: message.into(),
    }
}

/// Split a file into its frontmatter text and body. Accepts a BOM and CRLF
/// delimiter and frontmatter lines; the body is kept byte for byte (trimmed).
fn split(text: &str) -> Result<(String, String), ParseError> {
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    let mut lines = text.split('\n');
    let first = lines.next().unwrap_or("");
    if first.trim_end() != "---" {
        return Err(err(
            1,
            1,
            format!("expected `---` opening the frontmatter, found {first:?}"),
        ));
    }
    let mut front = Vec::new();
    for line in lines.by_ref() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim_end() == "---" || line.trim_end() == "..." {
            let body = lines.collect::<Vec<_>>().join("\n").trim().to_string();
            return Ok((front.join("\n"), body));
        }
        front.push(line);
    }
    Err(err(
        front.len() + 1,
        1,
        "frontmatter is not closed by a `---` line",
    ))
}

/// Parse a memory file: YAML frontmatter mapping with string values for
/// `name`, `description` and `type` (other keys are ignored, as the course's
/// `.get` does), then the body.
pub fn parse(text: &str) -> Result<Document, ParseError> {
    let (front, body) = split(text)?;
    let values = parse_mapping(&front)?;
    let mut out: [Option<String>; 3] = [None, None, None];
    for (key, value, line, column) in values {
        if let Some(slot) = KEYS.iter().position(|k| *k == key) {
            if value.trim().is_empty() {
                return Err(err(
                    line,
                    column,
                    format!("frontmatter key {key:?} is blank"),
                ));
            }
            out[slot] = Some(value);
        }
    }
    let last = front.lines().count() + 1;
    for (slot, key) in KEYS.iter().enumerate() {
        if out[slot].is_none() {
            return Err(err(last, 1, format!("frontmatter is missing key {key:?}")));
        }
    }
    let [name, description, mem_type] = out.map(Option::unwrap_or_default);
    Ok(Document {
        name,
        description,
        mem_type,
        body,
    })
}

/// PyYAML reads YAML 1.1, where NEL, LINE SEPARATOR and PARAGRAPH
/// SEPARATOR are line breaks; yaml-rust2 reads YAML 1.2, where they are not.
/// PyYAML writes them raw inside quotes (then indents the next line), so to
/// read those files as PyYAML does: NEL becomes `\n`, and the blanks around
/// LS/PS go (PyYAML keeps LS/PS themselves but folds the indentation away).
/// ctxlab never writes them raw (it escapes them), so its files are unaffected.
fn yaml11_breaks(front: &str) -> String {
    let front = front.replace('\u{85}', "\n");
    if !front.contains(['\u{2028}', '\u{2029}']) {
        return front;
    }
    let mut out = String::with_capacity(front.len());
    let mut chars = front.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{2028}' || c == '\u{2029}' {
            while out.ends_with([' ', '\t']) {
                out.pop();
            }
            out.push(c);
            while chars.next_if(|n| *n == ' ' || *n == '\t').is_some() {}
        } else {
            out.push(c);
        }
    }
    out
}

/// Key, value, and the value's position (line in the file, 1-based column).
type Entry = (String, String, usize, usize);

/// The top-level mapping of the frontmatter, scalars only.
fn parse_mapping(front: &str) -> Result<Vec<Entry>, ParseError> {
    // Line 1 of the file is the opening `---`: YAML line n is file line n + 1.
    let at = |m: &yaml_rust2::scanner::Marker| (m.line() + 1, m.col() + 1);
    let front = yaml11_breaks(front);
    let mut parser = Parser::new_from_str(&front);
    let mut next = || {
        parser.next_token().map_err(|e| {
            let (l, c) = at(e.marker());
            err(l, c, format!("invalid YAML: {}", e.info()))
        })
    };
    let mut entries = Vec::new();
    let mut key: Option<String> = None;
    let mut depth = 0usize;
    loop {
        let (ev, mark) = next()?;
        let (line, column) = at(&mark);
        match ev {
            Event::StreamEnd => break,
            Event::MappingStart(..) | Event::SequenceStart(..) if depth == 0 && key.is_none() => {
                if matches!(ev, Event::SequenceStart(..)) {
                    return Err(err(
                        line,
                        column,
                        "frontmatter is a list, expected `key: value` lines",
                    ));
                }
                depth = 1;
            }
            Event::MappingStart(..) | Event::SequenceStart(..) | Event::Alias(_) => {
                let k = key.take().unwrap_or_default();
                return Err(err(line, column, format!("frontmatter key {k:?} has a nested or aliased value; expected a plain string")));
            }
            Event::Scalar(v, ..) if depth == 0 => {
                return Err(err(
                    line,
                    column,
                    format!("frontmatter is the scalar {v:?}, expected `key: value` lines"),
                ));
            }
            Event::Scalar(v, ..) => match key.take() {
                None => key = Some(v),
                Some(k) => entries.push((k, v, line, column)),
            },
            _ => {}
        }
    }
    if depth == 0 {
        return Err(err(
            1,
            1,
            "frontmatter is empty, expected name, description and type",
        ));
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(name: &str, description: &str, body: &str) -> Document {
        Document {
            name: name.into(),
            description: description.into(),
            mem_type: "user".into(),
            body: body.into(),
        }
    }

    #[test]
    fn round_trips_plain_and_quoted_values() {
        for d in [
            doc("user-preference-tabs", "User prefers tabs", "Use tabs."),
            doc("a: b", "- starts with dash", "x"),
            doc("true", "line\nbreak", "multi\nline\nbody"),
            doc("用户偏好", "喜欢 tab 缩进", "正文"),
            doc("'quoted'", "\"dq\"", "b"),
            doc("1_000", "12:30", "x"),
            doc("0x1A", ".inf", "x"),
            doc("=", "a\u{7F}b\u{2028}c\u{85}d\u{FEFF}", "x"),
            doc("yes", "tab\there", "x"),
        ] {
            let text = render(&d);
            assert_eq!(parse(&text).unwrap(), d, "{text}");
        }
    }

    #[test]
    fn renders_course_shape() {
        let text = render(&doc(
            "user-preference-tabs",
            "User prefers tabs for indentation",
            "Body.",
        ));
        assert_eq!(
            text,
            "---\nname: user-preference-tabs\ndescription: User prefers tabs for indentation\ntype: user\n---\n\nBody.\n"
        );
    }

    #[test]
    fn reads_what_pyyaml_writes() {
        let folded = "---\r\nname: 'a: b'\r\ndescription: A description long enough that PyYAML folds\r\n  it onto a second line\r\ntype: user\r\n---\r\n\r\nbody\r\n";
        let d = parse(folded).unwrap();
        assert_eq!(d.name, "a: b");
        assert_eq!(
            d.description,
            "A description long enough that PyYAML folds it onto a second line"
        );
        assert_eq!(d.body, "body");
    }

    #[test]
    fn rejects_missing_unclosed_and_nested_with_locations() {
        let e = parse("---\nname: a\ndescription: b\n---\n\nx").unwrap_err();
        assert!(e.message.contains("missing key \"type\""), "{e:?}");
        let e = parse("---\nname: a").unwrap_err();
        assert!(e.message.contains("not closed"));
        let e = parse("no frontmatter").unwrap_err();
        assert_eq!(e.line, 1);
        let e = parse("---\nname: \"unterminated\n---\n").unwrap_err();
        assert!(e.message.contains("invalid YAML"), "{e:?}");
        assert_eq!(e.line, 2, "{e:?}");
        let e = parse("---\nname: a\ndescription: [x]\ntype: user\n---\n").unwrap_err();
        assert_eq!((e.line, e.column), (3, 14), "{e:?}");
        let e = parse("---\nname: a\ndescription: \"\"\ntype: user\n---\n").unwrap_err();
        assert!(e.message.contains("blank"), "{e:?}");
    }
}
