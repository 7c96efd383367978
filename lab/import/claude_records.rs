//! Claude Code record handling, shared by [`super::claude_jsonl`] and [`super::chat_json`].
//!
//! Records arrive one at a time ([`Records::record`]); each is converted to a
//! small [`Rec`] at once (the raw JSON, `toolUseResult` and all, is dropped).
//! [`Records::finish`] then rebuilds the conversations:
//!
//! * **main**: from the leaf (the last non-sidechain message record) up the
//!   `parentUuid` chain to its root, through non-message records (`system`,
//!   `progress`). If that root is a compaction (a `compact_boundary` system
//!   record with a `logicalParentUuid`, or a summary message: `isCompactSummary`
//!   or a user message starting with [`CONTINUATION`]), the walk goes on from
//!   the pre-compaction leaf (the `logicalParentUuid`, else the last
//!   non-sidechain message record before the root in the file), so `main` is the
//!   whole session the harness ran, with the compaction point recorded in
//!   `real_compactions`.
//! * consecutive assistant records with one `message.id` become one message
//!   (Claude Code writes one record per content block), and consecutive user
//!   records that only carry tool results become one message (as the API saw them).
//! * **sidechains** (`isSidechain`) are grouped by chain root, in file order;
//!   **detached** non-sidechain chains likewise (with a diagnostic).
//!
//! `type: summary` records are counted in `skipped` and not treated as a
//! compaction: in Claude Code they are session titles for the resume list
//! (`summary` + `leafUuid`), written with or without any compaction.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::Value;

use super::{
    flatten_tool_result, image_source, repair_pairs, DiagnosticKind, FileStats, ImportedSession,
    Sink,
};
use crate::error::LabResult;
use crate::message::{Block, Content, Message, Role};

/// The first words of the user message Claude Code writes after compacting.
pub const CONTINUATION: &str = "This session is being continued from a previous conversation";

/// Record types that are known and are not messages (counted in `skipped`).
const KNOWN_NON_MESSAGE: &[&str] = &[
    "summary",
    "system",
    "file-history-snapshot",
    "progress",
    "queue-operation",
];

#[derive(Debug)]
enum Kind {
    Message {
        role: Role,
        message_id: Option<String>,
        content: Content,
        compact_summary: bool,
    },
    CompactBoundary,
    Other,
}

#[derive(Debug)]
struct Rec {
    line: usize,
    uuid: Option<String>,
    parent: Option<String>,
    logical_parent: Option<String>,
    sidechain: bool,
    kind: Kind,
}

impl Rec {
    fn is_message(&self) -> bool {
        matches!(self.kind, Kind::Message { .. })
    }
}

/// Accumulates records, then rebuilds the conversations.
#[derive(Default)]
pub(crate) struct Records {
    recs: Vec<Rec>,
    by_uuid: HashMap<String, usize>,
}

