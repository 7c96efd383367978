//! Memory experiments: one registry row per safeguard of the course's
//! `s09_memory`, plus the seed's findings in the intact design.
//!
//! Ids (stable, used on the command line):
//! `M-guard-off`, `M-index-stale`, `M-tempword-off`, `M-dedup-off`,
//! `M-rollback-off`, `M-crash-window`, `M-full-disk`, `M-model-writes` (breaks: baseline = the course's intact
//! switches, broken = one safeguard off) and `M-garbage-empty`,
//! `M-reverse-gate` (findings, in the registry's convention: baseline = with
//! the fix switch, clean; broken = the course as is, which shows the gap).
//!
//! Every run builds its store in a fresh in-memory sandbox ([`MemFs`](crate::storage::MemFs)) and drives a
//! deterministic scripted session; [`RunOptions`] are accepted for the
//! shared signature but unused (nothing here depends on path length or a seed).

use std::path::Path;

use super::checker::check;
use super::consolidate::{ConsolidatorScript, FaultPlan};
use super::extract::ExtractorScript;
use super::recall::SelectorScript;
use super::session::{Harness, Session, ToolCall, Turn, MEMORY_DELETE_TOOL, MEMORY_WRITE_TOOL};
use super::store::Memory;
use super::switches::{MemoryConstants, MemorySwitches};
use crate::counters::Counters;
use crate::error::LabResult;
use crate::registry::{
    at, every, Cell, Experiment, ExperimentVerdict, Kind, Mechanism, RunOptions,
};

/// What a cell's setup returns: memories to seed and sessions to run.
type Setup = (Vec<Memory>, Vec<Session>);

/// Run one side (switches) of a cell in a fresh sandbox.
fn side(
    sw: MemorySwitches,
    constants: MemoryConstants,
    setup: &dyn Fn(&Path) -> LabResult<Setup>,
) -> LabResult<Counters> {
    let (fs, dir) = super::session::sandbox();
    let (seed, sessions) = setup(&dir)?;
    let mut h = Harness::new(fs, &dir, sw, constants)?;
    h.seed(&seed)?;
    h.run_sessions(&sessions)?;
    check(&h)
}

/// Run baseline (intact switches) and broken for one condition.
fn cell(
    label: &str,
    broken: MemorySwitches,
    constants: MemoryConstants,
    setup: &dyn Fn(&Path) -> LabResult<Setup>,
) -> LabResult<Cell> {
    Ok(Cell {
        label: label.to_string(),
        baseline: side(MemorySwitches::default(), constants, setup)?,
        broken: side(broken, constants, setup)?,
        ..Default::default()
    })
}

/// A finding's cell, in the registry's convention: the baseline runs the
/// fix switch (clean), the "broken" side runs the course as is (shows the gap).
fn finding_cell(
    label: &str,
    fix: MemorySwitches,
    constants: MemoryConstants,
    setup: &dyn Fn(&Path) -> LabResult<Setup>,
) -> LabResult<Cell> {
    Ok(Cell {
        label: label.to_string(),
        baseline: side(fix, constants, setup)?,
        broken: side(MemorySwitches::default(), constants, setup)?,
        ..Default::default()
    })
}

/// A persistent candidate as the extractor model would emit it.
fn cand(name: &str, description: &str, body: &str) -> serde_json::Value {
    serde_json::json!({"name": name, "type": "user", "description": description, "body": body, "scope": "persistent"})
}

fn extractor(items: Vec<serde_json::Value>) -> ExtractorScript {
    ExtractorScript::Reply(serde_json::Value::Array(items).to_string())
}

fn mem(name: &str, description: &str, body: &str) -> Memory {
    Memory {
        name: name.into(),
        mem_type: "user".into(),
        description: description.into(),
        body: body.into(),
    }
}

fn one_turn(turn: Turn) -> Vec<Session> {
    vec![Session { turns: vec![turn] }]
}

fn sw(f: impl FnOnce(&mut MemorySwitches)) -> MemorySwitches {
    let mut s = MemorySwitches::default();
    f(&mut s);
    s
}

fn run_guard_off(_: &RunOptions) -> LabResult<ExperimentVerdict> {
    let setup = |_: &Path| -> LabResult<Setup> {
        Ok((
            Vec::new(),
            one_turn(Turn {
                user: "Keep notes about the build in a file.".into(),
                assistant: "Noted.".into(),
                extractor: extractor(vec![cand(
                    "../escaped-note",
                    "build notes",
                    "Builds run with make.",
                )]),
                ..Turn::default()
            }),
        ))
    };
    let c = cell(
        "name=../escaped-note",
        sw(|s| s.path_guard = false),
        MemoryConstants::default(),
        &setup,
    )?;
    ExperimentVerdict::of_row(EXPERIMENTS, "M-guard-off", vec![c])
}

