//! Any memory-tool implementation a user brings, as a process speaking the
//! `ctxlab.memtool/1` JSON Lines protocol on its standard input and output.
//!
//! ctxlab starts `sh -c CMD` in the row's sandbox with `CTXLAB_MEMTOOL_ROOT`
//! set to the directory `/memories` names, then writes one request per line
//! and reads one answer per line:
//!
//! ```text
//! -> {"protocol":"ctxlab.memtool/1","id":1,"root":"/tmp/…/memories","input":{"command":"view","path":"/memories"}}
//! <- {"id":1,"result":"Here're the files and directories …"}
//! <- {"id":2,"error":"The path /memories/x does not exist. Please provide a valid path."}
//! ```
//!
//! `input` is the tool input exactly as the API sends it; `result` is the
//! text a tool returns, `error` the text of a tool error (`is_error: true`).
//! A process that exits, stays silent past the timeout, or answers with
//! anything else fails the row with the command it was running; it is killed
//! when the row ends. Schema: `lab schema memtool-request`, `memtool-answer`.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command as Process, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Command, Failure, MemoryTool, Reply};

/// The protocol's name and version.
pub const PROTOCOL: &str = "ctxlab.memtool/1";

/// Longest answer line read (a memory-tool result is a file's text).
const MAX_LINE_BYTES: u64 = 16 * 1024 * 1024;

/// One request line.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Request {
    /// Always [`PROTOCOL`].
    pub protocol: String,
    /// 1-based, increasing within a process.
    pub id: u64,
    /// The directory `/memories` names.
    pub root: String,
    /// The tool input as the API sends it.
    pub input: Command,
}

/// One answer line: exactly one of `result` and `error`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    /// The request's id.
    pub id: u64,
    /// The tool's result text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// The tool's error text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The JSON Schema of a request line.
pub fn request_schema() -> serde_json::Value {
    crate::render::schema_of::<Request>()
}

/// The JSON Schema of an answer line.
pub fn answer_schema() -> serde_json::Value {
    crate::render::schema_of::<Answer>()
}

/// A running external implementation.
pub struct External {
    cmd: String,
    root: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Result<String, String>>,
    stderr: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    next_id: u64,
    timeout: Duration,
}

impl External {
    /// Start `cmd` for a sandbox whose root is `root`.
    pub fn start(cmd: &str, root: &Path, timeout: Duration) -> Result<External, Failure> {
        let cwd = root.parent().unwrap_or(root);
        let mut process = Process::new("sh");
        process
            .arg("-c")
            .arg(cmd)
            .current_dir(cwd)
            .env("CTXLAB_MEMTOOL_ROOT", root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // Its own process group, so the whole tree (a shell and what it
        // started) is killed when the row ends.
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut process, 0);
        let mut child = process.spawn().map_err(|e| Failure {
            message: format!("cannot start `{cmd}`: {e}"),
            fix: "check the command line given to --exec".into(),
        })?;
        let stdout = child.stdout.take().expect("piped");
        let stdin = child.stdin.take();
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        if let Some(err) = child.stderr.take() {
            let tail = stderr.clone();
            std::thread::spawn(move || keep_tail(err, &tail));
        }
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || read_lines(stdout, tx));
        Ok(External {
            cmd: cmd.into(),
            root: root.display().to_string(),
            child,
            stdin,
            lines,
            stderr,
            next_id: 0,
            timeout,
        })
    }

    fn failure(&mut self, command: &Command, what: String) -> Failure {
        let input = serde_json::to_string(command).unwrap_or_default();
        let status = self
            .child
            .try_wait()
            .ok()
            .flatten()
            .map(|s| format!(" ({s})"))
            .unwrap_or_default();
        // What it said last on stderr (a traceback's last line) says why.
        std::thread::sleep(Duration::from_millis(50));
        let said = self
            .stderr
            .lock()
            .map(|t| {
                String::from_utf8_lossy(&t)
                    .trim()
                    .lines()
                    .last()
                    .map(str::to_string)
            })
            .ok()
            .flatten()
            .map(|l| format!("; its stderr ends: {}", clip(&l)))
            .unwrap_or_default();
        Failure {
            message: format!("`{}` {what}{status} on {input}{said}", self.cmd),
            fix: format!(
                "answer each request line with one line {{\"id\": N, \"result\": \"…\"}} or \
                 {{\"id\": N, \"error\": \"…\"}} within {} s (protocol {PROTOCOL})",
                self.timeout.as_secs_f64()
            ),
        }
    }

    fn send(&mut self, command: &Command) -> Result<u64, String> {
        self.next_id += 1;
        let req = Request {
            protocol: PROTOCOL.into(),
            id: self.next_id,
            root: self.root.clone(),
            input: command.clone(),
        };
        let mut line = serde_json::to_string(&req).map_err(|e| e.to_string())?;
        line.push('\n');
        let stdin = self.stdin.as_mut().ok_or("stdin closed")?;
        stdin
            .write_all(line.as_bytes())
            .and_then(|()| stdin.flush())
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::BrokenPipe => "exited before reading the request".to_string(),
                _ => format!("stopped reading its input ({e})"),
            })?;
        Ok(self.next_id)
    }

    fn receive(&mut self, id: u64) -> Result<Reply, String> {
        let line = match self.lines.recv_timeout(self.timeout) {
            Ok(Ok(line)) => line,
            Ok(Err(e)) => return Err(e),
            Err(RecvTimeoutError::Timeout) => {
                return Err(format!(
                    "gave no answer within {} s",
                    self.timeout.as_secs_f64()
                ))
            }
            Err(RecvTimeoutError::Disconnected) => return Err("exited".into()),
        };
        let a: Answer = serde_json::from_str(&line)
            .map_err(|e| format!("answered garbage ({e}): {}", clip(&line)))?;
        match (a.id == id, a.result, a.error) {
            (false, ..) => Err(format!("answered id {} to request {id}", a.id)),
            (true, Some(r), None) => Ok(Reply::Ok(r)),
            (true, None, Some(e)) => Ok(Reply::Error(e)),
            _ => Err(format!(
                "answered neither or both of result and error: {}",
                clip(&line)
            )),
        }
    }
}

