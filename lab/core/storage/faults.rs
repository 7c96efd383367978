//! Fault injection over any backend: a full disk, an I/O error at the Nth
//! operation, a kill after the Nth operation.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::{Backend, FileKind, Shared, Storage};

/// Which faults to inject. `Default` injects none.
///
/// Operations are the mutating calls of [`Storage`] (create_dir_all, write,
/// write_new, remove_file, rename, symlink, sync), counted from 1.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FaultPlan {
    /// Bytes that may still be written; a write past it stores what fits and
    /// fails with `StorageFull` (so a partial file keeps its space, as on a
    /// real full disk). Removing a file gives its bytes back.
    pub free_bytes: Option<u64>,
    /// The operation with this number fails once with an I/O error.
    pub io_error_at: Option<u64>,
    /// From the operation with this number on, the disk is full: free space
    /// drops to 0 once (another writer took it), removals give space back.
    /// Lets a test put a full disk at exactly one write of a sequence.
    pub full_at: Option<u64>,
    /// After this many operations the process counts as killed: every later
    /// call, reads included, fails, and nothing more reaches the backend.
    pub kill_after: Option<u64>,
    /// The kill lands inside the write it stops: that write stores the first
    /// half of its bytes before the process dies, as a SIGKILL during
    /// `write(2)` can leave a file. `false`: a kill falls between operations.
    pub torn_kill: bool,
}

/// One mutating operation as it reached the backend (for enumerating crash points).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OpLog {
    /// 1-based operation number.
    pub n: u64,
    /// Operation name (`write_new`, `rename`, ...).
    pub op: &'static str,
    /// The (first) path it touched.
    pub path: PathBuf,
    /// Whether it succeeded.
    pub ok: bool,
}

#[derive(Debug, Default)]
struct State {
    ops: u64,
    free: Option<u64>,
    log: Vec<OpLog>,
    killed: bool,
}

/// A backend with faults injected by a [`FaultPlan`].
#[derive(Debug)]
pub struct Faulty {
    inner: Shared,
    plan: FaultPlan,
    state: Mutex<State>,
}

/// The error every call returns once the simulated process has been killed.
pub fn killed_error() -> io::Error {
    io::Error::new(
        io::ErrorKind::Interrupted,
        "process killed (injected fault)",
    )
}

impl Faulty {
    /// Wrap `inner` with `plan`.
    pub fn new(inner: Shared, plan: FaultPlan) -> Self {
        let free = plan.free_bytes;
        Faulty {
            inner,
            plan,
            state: Mutex::new(State {
                free,
                ..State::default()
            }),
        }
    }

    /// The backend underneath (what a restarted process would see).
    pub fn inner(&self) -> &Shared {
        &self.inner
    }

    /// Mutating operations so far.
    pub fn ops(&self) -> u64 {
        self.lock().ops
    }

    /// `true` once the kill point has passed.
    pub fn killed(&self) -> bool {
        self.lock().killed
    }

    /// The log of every mutating operation.
    pub fn log(&self) -> Vec<OpLog> {
        self.lock().log.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn live(&self) -> io::Result<()> {
        if self.lock().killed {
            Err(killed_error())
        } else {
            Ok(())
        }
    }

    /// Count one operation and run it unless a fault says otherwise.
    fn op<T>(
        &self,
        name: &'static str,
        path: &Path,
        f: impl FnOnce(&Shared) -> io::Result<T>,
    ) -> io::Result<T> {
        let n = {
            let mut st = self.lock();
            if st.killed {
                return Err(killed_error());
            }
            if self.plan.kill_after.is_some_and(|k| st.ops >= k) {
                st.killed = true;
                return Err(killed_error());
            }
            st.ops += 1;
            st.ops
        };
        let result = if self.plan.io_error_at == Some(n) {
            Err(io::Error::other(format!(
                "injected I/O error at operation {n}"
            )))
        } else {
            f(&self.inner)
        };
        self.lock().log.push(OpLog {
            n,
            op: name,
            path: path.to_path_buf(),
            ok: result.is_ok(),
        });
        result
    }

    /// Whether the next operation is a kill that lands inside a write.
    fn tears_here(&self) -> bool {
        let st = self.lock();
        self.plan.torn_kill && !st.killed && self.plan.kill_after.is_some_and(|k| st.ops >= k)
    }

    /// Write through the space budget: what fits is stored, the rest fails.
    fn budgeted_write(
        &self,
        name: &'static str,
        path: &Path,
        bytes: &[u8],
        write: fn(&dyn Storage, &Path, &[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        let old = match self.inner.kind(path) {
            Some(FileKind::File) if name == "write" => self.inner.read(path).map_or(0, |b| b.len()),
            _ => 0,
        } as u64;
        if self.tears_here() {
            // What reached the file before the kill; the op below then dies.
            let _ = write(self.inner.as_ref(), path, &bytes[..bytes.len() / 2]);
        }
        let free = {
            let mut st = self.lock();
            if self.plan.full_at == Some(st.ops + 1) {
                st.free = Some(0);
            }
            st.free
        };
        self.op(name, path, |inner| match free {
            Some(free) if bytes.len() as u64 > free + old => {
                let fit = (free + old) as usize;
                write(inner.as_ref(), path, &bytes[..fit])?;
                self.lock().free = Some(0);
                Err(io::Error::new(
                    io::ErrorKind::StorageFull,
                    "no space left on device (injected)",
                ))
            }
            Some(free) => {
                write(inner.as_ref(), path, bytes)?;
                self.lock().free = Some(free + old - bytes.len() as u64);
                Ok(())
            }
            None => write(inner.as_ref(), path, bytes),
        })
    }
}

impl Storage for Faulty {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.op("create_dir_all", dir, |i| i.create_dir_all(dir))
    }

    fn write_new(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        self.budgeted_write("write_new", path, bytes, |s, p, b| s.write_new(p, b))
    }

    fn write(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        self.budgeted_write("write", path, bytes, |s, p, b| s.write(p, b))
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.live()?;
        self.inner.read(path)
    }

    fn kind(&self, path: &Path) -> Option<FileKind> {
        self.live().ok()?;
        self.inner.kind(path)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.live()?;
        self.inner.list(dir)
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        self.op("remove_dir", path, |i| i.remove_dir(path))
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let size = match self.inner.kind(path) {
            Some(FileKind::File) => self.inner.read(path).map_or(0, |b| b.len() as u64),
            _ => 0,
        };
        self.op("remove_file", path, |i| i.remove_file(path))?;
        let mut st = self.lock();
        if let Some(free) = st.free.as_mut() {
            *free += size;
        }
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.op("rename", from, |i| i.rename(from, to))
    }

    fn symlink(&self, target: &Path, link: &Path) -> io::Result<()> {
        self.op("symlink", link, |i| i.symlink(target, link))
    }

    fn read_link(&self, link: &Path) -> io::Result<PathBuf> {
        self.live()?;
        self.inner.read_link(link)
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        self.live()?;
        self.inner.canonicalize(path)
    }

    fn sync(&self, path: &Path) -> io::Result<()> {
        self.op("sync", path, |i| i.sync(path))
    }

    fn backend(&self) -> Backend {
        self.inner.backend()
    }
}