fn run_index_stale(_: &RunOptions) -> LabResult<ExperimentVerdict> {
    let setup = |_: &Path| -> LabResult<Setup> {
        Ok((
            vec![mem(
                "tabs",
                "prefers tabs for indentation",
                "Use tabs, not spaces.",
            )],
            one_turn(Turn {
                user: "I prefer single quotes, and never mock the database.".into(),
                assistant: "Understood.".into(),
                extractor: extractor(vec![
                    cand(
                        "quotes",
                        "prefers single quotes",
                        "Use single quotes for strings.",
                    ),
                    cand(
                        "no-db-mocks",
                        "do not mock the database",
                        "Integration tests hit a real database.",
                    ),
                ]),
                ..Turn::default()
            }),
        ))
    };
    // The seed memory is written with the same switches, so the stale index
    // misses it too: three files, empty index.
    let c = cell(
        "two new memories",
        sw(|s| s.rebuild_index = false),
        MemoryConstants::default(),
        &setup,
    )?;
    ExperimentVerdict::of_row(EXPERIMENTS, "M-index-stale", vec![c])
}

fn run_tempword_off(_: &RunOptions) -> LabResult<ExperimentVerdict> {
    let setup = |_: &Path| -> LabResult<Setup> {
        Ok((
            Vec::new(),
            one_turn(Turn {
                user: "For now use port 8080; 暂时用 vim; 今回だけ skip lint. I like tabs.".into(),
                assistant: "OK.".into(),
                extractor: extractor(vec![
                    cand(
                        "dev-port",
                        "use port 8080 for now",
                        "The dev server runs on 8080.",
                    ),
                    cand("editor", "暂时使用 vim", "用户暂时用 vim 编辑。"),
                    cand("lint", "今回だけ lint を省略", "Skip lint."),
                    cand("tabs", "prefers tabs for indentation", "Use tabs."),
                ]),
                ..Turn::default()
            }),
        ))
    };
    let c = cell(
        "en+zh+ja markers",
        sw(|s| s.temp_word_filter = false),
        MemoryConstants::default(),
        &setup,
    )?;
    ExperimentVerdict::of_row(EXPERIMENTS, "M-tempword-off", vec![c])
}

fn run_dedup_off(_: &RunOptions) -> LabResult<ExperimentVerdict> {
    let setup = |_: &Path| -> LabResult<Setup> {
        Ok((
            vec![mem(
                "tabs",
                "prefers tabs for indentation",
                "Use tabs, not spaces.",
            )],
            one_turn(Turn {
                user: "Tabs please. And single quotes.".into(),
                assistant: "OK.".into(),
                extractor: extractor(vec![
                    // Same description as the existing record, modulo case and spaces.
                    cand(
                        "indent-style",
                        "Prefers  TABS for indentation",
                        "Indent with tabs.",
                    ),
                    // Two candidates of one batch with the same body: the second must be caught.
                    cand(
                        "quotes",
                        "prefers single quotes",
                        "Use single quotes for strings.",
                    ),
                    cand(
                        "quote-style",
                        "string quoting style",
                        "use single quotes for strings.",
                    ),
                ]),
                ..Turn::default()
            }),
        ))
    };
    let c = cell(
        "existing + same batch",
        sw(|s| s.dedup = false),
        MemoryConstants::default(),
        &setup,
    )?;
    ExperimentVerdict::of_row(EXPERIMENTS, "M-dedup-off", vec![c])
}

/// Nine seeded memories plus one extracted: the tenth triggers consolidation
/// (threshold 10) with `faults` injected.
fn consolidation_setup(faults: FaultPlan) -> impl Fn(&Path) -> LabResult<Setup> {
    move |_: &Path| {
        let seed = (0..9)
            .map(|i| {
                mem(
                    &format!("fact {i:02}"),
                    &format!("project fact number {i}"),
                    &format!("Fact {i} body."),
                )
            })
            .collect();
        Ok((
            seed,
            one_turn(Turn {
                user: "Also remember that releases ship on Fridays.".into(),
                assistant: "Will do.".into(),
                extractor: extractor(vec![cand(
                    "fact 09",
                    "releases ship on fridays",
                    "Releases ship on Fridays.",
                )]),
                consolidator: ConsolidatorScript::MergePairs,
                faults,
                ..Turn::default()
            }),
        ))
    }
}

