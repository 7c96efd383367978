//! Compaction and memory in one session: does what compaction loses survive
//! in memory?
//!
//! The course runs its two mechanisms in two programs. Here one session runs
//! both in the course's control flow: before every model call a compaction
//! [`Policy`] prepares the history; at a turn with no tool call the memory
//! extractor runs (and what it stores persists into the next session). Where
//! extraction reads is the hinge the seed names, a switch ([`Hinge`]):
//! - `post_compaction` — the course code: the compacted history at the end of
//!   the turn (its last `extract_max_messages` messages);
//! - `snapshot` — the course site's narrative: when compaction is about to
//!   drop or summarise messages, extraction first reads the whole
//!   pre-compaction history; and at the end of the turn as the course does;
//! - `cursor` — the product's way: after the turn ends, every uncompacted
//!   message since the last extraction.
//!
//! The extractor is deterministic: it proposes each user sentence that states
//! a preference (see [`preference_candidates`]); the course's gates (validity,
//! scope, temporary words, duplicates, path guard) then decide what is stored.

pub mod experiments;
pub mod loading;
pub mod schedule;
pub mod threads;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::LabResult;
use crate::memory::extract::{extract, ExtractorScript};
use crate::memory::recall::{recall_turn, SelectorScript};
use crate::memory::store::Store;
use crate::memory::switches::{MemoryConstants, MemorySwitches};
use crate::memory::transcript::{dialogue_text, text_content};
use crate::message::{Block, Message, Role};
use crate::policy::engine::{step, workspace, Call, Env};
use crate::policy::{Policy, PolicyEvent};
use crate::storage::Shared;

/// Where memory extraction reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Hinge {
    /// The compacted history at the end of the turn (the course code).
    #[default]
    PostCompaction,
    /// The pre-compaction history whenever compaction drops or summarises,
    /// plus the end of the turn (the course site's narrative).
    Snapshot,
    /// Every uncompacted message since the last extraction, after the turn (the product).
    Cursor,
}

/// Switches of an interlocked session. `Default` is the course: extraction
/// after compaction, and generic write tools may write anywhere.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InterlockSwitches {
    /// Where extraction reads.
    pub hinge: Hinge,
    /// A harness-level guard that refuses generic file writes into the memory
    /// directory (the course's path guard covers only the memory functions).
    pub write_tool_guard: bool,
}

/// Cues that make a user sentence a stated preference.
const CUES: &[&str] = &["use ", "prefer", "always ", "never ", "don't ", "do not "];

/// The deterministic extractor: every sentence of a `user:` line of the
/// dialogue that states a preference, as a persistent `feedback` candidate
/// (JSON array text, as a model would reply).
pub fn preference_candidates(dialogue: &str) -> String {
    let mut items = Vec::new();
    for line in dialogue.lines() {
        let Some(text) = line.strip_prefix("user: ") else {
            continue;
        };
        for sentence in text.split_inclusive(['.', '!', '?']) {
            let s = sentence.trim();
            let lower = s.to_lowercase();
            if !CUES.iter().any(|c| lower.contains(c)) {
                continue;
            }
            let name: String = s.chars().take(40).collect();
            items.push(serde_json::json!({
                "name": format!("pref {}", name.trim_end_matches(['.', '!', '?'])),
                "type": "feedback",
                "description": s,
                "body": s,
                "scope": "persistent",
            }));
        }
    }
    serde_json::Value::Array(items).to_string()
}

/// What an interlocked run counted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    /// Extractions run.
    pub extractions: usize,
    /// Memories stored by extraction.
    pub stored: Vec<String>,
    /// Compaction events that dropped or summarised messages.
    pub compactions: usize,
    /// Generic file writes that landed inside the memory directory.
    pub memory_written_by_tools: Vec<String>,
    /// Generic file writes the harness guard refused.
    pub tool_writes_refused: Vec<String>,
}

