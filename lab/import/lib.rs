//! Importers for real agent transcripts: each known log format becomes one
//! session in the lab's message model.
//!
//! Every importer turns one file into an [`ImportedSession`]: the main
//! conversation as the model saw it, in the lab's [`Message`] model, plus
//! everything the importer had to skip, repair or refuse, each with its file
//! position.
//!
//! | format | extension | module |
//! |---|---|---|
//! | Claude Code session log, one record per line | `.jsonl` | [`claude_jsonl`] |
//! | JSON array of the same records | `.json` (sniffed) | [`chat_json`] |
//! | Anthropic Messages request (`{"messages": [...]}` or a bare array) | `.json` (sniffed) | [`anthropic`] |
//! | OpenAI chat messages (`tool_calls` / `role: tool`), incl. SWE-agent `.traj` `history` | `.traj`, `.json` (sniffed) | [`openai`] |
//! | an array of trajectory objects (`{"task_id", "traj": [messages…], …}`, tau-bench) | `.json` (sniffed) | [`trajectories`] |
//! | aider chat log (`# aider chat started at`, `#### ` user lines, `> ` tool lines), one session per header | `.aider.chat.history.md` (sniffed) | [`aider`] |
//! | Codex CLI rollout (`{"type", "payload"}` lines: `session_meta`, `response_item`, `event_msg`, `turn_context`, `compacted`) | `.jsonl` (sniffed) | [`codex`] |
//! | Gemini CLI chat recording (`session-*.jsonl`: metadata, message records, `$set`, `$rewindTo`; or the older `session-*.json` document), its compressions real compactions | `.jsonl`, `.json` (sniffed) | [`gemini`] |
//! | opencode session export (`{"info": {"id": "ses_…"}, "messages": [{"info", "parts"}…]}`), its `compaction` parts real compactions | `.json` (sniffed) | [`opencode`] |
//! | OpenHands trajectory (an array of serialized events, or `{"trajectory": [...]}`), its `condensation` summaries real compactions | `.json` (sniffed) | [`openhands`] |
//! | Roo Code / Cline task history (`api_conversation_history.json`: Anthropic-shaped messages with `ts`), Roo's `isSummary` messages real compactions | `.json` (sniffed) | [`roo_code`] |
//! | mini-swe-agent trajectory (`{"info", "messages", "trajectory_format"}`, actions as fenced bash) | `.traj.json` (sniffed) | [`mini_swe`] |
//! | Pi coding agent session (`session` header, then entries: a list, or a tree with `id` / `parentId`), its `compaction` entries real compactions | `.jsonl` (sniffed) | [`pi`] |
//! | Gemini CLI saved chat or checkpoint (Gemini API `contents`, bare or under `history`), its `<state_snapshot>` turns real compactions | `.json` (sniffed) | [`gemini_contents`] |
//! | ATIF trajectory (Harbor RFC 0001, `schema_version` `ATIF-v1.x`: system, user and agent steps, observations the results) | `.json` (sniffed) | [`atif`] |
//!
//! The content decides, the extension only breaks ties ([`sniff`]); `--format-in`
//! ([`ImportOptions::format`]) forces a format.
//!
//! # Example
//!
//! A harness team reading its own logs: import, then look at what the
//! import had to repair before trusting the session.
//!
//! ```
//! use std::path::Path;
//! use ctxlab_import::{import_str, DiagnosticKind, ImportOptions, TranscriptFormat};
//!
//! // Two records of a Claude Code log: a prompt, and a reply whose tool
//! // call never got its result (the process was killed).
//! let log = r#"{"uuid":"u1","parentUuid":null,"type":"user","message":{"role":"user","content":"list the files"}}
//! {"uuid":"a1","parentUuid":"u1","type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}
//! "#;
//! let path = Path::new("demo.jsonl");
//! let format = TranscriptFormat::ClaudeJsonl;
//! let session = import_str(log, path, format, &ImportOptions::default()).unwrap();
//! // The prompt, the call, and a result synthesized so every call is answered.
//! assert_eq!(session.main.len(), 3);
//! let dangling = session.diagnostics_of(DiagnosticKind::DanglingToolUse);
//! assert_eq!(dangling.len(), 1);
//! assert_eq!(dangling[0].line, 2, "every repair names its line");
//!
//! // Strict: the same damage refuses the file, naming where and how to fix it.
//! let strict = ImportOptions { strict: true, ..ImportOptions::default() };
//! let err = import_str(log, path, format, &strict).unwrap_err();
//! assert!(err.to_string().contains("demo.jsonl:2"), "{err}");
//! ```
//!
//! # Damage policy
//!
//! Damaged input is never dropped silently. Each case is either a
//! [`Diagnostic`] (import goes on, the session says what happened) or a
//! [`LabError::Input`] (import stops), with the file, 1-based line and column:
//!
//! | damage | default | `strict` |
//! |---|---|---|
//! | invalid JSON in the middle of the file | `LabError::Input` | same |
//! | cut last line / truncated array (JSON ends early) | [`DiagnosticKind::Truncated`]; everything before it is kept, import stops there | `LabError::Input` |
//! | `tool_use` with no result | [`DiagnosticKind::DanglingToolUse`]; a `tool_result` with content [`MISSING_RESULT`] is synthesized in the next user message | `LabError::Input` |
//! | `tool_result` answering no `tool_use` of the message before it | [`DiagnosticKind::OrphanToolResult`]; the block is removed (so pair invariants stay checkable) | `LabError::Input` |
//! | unknown record type / role / block type | [`DiagnosticKind::UnknownRecordType`] / [`DiagnosticKind::UnknownRole`] / [`DiagnosticKind::UnknownBlockType`], counted in `skipped`; unknown blocks become a text placeholder | `LabError::Input` |
//! | record that is valid JSON but not the expected shape | [`DiagnosticKind::InvalidRecord`], skipped | `LabError::Input` |
//! | conversation branches not on the main chain | [`DiagnosticKind::DetachedChain`] (informational, kept in `detached`) | same (not an error) |
//!
//! `//` comment lines in `.jsonl` files are skipped explicitly and counted in
//! [`FileStats::comment_lines`].
//!
//! Diagnostic messages name record types, ids and counts only, never
//! transcript text, so they may be printed; snapshots hold only
//! [`ImportSummary`], which is counts.
//!
//! # Real compactions
//!
//! `real_compactions` lists the indices in `main` where the recorded session
//! compacted: a Claude Code `system` record with `subtype: compact_boundary`
//! (the next message), a message with `isCompactSummary`, or a user message
//! starting with "This session is being continued from a previous
//! conversation". The chain is followed across such a point into the
//! pre-compaction history, so `main` is the whole session. `type: summary`
//! records are *not* compactions: Claude Code writes them as session titles
//! for its resume list (short `summary` + `leafUuid`, e.g. four in one file
//! with no compaction at all); they are counted in `skipped["summary"]`.