fn str_field(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

impl Records {
    /// Take one record (a parsed JSON line or array element).
    pub(crate) fn record(
        &mut self,
        v: Value,
        line: usize,
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        session.stats.records += 1;
        if !v.is_object() {
            session.skip("(not an object)");
            return sink.report(
                line,
                1,
                DiagnosticKind::InvalidRecord,
                "record is not a JSON object; skipped".into(),
            );
        }
        let Some(kind) = str_field(&v, "type") else {
            session.skip("(no type)");
            return sink.report(
                line,
                1,
                DiagnosticKind::InvalidRecord,
                "record has no string `type`; skipped".into(),
            );
        };
        let uuid = str_field(&v, "uuid");
        let parent = str_field(&v, "parentUuid");
        let logical_parent = str_field(&v, "logicalParentUuid");
        let sidechain = v.get("isSidechain").and_then(Value::as_bool) == Some(true);
        let rec_kind = match kind.as_str() {
            "user" | "assistant" => {
                let Some(message) = v.get("message").filter(|m| m.is_object()) else {
                    session.skip(&format!("{kind} (no message)"));
                    return sink.report(
                        line,
                        1,
                        DiagnosticKind::InvalidRecord,
                        format!("`{kind}` record has no `message` object; skipped"),
                    );
                };
                let role = if kind == "user" {
                    Role::User
                } else {
                    Role::Assistant
                };
                session.stats.message_records += 1;
                let content =
                    convert_content(message.get("content"), line, &mut session.stats, sink)?;
                let compact_summary = v.get("isCompactSummary").and_then(Value::as_bool)
                    == Some(true)
                    || (role == Role::User && starts_with_continuation(&content));
                Kind::Message {
                    role,
                    message_id: str_field(message, "id"),
                    content,
                    compact_summary,
                }
            }
            "system" if v.get("subtype").and_then(Value::as_str) == Some("compact_boundary") => {
                session.skip("system");
                Kind::CompactBoundary
            }
            known if KNOWN_NON_MESSAGE.contains(&known) => {
                session.skip(known);
                Kind::Other
            }
            unknown => {
                session.skip(unknown);
                sink.report(
                    line,
                    1,
                    DiagnosticKind::UnknownRecordType,
                    format!("unknown record type `{unknown}`; counted and skipped"),
                )?;
                Kind::Other
            }
        };
        let is_message = matches!(rec_kind, Kind::Message { .. });
        if uuid.is_none() && !is_message {
            // Nothing can chain through it; counting it is all there is to do.
            return Ok(());
        }
        if uuid.is_none() {
            sink.report(
                line,
                1,
                DiagnosticKind::InvalidRecord,
                "message record has no `uuid`; kept as a detached chain".into(),
            )?;
        }
        let idx = self.recs.len();
        if let Some(u) = &uuid {
            if self.by_uuid.insert(u.clone(), idx).is_some() {
                sink.report(
                    line,
                    1,
                    DiagnosticKind::DuplicateUuid,
                    format!("uuid `{u}` seen before; the later record wins"),
                )?;
            }
        }
        self.recs.push(Rec {
            line,
            uuid,
            parent,
            logical_parent,
            sidechain,
            kind: rec_kind,
        });
        Ok(())
    }

    fn parent_of(&self, i: usize) -> Option<usize> {
        let p = self.recs[i].parent.as_ref()?;
        self.by_uuid.get(p).copied()
    }

    /// Rebuild main, sidechains and detached chains into `session`.
    pub(crate) fn finish(
        self,
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        let leaf = self
            .recs
            .iter()
            .rposition(|r| r.is_message() && !r.sidechain && r.uuid.is_some());
        let mut on_main: HashSet<usize> = HashSet::new();
        let mut order: Vec<usize> = Vec::new();
        if let Some(leaf) = leaf {
            let mut segments: Vec<Vec<usize>> = Vec::new();
            let mut start = Some(leaf);
            while let Some(s) = start {
                let mut chain = Vec::new();
                let mut cur = Some(s);
                while let Some(i) = cur {
                    if !on_main.insert(i) {
                        sink.report(
                            self.recs[i].line,
                            1,
                            DiagnosticKind::InvalidRecord,
                            "parentUuid chain loops back on itself; walk stopped".into(),
                        )?;
                        break;
                    }
                    chain.push(i);
                    cur = self.parent_of(i);
                    if cur.is_none() {
                        if let Some(p) = &self.recs[i].parent {
                            sink.report(
                                self.recs[i].line,
                                1,
                                DiagnosticKind::MissingParent,
                                format!("parentUuid `{p}` names no record; chain starts here"),
                            )?;
                        }
                    }
                }
                chain.reverse();
                start = self.pre_compaction_leaf(&chain, &on_main);
                segments.push(chain);
            }
            segments.reverse();
            order = segments.concat();
        }

        let (main, lines, compactions) = self.build(&order);
        session.main = main;
        session.main_lines = lines;
        repair_pairs(&mut session.main, &mut session.main_lines, sink)?;
        // Indices after repair: find the compaction messages by their source line.
        session.real_compactions = session
            .main_lines
            .iter()
            .enumerate()
            .filter(|(_, l)| **l != 0 && compactions.contains(l))
            .map(|(i, _)| i)
            .collect();

        // Sidechains and detached chains, grouped by root, in file order.
        let mut root_memo: HashMap<usize, usize> = HashMap::new();
        let mut side_groups: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        let mut detached_groups: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (i, r) in self.recs.iter().enumerate() {
            if !r.is_message() || on_main.contains(&i) {
                continue;
            }
            let root = self.root_of(i, &mut root_memo);
            let groups = if r.sidechain {
                &mut side_groups
            } else {
                &mut detached_groups
            };
            groups.entry(root).or_default().push(i);
        }
        for members in side_groups.values() {
            let (mut msgs, mut lines, _) = self.build(members);
            repair_pairs(&mut msgs, &mut lines, sink)?;
            session.sidechains.push(msgs);
        }
        for members in detached_groups.values() {
            let first = self.recs[members[0]].line;
            sink.report(
                first,
                1,
                DiagnosticKind::DetachedChain,
                format!(
                    "{} message record(s) on a chain not reachable from the main leaf; kept apart",
                    members.len()
                ),
            )?;
            let (mut msgs, mut lines, _) = self.build(members);
            repair_pairs(&mut msgs, &mut lines, sink)?;
            session.detached.push(msgs);
        }
        Ok(())
    }

    /// If `chain` (root first) starts at a compaction, the leaf to continue from.
    fn pre_compaction_leaf(&self, chain: &[usize], visited: &HashSet<usize>) -> Option<usize> {
        let root = *chain.first()?;
        if let Kind::CompactBoundary = self.recs[root].kind {
            if let Some(lp) = &self.recs[root].logical_parent {
                if let Some(&j) = self.by_uuid.get(lp) {
                    if !visited.contains(&j) {
                        return Some(j);
                    }
                }
            }
        }
        let boundary_root = matches!(self.recs[root].kind, Kind::CompactBoundary);
        let summary_first = chain
            .iter()
            .find(|&&i| self.recs[i].is_message())
            .is_some_and(|&i| {
                matches!(
                    self.recs[i].kind,
                    Kind::Message {
                        compact_summary: true,
                        ..
                    }
                )
            });
        let starts_compacted = boundary_root || summary_first;
        if !starts_compacted {
            return None;
        }
        (0..root).rev().find(|&j| {
            let r = &self.recs[j];
            r.is_message() && !r.sidechain && r.uuid.is_some() && !visited.contains(&j)
        })
    }

    fn root_of(&self, i: usize, memo: &mut HashMap<usize, usize>) -> usize {
        let mut path = Vec::new();
        let mut cur = i;
        let sidechain = self.recs[i].sidechain;
        let root = loop {
            if let Some(&r) = memo.get(&cur) {
                break r;
            }
            path.push(cur);
            match self.parent_of(cur) {
                Some(p) if self.recs[p].sidechain == sidechain && !path.contains(&p) => cur = p,
                _ => break cur,
            }
        };
        for p in path {
            memo.insert(p, root);
        }
        root
    }

    /// Messages of the records `order` (in that order), merged; their source
    /// lines; and the lines of the compaction messages among them.
    fn build(&self, order: &[usize]) -> (Vec<Message>, Vec<usize>, HashSet<usize>) {
        let mut msgs: Vec<Message> = Vec::new();
        let mut lines: Vec<usize> = Vec::new();
        let mut compactions = HashSet::new();
        let mut last_id: Option<&str> = None;
        let mut after_boundary = false;
        for &i in order {
            let r = &self.recs[i];
            let (role, message_id, content, compact_summary) = match &r.kind {
                Kind::CompactBoundary => {
                    after_boundary = true;
                    continue;
                }
                Kind::Other => continue,
                Kind::Message {
                    role,
                    message_id,
                    content,
                    compact_summary,
                } => (*role, message_id.as_deref(), content, *compact_summary),
            };
            let merge_assistant = role == Role::Assistant
                && message_id.is_some()
                && last_id == message_id
                && msgs.last().is_some_and(|m| m.role == Role::Assistant);
            let merge_results = role == Role::User
                && only_results(content)
                && msgs.last().is_some_and(Message::is_tool_result);
            if (merge_assistant || merge_results) && !compact_summary && !after_boundary {
                let last = msgs.last_mut().expect("checked above");
                append_content(last, content.clone());
            } else {
                if compact_summary || after_boundary {
                    compactions.insert(r.line);
                    after_boundary = false;
                }
                msgs.push(Message {
                    role,
                    content: content.clone(),
                });
                lines.push(r.line);
            }
            last_id = if role == Role::Assistant {
                message_id
            } else {
                None
            };
        }
        (msgs, lines, compactions)
    }
}

fn only_results(content: &Content) -> bool {
    match content {
        Content::Text(_) => false,
        Content::Blocks(b) => {
            !b.is_empty()
                && b.iter()
                    .all(|x| matches!(x, Block::ToolResult { .. } | Block::Image { .. }))
                && b.iter().any(|x| matches!(x, Block::ToolResult { .. }))
        }
    }
}

fn append_content(m: &mut Message, more: Content) {
    let mut blocks = match std::mem::replace(&mut m.content, Content::Blocks(Vec::new())) {
        Content::Blocks(b) => b,
        Content::Text(t) => vec![Block::Text { text: t }],
    };
    match more {
        Content::Blocks(mut b) => blocks.append(&mut b),
        Content::Text(t) => blocks.push(Block::Text { text: t }),
    }
    m.content = Content::Blocks(blocks);
}

fn starts_with_continuation(content: &Content) -> bool {
    match content {
        Content::Text(t) => t.trim_start().starts_with(CONTINUATION),
        Content::Blocks(b) => b.iter().any(|x| match x {
            Block::Text { text } => text.trim_start().starts_with(CONTINUATION),
            _ => false,
        }),
    }
}

/// Convert a message `content` (string or block array) into the lab's content.
pub(crate) fn convert_content(
    content: Option<&Value>,
    line: usize,
    stats: &mut FileStats,
    sink: &mut Sink<'_>,
) -> LabResult<Content> {
    match content {
        Some(Value::String(s)) => Ok(Content::Text(s.clone())),
        Some(Value::Array(items)) => Ok(Content::Blocks(convert_blocks(items, line, stats, sink)?)),
        None | Some(Value::Null) => Ok(Content::Text(String::new())),
        Some(_) => {
            sink.report(
                line,
                1,
                DiagnosticKind::InvalidRecord,
                "message content is neither a string nor an array; kept as empty text".into(),
            )?;
            Ok(Content::Text(String::new()))
        }
    }
}

/// Convert Anthropic-shaped content blocks into the lab's blocks.
pub(crate) fn convert_blocks(
    items: &[Value],
    line: usize,
    stats: &mut FileStats,
    sink: &mut Sink<'_>,
) -> LabResult<Vec<Block>> {
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let text_of = |key: &str| str_field(item, key).unwrap_or_default();
        match item.get("type").and_then(Value::as_str) {
            Some("text") => out.push(Block::Text {
                text: text_of("text"),
            }),
            Some("thinking") => out.push(Block::Thinking {
                thinking: text_of("thinking"),
            }),
            Some("redacted_thinking") => out.push(Block::Thinking {
                thinking: "[redacted thinking]".into(),
            }),
            Some("tool_use") => {
                stats.tool_uses += 1;
                let id = match str_field(item, "id") {
                    Some(id) => id,
                    None => {
                        let id = format!("missing-id-line-{line}-{}", out.len());
                        sink.report(
                            line,
                            1,
                            DiagnosticKind::InvalidRecord,
                            format!("tool_use has no `id`; named it `{id}`"),
                        )?;
                        id
                    }
                };
                out.push(Block::ToolUse {
                    id,
                    name: text_of("name"),
                    input: item.get("input").cloned().unwrap_or(Value::Null),
                });
            }
            Some("tool_result") => {
                stats.tool_results += 1;
                let (content, images) = flatten_tool_result(item.get("content"));
                stats.largest_tool_result_chars =
                    stats.largest_tool_result_chars.max(content.chars().count());
                out.push(Block::ToolResult {
                    tool_use_id: text_of("tool_use_id"),
                    content,
                });
                out.extend(images);
            }
            Some("image") => out.push(Block::Image {
                source: image_source(item),
            }),
            Some(other) => {
                sink.report(
                    line,
                    1,
                    DiagnosticKind::UnknownBlockType,
                    format!("unknown content block type `{other}`; kept as a text placeholder"),
                )?;
                out.push(Block::Text {
                    text: format!("[unsupported block: {other}]"),
                });
            }
            None => {
                sink.report(
                    line,
                    1,
                    DiagnosticKind::InvalidRecord,
                    "content block without a string `type`; skipped".into(),
                )?;
            }
        }
    }
    Ok(out)
}
