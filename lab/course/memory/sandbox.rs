//! A snapshot of the files of a session's sandbox outside the store. The
//! session takes one before the first turn and the checker another after the
//! last, so a write that escaped the store shows up as a difference; both
//! need it, so it lives below both.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{LabError, LabResult};
use crate::storage::{FileKind, Storage};

/// Every regular file or symlink under `root` except inside `skip`, with its
/// bytes (a symlink's "bytes" are its target path), sorted by path. Symlinks
/// are not followed, so a link cannot make the walk leave the sandbox.
pub fn files_outside(
    fs: &dyn Storage,
    root: &Path,
    skip: &Path,
) -> LabResult<BTreeMap<PathBuf, Vec<u8>>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let names = fs
            .list(&dir)
            .map_err(|e| LabError::io("listing sandbox", &dir, e))?;
        for name in names {
            let path = dir.join(name);
            if path == skip {
                continue;
            }
            match fs.kind(&path) {
                Some(FileKind::Symlink) => {
                    let target = fs
                        .read_link(&path)
                        .map_err(|e| LabError::io("reading symlink", &path, e))?;
                    out.insert(path, target.to_string_lossy().into_owned().into_bytes());
                }
                Some(FileKind::Dir) => stack.push(path),
                Some(FileKind::File) => {
                    let bytes = fs
                        .read(&path)
                        .map_err(|e| LabError::io("reading sandbox file", &path, e))?;
                    out.insert(path, bytes);
                }
                None => {}
            }
        }
    }
    Ok(out)
}

/// Where writes outside the store are looked for: the whole tree of an
/// in-memory backend (a write counts wherever it lands), the sandbox on disk
/// (the host's file system cannot be walked; the store re-roots escapes into
/// the sandbox, so nothing it writes lands elsewhere).
pub fn watched_root(fs: &dyn Storage, sandbox: &Path) -> PathBuf {
    match fs.backend() {
        crate::storage::Backend::Mem => PathBuf::from("/"),
        crate::storage::Backend::Disk => sandbox.to_path_buf(),
    }
}
