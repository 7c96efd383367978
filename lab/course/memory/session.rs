//! A scripted harness: drives turns through recall, tools, extraction and
//! consolidation exactly in the course's control flow, and keeps the ledger
//! and tallies the checker needs.
//!
//! Control flow of one turn (course `agent_loop`):
//! user text -> recall once (system prompt fixed for the turn) -> tool rounds
//! -> a reply with no tool call -> extraction -> if >= 1 stored, consolidation.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::consolidate::{consolidate, log_line, Consolidation, ConsolidatorScript, FaultPlan};
use super::extract::{extract, ExtractReport, ExtractorScript, Rejection};
use super::recall::{recall_turn, Recall, SelectionPath, SelectorScript};
use super::store::{Memory, Store};
use super::switches::{MemoryConstants, MemorySwitches};
use super::transcript::{Block, Message, Role};
use crate::error::{LabError, LabResult};
use crate::storage::Shared;

/// Tool name of the memory-writing tool the course does NOT give the model.
pub const MEMORY_WRITE_TOOL: &str = "memory_write";
/// Tool name of the memory-deleting tool the course does NOT give the model.
pub const MEMORY_DELETE_TOOL: &str = "memory_delete";

/// One tool call the scripted main model makes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// Tool name (`bash`, `read_file`, or `memory_write` / `memory_delete`).
    pub name: String,
    /// Arguments (for `memory_write`: name, type, description, body; for `memory_delete`: name).
    #[serde(default)]
    pub input: serde_json::Value,
    /// Output the tool returns (ignored for memory tools, which the harness executes).
    #[serde(default)]
    pub result: String,
}

/// One scripted user turn.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// The user's text.
    pub user: String,
    /// Tool calls the model makes before its final reply.
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// The model's final reply (no tool call).
    #[serde(default)]
    pub assistant: String,
    /// The turn ends inside the tool loop (no final reply): extraction does not run.
    #[serde(default)]
    pub interrupted: bool,
    /// The selector side model.
    #[serde(default)]
    pub selector: SelectorScript,
    /// The extractor side model.
    #[serde(default)]
    pub extractor: ExtractorScript,
    /// The consolidator side model.
    #[serde(default)]
    pub consolidator: ConsolidatorScript,
    /// Faults to inject into this turn's consolidation.
    #[serde(default)]
    pub faults: FaultPlan,
}

/// One session: messages start empty, the store persists.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Session {
    /// Turns in order.
    pub turns: Vec<Turn>,
}

/// A count with a few sample ids.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    /// How many.
    pub n: u64,
    /// Sample ids, in order of occurrence, deduplicated.
    pub samples: Vec<String>,
}

impl Tally {
    /// Count one occurrence with its id.
    pub fn add(&mut self, id: impl Into<String>) {
        self.n += 1;
        let id = id.into();
        if !self.samples.contains(&id) {
            self.samples.push(id);
        }
    }
}

/// What the harness observed while running (the part of the evidence that
/// is not on disk).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// System prompts assembled (exactly one per turn).
    pub system_prompts: Tally,
    /// Selector answers without a JSON array that fell back to keywords.
    pub garbage_fallbacks: Tally,
    /// Selector answers without a JSON array treated as "nothing relevant".
    pub garbage_empty_selections: Tally,
    /// Failed selector calls answered by keyword matching.
    pub keyword_fallbacks: Tally,
    /// Recalled records cut before their end by the budget.
    pub records_cut_midway: Tally,
    /// Memory files written or deleted by the model's own tool calls.
    pub model_writes: Tally,
    /// Model attempts to call a memory tool it does not have.
    pub model_write_attempts_refused: Tally,
    /// Consolidation passes that rewrote the store.
    pub consolidations_done: Tally,
    /// Consolidation passes that failed.
    pub consolidations_failed: Tally,
    /// Failed passes whose rollback restored the snapshot.
    pub rollbacks: Tally,
    /// Passes skipped by the reverse gate with only a quiet log line.
    pub consolidation_skipped_silently: Tally,
    /// Passes skipped by the reverse gate with a warning.
    pub consolidation_skipped_warned: Tally,
    /// Candidates the path guard refused.
    pub refused_writes: Tally,
}

