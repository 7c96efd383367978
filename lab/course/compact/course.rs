//! Python details the course's compaction code relies on, each in one small function.
//!
//! The course (`s08_context_compact/code.py`) is Python: it splits lines with
//! `str.splitlines()`, reads saved previews back in text mode (universal
//! newlines), prints paths through `pathlib.Path`, matches its archive marker
//! with a `str` regex whose `\d` is any Unicode decimal digit, checks that a
//! path `resolve()`s inside a directory, and names transcripts with
//! `uuid.uuid4().hex`. Reproducing these byte for byte is what lets ctxlab
//! agree with the course at every threshold (the marker and the transcript
//! path are inside the size estimate).

use std::path::Path;

/// `transcript_<32 hex>.jsonl`: the course's name length (`uuid4().hex` is 32
/// hex digits), but derived from the archive counter so runs are reproducible.
pub fn transcript_name(n: usize) -> String {
    // Digit by digit: a zero-padded `format!` cost as much as writing the
    // transcript's path.
    // The counter fits the last 16 digits: the first 16 are zeros.
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let n = n as u64;
    let mut digits = [0u8; 16];
    for (i, d) in digits.iter_mut().enumerate() {
        *d = HEX[((n >> (4 * (15 - i))) & 0xf) as usize];
    }
    let mut s = String::with_capacity(49);
    s.push_str("transcript_0000000000000000");
    s.push_str(std::str::from_utf8(&digits).unwrap_or_default());
    s.push_str(".jsonl");
    s
}

/// A char Python's `str.splitlines()` splits at (`\r\n` is two of them).
pub fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r'
            | '\u{b}'
            | '\u{c}'
            | '\u{1c}'
            | '\u{1d}'
            | '\u{1e}'
            | '\u{85}'
            | '\u{2028}'
            | '\u{2029}'
    )
}

/// Byte index of the first char of `s` that [`is_line_break`], found a
/// block of bytes at a time: every such char starts with a byte below 0x20,
/// or 0xC2 (U+0085) or 0xE2 (U+2028, U+2029), and a block without any of
/// those is skipped by one vectorised test instead of a char-by-char match.
pub fn find_line_break(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut start = 0;
    while let Some(i) =
        crate::scan::find(&bytes[start..], crate::scan::LINE_BREAK_LEAD).map(|i| start + i)
    {
        // These lead bytes never continue a char: `i` is a char boundary.
        if s[i..].chars().next().is_some_and(is_line_break) {
            return Some(i);
        }
        start = i + 1;
    }
    None
}

/// Python's `str.splitlines()`: splits at `\n`, `\r`, `\r\n`, `\v`, `\f`,
/// `\x1c`–`\x1e`, `\x85`, U+2028 and U+2029, dropping the separators.
pub fn splitlines(s: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut it = s.char_indices().peekable();
    while let Some((i, c)) = it.next() {
        let end = match c {
            '\r' if it.peek().map(|&(_, n)| n) == Some('\n') => {
                it.next();
                i + 2
            }
            c if is_line_break(c) => i + c.len_utf8(),
            _ => continue,
        };
        lines.push(&s[start..i]);
        start = end;
    }
    if start < s.len() {
        lines.push(&s[start..]);
    }
    lines
}

/// `open(path, encoding="utf-8").read(n)`: universal newlines (`\r\n` and a
/// lone `\r` become `\n`), then the first `n` chars.
pub fn text_mode_prefix(text: &str, n: usize) -> String {
    let mut out = String::new();
    let mut it = text.chars().peekable();
    while out.chars().count() < n {
        let Some(c) = it.next() else { break };
        if c == '\r' {
            if it.peek() == Some(&'\n') {
                it.next();
            }
            out.push('\n');
        } else {
            out.push(c);
        }
    }
    out
}

/// Course main's preview of an already-saved result: the saved file read back
/// in text mode, or `output`'s own prefix when the file cannot be read.
/// Undecodable bytes count as unreadable (Python would raise instead; no file
/// the lab writes is undecodable).
pub fn saved_preview(saved: Option<Vec<u8>>, output: &str, n: usize) -> String {
    match saved.and_then(|b| String::from_utf8(b).ok()) {
        Some(text) => text_mode_prefix(&text, n),
        None => output.chars().take(n).collect(),
    }
}

