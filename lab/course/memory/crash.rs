//! Crash and full-disk windows of one consolidation pass, enumerated through
//! the storage layer: a kill after every file-system operation, and a full
//! disk at every write, each on a fresh copy of the same store.
//!
//! After each fault the store is reopened on the undamaged backend (what the
//! next run sees, with its recovery) and judged: the memories must be either
//! all of the acknowledged ones (the pass rolled back) or exactly what a
//! clean pass leaves (it committed); anything else lost acknowledged
//! memories. The index must equal what the files derive, and nothing outside
//! the store may change. Checkers return data: counts plus a few samples.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use super::checker::files_outside;
use super::consolidate::{consolidate, ConsolidatorScript, FaultPlan as PassFaults};
use super::store::{Memory, Store};
use super::switches::{MemoryConstants, MemorySwitches};
use crate::counters::Counters;
use crate::error::LabResult;
use crate::storage::{is_temp_name, FaultPlan, Faulty, FileKind, MemFs, Shared, Storage};

/// Acknowledged memories in the store before the pass.
pub const RECORDS: usize = 10;

const WORKSPACE: &str = "/w";
const STORE: &str = "/w/.memory";

/// What one enumeration found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct WindowReport {
    /// Fault points tried.
    pub points: u64,
    /// Points after which acknowledged memories were missing (samples: `n:op`).
    pub losing: Vec<String>,
    /// Acknowledged memories missing, summed over all points.
    pub lost: u64,
    /// Points whose index differed from what the files derive.
    pub index_drift: u64,
    /// Points that changed a file outside the store.
    pub escapes: u64,
    /// Points whose temp files survived the reopen (its cleanup must remove them).
    pub leftover_temps: u64,
    /// Points whose failing pass left a temp file behind before any reopen:
    /// a partial temp file keeps its space on a full disk (meaningless after
    /// a kill, which cannot clean up).
    pub temps_after_failure: u64,
    /// Distinct operation numbers at which the fault hit.
    pub hit_ops: u64,
}

impl WindowReport {
    /// The report as counters, prefixed by `what` (`crash` or `full_disk`).
    pub fn counters(&self, what: &str) -> Counters {
        let mut c = Counters::default();
        c.count(format!("{what}_points"), self.points, std::iter::empty());
        c.count(
            format!("{what}_points_losing"),
            self.losing.len() as u64,
            self.losing.iter().take(3).cloned(),
        );
        c.count("acknowledged_lost", self.lost, std::iter::empty());
        c.count("index_drift", self.index_drift, std::iter::empty());
        c.count("written_outside_store", self.escapes, std::iter::empty());
        c.count("leftover_temps", self.leftover_temps, std::iter::empty());
        if what != "crash" {
            c.count(
                "temps_after_failure",
                self.temps_after_failure,
                std::iter::empty(),
            );
        }
        c
    }
}

fn memory(i: usize) -> Memory {
    Memory {
        name: format!("fact {i:02}"),
        mem_type: "project".into(),
        description: format!("fact number {i}"),
        body: format!("Body {i}."),
    }
}

/// A fresh in-memory workspace with a store of [`RECORDS`] acknowledged
/// memories and one unrelated file outside the store.
fn seeded(sw: MemorySwitches) -> LabResult<Arc<MemFs>> {
    let fs = Arc::new(MemFs::new());
    let shared: Shared = fs.clone();
    let store = Store::open(shared.clone(), Path::new(STORE), sw)?;
    for i in 0..RECORDS {
        store.save(&memory(i))?;
    }
    shared
        .write_new(Path::new("/w/notes.txt"), b"outside")
        .map_err(|e| crate::error::LabError::io("seeding", "/w/notes.txt", e))?;
    Ok(fs)
}

/// Names of the memories a store holds.
fn names(store: &Store) -> LabResult<BTreeSet<String>> {
    Ok(store
        .records()?
        .into_iter()
        .map(|r| r.memory.name)
        .collect())
}

