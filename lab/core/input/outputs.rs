//! A set of output files written all or none: every file goes to a temp
//! name beside its target first; only when every one is written are they
//! renamed into place. A failure (a read-only directory, a full disk)
//! removes the temp files and leaves what was there before, never half a
//! report.

use std::path::{Path, PathBuf};

use crate::error::{LabError, LabResult};

/// Write every `(path, bytes)` of `files`, all or none; `what` names the
/// set in errors ("a report").
pub fn write_all_or_none(files: &[(PathBuf, Vec<u8>)], what: &str) -> LabResult<()> {
    let mut written: Vec<(PathBuf, &Path)> = Vec::new();
    let undo = |written: &[(PathBuf, &Path)]| {
        for (tmp, _) in written {
            let _ = std::fs::remove_file(tmp);
        }
    };
    for (path, bytes) in files {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = path.with_file_name(format!(".{name}.tmp"));
        if let Err(e) = std::fs::write(&tmp, bytes) {
            let _ = std::fs::remove_file(&tmp);
            undo(&written);
            return Err(LabError::io(format!("writing {what}"), path, e));
        }
        written.push((tmp, path));
    }
    for (k, (tmp, path)) in written.iter().enumerate() {
        if let Err(e) = std::fs::rename(tmp, path) {
            undo(&written[k..]);
            return Err(LabError::io(format!("writing {what}"), *path, e));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_failure_leaves_every_file_as_it_was() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a.md");
        std::fs::write(&a, "old").unwrap();
        // The second target's directory does not exist: its write fails.
        let files = vec![
            (a.clone(), b"new".to_vec()),
            (d.path().join("nope/b.md"), b"new".to_vec()),
        ];
        let e = write_all_or_none(&files, "a report").unwrap_err();
        assert_eq!(e.exit_code(), 4);
        assert!(e.to_string().contains("nope/b.md"), "{e}");
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "old");
        let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "no temp file left: {left:?}");
        write_all_or_none(&files[..1], "a report").unwrap();
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "new");
    }
}
