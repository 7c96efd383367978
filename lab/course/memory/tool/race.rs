//! The race rows: two and four sessions at once on one root, each with its
//! own instance of the implementation (its own process, for `--exec`), for
//! every writing command. Every edit a session was told succeeded must be
//! in the store at the end; a row that fails names how many were lost.
//!
//! In process the interleaving is a seeded schedule, never timing: the
//! sessions run on threads, but only the one holding the turn runs, and
//! the turn passes at every storage operation to a session the seeded
//! generator picks ([`Stepped`]). The same seed gives the same
//! interleaving on every machine and every run, so a read-modify-write
//! without a lock loses an edit on every run of a seed that interleaves it.
//! [`SEEDS`] schedules are tried; the first that loses is reported.
//!
//! A process cannot be scheduled from the storage layer: its sessions are
//! held at a barrier instead (`barrier.rs`), a library loaded into
//! each process that stops it at the first write of each request until
//! memcheck releases the sessions one at a time in a seeded order. That
//! is deterministic too: a read-modify-write without a lock loses an edit
//! on every run, and a tool that locks first holds.
//!
//! Per command (`N` sessions, [`ROUNDS`] rounds each):
//! - `create`: all sessions create the same file each round: at most one
//!   may be told it succeeded, and the file holds that one's text;
//! - `str_replace`: session `i` replaces its own placeholder of round `j`
//!   in one shared file;
//! - `insert`: every session inserts its own line at the top of one file;
//! - `rename`: all sessions rename their own file onto the same new name:
//!   at most one may succeed, the others' files stay;
//! - `delete`: session 0 deletes the round's file while the others edit
//!   it: a delete that was acknowledged must not be undone by an edit
//!   written back from a stale read.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};

use rand::{Rng, SeedableRng};

use super::harness::{Maker, Sandbox, ToolVerdict};
use super::{Command, MemoryTool, Reply};
use crate::error::{LabError, LabResult};
use crate::storage::{Backend, FileKind, Shared, Storage};

/// Rounds each session runs.
pub const ROUNDS: usize = 6;

/// Seeded schedules tried in process (seeds `0..SEEDS`).
pub const SEEDS: u64 = 8;

// The row's parameters live beside the row (`harness`), which names them.
pub use super::harness::{Race, Write};

/// The race rows, in report order: (id, what, command, sessions).
const ROWS: [(&str, &str, Write, usize); 10] = [
    (
        "race-create-2",
        "2 sessions create the same file at once, 6 rounds",
        Write::Create,
        2,
    ),
    (
        "race-create-4",
        "4 sessions create the same file at once, 6 rounds",
        Write::Create,
        4,
    ),
    (
        "race-str_replace-2",
        "2 sessions str_replace their own line of one file at once, 6 rounds",
        Write::StrReplace,
        2,
    ),
    (
        "race-str_replace-4",
        "4 sessions str_replace their own line of one file at once, 6 rounds",
        Write::StrReplace,
        4,
    ),
    (
        "race-insert-2",
        "2 sessions insert lines at the top of one file at once, 6 rounds",
        Write::Insert,
        2,
    ),
    (
        "race-insert-4",
        "4 sessions insert lines at the top of one file at once, 6 rounds",
        Write::Insert,
        4,
    ),
    (
        "race-rename-2",
        "2 sessions rename their own file onto one name at once, 6 rounds",
        Write::Rename,
        2,
    ),
    (
        "race-rename-4",
        "4 sessions rename their own file onto one name at once, 6 rounds",
        Write::Rename,
        4,
    ),
    (
        "race-delete-2",
        "1 session deletes a file 1 other edits at once, 6 rounds",
        Write::Delete,
        2,
    ),
    (
        "race-delete-4",
        "1 session deletes a file 3 others edit at once, 6 rounds",
        Write::Delete,
        4,
    ),
];

/// The race rows.
pub fn rows() -> Vec<super::harness::Row> {
    ROWS.iter()
        .map(|&(id, what, write, sessions)| super::harness::Row {
            id,
            what,
            requires: "every acknowledged edit survives (one create or rename of a name wins)",
            plants: &[],
            commands: |_| Vec::new(),
            expect: |_, _| ToolVerdict::Held,
            fault: None,
            writers: sessions,
            kill: false,
            race: Some(Race { write, sessions }),
        })
        .collect()
}

/// Run a race row in process: every seed of the schedule, the first that
/// loses named (a process runs at the barrier instead, `barrier.rs`).
pub fn run(race: Race, make: &Maker<'_>, tmp: &Path) -> LabResult<ToolVerdict> {
    for seed in 0..SEEDS {
        let v = run_once(race, make, tmp, seed)?;
        if v != ToolVerdict::Held {
            return Ok(v.prefixed(&format!("schedule seed {seed}")));
        }
    }
    Ok(ToolVerdict::Held)
}

