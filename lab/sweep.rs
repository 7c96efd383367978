//! Factorial sweeps: every combination of compaction switches × path lengths × seeds.
//!
//! A [`SweepSpec`] names a base profile, the switches to vary (each takes two
//! values, so `k` switches give `2^k` combinations), the path lengths and the
//! number of seeds. Cells are numbered in a fixed order (combination, then
//! seed, then path length), which is what makes `--shard i/n` (cells whose
//! index is `i` mod `n`) and [`merge`] exact: a merged set of shards is the
//! same [`SweepResult`] as an unsharded run, byte for byte once rendered.
//!
//! [`thresholds`] finds the path lengths at which a counter changes within one
//! combination; rendering lives in [`render`] and is a pure function of results.

use std::collections::BTreeMap;
use std::path::Path;

use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::compact::config::{self, Config};
use crate::compact::probe;
use crate::compact::session::{Action, Call, Script, Turn};
use crate::counters::Counters;
use crate::error::{LabError, LabResult};
use crate::report::{self, Format};

/// Every switch of [`crate::compact::config::Switches`], in declaration order.
/// Hard-coded (and checked against the struct by a test) so the factor order
/// does not depend on how a JSON map happens to order keys.
pub const ALL_SWITCHES: &[&str] = &[
    "order",
    "unseen_guard",
    "pair_protection",
    "idempotent_placeholders",
    "save_before_omit",
    "micro_only_over_limit",
    "fit_tool_results",
    "auto_summary",
    "skip_lone_archive_marker",
    "persist_all_large",
    "collision_safe_paths",
];

/// The switches varied when `--vary` is not given: the seed's two safeguards
/// and the three fixes of its findings.
pub const DEFAULT_VARY: &[&str] = &[
    "order",
    "unseen_guard",
    "pair_protection",
    "idempotent_placeholders",
    "save_before_omit",
];

/// Default path lengths: 60..=200. It starts at 60, not lower, because the
/// shortest achievable path is the temp dir's length plus the results folder
/// (about 50 chars on a typical machine).
pub const DEFAULT_PATH_LENS: &str = "60..200";

/// The counters a sweep records per cell, in report order.
pub const COUNTERS: &[&str] = &[
    "lost_forever",
    "pointer_lost",
    "pairs_intact",
    "double_compacted",
    "unseen_compacted",
];

/// Safety cap on cells: a typo such as `--path-len 60..200000` should fail fast, not run for hours.
pub const MAX_CELLS: usize = 1_000_000;

/// The two values a switch takes in a sweep, in factor order.
pub fn levels(switch: &str) -> [&'static str; 2] {
    if switch == "order" {
        ["persist_first", "micro_first"]
    } else {
        ["false", "true"]
    }
}

/// Parse a `--vary` list (comma separated switch names, or `all` for every
/// switch of [`ALL_SWITCHES`]); rejects unknown and repeated names.
pub fn parse_vary(spec: &str) -> LabResult<Vec<String>> {
    if spec.trim() == "all" {
        return Ok(ALL_SWITCHES.iter().map(|s| s.to_string()).collect());
    }
    let mut out: Vec<String> = Vec::new();
    for name in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if !ALL_SWITCHES.contains(&name) {
            return Err(LabError::usage(
                format!("unknown switch {name:?} in --vary"),
                format!("use some of: {}", ALL_SWITCHES.join(", ")),
            ));
        }
        if out.iter().any(|o| o == name) {
            return Err(LabError::usage(
                format!("switch {name:?} given twice in --vary"),
                "name each switch once",
            ));
        }
        out.push(name.to_string());
    }
    if out.is_empty() {
        return Err(LabError::usage(
            "--vary names no switch",
            format!("use some of: {}", ALL_SWITCHES.join(", ")),
        ));
    }
    Ok(out)
}

