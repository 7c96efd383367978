//! Compaction rows of the experiment registry.
//!
//! D2, D3 and D6 reproduce the seed's prototype (cc_harness_lab.py) on its
//! probe and scaled constants; G1 is the guard-only cell the prototype had no
//! `--break` entry for. A, B and R1 are findings in the intact course code
//! (f9e8b28): their "baseline" is the course with the fix switched on and
//! their "broken" run is the course as it is.

use super::config::{profile, Config};
use super::probe;
use super::session::Script;
use crate::error::LabResult;
use crate::registry::{
    at, every, every_flag, row, Cell, Experiment, ExperimentVerdict, Kind, Mechanism, RunOptions,
    SideOverrides, LONG_PATH, SHORT_PATH,
};

const SHORT: &str = "path_len=60";
const LONG: &str = "path_len=160";
const _: () = assert!(
    SHORT_PATH == 60 && LONG_PATH == 160,
    "cell labels above name the default lengths"
);

/// Run `script` under both sides at every requested path length.
pub fn compare(
    exp: &Experiment,
    sides: &Sides,
    script: &Script,
    opts: &RunOptions,
) -> LabResult<ExperimentVerdict> {
    let (baseline, broken) = sides.configs()?;
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
    let mut cells = Vec::new();
    for &len in &opts.path_lens {
        cells.push(Cell {
            label: format!("path_len={len}"),
            path_len: Some(len),
            profile: Some(sides.profile.to_string()),
            overrides: SideOverrides {
                baseline: strings(sides.baseline),
                broken: strings(sides.broken),
            },
            baseline: probe::run(&baseline, script, Some(len))?.counters,
            broken: probe::run(&broken, script, Some(len))?.counters,
        });
    }
    Ok(ExperimentVerdict::new(exp, cells))
}

fn with(base: &str, overrides: &[&str]) -> LabResult<Config> {
    let mut c = profile(base)?.config;
    c.apply_overrides(overrides)?;
    Ok(c)
}

/// How a row builds its two sides: base profile, baseline overrides, broken overrides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sides {
    /// Base profile.
    pub profile: &'static str,
    /// Overrides of the baseline side (the fix, for findings).
    pub baseline: &'static [&'static str],
    /// Overrides of the broken side (the break, for breaks).
    pub broken: &'static [&'static str],
}

/// The two sides of a compaction row, for `lab hunt` and scenario files.
pub fn sides(id: &str) -> Option<Sides> {
    let (profile, baseline, broken): (&str, &[&str], &[&str]) =
        match id.to_ascii_uppercase().as_str() {
            "D2" => ("prototype", &[], &["order=micro_first"]),
            "D3" => ("prototype", &[], &["pair_protection=false"]),
            "D6" => (
                "prototype",
                &[],
                &["order=micro_first", "unseen_guard=false"],
            ),
            "G1" => ("prototype", &[], &["unseen_guard=false"]),
            "A" => ("course-f9e8b28", &["save_before_omit=true"], &[]),
            "B" => ("course-f9e8b28", &["persist_all_large=true"], &[]),
            "R1" => ("course-f9e8b28", &["idempotent_placeholders=true"], &[]),
            _ => return None,
        };
    Some(Sides {
        profile,
        baseline,
        broken,
    })
}

impl Sides {
    /// Baseline and broken configurations.
    pub fn configs(&self) -> LabResult<(Config, Config)> {
        Ok((
            with(self.profile, self.baseline)?,
            with(self.profile, self.broken)?,
        ))
    }
}

fn run_row(id: &str, script: Script, opts: &RunOptions) -> LabResult<ExperimentVerdict> {
    let sides = sides(id).expect("every compaction row has sides");
    compare(row(EXPERIMENTS, id)?, &sides, &script, opts)
}

fn run_d2(o: &RunOptions) -> LabResult<ExperimentVerdict> {
    run_row("D2", probe::prototype_probe(), o)
}
fn run_d3(o: &RunOptions) -> LabResult<ExperimentVerdict> {
    run_row("D3", probe::prototype_probe(), o)
}
fn run_d6(o: &RunOptions) -> LabResult<ExperimentVerdict> {
    run_row("D6", probe::prototype_probe(), o)
}
fn run_g1(o: &RunOptions) -> LabResult<ExperimentVerdict> {
    run_row("G1", probe::prototype_probe(), o)
}
fn run_a(o: &RunOptions) -> LabResult<ExperimentVerdict> {
    run_row("A", probe::scenario_a(), o)
}
fn run_b(o: &RunOptions) -> LabResult<ExperimentVerdict> {
    run_row("B", probe::scenario_b(), o)
}
fn run_r1(o: &RunOptions) -> LabResult<ExperimentVerdict> {
    run_row("R1", probe::recompaction(), o)
}