/// Memories the harness told the user it stored, and those consolidation
/// deliberately merged away. Keyed by memory name, not file name: two names
/// with one slug (`Tabs`, `TABS!`) are two acknowledgements, and the second
/// write overwriting the first is a loss the checker sees.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ledger {
    /// Memory name -> the file it was acknowledged in.
    pub acknowledged: BTreeMap<String, String>,
    /// Memory names a successful consolidation removed on purpose.
    pub merged: BTreeSet<String>,
}

impl Ledger {
    /// Record an acknowledged write.
    pub fn ack(&mut self, name: &str, file: &str) {
        self.merged.remove(name);
        self.acknowledged.insert(name.to_string(), file.to_string());
    }
}

/// A fresh in-memory file system and the sandbox path runs use in it: every
/// byte a run writes, even through a broken guard, stays in that memory.
pub fn sandbox() -> (Shared, PathBuf) {
    let fs: Shared = std::sync::Arc::new(crate::storage::MemFs::new());
    (fs, PathBuf::from("/sandbox"))
}

/// What opening the store found that a user must hear about: files left out
/// as malformed (with where, why and the fix) and a journal not acted on.
fn opening_log(store: &Store) -> LabResult<Vec<String>> {
    let mut log: Vec<String> = store
        .scan()?
        .quarantined
        .iter()
        .map(|q| format!("[Memory: quarantined {}]", q.describe()))
        .collect();
    if let Some(why) = &store.recovery().untrusted_journal {
        log.push(format!("[Memory: consolidation journal not used: {why}]"));
    }
    Ok(log)
}

/// The scripted harness.
#[derive(Debug)]
pub struct Harness {
    sandbox: PathBuf,
    /// The store under test (`<sandbox>/.memory`).
    pub store: Store,
    /// Limits in force.
    pub constants: MemoryConstants,
    /// Acknowledged / merged files.
    pub ledger: Ledger,
    /// Tallies.
    pub stats: Stats,
    /// Lines the harness printed.
    pub log: Vec<String>,
    /// The current session's messages.
    pub messages: Vec<Message>,
    /// The last turn's recall (its system prompt).
    pub last_recall: Option<Recall>,
    /// The last extraction's report (`None` if the last turn ended in a tool call).
    pub last_extract: Option<ExtractReport>,
    /// Files outside the store at start, with their bytes.
    outside_before: BTreeMap<PathBuf, Vec<u8>>,
    tool_seq: u64,
}

impl Harness {
    /// A harness whose store is `<sandbox>/.memory`. Everything else in the
    /// sandbox is recorded so the checker can spot writes outside the store.
    pub fn new(
        fs: Shared,
        sandbox: &Path,
        switches: MemorySwitches,
        constants: MemoryConstants,
    ) -> LabResult<Harness> {
        fs.create_dir_all(sandbox)
            .map_err(|e| LabError::io("creating sandbox", sandbox, e))?;
        let canonical = fs
            .canonicalize(sandbox)
            .map_err(|e| LabError::io("resolving sandbox", sandbox, e))?;
        // Taken before the store exists, so a store directory that is a link
        // leaving the sandbox is refused before anything is written through it.
        let outside_before = super::sandbox::files_outside(
            fs.as_ref(),
            &super::sandbox::watched_root(fs.as_ref(), &canonical),
            &canonical.join(".memory"),
        )?;
        let store = Store::open_in(fs, &canonical, &canonical.join(".memory"), switches)?;
        let log = opening_log(&store)?;
        let sandbox = canonical;
        Ok(Harness {
            sandbox,
            store,
            constants,
            ledger: Ledger::default(),
            stats: Stats::default(),
            log,
            messages: Vec::new(),
            last_recall: None,
            last_extract: None,
            outside_before,
            tool_seq: 0,
        })
    }