/// Parse path lengths: a comma-separated list of `N` and inclusive ranges
/// `A..B` or `A..B:STEP` (step 1 by default, so thresholds are exact).
/// The result is sorted and deduplicated.
pub fn parse_path_lens(spec: &str) -> LabResult<Vec<usize>> {
    let bad = |item: &str, why: &str| {
        LabError::usage(
            format!("bad path length {item:?}: {why}"),
            "write lengths as N, A..B or A..B:STEP, comma separated (e.g. 60..200:10,90)",
        )
    };
    let num = |item: &str, s: &str| {
        s.trim()
            .parse::<usize>()
            .map_err(|_| bad(item, "not a whole number"))
    };
    let mut out = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match item.split_once("..") {
            None => out.push(num(item, item)?),
            Some((a, rest)) => {
                let (b, step) = match rest.split_once(':') {
                    Some((b, s)) => (b, num(item, s)?),
                    None => (rest, 1),
                };
                let (a, b) = (num(item, a)?, num(item, b)?);
                if step == 0 {
                    return Err(bad(item, "step must be at least 1"));
                }
                if a > b {
                    return Err(bad(item, "range start is after its end"));
                }
                if (b - a) / step >= MAX_CELLS {
                    return Err(bad(item, "range has too many lengths"));
                }
                out.extend((a..=b).step_by(step));
            }
        }
    }
    if out.is_empty() {
        return Err(bad(spec, "no length given"));
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// A shard of a sweep: the cells whose index is `index` mod `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// This shard, `0..count`.
    pub index: usize,
    /// Number of shards.
    pub count: usize,
}

impl Shard {
    /// Parse `i/n` with `i < n`.
    pub fn parse(spec: &str) -> LabResult<Shard> {
        let bad = || {
            LabError::usage(
                format!("bad shard {spec:?}"),
                "write it as i/n with 0 <= i < n, e.g. --shard 0/4",
            )
        };
        let (i, n) = spec.split_once('/').ok_or_else(bad)?;
        let index: usize = i.trim().parse().map_err(|_| bad())?;
        let count: usize = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    /// Whether cell `index` belongs to this shard.
    pub fn owns(&self, index: usize) -> bool {
        index % self.count == self.index
    }
}

/// What to sweep.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepSpec {
    /// Base profile name; the varied switches override it.
    pub profile: String,
    /// Varied switches, in factor order (first = slowest-changing).
    pub vary: Vec<String>,
    /// Path lengths, ascending.
    pub path_lens: Vec<usize>,
    /// Seeds `0..seeds`; seed 0 is the prototype probe.
    pub seeds: u64,
}

impl SweepSpec {
    /// Number of switch combinations, `2^vary.len()`.
    pub fn combos(&self) -> usize {
        1usize << self.vary.len()
    }

    /// Total number of cells.
    pub fn total_cells(&self) -> usize {
        self.combos() * self.seeds as usize * self.path_lens.len()
    }

    /// Check sizes before anything runs.
    pub fn validate(&self) -> LabResult<()> {
        config::profile(&self.profile)?;
        // Re-parse so a spec read from a shard file gets the same checks as `--vary`.
        if parse_vary(&self.vary.join(","))? != self.vary {
            return Err(LabError::usage(
                "switch names in the sweep spec are not in canonical form",
                "write each switch once, without spaces",
            ));
        }
        if self.path_lens.is_empty() || self.path_lens.windows(2).any(|w| w[0] >= w[1]) {
            return Err(LabError::usage(
                "path lengths must be a non-empty ascending list without repeats",
                "pass them through --path-len",
            ));
        }
        if self.seeds == 0 {
            return Err(LabError::usage(
                "--seeds 0 runs nothing",
                "use --seeds 1 or more",
            ));
        }
        let total = (self.vary.len() < 40)
            .then(|| {
                self.combos()
                    .checked_mul(self.seeds as usize)?
                    .checked_mul(self.path_lens.len())
            })
            .flatten();
        match total {
            Some(t) if t <= MAX_CELLS => Ok(()),
            _ => Err(LabError::usage(
                format!("the sweep has more than {MAX_CELLS} cells"),
                "vary fewer switches, use fewer path lengths or seeds, or use --shard",
            )),
        }
    }

    /// The switch values of combination `combo` (bit `k-1-j` picks switch `j`'s level).
    pub fn values(&self, combo: usize) -> Vec<String> {
        let k = self.vary.len();
        self.vary
            .iter()
            .enumerate()
            .map(|(j, s)| levels(s)[(combo >> (k - 1 - j)) & 1].to_string())
            .collect()
    }

