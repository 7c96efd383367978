//! A snapshot of the files of a session's sandbox outside the store. The
//! session takes one before the first turn and the checker another after the
//! last, so a write that escaped the store shows up as a difference; both
//! need it, so it lives below both.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{LabError, LabResult};

/// Every regular file or symlink under `root` except inside `skip`, with its
/// bytes (a symlink's "bytes" are its target path), sorted by path. Symlinks
/// are not followed, so a link cannot make the walk leave the sandbox.
pub fn files_outside(root: &Path, skip: &Path) -> LabResult<BTreeMap<PathBuf, Vec<u8>>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = fs::read_dir(&dir).map_err(|e| LabError::io("listing sandbox", &dir, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| LabError::io("listing sandbox", &dir, e))?;
            let path = entry.path();
            if path == skip {
                continue;
            }
            let meta = fs::symlink_metadata(&path)
                .map_err(|e| LabError::io("inspecting sandbox entry", &path, e))?;
            if meta.file_type().is_symlink() {
                let target =
                    fs::read_link(&path).map_err(|e| LabError::io("reading symlink", &path, e))?;
                out.insert(path, target.to_string_lossy().into_owned().into_bytes());
            } else if meta.is_dir() {
                stack.push(path);
            } else {
                let bytes =
                    fs::read(&path).map_err(|e| LabError::io("reading sandbox file", &path, e))?;
                out.insert(path, bytes);
            }
        }
    }
    Ok(out)
}