    /// The sandbox root.
    pub fn sandbox(&self) -> &Path {
        &self.sandbox
    }

    /// Files outside the store when the harness started.
    pub fn outside_before(&self) -> &BTreeMap<PathBuf, Vec<u8>> {
        &self.outside_before
    }

    /// Put memories in the store before any session (not acknowledged by a
    /// turn, but treated as acknowledged: they are the user's existing store).
    pub fn seed(&mut self, memories: &[Memory]) -> LabResult<()> {
        for m in memories {
            let file = self.store.save(m)?;
            self.ledger.ack(&m.name, &file);
        }
        Ok(())
    }

    /// Run sessions in order.
    pub fn run_sessions(&mut self, sessions: &[Session]) -> LabResult<()> {
        for s in sessions {
            self.messages.clear();
            for t in &s.turns {
                self.run_turn(t)?;
            }
        }
        Ok(())
    }

    /// Run one turn: recall, the tool calls, then (unless interrupted) the
    /// answer, extraction and, after a turn that stored something,
    /// consolidation.
    pub fn run_turn(&mut self, turn: &Turn) -> LabResult<()> {
        self.messages.push(super::transcript::text_message(
            Role::User,
            turn.user.clone(),
        ));
        self.recall_step(turn)?;
        self.tool_calls(turn)?;
        if turn.interrupted {
            return Ok(());
        }
        self.messages.push(super::transcript::text_message(
            Role::Assistant,
            turn.assistant.clone(),
        ));
        // Consolidation only after a turn that really stored something.
        if self.extract_step(turn)? {
            self.consolidate_step(turn)?;
        }
        Ok(())
    }

    /// Recall for the turn's user message, counting how the selection went.
    fn recall_step(&mut self, turn: &Turn) -> LabResult<()> {
        let recall = recall_turn(
            &self.store,
            "/workspace",
            &self.messages,
            &turn.selector,
            &self.constants,
        )?;
        self.stats
            .system_prompts
            .add(format!("turn{}", self.stats.system_prompts.n + 1));
        let q = || recall.query.chars().take(24).collect::<String>();
        match recall.selection.path {
            SelectionPath::GarbageFallback => self.stats.garbage_fallbacks.add(q()),
            SelectionPath::GarbageEmpty => self.stats.garbage_empty_selections.add(q()),
            SelectionPath::KeywordFallback => self.stats.keyword_fallbacks.add(q()),
            SelectionPath::Model | SelectionPath::Skipped => {}
        }
        for f in &recall.cut_midway {
            self.stats.records_cut_midway.add(f.clone());
        }
        self.last_recall = Some(recall);
        self.last_extract = None;
        Ok(())
    }

    /// The turn's tool calls, each a `tool_use` and its result.
    fn tool_calls(&mut self, turn: &Turn) -> LabResult<()> {
        for call in &turn.tool_calls {
            self.tool_seq += 1;
            let id = format!("toolu_{}", self.tool_seq);
            self.messages.push(Message::assistant(vec![Block::ToolUse {
                id: id.clone(),
                name: call.name.clone(),
                input: call.input.clone().into(),
            }]));
            let content = self.execute(call)?;
            self.messages
                .push(Message::tool_results(vec![(id, content)]));
        }
        Ok(())
    }

    /// Extraction after the answer; whether it stored anything.
    fn extract_step(&mut self, turn: &Turn) -> LabResult<bool> {
        let report = extract(
            &self.store,
            &self.messages,
            &turn.extractor,
            &self.constants,
        )?;
        for o in &report.outcomes {
            if let Err(Rejection::Refused(_)) = &o.result {
                self.stats.refused_writes.add(o.name.clone());
            }
        }
        for o in &report.outcomes {
            if let Ok(file) = &o.result {
                self.ledger.ack(&o.name, file);
            }
        }
        self.log.extend(report.log.clone());
        let stored_any = !report.stored.is_empty();
        self.last_extract = Some(report);
        Ok(stored_any)
    }

