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
    printable(&front)?;
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

/// PyYAML's reader refuses any character outside its printable set before
/// parsing (`unacceptable character #x0000`), so a frontmatter holding one
/// is not a memory to the course: quarantined here, at the character's own
/// line and column (line 1 is the opening `---`).
fn printable(front: &str) -> Result<(), ParseError> {
    let ok = |c: char| {
        matches!(c, '\t' | '\n' | '\r' | ' '..='~' | '\u{85}' | '\u{A0}'..='\u{D7FF}')
            || matches!(c, '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
    };
    for (i, line) in front.split('\n').enumerate() {
        if let Some((col, c)) = line.chars().enumerate().find(|(_, c)| !ok(*c)) {
            return Err(err(
                i + 2,
                col + 1,
                format!(
                    "unacceptable character #x{:04x}: special characters are not allowed \
                     (PyYAML refuses the file)",
                    c as u32
                ),
            ));
        }
    }
    Ok(())
}

/// PyYAML reads YAML 1.1, where NEL, LINE SEPARATOR and PARAGRAPH
/// SEPARATOR are line breaks; yaml-rust2 reads YAML 1.2, where they are not.
/// This rewrites the frontmatter so yaml-rust2 reads what PyYAML reads:
/// NEL becomes `\n` (PyYAML turns it into one); inside a quoted scalar, a run
/// of blanks and breaks holding LS or PS is folded as PyYAML's
/// `scan_flow_scalar_spaces` folds it and written back in a form YAML 1.2
/// reads to the same text; outside quotes, the blanks around LS/PS go.
/// ctxlab never writes LS/PS raw (it escapes them), so its files are
/// unaffected; PyYAML writes them raw inside single quotes.
fn yaml11_breaks(front: &str) -> String {
    let front = front.replace('\u{85}', "\n");
    if !front.contains(['\u{2028}', '\u{2029}']) {
        return front;
    }
    let chars: Vec<char> = front.chars().collect();
    let mut out = String::with_capacity(front.len() + 16);
    let mut quote: Option<char> = None;
    let mut i = 0;
    while i < chars.len() {
        i = match quote {
            None => plain_step(&chars, i, &mut out, &mut quote),
            Some(q) => quoted_step(&chars, i, q, &mut out, &mut quote),
        };
    }
    out
}

fn is_sep(c: char) -> bool {
    c == '\u{2028}' || c == '\u{2029}'
}

fn is_break(c: char) -> bool {
    matches!(c, '\n' | '\r') || is_sep(c)
}

/// One step outside quotes; returns the next index.
fn plain_step(chars: &[char], i: usize, out: &mut String, quote: &mut Option<char>) -> usize {
    let c = chars[i];
    if matches!(c, '\'' | '"') && opens_scalar(out) {
        *quote = Some(c);
    } else if is_sep(c) {
        while out.ends_with([' ', '\t']) {
            out.pop();
        }
        out.push(c);
        let rest = chars[i + 1..]
            .iter()
            .take_while(|n| matches!(n, ' ' | '\t'));
        return i + 1 + rest.count();
    }
    out.push(c);
    i + 1
}

/// A quote opens a scalar where a value or key starts: at the start of a
/// line or after `:`, `-`, `?`, `,`, `[` or `{` and blanks.
fn opens_scalar(out: &str) -> bool {
    let before = out.trim_end_matches([' ', '\t']);
    before.is_empty() || before.ends_with(['\n', ':', '-', '?', ',', '[', '{'])
}

/// One step inside a scalar quoted with `q`; returns the next index.
fn quoted_step(
    chars: &[char],
    i: usize,
    q: char,
    out: &mut String,
    quote: &mut Option<char>,
) -> usize {
    let c = chars[i];
    let next = chars.get(i + 1).copied();
    if q == '\'' && c == '\'' && next == Some('\'') {
        out.push_str("''");
        return i + 2;
    }
    if c == q {
        *quote = None;
    } else if q == '"' && c == '\\' {
        return escaped_step(chars, i, out);
    } else if matches!(c, ' ' | '\t') || is_break(c) {
        let (end, breaks) = blank_run(chars, i);
        if breaks.iter().any(|b| is_sep(*b)) {
            emit_folded(&pyyaml_fold(&breaks), q, out);
        } else {
            out.extend(&chars[i..end]);
        }
        return end;
    }
    out.push(c);
    i + 1
}

/// A backslash in double quotes: an escaped line break drops its first
/// break and keeps the rest (PyYAML); any other escape is copied.
fn escaped_step(chars: &[char], i: usize, out: &mut String) -> usize {
    match chars.get(i + 1) {
        Some(&n) if is_break(n) => {
            let (end, breaks) = blank_run(chars, i + 1);
            if !breaks.iter().any(|b| is_sep(*b)) {
                out.extend(&chars[i..end]);
            } else {
                emit_folded(&breaks[1..].iter().collect::<String>(), '"', out);
            }
            end
        }
        Some(&n) => {
            out.push('\\');
            out.push(n);
            i + 2
        }
        None => {
            out.push('\\');
            i + 1
        }
    }
}

/// The blanks and breaks from `i`: where they end, and the breaks in order
/// (`\r\n`, `\r`, `\n` as `\n`; LS and PS as themselves).
fn blank_run(chars: &[char], i: usize) -> (usize, Vec<char>) {
    let mut breaks = Vec::new();
    let mut j = i;
    while let Some(&c) = chars.get(j) {
        match c {
            ' ' | '\t' => {}
            '\r' if chars.get(j + 1) == Some(&'\n') => {}
            '\r' | '\n' => breaks.push('\n'),
            c if is_sep(c) => breaks.push(c),
            _ => break,
        }
        j += 1;
    }
    (j, breaks)
}

/// What PyYAML makes of a run of breaks inside quotes: a first break that
/// is LS or PS is kept with every later one; a first `\n` becomes a space
/// when it is alone and disappears otherwise.
fn pyyaml_fold(breaks: &[char]) -> String {
    let rest: String = breaks[1..].iter().collect();
    match breaks[0] {
        c if is_sep(c) => format!("{c}{rest}"),
        _ if rest.is_empty() => " ".into(),
        _ => rest,
    }
}

/// Write `text` (spaces, `\n`, LS, PS) so YAML 1.2 reads it back inside
/// quotes `q`: escapes in double quotes; in single quotes, a run of n line
/// feeds as n + 1 line breaks (YAML folds one away), LS/PS as themselves.
fn emit_folded(text: &str, q: char, out: &mut String) {
    if q == '"' {
        for c in text.chars() {
            match c {
                '\n' => out.push_str("\\n"),
                '\u{2028}' => out.push_str("\\L"),
                '\u{2029}' => out.push_str("\\P"),
                c => out.push(c),
            }
        }
        return;
    }
    let mut feeds = 0;
    for c in text.chars().chain(['\0']) {
        if c == '\n' {
            feeds += 1;
            continue;
        }
        if feeds > 0 {
            out.push_str(&"\n".repeat(feeds + 1));
            out.push_str("  ");
            feeds = 0;
        }
        if c != '\0' {
            out.push(c);
        }
    }
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