// The ground floor's modules under the names this crate's code has always
// used (`crate::message::…`); private, so they are no part of this API.
use ctxlab_core::{error, input, message, pyjson, render};

pub mod generate;
pub mod tokens;

pub mod aider;
pub mod anthropic;
pub mod artefacts;
pub mod atif;
pub mod chat_json;
pub mod claude_jsonl;
pub mod claude_trace;
pub mod codex;
pub mod corpus;
pub mod demands;
pub mod format;
pub mod format_list;
pub mod gemini;
pub mod gemini_contents;
pub mod goose;
pub mod goose_db;
mod lines;
pub mod member_source;
pub mod mini_swe;
pub mod openai;
pub mod opencode;
pub mod opencode_db;
pub mod opencode_storage;
pub mod openhands;
pub mod openhands_events;
pub mod parquet_rows;
pub mod pi;
pub mod recorded;
mod repair;
pub mod roo_code;
pub mod sniff;
pub mod sqlite_check;
pub mod tar_index;
mod task_ui;
pub mod text_action;
pub mod times;
pub mod trajectories;

mod claude_records;
mod readback;
mod stream;
mod subagents;

pub(crate) use repair::repair_pairs;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use claude_records::Backing;
use readback::LazyMain;

use serde::Serialize;

use crate::error::{LabError, LabResult};
use crate::message::{estimate_chars, message_chars, Block, Message, Role};

/// Content of a `tool_result` synthesized for a `tool_use` that has none.
pub const MISSING_RESULT: &str = "[missing result]";

pub use format_list::TranscriptFormat;

/// How the recorded harness wrote its actions, so an export can restore it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionShape {
    /// As tool calls and tool results (the lab's own shape).
    #[default]
    ToolCalls,
    /// As text: each action was a fenced block in the reply and its result
    /// the next user message. The importer added a `tool_use` with a
    /// [`text_action::TEXT_ACTION_ID_PREFIX`] id after the reply's text and
    /// wrapped that user message's text in the `tool_result` answering it.
    TextActions,
}

impl TranscriptFormat {
    /// opencode's export or its storage: one product, one compaction shape.
    pub fn is_opencode(self) -> bool {
        matches!(
            self,
            TranscriptFormat::OpenCode | TranscriptFormat::OpenCodeStorage
        )
    }
}

/// How to import.
#[derive(Debug, Clone, Copy, Default)]
pub struct ImportOptions {
    /// Turn every damage diagnostic into a [`LabError::Input`] (CLI `--strict`).
    pub strict: bool,
    /// Skip detection and read the file as this format.
    pub format: Option<TranscriptFormat>,
}

impl ImportOptions {
    /// The options of `--strict` and `--format-in NAME` (clap has already
    /// refused an unknown name).
    pub fn from_flags(strict: bool, format_in: Option<TranscriptFormat>) -> Self {
        ImportOptions {
            strict,
            format: format_in,
        }
    }
}

/// What went wrong or was repaired, for diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DiagnosticKind {
    /// The file ends inside a record (cut last line, unterminated array).
    Truncated,
    /// A `tool_use` had no `tool_result`; one was synthesized.
    DanglingToolUse,
    /// A `tool_result` answered no `tool_use` of the preceding message; it was removed.
    OrphanToolResult,
    /// A record `type` the importer does not know.
    UnknownRecordType,
    /// A message role the importer does not know.
    UnknownRole,
    /// A content block type the importer does not know.
    UnknownBlockType,
    /// Valid JSON that is not a record of the expected shape.
    InvalidRecord,
    /// Tool-call arguments that are not valid JSON (kept as a string).
    BadToolArguments,
    /// A chain of non-sidechain messages not reachable from the main leaf.
    DetachedChain,
    /// Two records share one uuid (the later one wins).
    DuplicateUuid,
    /// A record names a parent that does not exist.
    MissingParent,
    /// A chain cut off the main conversation holds the file's first message:
    /// the conversation's start is missing from what is replayed.
    DetachedStart,
    /// No main conversation: every message record is a sidechain, and a
    /// sidechain is replayed in its place (informational).
    SidechainOnly,
    /// A text-action harness's observation after a reply with no action.
    ObservationWithoutAction,
}

impl DiagnosticKind {
    /// Stable snake_case name.
    pub fn name(self) -> &'static str {
        match self {
            DiagnosticKind::Truncated => "truncated",
            DiagnosticKind::DanglingToolUse => "dangling_tool_use",
            DiagnosticKind::OrphanToolResult => "orphan_tool_result",
            DiagnosticKind::UnknownRecordType => "unknown_record_type",
            DiagnosticKind::UnknownRole => "unknown_role",
            DiagnosticKind::UnknownBlockType => "unknown_block_type",
            DiagnosticKind::InvalidRecord => "invalid_record",
            DiagnosticKind::BadToolArguments => "bad_tool_arguments",
            DiagnosticKind::DetachedChain => "detached_chain",
            DiagnosticKind::DuplicateUuid => "duplicate_uuid",
            DiagnosticKind::MissingParent => "missing_parent",
            DiagnosticKind::DetachedStart => "detached_start",
            DiagnosticKind::SidechainOnly => "sidechain_only",
            DiagnosticKind::ObservationWithoutAction => "observation_without_action",
        }
    }

    /// Is this damage (an error under `strict`) rather than information?
    pub fn is_damage(self) -> bool {
        !matches!(
            self,
            DiagnosticKind::DetachedChain | DiagnosticKind::SidechainOnly
        )
    }

    fn fix(self) -> &'static str {
        match self {
            DiagnosticKind::Truncated => "the file was cut while being written; restore the full file or drop --strict to import what precedes the cut",
            DiagnosticKind::DanglingToolUse => "the tool call has no result in the file; drop --strict to synthesize a \"[missing result]\" result",
            DiagnosticKind::OrphanToolResult => "the tool result answers no call of the message before it; drop --strict to remove it",
            DiagnosticKind::UnknownRecordType | DiagnosticKind::UnknownRole | DiagnosticKind::UnknownBlockType => "the importer does not know this kind; drop --strict to count and skip it",
            DiagnosticKind::InvalidRecord => "the record is valid JSON but not the expected shape; fix or remove the record, or drop --strict to skip it",
            DiagnosticKind::BadToolArguments => "tool-call arguments must be a JSON string holding JSON; drop --strict to keep them as a plain string",
            DiagnosticKind::DuplicateUuid | DiagnosticKind::MissingParent | DiagnosticKind::DetachedStart => "the record chain is inconsistent; drop --strict to import the chain that can be followed",
            DiagnosticKind::ObservationWithoutAction => "the reply before the observation holds no single fenced action (a message is missing or was edited); restore the file, or drop --strict to keep the observation as user text",
            DiagnosticKind::DetachedChain | DiagnosticKind::SidechainOnly => "informational",
        }
    }
}

