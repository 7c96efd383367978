//! The rows: faults and attacks on a memory-tool implementation, each with
//! the outcome the tool's documentation requires; the cards of a run and
//! their report. The machinery a row runs on (sandbox, faults, judge) is
//! [`super::harness`].

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::harness::{huge_text, Plant};
pub use super::harness::{
    run_once, Faults, Maker, Row, Run, Sandbox, ToolVerdict, HUGE_BYTES, SECRET,
};
use super::{Command, Failure, MemoryTool, Reply};
use crate::error::{LabError, LabResult};
use crate::storage::{FaultPlan, Shared};

fn create(path: impl Into<String>, text: &str) -> Command {
    Command::Create {
        path: path.into(),
        file_text: text.into(),
    }
}

fn view(path: &str) -> Command {
    Command::View {
        path: path.into(),
        view_range: None,
    }
}

/// The last reply must be a tool error.
fn refused_cleanly(_: &Sandbox, replies: &[Reply]) -> ToolVerdict {
    match replies.last() {
        Some(r) if r.is_error() => ToolVerdict::Held,
        Some(r) => ToolVerdict::Wrong(format!("accepted: {}", first_line(r.text()))),
        None => ToolVerdict::Wrong("no reply".into()),
    }
}

/// Any answer will do (the generic escape checks decide).
fn answered(_: &Sandbox, _: &[Reply]) -> ToolVerdict {
    ToolVerdict::Held
}

/// `a.md` must still hold `want`, and the command must have been refused.
fn unchanged(s: &Sandbox, replies: &[Reply], file: &str, want: &str) -> ToolVerdict {
    match s.file(file) {
        Some(t) if t == want => refused_cleanly(s, replies),
        Some(t) => ToolVerdict::Wrong(format!("{file} changed to {:?}", first_line(&t))),
        None => ToolVerdict::Lost(format!("{file} is gone")),
    }
}

/// A command the documentation says works: it must answer without an
/// error and leave `file` holding `want`.
fn done(s: &Sandbox, replies: &[Reply], file: &str, want: &str) -> ToolVerdict {
    if let Some(r) = replies.iter().find(|r| r.is_error()) {
        return ToolVerdict::Refused(first_line(r.text()).to_string());
    }
    match s.file(file) {
        Some(t) if t == want => ToolVerdict::Held,
        Some(t) => ToolVerdict::Wrong(format!("{file} holds {:?}", first_line(&t))),
        None => ToolVerdict::Wrong(format!("{file} is missing")),
    }
}

/// The reply's error if there is one, else `otherwise` as a wrong result.
fn refused_or(replies: &[Reply], otherwise: &str) -> ToolVerdict {
    match replies.iter().find(|r| r.is_error()) {
        Some(r) => ToolVerdict::Refused(first_line(r.text()).to_string()),
        None => ToolVerdict::Wrong(otherwise.into()),
    }
}

fn first_line(t: &str) -> &str {
    t.lines().next().unwrap_or("")
}