/// A fresh sandbox on disk under `tmp` with the race's plants: the
/// directory (removed when dropped) and the sandbox in it.
pub(super) fn sandbox(race: Race, tmp: &Path) -> LabResult<(tempfile::TempDir, Sandbox)> {
    let dir = tempfile::Builder::new()
        .prefix("memtool-")
        .tempdir_in(tmp)
        .map_err(|e| LabError::io("creating a row sandbox", tmp, e))?;
    let disk: Shared = Arc::new(crate::storage::DiskFs);
    let base = disk
        .canonicalize(dir.path())
        .map_err(|e| LabError::io("resolving a row sandbox", dir.path(), e))?;
    let s = Sandbox {
        root: base.join("memories"),
        given: base.join("memories"),
        base,
        fs: disk,
    };
    plant(&s, race)?;
    Ok((dir, s))
}

/// One in-process run of the race under the schedule of `seed`: a fresh
/// sandbox, the plants, the sessions, the judge.
pub fn run_once(race: Race, make: &Maker<'_>, tmp: &Path, seed: u64) -> LabResult<ToolVerdict> {
    let (_dir, s) = sandbox(race, tmp)?;
    let sched = Arc::new(Sched::new(seed, race.sessions));
    let tool_fs: Shared = Arc::new(Stepped {
        inner: s.fs.clone(),
        sched: sched.clone(),
    });
    let mut tools = Vec::new();
    for _ in 0..race.sessions {
        match make(tool_fs.clone(), &s.root) {
            Ok(t) => tools.push(t),
            Err(f) => {
                return Ok(ToolVerdict::Failed(format!(
                    "{}; fix: {}",
                    f.message, f.fix
                )))
            }
        }
    }
    let replies: Vec<Result<Vec<Reply>, String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = tools
            .into_iter()
            .enumerate()
            .map(|(i, tool)| {
                let sched = &sched;
                let commands = commands(race, i);
                scope.spawn(move || session(tool, i, &commands, sched))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("the session panicked".into()))
            })
            .collect()
    });
    let mut all = Vec::new();
    for r in replies {
        match r {
            Ok(r) => all.push(r),
            Err(f) => {
                return Ok(ToolVerdict::Failed(
                    f.replace(&s.base.display().to_string(), "$SANDBOX"),
                ))
            }
        }
    }
    Ok(judge(race, &s, &all))
}

/// One session: its commands in order, the turn passed by the schedule.
fn session(
    mut tool: Box<dyn MemoryTool>,
    me: usize,
    commands: &[Command],
    sched: &Sched,
) -> Result<Vec<Reply>, String> {
    let _turn = sched.enter(me);
    let mut out = Vec::new();
    for c in commands {
        match tool.execute(c) {
            Ok(r) => out.push(r),
            Err(f) => return Err(format!("{}; fix: {}", f.message, f.fix)),
        }
    }
    Ok(out)
}

fn placeholder(i: usize, j: usize) -> String {
    format!("p{i}.{j}")
}

fn mark(i: usize, j: usize) -> String {
    format!("M{i}.{j}")
}

fn plant(s: &Sandbox, race: Race) -> LabResult<()> {
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |e| LabError::io("planting", p, e)
    };
    let out = s.base.join("outside");
    s.fs.create_dir_all(&out).map_err(io(&out))?;
    s.fs.create_dir_all(&s.root).map_err(io(&s.root))?;
    let put = |rel: String, text: String| {
        let f = s.root.join(rel);
        s.fs.write(&f, text.as_bytes()).map_err(io(&f))
    };
    let n = race.sessions;
    match race.write {
        Write::Create => Ok(()),
        Write::StrReplace => {
            let lines: Vec<String> = (0..ROUNDS)
                .flat_map(|j| (0..n).map(move |i| placeholder(i, j) + "\n"))
                .collect();
            put("a.md".into(), lines.concat())
        }
        Write::Insert => put("a.md".into(), "top\n".into()),
        Write::Rename => {
            for i in 0..n {
                for j in 0..ROUNDS {
                    put(format!("src-{i}-{j}.md"), mark(i, j) + "\n")?;
                }
            }
            Ok(())
        }
        Write::Delete => {
            for j in 0..ROUNDS {
                let lines: Vec<String> = (1..n).map(|i| placeholder(i, j) + "\n").collect();
                put(format!("f-{j}.md"), lines.concat())?;
            }
            Ok(())
        }
    }
}

