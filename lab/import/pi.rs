//! Pi coding agent sessions (badlogic/pi-mono, `packages/coding-agent`):
//! `~/.pi/agent/sessions/…/*.jsonl`, one JSON entry per line, a `session`
//! header first.
//!
//! Two layouts, read at pi-mono 83378aad (`src/core/session-manager.ts`:
//! `migrateV1ToV2`, `buildSessionContext`; `src/core/messages.ts`:
//! `convertToLlm`, `bashExecutionToText`, the summary prefixes) and, for
//! the older one, at bd0d0676 (`src/session-manager.ts`:
//! `loadSessionFromEntries`):
//!
//! * **version 1** (no `version` in the header): a list. Entries have no
//!   ids; a `compaction` names the first entry it kept by its index in the
//!   file's entries, header included (`firstKeptEntryIndex`).
//! * **version 2 and 3**: a tree. Every entry has an `id` and a
//!   `parentId`; the conversation is the path from the last entry to the
//!   root (`buildSessionContext` with no leaf id); a `compaction` names
//!   its first kept entry by id (`firstKeptEntryId`). Entries off that
//!   path are abandoned branches: counted in `skipped["off_path"]` with one
//!   `detached_chain` note.
//!
//! Messages (`type: message`): `user` (a string or text / image blocks),
//! `assistant` (`text`, `thinking`, `toolCall {id, name, arguments}`; an
//! aborted or failed reply with no content is skipped, one with content
//! kept, its unanswered calls repaired like any other), `toolResult`
//! (`toolCallId`, text blocks; consecutive results are one user message
//! in the lab's model, as the Anthropic request Pi sends holds them),
//! `bashExecution` (a user's `!` command, sent as `bashExecutionToText`
//! unless `excludeFromContext`), `custom`, `branchSummary` and
//! `compactionSummary` (user text as `convertToLlm` writes them). Entries
//! `custom_message` and `branch_summary` are user messages too;
//! `thinking_level_change`, `model_change`, `custom`, `label` and
//! `session_info` are never sent and are counted in `skipped`.
//!
//! **Compactions.** Each `compaction` entry is a real compaction: its
//! summary, as Pi sends it (`COMPACTION_SUMMARY_PREFIX` + summary +
//! suffix, a user message), goes into `main` where the entry is, so
//! `main` is the whole session in file order;
//! [`RealCompaction::first_kept`](super::RealCompaction::first_kept) is the
//! `main` index of the first kept entry's message and `pre_tokens` the
//! entry's `tokensBefore`. A reply whose tool calls the compaction cut
//! off (Pi compacted at its `message_end`, before running them) has them
//! answered with `[missing result]` in a message of its own before the
//! summary. The log does not record whether it was
//! automatic, so `trigger` stays unset. Pi's context after it is the
//! summary, the kept messages before the entry, then what follows.
//!
//! Each assistant's `usage` (`input + cacheRead + cacheWrite` sent,
//! `output` received) goes into `recorded_tokens`: Pi's own trigger
//! counts from it (`calculateContextTokens`).
//!
//! Damage: a cut last line is `truncated`; a line that is not JSON is an
//! input error at its line:column; **an entry type Pi did not write at the
//! pinned commit is an input error (exit 3)**, not a skipped record: a
//! newer session format could carry context the replay would silently
//! miss. A message with no `role` or an unknown role is skipped with a
//! diagnostic; an unknown content block `unknown_block_type`.

use std::collections::HashMap;
use std::io::BufRead;

use serde_json::Value;

use super::aider::RecordedTokens;
use super::lines::{self, Rules};
use super::{finish_document, DiagnosticKind, ImportedSession, Origin, RealCompaction, Sink};
use crate::error::LabResult;
use crate::message::{Block, Message, Role};

/// `COMPACTION_SUMMARY_PREFIX` (`messages.ts`; `SUMMARY_PREFIX` in
/// version 1's `session-manager.ts`), byte for byte.
pub const COMPACTION_SUMMARY_PREFIX: &str =
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
/// `COMPACTION_SUMMARY_SUFFIX`, byte for byte.
pub const COMPACTION_SUMMARY_SUFFIX: &str = "\n</summary>";
/// `BRANCH_SUMMARY_PREFIX`, byte for byte.
pub const BRANCH_SUMMARY_PREFIX: &str =
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
/// `BRANCH_SUMMARY_SUFFIX`, byte for byte.
pub const BRANCH_SUMMARY_SUFFIX: &str = "</summary>";