/// One thing the importer noticed, with its position in the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// 1-based line, 0 when unknown.
    pub line: usize,
    /// 1-based column, 0 when unknown.
    pub column: usize,
    /// What kind of thing.
    pub kind: DiagnosticKind,
    /// What was found (record types, ids and counts only; never transcript text).
    pub message: String,
    /// The file the position is in, when not the session's own file (a
    /// message or part file of an opencode storage directory).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
}

/// Counts over every record of the file, main chain or not.
///
/// These are the numbers the transcripts README table lists.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FileStats {
    /// Records (JSON lines / array elements) read, comments excluded.
    pub records: usize,
    /// Records that carry a message (Claude Code `user`/`assistant`, or every
    /// message of the Anthropic / OpenAI formats, system messages included).
    pub message_records: usize,
    /// `tool_use` blocks / OpenAI `tool_calls` in the whole file.
    pub tool_uses: usize,
    /// `tool_result` blocks / `role: tool` messages in the whole file.
    pub tool_results: usize,
    /// Largest flattened `tool_result` text, in characters.
    pub largest_tool_result_chars: usize,
    /// `//` comment lines skipped (`.jsonl` only).
    pub comment_lines: usize,
}

/// One real compaction of the recorded session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RealCompaction {
    /// Index in `main` of the first message of the continued context (the summary).
    pub at: usize,
    /// `compactMetadata.trigger` of the boundary record (`auto` / `manual`), when recorded.
    pub trigger: Option<String>,
    /// `compactMetadata.preTokens`: the context in tokens when it compacted, when recorded.
    pub pre_tokens: Option<u64>,
    /// A truncation that left no summary (Cline's deleted range): the
    /// inclusive range of `main` indices the product stopped sending. What
    /// it kept is every message outside it; `at` is then the first reply
    /// to a request sent without them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dropped: Option<[usize; 2]>,
    /// The `main` index of the first message the product kept after it,
    /// where the log names it (Pi's `firstKeptEntryIndex` /
    /// `firstKeptEntryId`): its context after the compaction is the summary,
    /// `main[first_kept..at]`, then what follows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_kept: Option<usize>,
}

impl RealCompaction {
    /// `138 (auto, 156953 tok)`, `138 (manual)`, `138`; a truncation adds
    /// what it dropped (`41 (truncation, 160512 tok, dropped 2-37)`).
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(t) = &self.trigger {
            parts.push(t.clone());
        }
        if let Some(p) = self.pre_tokens {
            parts.push(format!("{p} tok"));
        }
        if let Some([first, last]) = self.dropped {
            parts.push(format!("dropped {first}-{last}"));
        }
        if parts.is_empty() {
            self.at.to_string()
        } else {
            format!("{} ({})", self.at, parts.join(", "))
        }
    }
}

/// One imported transcript: what replay (and the policy engine) consumes.
///
/// `main`, `main_lines` and `main_sent_chars` run parallel. A file holds one
/// session, except a trajectory array (one per element, see `label`).
#[derive(Debug, Clone)]
pub struct ImportedSession {
    /// The file read.
    pub source: PathBuf,
    /// Name in reports: the file name, or `FILE#INDEX task ID` for one
    /// trajectory of a trajectory array.
    pub label: String,
    /// Its format.
    pub format: TranscriptFormat,
    /// System prompts found (not part of `main`; the lab's model has no system role).
    pub system: Vec<String>,
    /// The main conversation, in order, pairs repaired.
    pub main: Vec<Message>,
    /// 1-based source line of the (first) record behind each `main` message
    /// (0 for messages the importer synthesized).
    pub main_lines: Vec<usize>,
    /// 1-based column where that record starts (0 for messages the importer
    /// synthesized; empty when the importer does not record it). With
    /// `main_lines` it tells records apart whatever the layout: every record
    /// of a one-line `chat.json` is on line 1 ([`ImportedSession::main_place`]).
    pub main_columns: Vec<usize>,
    /// When each `main` message was written, in milliseconds since the
    /// session's first recorded time (`None` for a message without one);
    /// empty when the log records no times. Time-based rules (an idle gap,
    /// the prompt cache's TTL) read it.
    pub main_times_ms: Vec<Option<u64>>,
    /// The course's size of each `main` message as recorded:
    /// `len(json.dumps(message, default=str, ensure_ascii=False))` of the
    /// message as the file holds it (image data, thinking signatures,
    /// `is_error`, list-shaped result contents included), which the lab's
    /// message model leaves out; see [`sent_chars`].
    pub main_sent_chars: Vec<usize>,
    /// When every message record is a sidechain (a sub-agent log on its own),
    /// `main` is the longest sidechain and this is its index in `sidechains`.
    pub main_from_sidechain: Option<usize>,
    /// Sidechain conversations (Claude Code sub-agents), one per chain root, in file order.
    pub sidechains: Vec<Vec<Message>>,
    /// Where each sidechain's messages came from (parallel to `sidechains`):
    /// a subagent replayed as a session of its own needs its lines (to pair
    /// replies with recorded requests), times and recorded sizes.
    pub(crate) sidechain_origins: Vec<Vec<Origin>>,
    /// For a subagent replayed as a session of its own
    /// ([`ImportedSession::subagent_sessions`]): its number among the log's
    /// subagent conversations, from 1 in file order; `None` for a log's
    /// main conversation and every other session.
    pub subagent: Option<usize>,
    /// Non-sidechain chains not reachable from the main leaf (e.g. an earlier
    /// conversation in the same file), in file order.
    pub detached: Vec<Vec<Message>>,
    /// Indices in `main` where the real session compacted: the index of the
    /// compaction summary message (the first message of the continued context).
    pub real_compactions: Vec<usize>,
    /// The same compactions with their recorded `compactMetadata`.
    pub real_compaction_meta: Vec<RealCompaction>,
    /// `main` starts with a compaction summary whose history is not in the
    /// file: the session compacted before this file begins.
    pub starts_with_summary: bool,
    /// Records that are not messages, by record type (and unknown ones).
    pub skipped: BTreeMap<String, usize>,
    /// Everything noticed, in file order of detection; at most
    /// [`SAMPLES_PER_KIND`] per kind (the rest are counted in `suppressed`).
    pub diagnostics: Vec<Diagnostic>,
    /// Diagnostics beyond the first [`SAMPLES_PER_KIND`] of their kind, counted, by kind name.
    pub suppressed: BTreeMap<String, usize>,
    /// Whole-file counts.
    pub stats: FileStats,
    /// How the harness wrote its actions (text actions were imported as tool calls).
    pub action_shape: ActionShape,
    /// The product's own per-call token counts, where its log records them
    /// (aider's `> Tokens: N sent, M received.` lines), in file order.
    pub recorded_tokens: Vec<aider::RecordedTokens>,
    /// Indices in `main` of messages holding a tool output the product
    /// itself masked (Gemini CLI's `<tool_output_masked>`), ascending.
    pub product_masked: Vec<usize>,
    /// The main conversation left in its file ([`import_file_sessions_lazily`]):
    /// `main` is then empty and [`ImportedSession::main_messages`] reads it.
    pub(crate) lazy_main: Option<Arc<LazyMain>>,
}