    /// Cell `index` as (combination, seed, path length).
    pub fn cell(&self, index: usize) -> (usize, u64, usize) {
        let lens = self.path_lens.len();
        let per_combo = self.seeds as usize * lens;
        let combo = index / per_combo;
        let seed = ((index % per_combo) / lens) as u64;
        (combo, seed, self.path_lens[index % lens])
    }
}

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
    /// The recorded counters as (name, printed value), in [`COUNTERS`] order.
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
}

/// The session of seed `seed`: seed 0 is the prototype probe, others a small
/// generated conversation (3–5 rounds of 1–3 calls of 50..900 chars, then one
/// last pipeline run), kept small so a cell takes about a millisecond.
pub fn session(seed: u64) -> Script {
    if seed == 0 {
        return probe::prototype_probe();
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
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
    for (name, value) in spec.vary.iter().zip(spec.values(combo)) {
        cfg.apply_override(&format!("{name}={value}"))?;
    }
    Ok(cfg)
}

/// Run one cell.
pub fn run_cell(spec: &SweepSpec, index: usize) -> LabResult<CellResult> {
    let (combo, seed, path_len) = spec.cell(index);
    let cfg = config_for(spec, combo)?;
    let outcome = probe::run(&cfg, &session(seed), Some(path_len))?;
    Ok(CellResult::from_counters(
        index,
        spec.values(combo),
        path_len,
        seed,
        &outcome.counters,
    ))
}

/// Worker threads of a sweep. A cell is mostly temp-dir creation and removal
/// (latency-bound file-system work), so twice the core count pays off.
fn workers(cells: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cores * 2).clamp(1, 16).min(cells.max(1))
}

/// Run the sweep (or one shard of it). Cells run on worker threads; results
/// are put back in index order, so the output does not depend on scheduling.
/// `progress(done, total)` is called on the calling thread after every cell.
pub fn run(
    spec: &SweepSpec,
    shard: Option<Shard>,
    progress: &mut dyn FnMut(usize, usize),
) -> LabResult<SweepResult> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    spec.validate()?;
    let mine: Vec<usize> = (0..spec.total_cells())
        .filter(|i| shard.is_none_or(|s| s.owns(*i)))
        .collect();
    let next = AtomicUsize::new(0);
    let mut slots: Vec<Option<LabResult<CellResult>>> = Vec::new();
    slots.resize_with(mine.len(), || None);
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::channel();
        for _ in 0..workers(mine.len()) {
            let tx = tx.clone();
            let (next, mine) = (&next, &mine);
            scope.spawn(move || loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(&i) = mine.get(k) else { break };
                let r = run_cell(spec, i);
                let failed = r.is_err();
                if tx.send((k, r)).is_err() || failed {
                    // Stop early on an error: every later cell would fail the same way
                    // (typically a path length below this machine's minimum).
                    next.store(mine.len(), Ordering::Relaxed);
                    break;
                }
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
    Ok(SweepResult {
        spec: spec.clone(),
        shard,
        cells,
    })
}

/// Merge shard outputs into one complete result. Every input must come from
/// the same spec and together they must cover every cell; a cell present in
/// two inputs (overlapping shards) must be identical in both.
pub fn merge(parts: Vec<SweepResult>) -> LabResult<SweepResult> {
    let mut parts = parts.into_iter();
    let first = parts.next().ok_or_else(|| {
        LabError::usage(
            "--merge needs at least one file",
            "pass shard outputs, e.g. --merge a.json b.json",
        )
    })?;
    let spec = first.spec.clone();
    spec.validate()?;
    let mut cells: BTreeMap<usize, CellResult> = BTreeMap::new();
    for part in std::iter::once(first).chain(parts) {
        if part.spec != spec {
            return Err(LabError::usage(
                "shards come from different sweeps (profile, vary, path lengths or seeds differ)",
                "merge only the outputs of one `lab sweep ... --shard i/n` command line",
            ));
        }
        for c in part.cells {
            if c.index >= spec.total_cells() || !cell_matches(&spec, &c) {
                return Err(LabError::usage(
                    format!("cell {} does not belong to this sweep's spec", c.index),
                    "merge unedited outputs of `lab sweep --shard i/n --format json`",
                ));
            }
            if let Some(prev) = cells.get(&c.index) {
                if *prev != c {
                    return Err(LabError::usage(
                        format!("cell {} differs between shards", c.index),
                        "re-run the shards with the same build",
                    ));
                }
            }
            cells.insert(c.index, c);
        }
    }
    let total = spec.total_cells();
    if cells.len() != total {
        let missing: Vec<String> = (0..total)
            .filter(|i| !cells.contains_key(i))
            .take(5)
            .map(|i| i.to_string())
            .collect();
        return Err(LabError::usage(
            format!(
                "shards cover {} of {total} cells (missing e.g. {})",
                cells.len(),
                missing.join(", ")
            ),
            "pass every shard 0/n .. n-1/n of the sweep",
        ));
    }
    Ok(SweepResult {
        spec,
        shard: None,
        cells: cells.into_values().collect(),
    })
}

/// Whether a cell's switch values, seed and path length are those its index stands for.
fn cell_matches(spec: &SweepSpec, c: &CellResult) -> bool {
    let (combo, seed, len) = spec.cell(c.index);
    c.seed == seed && c.path_len == len && c.values == spec.values(combo)
}

/// A path length where a counter changes within one combination and seed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Threshold {
    /// `switch=value` pairs of the combination, comma separated.
    pub combo: String,
    /// Seed.
    pub seed: u64,
    /// Counter name.
    pub counter: String,
    /// Value below the threshold.
    pub from: String,
    /// Value from the threshold on.
    pub to: String,
    /// Last path length measured with `from`.
    pub below: usize,
    /// First path length measured with `to`; exact when `at == below + 1`.
    pub at: usize,
}