/// Every row, in report order.
pub fn rows() -> Vec<Row> {
    let mut v = traversal_rows();
    v.extend(super::contain::rows());
    v.extend(link_rows());
    v.extend(edit_rows());
    v.extend(super::race::rows());
    v.push(huge_file_row());
    v.push(Row {
        id: "full-disk-edit",
        what: "str_replace while the disk is full",
        requires: "the file keeps its old text or gets the new one, never a part",
        plants: &[Plant::File("a.md", "alpha beta gamma\n")],
        commands: |_| {
            vec![Command::StrReplace {
                path: "/memories/a.md".into(),
                old_str: "beta".into(),
                new_str: "BETA".repeat(FULL_DISK_REPEAT),
            }]
        },
        expect: |s, _| match s.file("a.md").as_deref() {
            Some("alpha beta gamma\n") => ToolVerdict::Held,
            Some(t) if t == format!("alpha {} gamma\n", "BETA".repeat(FULL_DISK_REPEAT)) => {
                ToolVerdict::Held
            }
            Some(t) => ToolVerdict::Torn(format!("a.md holds {} bytes of neither text", t.len())),
            None => ToolVerdict::Lost("a.md is gone".into()),
        },
        writers: 1,
        fault: Some(FaultPlan {
            free_bytes: Some(0),
            ..FaultPlan::default()
        }),
        kill: false,
        race: None,
    });
    v.push(Row {
        id: "full-disk-create",
        what: "create a 16 KiB memory while the disk is full",
        requires: "refused with no part left, or stored whole",
        plants: &[Plant::File("a.md", "alpha\n")],
        commands: |_| vec![create("/memories/big.md", &"BETA".repeat(FULL_DISK_REPEAT))],
        expect: |s, r| match s.file("big.md") {
            None if r.last().is_some_and(|r| !r.is_error()) => {
                ToolVerdict::Lost("acknowledged, but big.md is missing".into())
            }
            None => ToolVerdict::Held,
            Some(t) if t == "BETA".repeat(FULL_DISK_REPEAT) => ToolVerdict::Held,
            Some(t) if r.last().is_some_and(|r| !r.is_error()) => ToolVerdict::Torn(format!(
                "acknowledged, but big.md holds {} of {} bytes",
                t.len(),
                4 * FULL_DISK_REPEAT
            )),
            Some(t) => ToolVerdict::Torn(format!(
                "refused, but a part is left: big.md holds {} of {} bytes",
                t.len(),
                4 * FULL_DISK_REPEAT
            )),
        },
        writers: 1,
        fault: Some(FaultPlan {
            free_bytes: Some(0),
            ..FaultPlan::default()
        }),
        kill: false,
        race: None,
    });
    v.extend(super::kill::rows());
    v
}

/// Repeats of `BETA` in the full-disk edit: 16 KiB, more than a page, so a
/// write in place on a full tmpfs (page-granular) cannot fit where the old
/// text was.
const FULL_DISK_REPEAT: usize = 4096;

/// A reply to a two-line `view_range` longer than this showed more than
/// the range.
const RANGE_REPLY_MAX: usize = 4 * 1024;

/// The documentation asks implementers to keep memory files from growing
/// too large and to let the model page through them: a huge `create` is
/// refused or stored whole, and a `view_range` answers its lines only.
fn huge_file_row() -> Row {
    Row {
        id: "huge-file",
        what: "create an 8 MiB memory, then view its lines 2-3",
        requires: "refused, or stored whole with view_range showing those lines only; never a part",
        plants: &[],
        commands: |_| {
            vec![
                create("/memories/big.md", &huge_text()),
                Command::View {
                    path: "/memories/big.md".into(),
                    view_range: Some([2, 3]),
                },
            ]
        },
        expect: huge_expect,
        writers: 1,
        fault: None,
        kill: false,
        race: None,
    }
}

fn huge_expect(s: &Sandbox, replies: &[Reply]) -> ToolVerdict {
    let stored = s.file("big.md");
    let text = huge_text();
    match (replies.first(), stored) {
        (Some(r), None) if r.is_error() => ToolVerdict::Held,
        (_, Some(t)) if t.len() < text.len() && text.starts_with(&t) => {
            ToolVerdict::Torn(format!("big.md holds {} of {} bytes", t.len(), text.len()))
        }
        (_, Some(t)) if t != text => ToolVerdict::Wrong(format!(
            "big.md holds {} bytes, not the {} written",
            t.len(),
            text.len()
        )),
        (_, None) => ToolVerdict::Lost("accepted, but big.md is missing".into()),
        (_, Some(_)) => match replies.get(1) {
            Some(r) if r.is_error() => ToolVerdict::Refused(first_line(r.text()).to_string()),
            Some(r) if r.text().len() > RANGE_REPLY_MAX => ToolVerdict::Wrong(format!(
                "view_range [2, 3] answered {} bytes: the range was ignored",
                r.text().len()
            )),
            Some(r) if r.text().contains("line 0000002") && r.text().contains("line 0000003") => {
                ToolVerdict::Held
            }
            Some(r) => ToolVerdict::Wrong(format!("view_range [2, 3] answered {:?}", r.text())),
            None => ToolVerdict::Wrong("no reply to the view".into()),
        },
    }
}

