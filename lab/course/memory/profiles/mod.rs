//! Other memory designs as store profiles, measured on the storage layer's
//! fault machinery (kill points, interleavings) instead of argued about.
//!
//! A profile is one design's rules, where they are readable in its
//! documentation or source: how a memory is written and when it counts as
//! acknowledged, what consolidation does, what recovery does after a kill,
//! and what recall shows. One module per profile, one registration line
//! each in [`PROFILES`]; each has its switches as a serde struct whose
//! `Default` is the design as documented, and a switch off is a
//! deliberately broken variant the tests use to prove a measure catches it.
//!
//! - [`add_only`]: Mem0 v3, ADD only (no update, no delete).
//! - [`git_backed`]: Letta MemFS, every edit a commit, consolidation when
//!   the context is compacted; [`git_remote`] its server copy (the push
//!   after a turn, the start-up pull).
//! - [`versioned`]: Anthropic Managed Agents memory stores, every change an
//!   immutable version, with the documented limits.
//! - [`two_stage`]: Codex memories, per-thread stage-1 outputs, then a
//!   consolidation that prefers newer guidance.
//! - [`memory_tool`]: Anthropic's client-side memory tool on ctxlab's
//!   reference implementation, the model's own commands as the writes.
//!
//! [`measures`] holds the checkers every profile runs through; [`sources`]
//! names where every constant and rule comes from (`lab memory-designs`).
//! Consolidation is scripted (deterministic, no model), as the lab's other
//! model roles are.

pub mod add_only;
pub mod git_backed;
pub mod git_remote;
pub mod measures;
pub mod memory_tool;
pub mod mutants;
pub mod repro;
pub mod sources;
pub mod two_stage;
pub mod versioned;

use std::io;
use std::path::Path;

use serde::Serialize;

use crate::storage::Shared;

/// One remembered fact: a line `- key: value` in the memory about `topic`.
/// A later fact with the same key supersedes it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Fact {
    /// What the memory file is about (a file name stem where the design
    /// keeps one file per topic).
    pub topic: String,
    /// What the fact is about; the same key later supersedes it.
    pub key: String,
    /// The fact itself.
    pub value: String,
}

impl Fact {
    /// A fact from its three parts.
    pub fn new(topic: &str, key: &str, value: &str) -> Fact {
        Fact {
            topic: topic.into(),
            key: key.into(),
            value: value.into(),
        }
    }

    /// The line a store writes for it.
    pub fn line(&self) -> String {
        format!("- {}: {}", self.key, self.value)
    }
}

/// The `(key, value)` of every `- key: value` line of a memory, in order
/// (other lines, a torn last line without its value included, are skipped).
pub fn lines_of(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.strip_prefix("- ")?.split_once(": "))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// What a write told the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ack {
    /// Stored: the model was told the memory is kept.
    Stored,
    /// Refused with this error (a documented limit): nothing was stored.
    Refused(String),
    /// The design tells its caller nothing (Codex: the session only writes
    /// its rollout; stage 1 runs at a later start-up).
    NotAcknowledged,
    /// Queued: the write is processed in the background (Mem0 platform's
    /// asynchronous add answers `"status": "PENDING"` with an event id).
    Pending,
}

/// A consolidation (or any multi-step memory job) cut into steps, so two of
/// them can be interleaved deterministically: each step is at most one
/// read-decide-write the design makes indivisible.
pub trait Job {
    /// Run the next step; `Ok(true)` when the job is finished.
    fn step(&mut self, fs: &Shared, root: &Path) -> io::Result<bool>;
    /// The facts this job told its session it kept (after it finished).
    fn acknowledged(&self) -> Vec<Fact>;
}

