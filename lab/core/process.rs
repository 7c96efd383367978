//! A process a user brings, spoken to in JSON Lines: one request line on
//! its standard input, one answer line on its standard output.
//!
//! Both external protocols (memory tools, `ctxlab.memtool/1`; policies,
//! `ctxlab.policy/1`) run their process through [`LineProcess`], so they
//! share one answer to what a process may do wrong: exit, hang past the
//! timeout, print a line that is too long or not UTF-8, or leave children
//! behind. The process leads its own process group, and the whole group is
//! killed when the [`LineProcess`] is dropped.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Longest answer line read: a memory tool's file or a policy's request.
pub const MAX_LINE_BYTES: u64 = 64 * 1024 * 1024;

/// Bytes of standard error kept (its tail says why a process died).
const STDERR_TAIL: usize = 4096;

/// A running `sh -c CMD` spoken to line by line.
pub struct LineProcess {
    cmd: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Result<String, String>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    timeout: Duration,
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
        let stdin = child.stdin.take();
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let tail = stderr.clone();
        std::thread::spawn(move || keep_tail(stderr_pipe, &tail));
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || read_lines(stdout, tx));
        Ok(LineProcess {
            cmd: cmd.into(),
            child,
            stdin,
            lines,
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

    /// Write `line` and a newline; the error says what the process did.
    pub fn send(&mut self, line: &str) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("its input is closed")?;
        stdin
            .write_all(line.as_bytes())
            .and_then(|()| stdin.write_all(b"\n"))
            .and_then(|()| stdin.flush())
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::BrokenPipe => "exited before reading the request".to_string(),
                _ => format!("stopped reading its input ({e})"),
            })
    }

    /// The next answer line, without its line end.
    pub fn receive(&mut self) -> Result<String, String> {
        match self.lines.recv_timeout(self.timeout) {
            Ok(answer) => answer,
            Err(RecvTimeoutError::Timeout) => Err(format!(
                "gave no answer within {} s",
                self.timeout.as_secs_f64()
            )),
            Err(RecvTimeoutError::Disconnected) => Err("exited".into()),
        }
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
    }
}

impl Drop for LineProcess {
    fn drop(&mut self) {
        // Close its input first so a well-behaved process can exit; then make sure.
        self.stdin.take();
        kill_group(&self.child);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// SIGKILL to the child's process group (it leads its own, see
/// [`LineProcess::start`]). Only a group id above 1 is ever signalled:
/// `kill(-1)` would reach every process the user may signal.
#[cfg(unix)]
fn kill_group(child: &Child) {
    if let Ok(pgid) = i32::try_from(child.id()) {
        if pgid > 1 {
            // SAFETY: kill(2) takes plain integers and touches no memory.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
    }
}

#[cfg(not(unix))]
fn kill_group(_: &Child) {}

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

/// Forward each answer line (capped) to the channel until end of output.
fn read_lines(out: impl Read, tx: std::sync::mpsc::Sender<Result<String, String>>) {
    let mut reader = BufReader::new(out);
    loop {
        let mut buf = Vec::new();
        let n = match (&mut reader)
            .take(MAX_LINE_BYTES + 1)
            .read_until(b'\n', &mut buf)
        {
            Ok(n) => n,
            Err(e) => {
                let _ = tx.send(Err(format!("output unreadable ({e})")));
                return;
            }
        };
        if n == 0 {
            return;
        }
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