/// Session `i`'s commands, one a round.
pub(super) fn commands(race: Race, i: usize) -> Vec<Command> {
    (0..ROUNDS)
        .map(|j| match race.write {
            Write::Create => Command::Create {
                path: format!("/memories/same-{j}.md"),
                file_text: mark(i, j) + "\n",
            },
            Write::StrReplace => Command::StrReplace {
                path: "/memories/a.md".into(),
                old_str: placeholder(i, j),
                new_str: mark(i, j),
            },
            Write::Insert => Command::Insert {
                path: "/memories/a.md".into(),
                insert_line: 0,
                insert_text: mark(i, j),
            },
            Write::Rename => Command::Rename {
                old_path: format!("/memories/src-{i}-{j}.md"),
                new_path: format!("/memories/dst-{j}.md"),
            },
            Write::Delete if i == 0 => Command::Delete {
                path: format!("/memories/f-{j}.md"),
            },
            Write::Delete => Command::StrReplace {
                path: format!("/memories/f-{j}.md"),
                old_str: placeholder(i, j),
                new_str: mark(i, j),
            },
        })
        .collect()
}

/// Count what the acknowledged edits left: `lost` of `acknowledged`, with
/// the first few losses named.
pub(super) fn judge(race: Race, s: &Sandbox, replies: &[Vec<Reply>]) -> ToolVerdict {
    let ok = |i: usize, j: usize| replies[i].get(j).is_some_and(|r| !r.is_error());
    let n = race.sessions;
    let mut acknowledged = 0;
    let mut lost: Vec<String> = Vec::new();
    let mut refused: Vec<String> = Vec::new();
    match race.write {
        Write::Create | Write::Rename => {
            let target = |j| match race.write {
                Write::Create => format!("same-{j}.md"),
                _ => format!("dst-{j}.md"),
            };
            for j in 0..ROUNDS {
                let acked: Vec<usize> = (0..n).filter(|i| ok(*i, j)).collect();
                acknowledged += acked.len();
                let held = s.file(&target(j));
                let kept = acked
                    .iter()
                    .filter(|i| held.as_deref() == Some(&(mark(**i, j) + "\n")))
                    .count();
                if acked.is_empty() {
                    refused.push(format!("round {j}: every session was refused"));
                }
                for i in &acked {
                    if held.as_deref() != Some(&(mark(*i, j) + "\n")) {
                        lost.push(format!(
                            "session {i} round {j} was acknowledged but {} does not hold its text",
                            target(j)
                        ));
                    }
                }
                let _ = kept;
                if race.write == Write::Rename {
                    for i in (0..n).filter(|i| !ok(*i, j)) {
                        if s.file(&format!("src-{i}-{j}.md")) != Some(mark(i, j) + "\n") {
                            lost.push(format!(
                                "session {i}'s refused rename of round {j} lost src-{i}-{j}.md"
                            ));
                        }
                    }
                }
            }
        }
        Write::StrReplace | Write::Insert => {
            let text = s.file("a.md").unwrap_or_default();
            for i in 0..n {
                for j in 0..ROUNDS {
                    if !ok(i, j) {
                        refused.push(format!("session {i} round {j}"));
                        continue;
                    }
                    acknowledged += 1;
                    if !text.lines().any(|l| l == mark(i, j)) {
                        lost.push(format!("{} (session {i} round {j})", mark(i, j)));
                    }
                }
            }
        }
        Write::Delete => {
            for j in 0..ROUNDS {
                let file = format!("f-{j}.md");
                let text = s.file(&file);
                if ok(0, j) {
                    acknowledged += 1;
                    if let Some(t) = &text {
                        lost.push(format!(
                            "the acknowledged delete of {file} was undone: it holds {:?}",
                            t.lines().collect::<Vec<_>>().join(" ")
                        ));
                    }
                } else {
                    refused.push(format!("the delete of {file}"));
                }
                for i in 1..n {
                    // An edit after the delete is refused; one before it
                    // went with the file. Without an acknowledged delete
                    // the edit must be in the file.
                    if ok(i, j) && !ok(0, j) {
                        acknowledged += 1;
                        if !text.as_deref().unwrap_or("").contains(&mark(i, j)) {
                            lost.push(format!("{} in {file}", mark(i, j)));
                        }
                    }
                }
            }
        }
    }
    if !lost.is_empty() {
        let shown: Vec<&str> = lost.iter().take(3).map(String::as_str).collect();
        return ToolVerdict::Lost(format!(
            "{} of {acknowledged} acknowledged edits lost: {}",
            lost.len(),
            shown.join("; ")
        ));
    }
    // Refusals are legitimate where at most one may win; elsewhere an
    // edit the documentation says works was refused.
    let must_work = matches!(race.write, Write::StrReplace | Write::Insert);
    match refused.first() {
        Some(r) if must_work || race.write == Write::Delete => {
            let first = replies
                .iter()
                .flatten()
                .find(|r| r.is_error())
                .map(|r| r.text().lines().next().unwrap_or("").to_string())
                .unwrap_or_default();
            ToolVerdict::Refused(format!("{} refused ({r}…): {first}", refused.len()))
        }
        Some(r) => ToolVerdict::Refused(r.clone()),
        None => ToolVerdict::Held,
    }
}

