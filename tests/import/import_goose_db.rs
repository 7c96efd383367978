//! goose's SQLite store (`sessions.db`): a database built here with
//! upstream's own table definitions (`session_manager.rs`, schema version
//! 5, and the version-2 `messages` table without `metadata_json`), its rows
//! the messages of the JSON Lines fixture. The same session imports the same
//! from either store; every goose session is its own session; damage is
//! reported at its row, a file that is no goose store is refused naming it.

use std::path::{Path, PathBuf};

use crate::common::LENIENT;
use ctxlab::import::{import_file_sessions, DiagnosticKind, ImportOptions, TranscriptFormat};
use rusqlite::Connection;
use serde_json::Value;

/// Upstream's `messages` table (`SessionStorage::create`, schema version 5).
const MESSAGES_V5: &str = "CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL,
    content_json TEXT NOT NULL,
    created_timestamp INTEGER NOT NULL,
    timestamp TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    tokens INTEGER,
    metadata_json TEXT
)";

/// The same table before migration 3 added `metadata_json`.
const MESSAGES_V2: &str = "CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    role TEXT NOT NULL,
    content_json TEXT NOT NULL,
    created_timestamp INTEGER NOT NULL,
    timestamp TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    tokens INTEGER
)";

fn jsonl() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/import/fixtures/goose/session.jsonl")
}

/// The fixture's messages (every line but the metadata).
fn fixture_messages() -> Vec<Value> {
    std::fs::read_to_string(jsonl())
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A store at `dir/sessions.db` with `table`, holding `sessions` (id, messages).
fn store(dir: &Path, table: &str, sessions: &[(&str, &[Value])]) -> PathBuf {
    let path = dir.join("sessions.db");
    let db = Connection::open(&path).unwrap();
    db.execute_batch("CREATE TABLE sessions (id TEXT PRIMARY KEY, working_dir TEXT NOT NULL)")
        .unwrap();
    db.execute_batch(table).unwrap();
    let with_metadata = table.contains("metadata_json");
    for (id, messages) in sessions {
        db.execute("INSERT INTO sessions VALUES (?1, '/work')", [id])
            .unwrap();
        for m in *messages {
            let content = m["content"].to_string();
            let created = m["created"].as_i64().unwrap_or(0);
            if with_metadata {
                db.execute(
                    "INSERT INTO messages (session_id, role, content_json, created_timestamp, metadata_json) VALUES (?1, ?2, ?3, ?4, ?5)",
                    rusqlite::params![id, m["role"].as_str(), content, created, m["metadata"].to_string()],
                )
                .unwrap();
            } else {
                db.execute(
                    "INSERT INTO messages (session_id, role, content_json, created_timestamp) VALUES (?1, ?2, ?3, ?4)",
                    rusqlite::params![id, m["role"].as_str(), content, created],
                )
                .unwrap();
            }
        }
    }
    path
}

#[test]
fn a_session_in_the_database_imports_as_its_json_lines_twin() {
    let dir = tempfile::tempdir().unwrap();
    let messages = fixture_messages();
    let db = store(dir.path(), MESSAGES_V5, &[("20260101_1", &messages)]);
    let from_db = import_file_sessions(&db, &LENIENT).unwrap();
    let from_jsonl = import_file_sessions(&jsonl(), &LENIENT).unwrap();
    let ([a], [b]) = (&from_db[..], &from_jsonl[..]) else {
        panic!("one session each")
    };
    assert_eq!(a.format, TranscriptFormat::Goose);
    assert!(a.label.ends_with("sessions.db#20260101_1"), "{}", a.label);
    assert_eq!(a.main, b.main);
    assert_eq!(a.real_compaction_meta, b.real_compaction_meta);
    assert!(!a.real_compactions.is_empty());
    // A row's position is its id in `messages`: the first message is row 1.
    assert_eq!(a.main_lines[0], 1);
}

#[test]
fn every_goose_session_is_its_own_and_an_old_schema_reads_without_visibility() {
    let dir = tempfile::tempdir().unwrap();
    let messages = fixture_messages();
    let db = store(
        dir.path(),
        MESSAGES_V2,
        &[
            ("20260101_2", &messages[..3]),
            ("20260101_1", &messages[3..6]),
        ],
    );
    let sessions = import_file_sessions(&db, &LENIENT).unwrap();
    let labels: Vec<&str> = sessions
        .iter()
        .map(|s| s.label.rsplit('#').next().unwrap())
        .collect();
    assert_eq!(labels, ["20260101_1", "20260101_2"]);
    // Without metadata every message is visible to the agent: none is a summary.
    assert!(sessions.iter().all(|s| s.real_compactions.is_empty()));
    assert_eq!(sessions[1].main.len(), 3);
}

#[test]
fn a_row_that_is_not_json_is_reported_at_its_row_and_the_rest_imports() {
    let dir = tempfile::tempdir().unwrap();
    let messages = fixture_messages();
    let db = store(dir.path(), MESSAGES_V5, &[("s", &messages[..4])]);
    Connection::open(&db)
        .unwrap()
        .execute(
            "UPDATE messages SET content_json = '[{\"type\":' WHERE id = 2",
            [],
        )
        .unwrap();
    let [s] = &import_file_sessions(&db, &LENIENT).unwrap()[..] else {
        panic!("one session")
    };
    let d = s
        .diagnostics
        .iter()
        .find(|d| d.kind == DiagnosticKind::InvalidRecord)
        .expect("reported");
    assert_eq!((d.line, d.column), (2, 1));
    assert!(d.message.contains("messages row 2"), "{}", d.message);
    // Row 1, then row 4 (row 3's result answered the lost row 2's call and
    // was removed as an orphan), then the result synthesised for row 4's call.
    assert_eq!(s.main.len(), 3);
    assert_eq!(&s.main_lines[..2], [1, 4]);
    let strict = ImportOptions {
        strict: true,
        format: None,
    };
    let err = import_file_sessions(&db, &strict).unwrap_err().to_string();
    assert!(err.contains(":2:1"), "{err}");
}

#[test]
fn a_database_that_is_not_goose_s_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other.db");
    Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE notes (id INTEGER, body TEXT)")
        .unwrap();
    let before = std::fs::read(&other).unwrap();
    let err = import_file_sessions(&other, &LENIENT)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("other.db") && err.contains("not a goose or opencode session database"),
        "{err}"
    );
    assert!(err.contains("no `session_id` column"), "{err}");
    assert_eq!(std::fs::read(&other).unwrap(), before, "opened read-only");
    // A file with SQLite's header and nothing else.
    let torn = dir.path().join("torn.db");
    std::fs::write(&torn, b"SQLite format 3\0garbage garbage garbage").unwrap();
    let err = import_file_sessions(&torn, &LENIENT)
        .unwrap_err()
        .to_string();
    // Damaged before any row is read: `PRAGMA quick_check` names it.
    assert!(
        err.contains("torn.db") && err.contains("the SQLite store is damaged"),
        "{err}"
    );
}

#[test]
fn a_database_inside_a_stream_is_refused_with_the_fix() {
    let bytes = b"SQLite format 3\0rest of a database";
    let err = ctxlab::import::import_reader_sessions(
        &bytes[..],
        Path::new("corpus.tar/sessions.db"),
        TranscriptFormat::Goose,
        &LENIENT,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("unpack the database"), "{err}");
}