/// The messages of a session's main conversation, in order: from `main`,
/// or read from the file one at a time when the import left them there.
pub struct MainMessages<'a> {
    inner: MainInner<'a>,
}

enum MainInner<'a> {
    Held(std::slice::Iter<'a, Message>),
    Lazy(Box<readback::MainStream>),
}

impl Iterator for MainMessages<'_> {
    type Item = LabResult<Message>;

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.inner {
            MainInner::Held(it) => it.next().cloned().map(Ok),
            MainInner::Lazy(stream) => stream.next(),
        }
    }
}

/// Counts-only view of an [`ImportedSession`], safe to print and snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImportSummary {
    /// Format name.
    pub format: TranscriptFormat,
    /// Whole-file counts.
    pub stats: FileStats,
    /// System prompts found.
    pub system_prompts: usize,
    /// Messages in `main`.
    pub main_messages: usize,
    /// Assistant messages in `main` (= model calls).
    pub main_assistant_messages: usize,
    /// `tool_use` blocks in `main`.
    pub main_tool_uses: usize,
    /// `tool_result` blocks in `main`.
    pub main_tool_results: usize,
    /// `thinking` blocks in `main`.
    pub main_thinking_blocks: usize,
    /// `image` blocks in `main`.
    pub main_images: usize,
    /// Size of `main` in the lab's message model (what compaction measures), in characters.
    pub main_chars: usize,
    /// The course's size estimate of `main` as recorded ([`sent_chars`]), in characters.
    pub main_sent_chars: usize,
    /// The session compacted before the file begins.
    pub starts_with_summary: bool,
    /// `main` is a sidechain (no main conversation in the file).
    pub main_from_sidechain: bool,
    /// Sidechain conversations.
    pub sidechains: usize,
    /// Messages over all sidechains.
    pub sidechain_messages: usize,
    /// Detached chains.
    pub detached_chains: usize,
    /// Messages over all detached chains.
    pub detached_messages: usize,
    /// Where the real session compacted (indices in `main`).
    pub real_compactions: Vec<usize>,
    /// The same, with trigger and pre-compaction tokens when recorded.
    pub real_compaction_meta: Vec<RealCompaction>,
    /// Skipped record types and counts.
    pub skipped: BTreeMap<String, usize>,
    /// Diagnostics by kind.
    pub diagnostics: BTreeMap<String, usize>,
}

impl ImportedSession {
    fn new(source: &Path, format: TranscriptFormat) -> Self {
        ImportedSession {
            source: source.to_path_buf(),
            label: source
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            format,
            system: Vec::new(),
            main: Vec::new(),
            main_lines: Vec::new(),
            main_columns: Vec::new(),
            main_times_ms: Vec::new(),
            main_sent_chars: Vec::new(),
            main_from_sidechain: None,
            sidechains: Vec::new(),
            sidechain_origins: Vec::new(),
            subagent: None,
            detached: Vec::new(),
            real_compactions: Vec::new(),
            real_compaction_meta: Vec::new(),
            starts_with_summary: false,
            skipped: BTreeMap::new(),
            diagnostics: Vec::new(),
            suppressed: BTreeMap::new(),
            stats: FileStats::default(),
            action_shape: ActionShape::ToolCalls,
            recorded_tokens: Vec::new(),
            product_masked: Vec::new(),
            lazy_main: None,
        }
    }

