//! Content Claude Code attaches after a round of tool results without
//! logging it.
//!
//! After every round of tool calls Claude Code computes attachments and
//! appends them to the user message that returns the results, as
//! `<system-reminder>` text (Claude Code 1.0.70 `cli.js`: the query loop
//! calls its attachment step after the tool results). One of them re-sends
//! files that changed on disk since the agent read or wrote them (its
//! read-file state keeps each file's content and time; a newer modification
//! time attaches the change). The log keeps neither. Two cases are visible
//! in the log:
//!
//! - **changed files**: a Bash command that rewrites the working tree (a git
//!   checkout, stash, pull, merge, rebase, hard reset or restore) after the
//!   agent edited files: their changed contents come back with its result.
//!   The size is not logged; the content last known from the log (the
//!   file's last Read result, or the content a Write sent) stands for it.
//! - **a subagent's edits**: the subagent shares the read-file state (and
//!   the editor's diagnostics) with its parent, so after a subagent that
//!   edited files the parent's next request carries a reminder too.
//!
//! Either reminder is a non-tool-result block, so the API treats the user
//! message as the start of a new turn: models that drop earlier turns'
//! thinking drop it there ([`super::thinking`]), and the cached prefix
//! breaks at the first dropped block.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::flatten_tool_result;
use crate::message::{Block, Message, Role};
use crate::tokens::claude::units;

/// Unlogged reminders, keyed by the id of the tool call whose result they
/// were attached to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reminders {
    /// Size of file contents re-sent with the call's result, in o200k tokens.
    resent: HashMap<String, f64>,
    /// Calls whose result message carried any reminder.
    attached: HashSet<String>,
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn blocks(r: &Value) -> &[Value] {
    r.pointer("/message/content")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Tools that write a file the agent then holds in its read-file state.
const EDIT_TOOLS: &[&str] = &["Edit", "MultiEdit", "Write", "NotebookEdit"];

/// Tools that run a subagent.
const AGENT_TOOLS: &[&str] = &["Task", "Agent"];

/// What the log shows of the agent's read-file state while it is read in
/// file order.
#[derive(Default)]
struct State<'a> {
    /// Tool calls by id: name, input and file position.
    calls: HashMap<&'a str, (&'a str, &'a Value, usize)>,
    /// Each file's last Read result.
    last_read: HashMap<&'a str, Option<&'a Value>>,
    /// Files edited since the working tree was last rewritten, with their
    /// last known content.
    edited: HashMap<&'a str, Known<'a>>,
    /// Positions of subagent records that call an editing tool.
    side_edits: Vec<usize>,
}

/// A file's content as last known from the log, counted only when a
/// rewrite of the working tree re-sends it: most logs never rewrite it,
/// and counting every Read result in o200k tokens was most of the pass
/// that reads a log's recorded usage.
#[derive(Clone, Copy)]
enum Known<'a> {
    /// The content a Write sent.
    Written(&'a str),
    /// The content of the file's last Read result.
    Read(Option<&'a Value>),
    /// Nothing known (an edit of a file never read).
    Nothing,
}

impl Known<'_> {
    /// Its size in o200k tokens.
    fn units(self) -> f64 {
        match self {
            Known::Written(c) => units(c),
            Known::Read(content) => units(&flatten_tool_result(content).0),
            Known::Nothing => 0.0,
        }
    }
}

impl<'a> State<'a> {
    fn call(&mut self, pos: usize, r: &'a Value, b: &'a Value) {
        let (Some(id), Some(name)) = (str_of(b, "id"), str_of(b, "name")) else {
            return;
        };
        let input = b.get("input").unwrap_or(&Value::Null);
        self.calls.insert(id, (name, input, pos));
        if !EDIT_TOOLS.contains(&name) {
            return;
        }
        if r.get("isSidechain").and_then(Value::as_bool) == Some(true) {
            self.side_edits.push(pos);
        }
        if let Some(path) = str_of(input, "file_path") {
            let size = match str_of(input, "content") {
                Some(c) => Known::Written(c),
                None => self
                    .last_read
                    .get(path)
                    .map_or(Known::Nothing, |&c| Known::Read(c)),
            };
            self.edited.insert(path, size);
        }
    }