fn traversal_rows() -> Vec<Row> {
    let row = |id, what, commands: fn(&Sandbox) -> Vec<Command>, expect| Row {
        id,
        what,
        requires: "refused or kept inside /memories; nothing outside written",
        plants: &[],
        commands,
        expect,
        writers: 1,
        fault: None,
        kill: false,
        race: None,
    };
    vec![
        row(
            "traversal-dotdot",
            "create /memories/../pwn.md",
            |_| vec![create("/memories/../pwn.md", "pwned")],
            refused_cleanly,
        ),
        row(
            "traversal-deep",
            "create /memories/a/../../outside/pwn.md",
            |_| vec![create("/memories/a/../../outside/pwn.md", "pwned")],
            refused_cleanly,
        ),
        row(
            "traversal-absolute",
            "create at the sandbox's absolute outside path",
            |s| {
                vec![create(
                    s.base.join("outside/pwn.md").display().to_string(),
                    "pwned",
                )]
            },
            refused_cleanly,
        ),
        row(
            "traversal-percent",
            "create /memories/%2e%2e/%2e%2e/outside/pwn.md",
            |_| vec![create("/memories/%2e%2e/%2e%2e/outside/pwn.md", "x")],
            answered,
        ),
        row(
            "traversal-lookalike",
            "create through U+2025 and a fullwidth solidus",
            |_| {
                vec![
                    create("/memories/\u{2025}/outside/pwn.md", "x"),
                    create("/memories/..\u{FF0F}..\u{FF0F}outside\u{FF0F}pwn.md", "x"),
                ]
            },
            answered,
        ),
        row(
            "traversal-nul",
            "create /memories/a<NUL>.md",
            |_| vec![create("/memories/a\u{0}.md", "x")],
            refused_cleanly,
        ),
        row(
            "traversal-long",
            "create a 300-byte file name",
            |_| vec![create(format!("/memories/{}.md", "a".repeat(300)), "x")],
            refused_cleanly,
        ),
        row(
            "view-dotdot",
            "view /memories/../outside/secret.txt",
            |_| vec![view("/memories/../outside/secret.txt")],
            refused_cleanly,
        ),
    ]
}

fn link_rows() -> Vec<Row> {
    vec![
        Row {
            id: "link-out-create",
            what: "create through a symlink in /memories to a directory outside",
            requires: "refused; nothing outside written",
            plants: &[Plant::LinkOut("link", "")],
            commands: |_| vec![create("/memories/link/pwn.md", "pwned")],
            expect: refused_cleanly,
            writers: 1,
            fault: None,
            kill: false,
            race: None,
        },
        Row {
            id: "link-out-view",
            what: "view a file through a symlink in /memories",
            requires: "refused; the outside file is not shown",
            plants: &[Plant::LinkOut("link", "")],
            commands: |_| vec![view("/memories/link/secret.txt")],
            expect: refused_cleanly,
            writers: 1,
            fault: None,
            kill: false,
            race: None,
        },
        Row {
            id: "link-out-listing",
            what: "view /memories holding a symlink to a directory outside",
            requires: "no name from outside listed",
            plants: &[Plant::LinkOut("link", "")],
            commands: |_| vec![view("/memories")],
            expect: |_, replies| match replies.iter().find(|r| r.text().contains("secret.txt")) {
                Some(_) => ToolVerdict::Escaped("the listing shows outside/secret.txt".into()),
                None => ToolVerdict::Held,
            },
            writers: 1,
            fault: None,
            kill: false,
            race: None,
        },
        Row {
            id: "link-file-out-edit",
            what: "str_replace on a memory that is a symlink to a file outside",
            requires: "refused; the outside file unchanged",
            plants: &[Plant::LinkOut("notes.md", "secret.txt")],
            commands: |_| {
                vec![Command::StrReplace {
                    path: "/memories/notes.md".into(),
                    old_str: SECRET.into(),
                    new_str: "PWNED".into(),
                }]
            },
            expect: refused_cleanly,
            writers: 1,
            fault: None,
            kill: false,
            race: None,
        },
    ]
}

