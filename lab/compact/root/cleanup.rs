//! Disk runs leave nothing behind: every `ctxlab-*` temp dir is registered
//! while it lives, and Ctrl-C or SIGTERM removes the registered dirs before
//! the process exits (a plain `Drop` never runs on a signal).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once};

use crate::error::{LabError, LabResult};

/// Temp dirs of live disk runs.
static LIVE: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());
static HANDLER: Once = Once::new();

/// Exit code after an interrupt (128 + SIGINT, the shell convention).
pub const INTERRUPTED: i32 = 130;

fn live() -> std::sync::MutexGuard<'static, BTreeSet<PathBuf>> {
    // Every mutation is one insert or remove: a poisoned set is still consistent.
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Install the Ctrl-C / SIGTERM handler once. When installing fails (another
/// handler owns the signal, e.g. in an embedding program) runs still clean up on `Drop`.
pub fn install_signal_handler() {
    HANDLER.call_once(|| {
        let _ = ctrlc::set_handler(|| {
            remove_live_dirs();
            std::process::exit(INTERRUPTED);
        });
    });
}

/// Remove every registered temp dir (the signal path; also usable before an early exit).
pub fn remove_live_dirs() {
    let dirs: Vec<PathBuf> = std::mem::take(&mut *live()).into_iter().collect();
    for d in dirs {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// A registered `ctxlab-*` temp dir, removed on drop.
#[derive(Debug)]
pub struct TempRoot {
    dir: tempfile::TempDir,
}

impl TempRoot {
    /// Create a fresh temp dir named `<prefix>XXXXXX` under `TMPDIR`.
    pub fn new(prefix: &str) -> LabResult<Self> {
        install_signal_handler();
        let dir = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir()
            .map_err(|e| LabError::io("creating the run's temp dir", std::env::temp_dir(), e))?;
        live().insert(dir.path().to_path_buf());
        Ok(TempRoot { dir })
    }

    /// The temp dir.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for TempRoot {
    fn drop(&mut self) {
        live().remove(self.dir.path());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_dir_is_registered_and_gone_after_drop() {
        let t = TempRoot::new("ctxlab-").unwrap();
        let p = t.path().to_path_buf();
        assert!(live().contains(&p));
        assert!(p.is_dir());
        drop(t);
        assert!(!live().contains(&p));
        assert!(!p.exists());
    }
}
