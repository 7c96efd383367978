//! A process a user brings, spoken to in JSON Lines: one request line on
//! its standard input, one answer line on its standard output.
//!
//! Both external protocols (memory tools, `ctxlab.memtool/1`; policies,
//! `ctxlab.policy/1`) run their process through [`LineProcess`], so they
//! share one answer to what a process may do wrong: exit, hang past the
//! timeout, print a line that is too long or not UTF-8, or leave children
//! behind. The process leads its own process group, and the whole group is
//! killed when the [`LineProcess`] is dropped, or by [`kill_live_groups`]
//! (the Ctrl-C / SIGTERM handler calls it: a signal runs no `Drop`).
//!
//! Every wait is bounded by the timeout: writing a request happens on a
//! writer thread (a process that never reads its input cannot block the
//! caller on a full pipe), and reading keeps at most one answer line of at
//! most [`MAX_LINE_BYTES`] waiting (a process that floods its output is
//! stopped by the pipe, not buffered without end).

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Longest answer line read: a memory tool's file or a policy's request.
pub const MAX_LINE_BYTES: u64 = 64 * 1024 * 1024;

/// Bytes of standard error kept (its tail says why a process died).
const STDERR_TAIL: usize = 4096;

/// Process groups of the live [`LineProcess`]es, for [`kill_live_groups`].
static LIVE_GROUPS: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

fn live_groups() -> std::sync::MutexGuard<'static, BTreeSet<i32>> {
    // Every mutation is one insert or remove: a poisoned set is still consistent.
    LIVE_GROUPS.lock().unwrap_or_else(|e| e.into_inner())
}

/// SIGKILL the process group of every live [`LineProcess`] (for a signal
/// handler, which runs no `Drop`). Their leaders are reaped by the exit.
pub fn kill_live_groups() {
    for pgid in live_groups().iter() {
        kill_pgid(*pgid);
    }
}

/// A running `sh -c CMD` spoken to line by line.
pub struct LineProcess {
    cmd: String,
    child: Child,
    /// Lines to write, to the writer thread; `None` once closed.
    writer: Option<Sender<Vec<u8>>>,
    /// The writer thread's outcome of each line.
    written: Receiver<std::io::Result<()>>,
    lines: Receiver<Result<String, String>>,
    /// Bytes of the answer line being read (see [`LineProcess::wait_reply_bytes`]).
    progress: Arc<Progress>,
    stderr: Arc<Mutex<Vec<u8>>>,
    timeout: Duration,
}

/// How far the reader is into the next answer line: bytes received from
/// the process, bytes of it that made up lines already handed on, and
/// whether a whole line is waiting to be received.
#[derive(Default)]
struct Progress {
    state: Mutex<Counts>,
    moved: std::sync::Condvar,
}

#[derive(Default)]
struct Counts {
    received: u64,
    consumed: u64,
    whole: bool,
}

impl Progress {
    fn update(&self, f: impl FnOnce(&mut Counts)) {
        if let Ok(mut c) = self.state.lock() {
            f(&mut c);
        }
        self.moved.notify_all();
    }
}

/// The process's output, counting every byte read into [`Progress`].
struct Counting<R> {
    inner: R,
    progress: Arc<Progress>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.progress.update(|c| c.received += n as u64);
        Ok(n)
    }
}

