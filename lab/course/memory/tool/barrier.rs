//! The race rows for an implementation that is a process (`--exec`): a
//! barrier inside the processes, so the race is the same on every run.
//!
//! A third-party tool speaks no barrier protocol, so memcheck builds a
//! small library (`shim/barrier.c`, compiled with `cc` into the run's
//! directory) and loads it with `LD_PRELOAD` into each racing session's
//! process. The library stops the session at the first write of each
//! request (opening a file under the sandbox for writing, a rename, an
//! unlink, a new directory, a link, or a file lock anywhere) and says so in
//! a rendezvous directory memcheck owns. Each round memcheck sends every
//! session its request, waits until each has reached its write point or
//! answered without writing, then releases the waiting ones one at a time
//! in an order a seeded generator picks, each once the one before it has
//! answered. A tool that reads, edits and writes back without a lock runs
//! read, read, write, write and loses an edit on every run; one that takes
//! a lock (or creates, renames or compares before it writes) is stopped
//! before its lock and keeps every edit.
//!
//! No step waits on timing. A session that never reaches a write point and
//! never answers (a tool locking with something the library does not see,
//! blocked behind a stopped session) would deadlock the round, so memcheck
//! waits for it at most the command timeout and then releases the others
//! anyway, saying so in the verdict; and the library never holds a process
//! longer than its own bound (given in its round file), whatever memcheck
//! does. A tool whose acknowledged write the library never saw (a static
//! binary, system calls made directly) cannot be held: its row is skipped,
//! saying why, as it is where there is no `cc` or no Linux. A race row is
//! never decided by timing luck.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};

use super::harness::{Maker, Race, ToolVerdict};
use super::race::{commands, judge, sandbox, ROUNDS};
use super::{Command, MemoryTool, Reply};
use crate::error::{LabError, LabResult};

/// The library's source, built at run time.
pub const SOURCE: &str = include_str!("shim/barrier.c");

/// Release orders (seeds `0..SEEDS`) tried against a process; the first
/// that loses an edit is reported.
pub const SEEDS: u64 = 3;

/// How long memcheck waits for a session to reach its write point when
/// the process has no timeout of its own.
const DEFAULT_BOUND: Duration = Duration::from_secs(60);

/// The built library, in a directory removed when this is dropped.
pub struct Shim {
    _dir: tempfile::TempDir,
    lib: PathBuf,
}

impl Shim {
    /// Compile the library into a fresh directory under `tmp`. The error is
    /// the reason a race row against a process is skipped.
    pub fn build(tmp: &Path) -> Result<Shim, String> {
        if !cfg!(target_os = "linux") {
            return Err("the race barrier is an LD_PRELOAD library for Linux (glibc)".into());
        }
        let dir = tempfile::Builder::new()
            .prefix("barrier-")
            .tempdir_in(tmp)
            .map_err(|e| format!("cannot make a directory for the race barrier: {e}"))?;
        let src = dir.path().join("barrier.c");
        let lib = dir.path().join("barrier.so");
        std::fs::write(&src, SOURCE)
            .map_err(|e| format!("cannot write the race barrier's source: {e}"))?;
        // `CC` names another compiler, as build tools take it.
        let cc = std::env::var_os("CC")
            .filter(|c| !c.is_empty())
            .unwrap_or_else(|| "cc".into());
        let out = std::process::Command::new(&cc)
            .args(["-shared", "-fPIC", "-O1", "-o"])
            .arg(&lib)
            .arg(&src)
            .arg("-ldl")
            .output();
        match out {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(format!(
                    "no C compiler ({}) to build the race barrier, an LD_PRELOAD library: install one (e.g. gcc) or set CC to run this row",
                    cc.to_string_lossy()
                ));
            }
            Err(e) => {
                return Err(format!(
                    "cannot run {} to build the race barrier: {e}",
                    cc.to_string_lossy()
                ))
            }
            Ok(o) if !o.status.success() => {
                let err = String::from_utf8_lossy(&o.stderr);
                let last = err.lines().last().unwrap_or("").trim().to_string();
                return Err(format!(
                    "{} could not build the race barrier ({}): {last}",
                    cc.to_string_lossy(),
                    o.status
                ));
            }
            Ok(_) => {}
        }
        // LD_PRELOAD splits its list on spaces and colons.
        let text = lib.display().to_string();
        if text.contains([' ', ':']) {
            return Err(format!(
                "the race barrier's path {text} holds a space or a colon, which LD_PRELOAD cannot take: set TMPDIR to a plainer directory"
            ));
        }
        Ok(Shim { _dir: dir, lib })
    }

    /// The library's path.
    pub fn lib(&self) -> &Path {
        &self.lib
    }
}

