//! Parquet corpora: one session per row, read row group by row group.
//!
//! The public trajectory datasets (nebius/SWE-agent-trajectories,
//! SWE-rebench-openhands-trajectories, SWE-Zero, …) ship as Parquet shards
//! with one trajectory per row. A Parquet file is a corpus like a tar
//! archive ([`super::corpus`]): each row becomes one session's JSON, which
//! then goes through the normal sniff and import path, and is handed on
//! before the next row is read. Only the session column is decoded
//! (a projection), one page at a time, so memory is bounded by a row group's
//! pages and the largest session, not by the file.
//!
//! The session column is the first of [`SESSION_COLUMNS`] present:
//!
//! * a string (or binary) column holds one session's document in any
//!   supported format (a message array, `{"messages": […]}`, a SWE-agent
//!   `.traj`, a Claude Code log, …), read as is;
//! * a list of structs holds the messages themselves (`role`, `content` or
//!   `text`, and whatever else the struct has: `tool_calls`, `tool_call_id`,
//!   `name`): each becomes a JSON object (null fields left out, `text`
//!   standing in for a missing `content`, SWE-agent's role `ai` read as
//!   `assistant`), and the row the document `{"messages": […]}`.
//!
//! Every other column (`instance_id`, `model_name`, `target`, …) is left
//! unread. A session is keyed and named `FILE#row=N` (N from 0 over the
//! whole file), not by an id column: the datasets hold several
//! trajectories per `instance_id` (one per model and attempt).
//!
//! Damage: a file that is not Parquet or is cut (no footer), or has no
//! session column, cannot be read at all; a row group whose pages do not
//! decode is skipped, naming the row group and the row it stopped at, and
//! the walk goes on with the next row group (the footer locates each one).
//! The damage is returned after every readable row was handed on, so a
//! corpus still imports the rest. The `parquet` crate can panic on corrupt
//! pages or metadata rather than return an error; as a last resort its
//! calls are run under [`std::panic::catch_unwind`] with the panic message
//! kept out of the terminal, and a panic is reported as damage like any
//! other decoding error.

use std::cell::Cell;
use std::fs::File;
use std::io::Read;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Once};

use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::{Field, Row};
use parquet::schema::types::Type;
use serde_json::{Map, Value};

use super::{detect_format, import_reader_sessions, ImportOptions, ImportedSession};
use crate::error::{LabError, LabResult};
use crate::input::MAX_TRANSCRIPT_BYTES;

/// The columns a session is read from, in order of preference.
pub const SESSION_COLUMNS: [&str; 3] = ["messages", "trajectory", "history"];

/// The magic bytes a Parquet file starts and ends with.
pub const MAGIC: &[u8; 4] = b"PAR1";

/// Whether `path` is a Parquet file: named `.parquet`, or a regular file
/// that starts with [`MAGIC`] (a shard saved without its extension).
pub fn is_parquet(path: &Path) -> bool {
    let named = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("parquet"));
    if named {
        return true;
    }
    // Only a regular file is opened: a FIFO would block the listing.
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return false;
    }
    let mut head = [0u8; 4];
    File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| &head == MAGIC)
}

/// One row, imported: what the corpus hands on as a member.
#[derive(Debug)]
pub struct RowMember {
    /// `FILE#row=N`.
    pub name: String,
    /// The file's key and `#row=N`: what a shard is chosen by.
    pub key: String,
    /// The row's number in the file (from 0).
    pub position: usize,
    /// Its sessions, or why it is not a session.
    pub sessions: LabResult<Vec<ImportedSession>>,
}

/// How the session column holds a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// A string or binary column: one session's document.
    Document,
    /// A list of message structs.
    Messages,
}

/// The session column found in a file's schema.
struct Column {
    name: String,
    layout: Layout,
    /// The projection that reads it alone.
    projection: Type,
}

