//! Disk runs and output files leave nothing behind: every `ctxlab-*` temp dir
//! and every `.NAME.tmp` file of [`write_replacing`] is registered while it
//! lives, and Ctrl-C or SIGTERM removes the registered paths before the
//! process exits (a plain `Drop` never runs on a signal).

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
            // Keep the registry locked until exit: a worker that wants a new
            // temp dir or temp file blocks before creating it.
            let live = live();
            // External processes (memory tools, policies) lead their own
            // process groups, so the terminal's Ctrl-C never reaches them.
            crate::process::kill_live_groups();
            remove_until_quiet(&live);
            std::process::exit(INTERRUPTED);
        });
    });
}

/// [`remove_all`] until two passes 10 ms apart find nothing left (at most
/// about a second): a worker that already held its temp dir may still be
/// creating the run's directories in it, and would put back a dir removed
/// once (seen under load in CI).
fn remove_until_quiet(paths: &BTreeSet<PathBuf>) {
    let mut quiet = 0;
    for _ in 0..100 {
        let any = paths.iter().any(|p| p.exists());
        remove_all(paths);
        quiet = if any { 0 } else { quiet + 1 };
        if quiet == 2 {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Remove every registered temp dir and temp file (retrying a dir that a
/// still-running worker was writing into).
fn remove_all(paths: &BTreeSet<PathBuf>) {
    for p in paths {
        for _ in 0..20 {
            let gone = if p.is_dir() {
                std::fs::remove_dir_all(p).is_ok()
            } else {
                std::fs::remove_file(p).is_ok() || !p.exists()
            };
            if gone || !p.exists() {
                break;
            }
        }
    }
}

/// Remove every registered temp dir and temp file now (before an early exit).
pub fn remove_live_dirs() {
    let mut live = live();
    remove_all(&live);
    live.clear();
}

/// Write `bytes` to `path` through `.NAME.tmp` in the same directory and a
/// rename, so a reader never sees half a file; the temp file is removed on
/// every error and on Ctrl-C / SIGTERM. The parent directory must exist.
pub fn write_replacing(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    install_signal_handler();
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    live().insert(tmp.clone());
    let done = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if done.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    live().remove(&tmp);
    done
}

/// A file written in pieces that appears at its path only whole:
/// [`write_replacing`] for output too large to hold. The bytes go to
/// `.NAME.tmp` beside it (created afresh, so a temp left by a killed run is
/// written over, never continued), renamed onto the path by
/// [`ReplacingFile::commit`]; dropped uncommitted, on an error, Ctrl-C or
/// SIGTERM, the temp file is removed and the path left as it was.
#[derive(Debug)]
pub struct ReplacingFile {
    path: PathBuf,
    tmp: PathBuf,
    file: Option<std::io::BufWriter<std::fs::File>>,
}

impl ReplacingFile {
    /// Start writing `path` (its parent directory must exist).
    pub fn create(path: &Path) -> std::io::Result<ReplacingFile> {
        install_signal_handler();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = path.with_file_name(format!(".{name}.tmp"));
        live().insert(tmp.clone());
        match std::fs::File::create(&tmp) {
            Ok(f) => Ok(ReplacingFile {
                path: path.to_path_buf(),
                tmp,
                file: Some(std::io::BufWriter::new(f)),
            }),
            Err(e) => {
                live().remove(&tmp);
                Err(e)
            }
        }
    }

    /// The temp file the bytes go to until [`ReplacingFile::commit`].
    pub fn temp_path(&self) -> &Path {
        &self.tmp
    }

    /// Flush, sync and rename onto the path: the file appears whole.
    pub fn commit(mut self) -> std::io::Result<()> {
        let file = self.file.take().expect("a file until committed");
        let done = file
            .into_inner()
            .map_err(|e| e.into_error())
            .and_then(|f| f.sync_all())
            .and_then(|()| std::fs::rename(&self.tmp, &self.path));
        if done.is_err() {
            let _ = std::fs::remove_file(&self.tmp);
        }
        live().remove(&self.tmp);
        done
    }
}

impl std::io::Write for ReplacingFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file
            .as_mut()
            .expect("a file until committed")
            .write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.as_mut().expect("a file until committed").flush()
    }
}

impl Drop for ReplacingFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.tmp);
            live().remove(&self.tmp);
        }
    }
}

/// A registered `ctxlab-*` temp dir, removed on drop.
#[derive(Debug)]
pub struct TempRoot {
    dir: PathBuf,
}

impl TempRoot {
    /// Create a fresh temp dir named `<prefix>XXXXXX` under `TMPDIR`
    /// (registered before it exists, so a signal never misses it).
    pub fn new(prefix: &str) -> LabResult<Self> {
        Self::new_in(&std::env::temp_dir(), prefix)
    }

    /// [`TempRoot::new`] under `base`.
    pub fn new_in(base: &Path, prefix: &str) -> LabResult<Self> {
        use rand::distributions::{Alphanumeric, DistString};
        install_signal_handler();
        for _ in 0..64 {
            let name = Alphanumeric.sample_string(&mut rand::thread_rng(), 6);
            let dir = base.join(format!("{prefix}{name}"));
            live().insert(dir.clone());
            match std::fs::create_dir(&dir) {
                Ok(()) => return Ok(TempRoot { dir }),
                Err(e) => {
                    live().remove(&dir);
                    if e.kind() != std::io::ErrorKind::AlreadyExists {
                        return Err(LabError::io("creating the run's temp dir", base, e));
                    }
                }
            }
        }
        Err(LabError::io(
            "creating the run's temp dir",
            base,
            std::io::Error::new(std::io::ErrorKind::AlreadyExists, "no free name"),
        ))
    }

    /// The temp dir.
    pub fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for TempRoot {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        live().remove(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_replacing_write_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let ok = dir.path().join("a.txt");
        write_replacing(&ok, b"one").unwrap();
        write_replacing(&ok, b"two").unwrap();
        assert_eq!(std::fs::read(&ok).unwrap(), b"two");
        // Renaming a file over a directory fails after the temp file was written.
        let blocked = dir.path().join("b");
        std::fs::create_dir_all(blocked.join("x")).unwrap();
        assert!(write_replacing(&blocked, b"x").is_err());
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
        assert!(!live().iter().any(|p| p.starts_with(dir.path())));
    }

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
