//! Running a sweep: one cell per (combination, seed, path length), on worker threads.

use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use super::{Shard, SweepSpec};
use crate::compact::config::{self, Config};
use crate::compact::probe;
use crate::compact::session::{Action, Call, Script, Turn};
use crate::counters::Counters;
use crate::error::{LabError, LabResult};
use crate::storage::root::{current_backend, with_backend};
use crate::storage::Backend;

/// The recorded counters of one cell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CellResult {
    /// Cell index in the sweep's fixed order.
    pub index: usize,
    /// Values of the varied switches, aligned with [`SweepSpec::vary`].
    pub values: Vec<String>,
    /// Embedded path length.
    pub path_len: usize,
    /// Seed (0 = prototype probe).
    pub seed: u64,
    /// Originals neither in context nor on disk.
    pub lost_forever: u64,
    /// Originals on disk that nothing in context leads to.
    pub pointer_lost: u64,
    /// Both API pair rules held in every request.
    pub pairs_intact: bool,
    /// Placeholders compacted again.
    pub double_compacted: u64,
    /// Results compacted before the model saw them.
    pub unseen_compacted: u64,
}

impl CellResult {
    /// The recorded counters as (name, printed value), in [`super::COUNTERS`] order.
    pub fn counters(&self) -> [(&'static str, String); 5] {
        [
            ("lost_forever", self.lost_forever.to_string()),
            ("pointer_lost", self.pointer_lost.to_string()),
            ("pairs_intact", self.pairs_intact.to_string()),
            ("double_compacted", self.double_compacted.to_string()),
            ("unseen_compacted", self.unseen_compacted.to_string()),
        ]
    }

    fn from_counters(
        index: usize,
        values: Vec<String>,
        path_len: usize,
        seed: u64,
        c: &Counters,
    ) -> Self {
        CellResult {
            index,
            values,
            path_len,
            seed,
            lost_forever: c.count_of("lost_forever").unwrap_or(0),
            pointer_lost: c.count_of("pointer_lost").unwrap_or(0),
            pairs_intact: c.flag_of("pairs_intact").unwrap_or(true),
            double_compacted: c.count_of("double_compacted").unwrap_or(0),
            unseen_compacted: c.count_of("unseen_compacted").unwrap_or(0),
        }
    }
}

/// The output of a sweep or of one shard of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepResult {
    /// What was swept.
    pub spec: SweepSpec,
    /// `None` for a complete sweep (unsharded or merged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// Cells, ascending by index.
    pub cells: Vec<CellResult>,
    /// SHA-256 of spec, shard and cells (see [`super::shard::checksum`]); every
    /// shard carries one, so `--merge` refuses an edited or damaged file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<String>,
}

impl SweepResult {
    /// A result with its checksum when it is a shard (a complete result needs none:
    /// it is never merged).
    pub fn sealed(spec: SweepSpec, shard: Option<Shard>, cells: Vec<CellResult>) -> Self {
        let checksum = shard.map(|s| super::shard::checksum(&spec, Some(s), &cells));
        SweepResult {
            spec,
            shard,
            cells,
            checksum,
        }
    }
}

/// The session of seed `seed`: seed 0 is the prototype probe, others a small
/// generated conversation (3–5 rounds of 1–3 calls of 50..900 chars, then one
/// last pipeline run), kept small so a cell takes about a millisecond.
pub fn session(seed: u64) -> Script {
    if seed == 0 {
        return probe::prototype_probe();
    }
    let mut rng = rand_chacha::ChaCha12Rng::seed_from_u64(seed);
    let mut actions = vec![Action::User("start".into())];
    let mut n = 0usize;
    for _ in 0..rng.gen_range(3..=5) {
        let calls = (0..rng.gen_range(1..=3))
            .map(|_| {
                n += 1;
                // Fixed-width ids: every result file path then has the requested length.
                Call::sized(&format!("g{n:02}"), rng.gen_range(50..900))
            })
            .collect();
        actions.push(Action::Assistant(Turn { text: None, calls }));
    }
    actions.push(Action::Prepare);
    Script(actions)
}

/// The configuration of combination `combo`: the base profile with the varied switches set.
pub fn config_for(spec: &SweepSpec, combo: usize) -> LabResult<Config> {
    let mut cfg = config::profile(&spec.profile)?.config;
    let sets = spec.vary.iter().zip(spec.values(combo));
    cfg.apply_overrides(sets.map(|(name, value)| format!("{name}={value}")))?;
    Ok(cfg)
}

