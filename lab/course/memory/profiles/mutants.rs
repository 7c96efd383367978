//! Measures that can fail: for every profile and every [`Measure`], either
//! the design cannot fail it (its [`StoreProfile::not_applicable`] reason,
//! printed "n/a: …") or a mutant in [`MUTANTS`] that the measure catches,
//! by the counter it names, while the intact design stays clean on it.
//!
//! A mutant is a design's own broken switch where it has one (Versioned's
//! missing precondition, Letta's reset on start, Codex preferring older
//! guidance) or one of two [`Mutation`]s that break any design the same way:
//!
//! - [`Mutation::AckUnwritten`]: tells the caller "stored" for a write that failed
//!   or was cut by a kill: the class of mem0ai/mem0#6911 (ADD returned
//!   for a failed insert) and of a write-behind buffer;
//! - [`Mutation::UpdateAsDuplicate`]: a fact whose key recall already shows is
//!   taken for a duplicate and refused (an update answered NOOP), so the
//!   superseded value stays.
//!
//! Where the intact design itself fails a measure (Codex regenerating
//! `MEMORY.md` in place regresses recall at a kill), the row's variant is
//! the design as upstream has it, and the fixed switch is the clean one.

use std::io;
use std::path::Path;

use serde::Serialize;

use super::add_only::AddOnly;
use super::git_backed::GitBacked;
use super::measures::{fault_points, growth, lost_updates, stale, FaultKind};
use super::memory_tool::MemoryToolStore;
use super::two_stage::TwoStage;
use super::versioned::Versioned;
use super::{Ack, Fact, Job, Measure, StoreProfile};
use crate::storage::Shared;

/// How [`Mutated`] breaks its design's writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutation {
    /// Acknowledge a write that did not reach the disk: a remember whose
    /// write failed (an I/O error, a full disk), was refused or was cut by
    /// a kill still answers [`Ack::Stored`].
    AckUnwritten,
    /// Refuse a fact whose key recall already shows: an update taken for a
    /// duplicate (answered NOOP), so the superseded value stays.
    UpdateAsDuplicate,
}

/// A design with one [`Mutation`] of its writes; everything else is the
/// design's own.
pub struct Mutated {
    /// The design.
    pub inner: Box<dyn StoreProfile>,
    /// What is broken.
    pub mutation: Mutation,
}

impl StoreProfile for Mutated {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn design(&self) -> &'static str {
        self.inner.design()
    }
    fn remember(&self, fs: &Shared, root: &Path, thread: &str, fact: &Fact) -> io::Result<Ack> {
        match self.mutation {
            // An error reply (the reference tool's answer to a full disk) is
            // turned into success too, as a tool that ignores its write's
            // result does.
            Mutation::AckUnwritten => match self.inner.remember(fs, root, thread, fact) {
                Err(_) | Ok(Ack::Refused(_)) => Ok(Ack::Stored),
                ok => ok,
            },
            // The caller is told: a refusal is no acknowledgement, so the
            // fault measures (which count acknowledged facts) stay clean.
            Mutation::UpdateAsDuplicate => {
                if self
                    .inner
                    .recall(fs, root)?
                    .iter()
                    .any(|(k, _)| *k == fact.key)
                {
                    return Ok(Ack::Refused(format!(
                        "`{}` is already remembered",
                        fact.key
                    )));
                }
                self.inner.remember(fs, root, thread, fact)
            }
        }
    }
    fn consolidate(&self, fs: &Shared, root: &Path) -> io::Result<()> {
        self.inner.consolidate(fs, root)
    }
    fn recover(&self, fs: &Shared, root: &Path) -> io::Result<()> {
        self.inner.recover(fs, root)
    }
    fn recall(&self, fs: &Shared, root: &Path) -> io::Result<Vec<(String, String)>> {
        self.inner.recall(fs, root)
    }
    fn versions(&self, fs: &Shared, root: &Path) -> Option<u64> {
        self.inner.versions(fs, root)
    }
    fn over_limit(&self, fs: &Shared, root: &Path) -> Option<String> {
        self.inner.over_limit(fs, root)
    }
    fn consolidator(&self, thread: &str, facts: Vec<Fact>) -> Box<dyn Job> {
        self.inner.consolidator(thread, facts)
    }
    fn not_applicable(&self, measure: Measure) -> Option<&'static str> {
        self.inner.not_applicable(measure)
    }
}

