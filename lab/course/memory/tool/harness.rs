//! The machinery every memory-tool row runs on: the verdicts, the row's
//! sandbox and what it plants, one run of a row in a fresh sandbox (with
//! the storage faults, kill or full disk it asks for), and the judge.
//!
//! Every row runs in a fresh sandbox on disk: `memories/` (what `/memories`
//! names) beside `outside/`, which holds a secret file. Whatever the row,
//! the judge first compares everything outside `memories/` before and after
//! (a write that escaped) and looks for the secret in the replies (a read
//! that escaped); then the row's own expectation decides. The rows
//! themselves are in [`super::rows`], the kill and full-disk runs in
//! [`super::kill`] and [`super::tmpfs`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Command, Failure, MemoryTool, Reply};
use crate::error::{LabError, LabResult};
use crate::storage::{FaultPlan, Faulty, FileKind, Shared};

/// The secret planted outside the root: a reply holding it leaked a read.
pub const SECRET: &str = "ctxlab-secret-7f3a";

/// How an implementation fared on a row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "verdict", content = "detail", rename_all = "snake_case")]
pub enum ToolVerdict {
    /// The documented outcome, nothing outside touched.
    Held,
    /// A file outside the root was written, or its content or name shown.
    Escaped(String),
    /// Data the model had written is gone or overwritten.
    Lost(String),
    /// A file is left half-written.
    Torn(String),
    /// A command the documentation says must work was refused.
    Refused(String),
    /// The documented result was not met in another way (an edit that
    /// should have been refused happened).
    Wrong(String),
    /// The implementation crashed, hung or spoke outside the protocol.
    Failed(String),
    /// Not run here, and why.
    Skipped(String),
}

impl ToolVerdict {
    /// The verdict's one-word name.
    pub fn name(&self) -> &'static str {
        match self {
            ToolVerdict::Held => "held",
            ToolVerdict::Escaped(_) => "escaped",
            ToolVerdict::Lost(_) => "lost",
            ToolVerdict::Torn(_) => "torn",
            ToolVerdict::Refused(_) => "refused",
            ToolVerdict::Wrong(_) => "wrong",
            ToolVerdict::Failed(_) => "failed",
            ToolVerdict::Skipped(_) => "skipped",
        }
    }

    /// What happened, for every verdict but `held`.
    pub fn detail(&self) -> Option<&str> {
        match self {
            ToolVerdict::Held => None,
            ToolVerdict::Escaped(d)
            | ToolVerdict::Lost(d)
            | ToolVerdict::Torn(d)
            | ToolVerdict::Refused(d)
            | ToolVerdict::Wrong(d)
            | ToolVerdict::Failed(d)
            | ToolVerdict::Skipped(d) => Some(d),
        }
    }

    /// The same verdict with `at` (where it happened) before its detail.
    pub fn prefixed(self, at: &str) -> ToolVerdict {
        let put = |d: String| format!("{at}: {d}");
        match self {
            ToolVerdict::Held => ToolVerdict::Held,
            ToolVerdict::Escaped(d) => ToolVerdict::Escaped(put(d)),
            ToolVerdict::Lost(d) => ToolVerdict::Lost(put(d)),
            ToolVerdict::Torn(d) => ToolVerdict::Torn(put(d)),
            ToolVerdict::Refused(d) => ToolVerdict::Refused(put(d)),
            ToolVerdict::Wrong(d) => ToolVerdict::Wrong(put(d)),
            ToolVerdict::Failed(d) => ToolVerdict::Failed(put(d)),
            ToolVerdict::Skipped(d) => ToolVerdict::Skipped(put(d)),
        }
    }
}

/// A row's sandbox: `base/memories` is the root, `base/outside` holds the secret.
pub struct Sandbox {
    /// The sandbox directory.
    pub base: PathBuf,
    /// The directory `/memories` names, resolved: what is inside.
    pub root: PathBuf,
    /// The root as the implementation is given it: `root` itself, or a
    /// symlink to it (the `RootLink` plant).
    pub given: PathBuf,
    /// The storage the row's files are checked through.
    pub fs: Shared,
}