/// Run one cell.
pub fn run_cell(spec: &SweepSpec, index: usize) -> LabResult<CellResult> {
    let (combo, _, _) = spec.cell(index);
    run_cell_with(spec, index, &config_for(spec, combo)?)
}

/// [`run_cell`] with the combination's configuration already built (a sweep
/// builds each once instead of once per cell).
fn run_cell_with(spec: &SweepSpec, index: usize, cfg: &Config) -> LabResult<CellResult> {
    let (combo, seed, path_len) = spec.cell(index);
    let counters = probe::run_counters(cfg, &session(seed), Some(path_len))?;
    Ok(CellResult::from_counters(
        index,
        spec.values(combo),
        path_len,
        seed,
        &counters,
    ))
}

/// Worker threads of a sweep: `jobs` when given (`--jobs`), else by the
/// backend. In memory a cell is pure computation (one thread per core); on
/// disk it is mostly temp-dir creation and removal (latency-bound
/// file-system work), so twice the core count pays off.
fn workers(cells: usize, backend: Backend, jobs: Option<usize>) -> usize {
    let per_core = if backend == Backend::Disk { 2 } else { 1 };
    let chosen = jobs.unwrap_or_else(|| (crate::jobs::default_jobs() * per_core).clamp(1, 16));
    chosen.max(1).min(cells.max(1))
}

/// Run the sweep (or one shard of it). Cells run on worker threads; results
/// are put back in index order, so the output does not depend on scheduling.
/// `progress(done, total)` is called on the calling thread after every cell.
pub fn run(
    spec: &SweepSpec,
    shard: Option<Shard>,
    progress: &mut dyn FnMut(usize, usize),
) -> LabResult<SweepResult> {
    run_on(spec, shard, None, progress)
}

/// [`run`] on `jobs` worker threads (`--jobs`; `None`: one per core in
/// memory, two on disk). The result is the same for every number.
pub fn run_on(
    spec: &SweepSpec,
    shard: Option<Shard>,
    jobs: Option<usize>,
    progress: &mut dyn FnMut(usize, usize),
) -> LabResult<SweepResult> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    spec.validate_for(shard)?;
    let mine: Vec<usize> = (0..spec.total_cells())
        .filter(|i| shard.is_none_or(|s| s.owns(*i)))
        .collect();
    let configs = (0..spec.combos())
        .map(|c| config_for(spec, c))
        .collect::<LabResult<Vec<Config>>>()?;
    let next = AtomicUsize::new(0);
    let mut slots: Vec<Option<LabResult<CellResult>>> = Vec::new();
    slots.resize_with(mine.len(), || None);
    // Workers run on the backend of the thread that started the sweep.
    let backend = current_backend();
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::channel();
        for _ in 0..workers(mine.len(), backend, jobs) {
            let tx = tx.clone();
            let (next, mine, configs) = (&next, &mine, &configs);
            scope.spawn(move || {
                with_backend(backend, || loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&i) = mine.get(k) else { break };
                    let r = run_cell_with(spec, i, &configs[spec.cell(i).0]);
                    let failed = r.is_err();
                    if tx.send((k, r)).is_err() || failed {
                        // Stop early on an error: every later cell would fail the same way
                        // (typically a path length below this machine's minimum).
                        next.store(mine.len(), Ordering::Relaxed);
                        break;
                    }
                })
            });
        }
        drop(tx);
        for (done, (k, r)) in rx.into_iter().enumerate() {
            slots[k] = Some(r);
            progress(done + 1, mine.len());
        }
    });
    // Every cell before a failing one was claimed earlier and so has run: the
    // first error in index order is the same whatever the scheduling.
    let mut cells = Vec::with_capacity(mine.len());
    for slot in slots.into_iter().flatten() {
        cells.push(slot?);
    }
    if cells.len() != mine.len() {
        // Unreachable unless a worker stopped without an error; never return a partial sweep.
        return Err(LabError::usage(
            "a sweep worker stopped early",
            "re-run the sweep",
        ));
    }
    Ok(SweepResult::sealed(spec.clone(), shard, cells))
}
