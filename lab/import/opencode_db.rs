//! opencode's SQLite store (`opencode.db`), which replaced its JSON storage
//! directory ([`super::opencode_storage`]); tables read at anomalyco/opencode
//! 02ce4a330f33fee005fb5a18c0e3ec6e1143caee (`packages/core/src/session/sql.ts`)
//! and 062aa8c024a00b7348dd3160c0b4fbbfce074ee2
//! (`packages/opencode/src/storage/json-migration.ts`, which fills them from
//! the storage files): `message` (`id`, `session_id`, `data`: the message
//! file without `id` and `sessionID`) and `part` (`id`, `message_id`,
//! `data`: the part file without `id`, `messageID` and `sessionID`).
//!
//! Each session is one [`ImportedSession`] labelled `FILE#SESSION_ID`; its
//! messages in id order (ids are ascending, as the storage files' names
//! are), each with its parts in id order, become the `{info, parts}` element
//! an export holds and go through [`super::opencode`], so a session reads
//! the same from the database, the storage directory or an export. A
//! position is `ROW:1`, the message's `rowid` in `message`. The newer
//! `session_message` table is not read.
//!
//! Damage: a `data` value that is not a JSON object is `invalid_record` at
//! its message's row (the message, or the part, skipped).

use std::collections::BTreeMap;
use std::path::Path;

use rusqlite::Connection;
use serde_json::{json, Value};

use super::opencode::Export;
use super::{DiagnosticKind, ImportOptions, ImportedSession, Sink, TranscriptFormat};
use crate::error::{LabError, LabResult};

/// `db` has opencode's `message` and `part` tables.
pub(crate) fn is_opencode(db: &Connection) -> bool {
    ["message", "part"].iter().all(|t| {
        db.query_row(
            "SELECT count(*) FROM pragma_table_info(?1) WHERE name = 'data'",
            [t],
            |r| r.get::<_, i64>(0),
        )
        .is_ok_and(|n| n == 1)
    })
}

/// One message row: its rowid, id, session and `data`.
struct Row {
    rowid: usize,
    id: String,
    session: String,
    data: String,
}

/// Every session of the opencode store `db` (opened from `path`), in id order.
pub(crate) fn read(
    db: &Connection,
    path: &Path,
    options: &ImportOptions,
) -> LabResult<Vec<ImportedSession>> {
    let messages = rows(db, path)?;
    let mut by_session: BTreeMap<String, Vec<Row>> = BTreeMap::new();
    for row in messages {
        by_session.entry(row.session.clone()).or_default().push(row);
    }
    by_session
        .into_iter()
        .map(|(id, rows)| session(db, path, &id, &rows, options))
        .collect()
}

fn rows(db: &Connection, path: &Path) -> LabResult<Vec<Row>> {
    let query = || -> rusqlite::Result<Vec<Row>> {
        let mut stmt =
            db.prepare("SELECT rowid, id, session_id, data FROM message ORDER BY session_id, id")?;
        let rows = stmt.query_map([], |r| {
            Ok(Row {
                rowid: r.get::<_, i64>(0)?.max(0) as usize,
                id: r.get(1)?,
                session: r.get(2)?,
                data: r.get::<_, Option<String>>(3)?.unwrap_or_default(),
            })
        })?;
        rows.collect()
    };
    query().map_err(|e| unreadable(path, &e.to_string()))
}

/// The `data` of each part of message `id`, in id order.
fn parts(db: &Connection, path: &Path, id: &str) -> LabResult<Vec<(String, String)>> {
    let query = || -> rusqlite::Result<Vec<(String, String)>> {
        let mut stmt = db.prepare("SELECT id, data FROM part WHERE message_id = ?1 ORDER BY id")?;
        let rows = stmt.query_map([id], |r| {
            Ok((
                r.get(0)?,
                r.get::<_, Option<String>>(1)?.unwrap_or_default(),
            ))
        })?;
        rows.collect()
    };
    query().map_err(|e| unreadable(path, &e.to_string()))
}

fn session(
    db: &Connection,
    path: &Path,
    id: &str,
    rows: &[Row],
    options: &ImportOptions,
) -> LabResult<ImportedSession> {
    let mut sink = Sink::new(path, options.strict);
    let mut session = ImportedSession::new(path, TranscriptFormat::OpenCodeStorage);
    session.label = format!("{}#{id}", session.label);
    let mut export = Export::default();
    for row in rows {
        session.stats.records += 1;
        let pos = (row.rowid, 1);
        let Some(mut info) = object(&row.data, pos, "message", &mut session, &mut sink)? else {
            continue;
        };
        info["id"] = json!(row.id);
        info["sessionID"] = json!(id);
        let mut kept = Vec::new();
        for (part_id, data) in parts(db, path, &row.id)? {
            session.stats.records += 1;
            if let Some(mut p) = object(&data, pos, "part", &mut session, &mut sink)? {
                p["id"] = json!(part_id);
                p["messageID"] = json!(row.id);
                p["sessionID"] = json!(id);
                kept.push(p);
            }
        }
        let element = json!({"info": info, "parts": kept});
        export.element(&element, pos, &mut session, &mut sink)?;
    }
    export.finish(None, &mut session, &mut sink)?;
    sink.finish_into(&mut session);
    Ok(session)
}

/// A `data` column as a JSON object, or `None` after reporting it.
fn object(
    data: &str,
    pos: (usize, usize),
    what: &str,
    session: &mut ImportedSession,
    sink: &mut Sink<'_>,
) -> LabResult<Option<Value>> {
    match serde_json::from_str::<Value>(data) {
        Ok(v @ Value::Object(_)) => Ok(Some(v)),
        _ => {
            session.skip(&format!("({what} data not a JSON object)"));
            let msg = format!(
                "message row {}: a {what}'s `data` is not a JSON object; skipped",
                pos.0
            );
            sink.report(pos.0, pos.1, DiagnosticKind::InvalidRecord, msg)?;
            Ok(None)
        }
    }
}

fn unreadable(path: &Path, why: &str) -> LabError {
    LabError::Input {
        file: path.to_path_buf(),
        line: 0,
        column: 0,
        message: format!("not a readable opencode database: {why}"),
        fix: "give opencode's opencode.db (in opencode's data directory), or export the session with `opencode export`".into(),
    }
}