    /// One consolidation pass, counted and logged.
    fn consolidate_step(&mut self, turn: &Turn) -> LabResult<()> {
        let names_before: BTreeSet<String> = self
            .store
            .records()?
            .into_iter()
            .map(|r| r.memory.name)
            .collect();
        let c = consolidate(
            &self.store,
            &turn.consolidator,
            &turn.faults,
            &self.constants,
        )?;
        self.count_consolidation(&c, &names_before)?;
        self.log
            .extend(log_line(&c, self.constants.consolidate_input_char_limit));
        Ok(())
    }

    /// Count a consolidation's outcome; after a done pass, the names it
    /// merged away and the acknowledged files of what remains.
    fn count_consolidation(
        &mut self,
        c: &Consolidation,
        names_before: &BTreeSet<String>,
    ) -> LabResult<()> {
        match c {
            Consolidation::NotDue { .. } => {}
            Consolidation::Skipped {
                warned: false,
                chars,
            } => self
                .stats
                .consolidation_skipped_silently
                .add(format!("{chars}chars")),
            Consolidation::Skipped {
                warned: true,
                chars,
            } => self
                .stats
                .consolidation_skipped_warned
                .add(format!("{chars}chars")),
            Consolidation::Failed { error, rolled_back } => {
                self.stats
                    .consolidations_failed
                    .add(error.chars().take(40).collect::<String>());
                if *rolled_back {
                    self.stats
                        .rollbacks
                        .add(format!("pass{}", self.stats.consolidations_failed.n));
                }
            }
            Consolidation::Done { before, after, .. } => {
                self.stats
                    .consolidations_done
                    .add(format!("{}->{}", before.len(), after.len()));
                let now = self.store.records()?;
                let kept: BTreeSet<&String> = now.iter().map(|r| &r.memory.name).collect();
                for n in names_before.iter().filter(|n| !kept.contains(n)) {
                    self.ledger.merged.insert(n.clone());
                }
                for r in &now {
                    self.ledger.ack(&r.memory.name, &r.file);
                }
            }
        }
        Ok(())
    }

    /// Execute one tool call. Memory tools exist only when the model has been
    /// given write authority; they then bypass every extraction gate.
    fn execute(&mut self, call: &ToolCall) -> LabResult<String> {
        let memory_tool = call.name == MEMORY_WRITE_TOOL || call.name == MEMORY_DELETE_TOOL;
        if !memory_tool {
            return Ok(call.result.clone());
        }
        if !self.store.switches().model_has_write_tool {
            self.stats
                .model_write_attempts_refused
                .add(call.name.clone());
            return Ok(format!("Unknown: {}", call.name));
        }
        if call.name == MEMORY_WRITE_TOOL {
            let m: Memory = match serde_json::from_value(call.input.clone()) {
                Ok(m) => m,
                Err(e) => return Ok(format!("Error: {e}")),
            };
            return Ok(match self.store.save(&m) {
                Ok(file) => {
                    self.stats.model_writes.add(file.clone());
                    self.ledger.ack(&m.name, &file);
                    format!("Wrote memory {file}")
                }
                Err(LabError::Refused { message, .. }) => {
                    self.stats.refused_writes.add(m.name.clone());
                    format!("Error: {message}")
                }
                Err(e) => return Err(e),
            });
        }
        let name = call
            .input
            .get("name")
            .and_then(|v| v.as_str())
            .unwrap_or("");
        Ok(match self.store.delete(name) {
            Ok(true) => {
                self.stats.model_writes.add(format!("-{name}"));
                format!("Deleted memory {name}")
            }
            Ok(false) => format!("No memory {name}"),
            Err(LabError::Refused { message, .. }) => format!("Error: {message}"),
            Err(e) => return Err(e),
        })
    }
}
