//! A SQLite store (goose's `sessions.db`, `opencode.db`) is checked with
//! `PRAGMA quick_check` before any row is read: a damaged page can make a
//! query return fewer rows without an error, which would import a short
//! session as if it were whole.

use std::path::Path;

use rusqlite::Connection;

use crate::error::{LabError, LabResult};

/// Lines of `quick_check`'s report named in the error.
const SHOWN: usize = 3;

/// `Ok` when `db` (opened from `path`) passes `PRAGMA quick_check`; else an
/// input error naming the damage SQLite found.
pub fn check(db: &Connection, path: &Path) -> LabResult<()> {
    let report = (|| -> rusqlite::Result<Vec<String>> {
        let mut stmt = db.prepare("PRAGMA quick_check")?;
        let lines = stmt.query_map([], |r| r.get::<_, String>(0))?;
        lines.collect()
    })();
    let lines = match report {
        Ok(lines) if lines.len() == 1 && lines[0] == "ok" => return Ok(()),
        Ok(lines) => lines,
        // A store too damaged to run the check at all.
        Err(e) => vec![e.to_string()],
    };
    let mut shown: Vec<&str> = lines.iter().take(SHOWN).map(String::as_str).collect();
    let more = lines.len().saturating_sub(SHOWN);
    let more = if more > 0 {
        format!(" (and {more} more)")
    } else {
        String::new()
    };
    shown.dedup();
    Err(LabError::Input {
        file: path.to_path_buf(),
        line: 0,
        column: 0,
        message: format!(
            "the SQLite store is damaged: PRAGMA quick_check says: {}{more}",
            shown.join("; ")
        ),
        fix: "restore the file from a backup, or recover what it holds with \
              `sqlite3 FILE .recover | sqlite3 NEW.db` and import NEW.db"
            .to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_damaged_table_page_is_named_and_an_intact_store_passes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.db");
        {
            let db = Connection::open(&path).unwrap();
            db.execute_batch(
                "PRAGMA page_size = 1024; CREATE TABLE messages (id INTEGER PRIMARY KEY, body TEXT);",
            )
            .unwrap();
            for i in 0..400 {
                db.execute(
                    "INSERT INTO messages (body) VALUES (?1)",
                    [format!("message {i} {}", "x".repeat(100))],
                )
                .unwrap();
            }
        }
        let db = Connection::open(&path).unwrap();
        check(&db, &path).unwrap();
        drop(db);
        // Scribble over the middle of the table's pages (past the header
        // page and the schema).
        let mut bytes = std::fs::read(&path).unwrap();
        assert!(bytes.len() > 20 * 1024);
        for b in &mut bytes[10 * 1024..10 * 1024 + 64] {
            *b = 0xA5;
        }
        std::fs::write(&path, &bytes).unwrap();
        let db = Connection::open(&path).unwrap();
        let e = check(&db, &path).unwrap_err();
        assert_eq!(e.exit_code(), 3);
        let msg = e.to_string();
        assert!(
            msg.contains("sessions.db: the SQLite store is damaged"),
            "{msg}"
        );
        assert!(msg.contains("fix: "), "{msg}");
    }
}
