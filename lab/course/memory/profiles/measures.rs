//! The measures every profile runs through, each a checker returning data
//! on the storage layer's in-memory backend:
//!
//! - [`fault_points`]: a fault at every storage operation of a scripted
//!   pair of sessions: a kill (the write in flight keeping half its bytes),
//!   an I/O error, or a full disk from that operation on. Then the
//!   profile's recovery on the next open and recall, read right after the
//!   restart (before any consolidation) and again after one clean
//!   consolidation: does recall still show every acknowledged fact, and
//!   every fact it showed before the fault?
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

/// Which fault [`fault_points`] injects at each operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// The process dies after the operation before it; the write in flight
    /// keeps half its bytes.
    Kill,
    /// The operation fails once with an I/O error; the process goes on.
    IoError,
    /// From the operation on, the disk is full; the process goes on, and
    /// the next start finds space again.
    FullDisk,
}

/// What [`fault_points`] found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FaultReport {
    /// The fault injected.
    pub fault: FaultKind,
    /// Fault points tried (every operation of a clean run).
    pub points: u64,
    /// Facts the clean run acknowledges (0: the design acknowledges
    /// nothing, and the acknowledged-loss counts below do not apply).
    pub acknowledged: u64,
    /// Points after which recall, read right after the restart, misses an
    /// acknowledged fact.
    pub losing_at_restart: u64,
    /// Acknowledged facts missing right after the restart, summed.
    pub lost_at_restart: u64,
    /// Points after which recall still misses one after a clean consolidation.
    pub losing_after_consolidation: u64,
    /// Points after which recall right after the restart misses a fact it
    /// showed before the fault (acknowledged or not).
    pub regressed: u64,
    /// A few losing or regressing points (`point N: key`).
    pub samples: Vec<String>,
}

/// What a kill at every point found (the kill row of [`fault_points`]).
pub type KillReport = FaultReport;

/// What [`stale`] found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StaleReport {
    /// Consolidations run at most.
    pub consolidations: u32,
    /// After how many consolidations the superseded value was gone from
    /// recall (0: at once); `None`: it survived them all.
    pub gone_after: Option<u32>,
    /// Why the design cannot fail this measure (it keeps both facts by
    /// design), where it cannot.
    pub not_applicable: Option<String>,
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
    /// Why no session can end past a limit (the design documents none).
    pub limits_not_applicable: Option<String>,
    /// The first such state, described.
    pub over_limit_sample: Option<String>,
}

/// What [`lost_updates`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LostUpdateReport {
    /// Interleavings of the two consolidators' steps enumerated.
    pub interleavings: u64,
    /// Facts acknowledged, summed over the interleavings (0: the design
    /// acknowledges nothing, and the losses below do not apply).
    pub acknowledged: u64,
    /// Interleavings after which a fact either consolidator acknowledged
    /// was missing from recall.
    pub losing: u64,
    /// Acknowledged facts missing, summed over the interleavings.
    pub lost: u64,
    /// Why no update can be lost in this design.
    pub not_applicable: Option<String>,
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

