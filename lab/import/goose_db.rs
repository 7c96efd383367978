//! goose's SQLite session store, `~/.local/share/goose/sessions/sessions.db`
//! (releases since the JSON Lines store, [`super::goose`]), read at block/goose
//! 0164300649cf5e4ab327105d9155779ab8bfde4b
//! (`crates/goose/src/session/session_manager.rs`): a `messages` table of
//! `id` (autoincrement), `session_id`, `role`, `content_json` (the
//! message's `MessageContent` list), `created_timestamp` and, from schema
//! version 3, `metadata_json` (`{userVisible, agentVisible}`). A session's
//! conversation is its rows in `id` order.
//!
//! Each goose session is one [`ImportedSession`], labelled `FILE#SESSION_ID`;
//! each row goes through the JSON Lines reader as the `Message` it was
//! serialised from, so content, visibility and compaction read the same.
//! A position is `ROW:1`: the row's `id` in `messages`, where the JSON Lines
//! store has a line.
//!
//! Damage: a file that is not an SQLite database, or one with neither
//! goose's `messages` columns nor opencode's tables ([`super::opencode_db`]),
//! is an input error naming the file; a row whose
//! `content_json` or `metadata_json` is not JSON is `invalid_record` at its
//! row (skipped); the rest of the store still imports. The database is
//! opened read-only and never written.

use std::collections::BTreeMap;
use std::path::Path;

use rusqlite::{Connection, OpenFlags};
use serde_json::Value;

use super::goose::Messages;
use super::{DiagnosticKind, ImportOptions, ImportedSession, Sink, TranscriptFormat};
use crate::error::{LabError, LabResult};

/// The first bytes of every SQLite database file.
pub use crate::format::SQLITE_HEADER;

/// The columns a goose store's `messages` table must have.
const REQUIRED: [&str; 3] = ["session_id", "role", "content_json"];

/// Every session of the goose store `db` (opened from `path`), in session id order.
pub(crate) fn read(
    db: &Connection,
    path: &Path,
    options: &ImportOptions,
) -> LabResult<Vec<ImportedSession>> {
    let metadata = columns(db, path)?.contains(&"metadata_json".to_string());
    let rows = rows(db, path, metadata)?;
    let mut by_session: BTreeMap<String, Vec<Row>> = BTreeMap::new();
    for row in rows {
        by_session.entry(row.session.clone()).or_default().push(row);
    }
    by_session
        .into_iter()
        .map(|(id, rows)| session(path, &id, &rows, options))
        .collect()
}

/// One row of `messages`.
struct Row {
    id: usize,
    session: String,
    role: String,
    content: String,
    metadata: Option<String>,
}

/// `path` opened read-only (never written, whatever happens).
pub(crate) fn open(path: &Path) -> LabResult<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let db =
        Connection::open_with_flags(path, flags).map_err(|e| not_goose(path, &e.to_string()))?;
    // Damage named before any row is read (a bad page can hide rows).
    super::sqlite_check::check(&db, path)?;
    Ok(db)
}

/// The `messages` table's columns; an error when it lacks goose's.
fn columns(db: &Connection, path: &Path) -> LabResult<Vec<String>> {
    let query = || -> rusqlite::Result<Vec<String>> {
        let mut stmt = db.prepare("SELECT name FROM pragma_table_info('messages')")?;
        let names = stmt.query_map([], |r| r.get::<_, String>(0))?;
        names.collect()
    };
    let names = query().map_err(|e| not_goose(path, &e.to_string()))?;
    if let Some(missing) = REQUIRED.iter().find(|c| !names.iter().any(|n| n == *c)) {
        let why = format!("its `messages` table has no `{missing}` column");
        return Err(not_goose(path, &why));
    }
    Ok(names)
}

fn rows(db: &Connection, path: &Path, metadata: bool) -> LabResult<Vec<Row>> {
    let sql = format!(
        "SELECT id, session_id, role, content_json, {} FROM messages ORDER BY session_id, id",
        if metadata { "metadata_json" } else { "NULL" }
    );
    let query = || -> rusqlite::Result<Vec<Row>> {
        let mut stmt = db.prepare(&sql)?;
        let rows = stmt.query_map([], |r| {
            Ok(Row {
                id: r.get::<_, i64>(0)?.max(0) as usize,
                session: text(r, 1)?,
                role: text(r, 2)?,
                content: text(r, 3)?,
                metadata: r.get::<_, Option<String>>(4).ok().flatten(),
            })
        })?;
        rows.collect()
    };
    query().map_err(|e| not_goose(path, &format!("reading its `messages` rows: {e}")))
}

/// Column `i` as text, whatever SQLite type it holds.
fn text(r: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<String> {
    use rusqlite::types::ValueRef;
    Ok(match r.get_ref(i)? {
        ValueRef::Text(t) | ValueRef::Blob(t) => String::from_utf8_lossy(t).into_owned(),
        ValueRef::Integer(n) => n.to_string(),
        ValueRef::Real(x) => x.to_string(),
        ValueRef::Null => String::new(),
    })
}

/// One goose session from its rows.
fn session(
    path: &Path,
    id: &str,
    rows: &[Row],
    options: &ImportOptions,
) -> LabResult<ImportedSession> {
    let mut sink = Sink::new(path, options.strict);
    let mut session = ImportedSession::new(path, TranscriptFormat::Goose);
    session.label = format!("{}#{id}", session.label);
    let mut messages = Messages::default();
    for row in rows {
        session.stats.records += 1;
        if let Some(v) = message_value(row, &mut session, &mut sink)? {
            messages.message(&v, row.id, &mut session, &mut sink)?;
        }
    }
    messages.finish(&mut session, None, &mut sink)?;
    sink.finish_into(&mut session);
    Ok(session)
}

/// The row as the `Message` goose serialised, or `None` (reported) when
/// its JSON columns do not parse.
fn message_value(
    row: &Row,
    session: &mut ImportedSession,
    sink: &mut Sink<'_>,
) -> LabResult<Option<Value>> {
    let parse = |column: &str, text: &str| {
        serde_json::from_str::<Value>(text).map_err(|e| format!("`{column}` is not JSON ({e})"))
    };
    let metadata = match &row.metadata {
        Some(m) => parse("metadata_json", m).map(Some),
        None => Ok(None),
    };
    match (parse("content_json", &row.content), metadata) {
        (Ok(content), Ok(metadata)) => Ok(Some(serde_json::json!({
            "role": row.role,
            "content": content,
            "metadata": metadata,
        }))),
        (Err(why), _) | (_, Err(why)) => {
            session.skip("(row not JSON)");
            let msg = format!("messages row {}: {why}; skipped", row.id);
            sink.report(row.id, 1, DiagnosticKind::InvalidRecord, msg)?;
            Ok(None)
        }
    }
}

fn not_goose(path: &Path, why: &str) -> LabError {
    LabError::Input {
        file: path.to_path_buf(),
        line: 0,
        column: 0,
        message: format!("not a goose or opencode session database: {why}"),
        fix: "give goose's sessions.db (~/.local/share/goose/sessions/sessions.db) or opencode's opencode.db, or a session file".into(),
    }
}