/// Run a race row against a process: the barrier under each seed in turn,
/// until one loses an edit; skipped, saying why, when the barrier cannot
/// be built or cannot reach the tool's writes.
pub fn run(race: Race, make: &Maker<'_>, tmp: &Path) -> LabResult<ToolVerdict> {
    let shim = match Shim::build(tmp) {
        Ok(s) => s,
        Err(why) => return Ok(skipped(&why)),
    };
    for seed in 0..SEEDS {
        let v = run_once(race, make, tmp, &shim, seed)?;
        if v != ToolVerdict::Held {
            return Ok(match v {
                ToolVerdict::Skipped(_) | ToolVerdict::Failed(_) => v,
                v => v.prefixed(&format!("barrier seed {seed}")),
            });
        }
    }
    Ok(ToolVerdict::Held)
}

fn skipped(why: &str) -> ToolVerdict {
    ToolVerdict::Skipped(format!(
        "{why} (a process's race rows run only at the barrier, never on timing)"
    ))
}

/// The environment of session `i`: the library and its rendezvous.
fn env(shim: &Shim, rendezvous: &Path, scope: &Path, i: usize) -> Vec<(String, OsString)> {
    let mut preload = shim.lib().as_os_str().to_owned();
    if let Some(more) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
        preload.push(" ");
        preload.push(more);
    }
    vec![
        ("LD_PRELOAD".into(), preload),
        ("CTXLAB_BARRIER_DIR".into(), rendezvous.into()),
        ("CTXLAB_BARRIER_SESSION".into(), i.to_string().into()),
        ("CTXLAB_BARRIER_SCOPE".into(), scope.into()),
        // libuv (Node) may do file I/O through io_uring, past any library.
        ("UV_USE_IO_URING".into(), "0".into()),
        // A fresh interpreter's byte-code caches are writes too; none wanted.
        ("PYTHONDONTWRITEBYTECODE".into(), "1".into()),
    ]
}

/// What a session's thread reports: its answer to round `round`.
struct Answered {
    session: usize,
    answer: Result<Reply, String>,
}

/// One run of the race at the barrier, releasing in the order of `seed`.
pub fn run_once(
    race: Race,
    make: &Maker<'_>,
    tmp: &Path,
    shim: &Shim,
    seed: u64,
) -> LabResult<ToolVerdict> {
    let (_dir, s) = sandbox(race, tmp)?;
    let rendezvous = tempfile::Builder::new()
        .prefix("rendezvous-")
        .tempdir_in(tmp)
        .map_err(|e| LabError::io("creating the race barrier's rendezvous", tmp, e))?;
    let mut tools = Vec::new();
    for i in 0..race.sessions {
        let env = env(shim, rendezvous.path(), &s.base, i);
        match super::external::with_env(env, || make(s.fs.clone(), &s.given)) {
            Ok(t) => tools.push(t),
            Err(f) => {
                return Ok(ToolVerdict::Failed(format!(
                    "{}; fix: {}",
                    f.message, f.fix
                )))
            }
        }
    }
    let bound = tools
        .first()
        .and_then(|t| t.timeout())
        .unwrap_or(DEFAULT_BOUND);
    let rounds = Rounds {
        race,
        dir: rendezvous.path(),
        bound,
        rng: rand_chacha::ChaCha8Rng::seed_from_u64(seed),
    };
    let outcome = std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel();
        let mut inboxes = Vec::new();
        for (i, tool) in tools.into_iter().enumerate() {
            let (to_session, inbox) = mpsc::channel::<Command>();
            inboxes.push(to_session);
            let tx = tx.clone();
            scope.spawn(move || session(tool, i, &inbox, &tx));
        }
        drop(tx);
        let outcome = rounds.run(&inboxes, &rx);
        // Closing the inboxes ends the sessions; none is left at the barrier.
        drop(inboxes);
        outcome
    });
    let base = s.base.display().to_string();
    match outcome {
        Err(Stop::Failed(f)) => Ok(ToolVerdict::Failed(f.replace(&base, "$SANDBOX"))),
        Err(Stop::Io(e)) => Err(e),
        Ok(done) => Ok(done.verdict(race, &s)),
    }
}

