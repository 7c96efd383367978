//! The consolidation journal: the snapshot of every memory file a pass is
//! about to delete, made durable on disk before the first delete.
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

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Journal {
    schema: String,
    files: Snapshot,
}

/// Path of the journal of the store at `root`.
pub fn path(root: &Path) -> PathBuf {
    root.join(JOURNAL_FILE)
}

/// Write the snapshot durably (exclusive temp file, fsync, rename).
pub fn write(fs: &dyn Storage, root: &Path, snapshot: &Snapshot) -> io::Result<()> {
    let j = Journal {
        schema: SCHEMA.into(),
        files: snapshot.clone(),
    };
    let text = serde_json::to_vec(&j).map_err(io::Error::other)?;
    atomic_write(fs, &path(root), &text)
}

/// The pending snapshot, if a pass died before its commit point. A journal
/// that is a symlink or not readable as ours is not trusted: it is removed
/// (we never create one) and reported as an error so the caller can say so.
pub fn read(fs: &dyn Storage, root: &Path) -> io::Result<Option<Snapshot>> {
    let p = path(root);
    match fs.kind(&p) {
        None => Ok(None),
        Some(FileKind::File) => {
            let bytes = fs.read(&p)?;
            match serde_json::from_slice::<Journal>(&bytes) {
                Ok(j) if j.schema == SCHEMA => Ok(Some(j.files)),
                _ => Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{} is not a consolidation journal", p.display()),
                )),
            }
        }
        Some(_) => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is not a regular file", p.display()),
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
        write(&fs, root, &snap).unwrap();
        assert_eq!(read(&fs, root).unwrap(), Some(snap));
        remove(&fs, root).unwrap();
        assert_eq!(read(&fs, root).unwrap(), None);
        fs.write_new(&path(root), b"{}").unwrap();
        assert!(read(&fs, root).is_err());
    }
}
