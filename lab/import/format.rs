//! What a transcript format is to the lab: its descriptor ([`Format`],
//! one per format module, registered in `format_list.rs`), what its reader
//! is given (`Input`) and what its content test reads ([`Head`]). Below
//! every format module: it names none of them.

use std::io::BufRead;
use std::path::Path;

use serde_json::{Map, Value};

use crate::error::{LabError, LabResult};
use crate::{ImportOptions, ImportedSession, Sink, TranscriptFormat};

/// What the lab knows about one transcript format besides its reader's
/// code: each format's module holds one as `pub const FORMAT`.
pub struct Format {
    /// The stable lower-case name (`--format-in NAME`, reports, JSON).
    pub name: &'static str,
    /// Where its content test runs among the others' (lower first) and the
    /// test itself ([`Head`]): a file two tests would both take goes to the
    /// lower rank, so specific shapes rank before the generic ones
    /// (`claude_jsonl` 75, `openai` 80, `anthropic` 90). `None`: only
    /// `--format-in` names it.
    pub sniff: Option<(u8, Sniff)>,
    /// Endings of the file name (`.traj.json`) that decide when the
    /// content does not; checked before any format's `extensions`.
    pub name_endings: &'static [&'static str],
    /// File extensions (`jsonl`) that decide when neither the content nor a
    /// name ending does.
    pub extensions: &'static [&'static str],
    /// The zoo port of the product that wrote the log, set beside the
    /// recorded session in a replay (`replay::envelope::product_policy`).
    pub product: Option<&'static str>,
    /// The importer marks the product's compactions in
    /// `real_compactions` by index, and that index alone says a message
    /// opens a compacted context (the summary's text carries no marker;
    /// [`crate::opens_product_compaction`]).
    pub compaction_by_index: bool,
    /// Its reader.
    pub(crate) read: ReadFn,
}

/// A format's content test.
pub type Sniff = fn(&Head<'_>) -> bool;

/// A format's reader: every session of one input.
pub(crate) type ReadFn = fn(Input<'_>) -> LabResult<Vec<ImportedSession>>;

/// What a reader is given.
pub(crate) struct Input<'a> {
    /// The bytes, from their start.
    pub(crate) reader: &'a mut dyn BufRead,
    /// The file they come from (diagnostics name it).
    pub(crate) source: &'a Path,
    /// The format being read.
    pub(crate) format: TranscriptFormat,
    /// `--strict`, `--format-in`.
    pub(crate) options: &'a ImportOptions,
    /// The file the reader reads from its start, when there is one.
    pub(crate) backing: Option<Backing>,
    /// Where diagnostics go.
    pub(crate) sink: Sink<'a>,
}

impl Input<'_> {
    /// One session, read into an empty session of this format by `read`;
    /// its diagnostics are handed to it at the end.
    pub(crate) fn one(
        mut self,
        read: impl FnOnce(&mut dyn BufRead, &mut ImportedSession, &mut Sink<'_>) -> LabResult<()>,
    ) -> LabResult<Vec<ImportedSession>> {
        let mut session = ImportedSession::new(self.source, self.format);
        read(self.reader, &mut session, &mut self.sink)?;
        self.sink.finish_into(&mut session);
        Ok(vec![session])
    }

    /// The input starts with SQLite's file header (a session database).
    pub(crate) fn is_sqlite(&mut self) -> LabResult<bool> {
        let head = self
            .reader
            .fill_buf()
            .map_err(|e| LabError::io("reading transcript", self.source, e))?;
        Ok(head.starts_with(SQLITE_HEADER))
    }
}

/// The first bytes of an input, as the content tests read them.
pub struct Head<'a> {
    /// The bytes as read.
    pub raw: &'a [u8],
    /// After a UTF-8 byte-order mark, leading whitespace and `//` comment
    /// lines.
    pub text: &'a [u8],
    /// `text` without any whitespace (inside strings too), for an array or
    /// an object: enough to look for `"key":` markers whatever the
    /// pretty-printing; empty otherwise.
    pub compact: String,
    /// The first line of `text`.
    pub first: &'a [u8],
    /// The first line parsed as a JSON object, when `text` is an object
    /// whose first line is one whole object.
    pub first_object: Option<Map<String, Value>>,
    /// Another line starting with `{` follows the first (JSON Lines).
    pub another_record: bool,
}

impl<'a> Head<'a> {
    /// The head of an input starting with `raw`.
    pub fn new(raw: &'a [u8]) -> Self {
        let text = skip_preamble(raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(raw));
        let line_end = text.iter().position(|&b| b == b'\n');
        let first = &text[..line_end.unwrap_or(text.len())];
        let mut head = Head {
            raw,
            text,
            compact: String::new(),
            first,
            first_object: None,
            another_record: false,
        };
        if head.is_array() || head.is_object() {
            head.compact = compact(text);
        }
        if head.is_object() {
            if let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(first) {
                head.first_object = Some(map);
            }
            head.another_record =
                line_end.is_some_and(|e| skip_preamble(&text[e..]).first() == Some(&b'{'));
        }
        head
    }

    /// The text is a JSON array.
    pub fn is_array(&self) -> bool {
        self.text.first() == Some(&b'[')
    }

    /// The text is a JSON object (a document, or JSON Lines).
    pub fn is_object(&self) -> bool {
        self.text.first() == Some(&b'{')
    }
}

/// The first bytes of an SQLite database (goose's `sessions.db`,
/// opencode's `opencode.db`).
pub const SQLITE_HEADER: &[u8] = b"SQLite format 3\0";

/// The file a Claude Code log is read from, when the import reads one:
/// message contents are read back from it instead of kept, and with `lazy`
/// the main conversation stays there for the replay to stream.
#[derive(Debug, Clone)]
pub(crate) struct Backing {
    pub(crate) path: std::path::PathBuf,
    pub(crate) lazy: bool,
}

/// Skip whitespace and `//` comment lines.
pub(crate) fn skip_preamble(mut text: &[u8]) -> &[u8] {
    loop {
        text = text.trim_ascii_start();
        if !text.starts_with(b"//") {
            return text;
        }
        match text.iter().position(|&b| b == b'\n') {
            Some(i) => text = &text[i + 1..],
            None => return &[],
        }
    }
}

/// The text without any whitespace (inside strings too): enough to look
/// for `"key":` markers whatever the pretty-printing.
pub(crate) fn compact(text: &[u8]) -> String {
    String::from_utf8_lossy(text)
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect()
}
