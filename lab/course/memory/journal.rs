//! The consolidation journal: the snapshot of every memory file a pass is
//! about to delete, and the files it is about to write, made durable on disk
//! before the first delete.
//!
//! The course keeps that snapshot only in process memory, so a kill between
//! the first delete and the last rewrite loses acknowledged memories and the
//! next run does not notice. Here the snapshot is written atomically (and
//! synced) to [`JOURNAL_FILE`] in the store; the pass removes it as its commit
//! point. A journal found when the store is opened means a pass died midway:
//! the store restores the snapshot (see `Store::open`).
//!
//! This module knows nothing about the store's layout beyond the journal's
//! own file, so the store can use it without an import circle.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::storage::{atomic_write, FileKind, Storage};

/// File name of the journal inside the store (hidden: never a memory file).
pub const JOURNAL_FILE: &str = ".consolidation-journal.json";

/// File name -> text of every memory file: what consolidation snapshots.
pub type Snapshot = BTreeMap<String, String>;

const SCHEMA: &str = "ctxlab.memory-journal/1";

/// A pending pass: what it deletes and what it writes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pending {
    /// Memory files before the pass (file name -> text).
    pub before: Snapshot,
    /// Files the pass writes (file name -> text), so recovery removes or
    /// reverts exactly those and never a file written after the pass.
    pub writes: Snapshot,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Journal {
    schema: String,
    #[serde(flatten)]
    pending: Pending,
}

/// Path of the journal of the store at `root`.
pub fn path(root: &Path) -> PathBuf {
    root.join(JOURNAL_FILE)
}

/// Write the pending pass durably (exclusive temp file, fsync, rename).
pub fn write(fs: &dyn Storage, root: &Path, pending: &Pending) -> io::Result<()> {
    let j = Journal {
        schema: SCHEMA.into(),
        pending: pending.clone(),
    };
    let text = serde_json::to_vec(&j).map_err(io::Error::other)?;
    atomic_write(fs, &path(root), &text)
}

/// The pending snapshot, if a pass died before its commit point. A journal
/// that is a symlink or not readable as ours is not trusted: it is removed
/// (we never create one) and reported as an error so the caller can say so.
/// A directory in its place is no journal (`None`); the caller leaves it.
pub fn read(fs: &dyn Storage, root: &Path) -> io::Result<Option<Pending>> {
    let p = path(root);
    match fs.kind(&p) {
        None => Ok(None),
        Some(FileKind::File) => {
            let bytes = fs.read(&p)?;
            match serde_json::from_slice::<Journal>(&bytes) {
                Ok(j) if j.schema == SCHEMA => Ok(Some(j.pending)),
                _ => Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "{} is not a consolidation journal of schema {SCHEMA}: removed without acting on it",
                        p.display()
                    ),
                )),
            }
        }
        Some(FileKind::Dir) => Ok(None),
        Some(_) => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{} is not a regular file: removed without following it",
                p.display()
            ),
        )),
    }
}

/// Remove the journal: the commit point of a pass (or the end of a recovery).
pub fn remove(fs: &dyn Storage, root: &Path) -> io::Result<()> {
    match fs.remove_file(&path(root)) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        r => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemFs;

    #[test]
    fn write_read_remove_round_trip() {
        let fs = MemFs::new();
        let root = Path::new("/s");
        fs.create_dir_all(root).unwrap();
        assert_eq!(read(&fs, root).unwrap(), None);
        let snap: Snapshot = [("a.md".to_string(), "x\u{2028}y".to_string())].into();
        let p = Pending {
            before: snap.clone(),
            writes: snap,
        };
        write(&fs, root, &p).unwrap();
        assert_eq!(read(&fs, root).unwrap(), Some(p));
        remove(&fs, root).unwrap();
        assert_eq!(read(&fs, root).unwrap(), None);
        fs.write_new(&path(root), b"{}").unwrap();
        assert!(read(&fs, root).is_err());
    }
}