    /// The main conversation's messages, in order (each a copy), whether
    /// held in `main` or left in the file; a file that cannot be read again
    /// gives an error item.
    pub fn main_messages(&self) -> MainMessages<'_> {
        let inner = match &self.lazy_main {
            Some(lazy) => MainInner::Lazy(Box::new(lazy.messages())),
            None => MainInner::Held(self.main.iter()),
        };
        MainMessages { inner }
    }

    /// Where the (first) record behind `main` message `i` starts: its
    /// 1-based (line, column), a key that does not depend on how the file
    /// is laid out (column 1 when the importer records lines only).
    pub fn main_place(&self, i: usize) -> Option<(usize, usize)> {
        let line = *self.main_lines.get(i)?;
        Some((line, self.main_columns.get(i).copied().unwrap_or(1)))
    }

    /// Messages in the main conversation (also when left in the file).
    pub fn main_len(&self) -> usize {
        self.main_sent_chars.len()
    }

    /// Characters of the first `tool_use` id of the main conversation.
    pub fn first_tool_use_chars(&self) -> Option<usize> {
        match &self.lazy_main {
            Some(lazy) => lazy.first_tool_use_chars,
            None => self
                .main
                .iter()
                .flat_map(|m| m.tool_use_ids())
                .next()
                .map(|id| id.chars().count()),
        }
    }

    /// The counts-only summary.
    pub fn summary(&self) -> ImportSummary {
        let count = |pred: &dyn Fn(&Block) -> bool| {
            self.main
                .iter()
                .flat_map(|m| m.blocks().iter())
                .filter(|b| pred(b))
                .count()
        };
        let mut diagnostics = self.suppressed.clone();
        for d in &self.diagnostics {
            *diagnostics.entry(d.kind.name().to_string()).or_insert(0) += 1;
        }
        ImportSummary {
            format: self.format,
            stats: self.stats.clone(),
            system_prompts: self.system.len(),
            main_messages: self.main.len(),
            main_assistant_messages: self
                .main
                .iter()
                .filter(|m| m.role == Role::Assistant)
                .count(),
            main_tool_uses: count(&|b| matches!(b, Block::ToolUse { .. })),
            main_tool_results: count(&|b| matches!(b, Block::ToolResult { .. })),
            main_thinking_blocks: count(&|b| matches!(b, Block::Thinking { .. })),
            main_images: count(&|b| matches!(b, Block::Image { .. })),
            main_chars: estimate_chars(&self.main),
            main_sent_chars: sent_chars(&self.main_sent_chars),
            starts_with_summary: self.starts_with_summary,
            main_from_sidechain: self.main_from_sidechain.is_some(),
            sidechains: self.sidechains.len(),
            sidechain_messages: self.sidechains.iter().map(Vec::len).sum(),
            detached_chains: self.detached.len(),
            detached_messages: self.detached.iter().map(Vec::len).sum(),
            real_compactions: self.real_compactions.clone(),
            real_compaction_meta: self.real_compaction_meta.clone(),
            skipped: self.skipped.clone(),
            diagnostics,
        }
    }

    /// Diagnostics of one kind.
    pub fn diagnostics_of(&self, kind: DiagnosticKind) -> Vec<&Diagnostic> {
        self.diagnostics.iter().filter(|d| d.kind == kind).collect()
    }

    /// One printable line per diagnostic: `file:line:column: kind: message`,
    /// then one line per kind that had more than [`SAMPLES_PER_KIND`].
    pub fn diagnostic_lines(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .diagnostics
            .iter()
            .map(|d| {
                format!(
                    "{}:{}:{}: {}: {}",
                    d.file.as_deref().unwrap_or(&self.source).display(),
                    d.line,
                    d.column,
                    d.kind.name(),
                    d.message
                )
            })
            .collect();
        for (kind, n) in &self.suppressed {
            out.push(format!(
                "{}: {kind}: {n} more like the {SAMPLES_PER_KIND} above, not shown",
                self.source.display()
            ));
        }
        out
    }

    /// The refusal for a session with nothing to replay: `no messages in FILE`,
    /// with what the file held instead.
    pub fn require_messages(&self) -> LabResult<()> {
        if self.main_len() > 0 {
            return Ok(());
        }
        let held = if self.stats.records == 0 {
            "no records".to_string()
        } else {
            format!(
                "{} record(s), none a user or assistant message on a chain",
                self.stats.records
            )
        };
        let truncated = self
            .diagnostics
            .iter()
            .any(|d| d.kind == DiagnosticKind::Truncated);
        Err(LabError::Input {
            file: self.source.clone(),
            line: 0,
            column: 0,
            message: format!(
                "no messages in {} ({held}{})",
                self.label,
                if truncated { "; the file is cut" } else { "" }
            ),
            fix:
                "pass a transcript that holds a conversation (or name its format with --format-in)"
                    .to_string(),
        })
    }

    fn skip(&mut self, record_type: &str) {
        *self.skipped.entry(record_type.to_string()).or_insert(0) += 1;
    }

    /// A message element whose role (`None`: no string `role`) is not one a
    /// reader takes: counted as skipped and reported at (line, column).
    pub(crate) fn skip_role(
        &mut self,
        role: Option<&str>,
        pos: (usize, usize),
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        let (line, column) = pos;
        match role {
            Some(other) => {
                self.skip(&format!("role:{other}"));
                sink.report(
                    line,
                    column,
                    DiagnosticKind::UnknownRole,
                    format!("unknown role `{other}`; counted and skipped"),
                )
            }
            None => {
                self.skip("(no role)");
                sink.report(
                    line,
                    column,
                    DiagnosticKind::InvalidRecord,
                    "message has no string `role`; skipped".into(),
                )
            }
        }
    }
}

/// Diagnostics kept per kind; the rest are counted only, so a flood of one
/// repeated damage (a log with thousands of duplicate uuids) prints a few
/// samples and a count instead of a line each.
pub const SAMPLES_PER_KIND: usize = 5;

/// The course's size estimate of messages whose recorded sizes are `sizes`:
/// `len(json.dumps(messages))` = brackets, `", "` separators and the messages.
pub fn sent_chars(sizes: &[usize]) -> usize {
    2 + sizes.len().saturating_sub(1) * 2 + sizes.iter().sum::<usize>()
}

/// Collects diagnostics and enforces `strict`.
pub(crate) struct Sink<'a> {
    pub(crate) source: &'a Path,
    /// The file positions are in while it is not `source` (a reader of
    /// several files sets it for each).
    pub(crate) file: Option<PathBuf>,
    pub(crate) strict: bool,
    pub(crate) diagnostics: Vec<Diagnostic>,
    /// Every diagnostic reported, kept or not, by kind.
    pub(crate) counts: BTreeMap<DiagnosticKind, usize>,
}

impl<'a> Sink<'a> {
    /// Record a diagnostic; under `strict`, damage becomes an error.
    pub(crate) fn report(
        &mut self,
        line: usize,
        column: usize,
        kind: DiagnosticKind,
        message: String,
    ) -> LabResult<()> {
        if self.strict && kind.is_damage() {
            // Messages read "what was found; what the repair did": under
            // `strict` nothing was repaired, so only the finding is reported.
            let found = message.split("; ").next().unwrap_or(&message);
            return Err(LabError::Input {
                file: self.file().to_path_buf(),
                line,
                column,
                message: format!("{}: {found}", kind.name()),
                fix: kind.fix().to_string(),
            });
        }
        let n = self.counts.entry(kind).or_insert(0);
        *n += 1;
        if *n <= SAMPLES_PER_KIND {
            self.diagnostics.push(Diagnostic {
                line,
                column,
                kind,
                message,
                file: self.file.clone(),
            });
        }
        Ok(())
    }

    /// The file positions are in now.
    pub(crate) fn file(&self) -> &Path {
        self.file.as_deref().unwrap_or(self.source)
    }

    /// A sink whose diagnostics nobody reads: for a second reading of input
    /// whose diagnostics the first reading already reported.
    pub(crate) fn scratch() -> Sink<'static> {
        Sink::new(Path::new(""), false)
    }

    /// An empty sink for input read from `source`.
    pub(crate) fn new(source: &'a Path, strict: bool) -> Sink<'a> {
        Sink {
            source,
            file: None,
            strict,
            diagnostics: Vec::new(),
            counts: BTreeMap::new(),
        }
    }

    /// A fresh sink for the same file and strictness (one per trajectory).
    pub(crate) fn fork(&self) -> Sink<'a> {
        Sink::new(self.source, self.strict)
    }

    /// Hand the diagnostics to `session`: the kept ones and the counts of the rest.
    pub(crate) fn finish_into(self, session: &mut ImportedSession) {
        session.diagnostics = self.diagnostics;
        session.suppressed = self
            .counts
            .into_iter()
            .filter(|(_, n)| *n > SAMPLES_PER_KIND)
            .map(|(k, n)| (k.name().to_string(), n - SAMPLES_PER_KIND))
            .collect();
    }

    /// A hard input error at a position.
    pub(crate) fn error(&self, line: usize, column: usize, message: String, fix: &str) -> LabError {
        LabError::Input {
            file: self.file().to_path_buf(),
            line,
            column,
            message,
            fix: fix.to_string(),
        }
    }
}

