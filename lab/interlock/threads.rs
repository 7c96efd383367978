//! Two real threads consolidating one store on disk, with and without the
//! lock file.
//!
//! [`super::schedule::two_processes`] interleaves two consolidations on a
//! simulated clock; here two OS threads each open the store on the disk
//! backend (as two processes would) and race. Barriers make the outcome
//! deterministic without taking the race away:
//! - without the lock, both threads read the store before either writes
//!   (barrier `read`), then write in a fixed order (barrier `turn`) — the
//!   second write replaces the first thread's merge: a lost update every time;
//! - with the lock, both threads try to create the lock file at the same
//!   instant (barrier `read`). The file is created with `O_EXCL`
//!   (`create_new`), so the kernel lets exactly one of them win; which one is
//!   not decided by this code. Neither proceeds before both have tried
//!   (barrier `tried`); the loser then waits for the winner to finish
//!   (barrier `turn`), takes the lock, re-reads and merges into the winner's result:
//!   nothing is lost, whoever won.

use std::path::Path;
use std::sync::{Arc, Barrier};

use serde::Serialize;

use super::schedule::{apply, kept, plan, try_lock, unlock, Gates};
use crate::counters::Counters;
use crate::error::{LabError, LabResult};
use crate::memory::store::{Memory, Store};
use crate::memory::switches::MemorySwitches;
use crate::storage::{DiskFs, Shared};

/// The three preferences: thread `b` merges `b` into `a`, thread `c` merges `c`.
pub const PREFS: [(&str, &str); 3] = [
    ("a", "Use tabs, not spaces."),
    ("b", "Use single quotes."),
    ("c", "Run the tests with --release."),
];

/// What one race left behind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Race {
    /// Names of the preferences no memory holds any more.
    pub lost: Vec<String>,
    /// Threads that took the lock at their first try (with the lock: one).
    pub first_try_winners: usize,
    /// Memories left in the store.
    pub memories_left: usize,
}

/// A store in `dir` on the disk backend holding [`PREFS`].
fn seeded(dir: &Path) -> LabResult<Store> {
    let store = open(dir)?;
    for (name, body) in PREFS {
        store.save(&Memory {
            name: name.into(),
            mem_type: "user".into(),
            description: format!("preference {name}"),
            body: body.into(),
        })?;
    }
    Ok(store)
}

/// The store in `dir`, opened afresh on the disk backend (one per thread, as
/// a process would).
fn open(dir: &Path) -> LabResult<Store> {
    let fs: Shared = Arc::new(DiskFs);
    Store::open_in(fs, dir, &dir.join(".memory"), MemorySwitches::default())
}

/// The barriers both threads meet at.
struct Meet {
    read: Barrier,
    tried: Barrier,
    turn: Barrier,
}

/// Thread `from` without the lock: read, wait for the other's read, write
/// (`b` first, then `c`). Barriers are met even after an error, so a failing
/// thread never strands the other.
fn unlocked(store: &Store, from: &str, meet: &Meet) -> LabResult<bool> {
    let planned = plan(store, "a", from);
    meet.read.wait();
    if from == "c" {
        meet.turn.wait();
    }
    let written = planned.and_then(|p| apply(store, &p));
    if from == "b" {
        meet.turn.wait();
    }
    written.map(|()| false)
}

/// One consolidation under the lock (taken by the caller).
fn pass(store: &Store, from: &str) -> LabResult<()> {
    let done = plan(store, "a", from).and_then(|p| apply(store, &p));
    unlock(store)?;
    done
}

/// Thread `from` with the lock: both try at once; the winner consolidates,
/// then the loser takes the lock and consolidates on the winner's result.
fn locked(store: &Store, from: &str, meet: &Meet, gates: &Gates) -> LabResult<bool> {
    meet.read.wait();
    let first = try_lock(store, from, 0, gates);
    // Nobody releases before both have tried: otherwise a slow thread could
    // find the lock already released and never contend at all.
    meet.tried.wait();
    let won = matches!(first, Ok(Some(_)));
    let winner_done = if won { pass(store, from) } else { Ok(()) };
    meet.turn.wait();
    first?;
    winner_done?;
    if !won {
        if try_lock(store, from, 0, gates)?.is_none() {
            return Err(LabError::usage(
                format!("thread {from} found the lock still held after the winner released it"),
                "remove a leftover .consolidate.lock from the store",
            ));
        }
        pass(store, from)?;
    }
    Ok(won)
}

