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
//! it, and holding the owner's process id and that process's start time
//! (`/proc/PID/stat`, field 22) on one line. A lock whose owner process is
//! gone (it was killed mid-command) is broken by the next session, and so
//! is one whose id now names another process (the id was reused: its start
//! time differs): a killed session never blocks the store. Sessions of one process share
//! its id, so in process the lock also counts who holds it or is taking it
//! (`LIVE`): a file naming this process that no live session holds was
//! left by a session the fault layer killed, or whose release failed on an
//! I/O error or a full disk, and is broken too (before, each such file cost
//! the next session 40 s of polling and then a refusal). Waiting is
//! polling: each try is a storage operation, so the deterministic schedule
//! of [`super::race`] can hand the turn to the holder.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crate::storage::Shared;

/// The lock file's name in the root.
pub const LOCK_NAME: &str = ".memtool.lock";

/// Tries before giving up: far past any command's time on a sane disk.
const MAX_TRIES: u32 = 200_000;

/// Tries a lock file without a whole process id is waited for before it
/// counts as torn (about 0.2 s of polling).
const UNREADABLE_TRIES: u32 = 1_000;

/// One lock file of one store: the store's address and the file's path.
type Key = (usize, PathBuf);

/// Sessions of this process holding or taking each lock. The mutex is
/// never held across a storage operation: under the deterministic race
/// schedule a storage operation hands the turn to another session, which
/// may take this mutex in its turn.
static LIVE: OnceLock<Mutex<HashMap<Key, usize>>> = OnceLock::new();

fn live() -> std::sync::MutexGuard<'static, HashMap<Key, usize>> {
    let m = LIVE.get_or_init(Default::default);
    // A poisoned map still counts right: every change is one statement.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A session of this process counted in [`LIVE`] while it lives.
struct Live(Key);

impl Live {
    fn new(key: Key) -> Live {
        *live().entry(key.clone()).or_insert(0) += 1;
        Live(key)
    }

    /// Whether any session of this process holds or is taking the lock.
    fn any(key: &Key) -> bool {
        live().get(key).is_some_and(|n| *n > 0)
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        let mut map = live();
        if let Some(n) = map.get_mut(&self.0) {
            *n -= 1;
            if *n == 0 {
                map.remove(&self.0);
            }
        }
    }
}

/// A held lock, released (the file removed) on drop.
pub struct Held {
    fs: Shared,
    path: PathBuf,
    _live: Live,
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
    let me = owner_line(std::process::id());
    let key: Key = (Arc::as_ptr(fs) as *const () as usize, path.clone());
    let mut unreadable = 0;
    for i in 0..MAX_TRIES {
        // Counted before the file exists, so a session of this process that
        // reads our id in it meanwhile sees us live.
        let taking = Live::new(key.clone());
        match fs.write_new(&path, me.as_bytes()) {
            Ok(()) => {
                return Ok(Held {
                    fs: fs.clone(),
                    path,
                    _live: taking,
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                drop(taking);
                if let Ok(owner) = fs.read(&path) {
                    let owner = String::from_utf8_lossy(&owner);
                    let stale = if owner == me {
                        // Ours: stale when no session of this process holds
                        // or takes it.
                        !Live::any(&key)
                    } else if parse_owner(&owner).is_none() {
                        // No whole line: a lock another process is still
                        // writing (its create and its write are two
                        // system calls), or one a kill tore. Stale once it
                        // stays so for many tries with no session of ours
                        // on it: a writer finishes in microseconds.
                        unreadable += 1;
                        unreadable > UNREADABLE_TRIES && !Live::any(&key)
                    } else {
                        owner_is_gone(&owner)
                    };
                    if stale {
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

/// The lock file's line for process `pid`: its id and, where `/proc`
/// says, its start time.
fn owner_line(pid: u32) -> String {
    match start_time(pid) {
        Some(t) => format!("{pid} {t}\n"),
        None => format!("{pid}\n"),
    }
}

/// A lock file's owner: its process id and start time (absent where the
/// system has no `/proc`); `None` for a line not written whole (no line
/// end, or not numbers).
fn parse_owner(text: &str) -> Option<(i32, Option<u64>)> {
    let line = text.strip_suffix('\n')?;
    let mut words = line.split(' ');
    let pid = words.next()?.parse().ok()?;
    let start = match words.next() {
        Some(w) => Some(w.parse().ok()?),
        None => None,
    };
    words.next().is_none().then_some((pid, start))
}

/// When process `pid` started, in clock ticks since boot (field 22 of
/// `/proc/PID/stat`, after the parenthesised name, which may hold spaces).
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    // Fields from the third (state) on: the start time is the 20th of them.
    after_name.split_whitespace().nth(19)?.parse().ok()
}

/// Whether the process that wrote a lock file is gone: no process has its
/// id, or the one that has it started at another time (the id was reused
/// by a process that never took the lock). A lock not written whole is not
/// stale here (see [`acquire`]).
pub fn owner_is_gone(owner: &str) -> bool {
    let Some((pid, start)) = parse_owner(owner) else {
        return false;
    };
    if pid <= 1 {
        return false;
    }
    if !alive(pid) {
        return true;
    }
    match (start, start_time(pid as u32)) {
        (Some(wrote), Some(now)) => wrote != now,
        _ => false,
    }
}

/// Whether a process has id `pid`.
fn alive(pid: i32) -> bool {
    #[cfg(unix)]
    {
        // SAFETY: kill(2) with signal 0 sends nothing; it only checks the pid.
        let r = unsafe { libc::kill(pid, 0) };
        !(r != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH))
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A live process's own line is not stale; the same id with another
    /// start time (a reused id) is; a dead process's is; a torn line is
    /// left to the waiting logic.
    #[test]
    fn a_reused_pid_makes_a_lock_stale() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        let line = owner_line(pid);
        let start = start_time(pid).expect("a /proc start time");
        assert_eq!(line, format!("{pid} {start}\n"));
        assert!(!owner_is_gone(&line), "{line}");
        assert!(owner_is_gone(&format!("{pid} {}\n", start + 1)));
        assert!(
            !owner_is_gone(&format!("{pid} {start}")),
            "torn: no line end"
        );
        assert_eq!(parse_owner(&format!("{pid}\n")), Some((pid as i32, None)));
        assert!(!owner_is_gone(&format!("{pid}\n")), "no start time: alive");
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(owner_is_gone(&line), "dead");
    }
}
