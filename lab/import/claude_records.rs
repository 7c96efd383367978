//! Claude Code record handling, shared by [`super::claude_jsonl`] and [`super::chat_json`].
//!
//! Records arrive one at a time ([`Records::record`]); each is converted to a
//! small [`Rec`] at once (the raw JSON, `toolUseResult` and all, is dropped;
//! only the recorded size of its message content is kept, for the course's
//! size estimate). [`Records::finish`] then rebuilds the conversations:
//!
//! * **main**: from the leaf (the last non-sidechain message record) up the
//!   `parentUuid` chain to its root, through non-message records (`system`,
//!   `progress`). If that root is a compaction (a `compact_boundary` system
//!   record with a `logicalParentUuid`, or a summary message: `isCompactSummary`
//!   or a user message starting with [`CONTINUATION`]), the walk goes on from
//!   the pre-compaction leaf (the `logicalParentUuid`, else the last
//!   non-sidechain message record before the root in the file), so `main` is the
//!   whole session the harness ran, with the compaction point recorded in
//!   `real_compactions`. A first segment that starts compacted with nothing
//!   before it sets `starts_with_summary`.
//! * consecutive assistant records with one `message.id` become one message
//!   (Claude Code writes one record per content block), and consecutive user
//!   records that only carry tool results become one message (as the API saw them).
//! * **sidechains** (`isSidechain`) are grouped by chain root, in file order;
//!   **detached** non-sidechain chains likewise (with a diagnostic; damage
//!   when the chain holds the file's first message while the main chain's
//!   root names a parent it cannot reach: the conversation's start was cut off).
//!   With no main chain at all (a sub-agent log on its own), the longest
//!   sidechain is replayed as `main` (a `sidechain_only` note).
//!
//! Repairs of chain fields: a present but wrong-typed `uuid`, `parentUuid`,
//! `logicalParentUuid` or `isSidechain` is an `invalid_record` at its line. A
//! wrong `parentUuid` is read as the previous record in the file (where
//! Claude Code writes a record's parent in a linear session), a wrong
//! `isSidechain` as the previous record's flag, a wrong `uuid` or
//! `logicalParentUuid` as absent. A message record whose `content` is
//! neither a string nor an array is skipped, but its place in the chain is
//! kept, so neighbours still chain and merge.
//!
//! `type: summary` records are counted in `skipped` and not treated as a
//! compaction: in Claude Code they are session titles for the resume list
//! (`summary` + `leafUuid`), written with or without any compaction.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::Value;

use super::{
    flatten_tool_result, image_source, recorded_message_len, repair_pairs, store_main,
    DiagnosticKind, FileStats, ImportedSession, Origin, RealCompaction, Sink,
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

/// (line, column) of a record's first byte.
type Pos = (usize, usize);

/// The recorded size of a message `content`, enough to size merged messages.
#[derive(Debug, Clone, Copy)]
struct SentContent {
    /// `len(json.dumps(content))`.
    len: usize,
    /// Array elements, or `None` for string (or null) content.
    items: Option<usize>,
}

#[derive(Debug)]
enum Kind {
    Message {
        role: Role,
        message_id: Option<String>,
        content: Content,
        compact_summary: bool,
        sent: SentContent,
    },
    CompactBoundary {
        trigger: Option<String>,
        pre_tokens: Option<u64>,
    },
    Other,
}

#[derive(Debug)]
struct Rec {
    pos: Pos,
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

/// Messages built from records: the messages, their origins, and the
/// compactions among them by origin position.
struct Built {
    msgs: Vec<Message>,
    origins: Vec<Origin>,
    compactions: HashMap<Pos, (Option<String>, Option<u64>)>,
}

fn str_field(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

/// A chain field: `Ok(None)` when absent or null, `Err(())` when present
/// with a type other than the one expected.
fn typed<T>(v: &Value, key: &str, read: impl Fn(&Value) -> Option<T>) -> Result<Option<T>, ()> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(x) => read(x).map(Some).ok_or(()),
    }
}

fn json_type(v: Option<&Value>) -> &'static str {
    match v {
        Some(Value::Array(_)) => "an array",
        Some(Value::Object(_)) => "an object",
        Some(Value::Number(_)) => "a number",
        Some(Value::Bool(_)) => "a boolean",
        Some(Value::String(_)) => "a string",
        _ => "null",
    }
}

