//! opencode's SQLite store (`opencode.db`): a database built here with
//! upstream's `message` and `part` tables (`packages/core/src/session/sql.ts`),
//! filled from the storage fixture (written by opencode 1.1.53 itself) the
//! way upstream's `json-migration.ts` fills them (ids and session from the
//! paths, `data` the file without them). The session imports the same from
//! the database as from the storage directory; damage is reported at its
//! row; the file is opened read-only.

use std::path::{Path, PathBuf};

use crate::common::LENIENT;
use ctxlab::import::{import_file, import_file_sessions, DiagnosticKind, TranscriptFormat};
use rusqlite::Connection;
use serde_json::Value;

/// Upstream's tables, as drizzle creates them (the columns the lab reads).
const TABLES: &str = "
CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT NOT NULL, slug TEXT NOT NULL, directory TEXT NOT NULL, title TEXT NOT NULL, version TEXT NOT NULL, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL);
CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL REFERENCES session(id), time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL REFERENCES message(id), session_id TEXT NOT NULL, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
";

fn storage() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/import/fixtures/opencode_storage/storage")
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|e| e == "json"));
    files.sort();
    files
}

fn stem(p: &Path) -> String {
    p.file_stem().unwrap().to_string_lossy().into_owned()
}

/// `data` of a storage file: the document without the keys the paths give.
fn data(file: &Path, drop: &[&str]) -> String {
    let mut v: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    for k in drop {
        v.as_object_mut().unwrap().remove(*k);
    }
    v.to_string()
}

/// `dir/opencode.db` migrated from the fixture's storage, as upstream does.
fn migrated(dir: &Path) -> PathBuf {
    let path = dir.join("opencode.db");
    let db = Connection::open(&path).unwrap();
    db.execute_batch(TABLES).unwrap();
    let root = storage();
    for session_file in json_files(&root.join("session/global")) {
        let sid = stem(&session_file);
        db.execute(
            "INSERT INTO session VALUES (?1, 'global', '', '/', '', '', 0, 0)",
            [&sid],
        )
        .unwrap();
        for m in json_files(&root.join("message").join(&sid)) {
            let mid = stem(&m);
            db.execute(
                "INSERT INTO message VALUES (?1, ?2, 0, 0, ?3)",
                [&mid, &sid, &data(&m, &["id", "sessionID"])],
            )
            .unwrap();
            for p in json_files(&root.join("part").join(&mid)) {
                db.execute(
                    "INSERT INTO part VALUES (?1, ?2, ?3, 0, 0, ?4)",
                    [
                        &stem(&p),
                        &mid,
                        &sid,
                        &data(&p, &["id", "messageID", "sessionID"]),
                    ],
                )
                .unwrap();
            }
        }
    }
    path
}

#[test]
fn the_database_reads_as_the_storage_it_was_migrated_from() {
    let dir = tempfile::tempdir().unwrap();
    let db = migrated(dir.path());
    let before = std::fs::read(&db).unwrap();
    let [s] = &import_file_sessions(&db, &LENIENT).unwrap()[..] else {
        panic!("one session")
    };
    let files = import_file(
        &storage().join("session/global/ses_fixture0001.json"),
        &LENIENT,
    )
    .unwrap();
    assert_eq!(s.format, TranscriptFormat::OpenCodeStorage);
    assert!(
        s.label.ends_with("opencode.db#ses_fixture0001"),
        "{}",
        s.label
    );
    assert_eq!(s.main, files.main);
    assert_eq!(s.real_compactions, files.real_compactions);
    assert!(
        !s.real_compactions.is_empty(),
        "the fixture holds a compaction"
    );
    assert_eq!(std::fs::read(&db).unwrap(), before, "opened read-only");
}

#[test]
fn a_data_value_that_is_not_an_object_is_reported_at_its_row() {
    let dir = tempfile::tempdir().unwrap();
    let db = migrated(dir.path());
    let conn = Connection::open(&db).unwrap();
    let (rowid, id): (i64, String) = conn
        .query_row(
            "SELECT rowid, id FROM message ORDER BY id LIMIT 1 OFFSET 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    conn.execute("UPDATE message SET data = '[1]' WHERE id = ?1", [&id])
        .unwrap();
    drop(conn);
    let [s] = &import_file_sessions(&db, &LENIENT).unwrap()[..] else {
        panic!("one session")
    };
    let d = s
        .diagnostics
        .iter()
        .find(|d| d.kind == DiagnosticKind::InvalidRecord)
        .expect("reported");
    assert_eq!(d.line, rowid as usize);
    assert!(
        d.message.contains(&format!("message row {rowid}")),
        "{}",
        d.message
    );
    assert!(!s.main.is_empty(), "the rest imports");
}
