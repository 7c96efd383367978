//! The reference implementation's store lock: one writing command at a time
//! across every session on one root, in this process or another, so a
//! read-modify-write (`str_replace`, `insert`) never overwrites an edit
//! another session had acknowledged, and a check-then-act (`create` and
//! `rename` refusing an existing target, `delete`) never acts on a stale
//! check.
//!
//! The lock is a hidden file `.memtool.lock` in the root (listings skip
//! hidden names, as the SDK's do), created with an exclusive create through
//! the storage layer, so every fault and schedule of that layer applies to
//! it, and holding the owner's process id. A lock whose owner process is
//! gone (it was killed mid-command) is broken by the next session: a
//! killed session never blocks the store. Sessions of one process share
//! its id, so a lock is never considered stale in process (the fault
//! backend's kill ends the row). Waiting is polling: each try is a storage
//! operation, so the deterministic schedule of [`super::race`] can hand
//! the turn to the holder.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::storage::Shared;

/// The lock file's name in the root.
pub const LOCK_NAME: &str = ".memtool.lock";

/// Tries before giving up: far past any command's time on a sane disk.
const MAX_TRIES: u32 = 200_000;

/// A held lock, released (the file removed) on drop.
pub struct Held {
    fs: Shared,
    path: PathBuf,
}

impl Drop for Held {
    fn drop(&mut self) {
        let _ = self.fs.remove_file(&self.path);
    }
}

/// Take the lock on `root`, waiting for another session to release it;
/// the error is a sentence for the tool's error reply.
pub fn acquire(fs: &Shared, root: &Path) -> Result<Held, String> {
    let path = root.join(LOCK_NAME);
    let me = std::process::id().to_string();
    for i in 0..MAX_TRIES {
        match fs.write_new(&path, me.as_bytes()) {
            Ok(()) => {
                return Ok(Held {
                    fs: fs.clone(),
                    path,
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                if let Ok(owner) = fs.read(&path) {
                    let owner = String::from_utf8_lossy(&owner);
                    if owner != me && owner_is_gone(&owner) {
                        let _ = fs.remove_file(&path);
                        continue;
                    }
                }
            }
            Err(e) => return Err(format!("cannot lock the memory directory: {e}")),
        }
        if i > 100 {
            std::thread::sleep(Duration::from_micros(200));
        } else {
            std::thread::yield_now();
        }
    }
    Err("the memory directory stayed locked by another session; try again".into())
}

/// Whether the process named in a lock file no longer exists. A lock being
/// written (empty) or unreadable is not stale.
fn owner_is_gone(owner: &str) -> bool {
    let Ok(pid) = owner.trim().parse::<i32>() else {
        return false;
    };
    if pid <= 1 {
        return false;
    }
    #[cfg(unix)]
    {
        // SAFETY: kill(2) with signal 0 sends nothing; it only checks the pid.
        let r = unsafe { libc::kill(pid, 0) };
        r != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
    }
    #[cfg(not(unix))]
    {
        false
    }
}