/// One memory design's rules over the storage layer, rooted at a directory.
pub trait StoreProfile {
    /// Short name (`add-only`).
    fn name(&self) -> &'static str;
    /// The design in one line, with where its rules were read.
    fn design(&self) -> &'static str;
    /// A session (`thread`) remembers `fact`. `Ack::Stored` is the
    /// acknowledgement the model acts on.
    fn remember(&self, fs: &Shared, root: &Path, thread: &str, fact: &Fact) -> io::Result<Ack>;
    /// One consolidation pass, where the design runs one (on compaction).
    fn consolidate(&self, fs: &Shared, root: &Path) -> io::Result<()>;
    /// What the next run does on open after a kill.
    fn recover(&self, fs: &Shared, root: &Path) -> io::Result<()>;
    /// Every fact recall shows the model, as `(key, value)`.
    fn recall(&self, fs: &Shared, root: &Path) -> io::Result<Vec<(String, String)>>;
    /// Versions the store keeps besides the current memories (commits,
    /// memory versions); `None` for a design that keeps none.
    fn versions(&self, fs: &Shared, root: &Path) -> Option<u64>;
    /// Whether the store is past one of the design's documented limits
    /// (it must never be: past a limit a write is refused).
    fn over_limit(&self, _fs: &Shared, _root: &Path) -> Option<String> {
        None
    }
    /// A consolidation carrying one thread's new facts, as a [`Job`]: what
    /// two sessions ending at once run concurrently.
    fn consolidator(&self, thread: &str, facts: Vec<Fact>) -> Box<dyn Job>;
    /// Why `measure` cannot fail for this design, where it cannot (the
    /// table then says "n/a" with this reason, never 0).
    fn not_applicable(&self, _measure: Measure) -> Option<&'static str> {
        None
    }
}

/// One of the measures every profile runs through ([`measures`]); each can
/// be one a design cannot fail, by construction ([`StoreProfile::not_applicable`]),
/// and otherwise has a mutant it catches ([`mutants::MUTANTS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    /// A kill at every storage operation ([`measures::fault_points`]).
    Kill,
    /// An I/O error at every storage operation.
    IoError,
    /// A full disk from every storage operation on.
    FullDisk,
    /// A superseded fact still shown after the consolidations ([`measures::stale`]).
    Stale,
    /// Sessions ending past a documented limit ([`measures::growth`]).
    Limits,
    /// Lost updates between two concurrent consolidators ([`measures::lost_updates`]).
    LostUpdates,
}

impl Measure {
    /// Every measure, in the report's column order.
    pub const ALL: [Measure; 6] = [
        Measure::Kill,
        Measure::IoError,
        Measure::FullDisk,
        Measure::Stale,
        Measure::Limits,
        Measure::LostUpdates,
    ];

    /// The name the listing prints (`kill`, `I/O error`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Measure::Kill => "kill",
            Measure::IoError => "I/O error",
            Measure::FullDisk => "full disk",
            Measure::Stale => "stale",
            Measure::Limits => "limits",
            Measure::LostUpdates => "lost updates",
        }
    }
}

/// Every profile at its documented defaults: one registration line each.
pub const PROFILES: &[fn() -> Box<dyn StoreProfile>] = &[
    || Box::new(add_only::AddOnly::default()),
    || Box::new(git_backed::GitBacked::default()),
    || Box::new(versioned::Versioned::default()),
    || Box::new(two_stage::TwoStage::default()),
    || Box::new(memory_tool::MemoryToolStore::default()),
];

/// Every registered profile.
pub fn profiles() -> Vec<Box<dyn StoreProfile>> {
    PROFILES.iter().map(|make| make()).collect()
}

/// The lowercase hex SHA-256 of `bytes` (content names, preconditions).
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The text of a file, or `None` when it is not there.
pub(crate) fn read_opt(fs: &Shared, path: &Path) -> io::Result<Option<String>> {
    match fs.read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Every `- key: value` line of every file in `dir`, file by file in
/// listing order: the recall of the profiles that keep one file per memory.
pub(crate) fn lines_in_files(fs: &Shared, dir: &Path) -> io::Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for name in fs.list(dir).unwrap_or_default() {
        if let Some(text) = read_opt(fs, &dir.join(name))? {
            out.extend(lines_of(&text));
        }
    }
    Ok(out)
}

/// Remove the temp files a killed atomic write left in `dir` (what every
/// profile's recovery does first).
pub(crate) fn remove_temps(fs: &Shared, dir: &Path) -> io::Result<()> {
    for name in fs.list(dir).unwrap_or_default() {
        if crate::storage::is_temp_name(&name) {
            fs.remove_file(&dir.join(name))?;
        }
    }
    Ok(())
}

/// One value per key: the newest (`prefer_newer`, the Codex rule and the
/// lab's scripted consolidator) or the oldest, keys in the order they
/// first appear.
pub fn merged(lines: &[(String, String)], prefer_newer: bool) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (k, v) in lines {
        match out.iter_mut().find(|(seen, _)| seen == k) {
            Some(slot) if prefer_newer => slot.1 = v.clone(),
            Some(_) => {}
            None => out.push((k.clone(), v.clone())),
        }
    }
    out
}

/// Lines as a memory file's text.
pub fn render_lines(lines: &[(String, String)]) -> String {
    lines.iter().map(|(k, v)| format!("- {k}: {v}\n")).collect()
}
