//! A small, strict YAML-frontmatter reader/writer for memory files.
//!
//! The lab has no YAML crate, and memory files only ever hold three scalar
//! keys, so this accepts exactly that subset and rejects everything else with
//! a line and column: a lenient parser would let a malformed file silently
//! lose its metadata, which is the kind of loss the lab is meant to expose.
//!
//! Format (what [`render`] writes and [`parse`] accepts):
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
//!
//! Values are plain scalars when that is unambiguous, otherwise JSON-style
//! double-quoted strings (a valid subset of YAML double-quoted scalars).

/// The three metadata fields and the body of one memory file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// `name:` value.
    pub name: String,
    /// `description:` value.
    pub description: String,
    /// `type:` value (validated by the store, not here).
    pub mem_type: String,
    /// Everything after the closing `---` and one blank line, trimmed.
    pub body: String,
}

/// Where and why a file failed to parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What was found and what was expected.
    pub message: String,
}

const KEYS: [&str; 3] = ["name", "description", "type"];

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

/// Render one scalar: plain when safe, JSON-quoted otherwise.
fn scalar(v: &str) -> String {
    if is_plain_safe(v) {
        v.to_string()
    } else {
        // JSON string syntax is valid YAML double-quoted syntax.
        serde_json::Value::String(v.to_string()).to_string()
    }
}

/// Would YAML read `v` back unchanged as a plain string scalar?
fn is_plain_safe(v: &str) -> bool {
    let Some(first) = v.chars().next() else {
        return false;
    };
    if v.trim() != v || v.chars().any(|c| c.is_control()) {
        return false;
    }
    if "-?:,[]{}#&*!|>'\"%@`".contains(first) {
        return false;
    }
    if v.contains(": ") || v.contains(" #") || v.ends_with(':') {
        return false;
    }
    // Words YAML would turn into booleans, nulls or numbers.
    let lower = v.to_ascii_lowercase();
    let special = ["true", "false", "yes", "no", "on", "off", "null", "~"];
    if special.contains(&lower.as_str()) || v.parse::<f64>().is_ok() {
        return false;
    }
    true
}

/// Parse a memory file strictly.
pub fn parse(text: &str) -> Result<Document, ParseError> {
    let err = |line: usize, column: usize, message: String| ParseError {
        line,
        column,
        message,
    };
    let mut lines = text.split('\n');
    match lines.next() {
        Some("---") => {}
        other => {
            return Err(err(
                1,
                1,
                format!(
                    "expected `---` opening the frontmatter, found {:?}",
                    other.unwrap_or("")
                ),
            ))
        }
    }
    let mut values: [Option<String>; 3] = [None, None, None];
    let mut line_no = 1;
    let mut closed = false;
    for line in lines.by_ref() {
        line_no += 1;
        if line == "---" {
            closed = true;
            break;
        }
        let Some((key, rest)) = line.split_once(':') else {
            return Err(err(
                line_no,
                1,
                format!("expected `key: value` with key one of {KEYS:?}, found {line:?}"),
            ));
        };
        let Some(slot) = KEYS.iter().position(|k| *k == key) else {
            return Err(err(
                line_no,
                1,
                format!("unknown frontmatter key {key:?}, expected one of {KEYS:?}"),
            ));
        };
        if values[slot].is_some() {
            return Err(err(
                line_no,
                1,
                format!("duplicate frontmatter key {key:?}"),
            ));
        }
        let column = key.len() + 2;
        values[slot] = Some(parse_scalar(rest.trim()).map_err(|m| err(line_no, column, m))?);
    }
    if !closed {
        return Err(err(
            line_no,
            1,
            "frontmatter is not closed by a `---` line".into(),
        ));
    }
    for (slot, key) in KEYS.iter().enumerate() {
        if values[slot].is_none() {
            return Err(err(
                line_no,
                1,
                format!("frontmatter is missing key {key:?}"),
            ));
        }
    }
    let rest: Vec<&str> = lines.collect();
    let body = rest.join("\n").trim().to_string();
    let [name, description, mem_type] = values.map(Option::unwrap_or_default);
    Ok(Document {
        name,
        description,
        mem_type,
        body,
    })
}

/// Parse one scalar value: double-quoted (JSON escapes), single-quoted, or plain.
fn parse_scalar(v: &str) -> Result<String, String> {
    if v.starts_with('"') {
        return serde_json::from_str::<String>(v)
            .map_err(|e| format!("bad double-quoted value {v:?}: {e}"));
    }
    if let Some(inner) = v.strip_prefix('\'') {
        let Some(inner) = inner.strip_suffix('\'') else {
            return Err(format!("unterminated single-quoted value {v:?}"));
        };
        return Ok(inner.replace("''", "'"));
    }
    if v.is_empty() {
        return Err("empty value; expected a non-empty string".into());
    }
    Ok(v.to_string())
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
    fn rejects_unknown_missing_and_unclosed() {
        let e = parse("---\nname: a\nextra: b\n---\n").unwrap_err();
        assert_eq!((e.line, e.column), (3, 1));
        assert!(e.message.contains("unknown frontmatter key"));
        let e = parse("---\nname: a\ndescription: b\n---\n\nx").unwrap_err();
        assert!(e.message.contains("missing key \"type\""), "{e:?}");
        let e = parse("---\nname: a").unwrap_err();
        assert!(e.message.contains("not closed"));
        let e = parse("no frontmatter").unwrap_err();
        assert_eq!(e.line, 1);
        let e = parse("---\nname: \"unterminated\n---\n").unwrap_err();
        assert_eq!((e.line, e.column), (2, 6));
    }
}