/// The turn: which session may run. Exactly one runs at a time; the
/// holder passes it at each storage operation to a session the seeded
/// generator picks among those not finished.
pub struct Sched {
    state: Mutex<State>,
    turn_changed: Condvar,
}

struct State {
    turn: usize,
    running: Vec<bool>,
    rng: rand_chacha::ChaCha8Rng,
}

thread_local! {
    /// The session this thread runs, while it runs one under a schedule.
    static ME: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

impl Sched {
    /// A schedule of `sessions` sessions from `seed`.
    pub fn new(seed: u64, sessions: usize) -> Sched {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let turn = rng.gen_range(0..sessions.max(1));
        Sched {
            state: Mutex::new(State {
                turn,
                running: vec![true; sessions],
                rng,
            }),
            turn_changed: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// This thread runs session `me`: wait for its turn. The guard ends
    /// the session (passes the turn on for good) when dropped, even on a panic.
    fn enter(&self, me: usize) -> Turn<'_> {
        ME.with(|m| m.set(Some(me)));
        let mut st = self.lock();
        while st.turn != me {
            st = self
                .turn_changed
                .wait(st)
                .unwrap_or_else(|e| e.into_inner());
        }
        Turn { sched: self, me }
    }

    /// Before a storage operation: pass the turn to a picked session and
    /// wait until it comes back. A thread outside any session passes through.
    fn pass(&self) {
        let Some(me) = ME.with(std::cell::Cell::get) else {
            return;
        };
        let mut st = self.lock();
        pick(&mut st);
        self.turn_changed.notify_all();
        while st.turn != me {
            st = self
                .turn_changed
                .wait(st)
                .unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// Give the turn to a running session the generator picks (none left: keep it).
fn pick(st: &mut State) {
    let running: Vec<usize> = (0..st.running.len()).filter(|i| st.running[*i]).collect();
    if !running.is_empty() {
        st.turn = running[st.rng.gen_range(0..running.len())];
    }
}

/// A session's hold on the schedule; dropping it finishes the session.
struct Turn<'a> {
    sched: &'a Sched,
    me: usize,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        ME.with(|m| m.set(None));
        let mut st = self.sched.lock();
        st.running[self.me] = false;
        pick(&mut st);
        self.sched.turn_changed.notify_all();
    }
}

/// A storage whose every operation is a point where the turn passes.
#[derive(Debug)]
pub struct Stepped {
    inner: Shared,
    sched: Arc<Sched>,
}

impl std::fmt::Debug for Sched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sched")
    }
}

impl Storage for Stepped {
    fn create_dir_all(&self, dir: &Path) -> std::io::Result<()> {
        self.sched.pass();
        self.inner.create_dir_all(dir)
    }
    fn write_new(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        self.sched.pass();
        self.inner.write_new(path, bytes)
    }
    fn write(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        self.sched.pass();
        self.inner.write(path, bytes)
    }
    fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        self.sched.pass();
        self.inner.read(path)
    }
    fn kind(&self, path: &Path) -> Option<FileKind> {
        self.sched.pass();
        self.inner.kind(path)
    }
    fn list(&self, dir: &Path) -> std::io::Result<Vec<String>> {
        self.sched.pass();
        self.inner.list(dir)
    }
    fn remove_file(&self, path: &Path) -> std::io::Result<()> {
        self.sched.pass();
        self.inner.remove_file(path)
    }
    fn remove_dir(&self, path: &Path) -> std::io::Result<()> {
        self.sched.pass();
        self.inner.remove_dir(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        self.sched.pass();
        self.inner.rename(from, to)
    }
    fn symlink(&self, target: &Path, link: &Path) -> std::io::Result<()> {
        self.sched.pass();
        self.inner.symlink(target, link)
    }
    fn read_link(&self, link: &Path) -> std::io::Result<std::path::PathBuf> {
        self.sched.pass();
        self.inner.read_link(link)
    }
    fn canonicalize(&self, path: &Path) -> std::io::Result<std::path::PathBuf> {
        self.sched.pass();
        self.inner.canonicalize(path)
    }
    fn sync(&self, path: &Path) -> std::io::Result<()> {
        self.sched.pass();
        self.inner.sync(path)
    }
    fn backend(&self) -> Backend {
        self.inner.backend()
    }
}