/// Import every row of the Parquet file at `path` (whose key is
/// `file_key`), handing each row's sessions to `f` (`FILE#row=N`) before
/// the next is read.
/// Every row's key is given to `wanted` in order; a row group none of whose
/// rows is wanted is not decoded. Returns the damage (a file that cannot be
/// read, row groups that could not be decoded) after the readable rows.
pub fn for_each_row(
    path: &Path,
    file_key: &str,
    options: &ImportOptions,
    wanted: &mut dyn FnMut(&str) -> bool,
    f: &mut dyn FnMut(RowMember) -> LabResult<()>,
) -> LabResult<()> {
    crate::input::check_regular(path, "a Parquet file", u64::MAX)?;
    let file = File::open(path).map_err(|e| LabError::io("opening Parquet file", path, e))?;
    let reader = guarded(|| SerializedFileReader::new(file))
        .and_then(|r| r.map_err(|e| e.to_string()))
        .map_err(|e| unreadable(path, &e))?;
    let column = session_column(path, reader.metadata().file_metadata().schema())?;
    let mut damage = Vec::new();
    let mut first_row = 0usize;
    for group in 0..reader.metadata().num_row_groups() {
        let rows = usize::try_from(reader.metadata().row_group(group).num_rows()).unwrap_or(0);
        let span = first_row..first_row + rows;
        first_row += rows;
        let chosen: Vec<bool> = span
            .clone()
            .map(|n| wanted(&row_key(file_key, n)))
            .collect();
        if !chosen.contains(&true) {
            continue;
        }
        let walk = RowGroupWalk {
            path,
            file_key,
            options,
            column: &column,
            group,
            first: span.start,
            chosen: &chosen,
        };
        if let Some(e) = walk.run(&reader, f)? {
            damage.push(e);
        }
    }
    match LabError::several(damage) {
        None => Ok(()),
        Some(e) => Err(e),
    }
}

/// The session document of row `n` of the Parquet file at `path`, as the
/// import read it (a list of structs converted the same way): what a
/// replay reads back for a Claude Code log's recorded usage. Only the row
/// group holding the row is decoded.
pub fn row_text(path: &Path, n: usize) -> std::io::Result<String> {
    let other = |e: LabError| std::io::Error::other(e.parts().0);
    let file = File::open(path)?;
    let reader = guarded(|| SerializedFileReader::new(file))
        .and_then(|r| r.map_err(|e| e.to_string()))
        .map_err(|e| other(unreadable(path, &e)))?;
    let column = session_column(path, reader.metadata().file_metadata().schema()).map_err(other)?;
    let mut first = 0usize;
    for group in 0..reader.metadata().num_row_groups() {
        let rows = usize::try_from(reader.metadata().row_group(group).num_rows()).unwrap_or(0);
        if n >= first + rows {
            first += rows;
            continue;
        }
        let found = guarded(|| -> parquet::errors::Result<Option<Row>> {
            let g = reader.get_row_group(group)?;
            let mut iter = g.get_row_iter(Some(column.projection.clone()))?;
            iter.nth(n - first).transpose()
        });
        let row = match found {
            Ok(Ok(Some(row))) => row,
            Ok(Ok(None)) => break,
            Ok(Err(e)) => return Err(std::io::Error::other(e.to_string())),
            Err(e) => return Err(std::io::Error::other(e)),
        };
        return match row_document(&row, &column) {
            Ok(doc) => Ok(String::from_utf8_lossy(&doc).into_owned()),
            Err(RowError::Plain(m)) => Err(std::io::Error::other(m)),
            Err(RowError::Import(e)) => Err(other(e)),
        };
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::NotFound,
        format!("{} has no row {n}", path.display()),
    ))
}

/// One row group's rows, read and handed on.
struct RowGroupWalk<'a> {
    path: &'a Path,
    file_key: &'a str,
    options: &'a ImportOptions,
    column: &'a Column,
    group: usize,
    /// The file's row number of the group's first row.
    first: usize,
    /// Per row of the group, whether it is wanted.
    chosen: &'a [bool],
}