impl Threshold {
    /// Whether the sweep measured both neighbouring lengths, so `at` is exact.
    pub fn exact(&self) -> bool {
        self.at == self.below + 1
    }
}

/// The label of a cell's combination: `switch=value` pairs, comma separated.
pub fn combo_label(vary: &[String], values: &[String]) -> String {
    vary.iter()
        .zip(values)
        .map(|(s, v)| format!("{s}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Every change of a counter between neighbouring measured path lengths,
/// per combination and seed. Pure: works on any cells (synthetic ones in tests).
pub fn thresholds(vary: &[String], cells: &[CellResult]) -> Vec<Threshold> {
    let mut groups: BTreeMap<(Vec<String>, u64), Vec<&CellResult>> = BTreeMap::new();
    let mut order = Vec::new();
    for c in cells {
        let key = (c.values.clone(), c.seed);
        if !groups.contains_key(&key) {
            order.push(key.clone());
        }
        groups.entry(key).or_default().push(c);
    }
    let mut out = Vec::new();
    for key in order {
        let mut group = groups.remove(&key).unwrap_or_default();
        group.sort_by_key(|c| c.path_len);
        for w in group.windows(2) {
            let (a, b) = (w[0].counters(), w[1].counters());
            for ((name, va), (_, vb)) in a.iter().zip(b.iter()) {
                if va != vb {
                    out.push(Threshold {
                        combo: combo_label(vary, &key.0),
                        seed: key.1,
                        counter: name.to_string(),
                        from: va.clone(),
                        to: vb.clone(),
                        below: w[0].path_len,
                        at: w[1].path_len,
                    });
                }
            }
        }
    }
    out
}

/// Rendering of sweep results (pure functions).
pub mod render {
    use super::*;

    /// A run of neighbouring path lengths with identical counters.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Segment<'a> {
        /// First cell of the run.
        pub first: &'a CellResult,
        /// Last path length of the run.
        pub last_len: usize,
    }

    /// Collapse cells into runs of equal counters per combination and seed
    /// (a 4 000-cell sweep then prints a few dozen rows).
    pub fn segments(cells: &[CellResult]) -> Vec<Segment<'_>> {
        let mut out: Vec<Segment> = Vec::new();
        for c in cells {
            if let Some(last) = out.last_mut() {
                if last.first.values == c.values
                    && last.first.seed == c.seed
                    && last.first.counters() == c.counters()
                {
                    last.last_len = c.path_len;
                    continue;
                }
            }
            out.push(Segment {
                first: c,
                last_len: c.path_len,
            });
        }
        out
    }

    /// One threshold as a line, e.g. `order=micro_first,unseen_guard=false: pointer_lost 0→1 at path_len=90`.
    pub fn threshold_line(t: &Threshold, with_seed: bool) -> String {
        let seed = if with_seed {
            format!(" (seed {})", t.seed)
        } else {
            String::new()
        };
        let at = if t.exact() {
            format!("at path_len={}", t.at)
        } else {
            format!("between path_len={} and {}", t.below, t.at)
        };
        format!("{}{seed}: {} {}→{} {at}", t.combo, t.counter, t.from, t.to)
    }

    /// The thresholds as text lines (or a line saying there are none).
    pub fn thresholds_text(result: &SweepResult) -> String {
        let ts = thresholds(&result.spec.vary, &result.cells);
        if ts.is_empty() {
            return "no counter changes with path length\n".to_string();
        }
        ts.iter()
            .map(|t| threshold_line(t, result.spec.seeds > 1) + "\n")
            .collect()
    }

    fn header(spec: &SweepSpec) -> String {
        format!(
            "sweep · profile {} · {} combinations × {} seed(s) × {} path length(s) = {} cells",
            spec.profile,
            spec.combos(),
            spec.seeds,
            spec.path_lens.len(),
            spec.total_cells()
        )
    }

    /// JSON form: the result plus its thresholds (complete results only).
    #[derive(Serialize)]
    struct JsonOut<'a> {
        #[serde(flatten)]
        result: &'a SweepResult,
        #[serde(skip_serializing_if = "Option::is_none")]
        thresholds: Option<Vec<Threshold>>,
    }

    /// Render a sweep: a table of runs of equal counters, then the thresholds.
    /// JSON is the full result (the input `--merge` reads) plus thresholds.
    pub fn sweep(result: &SweepResult, format: Format) -> String {
        let complete = result.shard.is_none();
        if format == Format::Json {
            return report::json(&JsonOut {
                result,
                thresholds: complete.then(|| thresholds(&result.spec.vary, &result.cells)),
            });
        }
        let md = format == Format::Markdown;
        let spec = &result.spec;
        let mut head: Vec<&str> = spec.vary.iter().map(String::as_str).collect();
        if spec.seeds > 1 {
            head.push("seed");
        }
        head.push("path_len");
        head.extend(COUNTERS);
        let rows = segments(&result.cells)
            .iter()
            .map(|s| {
                let mut r = s.first.values.clone();
                if spec.seeds > 1 {
                    r.push(s.first.seed.to_string());
                }
                r.push(if s.last_len == s.first.path_len {
                    s.last_len.to_string()
                } else {
                    format!("{}..{}", s.first.path_len, s.last_len)
                });
                r.extend(s.first.counters().into_iter().map(|(_, v)| v));
                r
            })
            .collect();
        let table = crate::reports::text_table(&head, rows, md);
        let shard = match result.shard {
            Some(s) => format!(
                " · shard {}/{} ({} cells)",
                s.index,
                s.count,
                result.cells.len()
            ),
            None => String::new(),
        };
        let mut out = if md {
            format!("### {}{shard}\n\n{table}\n\n", header(spec))
        } else {
            format!("== {}{shard} ==\n{table}\n", header(spec))
        };
        if complete {
            out += if md {
                "**thresholds**\n\n"
            } else {
                "thresholds:\n"
            };
            let text = thresholds_text(result);
            if md {
                out += &text.lines().map(|l| format!("- {l}\n")).collect::<String>();
            } else {
                out += &text.lines().map(|l| format!("  {l}\n")).collect::<String>();
            }
        }
        out
    }
}

