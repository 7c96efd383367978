//! The kill rows: each writing command (`create`, `str_replace`, `insert`,
//! `rename`, `delete`) dies mid-way, and what it touched must keep its old
//! state or hold the new one whole (an implementation that writes in place
//! leaves a part); an edit it acknowledged before dying must be whole on
//! disk; the other memories stay.
//!
//! Every kill point is one ctxlab controls, never a delay. In process the
//! storage's fault plan kills the implementation at each operation of the
//! command in turn, the write in flight keeping half its bytes
//! ([`crate::storage::FaultPlan::torn_kill`]), until a run finishes before
//! the kill point. A process gets SIGKILL (its whole group) at each
//! [`KillPoint`]: as soon as the request is written, once 1 byte and once
//! half of its answer are read (part-way through the answer: not
//! acknowledged), and as soon as its whole answer is read. Where a process
//! is inside its own work when the first lands is up to the operating
//! system; what the others check (a tool that has begun to answer has
//! left no part; an acknowledged edit is whole) is not.

use std::path::Path;

use super::harness::{huge_text, run_once, Faults, Maker, Plant, Row, Sandbox, ToolVerdict};
use super::{Command, KillPoint, Reply};
use crate::error::LabResult;
use crate::storage::FaultPlan;

/// Most kill points tried in process: far more operations than one command makes.
const MAX_KILL_POINTS: u64 = 64;

const OLD: &str = "alpha beta gamma\n";
const KEEP: &str = "keep\n";

fn row(
    id: &'static str,
    what: &'static str,
    plants: &'static [Plant],
    commands: fn(&Sandbox) -> Vec<Command>,
    expect: fn(&Sandbox, &[Reply]) -> ToolVerdict,
) -> Row {
    Row {
        id,
        what,
        requires:
            "old state kept or the new one whole (whole if acknowledged); other memories stay",
        plants,
        commands,
        expect,
        writers: 1,
        fault: None,
        kill: true,
        race: None,
    }
}

/// The rows, one per writing command.
pub fn rows() -> Vec<Row> {
    vec![
        row(
            "kill-create",
            "create an 8 MiB memory, killed mid-way",
            &[Plant::File("b.md", KEEP)],
            |_| {
                vec![Command::Create {
                    path: "/memories/big.md".into(),
                    file_text: huge_text(),
                }]
            },
            |s, r| {
                if let Err(v) = others(s) {
                    return v;
                }
                match s.file("big.md") {
                    None if acknowledged(r) => {
                        ToolVerdict::Lost("the acknowledged big.md is missing".into())
                    }
                    None => ToolVerdict::Held,
                    Some(t) if t == huge_text() => ToolVerdict::Held,
                    Some(t) => torn("big.md", &t),
                }
            },
        ),
        row(
            "kill-str_replace",
            "str_replace growing a memory to 8 MiB, killed mid-way",
            &[Plant::File("a.md", OLD), Plant::File("b.md", KEEP)],
            |_| {
                vec![Command::StrReplace {
                    path: "/memories/a.md".into(),
                    old_str: "beta".into(),
                    new_str: huge_text(),
                }]
            },
            |s, r| {
                if let Err(v) = others(s) {
                    return v;
                }
                match s.file("a.md") {
                    None => ToolVerdict::Lost("a.md is gone".into()),
                    Some(t) if t == OLD && !acknowledged(r) => ToolVerdict::Held,
                    Some(t) if t == OLD.replacen("beta", &huge_text(), 1) => ToolVerdict::Held,
                    Some(t) if t == OLD => {
                        ToolVerdict::Lost("the acknowledged edit is not on disk".into())
                    }
                    Some(t) => torn("a.md", &t),
                }
            },
        ),
        row(
            "kill-insert",
            "insert 8 MiB after line 1, killed mid-way",
            &[Plant::File("a.md", "one\ntwo\n"), Plant::File("b.md", KEEP)],
            |_| {
                vec![Command::Insert {
                    path: "/memories/a.md".into(),
                    insert_line: 1,
                    insert_text: huge_text(),
                }]
            },
            |s, r| {
                if let Err(v) = others(s) {
                    return v;
                }
                let huge = huge_text();
                match s.file("a.md") {
                    None => ToolVerdict::Lost("a.md is gone".into()),
                    Some(t) if t == "one\ntwo\n" && !acknowledged(r) => ToolVerdict::Held,
                    Some(t) if t == "one\ntwo\n" => {
                        ToolVerdict::Lost("the acknowledged insert is not on disk".into())
                    }
                    Some(t)
                        if t.starts_with("one\n")
                            && t.ends_with("two\n")
                            && t.contains(huge.trim_end()) =>
                    {
                        ToolVerdict::Held
                    }
                    Some(t) => torn("a.md", &t),
                }
            },
        ),
        row(
            "kill-rename",
            "rename a.md to sub/c.md, killed mid-way",
            &[Plant::File("a.md", "A\n"), Plant::File("b.md", KEEP)],
            |_| {
                vec![Command::Rename {
                    old_path: "/memories/a.md".into(),
                    new_path: "/memories/sub/c.md".into(),
                }]
            },
            |s, r| {
                if let Err(v) = others(s) {
                    return v;
                }
                let (from, to) = (s.file("a.md"), s.file("sub/c.md"));
                let whole = |t: &Option<String>| t.as_deref() == Some("A\n");
                if acknowledged(r) && !whole(&to) {
                    return ToolVerdict::Lost(
                        "the acknowledged rename: sub/c.md does not hold A".into(),
                    );
                }
                match (from, to) {
                    (None, None) => ToolVerdict::Lost("a.md is gone and sub/c.md missing".into()),
                    (f, t) if (f.is_none() || whole(&f)) && (t.is_none() || whole(&t)) => {
                        ToolVerdict::Held
                    }
                    (f, t) => ToolVerdict::Torn(format!(
                        "a.md holds {:?}, sub/c.md {:?}",
                        f.map(|x| x.len()),
                        t.map(|x| x.len())
                    )),
                }
            },
        ),
        row(
            "kill-delete",
            "delete a directory of two memories, killed mid-way",
            &[
                Plant::File("d/x.md", "X\n"),
                Plant::File("d/y.md", "Y\n"),
                Plant::File("b.md", KEEP),
            ],
            |_| {
                vec![Command::Delete {
                    path: "/memories/d".into(),
                }]
            },
            |s, r| {
                if let Err(v) = others(s) {
                    return v;
                }
                let (x, y) = (s.file("d/x.md"), s.file("d/y.md"));
                if acknowledged(r) && (x.is_some() || y.is_some()) {
                    return ToolVerdict::Wrong("the acknowledged delete left files of d/".into());
                }
                match (x.as_deref(), y.as_deref()) {
                    (None | Some("X\n"), None | Some("Y\n")) => ToolVerdict::Held,
                    _ => ToolVerdict::Torn(format!("d/ holds {x:?} and {y:?}")),
                }
            },
        ),
    ]
}