impl RowGroupWalk<'_> {
    /// Hand on every wanted row; `Ok(Some(damage))` when the group stops
    /// decoding (the rows before it were handed on), `Err` only for `f`'s
    /// own error.
    fn run(
        &self,
        reader: &SerializedFileReader<File>,
        f: &mut dyn FnMut(RowMember) -> LabResult<()>,
    ) -> LabResult<Option<LabError>> {
        let opened = guarded(|| reader.get_row_group(self.group));
        let group = match opened {
            Ok(Ok(g)) => g,
            Ok(Err(e)) => return Ok(Some(self.damaged(0, &e.to_string()))),
            Err(e) => return Ok(Some(self.damaged(0, &e))),
        };
        let iter = guarded(|| group.get_row_iter(Some(self.column.projection.clone())));
        let mut iter = match iter {
            Ok(Ok(i)) => i,
            Ok(Err(e)) => return Ok(Some(self.damaged(0, &e.to_string()))),
            Err(e) => return Ok(Some(self.damaged(0, &e))),
        };
        for (at, &take) in self.chosen.iter().enumerate() {
            let row = match guarded(|| iter.next()) {
                Ok(Some(Ok(row))) => row,
                Ok(Some(Err(e))) => return Ok(Some(self.damaged(at, &e.to_string()))),
                Ok(None) => return Ok(Some(self.damaged(at, "the row group ends early"))),
                Err(e) => return Ok(Some(self.damaged(at, &e))),
            };
            if take {
                f(self.member(at, &row))?;
            }
        }
        Ok(None)
    }

    /// The row at `at` in the group as a member: its sessions, or why not.
    fn member(&self, at: usize, row: &Row) -> RowMember {
        let n = self.first + at;
        let name = format!("{}#row={n}", self.path.display());
        let sessions = row_document(row, self.column)
            .and_then(|doc| import_row(&doc, &name, self.options))
            .map_err(|message| match message {
                RowError::Plain(message) => LabError::Input {
                    file: PathBuf::from(&name),
                    line: 0,
                    column: 0,
                    message,
                    fix: format!(
                        "the `{}` column must hold each session's messages (a JSON document, or a list of {{role, content}} structs)",
                        self.column.name
                    ),
                },
                RowError::Import(e) => e,
            });
        RowMember {
            name,
            key: row_key(self.file_key, n),
            position: n,
            sessions,
        }
    }

    /// The damage of a row group that stopped decoding at its row `at`.
    fn damaged(&self, at: usize, why: &str) -> LabError {
        let rows = self.chosen.len();
        let end = self.first + rows.max(1) - 1;
        LabError::Input {
            file: self.path.to_path_buf(),
            line: 0,
            column: 0,
            message: format!(
                "row group {} (rows {}-{end}) cannot be decoded at row {}: {why}; its rows from there were skipped, the other row groups imported",
                self.group,
                self.first,
                self.first + at,
            ),
            fix: format!(
                "the file is damaged: download it again, or check it with pyarrow (`pyarrow.parquet.ParquetFile(PATH).read_row_group({})`) and rewrite it without that row group",
                self.group
            ),
        }
    }
}

/// A row's key: the file's key and its row number.
fn row_key(file_key: &str, n: usize) -> String {
    format!("{file_key}#row={n}")
}

/// Why a row is not a session.
enum RowError {
    /// The row's cell is not a session document.
    Plain(String),
    /// The document did not import.
    Import(LabError),
}

/// The row's session as a JSON document (bytes).
fn row_document(row: &Row, column: &Column) -> Result<Vec<u8>, RowError> {
    let cell = row
        .get_column_iter()
        .find(|(name, _)| **name == column.name)
        .map(|(_, field)| field);
    let Some(cell) = cell.filter(|c| !matches!(c, Field::Null)) else {
        return Err(RowError::Plain(format!(
            "the `{}` column is null in this row",
            column.name
        )));
    };
    match (column.layout, cell) {
        (Layout::Document, Field::Str(s)) => Ok(s.as_bytes().to_vec()),
        (Layout::Document, Field::Bytes(b)) => Ok(b.data().to_vec()),
        (Layout::Messages, Field::ListInternal(list)) => {
            let messages: Vec<Value> = list.elements().iter().map(message).collect();
            let doc = serde_json::json!({ "messages": messages });
            Ok(serde_json::to_vec(&doc).expect("a JSON value serialises"))
        }
        (_, other) => Err(RowError::Plain(format!(
            "the `{}` cell is a {}, not a session",
            column.name,
            kind(other)
        ))),
    }
}

/// One message struct as a JSON message object.
fn message(field: &Field) -> Value {
    let mut v = json(field);
    if let Value::Object(m) = &mut v {
        if m.get("content").is_none_or(Value::is_null) {
            if let Some(text) = m.remove("text") {
                m.insert("content".to_string(), text);
            }
        }
        // SWE-agent's history and the nebius dataset name the model `ai`.
        if m.get("role").and_then(Value::as_str) == Some("ai") {
            m.insert("role".to_string(), Value::String("assistant".to_string()));
        }
    }
    v
}

/// A Parquet value as JSON: nulls inside structs left out (a struct column
/// carries every field of every message kind), binary read as UTF-8.
fn json(field: &Field) -> Value {
    match field {
        Field::Null => Value::Null,
        Field::Bool(b) => Value::Bool(*b),
        Field::Byte(n) => Value::from(*n),
        Field::Short(n) => Value::from(*n),
        Field::Int(n) => Value::from(*n),
        Field::Long(n) => Value::from(*n),
        Field::UByte(n) => Value::from(*n),
        Field::UShort(n) => Value::from(*n),
        Field::UInt(n) => Value::from(*n),
        Field::ULong(n) => Value::from(*n),
        Field::Float(n) => Value::from(f64::from(*n)),
        Field::Double(n) => Value::from(*n),
        Field::Str(s) => Value::String(s.clone()),
        Field::Bytes(b) => Value::String(String::from_utf8_lossy(b.data()).into_owned()),
        Field::Group(row) => {
            let m: Map<String, Value> = row
                .get_column_iter()
                .filter(|(_, f)| !matches!(f, Field::Null))
                .map(|(k, f)| (k.clone(), json(f)))
                .collect();
            Value::Object(m)
        }
        Field::ListInternal(list) => Value::Array(list.elements().iter().map(json).collect()),
        Field::MapInternal(map) => {
            let m: Map<String, Value> = map
                .entries()
                .iter()
                .map(|(k, v)| {
                    let key = match json(k) {
                        Value::String(s) => s,
                        other => other.to_string(),
                    };
                    (key, json(v))
                })
                .collect();
            Value::Object(m)
        }
        // Dates, times, decimals: not in a message; their text form will do.
        other => Value::String(other.to_string()),
    }
}

