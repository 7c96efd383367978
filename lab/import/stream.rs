//! Streaming over the elements of a JSON array, one element at a time.
//!
//! The array is either the whole document or the value of one of a few keys
//! of a top-level object (`{"messages": [...]}`, a `.traj`'s `"history"`).
//! Other keys are skipped without being built ([`IgnoredAny`]), so a large
//! `trajectory` next to the `history` costs no memory. Each element is handed
//! to a callback as a [`Value`] together with the 1-based line its first byte
//! is on; it is dropped after the callback returns.
//!
//! Line numbers come from counting newlines in the bytes serde_json has pulled
//! from the reader: serde_json reads through `io::Bytes` one byte at a time
//! and has already consumed the element's first byte (its peek) when it hands
//! the element to the seed, so the count is exact.

use std::cell::Cell;
use std::fmt;
use std::io::{self, BufRead, Read};
use std::path::Path;
use std::rc::Rc;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use crate::error::{LabError, LabResult};

/// How a stream ended without a hard error.
#[derive(Debug, Default)]
pub(crate) struct StreamEnd {
    /// The document ended inside a value: (line, column) of the end.
    pub(crate) truncated: Option<(usize, usize)>,
    /// Captured top-level keys (only for an object document).
    pub(crate) captured: Vec<(String, Value)>,
}

/// Counts newlines in the bytes read through it.
struct Counting<R> {
    inner: R,
    newlines: Rc<Cell<usize>>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        let nl = buf[..n].iter().filter(|&&b| b == b'\n').count();
        self.newlines.set(self.newlines.get() + nl);
        Ok(n)
    }
}

type Callback<'f> = dyn FnMut(Value, usize) -> LabResult<()> + 'f;

struct Ctx<'c, 'f> {
    f: &'c mut Callback<'f>,
    newlines: Rc<Cell<usize>>,
    keys: &'c [&'c str],
    capture: &'c [&'c str],
    captured: Vec<(String, Value)>,
    found: bool,
    failed: Option<LabError>,
}

/// Stream the elements of the document's array.
///
/// `keys`: when the document is an object, the keys whose value is the array
/// (the first present wins; later ones are streamed too). `capture`: object
/// keys whose values are returned whole. A bare array is always accepted.
pub(crate) fn for_each_element<R: BufRead>(
    reader: R,
    source: &Path,
    keys: &[&str],
    capture: &[&str],
    mut f: impl FnMut(Value, usize) -> LabResult<()>,
) -> LabResult<StreamEnd> {
    let newlines = Rc::new(Cell::new(0));
    let counting = Counting {
        inner: reader,
        newlines: Rc::clone(&newlines),
    };
    let mut ctx = Ctx {
        f: &mut f,
        newlines,
        keys,
        capture,
        captured: Vec::new(),
        found: false,
        failed: None,
    };
    let mut de = serde_json::Deserializer::from_reader(counting);
    let result = Top(&mut ctx).deserialize(&mut de).and_then(|()| de.end());
    if let Some(err) = ctx.failed.take() {
        return Err(err);
    }
    match result {
        Ok(()) => {}
        Err(e) if e.is_eof() => {
            return Ok(StreamEnd {
                truncated: Some((e.line(), e.column())),
                captured: ctx.captured,
            })
        }
        Err(e) if e.is_io() => {
            return Err(LabError::io(
                "reading transcript",
                source,
                io::Error::other(e.to_string()),
            ))
        }
        Err(e) => {
            return Err(LabError::Input {
                file: source.to_path_buf(),
                line: e.line(),
                column: e.column(),
                message: format!("invalid JSON: {}", without_position(&e)),
                fix: "the file must be one JSON document; repair the JSON at this position"
                    .to_string(),
            })
        }
    }
    if !ctx.found {
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
            fix: "pass a file of this format, or name the right format".to_string(),
        });
    }
    Ok(StreamEnd {
        truncated: None,
        captured: ctx.captured,
    })
}

/// serde_json's message without its " at line L column C" suffix.
pub(crate) fn without_position(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

struct Top<'a, 'c, 'f>(&'a mut Ctx<'c, 'f>);

impl<'de> DeserializeSeed<'de> for Top<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Top<'_, '_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON array or object")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        elements(self.0, seq)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if self.0.keys.contains(&key.as_str()) {
                map.next_value_seed(ArraySeed(&mut *self.0))?;
            } else if self.0.capture.contains(&key.as_str()) {
                let v: Value = map.next_value()?;
                self.0.captured.push((key, v));
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

fn elements<'de, A: SeqAccess<'de>>(ctx: &mut Ctx<'_, '_>, mut seq: A) -> Result<(), A::Error> {
    ctx.found = true;
    while seq.next_element_seed(Element(&mut *ctx))?.is_some() {}
    Ok(())
}

struct ArraySeed<'a, 'c, 'f>(&'a mut Ctx<'c, 'f>);

impl<'de> DeserializeSeed<'de> for ArraySeed<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ArraySeed<'_, '_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON array")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        elements(self.0, seq)
    }
}

struct Element<'a, 'c, 'f>(&'a mut Ctx<'c, 'f>);

impl<'de> DeserializeSeed<'de> for Element<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        let line = self.0.newlines.get() + 1;
        let value = Value::deserialize(d)?;
        if let Err(e) = (self.0.f)(value, line) {
            self.0.failed = Some(e);
            return Err(de::Error::custom("import aborted"));
        }
        Ok(())
    }
}