/// Entry types Pi writes that never reach the model.
const SILENT: &[&str] = &[
    "thinking_level_change",
    "model_change",
    "custom",
    "label",
    "session_info",
];

/// Every entry type the pinned commit writes.
const KNOWN: &str = "session, message, compaction, branch_summary, custom_message, thinking_level_change, model_change, custom, label, session_info";

const RULES: Rules = Rules {
    comments: false,
    fix: "each line of a Pi session is one JSON entry (the `session` header first); repair or remove this line",
};

/// The user message Pi sends for a compaction summary.
pub fn summary_message(summary: &str) -> Message {
    Message::user_text(format!(
        "{COMPACTION_SUMMARY_PREFIX}{summary}{COMPACTION_SUMMARY_SUFFIX}"
    ))
}

/// `m` is a compaction summary as Pi sends it.
pub fn is_summary(m: &Message) -> bool {
    m.role == Role::User && m.text().starts_with(COMPACTION_SUMMARY_PREFIX)
}

/// One entry line.
struct Entry {
    line: usize,
    v: Value,
}

impl Entry {
    fn kind(&self) -> &str {
        self.v.get("type").and_then(Value::as_str).unwrap_or("")
    }
    fn str_of(&self, k: &str) -> Option<&str> {
        self.v.get(k).and_then(Value::as_str)
    }
}

/// A compaction found on the path, by file lines (the repair may move
/// `main` indices; lines do not move).
struct Found {
    summary_line: usize,
    first_kept_line: Option<usize>,
    tokens_before: Option<u64>,
}

/// Builds `main` from the path's entries.
#[derive(Default)]
struct Build {
    main: Vec<Message>,
    origins: Vec<Origin>,
    /// Tool results waiting to be one user message: blocks and the first's line.
    results: Option<(Vec<Block>, usize)>,
    compactions: Vec<Found>,
    /// (line of an assistant reply, sent, received).
    usage: Vec<(usize, u64, u64)>,
}

impl Build {
    fn flush(&mut self) {
        if let Some((blocks, line)) = self.results.take() {
            self.main.push(Message::user_blocks(blocks));
            self.origins.push(Origin::at(line, 1, 0));
        }
    }

    fn push(&mut self, m: Message, line: usize) {
        self.flush();
        self.main.push(m);
        self.origins.push(Origin::at(line, 1, 0));
    }
}