fn kind(field: &Field) -> &'static str {
    match field {
        Field::Str(_) | Field::Bytes(_) => "string",
        Field::ListInternal(_) => "list",
        Field::Group(_) => "struct",
        Field::MapInternal(_) => "map",
        _ => "scalar",
    }
}

/// One row's document, sniffed and imported as a session file named `name`.
fn import_row(
    doc: &[u8],
    name: &str,
    options: &ImportOptions,
) -> Result<Vec<ImportedSession>, RowError> {
    if doc.len() as u64 > MAX_TRANSCRIPT_BYTES {
        return Err(RowError::Plain(format!(
            "a session of {} bytes, over the {MAX_TRANSCRIPT_BYTES}-byte limit for a transcript",
            doc.len()
        )));
    }
    let source = PathBuf::from(name);
    let format = options
        .format
        .unwrap_or_else(|| detect_format(Path::new("row.json"), doc));
    let mut sessions =
        import_reader_sessions(doc, &source, format, options).map_err(RowError::Import)?;
    let several = sessions.len() > 1;
    for (i, s) in sessions.iter_mut().enumerate() {
        s.label = if several {
            format!("{name}#{i}")
        } else {
            name.to_string()
        };
    }
    if sessions.len() == 1 {
        sessions[0].require_messages().map_err(RowError::Import)?;
    }
    Ok(sessions)
}

/// The session column of a file whose schema is `root`, and the projection
/// reading it alone; an error naming the columns there are when none is.
fn session_column(path: &Path, root: &Type) -> LabResult<Column> {
    let fields = root.get_fields();
    let found = SESSION_COLUMNS
        .iter()
        .find_map(|want| fields.iter().find(|f| f.name() == *want));
    let Some(field) = found else {
        let names: Vec<String> = fields.iter().map(|f| format!("`{}`", f.name())).collect();
        return Err(LabError::Input {
            file: path.to_path_buf(),
            line: 0,
            column: 0,
            message: format!(
                "no session column: the file's columns are {}; a session is read from `{}`",
                names.join(", "),
                SESSION_COLUMNS.join("`, `"),
            ),
            fix: "rename the column that holds each row's messages to `messages` (a JSON string, or a list of {role, content} structs), e.g. with pyarrow's `Table.rename_columns`".to_string(),
        });
    };
    let layout = if field.is_primitive() {
        Layout::Document
    } else {
        Layout::Messages
    };
    let projection = Type::group_type_builder(root.name())
        .with_fields(vec![Arc::clone(field)])
        .build()
        .map_err(|e| unreadable(path, &e.to_string()))?;
    Ok(Column {
        name: field.name().to_string(),
        layout,
        projection,
    })
}

/// A file that cannot be read as Parquet at all.
fn unreadable(path: &Path, why: &str) -> LabError {
    LabError::Input {
        file: path.to_path_buf(),
        line: 0,
        column: 0,
        message: format!("not a readable Parquet file: {why}"),
        fix: "the file is cut or is not Parquet: download it again (a Parquet file ends with its footer and `PAR1`), or rename it if it is another format".to_string(),
    }
}

thread_local! {
    /// Set while this thread runs a guarded `parquet` call: its panic is
    /// reported as damage, so the panic hook keeps quiet.
    static GUARDED: Cell<bool> = const { Cell::new(false) };
}

/// Run a call into the `parquet` crate, turning a panic into an error
/// message. A last resort: the crate's decoders index into page buffers
/// and can panic on corrupt input rather than return an error.
fn guarded<T>(call: impl FnOnce() -> T) -> Result<T, String> {
    static QUIET: Once = Once::new();
    QUIET.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !GUARDED.with(Cell::get) {
                previous(info);
            }
        }));
    });
    GUARDED.with(|g| g.set(true));
    let result = catch_unwind(AssertUnwindSafe(call));
    GUARDED.with(|g| g.set(false));
    result.map_err(|panic| {
        let text = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("a decoding panic");
        format!("corrupt data ({text})")
    })
}