/// One profile on one script at one path length (the profile comparison report).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileCell {
    /// Profile name.
    pub profile: String,
    /// Script name (`probe`, `scenario_a`, `scenario_b`, `recompaction`).
    pub script: String,
    /// Embedded path length.
    pub path_len: usize,
    /// Originals neither in context nor on disk.
    pub lost_forever: u64,
    /// Originals on disk that nothing in context leads to.
    pub pointer_lost: u64,
    /// Both API pair rules held.
    pub pairs_intact: bool,
    /// Placeholders compacted again.
    pub double_compacted: u64,
    /// Results compacted before the model saw them.
    pub unseen_compacted: u64,
    /// Results over the per-item threshold left whole in context.
    pub oversized_in_context: u64,
}

/// The scripts of the profile comparison, by report name.
pub fn comparison_scripts() -> Vec<(&'static str, Script)> {
    vec![
        ("probe", probe::prototype_probe()),
        ("scenario_a", probe::scenario_a()),
        ("scenario_b", probe::scenario_b()),
        ("recompaction", probe::recompaction()),
    ]
}

/// Path lengths of the factorial and profile reports: the registry's short and long cells.
pub const REPORT_LENS: [usize; 2] = [crate::registry::SHORT_PATH, crate::registry::LONG_PATH];