impl Records {
    /// Take one record (a parsed JSON line or array element) at `pos`.
    pub(crate) fn record(
        &mut self,
        v: Value,
        pos: Pos,
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        let (line, column) = pos;
        session.stats.records += 1;
        if !v.is_object() {
            session.skip("(not an object)");
            return sink.report(
                line,
                column,
                DiagnosticKind::InvalidRecord,
                "record is not a JSON object; skipped".into(),
            );
        }
        let Some(kind) = str_field(&v, "type") else {
            session.skip("(no type)");
            return sink.report(
                line,
                column,
                DiagnosticKind::InvalidRecord,
                "record has no string `type`; skipped".into(),
            );
        };
        let Some(rec_kind) = self.kind_of(&v, &kind, pos, session, sink)? else {
            return Ok(());
        };
        let (uuid, parent, logical_parent, sidechain) = self.chain_fields(&v, pos, sink)?;
        let is_message = matches!(rec_kind, Kind::Message { .. });
        if uuid.is_none() && !is_message {
            // Nothing can chain through it; counting it is all there is to do.
            return Ok(());
        }
        if uuid.is_none() {
            sink.report(
                line,
                column,
                DiagnosticKind::InvalidRecord,
                "message record has no `uuid`; kept as a detached chain".into(),
            )?;
        }
        let idx = self.recs.len();
        if let Some(u) = &uuid {
            if self.by_uuid.insert(u.clone(), idx).is_some() {
                sink.report(
                    line,
                    column,
                    DiagnosticKind::DuplicateUuid,
                    format!("uuid `{u}` seen before; the later record wins"),
                )?;
            }
        }
        self.recs.push(Rec {
            pos,
            uuid,
            parent,
            logical_parent,
            sidechain,
            kind: rec_kind,
        });
        Ok(())
    }