pub(crate) fn read<R: BufRead>(
    reader: R,
    session: &mut ImportedSession,
    sink: &mut Sink<'_>,
) -> LabResult<()> {
    let source = sink.source.to_path_buf();
    let mut entries = Vec::new();
    let end = lines::for_each(
        reader,
        &source,
        RULES,
        |b| serde_json::from_slice::<Value>(b),
        |v, at| {
            entries.push(Entry { line: at.line, v });
            Ok(())
        },
    )?;
    session.stats.records = entries.len();
    for e in &entries {
        let kind = e.kind();
        let known = matches!(
            kind,
            "session" | "message" | "compaction" | "branch_summary" | "custom_message"
        ) || SILENT.contains(&kind);
        if !known {
            let shown = if kind.is_empty() { "(none)" } else { kind };
            return Err(sink.error(
                e.line,
                1,
                format!("unknown Pi entry type `{shown}`"),
                &format!("Pi sessions hold the entry types {KNOWN}; this file was written by a newer Pi or is damaged: remove or convert the line, or import the session as a Pi export another tool reads"),
            ));
        }
    }
    let header = entries.iter().find(|e| e.kind() == "session");
    let version = header
        .and_then(|h| h.v.get("version"))
        .and_then(Value::as_u64)
        .unwrap_or(1);
    let path = if version >= 2 {
        tree_path(&entries, session, sink)?
    } else {
        (0..entries.len()).collect()
    };
    // Entry index → line, for firstKeptEntryIndex / firstKeptEntryId.
    let by_id: HashMap<&str, usize> = entries
        .iter()
        .enumerate()
        .filter_map(|(i, e)| e.str_of("id").map(|id| (id, i)))
        .collect();
    let mut b = Build::default();
    for &i in &path {
        let e = &entries[i];
        match e.kind() {
            "session" => session.skip("session"),
            "message" => message(e, &mut b, session, sink)?,
            "compaction" => {
                let summary = e.str_of("summary").unwrap_or_default();
                let first = match e.v.get("firstKeptEntryIndex").and_then(Value::as_u64) {
                    Some(ix) => Some(ix as usize),
                    None => e
                        .str_of("firstKeptEntryId")
                        .and_then(|id| by_id.get(id).copied()),
                };
                // The first kept entry's message: the first message entry at
                // or after it on the path.
                let first_kept_line = first.and_then(|f| {
                    path.iter()
                        .filter(|&&p| p >= f && p < i)
                        .map(|&p| &entries[p])
                        .find(|x| sends(x))
                        .map(|x| x.line)
                });
                if first.is_some() && first_kept_line.is_none() {
                    let msg = format!("compaction names a first kept entry ({}) that holds no message before it; the summary is kept", first.unwrap_or(0));
                    sink.report(e.line, 1, DiagnosticKind::InvalidRecord, msg)?;
                }
                b.flush();
                answer_cut_calls(&mut b, e.line, sink)?;
                b.push(summary_message(summary), e.line);
                b.compactions.push(Found {
                    summary_line: e.line,
                    first_kept_line,
                    tokens_before: e.v.get("tokensBefore").and_then(Value::as_u64),
                });
            }
            "branch_summary" => {
                let s = e.str_of("summary").unwrap_or_default();
                if s.is_empty() {
                    session.skip("branch_summary (empty)");
                } else {
                    let text = format!("{BRANCH_SUMMARY_PREFIX}{s}{BRANCH_SUMMARY_SUFFIX}");
                    b.push(Message::user_text(text), e.line);
                }
            }
            "custom_message" => {
                session.stats.message_records += 1;
                let blocks = user_content(e.v.get("content"), e.line, session, sink)?;
                b.push(Message::user_blocks(blocks), e.line);
            }
            other => session.skip(other),
        }
    }
    b.flush();
    let Build {
        main,
        origins,
        compactions,
        usage,
        ..
    } = b;
    finish_document(session, main, origins, end.truncated, sink)?;
    let index_of = |line: usize| session.main_lines.iter().position(|&l| l == line);
    for c in &compactions {
        let Some(at) = index_of(c.summary_line) else {
            continue;
        };
        let first_kept = c.first_kept_line.and_then(index_of);
        session.real_compactions.push(at);
        session.real_compaction_meta.push(RealCompaction {
            at,
            trigger: None,
            pre_tokens: c.tokens_before,
            dropped: None,
            first_kept,
        });
    }
    for &(line, sent, received) in &usage {
        if let Some(at) = index_of(line) {
            session.recorded_tokens.push(RecordedTokens {
                line,
                after_messages: at + 1,
                sent,
                sent_min: sent,
                sent_max: sent,
                received,
            });
        }
    }
    Ok(())
}

/// A compaction that cut a reply's tool calls off (the reply is the last
/// message before it): each call is answered with `[missing result]` in a
/// message of its own, before the summary. The repair would put them into
/// the next user message, the summary, which a policy replay drops with
/// the product's artefacts, leaving the calls unanswered.
fn answer_cut_calls(b: &mut Build, line: usize, sink: &mut Sink<'_>) -> LabResult<()> {
    let Some(last) = b.main.last().filter(|m| m.role == Role::Assistant) else {
        return Ok(());
    };
    let ids: Vec<String> = last
        .tool_use_ids()
        .into_iter()
        .map(str::to_string)
        .collect();
    if ids.is_empty() {
        return Ok(());
    }
    for id in &ids {
        let msg = format!(
            "tool_use `{id}` has no tool_result; synthesized \"{}\"",
            super::MISSING_RESULT
        );
        sink.report(line, 1, DiagnosticKind::DanglingToolUse, msg)?;
    }
    let results = ids
        .into_iter()
        .map(|id| (id, super::MISSING_RESULT.to_string()))
        .collect();
    b.main.push(Message::tool_results(results));
    b.origins.push(Origin::default());
    Ok(())
}

/// An entry that puts a message in the context (`getMessageFromEntry`).
fn sends(e: &Entry) -> bool {
    matches!(e.kind(), "message" | "custom_message" | "branch_summary")
}

