//! The four measures every profile runs through, each a checker returning
//! data on the storage layer's in-memory backend:
//!
//! - [`kill_points`]: a kill after every storage operation of a scripted
//!   pair of sessions (the write in flight keeping half its bytes), then
//!   the profile's recovery on the next open and one clean consolidation:
//!   does recall still show every acknowledged fact?
//! - [`stale`]: a fact planted, superseded, then consolidations until the
//!   old value is gone from recall (or it survives them all).
//! - [`growth`]: 1,000 generated sessions, a consolidation after each (a
//!   compaction per session): bytes, files and versions on disk, refused
//!   writes, and sessions that ended past a documented limit.
//! - [`lost_updates`]: two consolidators, each carrying its own thread's
//!   facts, on one store, in every interleaving of their steps.

use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use super::{Ack, Fact, StoreProfile};
use crate::storage::{FaultPlan, Faulty, FileKind, MemFs, Shared};

/// The store's directory on the in-memory backend.
pub const ROOT: &str = "/store";
/// Consolidations the stale measure runs before it says the old value survives.
pub const STALE_CONSOLIDATIONS: u32 = 3;
/// Sessions the growth measure generates.
pub const GROWTH_SESSIONS: u64 = 1_000;
/// Most kill points tried: far more operations than the script makes.
const MAX_KILL_POINTS: u64 = 400;
/// Most schedules enumerated: far more than two consolidators make.
const MAX_SCHEDULES: usize = 20_000;

/// What [`kill_points`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct KillReport {
    /// Kill points tried (every operation of a clean run).
    pub points: u64,
    /// Points after which an acknowledged fact was missing from recall.
    pub losing: u64,
    /// Acknowledged facts missing, summed over the points.
    pub lost: u64,
    /// A few losing points (`point N: key`).
    pub samples: Vec<String>,
}

/// What [`stale`] found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StaleReport {
    /// Consolidations run at most.
    pub consolidations: u32,
    /// After how many consolidations the superseded value was gone from
    /// recall (0: at once); `None`: it survived them all.
    pub gone_after: Option<u32>,
}

/// What [`growth`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GrowthReport {
    /// Sessions generated.
    pub sessions: u64,
    /// Bytes of every file under the store at the end.
    pub bytes: u64,
    /// Files under the store at the end.
    pub files: u64,
    /// Versions kept besides the memories (`None`: the design keeps none).
    pub versions: Option<u64>,
    /// Writes refused (a documented limit).
    pub refused: u64,
    /// The session of the first refusal.
    pub first_refusal: Option<u64>,
    /// Sessions that ended with the store past a documented limit.
    pub over_limit: u64,
    /// The first such state, described.
    pub over_limit_sample: Option<String>,
}

/// What [`lost_updates`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LostUpdateReport {
    /// Interleavings of the two consolidators' steps enumerated.
    pub interleavings: u64,
    /// Interleavings after which a fact either consolidator acknowledged
    /// was missing from recall.
    pub losing: u64,
    /// Acknowledged facts missing, summed over the interleavings.
    pub lost: u64,
    /// A few losing schedules (`ABBA: key`).
    pub samples: Vec<String>,
}