    /// The record's kind; `None` when it is skipped whole (reported).
    fn kind_of(
        &self,
        v: &Value,
        kind: &str,
        pos: Pos,
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<Option<Kind>> {
        let (line, column) = pos;
        Ok(Some(match kind {
            "user" | "assistant" => {
                let Some(message) = v.get("message").filter(|m| m.is_object()) else {
                    session.skip(&format!("{kind} (no message)"));
                    sink.report(
                        line,
                        column,
                        DiagnosticKind::InvalidRecord,
                        format!("`{kind}` record has no `message` object; skipped"),
                    )?;
                    return Ok(None);
                };
                let role = if kind == "user" {
                    Role::User
                } else {
                    Role::Assistant
                };
                session.stats.message_records += 1;
                let raw = message.get("content");
                let Some(content) = convert_content(raw, pos, &mut session.stats, sink)? else {
                    // Kept as a chain link (not a message), so its neighbours
                    // still chain and consecutive results still merge.
                    return Ok(Some(Kind::Other));
                };
                let compact_summary = v.get("isCompactSummary").and_then(Value::as_bool)
                    == Some(true)
                    || (role == Role::User && starts_with_continuation(&content));
                let sent = SentContent {
                    len: raw.map_or(4, crate::pyjson::dumps_len),
                    items: raw.and_then(Value::as_array).map(Vec::len),
                };
                Kind::Message {
                    role,
                    message_id: str_field(message, "id"),
                    content,
                    compact_summary,
                    sent,
                }
            }
            "system" if v.get("subtype").and_then(Value::as_str) == Some("compact_boundary") => {
                session.skip("system");
                let meta = v.get("compactMetadata");
                Kind::CompactBoundary {
                    trigger: meta.and_then(|m| str_field(m, "trigger")),
                    pre_tokens: meta
                        .and_then(|m| m.get("preTokens"))
                        .and_then(Value::as_u64),
                }
            }
            known if KNOWN_NON_MESSAGE.contains(&known) => {
                session.skip(known);
                Kind::Other
            }
            unknown => {
                session.skip(unknown);
                sink.report(
                    line,
                    column,
                    DiagnosticKind::UnknownRecordType,
                    format!("unknown record type `{unknown}`; counted and skipped"),
                )?;
                Kind::Other
            }
        }))
    }

    /// `uuid`, `parentUuid`, `logicalParentUuid` and `isSidechain`, each
    /// wrong-typed one reported and repaired (see the module doc).
    #[allow(clippy::type_complexity)]
    fn chain_fields(
        &self,
        v: &Value,
        pos: Pos,
        sink: &mut Sink<'_>,
    ) -> LabResult<(Option<String>, Option<String>, Option<String>, bool)> {
        let (line, column) = pos;
        let as_str = |x: &Value| x.as_str().map(str::to_string);
        let mut bad = |key: &str, repair: &str| {
            sink.report(
                line,
                column,
                DiagnosticKind::InvalidRecord,
                format!(
                    "`{key}` is {}, not {}; {repair}",
                    json_type(v.get(key)),
                    if key == "isSidechain" {
                        "a boolean"
                    } else {
                        "a string"
                    }
                ),
            )
        };
        let uuid =
            typed(v, "uuid", as_str).or_else(|()| bad("uuid", "read as absent").map(|()| None))?;
        let previous = self.recs.last();
        let parent = typed(v, "parentUuid", as_str).or_else(|()| {
            bad("parentUuid", "read as the previous record in the file")
                .map(|()| previous.and_then(|p| p.uuid.clone()))
        })?;
        let logical_parent = typed(v, "logicalParentUuid", as_str)
            .or_else(|()| bad("logicalParentUuid", "read as absent").map(|()| None))?;
        let sidechain = typed(v, "isSidechain", Value::as_bool)
            .or_else(|()| {
                bad("isSidechain", "read as the previous record's flag")
                    .map(|()| previous.map(|p| p.sidechain))
            })?
            .unwrap_or(false);
        Ok((uuid, parent, logical_parent, sidechain))
    }

    fn parent_of(&self, i: usize) -> Option<usize> {
        let p = self.recs[i].parent.as_ref()?;
        self.by_uuid.get(p).copied()
    }

    /// The main chain's records in conversation order (earliest segment
    /// first), and whether its earliest segment starts compacted with
    /// nothing before it in the file.
    fn main_order(
        &self,
        leaf: usize,
        on_main: &mut HashSet<usize>,
        sink: &mut Sink<'_>,
    ) -> LabResult<(Vec<usize>, bool)> {
        let mut segments: Vec<Vec<usize>> = Vec::new();
        let mut start = Some(leaf);
        let mut starts_with_summary = false;
        while let Some(s) = start {
            let chain = self.walk_up(s, on_main, sink)?;
            start = self.pre_compaction_leaf(&chain, on_main);
            starts_with_summary = start.is_none() && self.starts_compacted(&chain);
            segments.push(chain);
        }
        segments.reverse();
        Ok((segments.concat(), starts_with_summary))
    }

    /// The chain from `s` up to its root, root first.
    fn walk_up(
        &self,
        s: usize,
        on_main: &mut HashSet<usize>,
        sink: &mut Sink<'_>,
    ) -> LabResult<Vec<usize>> {
        let mut chain = Vec::new();
        let mut cur = Some(s);
        while let Some(i) = cur {
            let (line, column) = self.recs[i].pos;
            if !on_main.insert(i) {
                sink.report(
                    line,
                    column,
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
                        line,
                        column,
                        DiagnosticKind::MissingParent,
                        format!("parentUuid `{p}` names no record; chain starts here"),
                    )?;
                }
            }
        }
        chain.reverse();
        Ok(chain)
    }

    /// Rebuild main, sidechains and detached chains into `session`.
    pub(crate) fn finish(
        mut self,
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        let leaf = self
            .recs
            .iter()
            .rposition(|r| r.is_message() && !r.sidechain && r.uuid.is_some());
        let mut on_main: HashSet<usize> = HashSet::new();
        let (order, starts_with_summary) = match leaf {
            Some(leaf) => self.main_order(leaf, &mut on_main, sink)?,
            None => (Vec::new(), false),
        };
        let built = self.build(&order);
        let compactions = built.compactions;
        let (mut main, mut origins) = (built.msgs, built.origins);
        repair_pairs(&mut main, &mut origins, sink)?;
        // Indices after repair: find the compaction messages by their source position.
        session.real_compaction_meta = origins
            .iter()
            .enumerate()
            .filter(|(i, o)| o.line != 0 && !(starts_with_summary && *i == 0))
            .filter_map(|(i, o)| {
                compactions
                    .get(&(o.line, o.column))
                    .map(|(trigger, pre_tokens)| RealCompaction {
                        at: i,
                        trigger: trigger.clone(),
                        pre_tokens: *pre_tokens,
                    })
            })
            .collect();
        session.real_compactions = session.real_compaction_meta.iter().map(|c| c.at).collect();
        session.starts_with_summary = starts_with_summary;
        store_main(session, main, origins);
        // The main chain's root names a parent it could not reach: cut, not a fresh start.
        let main_cut = order
            .first()
            .is_some_and(|&r| self.recs[r].parent.is_some());
        let side_origins = self.finish_side_chains(&on_main, main_cut, session, sink)?;
        if session.main.is_empty() && !session.sidechains.is_empty() {
            replay_a_sidechain(session, side_origins, sink)?;
        }
        Ok(())
    }