/// One consolidation pass under `plan`; returns the faulty backend (for its log).
fn pass(base: &Arc<MemFs>, sw: MemorySwitches, plan: FaultPlan) -> Arc<Faulty> {
    let faulty = Arc::new(Faulty::new(base.clone(), plan));
    let shared: Shared = faulty.clone();
    let constants = MemoryConstants::default();
    // A failing pass is the point of the exercise; its verdict is judged on disk.
    let _ = Store::open(shared, Path::new(STORE), sw).and_then(|s| {
        consolidate(
            &s,
            &ConsolidatorScript::MergePairs,
            &PassFaults::default(),
            &constants,
        )
    });
    faulty
}

/// Names before and after a clean pass, and the clean pass's operation log.
fn clean_run(
    sw: MemorySwitches,
) -> LabResult<(
    BTreeSet<String>,
    BTreeSet<String>,
    Vec<crate::storage::OpLog>,
)> {
    let base = seeded(sw)?;
    let before = names(&Store::open(base.clone(), Path::new(STORE), sw)?)?;
    let faulty = pass(&base, sw, FaultPlan::default());
    let after = names(&Store::open(base.clone(), Path::new(STORE), sw)?)?;
    Ok((before, after, faulty.log()))
}

fn temps_left(fs: &dyn Storage) -> bool {
    fs.list(Path::new(STORE)).is_ok_and(|l| {
        l.iter().any(|n| {
            is_temp_name(n) && fs.kind(&PathBuf::from(STORE).join(n)) == Some(FileKind::File)
        })
    })
}

/// Run every plan on a fresh store and judge the reopened store.
/// `plans` pairs each plan with the operation it targets (for samples and hits).
fn enumerate(sw: MemorySwitches, plans: Vec<(u64, FaultPlan)>) -> LabResult<WindowReport> {
    let (before, after, log) = clean_run(sw)?;
    let mut r = WindowReport::default();
    let mut hit = BTreeSet::new();
    for (target, plan) in plans {
        let base = seeded(sw)?;
        let outside = files_outside(base.as_ref(), Path::new(WORKSPACE), Path::new(STORE))?;
        let faulty = pass(&base, sw, plan.clone());
        if faulty.log().iter().any(|o| o.n == target && !o.ok) {
            hit.insert(target);
        }
        let at = log
            .iter()
            .find(|o| o.n == target)
            .map_or(format!("{target}"), |o| format!("{target}:{}", o.op));
        r.points += 1;
        r.temps_after_failure += u64::from(temps_left(base.as_ref()));
        let store = Store::open(base.clone(), Path::new(STORE), sw)?;
        r.leftover_temps += u64::from(temps_left(base.as_ref()));
        let now = names(&store)?;
        if now != after {
            let lost = before.difference(&now).count() as u64;
            if lost > 0 {
                r.losing.push(at);
                r.lost += lost;
            }
        }
        r.index_drift += u64::from(store.read_index()? != store.derived_index()?);
        let outside_now = files_outside(base.as_ref(), Path::new(WORKSPACE), Path::new(STORE))?;
        r.escapes += u64::from(outside_now != outside);
    }
    r.hit_ops = hit.len() as u64;
    Ok(r)
}

/// A kill after every operation of the pass (0 = before the first).
pub fn kill_window(sw: MemorySwitches) -> LabResult<WindowReport> {
    let (_, _, log) = clean_run(sw)?;
    let plans = (0..=log.len() as u64)
        .map(|k| {
            let plan = FaultPlan {
                kill_after: Some(k),
                ..FaultPlan::default()
            };
            (k, plan)
        })
        .collect();
    enumerate(sw, plans)
}