/// A session's thread: each command from memcheck to its process, each
/// answer back; it ends (and its process is killed) when the inbox closes
/// or the process fails.
fn session(
    mut tool: Box<dyn MemoryTool>,
    me: usize,
    inbox: &mpsc::Receiver<Command>,
    out: &mpsc::Sender<Answered>,
) {
    for c in inbox {
        let answer = tool
            .execute(&c)
            .map_err(|f| format!("{}; fix: {}", f.message, f.fix));
        let failed = answer.is_err();
        if out
            .send(Answered {
                session: me,
                answer,
            })
            .is_err()
            || failed
        {
            return;
        }
    }
}

/// Why the rounds stopped early.
enum Stop {
    /// A session's process failed (crashed, hung, broke the protocol).
    Failed(String),
    /// The rendezvous could not be written.
    Io(LabError),
}

/// The rounds of one run.
struct Rounds<'a> {
    race: Race,
    dir: &'a Path,
    bound: Duration,
    rng: rand_chacha::ChaCha8Rng,
}

/// What the rounds left: every session's replies, where each stopped, and
/// the rounds where a session never reached a write point in time.
struct Done {
    replies: Vec<Vec<Reply>>,
    /// Per session, per round: the write point it stopped at, if any.
    stops: Vec<Vec<Option<String>>>,
    unreached: Vec<String>,
}