/// The compaction rows.
pub static EXPERIMENTS: &[Experiment] = &[
    Experiment {
        id: "D2",
        mechanism: Mechanism::Compaction,
        kind: Kind::Break,
        title: "step order swapped: micro-compaction runs before persistence",
        change: "Switches.order = micro_first",
        caught_by: &["lost_forever", "pointer_lost"],
        seed: "section 4: one safeguard removed alone shows no loss (the unseen guard still holds)",
        run: run_d2,
        expect: &[
            every("lost_forever", 0, 0),
            every("pointer_lost", 0, 0),
            every_flag("pairs_intact", true, true),
        ],
    },
    Experiment {
        id: "D3",
        mechanism: Mechanism::Compaction,
        kind: Kind::Break,
        title: "pair protection off: snip may split a tool_use from its tool_result",
        change: "Switches.pair_protection = false",
        caught_by: &["pairs_intact", "invalid_requests"],
        seed: "section 5: pairs_intact True -> False",
        run: run_d3,
        expect: &[
            every_flag("pairs_intact", true, false),
            every("invalid_requests", 0, 2),
            every("lost_forever", 0, 0),
        ],
    },
    Experiment {
        id: "D6",
        mechanism: Mechanism::Compaction,
        kind: Kind::Break,
        title: "both safeguards off: order swapped and unseen guard removed",
        change: "Switches.order = micro_first; Switches.unseen_guard = false",
        caught_by: &["lost_forever", "pointer_lost"],
        seed: "section 4: lost forever 1 (and pointer lost 1 at a long path)",
        run: run_d6,
        expect: &[
            every("lost_forever", 0, 1),
            every("unseen_compacted", 0, 1),
            at(SHORT, "pointer_lost", 0, 0),
            at(LONG, "pointer_lost", 0, 1),
            at(LONG, "double_compacted", 0, 1),
            every_flag("pairs_intact", true, true),
        ],
    },
    Experiment {
        id: "G1",
        mechanism: Mechanism::Compaction,
        kind: Kind::Break,
        title: "unseen guard removed alone (order intact)",
        change: "Switches.unseen_guard = false",
        caught_by: &["unseen_compacted", "pointer_lost"],
        seed: "section 4: guard-only cell, pointer_lost = 1 and lost_forever = 0 at a long path",
        run: run_g1,
        expect: &[
            every("lost_forever", 0, 0),
            every("unseen_compacted", 0, 1),
            at(SHORT, "pointer_lost", 0, 0),
            at(LONG, "pointer_lost", 0, 1),
            at(LONG, "double_compacted", 0, 1),
        ],
    },
    Experiment {
        id: "A",
        mechanism: Mechanism::Compaction,
        kind: Kind::Finding,
        title: "scenario A: batch budget and placeholder rule disagree (intact course f9e8b28)",
        change: "baseline: Switches.save_before_omit = true; broken: course as is",
        caught_by: &["lost_forever"],
        seed: "section 3: two 120 000-char results, one persisted, one omitted and never saved",
        run: run_a,
        expect: &[every("lost_forever", 0, 1), every("pointer_lost", 0, 0)],
    },
    Experiment {
        id: "B",
        mechanism: Mechanism::Compaction,
        kind: Kind::Finding,
        title: "scenario B: one 150 000-char result under the batch budget stays in context",
        change: "baseline: Switches.persist_all_large = true; broken: course as is",
        caught_by: &["oversized_in_context"],
        seed: "section 3: nothing persisted, the full 150 000 chars stay in context",
        run: run_b,
        expect: &[
            every("oversized_in_context", 0, 1),
            every("lost_forever", 0, 0),
        ],
    },
    Experiment {
        id: "R1",
        mechanism: Mechanism::Compaction,
        kind: Kind::Finding,
        title: "placeholder re-compaction: no idempotence marker, pointer lost at long paths",
        change: "baseline: Switches.idempotent_placeholders = true; broken: course as is",
        caught_by: &["double_compacted", "pointer_lost", "orphan_files"],
        seed: "section 4: a 194-char saved-at placeholder is compacted again to 'omitted'",
        run: run_r1,
        expect: &[
            at(SHORT, "double_compacted", 0, 0),
            at(SHORT, "pointer_lost", 0, 0),
            at(LONG, "double_compacted", 0, 1),
            at(LONG, "pointer_lost", 0, 1),
            at(LONG, "orphan_files", 0, 1),
            every("lost_forever", 0, 0),
        ],
    },
];