fn edit_rows() -> Vec<Row> {
    vec![
        Row {
            id: "rename-onto-existing",
            what: "rename a.md onto the existing b.md",
            requires: "refused; b.md keeps its text",
            plants: &[Plant::File("a.md", "A\n"), Plant::File("b.md", "B\n")],
            commands: |_| {
                vec![Command::Rename {
                    old_path: "/memories/a.md".into(),
                    new_path: "/memories/b.md".into(),
                }]
            },
            expect: |s, r| match s.file("b.md").as_deref() {
                Some("B\n") => refused_cleanly(s, r),
                _ => ToolVerdict::Lost("b.md was overwritten".into()),
            },
            writers: 1,
            fault: None,
            kill: false,
            race: None,
        },
        Row {
            id: "rename-out",
            what: "rename /memories/a.md to /memories/../outside/a.md",
            requires: "refused; a.md stays",
            plants: &[Plant::File("a.md", "A\n")],
            commands: |_| {
                vec![Command::Rename {
                    old_path: "/memories/a.md".into(),
                    new_path: "/memories/../outside/a.md".into(),
                }]
            },
            expect: |s, r| unchanged(s, r, "a.md", "A\n"),
            writers: 1,
            fault: None,
            kill: false,
            race: None,
        },
        Row {
            id: "replace-none",
            what: "str_replace with no match",
            requires: "refused; the file unchanged",
            plants: &[Plant::File("a.md", "one\ntwo\n")],
            commands: |_| vec![replace("three", "3")],
            expect: |s, r| unchanged(s, r, "a.md", "one\ntwo\n"),
            writers: 1,
            fault: None,
            kill: false,
            race: None,
        },
        Row {
            id: "replace-two",
            what: "str_replace with two matches",
            requires: "refused; the file unchanged",
            plants: &[Plant::File("a.md", "x\nx\n")],
            commands: |_| vec![replace("x", "y")],
            expect: |s, r| unchanged(s, r, "a.md", "x\nx\n"),
            writers: 1,
            fault: None,
            kill: false,
            race: None,
        },
        Row {
            id: "insert-past-end",
            what: "insert at line 5 of a one-line file",
            requires: "refused; the file unchanged",
            plants: &[Plant::File("a.md", "one\n")],
            commands: |_| {
                vec![Command::Insert {
                    path: "/memories/a.md".into(),
                    insert_line: 5,
                    insert_text: "five".into(),
                }]
            },
            expect: |s, r| unchanged(s, r, "a.md", "one\n"),
            writers: 1,
            fault: None,
            kill: false,
            race: None,
        },
        Row {
            id: "insert-works",
            what: "insert a line after line 1",
            requires: "done: the line is in place",
            plants: &[Plant::File("a.md", "one\nthree\n")],
            commands: |_| {
                vec![Command::Insert {
                    path: "/memories/a.md".into(),
                    insert_line: 1,
                    insert_text: "two".into(),
                }]
            },
            expect: |s, r| done(s, r, "a.md", "one\ntwo\nthree\n"),
            writers: 1,
            fault: None,
            kill: false,
            race: None,
        },
        Row {
            id: "rename-works",
            what: "rename a.md to sub/c.md",
            requires: "done: the text moves, nothing else",
            plants: &[Plant::File("a.md", "A\n")],
            commands: |_| {
                vec![Command::Rename {
                    old_path: "/memories/a.md".into(),
                    new_path: "/memories/sub/c.md".into(),
                }]
            },
            expect: |s, r| match s.file("a.md") {
                Some(_) => refused_or(r, "a.md is still there"),
                None => done(s, r, "sub/c.md", "A\n"),
            },
            writers: 1,
            fault: None,
            kill: false,
            race: None,
        },
        Row {
            id: "lost-update",
            what: "two sessions view a.md, then each edits a different line",
            requires: "done: both edits are in the file",
            plants: &[Plant::File("a.md", "x\ny\n")],
            commands: |_| {
                let edit = |old: &str, new: &str| Command::StrReplace {
                    path: "/memories/a.md".into(),
                    old_str: old.into(),
                    new_str: new.into(),
                };
                vec![
                    view("/memories/a.md"),
                    view("/memories/a.md"),
                    edit("x", "X"),
                    edit("y", "Y"),
                ]
            },
            expect: |s, r| match s.file("a.md").as_deref() {
                Some("X\nY\n") => done(s, r, "a.md", "X\nY\n"),
                Some(t) if t.contains('X') != t.contains('Y') => {
                    ToolVerdict::Lost(format!("one session's edit is gone: a.md holds {t:?}"))
                }
                _ => done(s, r, "a.md", "X\nY\n"),
            },
            writers: 2,
            fault: None,
            kill: false,
            race: None,
        },
        Row {
            id: "view-range-out",
            what: "view lines 10-20 of a three-line file",
            requires: "an answer (empty or an error), no crash",
            plants: &[Plant::File("a.md", "1\n2\n3")],
            commands: |_| {
                vec![Command::View {
                    path: "/memories/a.md".into(),
                    view_range: Some([10, 20]),
                }]
            },
            expect: answered,
            writers: 1,
            fault: None,
            kill: false,
            race: None,
        },
        Row {
            id: "create-existing",
            what: "create a.md when it exists",
            requires: "refused; a.md keeps its text",
            plants: &[Plant::File("a.md", "keep\n")],
            commands: |_| vec![create("/memories/a.md", "new\n")],
            expect: |s, r| match s.file("a.md").as_deref() {
                Some("keep\n") => refused_cleanly(s, r),
                _ => ToolVerdict::Lost("a.md was overwritten".into()),
            },
            writers: 1,
            fault: None,
            kill: false,
            race: None,
        },
        Row {
            id: "delete-root",
            what: "delete /memories",
            requires: "refused; the store stays",
            plants: &[Plant::File("a.md", "A\n")],
            commands: |_| {
                vec![Command::Delete {
                    path: "/memories".into(),
                }]
            },
            expect: |s, r| unchanged(s, r, "a.md", "A\n"),
            writers: 1,
            fault: None,
            kill: false,
            race: None,
        },
    ]
}

