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
use std::rc::Rc;
use std::sync::Arc;

use serde_json::Value;

use super::readback::{Body, LazyMain, Planned, Raw, Span};
use super::repair::Repair;
use super::{
    flatten_tool_result, image_source, recorded_message_len, store_main, DiagnosticKind, FileStats,
    ImportedSession, Origin, RealCompaction, Sink,
};
use crate::error::LabResult;
use crate::message::{message_chars, Block, Content, Message, Role};

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

/// Record indices grouped by the root of their chain, in root order.
type Groups = BTreeMap<usize, Vec<usize>>;

/// The recorded size of a message `content`, enough to size merged messages.
#[derive(Debug, Clone, Copy)]
struct SentContent {
    /// `len(json.dumps(content))`.
    len: usize,
    /// Array elements, or `None` for string (or null) content.
    items: Option<usize>,
}

/// A message record, as the plan reads it.
#[derive(Debug)]
struct MessageRec {
    role: Role,
    /// `message.id`, interned with the uuids (only compared).
    message_id: Option<Id>,
    body: Body,
    compact_summary: bool,
    sent: SentContent,
    /// The content is tool results (and their images) only: it merges
    /// into a preceding result message.
    only_results: bool,
    /// The content carries a tool result.
    has_results: bool,
    /// `timestamp`, in milliseconds since the Unix epoch, when it parses.
    time_ms: Option<u64>,
}

#[derive(Debug)]
enum Kind {
    Message(MessageRec),
    CompactBoundary {
        trigger: Option<String>,
        pre_tokens: Option<u64>,
    },
    Other,
}

#[derive(Debug)]
struct Rec {
    pos: Pos,
    uuid: Option<Id>,
    parent: Option<Id>,
    logical_parent: Option<Id>,
    sidechain: bool,
    kind: Kind,
}

impl Rec {
    fn is_message(&self) -> bool {
        matches!(self.kind, Kind::Message(_))
    }
}

pub(crate) use crate::format::Backing;

/// Accumulates records, then rebuilds the conversations.
#[derive(Default)]
pub(crate) struct Records {
    recs: Vec<Rec>,
    /// Record index by uuid number (the later record of a duplicate uuid).
    by_uuid: HashMap<Id, u32>,
    ids: Ids,
    backing: Option<Backing>,
}

/// A uuid's number in [`Ids`].
type Id = u32;

/// Every uuid of a file, each stored once: a long log's records name each
/// other's uuids several times (`uuid`, `parentUuid`, `logicalParentUuid`),
/// and the chain skeleton is all the import keeps of them.
#[derive(Default)]
struct Ids {
    numbers: HashMap<Rc<str>, Id>,
    names: Vec<Rc<str>>,
}

impl Ids {
    fn intern(&mut self, name: &str) -> Id {
        if let Some(&n) = self.numbers.get(name) {
            return n;
        }
        let n = self.names.len() as Id;
        let name: Rc<str> = Rc::from(name);
        self.names.push(Rc::clone(&name));
        self.numbers.insert(name, n);
        n
    }

    fn name(&self, id: Id) -> &str {
        &self.names[id as usize]
    }
}

/// The messages to build from records, and the compactions among them by
/// origin position.
struct Plan {
    msgs: Vec<Planned>,
    compactions: HashMap<Pos, Boundary>,
}

/// A plan run through the repair: the messages (unless left in the file),
/// their origins and recorded sizes.
#[derive(Default)]
struct Collected {
    msgs: Vec<Message>,
    origins: Vec<Origin>,
    sent: Vec<usize>,
    first_tool_use_chars: Option<usize>,
}

/// The record's string `type`; `None` (skipped, reported) when the record
/// is not an object or has none.
fn record_type(
    v: &Value,
    pos: Pos,
    session: &mut ImportedSession,
    sink: &mut Sink<'_>,
) -> LabResult<Option<String>> {
    let (line, column) = pos;
    if !v.is_object() {
        session.skip("(not an object)");
        sink.report(
            line,
            column,
            DiagnosticKind::InvalidRecord,
            "record is not a JSON object; skipped".into(),
        )?;
        return Ok(None);
    }
    let kind = str_field(v, "type");
    if kind.is_none() {
        session.skip("(no type)");
        sink.report(
            line,
            column,
            DiagnosticKind::InvalidRecord,
            "record has no string `type`; skipped".into(),
        )?;
    }
    Ok(kind)
}