/// One mutant: a broken variant of `profile` that `measure` catches.
pub struct Mutant {
    /// The profile it breaks (`versioned`).
    pub profile: &'static str,
    /// The measure that catches it.
    pub measure: Measure,
    /// What is broken, as a reader would say it (a switch and its value,
    /// or a wrapper).
    pub variant: &'static str,
    /// Whether the variant is the design as upstream has it (its own
    /// defect), so the intact profile is caught too and `fixed` is clean.
    pub upstream: bool,
    /// The broken variant.
    pub make: fn() -> Box<dyn StoreProfile>,
    /// The variant that must stay clean on the measure: the intact design,
    /// or the fixed switch where the variant is upstream's own.
    pub clean: fn() -> Box<dyn StoreProfile>,
}

const ACK_UNWRITTEN: &str =
    "AckUnwritten: \"stored\" for a write that failed or was cut (mem0ai/mem0#6911's class, a write-behind buffer)";
const UPDATE_AS_DUPLICATE: &str =
    "UpdateAsDuplicate: a fact whose key is remembered is refused as a duplicate (an update answered NOOP)";

fn mutated<P: StoreProfile + Default + 'static>(mutation: Mutation) -> Box<dyn StoreProfile> {
    Box::new(Mutated {
        inner: Box::new(P::default()),
        mutation,
    })
}

fn ack_unwritten<P: StoreProfile + Default + 'static>() -> Box<dyn StoreProfile> {
    mutated::<P>(Mutation::AckUnwritten)
}

fn update_as_duplicate<P: StoreProfile + Default + 'static>() -> Box<dyn StoreProfile> {
    mutated::<P>(Mutation::UpdateAsDuplicate)
}

fn intact<P: StoreProfile + Default + 'static>() -> Box<dyn StoreProfile> {
    Box::new(P::default())
}