/// One interlocked harness: a store that persists across sessions, a
/// compaction policy, and the live history of the current session.
pub struct Interlocked {
    /// The memory store (`<sandbox>/.memory`).
    pub store: Store,
    /// Where the generic write tool writes (the workspace).
    pub workspace: PathBuf,
    policy: Box<dyn Policy>,
    env: Env,
    /// Switches.
    pub switches: InterlockSwitches,
    /// Memory limits.
    pub constants: MemoryConstants,
    /// The history the model sees (compacted).
    pub history: Vec<Message>,
    raw: Vec<Message>,
    cursor: usize,
    calls: usize,
    /// What happened.
    pub tally: Tally,
}

impl std::fmt::Debug for Interlocked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interlocked")
            .field("policy", &self.policy.info().name)
            .field("switches", &self.switches)
            .field("history", &self.history.len())
            .finish()
    }
}

/// A generic file-writing tool the model has besides the memory functions.
pub const WRITE_FILE_TOOL: &str = "write_file";

impl Interlocked {
    /// A harness in `sandbox` (the store at `<sandbox>/.memory`) compacting with `policy`.
    pub fn new(
        fs: Shared,
        sandbox: &Path,
        policy: Box<dyn Policy>,
        switches: InterlockSwitches,
    ) -> LabResult<Interlocked> {
        fs.create_dir_all(sandbox)
            .map_err(|e| crate::error::LabError::io("creating sandbox", sandbox, e))?;
        let store = Store::open_in(
            fs.clone(),
            sandbox,
            &sandbox.join(".memory"),
            MemorySwitches::default(),
        )?;
        let env = Env {
            storage: fs,
            root: sandbox.join(".compaction"),
            ..Env::default()
        };
        Ok(Interlocked {
            store,
            workspace: sandbox.to_path_buf(),
            policy,
            env,
            switches,
            constants: MemoryConstants::default(),
            history: Vec::new(),
            raw: Vec::new(),
            cursor: 0,
            calls: 0,
            tally: Tally::default(),
        })
    }

    /// Start a new session: the history is empty, the store persists.
    pub fn new_session(&mut self) {
        self.history.clear();
        self.raw.clear();
        self.cursor = 0;
    }

    /// Run recorded messages: compaction before each model call (each
    /// assistant message), generic writes executed, extraction at the end of
    /// each turn.
    pub fn run(&mut self, messages: &[Message]) -> LabResult<()> {
        for m in messages {
            self.push(m)?;
        }
        Ok(())
    }

    /// Run one recorded message (see [`Interlocked::run`]). After an
    /// assistant message, the history without its last message is the
    /// request that produced it.
    pub fn push(&mut self, m: &Message) -> LabResult<()> {
        if m.role == Role::Assistant {
            self.before_model_call()?;
        }
        self.history.push(m.clone());
        self.raw.push(m.clone());
        if m.role == Role::Assistant {
            self.execute_writes(m)?;
            if !m.has_tool_use() {
                self.end_of_turn()?;
            }
        }
        Ok(())
    }

    fn before_model_call(&mut self) -> LabResult<()> {
        let snapshot = self.history.clone();
        let (storage, root) = workspace(self.policy.as_ref(), &self.env)?;
        let call = Call {
            storage: storage.as_ref(),
            root: &root,
            turn: self.calls,
            envelope: self.env.prefix.tokens,
            anchor: None,
            now_ms: None,
        };
        let prepared = step(self.policy.as_mut(), &mut self.history, call, &mut self.env)?;
        self.calls += 1;
        let dropped = prepared.events.iter().any(|e| {
            matches!(
                e,
                PolicyEvent::Summarised { .. } | PolicyEvent::Dropped { .. }
            )
        });
        if dropped {
            self.tally.compactions += 1;
            if self.switches.hinge == Hinge::Snapshot {
                self.extract_from(&snapshot, usize::MAX)?;
            }
        }
        Ok(())
    }