fn replace(old: &str, new: &str) -> Command {
    Command::StrReplace {
        path: "/memories/a.md".into(),
        old_str: old.into(),
        new_str: new.into(),
    }
}

/// Run one row in a fresh sandbox under `tmp`; `in_process` says whether
/// the implementation can run on a fault backend.
pub fn run_row(
    row: &Row,
    make: &Maker<'_>,
    in_process: bool,
    tmp: &Path,
) -> LabResult<ToolVerdict> {
    if let Some(race) = row.race {
        return if in_process {
            super::race::run(race, make, tmp)
        } else {
            super::barrier::run(race, make, tmp)
        };
    }
    if row.kill {
        return super::kill::run(row, make, in_process, tmp);
    }
    if row.fault.is_some() && !in_process {
        return super::tmpfs::run(row, make, tmp);
    }
    let faults = Faults {
        plan: row.fault.clone(),
        ..Faults::default()
    };
    Ok(run_once(row, make, tmp, &faults)?.verdict)
}

/// The result of every row for one implementation.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Card {
    /// The implementation's name.
    pub implementation: String,
    /// The `lab memcheck` arguments that select it (`--builtin naive`,
    /// `--exec 'CMD'`): with `--row ID`, the command that reproduces a row.
    pub select: String,
    /// Row id -> verdict, in row order.
    pub rows: Vec<(String, ToolVerdict)>,
}