impl LineProcess {
    /// Start `sh -c cmd` in `cwd` with `env` added to its environment.
    /// The error is a sentence saying why it could not start.
    pub fn start(
        cmd: &str,
        cwd: &Path,
        env: &[(&str, &Path)],
        timeout: Duration,
    ) -> Result<LineProcess, String> {
        let mut process = Command::new("sh");
        process
            .arg("-c")
            .arg(cmd)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            process.env(k, v);
        }
        // Its own process group, so the whole tree (a shell and what it
        // started) is killed when the process is dropped.
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut process, 0);
        let mut child = process
            .spawn()
            .map_err(|e| format!("cannot start `{cmd}`: {e}"))?;
        let (Some(stdout), Some(stderr_pipe)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(format!("cannot start `{cmd}`: its output is not a pipe"));
        };
        if let Ok(pgid) = i32::try_from(child.id()) {
            live_groups().insert(pgid);
        }
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let tail = stderr.clone();
        std::thread::spawn(move || keep_tail(stderr_pipe, &tail));
        // One line in flight: a flooding process blocks on its own pipe.
        let (tx, lines) = std::sync::mpsc::sync_channel(0);
        let progress = Arc::new(Progress::default());
        let counting = Counting {
            inner: stdout,
            progress: progress.clone(),
        };
        std::thread::spawn(move || read_lines(counting, tx));
        let (writer, to_write) = std::sync::mpsc::channel::<Vec<u8>>();
        let (done, written) = std::sync::mpsc::channel();
        if let Some(stdin) = child.stdin.take() {
            std::thread::spawn(move || write_lines(stdin, &to_write, &done));
        }
        Ok(LineProcess {
            cmd: cmd.into(),
            child,
            writer: Some(writer),
            written,
            lines,
            progress,
            stderr,
            timeout,
        })
    }

    /// The command line it runs.
    pub fn command(&self) -> &str {
        &self.cmd
    }

    /// How long an answer may take.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Write `line` and a newline within the timeout; the error says what
    /// the process did. After a timeout the line may still be half written:
    /// the caller must give up on the process (drop or kill it).
    pub fn send(&mut self, line: &str) -> Result<(), String> {
        let writer = self.writer.as_ref().ok_or("its input is closed")?;
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        writer
            .send(bytes)
            .map_err(|_| "exited before reading the request".to_string())?;
        match self.written.recv_timeout(self.timeout) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                Err("exited before reading the request".into())
            }
            Ok(Err(e)) => Err(format!("stopped reading its input ({e})")),
            Err(RecvTimeoutError::Timeout) => {
                // Nothing more may be written after a half-written line.
                self.writer = None;
                Err(format!(
                    "did not read its request within {} s (it never reads its input, or is stuck)",
                    self.timeout.as_secs_f64()
                ))
            }
            Err(RecvTimeoutError::Disconnected) => Err("exited before reading the request".into()),
        }
    }

    /// The next answer line, without its line end.
    pub fn receive(&mut self) -> Result<String, String> {
        match self.lines.recv_timeout(self.timeout) {
            Ok(answer) => {
                // No whole line waits any more (the reader says so too,
                // but maybe only after the next request is sent).
                self.progress.update(|c| c.whole = false);
                answer
            }
            Err(RecvTimeoutError::Timeout) => Err(format!(
                "gave no answer within {} s",
                self.timeout.as_secs_f64()
            )),
            Err(RecvTimeoutError::Disconnected) => Err("exited".into()),
        }
    }

    /// Wait until at least `k` bytes of the next answer line have been read
    /// from the process, or the whole line if it is shorter, or the process
    /// ended its output; at most the timeout. Returns the bytes read by
    /// then (the line is left to [`LineProcess::receive`]). The kill rows
    /// use it to kill a process part-way through its answer.
    pub fn wait_reply_bytes(&self, k: u64) -> u64 {
        let deadline = std::time::Instant::now() + self.timeout;
        let Ok(mut c) = self.progress.state.lock() else {
            return 0;
        };
        while c.received - c.consumed < k && !c.whole {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            match self.progress.moved.wait_timeout(c, left) {
                Ok((next, _)) => c = next,
                Err(_) => return 0,
            }
        }
        c.received - c.consumed
    }

    /// ` (exit status: 1)` when it has exited, and `; its stderr ends: …`
    /// with the last line it wrote there (a traceback's last line says why).
    pub fn epitaph(&mut self) -> String {
        let status = self
            .child
            .try_wait()
            .ok()
            .flatten()
            .map(|s| format!(" ({s})"))
            .unwrap_or_default();
        // The stderr reader may still be copying the last lines of a process
        // that just died; a short wait lets them arrive.
        std::thread::sleep(Duration::from_millis(50));
        let said = self
            .stderr
            .lock()
            .ok()
            .and_then(|t| {
                let text = String::from_utf8_lossy(&t).trim().to_string();
                text.lines().last().map(str::to_string)
            })
            .map(|l| format!("; its stderr ends: {}", clip(&l)))
            .unwrap_or_default();
        format!("{status}{said}")
    }
}