/// Whether the command's answer (read before the kill) was a success.
fn acknowledged(replies: &[Reply]) -> bool {
    replies.last().is_some_and(|r| !r.is_error())
}

fn torn(file: &str, t: &str) -> ToolVerdict {
    ToolVerdict::Torn(format!("{file} holds {} bytes of neither text", t.len()))
}

/// The untouched memory `b.md` must stay (`Err` is the verdict, for `?`).
fn others(s: &Sandbox) -> Result<(), ToolVerdict> {
    if s.file("b.md").as_deref() == Some(KEEP) {
        Ok(())
    } else {
        Err(ToolVerdict::Lost(
            "b.md, untouched by the command, changed or is gone".into(),
        ))
    }
}

/// Run a kill row: every kill point in process, both kill points for a
/// process; the first verdict that is not `held`, saying where the kill landed.
pub fn run(row: &Row, make: &Maker<'_>, in_process: bool, tmp: &Path) -> LabResult<ToolVerdict> {
    if in_process {
        by_fault_plan(row, make, tmp)
    } else {
        by_signal(row, make, tmp)
    }
}

/// A process: SIGKILL once the request is written, then once the answer is read.
fn by_signal(row: &Row, make: &Maker<'_>, tmp: &Path) -> LabResult<ToolVerdict> {
    let clean = run_once(row, make, tmp, &Faults::default())?;
    if clean.verdict != ToolVerdict::Held {
        return Ok(clean.verdict);
    }
    // Half the clean run's answer text: well inside the answer line, which
    // is that text quoted in JSON with its id around it.
    let half = (clean.reply_bytes as u64 / 2).max(2);
    for (at, name) in [
        (
            KillPoint::Sent,
            "SIGKILL once the request was written".to_string(),
        ),
        (
            KillPoint::Replying(1),
            "SIGKILL once 1 byte of the answer was read".to_string(),
        ),
        (
            KillPoint::Replying(half),
            format!("SIGKILL once {half} bytes of the answer (half its text) were read"),
        ),
        (
            KillPoint::Answered,
            "SIGKILL once the answer was read".to_string(),
        ),
    ] {
        let faults = Faults {
            kill: Some(at),
            ..Faults::default()
        };
        let v = run_once(row, make, tmp, &faults)?.verdict;
        if v != ToolVerdict::Held {
            return Ok(v.prefixed(&name));
        }
    }
    Ok(ToolVerdict::Held)
}

/// In process: the fault backend kills at each operation of the command
/// in turn (the write in flight keeping half), until a run ends before its
/// kill point.
fn by_fault_plan(row: &Row, make: &Maker<'_>, tmp: &Path) -> LabResult<ToolVerdict> {
    let with = |plan: FaultPlan| Faults {
        plan: Some(plan),
        kill: Some(KillPoint::Sent),
        ..Faults::default()
    };
    // A clean run says where the command's operations start.
    let clean = run_once(row, make, tmp, &with(FaultPlan::default()))?;
    if clean.verdict != ToolVerdict::Held {
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
        if r.verdict != ToolVerdict::Held {
            let at = format!("killed at operation {} of the command", k - clean.ops.0 + 1);
            return Ok(r.verdict.prefixed(&at));
        }
    }
    Ok(ToolVerdict::Held)
}