/// Every mutant, by profile then measure. A test checks that every
/// profile × measure cell has one here or a `not_applicable` reason.
pub const MUTANTS: &[Mutant] = &[
    Mutant {
        profile: "add-only",
        measure: Measure::Kill,
        variant: ACK_UNWRITTEN,
        upstream: false,
        make: ack_unwritten::<AddOnly>,
        clean: intact::<AddOnly>,
    },
    Mutant {
        profile: "add-only",
        measure: Measure::IoError,
        variant: "AddOnly.ack_failed_inserts = true (upstream, mem0ai/mem0#6911)",
        upstream: true,
        make: intact::<AddOnly>,
        clean: || {
            Box::new(AddOnly {
                ack_failed_inserts: false,
                ..AddOnly::default()
            })
        },
    },
    Mutant {
        profile: "add-only",
        measure: Measure::FullDisk,
        variant: "AddOnly.ack_failed_inserts = true (upstream, mem0ai/mem0#6911)",
        upstream: true,
        make: intact::<AddOnly>,
        clean: || {
            Box::new(AddOnly {
                ack_failed_inserts: false,
                ..AddOnly::default()
            })
        },
    },
    Mutant {
        profile: "git-backed",
        measure: Measure::Kill,
        variant: "GitBacked.reset_on_start = true, commit_every_edit = false",
        upstream: false,
        make: || {
            Box::new(GitBacked {
                reset_on_start: true,
                commit_every_edit: false,
                ..GitBacked::default()
            })
        },
        clean: || {
            Box::new(GitBacked {
                commit_every_edit: false,
                ..GitBacked::default()
            })
        },
    },
    Mutant {
        profile: "git-backed",
        measure: Measure::IoError,
        variant: ACK_UNWRITTEN,
        upstream: false,
        make: ack_unwritten::<GitBacked>,
        clean: intact::<GitBacked>,
    },
    Mutant {
        profile: "git-backed",
        measure: Measure::FullDisk,
        variant: ACK_UNWRITTEN,
        upstream: false,
        make: ack_unwritten::<GitBacked>,
        clean: intact::<GitBacked>,
    },
    Mutant {
        profile: "git-backed",
        measure: Measure::Stale,
        variant: UPDATE_AS_DUPLICATE,
        upstream: false,
        make: update_as_duplicate::<GitBacked>,
        clean: intact::<GitBacked>,
    },
    Mutant {
        profile: "git-backed",
        measure: Measure::LostUpdates,
        variant: "GitBacked.parent_check = false",
        upstream: false,
        make: || {
            Box::new(GitBacked {
                parent_check: false,
                ..GitBacked::default()
            })
        },
        clean: intact::<GitBacked>,
    },
    Mutant {
        profile: "versioned",
        measure: Measure::Kill,
        variant: ACK_UNWRITTEN,
        upstream: false,
        make: ack_unwritten::<Versioned>,
        clean: intact::<Versioned>,
    },
    Mutant {
        profile: "versioned",
        measure: Measure::IoError,
        variant: ACK_UNWRITTEN,
        upstream: false,
        make: ack_unwritten::<Versioned>,
        clean: intact::<Versioned>,
    },
    Mutant {
        profile: "versioned",
        measure: Measure::FullDisk,
        variant: ACK_UNWRITTEN,
        upstream: false,
        make: ack_unwritten::<Versioned>,
        clean: intact::<Versioned>,
    },
    Mutant {
        profile: "versioned",
        measure: Measure::Stale,
        variant: UPDATE_AS_DUPLICATE,
        upstream: false,
        make: update_as_duplicate::<Versioned>,
        clean: intact::<Versioned>,
    },
    Mutant {
        profile: "versioned",
        measure: Measure::Limits,
        variant: "Versioned.enforce_limits = false",
        upstream: false,
        make: || {
            Box::new(Versioned {
                enforce_limits: false,
                ..Versioned::default()
            })
        },
        clean: intact::<Versioned>,
    },
    Mutant {
        profile: "versioned",
        measure: Measure::LostUpdates,
        variant: "Versioned.precondition = false",
        upstream: false,
        make: || {
            Box::new(Versioned {
                precondition: false,
                ..Versioned::default()
            })
        },
        clean: intact::<Versioned>,
    },
    Mutant {
        profile: "two-stage",
        measure: Measure::Kill,
        variant:
            "TwoStage.atomic_regeneration = false (upstream: MEMORY.md removed, then rewritten)",
        upstream: true,
        make: intact::<TwoStage>,
        clean: two_stage_atomic,
    },
    Mutant {
        profile: "two-stage",
        measure: Measure::IoError,
        variant:
            "TwoStage.atomic_regeneration = false (upstream: MEMORY.md removed, then rewritten)",
        upstream: true,
        make: intact::<TwoStage>,
        clean: two_stage_atomic,
    },
    Mutant {
        profile: "two-stage",
        measure: Measure::FullDisk,
        variant:
            "TwoStage.atomic_regeneration = false (upstream: MEMORY.md removed, then rewritten)",
        upstream: true,
        make: intact::<TwoStage>,
        clean: two_stage_atomic,
    },
    Mutant {
        profile: "two-stage",
        measure: Measure::Stale,
        variant: "TwoStage.prefer_newer = false",
        upstream: false,
        make: || {
            Box::new(TwoStage {
                prefer_newer: false,
                ..TwoStage::default()
            })
        },
        clean: intact::<TwoStage>,
    },
    Mutant {
        profile: "memory-tool",
        measure: Measure::Kill,
        variant: ACK_UNWRITTEN,
        upstream: false,
        make: ack_unwritten::<MemoryToolStore>,
        clean: intact::<MemoryToolStore>,
    },
    Mutant {
        profile: "memory-tool",
        measure: Measure::IoError,
        variant: ACK_UNWRITTEN,
        upstream: false,
        make: ack_unwritten::<MemoryToolStore>,
        clean: intact::<MemoryToolStore>,
    },
    Mutant {
        profile: "memory-tool",
        measure: Measure::FullDisk,
        variant: ACK_UNWRITTEN,
        upstream: false,
        make: ack_unwritten::<MemoryToolStore>,
        clean: intact::<MemoryToolStore>,
    },
    Mutant {
        profile: "memory-tool",
        measure: Measure::Stale,
        variant: "MemoryToolStore.edit_in_place = false (the model only inserts)",
        upstream: false,
        make: || {
            Box::new(MemoryToolStore {
                edit_in_place: false,
            })
        },
        clean: intact::<MemoryToolStore>,
    },
];