/// Guess the format: from the content first ([`format_list::sniff`]), then from
/// the extension (`.jsonl` Claude Code, `.traj` OpenAI, `.traj.json`
/// mini-swe-agent, `.aider.chat.history.md` aider), else
/// [`TranscriptFormat::Anthropic`].
///
/// The content wins because extensions lie: a `.jsonl` saved as `.json`, a
/// `chat.json` saved as `.jsonl`.
pub fn detect_format(path: &Path, head: &[u8]) -> TranscriptFormat {
    let sniffed = format_list::sniff(head);
    // Cline's history holds plain Anthropic messages: the task folder it
    // lies in (the UI rows beside it) makes it a task history.
    if sniffed == Some(TranscriptFormat::Anthropic) && roo_code::is_task_history(path) {
        return TranscriptFormat::RooCode;
    }
    sniffed
        .or_else(|| format_list::by_suffix(path))
        .unwrap_or(TranscriptFormat::Anthropic)
}

/// Import one file that holds one session, detecting its format unless
/// `options.format` is set. A trajectory array of several sessions is
/// refused here; [`import_file_sessions`] takes it.
/// `m` is the summary a product's compaction left in the history (Claude
/// Code's continuation message, a Gemini CLI `<state_snapshot>` turn): the
/// product's decision, not a request of the user's.
pub fn is_product_summary(m: &Message) -> bool {
    m.role == crate::message::Role::User
        && (claude_records::starts_with_continuation(&m.content)
            || gemini::holds_snapshot(&m.content))
}

/// Message `at` of `session` opens a compacted context the product made:
/// a product summary ([`is_product_summary`]), opencode's compaction prompt
/// in an opencode session (its text alone is a user's question elsewhere),
/// or the summary of a Codex rollout's `compacted` record, an OpenHands
/// condensation or a Roo Code condense (their text is the model's own, with
/// no marker the importer trusts alone).
pub fn opens_product_compaction(session: &ImportedSession, at: usize) -> bool {
    session.main.get(at).is_some_and(|m| {
        is_product_summary(m)
            || (session.format.is_opencode() && opencode::is_compaction_prompt(m))
            || (session.format.spec().compaction_by_index && session.real_compactions.contains(&at))
    })
}

/// Import one file (the first session of it).
pub fn import_file(path: &Path, options: &ImportOptions) -> LabResult<ImportedSession> {
    one_session(import_file_sessions(path, options)?, path)
}

/// Import every session of one file (one, or one per trajectory of a
/// trajectory array), detecting the format unless `options.format` is set.
pub fn import_file_sessions(
    path: &Path,
    options: &ImportOptions,
) -> LabResult<Vec<ImportedSession>> {
    crate::input::check_regular(path, "a transcript", crate::input::MAX_TRANSCRIPT_BYTES)?;
    file_sessions(path, options, false)
}

/// [`import_file_sessions`], leaving a Claude Code log's main conversation
/// in the file: `main` stays empty and [`ImportedSession::main_messages`]
/// reads it again (repaired, as imported) on every call, so a replay holds
/// one message at a time instead of the whole session. Sidechains and
/// detached chains are imported (their diagnostics reported) but not kept,
/// unless a sidechain stands in for a missing main conversation. Every other
/// field (sizes, lines, compactions, diagnostics) is as
/// [`import_file_sessions`] sets it; other formats are imported whole. The
/// file must not change until the session is dropped.
pub fn import_file_sessions_lazily(
    path: &Path,
    options: &ImportOptions,
) -> LabResult<Vec<ImportedSession>> {
    file_sessions(path, options, true)
}

/// [`import_file_sessions`], keeping the text of a log whose records a
/// replay reads again ([`recorded::records_usage`]: a Claude Code log's
/// usage, resumes, reply ids): the file is opened and read once, the
/// sessions imported from the bytes read, and the text handed back for the
/// recorded log (`None` for other formats, and for a log that is not UTF-8,
/// whose own read then names the error).
pub fn import_file_sessions_with_log(
    path: &Path,
    options: &ImportOptions,
) -> LabResult<(Vec<ImportedSession>, Option<String>)> {
    crate::input::check_regular(path, "a transcript", crate::input::MAX_TRANSCRIPT_BYTES)?;
    file_sessions_kept(path, options, false, true)
}

fn file_sessions(
    path: &Path,
    options: &ImportOptions,
    lazy: bool,
) -> LabResult<Vec<ImportedSession>> {
    Ok(file_sessions_kept(path, options, lazy, false)?.0)
}

/// Every session of the file at `path`; with `keep_log`, a log that records
/// usage is read whole once and its text returned beside its sessions.
fn file_sessions_kept(
    path: &Path,
    options: &ImportOptions,
    lazy: bool,
    keep_log: bool,
) -> LabResult<(Vec<ImportedSession>, Option<String>)> {
    crate::input::check_regular(path, "a transcript", crate::input::MAX_TRANSCRIPT_BYTES)?;
    let file = File::open(path).map_err(|e| LabError::io("opening transcript", path, e))?;
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let format = match options.format {
        Some(f) => f,
        None => {
            let head = reader
                .fill_buf()
                .map_err(|e| LabError::io("reading transcript", path, e))?;
            detect_format(path, head)
        }
    };
    if keep_log && recorded::records_usage(format) {
        // The whole text is kept for the recorded log anyway: the records'
        // contents are read from it, not read back from the file.
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut reader, &mut bytes)
            .map_err(|e| LabError::io("reading transcript", path, e))?;
        let read = sessions(bytes.as_slice(), path, format, options, None)?;
        return Ok((read, String::from_utf8(bytes).ok()));
    }
    // Message contents are read back from the file rather than kept.
    let backing = Backing {
        path: path.to_path_buf(),
        lazy,
    };
    Ok((
        sessions(reader, path, format, options, Some(backing))?,
        None,
    ))
}