/// `str(Path(p))` for a POSIX path: repeated separators and `.` components
/// dropped, no trailing separator, a leading `//` (exactly two) kept.
pub fn path_str(p: &str) -> String {
    let root = if p.starts_with("//") && !p.starts_with("///") {
        "//"
    } else if p.starts_with('/') {
        "/"
    } else {
        ""
    };
    let parts: Vec<&str> = p
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect();
    let joined = format!("{root}{}", parts.join("/"));
    if joined.is_empty() {
        ".".to_string()
    } else {
        joined
    }
}

/// `Path(p).resolve().is_relative_to(dir.resolve()) and Path(p).is_file()`:
/// an existing file whose real path (symlinks and `..` resolved) lies inside
/// `dir`. A relative `p` resolves against the process's working directory, as
/// in the course (whose working directory is its workspace).
pub fn file_resolves_inside(fs: &dyn crate::storage::Storage, p: &str, dir: &Path) -> bool {
    let path = Path::new(p);
    if !fs.is_file(path) {
        return false;
    }
    match (fs.canonicalize(path), fs.canonicalize(dir)) {
        (Ok(real), Ok(root)) => real.starts_with(root),
        _ => false,
    }
}

/// `"\n".join(texts).strip() or "(empty summary)"`: how the course reads the
/// summary model's answer. Python's `strip()` also removes `\x1c`–`\x1f`.
pub fn summary_text(answer: &str) -> String {
    let trimmed =
        answer.trim_matches(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c));
    if trimmed.is_empty() {
        "(empty summary)".to_string()
    } else {
        trimmed.to_string()
    }
}

/// First code point of each run of ten Unicode decimal digits (category Nd,
/// Unicode 14 as in Python 3.11): what `\d` matches in a Python `str` regex.
const ND_RUNS: [u32; 66] = [
    0x30, 0x660, 0x6f0, 0x7c0, 0x966, 0x9e6, 0xa66, 0xae6, 0xb66, 0xbe6, 0xc66, 0xce6, 0xd66,
    0xde6, 0xe50, 0xed0, 0xf20, 0x1040, 0x1090, 0x17e0, 0x1810, 0x1946, 0x19d0, 0x1a80, 0x1a90,
    0x1b50, 0x1bb0, 0x1c40, 0x1c50, 0xa620, 0xa8d0, 0xa900, 0xa9d0, 0xa9f0, 0xaa50, 0xabf0, 0xff10,
    0x104a0, 0x10d30, 0x11066, 0x110f0, 0x11136, 0x111d0, 0x112f0, 0x11450, 0x114d0, 0x11650,
    0x116c0, 0x11730, 0x118e0, 0x11950, 0x11c50, 0x11d50, 0x11da0, 0x16a60, 0x16ac0, 0x16b50,
    0x1d7ce, 0x1d7d8, 0x1d7e2, 0x1d7ec, 0x1d7f6, 0x1e140, 0x1e2f0, 0x1e950, 0x1fbf0,
];

/// Does Python's `\d` match `c`?
pub fn is_py_digit(c: char) -> bool {
    let c = c as u32;
    ND_RUNS.iter().any(|&s| (s..s + 10).contains(&c))
}