impl Sandbox {
    /// The text of a file under the root, if it is a readable regular file.
    pub fn file(&self, rel: &str) -> Option<String> {
        let p = self.root.join(rel);
        (self.fs.kind(&p) == Some(FileKind::File))
            .then(|| self.fs.read(&p).ok())
            .flatten()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    }
}

/// What a row plants before its commands.
#[derive(Debug, Clone, Copy)]
pub(super) enum Plant {
    /// A file under the root with this text.
    File(&'static str, &'static str),
    /// A symlink under the root to a path under `outside/`.
    LinkOut(&'static str, &'static str),
    /// A hard link under the root to a file under `outside/` (disk only).
    HardLinkOut(&'static str, &'static str),
    /// A symlink under the root whose target is this text as written
    /// (relative to the link's directory), its directory made first.
    Link(&'static str, &'static str),
    /// `/memories` is reached through a symlink: the sandbox's `memories`
    /// is a link to this directory beside it, which holds the files (and
    /// is what the judge counts as inside).
    RootLink(&'static str),
}

/// A row: what it does, what it plants, its commands and its expectation.
pub struct Row {
    /// Short id (`traversal-dotdot`).
    pub id: &'static str,
    /// What the row does, in one line.
    pub what: &'static str,
    /// The outcome the documentation requires.
    pub requires: &'static str,
    pub(super) plants: &'static [Plant],
    pub(super) commands: fn(&Sandbox) -> Vec<Command>,
    pub(super) expect: fn(&Sandbox, &[Reply]) -> ToolVerdict,
    /// Storage faults the row needs (in-process implementations only).
    pub fault: Option<FaultPlan>,
    /// Instances of the implementation on the one store (two: two sessions
    /// at once); command `i` goes to instance `i` mod `writers`.
    pub writers: usize,
    /// The last command is killed mid-way ([`super::kill`]): in process at
    /// every operation it makes in turn, a process by SIGKILL at each
    /// [`super::KillPoint`].
    pub kill: bool,
    /// Sessions at once on one root ([`super::race`]): the row's own
    /// commands and judge are unused.
    pub race: Option<Race>,
}

/// Bytes of the huge memory: far past any memory a model writes, well
/// inside the protocol's line cap (`process::MAX_LINE_BYTES`).
pub const HUGE_BYTES: usize = 8 * 1024 * 1024;

/// Numbered lines (`line 0000001`) up to [`HUGE_BYTES`].
pub(super) fn huge_text() -> String {
    let mut s = String::with_capacity(HUGE_BYTES + 64);
    let mut n = 1;
    while s.len() < HUGE_BYTES {
        s.push_str(&format!(
            "line {n:07} of a memory nobody should write this long\n"
        ));
        n += 1;
    }
    s
}

/// Makes the implementation under test for one row: its storage (a fault
/// backend for fault rows) and the root `/memories` names.
pub type Maker<'a> = dyn Fn(Shared, &Path) -> Result<Box<dyn MemoryTool>, Failure> + 'a;

/// The faults of one run of a row. `Default`: none.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    /// The implementation's storage under this plan (in process).
    pub plan: Option<FaultPlan>,
    /// The last command given through [`MemoryTool::kill_during`], dying there.
    pub kill: Option<super::KillPoint>,
    /// Fill the disk under `tmp` once the row has planted its files (a
    /// size-limited tmpfs there: [`super::tmpfs`] passes its filler).
    pub fill_disk: Option<fn(&Path) -> LabResult<()>>,
}

/// What one run of a row found.
pub struct Run {
    /// The judge's verdict.
    pub verdict: ToolVerdict,
    /// Operations the fault backend counted before the last command, and in all.
    pub ops: (u64, u64),
    /// Whether the fault plan's kill fired.
    pub killed: bool,
    /// How long the last command took (zero when it was killed).
    pub last: std::time::Duration,
    /// Bytes of the last reply's text (zero when none was read): where
    /// half an answer ends, for a kill part-way through one.
    pub reply_bytes: usize,
}