fn run_rollback_off(_: &RunOptions) -> LabResult<ExperimentVerdict> {
    let off = sw(|s| s.rollback = false);
    let c = MemoryConstants::default();
    let cells = vec![
        cell(
            "fault=mid_delete_after_4",
            off,
            c,
            &consolidation_setup(FaultPlan {
                mid_delete_after: Some(4),
                ..FaultPlan::default()
            }),
        )?,
        cell(
            "fault=mid_rewrite_after_2",
            off,
            c,
            &consolidation_setup(FaultPlan {
                mid_rewrite_after: Some(2),
                ..FaultPlan::default()
            }),
        )?,
        cell(
            "fault=during_rebuild",
            off,
            c,
            &consolidation_setup(FaultPlan {
                during_rebuild: true,
                ..FaultPlan::default()
            }),
        )?,
    ];
    ExperimentVerdict::of_row(EXPERIMENTS, "M-rollback-off", cells)
}

fn run_model_writes(_: &RunOptions) -> LabResult<ExperimentVerdict> {
    let setup = |_: &Path| -> LabResult<Setup> {
        Ok((
            vec![mem(
                "tabs",
                "prefers tabs for indentation",
                "Use tabs, not spaces.",
            )],
            one_turn(Turn {
                user: "Start the dev server and tidy up your notes.".into(),
                tool_calls: vec![
                    ToolCall {
                        name: MEMORY_WRITE_TOOL.into(),
                        input: serde_json::json!({"name": "scratch", "type": "project", "description": "dev server on port 8080 for now", "body": "Temporary."}),
                        result: String::new(),
                    },
                    ToolCall {
                        name: MEMORY_DELETE_TOOL.into(),
                        input: serde_json::json!({"name": "tabs"}),
                        result: String::new(),
                    },
                ],
                assistant: "Done.".into(),
                ..Turn::default()
            }),
        ))
    };
    let c = cell(
        "write temp + delete tabs",
        sw(|s| s.model_has_write_tool = true),
        MemoryConstants::default(),
        &setup,
    )?;
    ExperimentVerdict::of_row(EXPERIMENTS, "M-model-writes", vec![c])
}

fn run_garbage_empty(_: &RunOptions) -> LabResult<ExperimentVerdict> {
    let setup = |_: &Path| -> LabResult<Setup> {
        Ok((
            vec![mem(
                "tabs",
                "prefers tabs for indentation",
                "Use tabs, not spaces.",
            )],
            one_turn(Turn {
                user: "Which indentation do I prefer?".into(),
                selector: SelectorScript::Reply("The tabs memory looks relevant.".into()),
                assistant: "Not sure.".into(),
                ..Turn::default()
            }),
        ))
    };
    let c = finding_cell(
        "selector answers prose",
        sw(|s| s.fallback_on_garbage = true),
        MemoryConstants::default(),
        &setup,
    )?;
    ExperimentVerdict::of_row(EXPERIMENTS, "M-garbage-empty", vec![c])
}

/// `sessions` sessions, each storing three fresh memories of ~2.5k chars:
/// ten records are already over the 20000-char consolidation input cap.
fn growth_setup(sessions: usize) -> impl Fn(&Path) -> LabResult<Setup> {
    move |_: &Path| {
        let sessions = (0..sessions)
            .map(|s| {
                let items = (0..3)
                    .map(|k| {
                        let i = s * 3 + k;
                        cand(
                            &format!("note {i:03}"),
                            &format!("project note {i}"),
                            &format!("Note {i}. {}", "detail ".repeat(350)),
                        )
                    })
                    .collect();
                Session {
                    turns: vec![Turn {
                        user: format!("Session {s}: here are three more project facts."),
                        assistant: "Stored.".into(),
                        extractor: extractor(items),
                        consolidator: ConsolidatorScript::MergePairs,
                        ..Turn::default()
                    }],
                }
            })
            .collect();
        Ok((Vec::new(), sessions))
    }
}

/// Store size after each of `sessions` growth sessions (three ~2.5k-char
/// memories per session, `MergePairs` consolidator) under `switches`: with
/// the course's reverse gate the curve only rises once the store passes the
/// input cap; with `chunked_consolidation` it stays bounded.
pub fn growth_curve(sessions: usize, switches: MemorySwitches) -> LabResult<Vec<u64>> {
    let (fs, dir) = super::session::sandbox();
    let (_, all_sessions) = growth_setup(sessions)(&dir)?;
    let mut h = Harness::new(fs, &dir, switches, MemoryConstants::default())?;
    let mut sizes = Vec::with_capacity(sessions);
    for s in &all_sessions {
        h.run_sessions(std::slice::from_ref(s))?;
        sizes.push(h.store.memory_files()?.len() as u64);
    }
    Ok(sizes)
}