/// A compaction boundary's trigger and token count before it.
type Boundary = (Option<String>, Option<u64>);

/// The message of a record, its body taken (left empty); `None` for other
/// records, a compaction boundary being noted in `boundary` for the next
/// message.
fn take_message(kind: &mut Kind, boundary: &mut Option<Boundary>) -> Option<MessageRec> {
    match kind {
        Kind::CompactBoundary {
            trigger,
            pre_tokens,
        } => {
            *boundary = Some((trigger.clone(), *pre_tokens));
            None
        }
        Kind::Other => None,
        Kind::Message(m) => Some(MessageRec {
            body: std::mem::replace(&mut m.body, Body::Held(Content::Text(String::new()))),
            ..*m
        }),
    }
}

fn str_field(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

/// A chain field: `Ok(None)` when absent or null, `Err(())` when present
/// with a type other than the one expected.
fn typed<T>(
    v: &Value,
    key: &str,
    mut read: impl FnMut(&Value) -> Option<T>,
) -> Result<Option<T>, ()> {
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
    /// Records whose contents are read back from `backing` when it is given.
    pub(crate) fn new(backing: Option<Backing>) -> Self {
        Records {
            backing,
            ..Records::default()
        }
    }

    /// Take one record (a parsed JSON line or array element) at `pos`;
    /// `span` is where its bytes are in the backing file.
    pub(crate) fn record(
        &mut self,
        v: Value,
        pos: Pos,
        span: Option<(u64, usize)>,
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        let (line, column) = pos;
        session.stats.records += 1;
        let Some(kind) = record_type(&v, pos, session, sink)? else {
            return Ok(());
        };
        let span = span
            .filter(|_| self.backing.is_some())
            .map(|(offset, len)| Span { offset, len, pos });
        let Some(rec_kind) = self.kind_of(&v, &kind, pos, span, session, sink)? else {
            return Ok(());
        };
        let (uuid, parent, logical_parent, sidechain) = self.chain_fields(&v, pos, sink)?;
        let is_message = matches!(rec_kind, Kind::Message(_));
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
        self.push(
            Rec {
                pos,
                uuid,
                parent,
                logical_parent,
                sidechain,
                kind: rec_kind,
            },
            sink,
        )
    }

    /// Keep `rec`, findable by its uuid; a uuid seen before now names it
    /// (reported).
    fn push(&mut self, rec: Rec, sink: &mut Sink<'_>) -> LabResult<()> {
        let idx = self.recs.len();
        if let Some(u) = rec.uuid {
            if self.by_uuid.insert(u, idx as u32).is_some() {
                let (line, column) = rec.pos;
                sink.report(
                    line,
                    column,
                    DiagnosticKind::DuplicateUuid,
                    format!(
                        "uuid `{}` seen before; the later record wins",
                        self.ids.name(u)
                    ),
                )?;
            }
        }
        self.recs.push(rec);
        Ok(())
    }

    /// The record's kind; `None` when it is skipped whole (reported).
    fn kind_of(
        &mut self,
        v: &Value,
        kind: &str,
        pos: Pos,
        span: Option<Span>,
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<Option<Kind>> {
        let (line, column) = pos;
        Ok(Some(match kind {
            "user" | "assistant" => return self.message_kind(v, kind, pos, span, session, sink),
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

    /// A `user` or `assistant` record: a message, unless its `message` is not
    /// an object (skipped, reported) or its content cannot be read (kept as a
    /// chain link, so its neighbours still chain and consecutive results
    /// still merge).
    fn message_kind(
        &mut self,
        v: &Value,
        kind: &str,
        pos: Pos,
        span: Option<Span>,
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<Option<Kind>> {
        let (line, column) = pos;
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
        let compact_summary = v.get("isCompactSummary").and_then(Value::as_bool) == Some(true)
            || (role == Role::User && starts_with_continuation(&content));
        let sent = SentContent {
            len: raw.map_or(4, crate::pyjson::dumps_len),
            items: raw.and_then(Value::as_array).map(Vec::len),
        };
        let has_results = matches!(&content, Content::Blocks(b)
            if b.iter().any(|x| matches!(x, Block::ToolResult { .. })));
        Ok(Some(Kind::Message(MessageRec {
            role,
            message_id: message
                .get("id")
                .and_then(Value::as_str)
                .map(|id| self.ids.intern(id)),
            only_results: only_results(&content),
            has_results,
            // With a file behind it, the content is read again when needed.
            body: span.map_or(Body::Held(content), Body::At),
            compact_summary,
            sent,
            time_ms: v
                .get("timestamp")
                .and_then(Value::as_str)
                .and_then(super::times::parse_rfc3339_ms),
        })))
    }

    /// `uuid`, `parentUuid`, `logicalParentUuid` and `isSidechain`, each
    /// wrong-typed one reported and repaired (see the module doc).
    #[allow(clippy::type_complexity)]
    fn chain_fields(
        &mut self,
        v: &Value,
        pos: Pos,
        sink: &mut Sink<'_>,
    ) -> LabResult<(Option<Id>, Option<Id>, Option<Id>, bool)> {
        let (line, column) = pos;
        let ids = &mut self.ids;
        let mut as_id = |x: &Value| x.as_str().map(|s| ids.intern(s));
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
        let uuid = typed(v, "uuid", &mut as_id)
            .or_else(|()| bad("uuid", "read as absent").map(|()| None))?;
        let previous = self.recs.last();
        let parent = typed(v, "parentUuid", &mut as_id).or_else(|()| {
            bad("parentUuid", "read as the previous record in the file")
                .map(|()| previous.and_then(|p| p.uuid))
        })?;
        let logical_parent = typed(v, "logicalParentUuid", &mut as_id)
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
        let p = self.recs[i].parent?;
        self.by_uuid.get(&p).map(|&j| j as usize)
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
                if let Some(p) = self.recs[i].parent {
                    sink.report(
                        line,
                        column,
                        DiagnosticKind::MissingParent,
                        format!(
                            "parentUuid `{}` names no record; chain starts here",
                            self.ids.name(p)
                        ),
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
        self.finish_main(&order, starts_with_summary, session, sink)?;
        // The main chain's root names a parent it could not reach: cut, not a fresh start.
        let main_cut = order
            .first()
            .is_some_and(|&r| self.recs[r].parent.is_some());
        let side_origins = self.finish_side_chains(&on_main, main_cut, session, sink)?;
        if session.main_len() == 0 && !session.sidechains.is_empty() {
            replay_a_sidechain(session, side_origins, sink)?;
        }
        Ok(())
    }

    /// Build and repair the main conversation of the records `order` into
    /// `session` (or, lazily, its plan and everything but the messages).
    fn finish_main(
        &mut self,
        order: &[usize],
        starts_with_summary: bool,
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        let mut plan = self.plan(order);
        let compactions = plan.compactions;
        let lazy = self
            .backing
            .as_ref()
            .filter(|b| b.lazy)
            .map(|b| b.path.clone());
        // Left in the file, the main conversation is read once here (for its
        // diagnostics and sizes) and again by every replay.
        let kept = match &lazy {
            Some(_) => self.run(plan.msgs.clone(), false, sink)?,
            None => self.run(std::mem::take(&mut plan.msgs), true, sink)?,
        };
        if let Some(path) = lazy.filter(|_| !kept.sent.is_empty()) {
            let main = LazyMain::new(&path, plan.msgs, decode_record, kept.first_tool_use_chars);
            session.lazy_main = Some(Arc::new(main));
        }
        let origins = &kept.origins;
        // Indices after repair: find the compaction messages by their source position.
        session.real_compaction_meta = origins
            .iter()
            .enumerate()
            .filter(|(i, o)| o.line != 0 && !(starts_with_summary && *i == 0))
            .filter_map(|(i, o)| {
                compactions
                    .get(&(o.line, o.column))
                    .map(|(trigger, pre_tokens)| RealCompaction {
                        dropped: None,
                        first_kept: None,
                        at: i,
                        trigger: trigger.clone(),
                        pre_tokens: *pre_tokens,
                    })
            })
            .collect();
        session.real_compactions = session.real_compaction_meta.iter().map(|c| c.at).collect();
        session.starts_with_summary = starts_with_summary;
        session.main_lines = origins.iter().map(|o| o.line).collect();
        session.main_columns = origins.iter().map(|o| o.column).collect();
        session.main_times_ms = super::times::since_start(origins.iter().map(|o| o.time_ms));
        session.main_sent_chars = kept.sent;
        session.main = kept.msgs;
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
        let (side_groups, detached_groups) = self.off_main_groups(on_main);
        // A lazy import keeps the other conversations only when a sidechain
        // must stand in for a missing main one (replay reads nothing else).
        let lazy = self.backing.as_ref().is_some_and(|b| b.lazy);
        let keep_side = !lazy || session.main_len() == 0;
        for members in side_groups.values() {
            let plan = self.plan(members);
            let built = self.run(plan.msgs, keep_side, sink)?;
            if keep_side {
                session.sidechains.push(built.msgs);
                session.sidechain_origins.push(built.origins.clone());
                side_origins.push(built.origins);
            }
        }
        let first_message = self
            .recs
            .iter()
            .position(|r| r.is_message() && !r.sidechain);
        for members in detached_groups.values() {
            let holds_start = main_cut && first_message.is_some_and(|f| members.contains(&f));
            self.report_detached(members, holds_start, sink)?;
            let plan = self.plan(members);
            let built = self.run(plan.msgs, !lazy, sink)?;
            if !lazy {
                session.detached.push(built.msgs);
            }
        }
        Ok(side_origins)
    }

    /// The message records off the main conversation, grouped by the root
    /// of their chain: sidechains, then detached chains.
    fn off_main_groups(&self, on_main: &HashSet<usize>) -> (Groups, Groups) {
        let mut root_memo: HashMap<usize, usize> = HashMap::new();
        let mut side_groups = Groups::new();
        let mut detached_groups = Groups::new();
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
        (side_groups, detached_groups)
    }

    /// A detached chain is reported: as the conversation's lost start when
    /// it `holds_start`, else as a chain kept apart.
    fn report_detached(
        &self,
        members: &[usize],
        holds_start: bool,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        let (line, column) = self.recs[members[0]].pos;
        if holds_start {
            sink.report(
                line,
                column,
                DiagnosticKind::DetachedStart,
                format!(
                    "the file's first message is on a chain of {} message record(s) cut off the main conversation; the replay misses the conversation's start",
                    members.len()
                ),
            )
        } else {
            sink.report(
                line,
                column,
                DiagnosticKind::DetachedChain,
                format!(
                    "{} message record(s) on a chain not reachable from the main leaf; kept apart",
                    members.len()
                ),
            )
        }
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
                    Kind::Message(MessageRec {
                        compact_summary: true,
                        ..
                    })
                )
            });
        boundary_root || summary_first
    }

    /// If `chain` (root first) starts at a compaction, the leaf to continue from.
    fn pre_compaction_leaf(&self, chain: &[usize], visited: &HashSet<usize>) -> Option<usize> {
        let root = *chain.first()?;
        if let Kind::CompactBoundary { .. } = self.recs[root].kind {
            if let Some(lp) = self.recs[root].logical_parent {
                if let Some(j) = self.by_uuid.get(&lp).map(|&j| j as usize) {
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

    /// The messages the records `order` make (in that order, merged), with
    /// their origins (recorded sizes included) and the compactions among
    /// them. Each record's body is moved out (a record is built into one
    /// conversation only), so the import never holds two copies of it.
    fn plan(&mut self, order: &[usize]) -> Plan {
        let mut plan = Plan {
            msgs: Vec::new(),
            compactions: HashMap::new(),
        };
        // Recorded content parts of each planned message, and the response
        // id of each planned assistant message.
        let mut sent: Vec<Vec<SentContent>> = Vec::new();
        let mut ids: Vec<Option<Id>> = Vec::new();
        // The last planned message carries a tool result / only tool results.
        let mut last_is_result = false;
        let mut last_only_results = false;
        let mut boundary: Option<Boundary> = None;
        for &i in order {
            let pos = self.recs[i].pos;
            let Some(t) = take_message(&mut self.recs[i].kind, &mut boundary) else {
                continue;
            };
            let n = plan.msgs.len();
            let same_response = |k: usize| {
                t.role == Role::Assistant
                    && t.message_id.is_some()
                    && ids.get(k).copied().flatten() == t.message_id
                    && plan.msgs[k].role == Role::Assistant
            };
            let merge_assistant = n >= 1 && same_response(n - 1);
            // A response whose parallel tool calls were logged one by one,
            // each call's result right after it (Claude Code 2.1): the API
            // saw one assistant message with every call, then one message
            // with every result; put them back together.
            let interleaved = n >= 2 && last_only_results && same_response(n - 2);
            let merge_results = t.role == Role::User && t.only_results && last_is_result;
            let plain = !t.compact_summary && boundary.is_none();
            if plain && (merge_assistant || merge_results) {
                plan.msgs[n - 1].parts.push(t.body);
                sent[n - 1].push(t.sent);
            } else if plain && interleaved {
                plan.msgs[n - 2].parts.push(t.body);
                sent[n - 2].push(t.sent);
                // The results that follow join the result message.
                continue;
            } else {
                if t.compact_summary || boundary.is_some() {
                    plan.compactions
                        .insert(pos, boundary.take().unwrap_or((None, None)));
                }
                plan.msgs.push(Planned {
                    role: t.role,
                    parts: vec![t.body],
                    origin: Origin {
                        time_ms: t.time_ms,
                        ..Origin::at(pos.0, pos.1, 0)
                    },
                });
                sent.push(vec![t.sent]);
                ids.push(
                    (t.role == Role::Assistant)
                        .then_some(t.message_id)
                        .flatten(),
                );
                last_is_result = t.role == Role::User && t.has_results;
                last_only_results = t.role == Role::User && t.only_results;
                continue;
            }
            if t.role == Role::User {
                last_only_results &= t.only_results;
            }
        }
        for (m, parts) in plan.msgs.iter_mut().zip(&sent) {
            m.origin.recorded = recorded_message_len(m.role, merged_content_len(parts));
        }
        plan
    }

    /// Build and repair the planned messages (reporting the repairs);
    /// `keep` keeps the messages, else only their origins and sizes.
    fn run(&self, plan: Vec<Planned>, keep: bool, sink: &mut Sink<'_>) -> LabResult<Collected> {
        let path = self
            .backing
            .as_ref()
            .map_or_else(|| sink.source.to_path_buf(), |b| b.path.clone());
        let mut repair = Repair::new(Raw::new(plan, &path, decode_record));
        let mut out = Collected::default();
        while let Some(item) = repair.next_with(sink) {
            let (m, o) = item?;
            out.sent
                .push((message_chars(&m) as i64 + o.extra).max(0) as usize);
            out.origins.push(o);
            if out.first_tool_use_chars.is_none() {
                out.first_tool_use_chars = m.tool_use_ids().first().map(|id| id.chars().count());
            }
            if keep {
                out.msgs.push(m);
            }
        }
        Ok(out)
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

pub(crate) fn starts_with_continuation(content: &Content) -> bool {
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
                let block = tool_use(item, pos, out.len(), sink)?;
                out.push(block);
            }
            Some("tool_result") => {
                stats.tool_results += 1;
                tool_result(item, stats, &mut out);
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

/// A `tool_use` block, the `index`-th block of its message; one without an
/// `id` is named after its line and index (reported).
fn tool_use(item: &Value, pos: Pos, index: usize, sink: &mut Sink<'_>) -> LabResult<Block> {
    let (line, column) = pos;
    let id = match str_field(item, "id") {
        Some(id) => id,
        None => {
            let id = format!("missing-id-line-{line}-{index}");
            sink.report(
                line,
                column,
                DiagnosticKind::InvalidRecord,
                format!("tool_use has no `id`; named it `{id}`"),
            )?;
            id
        }
    };
    Ok(Block::ToolUse {
        id,
        name: str_field(item, "name").unwrap_or_default(),
        input: item.get("input").cloned().unwrap_or(Value::Null).into(),
    })
}

/// A `tool_result` block, flattened to text, then the images it held.
fn tool_result(item: &Value, stats: &mut FileStats, out: &mut Vec<Block>) {
    let (content, images) = flatten_tool_result(item.get("content"));
    stats.largest_tool_result_chars = stats.largest_tool_result_chars.max(content.chars().count());
    out.push(Block::ToolResult {
        tool_use_id: str_field(item, "tool_use_id").unwrap_or_default(),
        content,
    });
    out.extend(images);
}

/// The fields of a Claude Code record the import reads; the rest (tool
/// results' `toolUseResult` copies, `cwd`, versions…) are skipped by the
/// parser without being built.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Slim {
    #[serde(rename = "type")]
    kind: Option<serde_json::Value>,
    uuid: Option<serde_json::Value>,
    parent_uuid: Option<serde_json::Value>,
    logical_parent_uuid: Option<serde_json::Value>,
    is_sidechain: Option<serde_json::Value>,
    is_compact_summary: Option<serde_json::Value>,
    subtype: Option<serde_json::Value>,
    compact_metadata: Option<serde_json::Value>,
    timestamp: Option<serde_json::Value>,
    message: Option<SlimMessage>,
}

#[derive(serde::Deserialize)]
struct SlimMessage {
    id: Option<serde_json::Value>,
    content: Option<serde_json::Value>,
}

/// Parse one record, building only the fields the import reads. Anything
/// the slim shape cannot hold (not an object, a `message` that is not an
/// object, a duplicate key) is parsed whole, so the record handling and its
/// diagnostics are the same either way.
pub(crate) fn slim_record(text: &[u8]) -> serde_json::Result<serde_json::Value> {
    use serde_json::{Map, Value};
    let Ok(slim) = serde_json::from_slice::<Slim>(text) else {
        return serde_json::from_slice(text);
    };
    let mut map = Map::new();
    let mut put = |key: &str, v: Option<Value>| {
        if let Some(v) = v {
            map.insert(key.to_string(), v);
        }
    };
    put("type", slim.kind);
    put("uuid", slim.uuid);
    put("parentUuid", slim.parent_uuid);
    put("logicalParentUuid", slim.logical_parent_uuid);
    put("isSidechain", slim.is_sidechain);
    put("isCompactSummary", slim.is_compact_summary);
    put("subtype", slim.subtype);
    put("compactMetadata", slim.compact_metadata);
    put("timestamp", slim.timestamp);
    if let Some(m) = slim.message {
        let mut message = Map::new();
        if let Some(id) = m.id {
            message.insert("id".into(), id);
        }
        if let Some(c) = m.content {
            message.insert("content".into(), c);
        }
        map.insert("message".into(), Value::Object(message));
    }
    Ok(Value::Object(map))
}

/// A message record's content read again from its bytes (see
/// [`super::readback`]); `None` when the bytes no longer hold one.
fn decode_record(
    text: &[u8],
    pos: Pos,
    stats: &mut FileStats,
    sink: &mut Sink<'_>,
) -> LabResult<Option<Content>> {
    let Ok(v) = slim_record(text) else {
        return Ok(None);
    };
    let Some(message) = v.get("message").filter(|m| m.is_object()) else {
        return Ok(None);
    };
    convert_content(message.get("content"), pos, stats, sink)
}