/// Run `script`; the facts acknowledged, and the index of the first event
/// that failed. A kill ends the run; any other error ends only its event.
fn run_script(p: &dyn StoreProfile, fs: &Shared, script: &[Event]) -> (Vec<Fact>, Option<usize>) {
    let root = Path::new(ROOT);
    let mut acked = Vec::new();
    let mut failed = None;
    for (i, e) in script.iter().enumerate() {
        let done = match e {
            Event::Remember(thread, f) => p.remember(fs, root, thread, f).map(|a| {
                if a == Ack::Stored {
                    acked.push(f.clone());
                }
            }),
            Event::Consolidate => p.consolidate(fs, root),
        };
        if let Err(err) = done {
            failed.get_or_insert(i);
            if err.kind() == std::io::ErrorKind::Interrupted {
                break;
            }
        }
    }
    (acked, failed)
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
                .and_then(|n| {
                    written
                        .iter()
                        .rposition(|f| f.key == n.key && f.value == n.value)
                })
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

/// The facts recall shows after each prefix of `script` in a clean run
/// (`[0]`: before any event).
fn shown_before(p: &dyn StoreProfile, script: &[Event]) -> Vec<Vec<Fact>> {
    let fs = fresh();
    let mut out = vec![Vec::new()];
    for n in 1..=script.len() {
        let _ = run_script(p, &fs, &script[n - 1..n]);
        let shown = p.recall(&fs, Path::new(ROOT)).unwrap_or_default();
        out.push(
            shown
                .into_iter()
                .map(|(k, v)| Fact::new("", &k, &v))
                .collect(),
        );
    }
    out
}

/// A fault of `kind` at every operation of `kill_script`, each on a fresh
/// store; recall read right after the next open's recovery, and again
/// after one clean consolidation.
pub fn fault_points(p: &dyn StoreProfile, kind: FaultKind) -> FaultReport {
    let script = kill_script();
    let written: Vec<Fact> = script
        .iter()
        .filter_map(|e| match e {
            Event::Remember(_, f) => Some(f.clone()),
            Event::Consolidate => None,
        })
        .collect();
    // A clean run event by event: what it acknowledges, and the operation
    // count after each event (which event a fault point falls in).
    let clean = Arc::new(Faulty::new(fresh(), FaultPlan::default()));
    let mut clean_acked = Vec::new();
    let mut bounds = vec![0];
    for e in script.chunks(1) {
        clean_acked.extend(run_script(p, &(clean.clone() as Shared), e).0);
        bounds.push(clean.ops());
    }
    let ops = clean.ops();
    // The event operation `k` belongs to: recall must keep what it showed before it.
    let event_of = |k: u64| {
        bounds
            .iter()
            .skip(1)
            .position(|b| *b >= k)
            .unwrap_or(script.len())
    };
    let before = shown_before(p, &script);
    let root = Path::new(ROOT);
    let mut r = FaultReport {
        fault: kind,
        points: 0,
        acknowledged: clean_acked.len() as u64,
        losing_at_restart: 0,
        lost_at_restart: 0,
        losing_after_consolidation: 0,
        regressed: 0,
        samples: Vec::new(),
    };
    for k in 1..=ops.min(MAX_KILL_POINTS) {
        let disk = fresh();
        let plan = match kind {
            FaultKind::Kill => FaultPlan {
                kill_after: Some(k - 1),
                torn_kill: true,
                ..FaultPlan::default()
            },
            FaultKind::IoError => FaultPlan {
                io_error_at: Some(k),
                ..FaultPlan::default()
            },
            FaultKind::FullDisk => FaultPlan {
                free_bytes: Some(u64::MAX / 2),
                full_at: Some(k),
                ..FaultPlan::default()
            },
        };
        let faulty = Arc::new(Faulty::new(disk.clone(), plan));
        let (acked, _) = run_script(p, &(faulty.clone() as Shared), &script);
        r.points += 1;
        let at_restart = p.recover(&disk, root).and_then(|()| p.recall(&disk, root));
        let (gone, regressed) = match at_restart {
            Ok(recalled) => (
                missing(&acked, &recalled, &written),
                missing(&before[event_of(k)], &recalled, &written),
            ),
            Err(e) => (vec![format!("the next open failed: {e}")], vec![]),
        };
        let after = p
            .consolidate(&disk, root)
            .and_then(|()| p.recall(&disk, root))
            .map(|recalled| missing(&acked, &recalled, &written))
            .unwrap_or_else(|e| vec![format!("the consolidation after the restart failed: {e}")]);
        if !gone.is_empty() {
            r.losing_at_restart += 1;
            r.lost_at_restart += gone.len() as u64;
        }
        if !after.is_empty() {
            r.losing_after_consolidation += 1;
        }
        if !regressed.is_empty() {
            r.regressed += 1;
        }
        if (!gone.is_empty() || !regressed.is_empty()) && r.samples.len() < 3 {
            let mut s = format!("point {k}:");
            if !gone.is_empty() {
                s.push_str(&format!(" lost {}", gone.join(", ")));
            }
            if !regressed.is_empty() {
                s.push_str(&format!(" regressed {}", regressed.join(", ")));
            }
            r.samples.push(s);
        }
    }
    r
}

/// A kill after every operation of `kill_script` (see [`fault_points`]).
pub fn kill_points(p: &dyn StoreProfile) -> FaultReport {
    fault_points(p, FaultKind::Kill)
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
        not_applicable: p.not_applicable(super::Measure::Stale).map(str::to_string),
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
    r.limits_not_applicable = p.not_applicable(super::Measure::Limits).map(str::to_string);
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
    let seed_acked = matches!(p.remember(&fs, root, "t000001", &seed), Ok(Ack::Stored));
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
    let mut acked: Vec<Fact> = [seed].into_iter().filter(|_| seed_acked).collect();
    for j in &jobs {
        acked.extend(j.acknowledged());
    }
    let open = (0..2).filter(|j| !done[*j]).collect();
    (fs, acked, open)
}

/// Every interleaving of two consolidators' steps, each replayed on a
/// fresh store; then one clean consolidation and recall.
pub fn lost_updates(p: &dyn StoreProfile) -> LostUpdateReport {
    let mut r = LostUpdateReport {
        not_applicable: p
            .not_applicable(super::Measure::LostUpdates)
            .map(str::to_string),
        ..LostUpdateReport::default()
    };
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
        r.acknowledged += acked.len() as u64;
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
    /// What "acknowledged" means for it, with the source.
    pub acknowledgement: String,
    /// [`fault_points`] with a kill at every point.
    pub kill: FaultReport,
    /// [`fault_points`] with an I/O error at every point.
    pub io_error: FaultReport,
    /// [`fault_points`] with the disk full from every point on.
    pub full_disk: FaultReport,
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
        acknowledgement: super::sources::acknowledgement(p.name()),
        kill: kill_points(p),
        io_error: fault_points(p, FaultKind::IoError),
        full_disk: fault_points(p, FaultKind::FullDisk),
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