    /// A result came back at `pos`: what does it attach?
    fn result(&mut self, pos: usize, b: &'a Value, out: &mut Reminders) {
        let Some(id) = str_of(b, "tool_use_id") else {
            return;
        };
        let Some(&(name, input, called_at)) = self.calls.get(id) else {
            return;
        };
        match name {
            "Read" => {
                if let Some(path) = str_of(input, "file_path") {
                    self.last_read.insert(path, b.get("content"));
                }
            }
            "Bash" if rewrites_worktree(str_of(input, "command").unwrap_or("")) => {
                let size: f64 = self.edited.drain().map(|(_, s)| s.units()).sum();
                if size > 0.0 {
                    out.resent.insert(id.to_string(), size);
                    out.attached.insert(id.to_string());
                }
            }
            _ if AGENT_TOOLS.contains(&name)
                && self.side_edits.iter().any(|&p| p > called_at && p < pos) =>
            {
                out.attached.insert(id.to_string());
            }
            _ => {}
        }
    }
}

impl Reminders {
    /// The reminders a log's records imply.
    pub fn of(records: &[Value]) -> Reminders {
        let mut state = State::default();
        let mut out = Reminders::default();
        for (pos, r) in records.iter().enumerate() {
            for b in blocks(r) {
                match (str_of(r, "type"), str_of(b, "type")) {
                    (Some("assistant"), Some("tool_use")) => state.call(pos, r, b),
                    (Some("user"), Some("tool_result")) => state.result(pos, b, &mut out),
                    _ => {}
                }
            }
        }
        out
    }

    /// o200k tokens of file contents re-sent with the results in `messages`
    /// (they stay in the conversation once sent).
    pub fn resent_units(&self, messages: &[Message]) -> f64 {
        messages
            .iter()
            .flat_map(|m| m.blocks())
            .filter_map(|b| match b {
                Block::ToolResult { tool_use_id, .. } => self.resent.get(tool_use_id),
                _ => None,
            })
            .sum()
    }

    /// Whether the user message `m` carried a reminder with its results.
    pub fn starts_turn(&self, m: &Message) -> bool {
        m.role == Role::User
            && m.blocks().iter().any(|b| {
                matches!(b, Block::ToolResult { tool_use_id, .. } if self.attached.contains(tool_use_id))
            })
    }
}

/// Whether a shell command rewrites files of the working tree: a git
/// checkout or switch to another commit (not `-b`/`-c`, which keep the
/// files), stash, pull, merge, rebase, cherry-pick, revert, `reset --hard`
/// or a restore of the working tree.
pub fn rewrites_worktree(command: &str) -> bool {
    command
        .split(['\n', ';', '&', '|'])
        .any(|part| git_rewrites(&part.split_whitespace().collect::<Vec<_>>()))
}

fn git_rewrites(words: &[&str]) -> bool {
    let Some(git) = words.iter().position(|w| *w == "git") else {
        return false;
    };
    let mut rest = words[git + 1..].iter().copied();
    // Global options before the subcommand (`-C dir`, `-c key=value`).
    let sub = loop {
        match rest.next() {
            Some("-C" | "-c") => {
                rest.next();
            }
            Some(w) if w.starts_with('-') => {}
            other => break other,
        }
    };
    let args: Vec<&str> = rest.collect();
    let has = |flags: &[&str]| args.iter().any(|a| flags.contains(a));
    match sub {
        Some("checkout") => !has(&["-b", "-B"]),
        Some("switch") => !has(&["-c", "-C", "--create"]),
        Some("stash") => match args.first() {
            None => true,
            Some(a) => a.starts_with('-') || ["push", "save", "pop", "apply"].contains(a),
        },
        Some("pull" | "merge" | "rebase" | "cherry-pick" | "revert") => true,
        Some("reset") => has(&["--hard"]),
        Some("restore") => !has(&["--staged", "-S"]) || has(&["--worktree", "-W"]),
        _ => false,
    }
}

#[cfg(test)]
mod tests;