/// Which rows a run takes: all, or the ids given (`--row`).
pub fn chosen(ids: &[String]) -> LabResult<Vec<Row>> {
    let all = rows();
    if let Some(bad) = ids
        .iter()
        .find(|id| !all.iter().any(|r| r.id == id.as_str()))
    {
        let known: Vec<&str> = all.iter().map(|r| r.id).collect();
        return Err(LabError::usage(
            format!("unknown memory-tool row {bad:?}"),
            format!("use one of {}", known.join(", ")),
        ));
    }
    Ok(all
        .into_iter()
        .filter(|r| ids.is_empty() || ids.iter().any(|id| id == r.id))
        .collect())
}

/// Run `rows` against one implementation (`select`: see [`Card::select`]).
pub fn card(
    name: &str,
    select: &str,
    rows: &[Row],
    make: &Maker<'_>,
    in_process: bool,
) -> LabResult<Card> {
    // A private directory for the run's sandboxes, removed at the end and
    // on Ctrl-C / SIGTERM (which also kill the tool's process group).
    let run = crate::storage::root::cleanup::TempRoot::new("ctxlab-memcheck-")?;
    let mut out = Vec::new();
    for row in rows {
        let verdict = run_row(row, make, in_process, run.path())?;
        // A process that crashed, hung or broke the protocol is reported
        // once, with exit 3, not as `failed` on every row after it.
        if let (false, ToolVerdict::Failed(what)) = (in_process, &verdict) {
            return Err(super::external::unusable(name, Some(row.id), what));
        }
        out.push((row.id.to_string(), verdict));
    }
    Ok(Card {
        implementation: name.into(),
        select: select.into(),
        rows: out,
    })
}

/// The built-in implementations by name: ctxlab's reference and the
/// deliberately broken ones (`naive`, `cached`, `prefix`, `unresolved`,
/// `follow`).
pub fn builtin(name: &str) -> Option<Box<Maker<'static>>> {
    use super::{linkbugs, naive, prefix, reference};
    Some(match name {
        "reference" => maker(reference::Reference::new),
        "naive" => maker(naive::Naive::new),
        "prefix" => maker(prefix::Prefix::new),
        "cached" => maker(naive::Cached::new),
        "unresolved" => maker(linkbugs::Unresolved::new),
        "follow" => maker(linkbugs::Follow::new),
        _ => return None,
    })
}

/// A [`Maker`] from an implementation's constructor: the tool boxed, a
/// root it cannot open a [`Failure`] with the fix.
fn maker<T: MemoryTool + 'static>(
    new: fn(Shared, &Path) -> std::io::Result<T>,
) -> Box<Maker<'static>> {
    Box::new(move |fs, root| {
        new(fs, root)
            .map(|t| Box::new(t) as Box<dyn MemoryTool>)
            .map_err(|e| Failure {
                message: format!("cannot open the root: {e}"),
                fix: "check the sandbox directory".into(),
            })
    })
}