fn two_stage_atomic() -> Box<dyn StoreProfile> {
    Box::new(TwoStage {
        atomic_regeneration: true,
        ..TwoStage::default()
    })
}

/// What one measure's named counter read on one variant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reading {
    /// Whether the measure flags it.
    pub caught: bool,
    /// The counter and its value (`losing at restart 16/20`).
    pub counter: String,
}

/// Run `measure` on `p` and read the counter that flags a defect.
pub fn read(p: &dyn StoreProfile, measure: Measure) -> Reading {
    let fault = |kind| {
        let r = fault_points(p, kind);
        let caught = r.losing_at_restart > 0 || r.regressed > 0;
        let counter = format!(
            "acknowledged lost at restart {}/{}, recall regressed {}/{}",
            r.losing_at_restart, r.points, r.regressed, r.points
        );
        Reading { caught, counter }
    };
    match measure {
        Measure::Kill => fault(FaultKind::Kill),
        Measure::IoError => fault(FaultKind::IoError),
        Measure::FullDisk => fault(FaultKind::FullDisk),
        Measure::Stale => {
            let r = stale(p);
            Reading {
                caught: r.gone_after.is_none(),
                counter: match r.gone_after {
                    Some(n) => format!("gone after {n} consolidation(s)"),
                    None => format!("survives {}", r.consolidations),
                },
            }
        }
        Measure::Limits => {
            let r = growth(p);
            Reading {
                caught: r.over_limit > 0,
                counter: format!("sessions over a limit {}/{}", r.over_limit, r.sessions),
            }
        }
        Measure::LostUpdates => {
            let r = lost_updates(p);
            Reading {
                caught: r.losing > 0,
                counter: format!("interleavings losing {}/{}", r.losing, r.interleavings),
            }
        }
    }
}

/// One cell of the matrix: a profile × measure, with its mutant's and its
/// clean variant's readings, or the reason the measure cannot fail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cell {
    /// The profile.
    pub profile: &'static str,
    /// The measure.
    pub measure: Measure,
    /// Why the design cannot fail it, where it cannot.
    pub not_applicable: Option<&'static str>,
    /// The mutant's variant, where there is one.
    pub variant: Option<&'static str>,
    /// The mutant's reading (it must be caught).
    pub mutant: Option<Reading>,
    /// The clean variant's reading (it must not be).
    pub clean: Option<Reading>,
}

/// Every profile × measure cell, each mutant and clean variant measured.
/// Slow (the growth measure runs 1,000 sessions per limits cell); the
/// listing and the tests call it once.
pub fn matrix() -> Vec<Cell> {
    let mut out = Vec::new();
    for p in super::profiles() {
        for measure in Measure::ALL {
            let mutant = MUTANTS
                .iter()
                .find(|m| m.profile == p.name() && m.measure == measure);
            out.push(Cell {
                profile: p.name(),
                measure,
                not_applicable: p.not_applicable(measure),
                variant: mutant.map(|m| m.variant),
                mutant: mutant.map(|m| read((m.make)().as_ref(), measure)),
                clean: mutant.map(|m| read((m.clean)().as_ref(), measure)),
            });
        }
    }
    out
}
