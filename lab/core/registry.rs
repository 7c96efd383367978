//! The experiment registry: the types of a row and of its verdict.
//!
//! The list of rows is `ctxlab::experiments` (the binary crate), one floor up: it gathers the rows each mechanism declares
//! next to its code (`compact/experiments.rs`, `memory/experiments.rs`), which
//! import these types, so the dependencies flow one way: types <- rows <- list.
//! The same list drives `lab list`, `lab break ID`, `lab selftest`, the
//! GUIDE.md experiment table and the data-driven tests, so an experiment cannot
//! exist in one place and be missing from another.

use serde::Serialize;

use crate::counters::{Counters, Value};
use crate::error::{LabError, LabResult};

/// Which mechanism of the harness an experiment exercises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mechanism {
    /// Context compaction (seed sections 3-5): what may be lost.
    Compaction,
    /// Persistent memory (seed sections 6-7): what must not be lost.
    Memory,
    /// Both in one session (seed section 8): does what compaction loses survive in memory?
    Interlock,
}

impl Mechanism {
    /// Lower-case name for tables.
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Compaction => "compaction",
            Mechanism::Memory => "memory",
            Mechanism::Interlock => "interlock",
        }
    }
}

/// What kind of row this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A safeguard is switched off; the named counter must catch it.
    Break,
    /// A gap the seed found in the intact design; the baseline itself shows it.
    Finding,
}

/// An expected value in a registry expectation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected {
    /// A flag.
    Bool(bool),
    /// A count.
    Count(u64),
}

impl Expected {
    /// Does an observed value match?
    pub fn matches(self, v: &Value) -> bool {
        match (self, v) {
            (Expected::Bool(a), Value::Bool(b)) => a == *b,
            (Expected::Count(a), Value::Count(b)) => a == *b,
            _ => false,
        }
    }
}

impl std::fmt::Display for Expected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Expected::Bool(b) => write!(f, "{b}"),
            Expected::Count(n) => write!(f, "{n}"),
        }
    }
}

/// "In cell `cell`, counter `counter` goes from `baseline` to `broken`."
#[derive(Debug, Clone, Copy)]
pub struct Expect {
    /// Cell label the expectation applies to, or `None` for every cell.
    pub cell: Option<&'static str>,
    /// Counter name.
    pub counter: &'static str,
    /// Value in the baseline (intact) run.
    pub baseline: Expected,
    /// Value in the broken run.
    pub broken: Expected,
}

/// "In every cell, count `counter` is `baseline` intact and `broken` broken."
pub const fn every(counter: &'static str, baseline: u64, broken: u64) -> Expect {
    Expect {
        cell: None,
        counter,
        baseline: Expected::Count(baseline),
        broken: Expected::Count(broken),
    }
}

/// "In the cell labelled `cell`, count `counter` is `baseline` intact and `broken` broken."
pub const fn at(cell: &'static str, counter: &'static str, baseline: u64, broken: u64) -> Expect {
    Expect {
        cell: Some(cell),
        ..every(counter, baseline, broken)
    }
}

/// "In every cell, flag `counter` is `baseline` intact and `broken` broken."
pub const fn every_flag(counter: &'static str, baseline: bool, broken: bool) -> Expect {
    Expect {
        cell: None,
        counter,
        baseline: Expected::Bool(baseline),
        broken: Expected::Bool(broken),
    }
}

/// The row `id` of a mechanism's own `table`. Rows are static, so a
/// missing id is a slip in the code; it is reported, not panicked on.
pub fn row<'a>(table: &'a [Experiment], id: &str) -> LabResult<&'a Experiment> {
    table.iter().find(|e| e.id == id).ok_or_else(|| {
        LabError::usage(
            format!("no experiment {id} in its mechanism's rows"),
            "use an id from `lab list`",
        )
    })
}

/// Options every experiment accepts from the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOptions {
    /// Exact lengths of the embedded persistence path to run the experiment at.
    pub path_lens: Vec<usize>,
    /// Seed for anything randomised (sweeps, generated sessions).
    pub seed: u64,
}

impl Default for RunOptions {
    /// Two path lengths straddling the re-compaction threshold (embedded path
    /// length 89 with the course's 120-char placeholder rule), seed 0.
    fn default() -> Self {
        RunOptions {
            path_lens: vec![SHORT_PATH, LONG_PATH],
            seed: 0,
        }
    }
}