/// Race two threads on a fresh store in `dir` (which must be empty or absent).
pub fn race(dir: &Path, gates: &Gates) -> LabResult<Race> {
    std::fs::create_dir_all(dir).map_err(|e| LabError::io("creating the race's store", dir, e))?;
    seeded(dir)?;
    let stores = [open(dir)?, open(dir)?];
    let meet = Meet {
        read: Barrier::new(2),
        tried: Barrier::new(2),
        turn: Barrier::new(2),
    };
    let results: Vec<LabResult<bool>> = std::thread::scope(|s| {
        let handles: Vec<_> = stores
            .iter()
            .zip(["b", "c"])
            .map(|(store, from)| {
                let meet = &meet;
                s.spawn(move || match gates.use_lock {
                    true => locked(store, from, meet, gates),
                    false => unlocked(store, from, meet),
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(LabError::usage("a racing thread panicked", "report a bug"))
                })
            })
            .collect()
    });
    let mut winners = 0;
    for r in results {
        winners += r? as usize;
    }
    let bodies: Vec<String> = open(dir)?
        .records()?
        .into_iter()
        .map(|r| r.memory.body)
        .collect();
    Ok(Race {
        lost: PREFS
            .iter()
            .filter(|(_, f)| !kept(&bodies, f))
            .map(|(n, _)| n.to_string())
            .collect(),
        first_try_winners: winners,
        memories_left: bodies.len(),
    })
}

/// `reps` races, each in a fresh directory under the system's temp dir
/// (removed afterwards), as counters.
pub fn races(gates: &Gates, reps: usize) -> LabResult<Counters> {
    let (mut lost, mut reps_lost, mut winners) = (Vec::new(), 0u64, 0u64);
    for i in 0..reps {
        let tmp = tempfile::Builder::new()
            .prefix("ctxlab-race-")
            .tempdir()
            .map_err(|e| LabError::io("creating a temp dir", std::env::temp_dir(), e))?;
        let r = race(&tmp.path().join("store"), gates)?;
        reps_lost += (!r.lost.is_empty()) as u64;
        winners += r.first_try_winners as u64;
        lost.extend(r.lost.into_iter().map(|n| format!("rep {i}: {n}")));
    }
    let mut c = Counters::default();
    c.count("facts_lost_by_consolidation", lost.len() as u64, lost);
    c.count("lost_update_races", reps_lost, std::iter::empty());
    c.count("lock_won_at_first_try", winners, std::iter::empty());
    Ok(c)
}

/// Repetitions of the row.
pub const REPS: usize = 8;

fn run_threads(_: &crate::registry::RunOptions) -> LabResult<crate::registry::ExperimentVerdict> {
    let cell = crate::registry::Cell {
        label: format!("two threads, one disk store, {REPS} races"),
        baseline: races(&Gates::default(), REPS)?,
        broken: races(
            &Gates {
                use_lock: false,
                ..Gates::default()
            },
            REPS,
        )?,
        ..Default::default()
    };
    crate::registry::ExperimentVerdict::of_row(EXPERIMENTS, "I-lock-threads", vec![cell])
}

/// The real-concurrency row.
pub static EXPERIMENTS: &[crate::registry::Experiment] = &[crate::registry::Experiment {
    id: "I-lock-threads",
    mechanism: crate::registry::Mechanism::Interlock,
    kind: crate::registry::Kind::Break,
    title: "two real threads consolidate one disk store: without the O_EXCL lock file a lost update every race",
    change: "interlock::schedule::Gates.use_lock = false (threads, disk backend)",
    caught_by: &["facts_lost_by_consolidation", "lost_update_races"],
    seed: "section 8: the product's four gates and a lock file",
    run: run_threads,
    expect: &[
        crate::registry::every("facts_lost_by_consolidation", 0, REPS as u64),
        crate::registry::every("lost_update_races", 0, REPS as u64),
        crate::registry::every("lock_won_at_first_try", REPS as u64, 0),
    ],
}];