/// One run of `row` in a fresh sandbox under `tmp`, with `faults`.
pub fn run_once(row: &Row, make: &Maker<'_>, tmp: &Path, faults: &Faults) -> LabResult<Run> {
    let dir = tempfile::Builder::new()
        .prefix("memtool-")
        .tempdir_in(tmp)
        .map_err(|e| LabError::io("creating a row sandbox", tmp, e))?;
    let disk: Shared = std::sync::Arc::new(crate::storage::DiskFs);
    let base = disk
        .canonicalize(dir.path())
        .map_err(|e| LabError::io("resolving a row sandbox", dir.path(), e))?;
    let real = row.plants.iter().find_map(|p| match p {
        Plant::RootLink(real) => Some(*real),
        _ => None,
    });
    let s = Sandbox {
        root: base.join(real.unwrap_or("memories")),
        given: base.join("memories"),
        base,
        fs: disk.clone(),
    };
    plant(&s, row.plants)?;
    if let Some(fill) = faults.fill_disk {
        fill(tmp)?;
    }
    let before = outside(&s)?;
    let around = beside(tmp, &s.base);
    let faulty = (faults.plan.clone()).map(|p| std::sync::Arc::new(Faulty::new(disk.clone(), p)));
    let tool_fs: Shared = match &faulty {
        Some(f) => f.clone(),
        None => disk,
    };
    let ops = || faulty.as_ref().map_or(0, |f| f.log().len() as u64);
    let mut run = Run {
        verdict: ToolVerdict::Held,
        ops: (0, 0),
        killed: false,
        last: std::time::Duration::ZERO,
        reply_bytes: 0,
    };
    let replies = match commands(row, &s, make, tool_fs, faults.kill, &mut || ops()) {
        Ok(done) => {
            (run.ops.0, run.last) = (done.before_last, done.last);
            done.replies
        }
        Err(v) => {
            run.verdict = v;
            return Ok(run);
        }
    };
    run.reply_bytes = replies.last().map_or(0, |r| r.text().len());
    run.ops.1 = ops();
    run.killed = faulty.as_ref().is_some_and(|f| f.killed());
    let after = beside(tmp, &s.base);
    run.verdict = if after != around {
        let new: Vec<&String> = after.iter().filter(|n| !around.contains(n)).collect();
        ToolVerdict::Escaped(format!("wrote beside its sandbox: {new:?}"))
    } else {
        judge(&s, &before, &replies, row)
    };
    Ok(run)
}

/// What the commands of one run answered.
struct Done {
    /// The replies, with the sandbox path hidden.
    replies: Vec<Reply>,
    /// The fault backend's operations before the last command.
    before_last: u64,
    /// How long the last command took.
    last: std::time::Duration,
}

/// Start the row's instances and give them its commands (the last one
/// through `kill_during` when `kill` is set). A failure of the
/// implementation is its verdict.
fn commands(
    row: &Row,
    s: &Sandbox,
    make: &Maker<'_>,
    tool_fs: Shared,
    kill: Option<super::KillPoint>,
    ops: &mut dyn FnMut() -> u64,
) -> Result<Done, ToolVerdict> {
    let mut tools = Vec::new();
    for _ in 0..row.writers.max(1) {
        let t = make(tool_fs.clone(), &s.given)
            .map_err(|f| ToolVerdict::Failed(format!("{}; fix: {}", f.message, f.fix)))?;
        tools.push(t);
    }
    // The sandbox's random name never reaches a verdict: same bytes every run.
    let base = s.base.display().to_string();
    let plain = |t: &str| t.replace(&base, "$SANDBOX");
    let list = (row.commands)(s);
    let mut done = Done {
        replies: Vec::new(),
        before_last: 0,
        last: std::time::Duration::ZERO,
    };
    let replies = &mut done.replies;
    for (i, c) in list.iter().enumerate() {
        let tool = &mut tools[i % row.writers.max(1)];
        let started = std::time::Instant::now();
        if i + 1 == list.len() {
            done.before_last = ops();
            if let Some(at) = kill {
                match tool.kill_during(c, at) {
                    Some(Reply::Ok(t)) => replies.push(Reply::Ok(plain(&t))),
                    Some(Reply::Error(t)) => replies.push(Reply::Error(plain(&t))),
                    None => {}
                }
                break;
            }
        }
        let answer = tool.execute(c);
        done.last = started.elapsed();
        match answer {
            Ok(Reply::Ok(t)) => replies.push(Reply::Ok(plain(&t))),
            Ok(Reply::Error(t)) => replies.push(Reply::Error(plain(&t))),
            Err(f) => {
                let msg = format!("{}; fix: {}", plain(&f.message), f.fix);
                return Err(ToolVerdict::Failed(msg));
            }
        }
    }
    Ok(done)
}

