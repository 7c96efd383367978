//! Anthropic's client-side memory tool as a harness layer: the model sends
//! `view`, `create`, `str_replace`, `insert`, `delete` and `rename` on paths
//! under `/memories`, and whoever runs the agent implements the storage
//! behind them. Keeping every path inside `/memories` is that implementer's
//! job, so this module scripts commands against an implementation and
//! judges what happened to the files, inside and outside its root.
//!
//! - [`Command`]: the tool's input, as the API sends it (`memory_20250818`).
//! - [`reference`](mod@reference): ctxlab's implementation on the storage layer, with the
//!   result strings of the Anthropic Python SDK's `BetaLocalFilesystemMemoryTool`.
//! - [`naive`]: a deliberately broken implementation the tests ship, so every
//!   row is shown to catch what it should.
//! - [`external`]: any implementation a user brings, as a process speaking
//!   the `ctxlab.memtool/1` JSON Lines protocol.
//! - [`rows`]: the faults and attacks, each with the outcome the
//!   documentation requires, and the judge.

pub mod barrier;
pub mod contain;
pub mod external;
pub mod harness;
pub mod kill;
pub mod linkbugs;
pub mod lock;
pub mod naive;
pub mod prefix;
pub mod race;
pub mod reference;
pub mod rows;
pub mod tmpfs;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One memory-tool command, as the model sends it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "command", rename_all = "snake_case", deny_unknown_fields)]
pub enum Command {
    /// Show a directory listing (two levels) or a file with line numbers.
    View {
        /// A path under `/memories`.
        path: String,
        /// 1-based first and last line (`-1`: to the end).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        view_range: Option<[i64; 2]>,
    },
    /// Create a file (an existing one is an error).
    Create {
        /// A path under `/memories`.
        path: String,
        /// The whole file.
        file_text: String,
    },
    /// Replace the one occurrence of `old_str`.
    StrReplace {
        /// A path under `/memories`.
        path: String,
        /// Text that must occur exactly once.
        old_str: String,
        /// Its replacement.
        new_str: String,
    },
    /// Insert a line after line `insert_line` (0: at the top).
    Insert {
        /// A path under `/memories`.
        path: String,
        /// Lines before the insertion point.
        insert_line: i64,
        /// The text inserted.
        insert_text: String,
    },
    /// Delete a file or a directory.
    Delete {
        /// A path under `/memories`.
        path: String,
    },
    /// Rename or move a file or a directory.
    Rename {
        /// The current path under `/memories`.
        old_path: String,
        /// The new path under `/memories`.
        new_path: String,
    },
}

/// What a command returned to the model: a result, or a tool error (the
/// API's `is_error: true`). Either is a normal answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    /// The tool's result text.
    Ok(String),
    /// The tool's error text.
    Error(String),
}

impl Reply {
    /// The text either way.
    pub fn text(&self) -> &str {
        match self {
            Reply::Ok(t) | Reply::Error(t) => t,
        }
    }

    /// Whether the tool reported an error.
    pub fn is_error(&self) -> bool {
        matches!(self, Reply::Error(_))
    }
}

/// The implementation itself failed (not a tool error): it crashed, hung,
/// or answered outside the protocol.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    /// What went wrong, with the command that was running.
    pub message: String,
    /// How to fix it.
    pub fix: String,
}

/// An implementation of the memory tool under test. Each row gets a fresh
/// one on a fresh sandbox (one per session: the race rows run sessions on
/// threads, hence `Send`).
pub trait MemoryTool: Send {
    /// Run one command.
    fn execute(&mut self, command: &Command) -> Result<Reply, Failure>;

    /// Run `command` and die at `at`, whatever it was doing (the `kill-*`
    /// rows). A process is sent SIGKILL (its group); an in-process
    /// implementation is killed by its storage's fault plan instead (at
    /// every operation in turn), so by default this only runs the command.
    /// Returns the answer when one was read before the kill (a process at
    /// [`KillPoint::Answered`]); an in-process run returns none, since a
    /// killed implementation answers nothing.
    fn kill_during(&mut self, command: &Command, at: KillPoint) -> Option<Reply> {
        let _ = (self.execute(command), at);
        None
    }

    /// How long one command may take, for a process (`--timeout`); none in
    /// process. The race rows bound their wait for a session that never
    /// reaches a write point by it.
    fn timeout(&self) -> Option<std::time::Duration> {
        None
    }
}

/// Where a process is killed during a command: points ctxlab controls,
/// never a delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillPoint {
    /// As soon as the whole request line is written to its input.
    Sent,
    /// As soon as `k` bytes of its answer line are read (the whole line if
    /// it is shorter), before the line is: the edit is not acknowledged,
    /// so the old state or the new one whole will do.
    Replying(u64),
    /// As soon as its whole answer line is read: an edit it acknowledged
    /// must be whole on disk.
    Answered,
}