/// One event of a scripted run.
#[derive(Debug, Clone)]
enum Event {
    Remember(&'static str, Fact),
    Consolidate,
}

/// Two sessions: three facts, a consolidation, then one fact superseded
/// and one new, and a consolidation.
fn kill_script() -> Vec<Event> {
    use Event::{Consolidate, Remember};
    vec![
        Remember("t000001", Fact::new("project", "build", "make")),
        Remember("t000001", Fact::new("project", "test", "cargo test")),
        Remember("t000001", Fact::new("user", "style", "tabs")),
        Consolidate,
        Remember("t000002", Fact::new("project", "build", "ninja")),
        Remember("t000002", Fact::new("user", "editor", "vim")),
        Consolidate,
    ]
}

fn fresh() -> Shared {
    Arc::new(MemFs::new())
}

/// Run `script` until its first error; the facts acknowledged so far.
fn run_script(p: &dyn StoreProfile, fs: &Shared, script: &[Event]) -> Vec<Fact> {
    let root = Path::new(ROOT);
    let mut acked = Vec::new();
    for e in script {
        let done = match e {
            Event::Remember(thread, f) => p.remember(fs, root, thread, f).map(|a| {
                if a == Ack::Stored {
                    acked.push(f.clone());
                }
            }),
            Event::Consolidate => p.consolidate(fs, root),
        };
        if done.is_err() {
            break;
        }
    }
    acked
}

/// Keys whose newest acknowledged value recall does not show. A value
/// of the same key written after it (in `written`, the script's order)
/// counts too: that write landed without its acknowledgement.
fn missing(acked: &[Fact], recalled: &[(String, String)], written: &[Fact]) -> Vec<String> {
    let keys: std::collections::BTreeSet<&str> = acked.iter().map(|f| f.key.as_str()).collect();
    keys.into_iter()
        .filter(|k| {
            let newest = acked.iter().rev().find(|f| f.key == *k);
            let after = newest
                .and_then(|n| written.iter().rposition(|f| f == n))
                .map_or(&[][..], |i| &written[i + 1..]);
            let fine: Vec<&String> = newest
                .into_iter()
                .chain(after.iter().filter(|f| f.key == *k))
                .map(|f| &f.value)
                .collect();
            !recalled
                .iter()
                .any(|(rk, rv)| rk == k && fine.contains(&rv))
        })
        .map(str::to_string)
        .collect()
}

/// The next open after a kill, one clean consolidation, then recall.
fn reopen(p: &dyn StoreProfile, fs: &Shared) -> std::io::Result<Vec<(String, String)>> {
    let root = Path::new(ROOT);
    p.recover(fs, root)?;
    p.consolidate(fs, root)?;
    p.recall(fs, root)
}

/// A kill after every operation of `kill_script`, each on a fresh store.
pub fn kill_points(p: &dyn StoreProfile) -> KillReport {
    let script = kill_script();
    let written: Vec<Fact> = script
        .iter()
        .filter_map(|e| match e {
            Event::Remember(_, f) => Some(f.clone()),
            Event::Consolidate => None,
        })
        .collect();
    let mut r = KillReport::default();
    for k in 1..=MAX_KILL_POINTS {
        let disk = fresh();
        let plan = FaultPlan {
            kill_after: Some(k),
            torn_kill: true,
            ..FaultPlan::default()
        };
        let faulty = Arc::new(Faulty::new(disk.clone(), plan));
        let acked = run_script(p, &(faulty.clone() as Shared), &script);
        if !faulty.killed() {
            break;
        }
        r.points += 1;
        let gone = match reopen(p, &disk) {
            Ok(recalled) => missing(&acked, &recalled, &written),
            Err(e) => vec![format!("the next open failed: {e}")],
        };
        if !gone.is_empty() {
            r.losing += 1;
            r.lost += gone.len() as u64;
            if r.samples.len() < 3 {
                r.samples.push(format!("point {k}: {}", gone.join(", ")));
            }
        }
    }
    r
}

/// Plant a fact, supersede it, and count consolidations until recall no
/// longer shows the old value.
pub fn stale(p: &dyn StoreProfile) -> StaleReport {
    let fs = fresh();
    let root = Path::new(ROOT);
    let old = Fact::new("project", "build", "make");
    let new = Fact::new("project", "build", "ninja");
    let shows_old = |fs: &Shared| {
        p.recall(fs, root).map_or(true, |r| {
            r.iter().any(|(k, v)| *k == old.key && *v == old.value)
        })
    };
    let planted = p.remember(&fs, root, "t000001", &old).is_ok()
        && p.consolidate(&fs, root).is_ok()
        && p.remember(&fs, root, "t000002", &new).is_ok();
    let mut report = StaleReport {
        consolidations: STALE_CONSOLIDATIONS,
        gone_after: None,
    };
    if !planted {
        return report;
    }
    for n in 0..=STALE_CONSOLIDATIONS {
        if !shows_old(&fs) {
            report.gone_after = Some(n);
            break;
        }
        if n < STALE_CONSOLIDATIONS && p.consolidate(&fs, root).is_err() {
            break;
        }
    }
    report
}

/// Filler that makes one journal line about 120 bytes: 1,000 sessions of
/// them pass 100 KB in one memory.
const JOURNAL: &str =
    "what the session learned, written out at its end the way an agent writes a journal entry, in full";

/// Session `i`'s facts: a recurring fact updated, one repeated word for
/// word, and a new journal line in one growing memory.
pub fn growth_facts(i: u64) -> Vec<Fact> {
    vec![
        Fact::new("project", "build", &format!("step {i}")),
        Fact::new("style", "indent", "tabs"),
        Fact::new("journal", &format!("s{i:04}"), JOURNAL),
    ]
}

/// [`GROWTH_SESSIONS`] generated sessions, each followed by a consolidation.
pub fn growth(p: &dyn StoreProfile) -> GrowthReport {
    let fs = fresh();
    let root = Path::new(ROOT);
    let mut r = GrowthReport {
        sessions: GROWTH_SESSIONS,
        ..GrowthReport::default()
    };
    for i in 1..=GROWTH_SESSIONS {
        let thread = format!("t{i:06}");
        for f in growth_facts(i) {
            if let Ok(Ack::Refused(_)) = p.remember(&fs, root, &thread, &f) {
                r.refused += 1;
                r.first_refusal.get_or_insert(i);
            }
        }
        let _ = p.consolidate(&fs, root);
        if let Some(past) = p.over_limit(&fs, root) {
            r.over_limit += 1;
            r.over_limit_sample
                .get_or_insert_with(|| format!("after session {i}: {past}"));
        }
    }
    (r.bytes, r.files) = size(&fs, root);
    r.versions = p.versions(&fs, root);
    r
}

/// Bytes and files under `dir`, every level.
fn size(fs: &Shared, dir: &Path) -> (u64, u64) {
    let mut total = (0, 0);
    for name in fs.list(dir).unwrap_or_default() {
        let path = dir.join(name);
        match fs.kind(&path) {
            Some(FileKind::Dir) => {
                let (b, f) = size(fs, &path);
                total = (total.0 + b, total.1 + f);
            }
            Some(_) => {
                let b = fs.read(&path).map_or(0, |b| b.len() as u64);
                total = (total.0 + b, total.1 + 1);
            }
            None => {}
        }
    }
    total
}

/// The two consolidators' threads and facts: different keys in the same
/// memory, so neither supersedes the other.
fn concurrent_facts() -> [(&'static str, Vec<Fact>); 2] {
    [
        (
            "t000002",
            vec![Fact::new("project", "test", "cargo nextest")],
        ),
        (
            "t000003",
            vec![Fact::new("project", "lint", "cargo clippy")],
        ),
    ]
}

/// Run one schedule (which consolidator takes each step) on a fresh store
/// seeded with one consolidated fact: the store, the facts acknowledged,
/// and the consolidators still unfinished when the schedule ran out.
fn run_schedule(p: &dyn StoreProfile, schedule: &[usize]) -> (Shared, Vec<Fact>, Vec<usize>) {
    let fs = fresh();
    let root = Path::new(ROOT);
    let seed = Fact::new("project", "build", "make");
    let _ = p.remember(&fs, root, "t000001", &seed);
    let _ = p.consolidate(&fs, root);
    let mut jobs: Vec<_> = concurrent_facts()
        .into_iter()
        .map(|(t, f)| p.consolidator(t, f))
        .collect();
    let mut done = [false, false];
    for &j in schedule {
        // A step that fails ends its job, which acknowledges only what it kept.
        if !done[j] {
            done[j] = jobs[j].step(&fs, root).unwrap_or(true);
        }
    }
    let mut acked = vec![seed];
    for j in &jobs {
        acked.extend(j.acknowledged());
    }
    let open = (0..2).filter(|j| !done[*j]).collect();
    (fs, acked, open)
}

/// Every interleaving of two consolidators' steps, each replayed on a
/// fresh store; then one clean consolidation and recall.
pub fn lost_updates(p: &dyn StoreProfile) -> LostUpdateReport {
    let mut r = LostUpdateReport::default();
    let mut stack: Vec<Vec<usize>> = vec![Vec::new()];
    while let Some(schedule) = stack.pop() {
        let (fs, acked, open) = run_schedule(p, &schedule);
        if !open.is_empty() && (r.interleavings as usize) < MAX_SCHEDULES {
            for j in open.into_iter().rev() {
                let mut next = schedule.clone();
                next.push(j);
                stack.push(next);
            }
            continue;
        }
        r.interleavings += 1;
        let root = Path::new(ROOT);
        let recalled = p
            .consolidate(&fs, root)
            .and_then(|()| p.recall(&fs, root))
            .unwrap_or_default();
        let gone = missing(&acked, &recalled, &[]);
        if !gone.is_empty() {
            r.losing += 1;
            r.lost += gone.len() as u64;
            if r.samples.len() < 3 {
                let s: String = schedule
                    .iter()
                    .map(|j| if *j == 0 { 'A' } else { 'B' })
                    .collect();
                r.samples.push(format!("{s}: {}", gone.join(", ")));
            }
        }
    }
    r
}

/// Every measure of one profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Measured {
    /// The profile's name.
    pub profile: String,
    /// Its design in one line, with its source.
    pub design: String,
    /// [`kill_points`].
    pub kill: KillReport,
    /// [`stale`].
    pub stale: StaleReport,
    /// [`growth`].
    pub growth: GrowthReport,
    /// [`lost_updates`].
    pub lost_updates: LostUpdateReport,
}

/// Run every measure on `p`.
pub fn measure(p: &dyn StoreProfile) -> Measured {
    Measured {
        profile: p.name().to_string(),
        design: p.design().to_string(),
        kill: kill_points(p),
        stale: stale(p),
        growth: growth(p),
        lost_updates: lost_updates(p),
    }
}

/// Every registered profile, measured (what `lab reports` shows).
pub fn measure_all() -> Vec<Measured> {
    super::profiles()
        .iter()
        .map(|p| measure(p.as_ref()))
        .collect()
}