/// A full disk at every write of the pass (free space drops to 0 there).
pub fn full_disk_window(sw: MemorySwitches) -> LabResult<WindowReport> {
    let (_, _, log) = clean_run(sw)?;
    let plans = log
        .iter()
        .filter(|o| o.op == "write_new" || o.op == "write")
        .map(|o| {
            let plan = FaultPlan {
                full_at: Some(o.n),
                ..FaultPlan::default()
            };
            (o.n, plan)
        })
        .collect();
    enumerate(sw, plans)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn course() -> MemorySwitches {
        MemorySwitches {
            crash_journal: false,
            ..MemorySwitches::default()
        }
    }

    #[test]
    fn a_kill_anywhere_loses_nothing_with_the_journal() {
        let r = kill_window(MemorySwitches::default()).unwrap();
        assert!(r.points > 20, "{r:?}");
        assert_eq!(
            (r.losing.len(), r.lost, r.index_drift, r.escapes),
            (0, 0, 0, 0),
            "{r:?}"
        );
        assert_eq!(r.leftover_temps, 0, "the reopen removes stale temps: {r:?}");
        assert!(
            r.temps_after_failure > 0,
            "some kills strand a temp file: {r:?}"
        );
    }

    /// Recovery is idempotent: a kill after every operation of the recovery
    /// of every interrupted pass, then one more open, still loses nothing.
    #[test]
    fn a_kill_during_recovery_is_recovered_by_the_next_open() {
        let sw = MemorySwitches::default();
        let (before, after, log) = clean_run(sw).unwrap();
        let store_at = |fs: Shared| Store::open(fs, Path::new(STORE), sw);
        let mut nested = 0;
        for k in 0..=log.len() as u64 {
            let kill = |k| FaultPlan {
                kill_after: Some(k),
                ..FaultPlan::default()
            };
            let base = seeded(sw).unwrap();
            pass(&base, sw, kill(k));
            // Count the recovery's operations on a copy of this state.
            let probe = Arc::new(Faulty::new(copy(&base), FaultPlan::default()));
            store_at(probe.clone()).unwrap();
            for j in 0..probe.ops() {
                let fs = copy(&base);
                let _ = store_at(Arc::new(Faulty::new(fs.clone(), kill(j))));
                let now = names(&store_at(fs.clone()).unwrap()).unwrap();
                assert!(now == before || now == after, "kill {k}, then {j}: {now:?}");
                nested += 1;
            }
        }
        assert!(nested > 20, "{nested} nested kill points");
    }

    /// A copy of a memory file system (files, directories; no links here).
    fn copy(src: &Arc<MemFs>) -> Arc<MemFs> {
        let dst = Arc::new(MemFs::new());
        for (path, kind) in src.tree() {
            match kind {
                FileKind::Dir => dst.create_dir_all(&path).unwrap(),
                FileKind::File => dst.write_new(&path, &src.read(&path).unwrap()).unwrap(),
                FileKind::Symlink => dst.symlink(&src.read_link(&path).unwrap(), &path).unwrap(),
            }
        }
        dst
    }

    #[test]
    fn the_courses_in_memory_snapshot_loses_memories_to_a_kill() {
        let r = kill_window(course()).unwrap();
        assert!(!r.losing.is_empty() && r.lost > 0, "{r:?}");
        assert_eq!((r.index_drift, r.escapes), (0, 0), "{r:?}");
    }

    #[test]
    fn a_full_disk_at_any_write_loses_nothing_after_recovery() {
        let r = full_disk_window(MemorySwitches::default()).unwrap();
        assert_eq!(r.hit_ops, r.points, "every write was hit: {r:?}");
        assert_eq!(
            (r.losing.len(), r.lost, r.index_drift, r.escapes),
            (0, 0, 0, 0),
            "{r:?}"
        );
        assert_eq!((r.leftover_temps, r.temps_after_failure), (0, 0), "{r:?}");
    }
}

#[cfg(test)]
mod course_tests {
    use super::*;

    #[test]
    fn the_courses_rollback_cannot_restore_onto_a_full_disk() {
        let sw = MemorySwitches {
            crash_journal: false,
            ..MemorySwitches::default()
        };
        let r = full_disk_window(sw).unwrap();
        assert!(!r.losing.is_empty() && r.lost > 0, "{r:?}");
        assert_eq!((r.escapes, r.leftover_temps), (0, 0), "{r:?}");
    }
}
