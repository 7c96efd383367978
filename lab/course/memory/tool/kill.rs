//! The `kill-mid-edit` row: an edit that grows a memory to 8 MiB dies
//! mid-way, and the memory must keep its old text or hold the new one
//! whole (an implementation that writes in place leaves a part).
//!
//! In process the kill is exact: the storage's fault plan kills the
//! implementation at each operation of the edit in turn, the write in
//! flight keeping half its bytes ([`crate::storage::FaultPlan::torn_kill`]),
//! until a run finishes before the kill point. A process gets SIGKILL
//! (its whole group) at [`KILLS`] points spread evenly over the time a
//! clean run of the edit took: timing decides where each lands, so a
//! process that writes in place may tear on one machine and not on
//! another, while one that writes a temporary file and renames it holds on
//! every machine.

use std::path::Path;
use std::time::Duration;

use super::harness::{huge_text, run_once, Faults, Maker, Plant, Row, Sandbox, Verdict};
use super::{Command, Reply};
use crate::error::LabResult;
use crate::storage::FaultPlan;

/// SIGKILLs sent to a process, at `i / KILLS` of a clean edit's time.
pub const KILLS: u32 = 32;

/// Most kill points tried in process: far more operations than one edit makes.
const MAX_KILL_POINTS: u64 = 64;

const OLD: &str = "alpha beta gamma\n";

/// The row.
pub fn row() -> Row {
    Row {
        id: "kill-mid-edit",
        what: "str_replace growing a memory to 8 MiB, killed mid-way (SIGKILL for a process)",
        requires: "the file keeps its old text or holds the new one whole; other memories stay",
        plants: &[Plant::File("a.md", OLD), Plant::File("b.md", "keep\n")],
        commands: |_| {
            vec![Command::StrReplace {
                path: "/memories/a.md".into(),
                old_str: "beta".into(),
                new_str: huge_text(),
            }]
        },
        expect,
        writers: 1,
        fault: None,
        kill: true,
    }
}

fn expect(s: &Sandbox, _: &[Reply]) -> Verdict {
    if s.file("b.md").as_deref() != Some("keep\n") {
        return Verdict::Lost("b.md, untouched by the edit, changed or is gone".into());
    }
    let Some(t) = s.file("a.md") else {
        return Verdict::Lost("a.md is gone".into());
    };
    if t == OLD || t == OLD.replacen("beta", &huge_text(), 1) {
        Verdict::Held
    } else {
        Verdict::Torn(format!("a.md holds {} bytes of neither text", t.len()))
    }
}

/// Run the row: every kill point in process, every delay for a process;
/// the first verdict that is not `held`, saying where the kill landed.
pub fn run(row: &Row, make: &Maker<'_>, in_process: bool, tmp: &Path) -> LabResult<Verdict> {
    if in_process {
        by_fault_plan(row, make, tmp)
    } else {
        by_signal(row, make, tmp)
    }
}

/// A process: SIGKILL at [`KILLS`] points over a clean edit's time.
fn by_signal(row: &Row, make: &Maker<'_>, tmp: &Path) -> LabResult<Verdict> {
    let clean = run_once(row, make, tmp, &Faults::default())?;
    if clean.verdict != Verdict::Held {
        return Ok(clean.verdict);
    }
    for i in 0..KILLS {
        let faults = Faults {
            kill: Some(clean.last * i / KILLS),
            ..Faults::default()
        };
        let v = run_once(row, make, tmp, &faults)?.verdict;
        if v != Verdict::Held {
            return Ok(v.prefixed(&format!("SIGKILL at {i}/{KILLS} of the edit's time")));
        }
    }
    Ok(Verdict::Held)
}

/// In process: the fault backend kills at each operation of the edit in
/// turn (the write in flight keeping half), until a run ends before its
/// kill point.
fn by_fault_plan(row: &Row, make: &Maker<'_>, tmp: &Path) -> LabResult<Verdict> {
    let with = |plan: FaultPlan| Faults {
        plan: Some(plan),
        kill: Some(Duration::ZERO),
        ..Faults::default()
    };
    // A clean run says where the edit's operations start.
    let clean = run_once(row, make, tmp, &with(FaultPlan::default()))?;
    if clean.verdict != Verdict::Held {
        return Ok(clean.verdict);
    }
    for k in clean.ops.0..clean.ops.0 + MAX_KILL_POINTS {
        let plan = FaultPlan {
            kill_after: Some(k),
            torn_kill: true,
            ..FaultPlan::default()
        };
        let r = run_once(row, make, tmp, &with(plan))?;
        if !r.killed {
            break;
        }
        if r.verdict != Verdict::Held {
            let at = format!("killed at operation {} of the edit", k - clean.ops.0 + 1);
            return Ok(r.verdict.prefixed(&at));
        }
    }
    Ok(Verdict::Held)
}