/// The path from the last entry to the root, in order (`buildSessionContext`
/// with no leaf id): indices into `entries`, the header first.
fn tree_path(
    entries: &[Entry],
    session: &mut ImportedSession,
    sink: &mut Sink<'_>,
) -> LabResult<Vec<usize>> {
    let by_id: HashMap<&str, usize> = entries
        .iter()
        .enumerate()
        .filter_map(|(i, e)| e.str_of("id").map(|id| (id, i)))
        .collect();
    let mut on_path = vec![false; entries.len()];
    let mut path = Vec::new();
    let leaf = entries.iter().rposition(|e| e.kind() != "session");
    let mut cur = leaf;
    while let Some(i) = cur {
        if on_path[i] {
            let msg = "the parentId chain loops; the path is cut there".to_string();
            sink.report(entries[i].line, 1, DiagnosticKind::InvalidRecord, msg)?;
            break;
        }
        on_path[i] = true;
        path.push(i);
        cur = match entries[i].str_of("parentId") {
            Some(p) => match by_id.get(p) {
                Some(&j) => Some(j),
                None => {
                    let msg = format!("parentId `{p}` names no entry; the path starts here");
                    sink.report(entries[i].line, 1, DiagnosticKind::MissingParent, msg)?;
                    None
                }
            },
            None => None,
        };
    }
    path.reverse();
    if let Some(h) = entries.iter().position(|e| e.kind() == "session") {
        on_path[h] = true;
        path.insert(0, h);
    }
    let off: Vec<&Entry> = entries
        .iter()
        .zip(&on_path)
        .filter(|(_, &on)| !on)
        .map(|(e, _)| e)
        .collect();
    if let Some(first) = off.first() {
        *session.skipped.entry("off_path".into()).or_insert(0) += off.len();
        let msg = format!(
            "{} entr(y/ies) on branches other than the last entry's path; not replayed",
            off.len()
        );
        sink.report(first.line, 1, DiagnosticKind::DetachedChain, msg)?;
    }
    Ok(path)
}

/// One `message` entry.
fn message(
    e: &Entry,
    b: &mut Build,
    session: &mut ImportedSession,
    sink: &mut Sink<'_>,
) -> LabResult<()> {
    let Some(m) = e.v.get("message").filter(|m| m.is_object()) else {
        session.skip("(no message)");
        let msg = "message entry with no `message` object; skipped".to_string();
        return sink.report(e.line, 1, DiagnosticKind::InvalidRecord, msg);
    };
    let role = m.get("role").and_then(Value::as_str);
    let text_of = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or_default();
    match role {
        Some("user") | Some("custom") => {
            session.stats.message_records += 1;
            let blocks = user_content(m.get("content"), e.line, session, sink)?;
            if blocks.is_empty() {
                session.skip("user with no content");
                return Ok(());
            }
            b.push(Message::user_blocks(blocks), e.line);
        }
        Some("assistant") => {
            session.stats.message_records += 1;
            let blocks = assistant_content(m.get("content"), e.line, session, sink)?;
            let stop = text_of("stopReason");
            if blocks.is_empty() {
                session.skip(&format!("assistant with no content ({stop})"));
                return Ok(());
            }
            b.push(Message::assistant(blocks), e.line);
            // `getAssistantUsage`: aborted and failed replies carry no usage.
            if let Some(u) = m
                .get("usage")
                .filter(|_| stop != "aborted" && stop != "error")
            {
                let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
                let sent = n("input") + n("cacheRead") + n("cacheWrite");
                b.usage.push((e.line, sent, n("output")));
            }
        }
        Some("toolResult") => {
            session.stats.message_records += 1;
            let Some(id) = m.get("toolCallId").and_then(Value::as_str) else {
                session.skip("toolResult (no toolCallId)");
                let msg = "toolResult with no `toolCallId`; skipped".to_string();
                return sink.report(e.line, 1, DiagnosticKind::InvalidRecord, msg);
            };
            let content = texts(m.get("content"));
            session.stats.tool_results += 1;
            let largest = &mut session.stats.largest_tool_result_chars;
            *largest = (*largest).max(content.chars().count());
            let block = Block::ToolResult {
                tool_use_id: id.to_string(),
                content,
            };
            match &mut b.results {
                Some((blocks, _)) => blocks.push(block),
                None => b.results = Some((vec![block], e.line)),
            }
        }
        Some("bashExecution") => {
            session.stats.message_records += 1;
            if m.get("excludeFromContext").and_then(Value::as_bool) == Some(true) {
                session.skip("bashExecution (excluded)");
                return Ok(());
            }
            b.push(Message::user_text(bash_execution_text(m)), e.line);
        }
        Some("branchSummary") => {
            let text = format!(
                "{BRANCH_SUMMARY_PREFIX}{}{BRANCH_SUMMARY_SUFFIX}",
                text_of("summary")
            );
            b.push(Message::user_text(text), e.line);
        }
        Some("compactionSummary") => {
            b.push(summary_message(text_of("summary")), e.line);
        }
        other => session.skip_role(other, (e.line, 1), sink)?,
    }
    Ok(())
}