    fn end_of_turn(&mut self) -> LabResult<()> {
        match self.switches.hinge {
            Hinge::PostCompaction | Hinge::Snapshot => {
                let history = self.history.clone();
                self.extract_from(&history, self.constants.extract_max_messages)
            }
            Hinge::Cursor => {
                let since = self.raw[self.cursor..].to_vec();
                self.cursor = self.raw.len();
                self.extract_from(&since, usize::MAX)
            }
        }
    }

    /// One extraction over `messages` (the last `window` of them), with the
    /// deterministic extractor and the course's gates.
    fn extract_from(&mut self, messages: &[Message], window: usize) -> LabResult<()> {
        let mut constants = self.constants;
        constants.extract_max_messages = window;
        let dialogue = dialogue_text(messages, window, constants.extract_char_limit);
        let script = ExtractorScript::Reply(preference_candidates(&dialogue));
        let report = extract(&self.store, messages, &script, &constants)?;
        self.tally.extractions += 1;
        self.tally.stored.extend(report.stored);
        Ok(())
    }

    /// Generic `write_file` calls: the course executes them wherever they
    /// point; with the harness guard, paths inside the memory directory are refused.
    fn execute_writes(&mut self, m: &Message) -> LabResult<()> {
        for b in m.blocks() {
            let Block::ToolUse { name, input, .. } = b else {
                continue;
            };
            if name != WRITE_FILE_TOOL {
                continue;
            }
            let (Some(path), Some(content)) = (
                input.get("path").and_then(|v| v.as_str()),
                input.get("content").and_then(|v| v.as_str()),
            ) else {
                continue;
            };
            let target = self.workspace.join(path.trim_start_matches('/'));
            let in_memory = target.starts_with(self.store.root());
            if in_memory && self.switches.write_tool_guard {
                self.tally.tool_writes_refused.push(path.to_string());
                continue;
            }
            if let Some(dir) = target.parent() {
                let _ = self.store.fs().create_dir_all(dir);
            }
            crate::storage::atomic_write(self.store.fs().as_ref(), &target, content.as_bytes())
                .map_err(|e| crate::error::LabError::io("executing write_file", &target, e))?;
            if in_memory {
                self.tally.memory_written_by_tools.push(path.to_string());
            }
        }
        Ok(())
    }

    /// What the next session's first turn would recall for `query` (the
    /// selector picks the first five records, as a cooperative model would).
    pub fn recall_text(&self, query: &str) -> LabResult<String> {
        let messages = vec![crate::memory::transcript::text_message(Role::User, query)];
        let script = SelectorScript::Reply("[0, 1, 2, 3, 4]".into());
        let recall = recall_turn(
            &self.store,
            "/workspace",
            &messages,
            &script,
            &self.constants,
        )?;
        Ok(recall.system)
    }

    /// The text the model would see now: every text of the live history.
    pub fn context_text(&self) -> String {
        crate::retention::request_text(&self.history)
    }
}

/// Where a fact survived at the end of a session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Survival {
    /// Facts in neither the context nor the next session's recall.
    pub lost_to_both: u64,
    /// Facts only the next session's recall holds.
    pub kept_only_by_memory: u64,
    /// Facts only the context holds.
    pub kept_only_by_context: u64,
    /// Facts both hold.
    pub kept_by_both: u64,
}

/// Classify `facts` (verbatim phrases) against the live context and the
/// recall the next session would get for `query`.
pub fn survival(h: &Interlocked, facts: &[&str], query: &str) -> LabResult<Survival> {
    let context = h.context_text();
    let recall = h.recall_text(query)?;
    let mut s = Survival::default();
    for f in facts {
        match (context.contains(f), recall.contains(f)) {
            (false, false) => s.lost_to_both += 1,
            (false, true) => s.kept_only_by_memory += 1,
            (true, false) => s.kept_only_by_context += 1,
            (true, true) => s.kept_by_both += 1,
        }
    }
    Ok(s)
}

/// The user text of `m` (for tests and scenario building).
pub fn user_text(m: &Message) -> String {
    text_content(m)
}