/// Import one session from any buffered reader; `source` names it in
/// diagnostics and errors.
pub fn import_reader<R: BufRead>(
    reader: R,
    source: &Path,
    format: TranscriptFormat,
    options: &ImportOptions,
) -> LabResult<ImportedSession> {
    one_session(
        import_reader_sessions(reader, source, format, options)?,
        source,
    )
}

/// Import every session from a buffered reader.
pub fn import_reader_sessions<R: BufRead>(
    reader: R,
    source: &Path,
    format: TranscriptFormat,
    options: &ImportOptions,
) -> LabResult<Vec<ImportedSession>> {
    sessions(reader, source, format, options, None)
}

/// Every session from `reader`; `backing` is the file it reads from its start.
fn sessions<R: BufRead>(
    mut reader: R,
    source: &Path,
    format: TranscriptFormat,
    options: &ImportOptions,
    backing: Option<Backing>,
) -> LabResult<Vec<ImportedSession>> {
    (format.spec().read)(format::Input {
        reader: &mut reader,
        source,
        format,
        options,
        backing,
        sink: Sink::new(source, options.strict),
    })
}

/// An SQLite session store, goose's `sessions.db` or opencode's
/// `opencode.db`, read in place: SQLite reads a file, not a stream.
pub(crate) fn sqlite_database(
    source: &Path,
    is_file: bool,
    options: &ImportOptions,
) -> LabResult<Vec<ImportedSession>> {
    if !is_file {
        return Err(LabError::Input {
            file: source.to_path_buf(),
            line: 0,
            column: 0,
            message: "a session database (SQLite) can only be read from its own file, not from an archive or a stream".into(),
            fix: "unpack the database and give its path".into(),
        });
    }
    let db = goose_db::open(source)?;
    if opencode_db::is_opencode(&db) {
        return opencode_db::read(&db, source, options);
    }
    goose_db::read(&db, source, options)
}

fn one_session(mut sessions: Vec<ImportedSession>, source: &Path) -> LabResult<ImportedSession> {
    if sessions.len() == 1 {
        return Ok(sessions.remove(0));
    }
    Err(LabError::Input {
        file: source.to_path_buf(),
        line: 0,
        column: 0,
        message: format!(
            "the file holds {} sessions (a trajectory array), not one",
            sessions.len()
        ),
        fix: "import it with import_file_sessions (as `lab import` and `lab replay` do), one session per trajectory"
            .to_string(),
    })
}

/// Import from a string (tests, in-memory requests).
pub fn import_str(
    text: &str,
    source: &Path,
    format: TranscriptFormat,
    options: &ImportOptions,
) -> LabResult<ImportedSession> {
    import_reader(text.as_bytes(), source, format, options)
}

/// Where a message under construction came from, kept parallel to the
/// messages while importing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Origin {
    /// 1-based line of its (first) record; 0 when synthesized.
    pub(crate) line: usize,
    /// 1-based column of that record's first byte; 0 when synthesized.
    pub(crate) column: usize,
    /// The course's size of the message as recorded; 0 = same as the lab's.
    pub(crate) recorded: usize,
    /// `recorded` minus the lab's size, fixed before repairs change the message.
    pub(crate) extra: i64,
    /// When the record was written, milliseconds since the Unix epoch (logs
    /// that record it).
    pub(crate) time_ms: Option<u64>,
}

impl Origin {
    /// A record at (line, column) whose message the course sizes at `recorded`.
    pub(crate) fn at(line: usize, column: usize, recorded: usize) -> Self {
        Origin {
            line,
            column,
            recorded,
            extra: 0,
            time_ms: None,
        }
    }
}

/// `len(json.dumps({"role": role, "content": <content>}))` for a content of
/// `content_len` characters.
pub(crate) fn recorded_message_len(role: Role, content_len: usize) -> usize {
    let role = match role {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    // {"role": "<role>", "content": <content>}
    crate::pyjson::dumps_len(&serde_json::json!({ "role": role, "content": "" })) - 2 + content_len
}

/// Store repaired messages in `session.main` with their lines and recorded sizes.
pub(crate) fn store_main(session: &mut ImportedSession, main: Vec<Message>, origins: Vec<Origin>) {
    session.main_lines = origins.iter().map(|o| o.line).collect();
    session.main_columns = origins.iter().map(|o| o.column).collect();
    session.main_sent_chars = main
        .iter()
        .zip(&origins)
        .map(|(m, o)| (message_chars(m) as i64 + o.extra).max(0) as usize)
        .collect();
    session.main = main;
}

/// The common end of a whole-document import (Anthropic request, OpenAI chat):
/// report a cut document, repair pairs, and store the main conversation.
pub(crate) fn finish_document(
    session: &mut ImportedSession,
    mut main: Vec<Message>,
    mut origins: Vec<Origin>,
    truncated: Option<(usize, usize)>,
    sink: &mut Sink<'_>,
) -> LabResult<()> {
    report_cut(truncated, sink)?;
    repair_pairs(&mut main, &mut origins, sink)?;
    store_main(session, main, origins);
    Ok(())
}

/// Report a JSON document cut at `truncated` (line, column), if it is.
pub(crate) fn report_cut(truncated: Option<(usize, usize)>, sink: &mut Sink<'_>) -> LabResult<()> {
    if let Some((line, column)) = truncated {
        sink.report(
            line,
            column,
            DiagnosticKind::Truncated,
            "the JSON document ends early (file cut); messages before the cut are kept".into(),
        )?;
    }
    Ok(())
}

/// Check the pair invariant the repair establishes; returns the offending ids.
///
/// Every `tool_use` is answered by the next message, and every `tool_result`
/// answers a `tool_use` of the message before it.
pub fn unpaired_ids(messages: &[Message]) -> Vec<String> {
    let mut bad = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        if m.has_tool_use() {
            let answered: Vec<&str> = messages
                .get(i + 1)
                .map(|n| n.tool_result_ids())
                .unwrap_or_default();
            bad.extend(
                m.tool_use_ids()
                    .into_iter()
                    .filter(|id| !answered.contains(id))
                    .map(str::to_string),
            );
        }
        if m.is_tool_result() {
            let asked: Vec<&str> = if i > 0 {
                messages[i - 1].tool_use_ids()
            } else {
                Vec::new()
            };
            bad.extend(
                m.tool_result_ids()
                    .into_iter()
                    .filter(|id| !asked.contains(id))
                    .map(str::to_string),
            );
        }
    }
    bad
}

