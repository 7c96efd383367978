//! The product's consolidation scheduling on a simulated clock: four gates
//! (hours since the last pass, sessions touched since, a scan throttle, and a
//! lock file that expires after a crash) and two processes on one store.
//!
//! Constants follow the public description of the product's "autoDream"
//! (`../shared/research/peers.md` §2: 24 h, 5 sessions, a 10-minute scan
//! throttle, a lock). The lock's expiry time is not published; 60 minutes is
//! this lab's approximation, and the switch `stale_lock_min: None` models a
//! lock that never expires.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{LabError, LabResult};
use crate::memory::store::{Memory, Store};

/// Minutes to milliseconds.
const MIN: u64 = 60_000;

/// The gates, with the product's values (`stale_lock_min` approximate).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Gates {
    /// Hours since the last consolidation (`minHours`).
    pub min_hours: u64,
    /// Sessions touched since the last consolidation (`minSessions`).
    pub min_sessions: usize,
    /// Minutes between two scans of the gates.
    pub scan_throttle_min: u64,
    /// Minutes after which a held lock is taken over; `None`: never.
    pub stale_lock_min: Option<u64>,
    /// Whether a pass takes the lock at all.
    pub use_lock: bool,
}

impl Default for Gates {
    fn default() -> Self {
        Gates {
            min_hours: 24,
            min_sessions: 5,
            scan_throttle_min: 10,
            stale_lock_min: Some(60),
            use_lock: true,
        }
    }
}

/// What one attempt to consolidate met.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Attempt {
    /// Scanned too recently.
    Throttled,
    /// Too few hours since the last pass.
    TooSoon,
    /// Too few sessions since the last pass.
    TooFewSessions,
    /// Another process holds the lock.
    Locked,
    /// The pass ran (taking over a stale lock if `stale`).
    Ran {
        /// The lock was taken over from a crashed holder.
        stale: bool,
    },
}

/// The lock file of a store.
pub fn lock_path(store: &Store) -> PathBuf {
    store.root().join(".consolidate.lock")
}

/// Take the lock for `holder` at `now_ms`: `Ok(Some(stale))` when taken,
/// `Ok(None)` when another live holder has it.
pub fn try_lock(
    store: &Store,
    holder: &str,
    now_ms: u64,
    gates: &Gates,
) -> LabResult<Option<bool>> {
    let fs = store.fs();
    let path = lock_path(store);
    let body = format!("{holder} {now_ms}");
    if fs.write_new(&path, body.as_bytes()).is_ok() {
        return Ok(Some(false));
    }
    let text = fs
        .read_to_string(&path)
        .map_err(|e| LabError::io("reading the consolidation lock", &path, e))?;
    let at: u64 = text
        .split_whitespace()
        .nth(1)
        .and_then(|t| t.parse().ok())
        .unwrap_or(0);
    let stale = gates
        .stale_lock_min
        .is_some_and(|m| now_ms.saturating_sub(at) > m * MIN);
    if !stale {
        return Ok(None);
    }
    fs.remove_file(&path)
        .map_err(|e| LabError::io("removing a stale lock", &path, e))?;
    fs.write_new(&path, body.as_bytes())
        .map_err(|e| LabError::io("taking over the lock", &path, e))?;
    Ok(Some(true))
}

/// Release the lock.
pub fn unlock(store: &Store) -> LabResult<()> {
    let path = lock_path(store);
    store
        .fs()
        .remove_file(&path)
        .map_err(|e| LabError::io("releasing the consolidation lock", &path, e))
}

/// One process's view of the schedule.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Schedule {
    /// When the last pass ran.
    pub last_pass_ms: Option<u64>,
    /// When the gates were last scanned.
    pub last_scan_ms: Option<u64>,
    /// Sessions touched since the last pass.
    pub sessions_since: usize,
}