/// Run everything `lab reports` needs. The 2×2 grid runs at every length of
/// 60..=200 so its thresholds are exact; its tables show every 10th.
/// Sessions simulated for the memory-growth report.
pub const MEMORY_SESSIONS: usize = 24;

/// Everything `lab reports` writes.
pub fn report_data() -> LabResult<crate::reports::ReportData> {
    let grid = SweepSpec {
        profile: "prototype".into(),
        vary: vec!["order".into(), "unseen_guard".into()],
        path_lens: parse_path_lens("60..200")?,
        seeds: 1,
    };
    let factorial = SweepSpec {
        profile: "prototype".into(),
        vary: DEFAULT_VARY.iter().map(|s| s.to_string()).collect(),
        path_lens: REPORT_LENS.to_vec(),
        seeds: 1,
    };
    let mut profiles = Vec::new();
    for p in config::profiles() {
        for (name, script) in comparison_scripts() {
            for len in REPORT_LENS {
                let c = probe::run(&p.config, &script, Some(len))?.counters;
                profiles.push(ProfileCell {
                    profile: p.name.to_string(),
                    script: name.to_string(),
                    path_len: len,
                    lost_forever: c.count_of("lost_forever").unwrap_or(0),
                    pointer_lost: c.count_of("pointer_lost").unwrap_or(0),
                    pairs_intact: c.flag_of("pairs_intact").unwrap_or(true),
                    double_compacted: c.count_of("double_compacted").unwrap_or(0),
                    unseen_compacted: c.count_of("unseen_compacted").unwrap_or(0),
                    oversized_in_context: c.count_of("oversized_in_context").unwrap_or(0),
                });
            }
        }
    }
    use crate::memory::experiments::growth_curve;
    use crate::memory::switches::MemorySwitches;
    let memory_growth = vec![
        (
            "course".to_string(),
            growth_curve(MEMORY_SESSIONS, MemorySwitches::default())?,
        ),
        (
            "chunked_consolidation".to_string(),
            growth_curve(
                MEMORY_SESSIONS,
                MemorySwitches {
                    chunked_consolidation: true,
                    ..MemorySwitches::default()
                },
            )?,
        ),
        (
            "warn_on_skip".to_string(),
            growth_curve(
                MEMORY_SESSIONS,
                MemorySwitches {
                    warn_on_skip: true,
                    ..MemorySwitches::default()
                },
            )?,
        ),
    ];
    Ok(crate::reports::ReportData {
        memory_growth,
        grid: run(&grid, None, &mut |_, _| {})?,
        table_lens: parse_path_lens("60..200:10")?,
        factorial: run(&factorial, None, &mut |_, _| {})?,
        profiles,
    })
}

/// Write `files` into `dir` (created if missing), each through a temp file and
/// a rename so a reader never sees half a file. Returns one line per file.
pub fn write_files(dir: &Path, files: &[(String, String)]) -> LabResult<String> {
    std::fs::create_dir_all(dir).map_err(|e| LabError::io("creating the reports dir", dir, e))?;
    let mut out = String::new();
    for (name, text) in files {
        let path = dir.join(name);
        let tmp = dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, text).map_err(|e| LabError::io("writing a report", &tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| LabError::io("replacing a report", &path, e))?;
        out += &format!("wrote {}\n", path.display());
    }
    Ok(out)
}

