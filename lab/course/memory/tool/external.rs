//! Any memory-tool implementation a user brings, as a process speaking the
//! `ctxlab.memtool/1` JSON Lines protocol on its standard input and output.
//!
//! ctxlab starts `sh -c CMD` in the directory `lab memcheck` was started in
//! (so `--exec "python3 my_memory_tool.py"` finds the script), in its own
//! process group, with `CTXLAB_MEMTOOL_ROOT` set to the directory
//! `/memories` names, then writes one request per line and reads one answer
//! per line:
//!
//! ```text
//! -> {"protocol":"ctxlab.memtool/1","id":1,"root":"/tmp/…/memories","input":{"command":"view","path":"/memories"}}
//! <- {"id":1,"result":"Here're the files and directories …"}
//! <- {"id":2,"error":"The path /memories/x does not exist. Please provide a valid path."}
//! ```
//!
//! `input` is the tool input exactly as the API sends it; `result` is the
//! text a tool returns, `error` the text of a tool error (`is_error: true`).
//! A process that exits, does not read a request or stays silent past the
//! timeout, answers a line over [`crate::process::MAX_LINE_BYTES`], or
//! answers anything else fails with the command it was running and the last
//! line of its stderr; it is killed (its whole group) when the row ends.
//! `lab memcheck` first sends one `view /memories` ([`preflight`]) and ends
//! with exit 3 when that fails, and ends the same way at the first row an
//! external implementation fails: a broken process is reported once, not
//! as `failed` on every row. Schema: `lab schema memtool-request`,
//! `memtool-answer`.

use std::io::{BufRead, Write};
use std::path::Path;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Command, Failure, MemoryTool, Reply};
use crate::process::{clip, LineProcess};

/// The protocol's name and version.
pub const PROTOCOL: &str = "ctxlab.memtool/1";

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
    process: LineProcess,
    root: String,
    next_id: u64,
}

impl External {
    /// Start `cmd` for a sandbox whose root is `root`, in the current
    /// directory (a relative command resolves where the user typed it).
    pub fn start(cmd: &str, root: &Path, timeout: Duration) -> Result<External, Failure> {
        let here = std::env::current_dir().map_err(|e| Failure {
            message: format!("cannot start `{cmd}`: the current directory is unusable ({e})"),
            fix: "run lab memcheck from a directory that exists".into(),
        })?;
        let extra = SPAWN_ENV.with(|e| e.borrow().clone());
        let mut env: Vec<(&str, &Path)> = vec![("CTXLAB_MEMTOOL_ROOT", root)];
        env.extend(extra.iter().map(|(k, v)| (k.as_str(), Path::new(v))));
        let process = LineProcess::start(cmd, &here, &env, timeout).map_err(|message| Failure {
            message,
            fix: "check the command line given to --exec".into(),
        })?;
        Ok(External {
            process,
            root: root.display().to_string(),
            next_id: 0,
        })
    }

    fn failure(&mut self, command: &Command, what: String) -> Failure {
        let input = shortened(serde_json::to_string(command).unwrap_or_default());
        let epitaph = self.process.epitaph();
        Failure {
            message: format!("`{}` {what} on {input}{epitaph}", self.process.command()),
            fix: format!(
                "answer each request line with one line {{\"id\": N, \"result\": \"…\"}} or \
                 {{\"id\": N, \"error\": \"…\"}} within {} s (protocol {PROTOCOL})",
                self.process.timeout().as_secs_f64()
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
        let line = serde_json::to_string(&req).map_err(|e| e.to_string())?;
        self.process.send(&line)?;
        Ok(self.next_id)
    }

    fn receive(&mut self, id: u64) -> Result<Reply, String> {
        let line = self.process.receive()?;
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

    fn kill_during(&mut self, command: &Command, at: super::KillPoint) -> Option<Reply> {
        let mut answer = None;
        if let Ok(id) = self.send(command) {
            match at {
                super::KillPoint::Sent => {}
                super::KillPoint::Replying(k) => {
                    self.process.wait_reply_bytes(k);
                }
                super::KillPoint::Answered => answer = self.receive(id).ok(),
            }
        }
        self.process.kill();
        answer
    }

    fn timeout(&self) -> Option<Duration> {
        Some(self.process.timeout())
    }
}

thread_local! {
    /// Variables [`External::start`] adds to the environment of the
    /// processes started on this thread, inside [`with_env`].
    static SPAWN_ENV: std::cell::RefCell<Vec<(String, std::ffi::OsString)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Run `f` with `env` added to the environment of every implementation it
/// starts on this thread (the race rows' barrier library and its
/// rendezvous, given per session): a [`super::harness::Maker`] stays a
/// plain function of the storage and the root.
pub fn with_env<T>(env: Vec<(String, std::ffi::OsString)>, f: impl FnOnce() -> T) -> T {
    let before = SPAWN_ENV.with(|e| e.replace(env));
    let out = f();
    SPAWN_ENV.with(|e| e.replace(before));
    out
}

/// Start `cmd` once on an empty root and send it `view /memories`: a
/// command that cannot start, exits at once, never reads, hangs, floods or
/// breaks the protocol ends `lab memcheck` here with exit 3, naming the
/// command, the last line of its stderr and the fix. Takes at most twice
/// `timeout` (the write, then the answer).
pub fn preflight(cmd: &str, timeout: Duration) -> crate::error::LabResult<()> {
    let dir = crate::storage::root::cleanup::TempRoot::new("ctxlab-memcheck-")?;
    let root = dir.path().join("memories");
    std::fs::create_dir(&root)
        .map_err(|e| crate::error::LabError::io("creating the preflight root", &root, e))?;
    let probe = Command::View {
        path: "/memories".into(),
        view_range: None,
    };
    let answer = External::start(cmd, &root, timeout).and_then(|mut t| t.execute(&probe));
    match answer {
        Ok(_) => Ok(()),
        Err(f) => Err(unusable(
            cmd,
            None,
            &f.message
                .replace(&dir.path().display().to_string(), "$SANDBOX"),
        )),
    }
}

/// The error that ends `lab memcheck` when an external implementation
/// misbehaves (exit 3): what it did (on `row`, when a row was running) and
/// the fix.
pub fn unusable(cmd: &str, row: Option<&str>, what: &str) -> crate::error::LabError {
    let here = std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_else(|_| ".".into());
    let on = row.map(|r| format!(" on row {r}")).unwrap_or_default();
    crate::error::LabError::Refused {
        message: format!("memory tool `{cmd}` misbehaved{on}: {what}"),
        fix: format!(
            "check that `sh -c {cmd:?}` runs from {here} (relative paths resolve there), reads one \
             request line at a time from stdin and answers each with one line \
             {{\"id\": N, \"result\": \"…\"}} or {{\"id\": N, \"error\": \"…\"}} on stdout \
             (protocol {PROTOCOL}, `lab schema memtool-request`); raise --timeout if it is only slow"
        ),
    }
}

/// Serve a built-in implementation over the protocol on `input`/`output`
/// (`lab memtool-serve NAME`): each request's `root` opens the
/// implementation once; malformed requests get an `error` answer naming the
/// problem, and the loop ends at end of input.
pub fn serve(
    make: &super::harness::Maker<'_>,
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
    make: &super::harness::Maker<'_>,
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

/// A request as an error message shows it: whole up to 240 bytes, else its
/// first 200 and its size (a huge `create` must not flood the message).
fn shortened(input: String) -> String {
    if input.len() <= 240 {
        return input;
    }
    let mut end = 200;
    while !input.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &input[..end], input.len())
}
