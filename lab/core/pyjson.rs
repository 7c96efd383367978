//! JSON text exactly as Python's `json.dumps(obj, ensure_ascii=False)` writes it.
//!
//! The course sizes its context with `len(json.dumps(messages, default=str,
//! ensure_ascii=False))`, feeds the same text to its summary model, and archives
//! transcripts with `json.dumps(...)`. Python's default separators are `", "` and
//! `": "`, and it prints floats with `repr` (`1e-07`, `1e+16`, `1.0`), so
//! serde_json's compact output is shorter and crosses limits elsewhere. Field order
//! is the serialisation order of the value, which for our message types is the
//! course's dict order.
//!
//! Strings are escaped as Python escapes them with `ensure_ascii=False`: `"` and
//! `\` and the controls below U+0020 (`\n`, `\r`, `\t`, `\b`, `\f` by name, the
//! rest as lowercase `\u00XX`); everything else, DEL and U+2028 included, is kept.
//! serde_json escapes the same set the same way, so only separators and numbers
//! need a formatter of our own.

use serde::Serialize;
use serde_json::ser::Formatter;
use std::io::{self, Write};

/// A serde_json formatter with Python's separators and float `repr`.
#[derive(Debug, Default, Clone, Copy)]
pub struct PyFormatter;

impl Formatter for PyFormatter {
    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if first {
            Ok(())
        } else {
            w.write_all(b", ")
        }
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if first {
            Ok(())
        } else {
            w.write_all(b", ")
        }
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    fn write_f64<W: ?Sized + Write>(&mut self, w: &mut W, value: f64) -> io::Result<()> {
        w.write_all(float_repr(value).as_bytes())
    }

    fn write_f32<W: ?Sized + Write>(&mut self, w: &mut W, value: f32) -> io::Result<()> {
        w.write_all(float_repr(f64::from(value)).as_bytes())
    }
}

/// `json.dumps(value, ensure_ascii=False)`.
pub fn dumps<T: Serialize + ?Sized>(value: &T) -> String {
    let mut out = Vec::with_capacity(256);
    if !write_value(&mut out, value) {
        return String::new();
    }
    String::from_utf8(out).unwrap_or_default()
}

/// Append [`dumps`] of `value` to `out` (no string of its own: the transcript
/// writer appends every tool input); `false`, with `out` as it was, when it
/// does not serialise.
pub fn write_value<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) -> bool {
    let len = out.len();
    let mut ser = serde_json::Serializer::with_formatter(&mut *out, PyFormatter);
    // Our values are trees of strings, numbers and maps with string keys: they
    // cannot fail to serialise, and a failure would be a bug in a type of ours.
    if value.serialize(&mut ser).is_err() {
        out.truncate(len);
        return false;
    }
    true
}

/// Append the JSON string literal of `s` as [`dumps`] writes it.
///
/// Written by hand for the writers that emit many long strings (archived
/// transcripts): a string with nothing to escape, the common case, is
/// found by one vectorised pass and copied whole, where serde_json's
/// formatter looks every byte up in its escape table.
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    crate::scan::for_each_hit(bytes, crate::scan::ESCAPE, |i| {
        out.extend_from_slice(&bytes[start..i]);
        start = i + 1;
        match bytes[i] {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            b => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 0xf)]);
            }
        }
    });
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// `len(json.dumps(value, ensure_ascii=False))`: the length in characters
/// (Python code points), not bytes.
pub fn dumps_len<T: Serialize + ?Sized>(value: &T) -> usize {
    dumps(value).chars().count()
}

/// Python's `float.__repr__` as `json.dumps` uses it: the shortest digits that
/// round-trip; positional between 1e-4 and 1e16, scientific with a signed
/// two-digit exponent outside; `Infinity`, `-Infinity` and `NaN` as the json
/// module writes them.
pub fn float_repr(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    // Rust's `{:e}` gives the shortest round-trip digits: "1.2345e-7".
    let sci = format!("{v:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if (-4..16).contains(&exp) {
        format!("{sign}{}", positional(&digits, exp))
    } else {
        let m = if digits.len() == 1 {
            digits
        } else {
            format!("{}.{}", &digits[..1], &digits[1..])
        };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{m}e{esign}{:02}", exp.abs())
    }
}

/// Digits `d1d2d3…` times 10^(exp - len + 1), written positionally with at least
/// one digit after the point (`100.0`, `0.001`, `1.5`).
fn positional(digits: &str, exp: i32) -> String {
    let n = digits.len() as i32;
    if exp < 0 {
        let zeros = "0".repeat((-exp - 1) as usize);
        return format!("0.{zeros}{digits}");
    }
    if exp + 1 >= n {
        let zeros = "0".repeat((exp + 1 - n) as usize);
        return format!("{digits}{zeros}.0");
    }
    let (int, frac) = digits.split_at((exp + 1) as usize);
    format!("{int}.{frac}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn separators_are_pythons() {
        // json.dumps({"a": [1, 2], "b": {"c": "d"}}) == '{"a": [1, 2], "b": {"c": "d"}}'
        let v = json!({"a": [1, 2], "b": {"c": "d"}});
        assert_eq!(dumps(&v), r#"{"a": [1, 2], "b": {"c": "d"}}"#);
        assert_eq!(dumps(&json!([])), "[]");
        assert_eq!(dumps(&json!({})), "{}");
    }

    #[test]
    fn strings_escape_as_python_with_ensure_ascii_false() {
        // json.dumps('a"\\\n\x01\x7f\u2028é', ensure_ascii=False)
        //   == '"a\\"\\\\\\n\\u0001\x7f\u2028é"'
        let s = "a\"\\\n\u{1}\u{7f}\u{2028}é";
        assert_eq!(dumps(&s), "\"a\\\"\\\\\\n\\u0001\u{7f}\u{2028}é\"");
        assert_eq!(dumps_len(&"é"), 3);
    }

    proptest::proptest! {
        #[test]
        fn write_str_equals_dumps(s in "(?s)[\\x00-\\x21\"\\\\a\u{7f}é\u{2028}]{0,200}") {
            let mut out = Vec::new();
            write_str(&mut out, &s);
            proptest::prop_assert_eq!(String::from_utf8(out).unwrap(), dumps(&s));
        }
    }

    #[test]
    fn floats_print_as_python_repr() {
        // Each right-hand side is what Python 3.11 prints for json.dumps(x).
        let cases = [
            (1e-7, "1e-07"),
            (1.5e-7, "1.5e-07"),
            (0.0001, "0.0001"),
            (0.5, "0.5"),
            (1.0, "1.0"),
            (100.0, "100.0"),
            (123.456, "123.456"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.2345e20, "1.2345e+20"),
            (-2.5e-5, "-2.5e-05"),
            (1e100, "1e+100"),
            (-0.0, "-0.0"),
            (f64::INFINITY, "Infinity"),
        ];
        for (x, want) in cases {
            assert_eq!(float_repr(x), want, "{x}");
        }
        // serde_json::Value maps are sorted by key (no preserve_order feature).
        let v = json!({"x": 1e-7, "n": 3});
        assert_eq!(dumps(&v), r#"{"n": 3, "x": 1e-07}"#);
    }
}