    /// Sidechains and detached chains, grouped by root, in file order;
    /// returns the origins of each sidechain's messages.
    fn finish_side_chains(
        &mut self,
        on_main: &HashSet<usize>,
        main_cut: bool,
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<Vec<Vec<Origin>>> {
        let mut side_origins = Vec::new();
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
            let built = self.build(members);
            let (mut msgs, mut origins) = (built.msgs, built.origins);
            repair_pairs(&mut msgs, &mut origins, sink)?;
            session.sidechains.push(msgs);
            side_origins.push(origins);
        }
        let first_message = self
            .recs
            .iter()
            .position(|r| r.is_message() && !r.sidechain);
        for members in detached_groups.values() {
            let (line, column) = self.recs[members[0]].pos;
            let holds_start = main_cut && first_message.is_some_and(|f| members.contains(&f));
            if holds_start {
                sink.report(
                    line,
                    column,
                    DiagnosticKind::DetachedStart,
                    format!(
                        "the file's first message is on a chain of {} message record(s) cut off the main conversation; the replay misses the conversation's start",
                        members.len()
                    ),
                )?;
            } else {
                sink.report(
                    line,
                    column,
                    DiagnosticKind::DetachedChain,
                    format!(
                        "{} message record(s) on a chain not reachable from the main leaf; kept apart",
                        members.len()
                    ),
                )?;
            }
            let built = self.build(members);
            let (mut msgs, mut origins) = (built.msgs, built.origins);
            repair_pairs(&mut msgs, &mut origins, sink)?;
            session.detached.push(msgs);
        }
        Ok(side_origins)
    }

    fn starts_compacted(&self, chain: &[usize]) -> bool {
        let Some(&root) = chain.first() else {
            return false;
        };
        let boundary_root = matches!(self.recs[root].kind, Kind::CompactBoundary { .. });
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
        boundary_root || summary_first
    }