impl Schedule {
    /// The gates at `now_ms`, before the lock: `None` when the pass may start.
    pub fn gate(&mut self, now_ms: u64, g: &Gates) -> Option<Attempt> {
        if self
            .last_scan_ms
            .is_some_and(|s| now_ms.saturating_sub(s) < g.scan_throttle_min * MIN)
        {
            return Some(Attempt::Throttled);
        }
        self.last_scan_ms = Some(now_ms);
        if self
            .last_pass_ms
            .is_some_and(|p| now_ms.saturating_sub(p) < g.min_hours * 60 * MIN)
        {
            return Some(Attempt::TooSoon);
        }
        if self.sessions_since < g.min_sessions {
            return Some(Attempt::TooFewSessions);
        }
        None
    }
}

/// A consolidation planned from what a process read: merge the body of
/// `from` into `into`, then delete `from`.
pub(super) fn plan(store: &Store, into: &str, from: &str) -> LabResult<(Memory, String)> {
    let records = store.records()?;
    let find = |n: &str| records.iter().find(|r| r.memory.name == n).cloned();
    let (Some(a), Some(b)) = (find(into), find(from)) else {
        return Err(LabError::usage(
            format!("no memory {into} or {from} to merge"),
            "seed both first",
        ));
    };
    let mut merged = a.memory.clone();
    merged.body = format!("{} {}", a.memory.body, b.memory.body);
    Ok((merged, b.memory.name))
}

/// Write a planned consolidation: the merged memory, then the deletion.
pub(super) fn apply(store: &Store, (merged, gone): &(Memory, String)) -> LabResult<()> {
    store.save(merged)?;
    store.delete(gone)?;
    Ok(())
}

/// Two processes consolidate one store: P1 merges `b` into `a`, P2 merges `c`
/// into `a`. Without the lock both read first and write after, so P2's write
/// of `a` overwrites P1's (the classic lost update); with it, P2 finds the
/// lock held, retries after P1 released it and merges into P1's result.
/// Returns the memories' bodies at the end.
pub fn two_processes(store: &Store, gates: &Gates) -> LabResult<Vec<String>> {
    if gates.use_lock {
        let p1 = try_lock(store, "p1", 0, gates)?.is_some();
        let p2_first = try_lock(store, "p2", MIN, gates)?;
        if p1 {
            apply(store, &plan(store, "a", "b")?)?;
            unlock(store)?;
        }
        if p2_first.is_none() && try_lock(store, "p2", 11 * MIN, gates)?.is_some() {
            apply(store, &plan(store, "a", "c")?)?;
            unlock(store)?;
        }
    } else {
        let p1 = plan(store, "a", "b")?;
        let p2 = plan(store, "a", "c")?;
        apply(store, &p1)?;
        apply(store, &p2)?;
    }
    Ok(store
        .records()?
        .into_iter()
        .map(|r| r.memory.body)
        .collect())
}

/// A holder takes the lock and crashes; another process then tries every
/// `every_min` minutes for `hours` hours with its gates open. Returns each
/// attempt's outcome.
pub fn crashed_holder(
    store: &Store,
    gates: &Gates,
    every_min: u64,
    hours: u64,
) -> LabResult<Vec<Attempt>> {
    try_lock(store, "crashed", 0, gates)?;
    let mut s = Schedule {
        sessions_since: gates.min_sessions,
        ..Schedule::default()
    };
    let mut out = Vec::new();
    let mut t = every_min * MIN;
    while t <= hours * 60 * MIN {
        let attempt = match s.gate(t, gates) {
            Some(a) => a,
            None => match try_lock(store, "next", t, gates)? {
                None => Attempt::Locked,
                Some(stale) => {
                    unlock(store)?;
                    s.last_pass_ms = Some(t);
                    s.sessions_since = 0;
                    Attempt::Ran { stale }
                }
            },
        };
        out.push(attempt);
        t += every_min * MIN;
    }
    Ok(out)
}

/// Does any memory's body hold `fact`?
pub fn kept(bodies: &[String], fact: &str) -> bool {
    bodies.iter().any(|b| b.contains(fact))
}

/// The store's lock path relative to the store (for messages).
pub fn lock_name() -> &'static Path {
    Path::new(".consolidate.lock")
}