/// The names in the run's directory other than this row's sandbox: a tool
/// that climbs out of its sandbox lands there first.
fn beside(tmp: &Path, sandbox: &Path) -> Vec<String> {
    let name = sandbox
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    let mut out: Vec<String> = std::fs::read_dir(tmp)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| Some(n) != name.as_ref())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

fn judge(s: &Sandbox, before: &Tree, replies: &[Reply], row: &Row) -> ToolVerdict {
    match outside(s) {
        Ok(after) if &after != before => {
            let changed = changed_paths(before, &after, &s.base);
            return ToolVerdict::Escaped(format!("wrote outside /memories: {changed}"));
        }
        Ok(_) => {}
        Err(e) => return ToolVerdict::Escaped(format!("the sandbox cannot be read after: {e}")),
    }
    if replies.iter().any(|r| r.text().contains(SECRET)) {
        return ToolVerdict::Escaped("a reply shows outside/secret.txt".into());
    }
    (row.expect)(s, replies)
}

type Tree = BTreeMap<PathBuf, Vec<u8>>;

/// Every file and link in the sandbox outside the root, with its bytes.
fn outside(s: &Sandbox) -> LabResult<Tree> {
    crate::memory::sandbox::files_outside(s.fs.as_ref(), &s.base, &s.root)
}

fn changed_paths(before: &Tree, after: &Tree, base: &Path) -> String {
    let keys: std::collections::BTreeSet<&PathBuf> = before.keys().chain(after.keys()).collect();
    keys.into_iter()
        .filter(|k| before.get(*k) != after.get(*k))
        .map(|k| k.strip_prefix(base).unwrap_or(k).display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn plant(s: &Sandbox, plants: &[Plant]) -> LabResult<()> {
    let io = |what: &str, p: &Path| {
        let p = p.to_path_buf();
        let what = what.to_string();
        move |e| LabError::io(what, p, e)
    };
    let out = s.base.join("outside");
    s.fs.create_dir_all(&out).map_err(io("planting", &out))?;
    s.fs.create_dir_all(&s.root)
        .map_err(io("planting", &s.root))?;
    let secret = out.join("secret.txt");
    s.fs.write(&secret, SECRET.as_bytes())
        .map_err(io("planting", &secret))?;
    for p in plants {
        match *p {
            Plant::File(rel, text) => {
                let f = s.root.join(rel);
                if let Some(dir) = f.parent() {
                    s.fs.create_dir_all(dir).map_err(io("planting", dir))?;
                }
                s.fs.write(&f, text.as_bytes())
                    .map_err(io("planting", &f))?;
            }
            Plant::HardLinkOut(rel, target) => {
                let l = s.root.join(rel);
                std::fs::hard_link(out.join(target), &l).map_err(io("planting a hard link", &l))?;
            }
            Plant::LinkOut(rel, target) => {
                let l = s.root.join(rel);
                s.fs.symlink(&out.join(target), &l)
                    .map_err(io("planting a link", &l))?;
            }
            Plant::Link(rel, target) => {
                let l = s.root.join(rel);
                if let Some(dir) = l.parent() {
                    s.fs.create_dir_all(dir).map_err(io("planting", dir))?;
                }
                s.fs.symlink(Path::new(target), &l)
                    .map_err(io("planting a link", &l))?;
            }
            Plant::RootLink(real) => {
                s.fs.symlink(Path::new(real), &s.given)
                    .map_err(io("planting a link", &s.given))?;
            }
        }
    }
    Ok(())
}

/// The writing command a race row races.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    /// Everyone creates the same file.
    Create,
    /// Everyone edits one file, each their own placeholder.
    StrReplace,
    /// Everyone inserts a line at the top of one file.
    Insert,
    /// Everyone renames their own file onto one name.
    Rename,
    /// One session deletes a file the others edit.
    Delete,
}

/// A race row's parameters.
#[derive(Debug, Clone, Copy)]
pub struct Race {
    /// The command raced.
    pub write: Write,
    /// Sessions at once (2 or 4).
    pub sessions: usize,
}