/// `bashExecutionToText`, byte for byte.
pub fn bash_execution_text(m: &Value) -> String {
    let s = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or_default();
    let mut text = format!("Ran `{}`\n", s("command"));
    let output = s("output");
    if output.is_empty() {
        text.push_str("(no output)");
    } else {
        text.push_str(&format!("```\n{output}\n```"));
    }
    let exit = m.get("exitCode").and_then(Value::as_i64);
    if m.get("cancelled").and_then(Value::as_bool) == Some(true) {
        text.push_str("\n\n(command cancelled)");
    } else if let Some(code) = exit.filter(|&c| c != 0) {
        text.push_str(&format!("\n\nCommand exited with code {code}"));
    }
    let full = s("fullOutputPath");
    if m.get("truncated").and_then(Value::as_bool) == Some(true) && !full.is_empty() {
        text.push_str(&format!("\n\n[Output truncated. Full output: {full}]"));
    }
    text
}

/// The text blocks of a content (a string, or blocks), joined by newlines.
fn texts(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|i| i.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// A user content: a string, or `text` / `image` blocks.
fn user_content(
    content: Option<&Value>,
    line: usize,
    session: &mut ImportedSession,
    sink: &mut Sink<'_>,
) -> LabResult<Vec<Block>> {
    let mut out = Vec::new();
    match content {
        Some(Value::String(s)) => out.push(Block::Text { text: s.clone() }),
        Some(Value::Array(items)) => {
            for i in items {
                match i.get("type").and_then(Value::as_str).unwrap_or("(none)") {
                    "text" => out.push(Block::Text {
                        text: i
                            .get("text")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .into(),
                    }),
                    "image" => out.push(Block::Image {
                        source: i
                            .get("mimeType")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .into(),
                    }),
                    other => unknown_block(other, line, session, sink)?,
                }
            }
        }
        _ => {}
    }
    Ok(out)
}

/// An assistant content: `text`, `thinking`, `toolCall` blocks.
fn assistant_content(
    content: Option<&Value>,
    line: usize,
    session: &mut ImportedSession,
    sink: &mut Sink<'_>,
) -> LabResult<Vec<Block>> {
    let mut out = Vec::new();
    let Some(Value::Array(items)) = content else {
        if let Some(Value::String(s)) = content {
            out.push(Block::Text { text: s.clone() });
        }
        return Ok(out);
    };
    for i in items {
        let s = |k: &str| i.get(k).and_then(Value::as_str).unwrap_or_default();
        match s("type") {
            "text" => out.push(Block::Text {
                text: s("text").into(),
            }),
            "thinking" => out.push(Block::Thinking {
                thinking: s("thinking").into(),
            }),
            "toolCall" => {
                session.stats.tool_uses += 1;
                out.push(Block::ToolUse {
                    id: s("id").into(),
                    name: s("name").into(),
                    input: i
                        .get("arguments")
                        .cloned()
                        .unwrap_or(Value::Object(Default::default()))
                        .into(),
                });
            }
            "" => unknown_block("(none)", line, session, sink)?,
            other => unknown_block(other, line, session, sink)?,
        }
    }
    Ok(out)
}

fn unknown_block(
    kind: &str,
    line: usize,
    session: &mut ImportedSession,
    sink: &mut Sink<'_>,
) -> LabResult<()> {
    session.skip(&format!("content:{kind}"));
    let msg = format!("unknown content type `{kind}`; counted and skipped");
    sink.report(line, 1, DiagnosticKind::UnknownBlockType, msg)
}

/// The `pi` format's registration (`format_list.rs`).
pub const FORMAT: crate::format::Format = crate::format::Format {
    name: "pi",
    sniff: Some((60, crate::sniff::pi)),
    name_endings: &[],
    extensions: &[],
    product: Some("pi-auto-compact"),
    compaction_by_index: true,
    read: |input| input.one(|r, s, k| read(r, s, k)),
};