/// Default short embedded path length: placeholders stay under the 120-char rule.
pub const SHORT_PATH: usize = 60;
/// Default long embedded path length: placeholders cross the 120-char rule.
pub const LONG_PATH: usize = 160;

/// One cell of a verdict: the baseline and the broken run under one condition.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Cell {
    /// Condition label, e.g. `path_len=160`.
    pub label: String,
    /// Embedded path length of both runs, as a field so JSON readers need not
    /// parse `label`; `None` for rows without a persistence path.
    pub path_len: Option<usize>,
    /// Compaction profile both sides start from; `None` for rows that run none.
    pub profile: Option<String>,
    /// `--set` overrides each side applies on top of `profile`.
    pub overrides: SideOverrides,
    /// Counters of the intact run.
    pub baseline: Counters,
    /// Counters with the experiment's change applied.
    pub broken: Counters,
}

/// The overrides of the two sides of a cell, as `field=value` strings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SideOverrides {
    /// Overrides of the baseline side (the fix, for findings).
    pub baseline: Vec<String>,
    /// Overrides of the broken side (the break, for breaks).
    pub broken: Vec<String>,
}

/// What `lab break ID` prints: an experiment's cells.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExperimentVerdict {
    /// Experiment id.
    pub id: String,
    /// Mechanism.
    pub mechanism: Mechanism,
    /// Break or finding (decides how the two sides are labelled).
    pub kind: Kind,
    /// Title.
    pub title: String,
    /// The change, as `Switches.field = value` lines.
    pub change: String,
    /// One cell per condition.
    pub cells: Vec<Cell>,
}

impl ExperimentVerdict {
    /// A verdict for registry row `exp` with the given cells.
    pub fn new(exp: &Experiment, cells: Vec<Cell>) -> Self {
        ExperimentVerdict {
            id: exp.id.to_string(),
            mechanism: exp.mechanism,
            kind: exp.kind,
            title: exp.title.to_string(),
            change: exp.change.to_string(),
            cells,
        }
    }

    /// A verdict for the row `id` of `table` (see [`row`]) with the given cells.
    pub fn of_row(table: &[Experiment], id: &str, cells: Vec<Cell>) -> LabResult<Self> {
        Ok(ExperimentVerdict::new(row(table, id)?, cells))
    }

    /// Check the registry's expectations against this verdict; returns failures.
    pub fn check(&self, expects: &[Expect]) -> Vec<String> {
        let mut failures = Vec::new();
        for e in expects {
            let cells: Vec<&Cell> = self
                .cells
                .iter()
                .filter(|c| e.cell.is_none_or(|l| c.label == l))
                .collect();
            if cells.is_empty() {
                failures.push(format!("{}: no cell {:?}", self.id, e.cell));
            }
            for c in cells {
                for (side, counters, want) in [
                    ("baseline", &c.baseline, e.baseline),
                    ("broken", &c.broken, e.broken),
                ] {
                    match counters.get(e.counter) {
                        Some(got) if want.matches(&got.value) => {}
                        Some(got) => failures.push(format!(
                            "{} [{}] {side} {}: expected {want}, got {}",
                            self.id, c.label, e.counter, got.value
                        )),
                        None => failures.push(format!(
                            "{} [{}] {side}: counter {} missing",
                            self.id, c.label, e.counter
                        )),
                    }
                }
            }
        }
        failures
    }
}

/// One registry row.
#[derive(Clone, Copy)]
pub struct Experiment {
    /// Stable id used on the command line (`D6`, `M-rollback-off`, ...).
    pub id: &'static str,
    /// Mechanism.
    pub mechanism: Mechanism,
    /// Break or finding.
    pub kind: Kind,
    /// One-line title.
    pub title: &'static str,
    /// The change as `Switches.field = value` (or "none" for findings).
    pub change: &'static str,
    /// The counter(s) that catch it.
    pub caught_by: &'static [&'static str],
    /// Where the seed states it.
    pub seed: &'static str,
    /// Runs baseline and broken and returns the verdict.
    pub run: fn(&RunOptions) -> LabResult<ExperimentVerdict>,
    /// What the verdict must show; checked by `lab selftest` and the tests.
    pub expect: &'static [Expect],
}

impl std::fmt::Debug for Experiment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Experiment").field("id", &self.id).finish()
    }
}