/// The path of `re.fullmatch(r"\[\d+ messages archived at (.+)\]", content)`:
/// Unicode digits, and a path without `\n` (`.` does not match it).
pub fn archive_marker_path(content: &str) -> Option<&str> {
    let inner = content.strip_prefix('[')?.strip_suffix(']')?;
    let (count, path) = inner.split_once(" messages archived at ")?;
    let ok = !count.is_empty()
        && count.chars().all(is_py_digit)
        && !path.is_empty()
        && !path.contains('\n');
    ok.then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transcript_names_have_the_uuid_hex_length() {
        // len("transcript_" + uuid.uuid4().hex + ".jsonl") == 49
        assert_eq!(transcript_name(1).len(), 49);
        assert_eq!(
            transcript_name(255),
            "transcript_000000000000000000000000000000ff.jsonl"
        );
        for n in [0, 9, 10, 4096, 0xdead_beef, usize::MAX] {
            assert_eq!(transcript_name(n), format!("transcript_{n:032x}.jsonl"));
        }
    }

    proptest::proptest! {
        #[test]
        fn find_line_break_equals_the_char_scan(
            s in "[a\t\n\r\u{b}\u{1f}\u{85}\u{a0}\u{2027}\u{2028}\u{2029}\u{e000}é]{0,80}"
        ) {
            proptest::prop_assert_eq!(find_line_break(&s), s.find(is_line_break));
        }
    }

    #[test]
    fn splitlines_splits_where_python_does() {
        // "a\rb\r\nc\x0bd\x1ce\x85f\u2028g\n".splitlines()
        //   == ['a', 'b', 'c', 'd', 'e', 'f', 'g']
        let s = "a\rb\r\nc\u{b}d\u{1c}e\u{85}f\u{2028}g\n";
        assert_eq!(splitlines(s), ["a", "b", "c", "d", "e", "f", "g"]);
        // "x\n\ny".splitlines() == ['x', '', 'y']; "".splitlines() == []
        assert_eq!(splitlines("x\n\ny"), ["x", "", "y"]);
        assert!(splitlines("").is_empty());
        // Tab and \x1f are not line breaks.
        assert_eq!(splitlines("a\tb\u{1f}c"), ["a\tb\u{1f}c"]);
    }

    #[test]
    fn text_mode_reads_translate_newlines_before_counting() {
        // open(f, encoding="utf-8").read(5) of b"ab\r\ncd\ref" == "ab\ncd"
        assert_eq!(text_mode_prefix("ab\r\ncd\ref", 5), "ab\ncd");
        assert_eq!(text_mode_prefix("ab\r\ncd\ref", 100), "ab\ncd\nef");
        assert_eq!(saved_preview(None, "out\r\nput", 4), "out\r");
        assert_eq!(saved_preview(Some(vec![0xff]), "xyz", 2), "xy");
        assert_eq!(saved_preview(Some(b"q\r\nr".to_vec()), "xyz", 9), "q\nr");
    }

    #[test]
    fn paths_print_as_pathlib_prints_them() {
        // str(Path(p)) for each p
        assert_eq!(path_str("/a//b/./c/"), "/a/b/c");
        assert_eq!(path_str("//a/b"), "//a/b");
        assert_eq!(path_str("///a"), "/a");
        assert_eq!(path_str("a/../b"), "a/../b");
        assert_eq!(path_str("./"), ".");
    }

    #[test]
    fn summaries_are_stripped_as_python_strips() {
        // " \x1fa b\n".strip() == "a b"; "".strip() or "(empty summary)"
        assert_eq!(summary_text(" \u{1f}a b\n"), "a b");
        assert_eq!(summary_text(" \n\t"), "(empty summary)");
    }

    #[test]
    fn marker_digits_are_unicode_digits() {
        // re.fullmatch(r"\[\d+ messages archived at (.+)\]", "[١٢ messages archived at /t]")
        assert_eq!(
            archive_marker_path("[\u{661}\u{662} messages archived at /t]"),
            Some("/t")
        );
        assert_eq!(
            archive_marker_path("[12 messages archived at /t]"),
            Some("/t")
        );
        // '²' is No, not Nd; '\n' is not matched by '.'
        assert_eq!(
            archive_marker_path("[\u{b2} messages archived at /t]"),
            None
        );
        assert_eq!(archive_marker_path("[1 messages archived at /a\nb]"), None);
        assert!(is_py_digit('\u{ff19}') && !is_py_digit('\u{2160}'));
    }

    #[test]
    fn resolving_rejects_dot_dot_escapes() {
        let tmp = tempfile::tempdir().unwrap();
        let inner = tmp.path().join("in");
        std::fs::create_dir(&inner).unwrap();
        std::fs::write(tmp.path().join("outside.txt"), "x").unwrap();
        std::fs::write(inner.join("ok.txt"), "x").unwrap();
        let escape = format!("{}/../outside.txt", inner.display());
        assert!(!file_resolves_inside(
            &crate::storage::DiskFs,
            &escape,
            &inner
        ));
        let ok = format!("{}/ok.txt", inner.display());
        assert!(file_resolves_inside(&crate::storage::DiskFs, &ok, &inner));
        assert!(!file_resolves_inside(
            &crate::storage::DiskFs,
            &format!("{}/no.txt", inner.display()),
            &inner
        ));
    }
}
