//! opencode sessions in opencode's own storage directory, as its JSON
//! storage wrote them before the move to SQLite (layout read at
//! anomalyco/opencode 062aa8c024a00b7348dd3160c0b4fbbfce074ee2,
//! `packages/opencode/src/storage/json-migration.ts`, the code that reads
//! that directory into the database):
//!
//! ```text
//! storage/session/PROJECT/SESSION.json   Session.Info
//! storage/message/SESSION/MESSAGE.json   MessageV2.Info (no parts)
//! storage/part/MESSAGE/PART.json         MessageV2.Part
//! ```
//!
//! Each file is one JSON document. Ids come from the paths, as upstream's
//! migration takes them; ids are ascending, so messages and parts are read
//! in file-name order. The input is the session file (or the storage
//! directory: [`super::corpus`] then reads its session files only); each
//! message with its parts becomes the `{info, parts}` element an export
//! holds and is read by [`super::opencode`], so both give the same session
//! (compaction parts and their summaries are real compactions the same way).
//!
//! The test fixture is opencode 1.1.53's own output (`opencode import`).
//!
//! Damage is reported in the file it is in, at its line:column: a cut
//! message or part file is `truncated` (and skipped), a file that is not a
//! JSON object `invalid_record`, a message with no string `role`
//! `invalid_record`, a part of an unknown or mistyped `type`
//! `unknown_block_type`, a tool part with no `callID` `invalid_record`.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::opencode::Export;
use super::{DiagnosticKind, ImportedSession, Sink};
use crate::error::{LabError, LabResult};
use crate::input::{check_regular, MAX_TRANSCRIPT_BYTES};

/// `dir` is an opencode storage directory (`session/` and `message/` in it).
pub fn is_storage_root(dir: &Path) -> bool {
    dir.join("session").is_dir() && dir.join("message").is_dir()
}

pub(crate) fn read<R: BufRead>(
    mut reader: R,
    session: &mut ImportedSession,
    sink: &mut Sink<'_>,
) -> LabResult<()> {
    let source = sink.source.to_path_buf();
    let mut text = Vec::new();
    reader
        .read_to_end(&mut text)
        .map_err(|e| LabError::io("reading transcript", &source, e))?;
    session.stats.records += 1;
    // The session's own record holds nothing that is sent; only its place
    // in the tree matters. A cut one is still damage.
    if let Err(((line, column), kind, msg)) = object(&text) {
        let msg = format!("session file {msg}; its messages are read all the same");
        sink.report(line, column, kind, msg)?;
    }
    let (root, id) = locate(&source)?;
    let mut export = Export::default();
    for file in json_files(&root.join("message").join(&id))? {
        session.stats.records += 1;
        sink.file = Some(file.clone());
        let Some(info) = document(&file, sink)? else {
            session.skip("(unreadable message file)");
            continue;
        };
        let (element, part_files) = message_element(&root, &file, info, session, sink)?;
        export.part_files = part_files;
        sink.file = Some(file.clone());
        export.element(&element, (1, 1), session, sink)?;
    }
    sink.file = None;
    export.part_files.clear();
    export.finish(None, session, sink)?;
    Ok(())
}

/// The message `info` of `file` with its parts, as an export holds it, and
/// the file of each part kept.
fn message_element(
    root: &Path,
    file: &Path,
    info: Value,
    session: &mut ImportedSession,
    sink: &mut Sink<'_>,
) -> LabResult<(Value, Vec<PathBuf>)> {
    let id = stem(file);
    let mut parts = Vec::new();
    let mut files = Vec::new();
    for part in json_files(&root.join("part").join(&id))? {
        session.stats.records += 1;
        sink.file = Some(part.clone());
        match document(&part, sink)? {
            Some(p) => {
                parts.push(p);
                files.push(part);
            }
            None => session.skip("(unreadable part file)"),
        }
    }
    Ok((json!({"info": info, "parts": parts}), files))
}

/// The storage root and session id of a session file
/// `ROOT/session/PROJECT/ID.json` (a relative name is resolved first, so
/// `ID.json` given from inside `session/PROJECT/` is found too).
fn locate(file: &Path) -> LabResult<(PathBuf, String)> {
    let resolved = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    let project = resolved.parent();
    let sessions = project.and_then(Path::parent);
    let root = sessions.and_then(Path::parent);
    match (sessions, root) {
        (Some(s), Some(root)) if s.file_name().is_some_and(|n| n == "session") => {
            Ok((root.to_path_buf(), stem(file)))
        }
        _ => Err(LabError::Input {
            file: file.to_path_buf(),
            line: 0,
            column: 0,
            message: "an opencode session file must lie in its storage directory, at session/PROJECT/ID.json".into(),
            fix: "pass the session file inside opencode's storage directory (with message/ and part/ beside session/), or the storage directory itself".into(),
        }),
    }
}

fn stem(file: &Path) -> String {
    file.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The `*.json` files of `dir` in name order (ids are ascending); none when
/// it does not exist (a message not yet given a part, a session with no
/// message).
fn json_files(dir: &Path) -> LabResult<Vec<PathBuf>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(LabError::io("reading directory", dir, e)),
    };
    let mut files = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|e| LabError::io("reading directory", dir, e))?
            .path();
        if path.extension().is_some_and(|e| e == "json") && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// The JSON object in `file`, or `None` after reporting why there is none
/// (`sink.file` names it).
fn document(file: &Path, sink: &mut Sink<'_>) -> LabResult<Option<Value>> {
    check_regular(file, "an opencode storage file", MAX_TRANSCRIPT_BYTES)?;
    let bytes = std::fs::read(file).map_err(|e| LabError::io("reading", file, e))?;
    match object(&bytes) {
        Ok(v) => Ok(Some(v)),
        Err(((line, column), kind, msg)) => {
            sink.report(line, column, kind, format!("{msg}; skipped"))?;
            Ok(None)
        }
    }
}

/// Why a storage file holds no JSON object: where, and the diagnostic.
pub(crate) type Problem = ((usize, usize), DiagnosticKind, String);

/// The JSON object `bytes` hold; a cut document is `truncated`, anything
/// else `invalid_record`.
pub(crate) fn object(bytes: &[u8]) -> Result<Value, Problem> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err((
            (1, 1),
            DiagnosticKind::InvalidRecord,
            "not a JSON object".into(),
        )),
        Err(e) if e.is_eof() => Err((
            (e.line(), e.column()),
            DiagnosticKind::Truncated,
            "the JSON document ends early (file cut)".into(),
        )),
        Err(e) => Err((
            (e.line(), e.column()),
            DiagnosticKind::InvalidRecord,
            format!("not JSON ({})", category(&e)),
        )),
    }
}

fn category(e: &serde_json::Error) -> &'static str {
    match e.classify() {
        serde_json::error::Category::Syntax => "a syntax error",
        serde_json::error::Category::Data => "a value of the wrong type",
        serde_json::error::Category::Io => "a read error",
        serde_json::error::Category::Eof => "cut",
    }
}

/// The `opencode_storage` format's registration (`format_list.rs`).
pub const FORMAT: crate::format::Format = crate::format::Format {
    name: "opencode_storage",
    sniff: Some((45, crate::sniff::opencode_storage)),
    name_endings: &[],
    extensions: &[],
    product: Some("opencode"),
    compaction_by_index: false,
    read: |mut input| {
        // goose's `sessions.db` and opencode's `opencode.db` are SQLite.
        if input.is_sqlite()? {
            return crate::sqlite_database(input.source, input.backing.is_some(), input.options);
        }
        input.one(|r, s, k| read(r, s, k))
    },
};