    /// If `chain` (root first) starts at a compaction, the leaf to continue from.
    fn pre_compaction_leaf(&self, chain: &[usize], visited: &HashSet<usize>) -> Option<usize> {
        let root = *chain.first()?;
        if let Kind::CompactBoundary { .. } = self.recs[root].kind {
            if let Some(lp) = &self.recs[root].logical_parent {
                if let Some(&j) = self.by_uuid.get(lp) {
                    if !visited.contains(&j) {
                        return Some(j);
                    }
                }
            }
        }
        if !self.starts_compacted(chain) {
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

    /// Messages of the records `order` (in that order), merged, with their
    /// origins (recorded sizes included) and the compactions among them.
    /// Each record's content is moved out (a record is built into one
    /// conversation only), so the import never holds two copies of it.
    fn build(&mut self, order: &[usize]) -> Built {
        let mut b = Built {
            msgs: Vec::new(),
            origins: Vec::new(),
            compactions: HashMap::new(),
        };
        // Recorded content parts of the message being built.
        let mut parts: Vec<SentContent> = Vec::new();
        let mut last_id: Option<String> = None;
        let mut boundary: Option<(Option<String>, Option<u64>)> = None;
        for &i in order {
            let r = &mut self.recs[i];
            let pos = r.pos;
            let (role, message_id, content, compact_summary, sent) = match &mut r.kind {
                Kind::CompactBoundary {
                    trigger,
                    pre_tokens,
                } => {
                    boundary = Some((trigger.clone(), *pre_tokens));
                    continue;
                }
                Kind::Other => continue,
                Kind::Message {
                    role,
                    message_id,
                    content,
                    compact_summary,
                    sent,
                } => (
                    *role,
                    message_id.clone(),
                    std::mem::replace(content, Content::Text(String::new())),
                    *compact_summary,
                    *sent,
                ),
            };
            let merge_assistant = role == Role::Assistant
                && message_id.is_some()
                && last_id == message_id
                && b.msgs.last().is_some_and(|m| m.role == Role::Assistant);
            let merge_results = role == Role::User
                && only_results(&content)
                && b.msgs.last().is_some_and(Message::is_tool_result);
            if (merge_assistant || merge_results) && !compact_summary && boundary.is_none() {
                let last = b.msgs.last_mut().expect("checked above");
                append_content(last, content);
                parts.push(sent);
            } else {
                close_recorded(&b.msgs, &mut b.origins, &parts);
                parts = vec![sent];
                if compact_summary || boundary.is_some() {
                    b.compactions
                        .insert(pos, boundary.take().unwrap_or((None, None)));
                }
                b.msgs.push(Message { role, content });
                b.origins.push(Origin::at(pos.0, pos.1, 0));
            }
            last_id = if role == Role::Assistant {
                message_id
            } else {
                None
            };
        }
        close_recorded(&b.msgs, &mut b.origins, &parts);
        b
    }
}

/// No main chain: make the longest sidechain `main` (its pairs already
/// repaired and reported), and say so.
fn replay_a_sidechain(
    session: &mut ImportedSession,
    mut side_origins: Vec<Vec<Origin>>,
    sink: &mut Sink<'_>,
) -> LabResult<()> {
    let (k, _) = session
        .sidechains
        .iter()
        .enumerate()
        .max_by_key(|(i, s)| (s.len(), std::cmp::Reverse(*i)))
        .expect("checked non-empty");
    let origins = std::mem::take(&mut side_origins[k]);
    let first = origins.first().copied().unwrap_or_default();
    sink.report(
        first.line,
        first.column,
        DiagnosticKind::SidechainOnly,
        format!(
            "every message record is a sidechain (a sub-agent log); replaying sidechain {} of {} ({} messages) as the main conversation",
            k + 1,
            session.sidechains.len(),
            session.sidechains[k].len()
        ),
    )?;
    store_main(session, session.sidechains[k].clone(), origins);
    session.main_from_sidechain = Some(k);
    Ok(())
}

/// Set the recorded size of the last message from its recorded content parts.
fn close_recorded(msgs: &[Message], origins: &mut [Origin], parts: &[SentContent]) {
    let (Some(m), Some(o)) = (msgs.last(), origins.last_mut()) else {
        return;
    };
    o.recorded = recorded_message_len(m.role, merged_content_len(parts));
}

/// `len(json.dumps(content))` of the content the API saw for records whose
/// contents were `parts`: one part as recorded; several as one list of all
/// their blocks (a string part becomes one text block, as
/// [`append_content`] makes it).
fn merged_content_len(parts: &[SentContent]) -> usize {
    if let [one] = parts {
        return one.len;
    }
    // {"type": "text", "text": <string>}
    let text_block = crate::pyjson::dumps_len(&serde_json::json!({"type": "text", "text": ""})) - 2;
    let (mut inner, mut count) = (0usize, 0usize);
    for p in parts {
        match p.items {
            Some(0) => {}
            Some(n) => {
                inner += p.len - 2 - 2 * (n - 1);
                count += n;
            }
            None => {
                inner += text_block + p.len;
                count += 1;
            }
        }
    }
    2 + inner + 2 * count.saturating_sub(1)
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

/// Convert a message `content` (string or block array) into the lab's
/// content; `None` (reported) when it is neither, and the message is skipped.
pub(crate) fn convert_content(
    content: Option<&Value>,
    pos: (usize, usize),
    stats: &mut FileStats,
    sink: &mut Sink<'_>,
) -> LabResult<Option<Content>> {
    match content {
        Some(Value::String(s)) => Ok(Some(Content::Text(s.clone()))),
        Some(Value::Array(items)) => Ok(Some(Content::Blocks(convert_blocks(
            items, pos, stats, sink,
        )?))),
        None | Some(Value::Null) => Ok(Some(Content::Text(String::new()))),
        Some(other) => {
            sink.report(
                pos.0,
                pos.1,
                DiagnosticKind::InvalidRecord,
                format!(
                    "message content is {}, neither a string nor an array; message skipped, its place in the chain kept",
                    json_type(Some(other))
                ),
            )?;
            Ok(None)
        }
    }
}

/// Convert Anthropic-shaped content blocks into the lab's blocks.
pub(crate) fn convert_blocks(
    items: &[Value],
    pos: (usize, usize),
    stats: &mut FileStats,
    sink: &mut Sink<'_>,
) -> LabResult<Vec<Block>> {
    let (line, column) = pos;
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
                            column,
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
                    column,
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
                    column,
                    DiagnosticKind::InvalidRecord,
                    "content block without a string `type`; skipped".into(),
                )?;
            }
        }
    }
    Ok(out)
}