/// The cards as a table: one line per row, one column per implementation,
/// and beneath it every verdict that is not `held` with its detail. JSON is
/// the cards themselves.
pub fn render(cards: &[Card], format: crate::render::Format) -> String {
    use crate::render::{table, Format};
    if format == Format::Json {
        return crate::render::json(&cards);
    }
    let markdown = format == Format::Markdown;
    let mut header = vec!["row".to_string(), "requires".to_string()];
    header.extend(cards.iter().map(|c| c.implementation.clone()));
    // By id, not position: a card recorded before a row existed (a
    // third-party one from `make memtools`) says `not run` there.
    let verdict = |c: &Card, id: &str| {
        c.rows
            .iter()
            .find(|(r, _)| r == id)
            .map_or("not run", |(_, v)| v.name())
            .to_string()
    };
    let lines: Vec<Vec<String>> = rows()
        .iter()
        .filter(|r| {
            cards
                .iter()
                .any(|c| c.rows.iter().any(|(id, _)| id == r.id))
        })
        .map(|r| {
            let mut line = vec![r.id.to_string(), r.requires.to_string()];
            line.extend(cards.iter().map(|c| verdict(c, r.id)));
            line
        })
        .collect();
    let mut out = table(&header, lines, markdown);
    out.push('\n');
    for c in cards {
        for (id, v) in &c.rows {
            let Some(detail) = v.detail() else { continue };
            let text = crate::render::cell_text(detail, markdown);
            let again = format!("lab memcheck {} --row {id}", c.select);
            let again = crate::render::cell_text(&again, markdown);
            out.push_str(&format!(
                "- {} / {id}: {}: {text} (reproduce: `{again}`)\n",
                c.implementation,
                v.name()
            ));
        }
    }
    out
}

/// Whether every row held (or was skipped) on every card.
pub fn all_held(cards: &[Card]) -> bool {
    cards.iter().all(|c| {
        c.rows
            .iter()
            .all(|(_, v)| matches!(v, ToolVerdict::Held | ToolVerdict::Skipped(_)))
    })
}

/// Cards of third-party implementations recorded by `make memtools`
/// (`scripts/memtools.sh`: pinned installs, then `lab memcheck --format json`),
/// kept in the repository so reports do not need the installs.
pub fn recorded() -> LabResult<Vec<Card>> {
    const TEXT: &str = include_str!("recorded.json");
    serde_json::from_str(TEXT).map_err(|e| LabError::Input {
        file: "lab/course/memory/tool/recorded.json".into(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
        fix: "regenerate it with `make memtools`".into(),
    })
}

/// Every card the report shows: ctxlab's reference and the broken one, run
/// now, then the recorded third-party ones.
pub fn report_cards() -> LabResult<Vec<Card>> {
    let all = rows();
    let mut cards = Vec::new();
    for name in ["reference", "naive"] {
        let make = builtin(name).expect("a built-in name");
        cards.push(card(
            name,
            &format!("--builtin {name}"),
            &all,
            make.as_ref(),
            true,
        )?);
    }
    cards.extend(recorded()?);
    Ok(cards)
}

/// `reports/memory_tools.md`: the cards, with what each name is and how to
/// re-run a row.
pub fn report(cards: &[Card]) -> String {
    format!(
        "# Memory-tool implementations under faults and attacks\n\n\
         Every row of `lab memcheck` (Anthropic's client-side memory tool, `memory_20250818`) \
         against ctxlab's reference (`reference`), the deliberately broken implementation the \
         tests ship (`naive`), and the third-party implementations `make memtools` installs at \
         pinned versions and records in `lab/course/memory/tool/recorded.json`. A row is `held` \
         when the documented outcome happened and nothing outside `/memories` was written or \
         shown; each other verdict names what happened and the command that reproduces it. \
         `full-disk-*` run a process on a filled size-limited tmpfs, which needs root (skipped, saying so, without); \
         `kill-*` kill a process (SIGKILL to its group) once a request is written, once 1 byte and once half \
         of its answer are read, and once its whole answer is read, and the built-ins at every storage operation; \
         `race-*` run 2 or 4 sessions at once on one root (the built-ins under seeded schedules; a process \
         held at each request's first write by a preloaded barrier library and released in a seeded order, \
         so a lost update is caught on every run). A third-party row's reproduce command runs from the \
         repository root after `make memtools`.\n\n{}",
        render(cards, crate::render::Format::Markdown)
    )
}