fn run_reverse_gate(_: &RunOptions) -> LabResult<ExperimentVerdict> {
    let c = MemoryConstants::default();
    let chunked = sw(|s| s.chunked_consolidation = true);
    let warn = sw(|s| s.warn_on_skip = true);
    let cells = vec![
        finding_cell("sessions=4", chunked, c, &growth_setup(4))?,
        finding_cell("sessions=12", chunked, c, &growth_setup(12))?,
        finding_cell("sessions=12 fix=warn_on_skip", warn, c, &growth_setup(12))?,
    ];
    ExperimentVerdict::of_row(EXPERIMENTS, "M-reverse-gate", cells)
}

/// A crash-window cell: the same enumeration under the intact switches
/// (journal on) and the course's in-memory snapshot (`crash_journal = false`).
fn window_cell(
    label: &str,
    what: &str,
    run: fn(MemorySwitches) -> LabResult<super::crash::WindowReport>,
) -> LabResult<Cell> {
    Ok(Cell {
        label: label.to_string(),
        baseline: run(MemorySwitches::default())?.counters(what),
        broken: run(sw(|s| s.crash_journal = false))?.counters(what),
        ..Default::default()
    })
}

fn run_crash_window(_: &RunOptions) -> LabResult<ExperimentVerdict> {
    let c = window_cell(
        "kill after every operation",
        "crash",
        super::crash::kill_window,
    )?;
    ExperimentVerdict::of_row(EXPERIMENTS, "M-crash-window", vec![c])
}

fn run_full_disk(_: &RunOptions) -> LabResult<ExperimentVerdict> {
    let c = window_cell(
        "disk full at every write",
        "full_disk",
        super::crash::full_disk_window,
    )?;
    ExperimentVerdict::of_row(EXPERIMENTS, "M-full-disk", vec![c])
}

// Sizes of the enumerations (ten seeded memories, `MergePairs`): fixed by
// the store's operation sequence, so a change to it shows up here.
const CRASH_POINTS: u64 = 34;
const CRASH_POINTS_COURSE: u64 = 30;
const CRASH_LOSING: u64 = 24;
const CRASH_LOST: u64 = 165;
const FULL_LOSING: u64 = 6;
const FULL_LOST: u64 = 45;