/// Subdirectory of `reports/` owned by `make replay`, skipped by the drift check.
pub const REPLAY_DIR: &str = "replay";

/// Compare `dir` with `files`: one diff-like entry per missing, changed or
/// unexpected file (empty = no drift).
pub fn drift(dir: &Path, files: &[(String, String)]) -> LabResult<Vec<String>> {
    let mut out = Vec::new();
    for (name, want) in files {
        let path = dir.join(name);
        match std::fs::read(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => out.push(format!(
                "{}: missing (generated, not checked in)",
                path.display()
            )),
            Err(e) => return Err(LabError::io("reading a checked-in report", &path, e)),
            Ok(have) if have == want.as_bytes() => {}
            Ok(have) => {
                let have = String::from_utf8_lossy(&have);
                out.push(first_difference(&path.display().to_string(), &have, want));
            }
        }
    }
    let entries =
        std::fs::read_dir(dir).map_err(|e| LabError::io("listing the reports dir", dir, e))?;
    let mut extra = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| LabError::io("listing the reports dir", dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        // reports/replay/ is written by `make replay` from ../shared/transcripts,
        // which a checkout need not have: it is not part of this generator's output.
        if name == REPLAY_DIR && entry.path().is_dir() {
            continue;
        }
        if !files.iter().any(|(n, _)| *n == name) {
            extra.push(format!(
                "{}: unexpected (checked in, no longer generated: delete it)",
                dir.join(&name).display()
            ));
        }
    }
    extra.sort();
    out.extend(extra);
    Ok(out)
}

/// A unified-diff-style excerpt of the first differing line.
pub fn first_difference(label: &str, have: &str, want: &str) -> String {
    let (h, w): (Vec<&str>, Vec<&str>) = (have.lines().collect(), want.lines().collect());
    let n = h
        .iter()
        .zip(&w)
        .position(|(a, b)| a != b)
        .unwrap_or(h.len().min(w.len()));
    let show = |v: &[&str]| {
        v.get(n)
            .map(|l| l.to_string())
            .unwrap_or_else(|| "(end of file)".into())
    };
    format!(
        "--- {label} (checked in)\n    +++ {label} (generated)\n    @@ line {} @@ ({} vs {} lines)\n    -{}\n    +{}",
        n + 1,
        h.len(),
        w.len(),
        show(&h),
        show(&w)
    )
}

/// `lab sweep` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct SweepArgs {
    /// Base profile (see `lab profiles`); the varied switches override it.
    #[arg(long, default_value = "prototype")]
    pub profile: String,
    /// Switches to vary, comma separated, or `all` [default: order,unseen_guard,pair_protection,idempotent_placeholders,save_before_omit].
    #[arg(long)]
    pub vary: Option<String>,
    /// Path lengths: N, A..B or A..B:STEP (inclusive), comma separated.
    #[arg(long, default_value = DEFAULT_PATH_LENS)]
    pub path_len: String,
    /// Number of seeds, run as seeds 0..N: seed 0 is the prototype probe, others generated sessions.
    #[arg(long, default_value_t = 1)]
    pub seeds: u64,
    /// Run only cells whose index is i mod n (`--shard i/n`); merge with `--merge`.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Merge the JSON outputs of shards instead of running anything.
    #[arg(long, num_args = 1.., value_name = "FILE", conflicts_with = "shard")]
    pub merge: Vec<std::path::PathBuf>,
    /// Progress on stderr even when it is not a terminal.
    #[arg(long)]
    pub progress: bool,
    /// Output format (json is what `--merge` reads).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// `lab reports` arguments.
#[derive(Debug, Clone, clap::Args)]
#[group(required = true, multiple = false)]
pub struct ReportsArgs {
    /// Regenerate every report file into this directory.
    #[arg(long, value_name = "DIR")]
    pub out: Option<std::path::PathBuf>,
    /// Compare this directory with what the code produces; exit 1 on drift.
    #[arg(long, value_name = "DIR")]
    pub check: Option<std::path::PathBuf>,
}

/// Progress lines are printed every this many cells.
const PROGRESS_EVERY: usize = 200;