impl LineProcess {
    /// SIGKILL the process and its group now, as a crash would, and reap it.
    pub fn kill(&mut self) {
        kill_group(&self.child);
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.forget_group();
    }

    /// The process's pid (its group id: it leads its own group).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn forget_group(&self) {
        if let Ok(pgid) = i32::try_from(self.child.id()) {
            live_groups().remove(&pgid);
        }
    }
}

impl Drop for LineProcess {
    fn drop(&mut self) {
        // Close its input first so a well-behaved process can exit; then make sure.
        self.writer.take();
        kill_group(&self.child);
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.forget_group();
    }
}

/// SIGKILL to the child's process group (it leads its own, see
/// [`LineProcess::start`]). Only a group id above 1 is ever signalled:
/// `kill(-1)` would reach every process the user may signal.
fn kill_group(child: &Child) {
    if let Ok(pgid) = i32::try_from(child.id()) {
        kill_pgid(pgid);
    }
}

#[cfg(unix)]
fn kill_pgid(pgid: i32) {
    if pgid > 1 {
        // SAFETY: kill(2) takes plain integers and touches no memory.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}

#[cfg(not(unix))]
fn kill_pgid(_: i32) {}

/// Write each line to the process's input, reporting each outcome; ends
/// when the lines stop coming (input closed) or a write fails.
fn write_lines(
    mut stdin: ChildStdin,
    lines: &Receiver<Vec<u8>>,
    done: &Sender<std::io::Result<()>>,
) {
    while let Ok(line) = lines.recv() {
        let r = stdin.write_all(&line).and_then(|()| stdin.flush());
        let failed = r.is_err();
        if done.send(r).is_err() || failed {
            return;
        }
    }
}

/// Keep the last [`STDERR_TAIL`] bytes the process writes on stderr.
fn keep_tail(mut err: impl Read, tail: &Mutex<Vec<u8>>) {
    let mut buf = [0u8; 4096];
    while let Ok(n) = err.read(&mut buf) {
        if n == 0 {
            return;
        }
        let Ok(mut t) = tail.lock() else { return };
        t.extend_from_slice(&buf[..n]);
        let excess = t.len().saturating_sub(STDERR_TAIL);
        t.drain(..excess);
    }
}

/// Forward each answer line (capped) to the channel until end of output;
/// each line handed on is counted as consumed in the reader's [`Progress`]
/// (what was received past it is the next line's).
fn read_lines<R: Read>(out: Counting<R>, tx: SyncSender<Result<String, String>>) {
    let progress = out.progress.clone();
    // A pipe holds 64 KiB: one read takes what a flooding process wrote.
    let mut reader = BufReader::with_capacity(1 << 16, out);
    loop {
        let mut buf = Vec::new();
        let n = match (&mut reader)
            .take(MAX_LINE_BYTES + 1)
            .read_until(b'\n', &mut buf)
        {
            Ok(n) => n,
            Err(e) => {
                progress.update(|c| c.whole = true);
                let _ = tx.send(Err(format!("output unreadable ({e})")));
                return;
            }
        };
        if n == 0 {
            progress.update(|c| c.whole = true);
            return;
        }
        progress.update(|c| {
            c.consumed += n as u64;
            c.whole = true;
        });
        let msg = if buf.len() as u64 > MAX_LINE_BYTES {
            Err(format!("answered a line over {MAX_LINE_BYTES} bytes"))
        } else {
            String::from_utf8(buf)
                .map(|s| s.trim_end_matches(['\n', '\r']).to_string())
                .map_err(|_| "answered a line that is not UTF-8".to_string())
        };
        let stop = msg.is_err();
        if tx.send(msg).is_err() || stop {
            return;
        }
        progress.update(|c| c.whole = false);
    }
}

/// The first 120 bytes of `s` (at a character boundary), quoted.
pub fn clip(s: &str) -> String {
    let mut end = s.len().min(120);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{:?}", &s[..end])
}