/// Memory rows of the registry.
pub static EXPERIMENTS: &[Experiment] = &[
    Experiment {
        id: "M-guard-off",
        mechanism: Mechanism::Memory,
        kind: Kind::Break,
        title: "path guard off lets a memory name escape the store",
        change: "MemorySwitches.path_guard = false",
        caught_by: &["written_outside_store"],
        seed: "section 6 (path guard: separators, index-as-record, resolve inside store)",
        run: run_guard_off,
        expect: &[every("written_outside_store", 0, 1), every("refused_writes", 1, 0)],
    },
    Experiment {
        id: "M-index-stale",
        mechanism: Mechanism::Memory,
        kind: Kind::Break,
        title: "MEMORY.md not rebuilt after writes drifts from the files",
        change: "MemorySwitches.rebuild_index = false",
        caught_by: &["index_drift"],
        seed: "section 6 (index is derived, rebuilt from all files after every write)",
        run: run_index_stale,
        expect: &[every("index_drift", 0, 3)],
    },
    Experiment {
        id: "M-tempword-off",
        mechanism: Mechanism::Memory,
        kind: Kind::Break,
        title: "temporary-word filter off stores one-off zh/en/ja facts",
        change: "MemorySwitches.temp_word_filter = false",
        caught_by: &["temporary_stored"],
        seed: "section 7 (should-store gate: trilingual temporary marker list)",
        run: run_tempword_off,
        expect: &[every("temporary_stored", 0, 3)],
    },
    Experiment {
        id: "M-dedup-off",
        mechanism: Mechanism::Memory,
        kind: Kind::Break,
        title: "dedup off stores duplicates of existing and same-batch records",
        change: "MemorySwitches.dedup = false",
        caught_by: &["duplicates_stored"],
        seed: "section 7 (slug/description/body dedup, earlier batch members included)",
        run: run_dedup_off,
        expect: &[every("duplicates_stored", 0, 2)],
    },
    Experiment {
        id: "M-rollback-off",
        mechanism: Mechanism::Memory,
        kind: Kind::Break,
        title: "a consolidation fault without rollback loses acknowledged memories",
        change: "MemorySwitches.rollback = false",
        caught_by: &["acknowledged_lost"],
        seed: "section 7 (snapshot -> delete all -> rewrite -> rebuild; rollback on any failure)",
        run: run_rollback_off,
        expect: &[
            at("fault=mid_delete_after_4", "acknowledged_lost", 0, 4),
            at("fault=mid_rewrite_after_2", "acknowledged_lost", 0, 8),
            at("fault=during_rebuild", "acknowledged_lost", 0, 5),
            every("rollbacks", 1, 0),
        ],
    },
    Experiment {
        id: "M-crash-window",
        mechanism: Mechanism::Memory,
        kind: Kind::Break,
        title: "a kill at any file-system operation of a consolidation loses memories (snapshot only in memory)",
        change: "MemorySwitches.crash_journal = false",
        caught_by: &["crash_points_losing", "acknowledged_lost"],
        seed: "section 7 (snapshot -> delete all -> rewrite -> rebuild; rollback on any failure)",
        run: run_crash_window,
        expect: &[
            every("crash_points", CRASH_POINTS, CRASH_POINTS_COURSE),
            every("crash_points_losing", 0, CRASH_LOSING),
            every("acknowledged_lost", 0, CRASH_LOST),
            every("leftover_temps", 0, 0),
            every("index_drift", 0, 0),
            every("written_outside_store", 0, 0),
        ],
    },
    Experiment {
        id: "M-full-disk",
        mechanism: Mechanism::Memory,
        kind: Kind::Break,
        title: "a full disk at a write of a consolidation leaves the course's rollback nothing to restore into",
        change: "MemorySwitches.crash_journal = false",
        caught_by: &["full_disk_points_losing", "acknowledged_lost"],
        seed: "section 7 (rollback on any failure)",
        run: run_full_disk,
        expect: &[
            every("full_disk_points", 7, 6),
            every("full_disk_points_losing", 0, FULL_LOSING),
            every("acknowledged_lost", 0, FULL_LOST),
            every("leftover_temps", 0, 0),
            every("temps_after_failure", 0, 0),
            every("index_drift", 0, 0),
            every("written_outside_store", 0, 0),
        ],
    },
    Experiment {
        id: "M-model-writes",
        mechanism: Mechanism::Memory,
        kind: Kind::Break,
        title: "a memory tool for the model bypasses every gate",
        change: "MemorySwitches.model_has_write_tool = true",
        caught_by: &["model_writes", "acknowledged_lost", "temporary_stored"],
        seed: "section 7 (write authority belongs to the harness, not the model)",
        run: run_model_writes,
        expect: &[
            every("model_writes", 0, 2),
            every("acknowledged_lost", 0, 1),
            every("temporary_stored", 0, 1),
        ],
    },
    Experiment {
        id: "M-garbage-empty",
        mechanism: Mechanism::Memory,
        kind: Kind::Finding,
        title: "unparsable selector output silently recalls nothing: no fallback unless the side call raises",
        change: "baseline: MemorySwitches.fallback_on_garbage = true; broken: course as is",
        caught_by: &["garbage_empty_selections"],
        seed: "section 7 (keyword fallback only when the side call raises; garbage -> empty)",
        run: run_garbage_empty,
        expect: &[every("garbage_empty_selections", 0, 1), every("garbage_fallbacks", 1, 0)],
    },
    Experiment {
        id: "M-reverse-gate",
        mechanism: Mechanism::Memory,
        kind: Kind::Finding,
        title: "reverse gate: a store past the consolidation input cap is never consolidated again, silently, and grows without bound",
        change: "baseline: MemorySwitches.chunked_consolidation = true (cell `fix=warn_on_skip`: MemorySwitches.warn_on_skip = true); broken: course as is",
        caught_by: &["consolidation_skipped_silently", "store_size"],
        seed: "section 7 and 10.5 (reverse gate: input cap skips before the model call; only deletion path)",
        run: run_reverse_gate,
        expect: &[
            at("sessions=4", "consolidation_skipped_silently", 0, 1),
            at("sessions=12", "consolidation_skipped_silently", 0, 9),
            at("sessions=12", "store_size", 9, 36),
            at("sessions=12 fix=warn_on_skip", "consolidation_skipped_silently", 0, 9),
            at("sessions=12 fix=warn_on_skip", "consolidation_skipped_warned", 9, 0),
            at("sessions=12 fix=warn_on_skip", "store_size", 36, 36),
        ],
    },
];