impl MemoryTool for External {
    fn execute(&mut self, command: &Command) -> Result<Reply, Failure> {
        let answer = self.send(command).and_then(|id| self.receive(id));
        answer.map_err(|what| self.failure(command, what))
    }
}

impl Drop for External {
    fn drop(&mut self) {
        // Close its input first so a well-behaved tool can exit; then make sure.
        self.stdin.take();
        kill_group(&self.child);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// SIGKILL to the child's process group (it leads its own, see `start`).
/// Only a group id above 1 is ever signalled: `kill(-1)` would reach every
/// process the user may signal.
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

/// Keep the last 4 KiB the process writes on stderr.
fn keep_tail(mut err: impl Read, tail: &std::sync::Mutex<Vec<u8>>) {
    let mut buf = [0u8; 4096];
    while let Ok(n) = err.read(&mut buf) {
        if n == 0 {
            return;
        }
        let Ok(mut t) = tail.lock() else { return };
        t.extend_from_slice(&buf[..n]);
        let excess = t.len().saturating_sub(4096);
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

fn clip(s: &str) -> String {
    let mut end = s.len().min(120);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{:?}", &s[..end])
}

/// Serve a built-in implementation over the protocol on `input`/`output`
/// (`lab memtool-serve NAME`): each request's `root` opens the
/// implementation once; malformed requests get an `error` answer naming the
/// problem, and the loop ends at end of input.
pub fn serve(
    make: &super::rows::Maker<'_>,
    input: impl BufRead,
    mut output: impl Write,
) -> std::io::Result<()> {
    let mut tool: Option<(String, Box<dyn MemoryTool>)> = None;
    for line in input.lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let answer = match serde_json::from_str::<Request>(&line) {
            Ok(req) => answer(make, &mut tool, req),
            Err(e) => Answer {
                id: 0,
                result: None,
                error: Some(format!("not a {PROTOCOL} request: {e}")),
            },
        };
        serde_json::to_writer(&mut output, &answer)?;
        output.write_all(b"\n")?;
        output.flush()?;
    }
    Ok(())
}

fn answer(
    make: &super::rows::Maker<'_>,
    tool: &mut Option<(String, Box<dyn MemoryTool>)>,
    req: Request,
) -> Answer {
    let error = |e: String| Answer {
        id: req.id,
        result: None,
        error: Some(e),
    };
    if tool.as_ref().is_none_or(|(root, _)| *root != req.root) {
        let fs: crate::storage::Shared = std::sync::Arc::new(crate::storage::DiskFs);
        match make(fs, Path::new(&req.root)) {
            Ok(t) => *tool = Some((req.root.clone(), t)),
            Err(f) => return error(f.message),
        }
    }
    let Some((_, t)) = tool.as_mut() else {
        return error("no implementation".into());
    };
    match t.execute(&req.input) {
        Ok(Reply::Ok(r)) => Answer {
            id: req.id,
            result: Some(r),
            error: None,
        },
        Ok(Reply::Error(e)) => error(e),
        Err(f) => error(f.message),
    }
}