/// Flatten a `tool_result` `content` value (string, or array of text / image
/// blocks) into its text plus the images it carried.
pub(crate) fn flatten_tool_result(content: Option<&serde_json::Value>) -> (String, Vec<Block>) {
    use serde_json::Value as V;
    match content {
        None | Some(V::Null) => (String::new(), Vec::new()),
        Some(V::String(s)) => (s.clone(), Vec::new()),
        Some(V::Array(items)) => {
            let mut texts = Vec::new();
            let mut images = Vec::new();
            for item in items {
                match item.get("type").and_then(V::as_str) {
                    Some("text") => texts.push(
                        item.get("text")
                            .and_then(V::as_str)
                            .unwrap_or_default()
                            .to_string(),
                    ),
                    Some("image") | Some("image_url") => images.push(Block::Image {
                        source: image_source(item),
                    }),
                    _ => texts.push(item.to_string()),
                }
            }
            (texts.join("\n"), images)
        }
        Some(other) => (other.to_string(), Vec::new()),
    }
}

/// A short description of an image's source: its media type, else its source
/// kind. Never the bytes or the URL.
pub(crate) fn image_source(block: &serde_json::Value) -> String {
    let source = block.get("source");
    source
        .and_then(|s| s.get("media_type"))
        .and_then(|v| v.as_str())
        .or_else(|| source.and_then(|s| s.get("type")).and_then(|v| v.as_str()))
        .map(str::to_string)
        .unwrap_or_else(|| {
            if block.get("image_url").is_some() {
                "url".to_string()
            } else {
                "unknown".to_string()
            }
        })
}

/// Render import summaries (one row per file) as a table, Markdown or JSON.
pub fn render_summaries(rows: &[(String, ImportSummary)], format: crate::render::Format) -> String {
    if format == crate::render::Format::Json {
        return summaries_json(rows);
    }
    // render::table escapes `|` and control characters: a file name holding
    // them must neither end a Markdown cell nor drive the terminal.
    let cells = rows.iter().map(|(file, s)| summary_row(file, s)).collect();
    let mut out = crate::render::table(
        &SUMMARY_COLUMNS,
        cells,
        format == crate::render::Format::Markdown,
    );
    out.push_str(&format!("\n{SIZES_NOTE}\n"));
    out
}

/// The columns of the import table.
const SUMMARY_COLUMNS: [&str; 14] = [
    "file",
    "format",
    "records",
    "message records",
    "tool calls",
    "main msgs",
    "main tool calls",
    "main chars / sent",
    "sidechains (msgs)",
    "detached (msgs)",
    "real compactions @",
    "skipped",
    "diagnostics",
    "notes",
];

/// The summaries as one JSON array of `{file, summary}`.
fn summaries_json(rows: &[(String, ImportSummary)]) -> String {
    let v: Vec<serde_json::Value> = rows
        .iter()
        .map(|(file, s)| serde_json::json!({ "file": file, "summary": s }))
        .collect();
    let mut out = serde_json::to_string_pretty(&v).expect("summaries serialise");
    out.push('\n');
    out
}

/// One file's row of the import table, in [`SUMMARY_COLUMNS`] order.
fn summary_row(file: &str, s: &ImportSummary) -> Vec<String> {
    let join = |m: &BTreeMap<String, usize>| {
        if m.is_empty() {
            "-".to_string()
        } else {
            m.iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    vec![
        file.to_string(),
        s.format.name().to_string(),
        s.stats.records.to_string(),
        s.stats.message_records.to_string(),
        s.stats.tool_uses.to_string(),
        s.main_messages.to_string(),
        s.main_tool_uses.to_string(),
        format!("{} / {}", s.main_chars, s.main_sent_chars),
        format!("{} ({})", s.sidechains, s.sidechain_messages),
        format!("{} ({})", s.detached_chains, s.detached_messages),
        if s.real_compaction_meta.is_empty() {
            "-".to_string()
        } else {
            s.real_compaction_meta
                .iter()
                .map(RealCompaction::describe)
                .collect::<Vec<_>>()
                .join(", ")
        },
        join(&s.skipped),
        join(&s.diagnostics),
        summary_notes(s),
    ]
}

/// The line under the import table naming its two size estimates.
pub const SIZES_NOTE: &str = "main chars: len(json.dumps(messages)) of the lab's message model; sent: the course's len(json.dumps(messages, default=str, ensure_ascii=False)) of the messages as recorded (image data, thinking signatures, is_error, list-shaped contents included)";

fn summary_notes(s: &ImportSummary) -> String {
    let mut out = Vec::new();
    if s.starts_with_summary {
        out.push("starts with a summary (compacted before the file)");
    }
    if s.main_from_sidechain {
        out.push("no main conversation: main is a sidechain");
    }
    if out.is_empty() {
        "-".to_string()
    } else {
        out.join("; ")
    }
}

/// `lab import INPUT... [--strict] [--format-in F]`: one summary row per
/// session of each file, and one row per corpus (directory, glob or
/// archive, see [`corpus`]) in a second table; diagnostics on stderr. A file
/// that fails does not hide the others: every good row is printed, then the
/// errors, and the command fails with the gravest error's exit code. A
/// corpus member that is not a session is a warning only.
pub fn command(
    files: &[PathBuf],
    options: &ImportOptions,
    format: crate::render::Format,
) -> LabResult<String> {
    let mut rows = Vec::new();
    let mut corpora = Vec::new();
    let mut errors = Vec::new();
    for input in corpus::expand(files)? {
        if input.corpus {
            let mut warn = |line: String| eprintln!("warning: {line}");
            // A damaged archive or Parquet file is reported after the
            // table, which still counts everything else in the corpus.
            match corpus::summarise_on(&input, options, &mut warn, &mut errors) {
                Ok(summary) => corpora.push((input.name.clone(), summary)),
                Err(e) => errors.push(e),
            }
            continue;
        }
        for item in &input.items {
            let imported = corpus::for_each_member(item, options, false, |m| {
                for s in m.sessions? {
                    for d in s.diagnostic_lines() {
                        eprintln!("warning: {d}");
                    }
                    rows.push((s.label.clone(), s.summary()));
                }
                Ok(())
            });
            if let Err(e) = imported {
                errors.push(e);
            }
        }
    }
    let mut out = if rows.is_empty() {
        String::new()
    } else {
        render_summaries(&rows, format)
    };
    if !corpora.is_empty() {
        out.push_str(&corpus::render(&corpora, format));
    }
    match LabError::several(errors) {
        None => Ok(out),
        Some(e) => {
            use std::io::Write as _;
            let _ = std::io::stdout().write_all(out.as_bytes());
            Err(e)
        }
    }
}

/// A system prompt as text: a string, or text blocks joined by newlines.
pub(crate) fn system_text(v: Option<&serde_json::Value>) -> String {
    match v {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .filter_map(|b| b.get("text").and_then(serde_json::Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}