fn read_shard(path: &Path) -> LabResult<SweepResult> {
    let text = crate::input::read_text(path, "a shard")?;
    serde_json::from_str(&text).map_err(|e| LabError::Input {
        file: path.to_path_buf(),
        line: e.line(),
        column: crate::input::char_column(&text, e.line(), e.column()),
        message: format!("not a sweep result: {e}"),
        fix: "pass files written by `lab sweep --shard i/n --format json`".into(),
    })
}

/// Run `lab sweep`; returns what to print.
pub fn command(args: &SweepArgs) -> LabResult<String> {
    use std::io::IsTerminal;
    let result = if args.merge.is_empty() {
        let vary = match &args.vary {
            Some(v) => parse_vary(v)?,
            None => DEFAULT_VARY.iter().map(|s| s.to_string()).collect(),
        };
        let spec = SweepSpec {
            profile: args.profile.clone(),
            vary,
            path_lens: parse_path_lens(&args.path_len)?,
            seeds: args.seeds,
        };
        let shard = args.shard.as_deref().map(Shard::parse).transpose()?;
        let terminal = std::io::stderr().is_terminal();
        let show = args.progress || terminal;
        let mut progress = |done: usize, total: usize| {
            if show && (done % PROGRESS_EVERY == 0 || done == total) {
                // A terminal gets one line rewritten in place; a log gets one line per report.
                let end = if done == total || !terminal { "\n" } else { "" };
                let start = if terminal { "\r" } else { "" };
                eprint!("{start}sweep: {done}/{total} cells{end}");
            }
        };
        run(&spec, shard, &mut progress)?
    } else {
        merge(
            args.merge
                .iter()
                .map(|p| read_shard(p))
                .collect::<LabResult<Vec<_>>>()?,
        )?
    };
    Ok(render::sweep(&result, args.format))
}

/// Run `lab reports`; returns what to print, or an expectation error listing drifted files.
pub fn reports_command(args: &ReportsArgs) -> LabResult<String> {
    let files = crate::reports::files(&report_data()?);
    match (&args.out, &args.check) {
        (Some(dir), _) => write_files(dir, &files),
        (None, Some(dir)) => {
            let drifted = drift(dir, &files)?;
            if drifted.is_empty() {
                Ok(format!(
                    "reports: {} files match {}\n",
                    files.len(),
                    dir.display()
                ))
            } else {
                // The header goes straight to stderr so the error's count is the number of files.
                eprintln!(
                    "reports: {} file(s) in {} differ from what the code produces; run `make reports` and commit",
                    drifted.len(),
                    dir.display()
                );
                Err(LabError::Drift { files: drifted })
            }
        }
        (None, None) => Err(LabError::usage(
            "lab reports needs --out DIR or --check DIR",
            "e.g. lab reports --out reports/",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_switches_matches_the_struct() {
        let v = serde_json::to_value(config::Switches::default()).unwrap();
        let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        let mut ours = ALL_SWITCHES.to_vec();
        keys.sort_unstable();
        ours.sort_unstable();
        assert_eq!(keys, ours);
    }

    #[test]
    fn cell_indexing_round_trips() {
        let spec = SweepSpec {
            profile: "prototype".into(),
            vary: vec!["order".into(), "unseen_guard".into()],
            path_lens: vec![60, 70, 80],
            seeds: 2,
        };
        assert_eq!(spec.total_cells(), 24);
        assert_eq!(spec.cell(0), (0, 0, 60));
        assert_eq!(spec.cell(4), (0, 1, 70));
        assert_eq!(spec.cell(23), (3, 1, 80));
        assert_eq!(spec.values(2), vec!["micro_first", "false"]);
        assert_eq!(spec.values(1), vec!["persist_first", "true"]);
    }

    #[test]
    fn generated_sessions_are_deterministic_and_small() {
        assert_eq!(session(7), session(7));
        assert_ne!(session(7), session(8));
        assert_eq!(session(0), probe::prototype_probe());
        let calls: usize = session(3)
            .0
            .iter()
            .map(|a| match a {
                Action::Assistant(t) => t.calls.len(),
                _ => 0,
            })
            .sum();
        assert!((3..=15).contains(&calls), "{calls}");
    }
}