impl Rounds<'_> {
    fn run(
        mut self,
        inboxes: &[mpsc::Sender<Command>],
        rx: &mpsc::Receiver<Answered>,
    ) -> Result<Done, Stop> {
        let n = self.race.sessions;
        let all: Vec<Vec<Command>> = (0..n).map(|i| commands(self.race, i)).collect();
        let mut done = Done {
            replies: vec![Vec::new(); n],
            stops: vec![Vec::new(); n],
            unreached: Vec::new(),
        };
        for j in 0..ROUNDS {
            let outcome = self.round(j, &all, inboxes, rx, &mut done);
            if outcome.is_err() {
                // Nobody may stay stopped at the barrier of a failed round.
                for i in 0..n {
                    let _ = std::fs::write(self.file("release", i, j), "");
                }
            }
            outcome?;
        }
        Ok(done)
    }

    fn file(&self, what: &str, session: usize, round: usize) -> PathBuf {
        self.dir.join(format!("{what}-{session}-{round}"))
    }

    /// Arm every session for round `j` (the library reads which round its
    /// current request belongs to, and its own bound, in `round-S`).
    fn arm(&self, j: usize) -> Result<(), Stop> {
        let n = self.race.sessions as u32;
        // The library's bound: past every session's whole command.
        let wait_ms = self.bound.as_millis() as u64 * u64::from(n + 2);
        for i in 0..self.race.sessions {
            let path = self.dir.join(format!("round-{i}"));
            let tmp = self.dir.join(format!("round-{i}.tmp"));
            std::fs::write(&tmp, format!("{j} {wait_ms}\n"))
                .and_then(|()| std::fs::rename(&tmp, &path))
                .map_err(|e| Stop::Io(LabError::io("arming the race barrier", &path, e)))?;
        }
        Ok(())
    }

    /// Where session `i` stopped in round `j`, once it has.
    fn stopped(&self, i: usize, j: usize) -> Option<String> {
        std::fs::read_to_string(self.file("arrived", i, j))
            .ok()
            .map(|t| t.trim().to_string())
    }

    fn round(
        &mut self,
        j: usize,
        all: &[Vec<Command>],
        inboxes: &[mpsc::Sender<Command>],
        rx: &mpsc::Receiver<Answered>,
        done: &mut Done,
    ) -> Result<(), Stop> {
        let n = self.race.sessions;
        self.arm(j)?;
        for (i, inbox) in inboxes.iter().enumerate() {
            inbox
                .send(all[i][j].clone())
                .map_err(|_| Stop::Failed(format!("session {i} ended before round {j}")))?;
        }
        let started = Instant::now();
        let mut answered = vec![false; n];
        let mut released = vec![false; n];
        let mut late = false;
        let take = |m: Answered, answered: &mut Vec<bool>, done: &mut Done| match m.answer {
            Ok(r) => {
                answered[m.session] = true;
                done.replies[m.session].push(r);
                Ok(())
            }
            Err(f) => Err(Stop::Failed(f)),
        };
        while answered.iter().any(|a| !a) {
            while let Ok(m) = rx.try_recv() {
                take(m, &mut answered, done)?;
            }
            let at: Vec<bool> = (0..n).map(|i| self.stopped(i, j).is_some()).collect();
            let waiting: Vec<usize> = (0..n)
                .filter(|&i| at[i] && !released[i] && !answered[i])
                .collect();
            let unreached = (0..n).any(|i| !at[i] && !answered[i]);
            if unreached && !waiting.is_empty() && started.elapsed() > self.bound {
                late = true;
            }
            if waiting.is_empty() || (unreached && !late) {
                // Sessions still on their way to a write point or an answer.
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            let next = waiting[self.rng.gen_range(0..waiting.len())];
            std::fs::write(self.file("release", next, j), "").map_err(|e| {
                Stop::Io(LabError::io(
                    "releasing the race barrier",
                    self.file("release", next, j),
                    e,
                ))
            })?;
            released[next] = true;
            while !answered[next] {
                match rx.recv() {
                    Ok(m) => take(m, &mut answered, done)?,
                    Err(_) => return Err(Stop::Failed(format!("session {next} ended"))),
                }
            }
        }
        for (i, stops) in done.stops.iter_mut().enumerate() {
            stops.push(self.stopped(i, j));
        }
        if late {
            done.unreached.push(format!(
                "round {j}: a session reached no write point within {} s, the others were released without it",
                self.bound.as_secs_f64()
            ));
        }
        Ok(())
    }
}

impl Done {
    /// The judge's verdict, unless the barrier never saw a write the tool
    /// acknowledged (then the row cannot be held at the barrier: skipped).
    fn verdict(&self, race: Race, s: &super::harness::Sandbox) -> ToolVerdict {
        for (i, replies) in self.replies.iter().enumerate() {
            for (j, r) in replies.iter().enumerate() {
                let seen = self.stops[i].get(j).is_some_and(Option::is_some);
                if !r.is_error() && !seen {
                    return skipped(&format!(
                        "session {i} acknowledged its command of round {j}, but the race barrier saw no write of it: LD_PRELOAD does not reach this tool's writes (a static binary, or system calls made directly)"
                    ));
                }
            }
        }
        let v = judge(race, s, &self.replies);
        match (&v, self.unreached.first()) {
            (ToolVerdict::Held, _) | (_, None) => v,
            (_, Some(late)) => v.prefixed(late),
        }
    }
}
