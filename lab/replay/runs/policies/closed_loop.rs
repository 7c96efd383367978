//! `lab replay --policy P --closed-loop`: a replay in which what a policy
//! removed costs the agent later.
//!
//! The engine stays open-loop; the loop is closed around it. A run is
//! probed at every request for the session's demands
//! ([`crate::import::demands::extract`] on the recorded messages): is the
//! demanded source still verbatim in the request the policy sent at the
//! demanding call? When it is not, the agent is assumed to get it back the
//! cheapest way the run leaves open:
//!
//! 1. a **recovery call**: a pointer the policy left in the request (its
//!    `pointer_rules()`) names a file of its storage that holds the source;
//!    the agent reads it (one call per file followed);
//! 2. a **re-fetch**: the source came from a read-like tool or a
//!    deterministic command, so the original call is made again;
//! 3. otherwise a **lost demand**: counted, the recorded reply kept and
//!    marked unsupported.
//!
//! The recovery calls and re-fetches are inserted as call/result pairs just
//! before the demanding call, and the session is replayed again through a
//! fresh instance of the same policy, so the inserted calls enter the
//! history, can trigger more compactions and are priced like every request.
//! Their removals are resolved in the next round, up to
//! [`Switches::rounds`]; each row says whether the loop converged.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;

use crate::error::LabResult;
use crate::import::demands::{Demand, DemandKind};
use crate::message::{Block, Content, Message};
use crate::policy::engine::{Observer, View};
use crate::policy::PolicyEvent;

/// The closed loop's switches (`--closed-loop`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Switches {
    /// Closed-loop rounds at most, each a replay of the session with the
    /// calls found so far inserted. Default 3: a fourth round found nothing
    /// new on the shared sessions tried, and each round is a whole replay.
    pub rounds: usize,
}

impl Default for Switches {
    fn default() -> Self {
        Switches { rounds: 3 }
    }
}

/// How one demand was met at its demanding call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// The source was verbatim in the request.
    InRequest,
    /// A pointer of the request reaches a file holding it: `path` is the
    /// file read, `hops` the files read to get there.
    Recovery {
        /// The file that holds the source.
        path: String,
        /// Reads needed (1 when the request names the file itself).
        hops: usize,
        /// The files read on the way, in order, each with what a Read of it
        /// returns (its first [`READ_LINES`] lines); `path` itself is not
        /// among them.
        via: Vec<(String, String)>,
    },
    /// The design's own search (a [`crate::policy::PointerRule::Search`]
    /// key in the request) returns it from the store: one call of `tool`.
    Searched {
        /// The design's search tool (`session_search`).
        tool: String,
        /// The store's key the request names (Hermes' session id).
        key: String,
    },
    /// The source's call can be made again.
    Refetch,
    /// Neither: the reply that used it is unsupported.
    Lost,
    /// A pointer of the request promises the source but its store cannot
    /// return it: a file it names is absent, or the searched store lacks
    /// the rows. Counted as a dangling recovery pointer, and lost.
    Dangling {
        /// The pointer (a path, or `tool:key`).
        pointer: String,
    },
}

/// One session under one policy, closed-loop: one row of the closed-loop
/// table and of `closed_loop` in `--format json`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct ClosedLoopRow {
    /// Session label.
    pub session: String,
    /// Policy name.
    pub policy: String,
    /// Demands of the recorded session.
    pub demands: usize,
    /// Demands whose source was verbatim in the request at the demanding
    /// call of the last round (the inserted calls' results included).
    pub in_request: usize,
    /// Reads inserted to follow the policy's pointers.
    pub recovery_calls: usize,
    /// Original calls inserted again.
    pub refetches: usize,
    /// Demands neither in the request nor reachable nor re-fetchable
    /// (the dangling ones included).
    pub lost_demands: usize,
    /// Lost demands whose request held a recovery pointer that promised the
    /// source but could not return it (a file it names is absent, a
    /// searched store lacks the rows): the design's recovery path is
    /// broken there.
    pub dangling_recovery_pointers: usize,
    /// Demands not probed: the source is not text (an image, a tool call)
    /// or the demanding call was not replayed (the run ended first). They
    /// are in no tier and in none of the counts above.
    pub unchecked: usize,
    /// Summary calls of the last round's run (priced runs only; 0 unpriced).
    pub compaction_calls: usize,
    /// Model calls of the open-loop run.
    pub open_calls: usize,
    /// Model calls of the last round's run (the inserted calls included).
    pub calls: usize,
    /// Dollars of the open-loop run (`--cost`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_dollars: Option<f64>,
    /// Dollars of the last round's run (`--cost`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dollars: Option<f64>,
    /// Closed-loop rounds run (0: no demand was unmet, the open-loop run is
    /// the closed-loop run).
    pub rounds: usize,
    /// Whether the last round found no demand left to insert a call for
    /// (false: stopped at [`Switches::rounds`]).
    pub converged: bool,
    /// How the loop was closed, for the reader: anchoring and stop.
    pub mode: String,
    /// What the figures rest on that is an estimate.
    pub estimates: Vec<String>,
    /// The last round's thrash.
    pub thrash: crate::replay::observe::thrash::Thrash,
    /// The demands in retention tiers, on the open-loop run.
    pub tiers: Tiers,
    /// Per demand (in [`crate::import::demands::extract`] order on the
    /// replayed messages), how the closed loop met it: what calibration
    /// compares with what the recorded agent did. Not in the JSON: the
    /// counts above are.
    #[serde(skip)]
    #[schemars(skip)]
    pub outcomes: Vec<Outcome>,
}

/// How the closed loop met one demand in the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Verbatim in the request at its call (no call inserted).
    InRequest,
    /// Read back through the policy's pointers (recovery calls inserted).
    Recovery,
    /// Its source call made again (a re-fetch inserted).
    Refetch,
    /// Neither: lost.
    Lost,
    /// Not probed (source not text, or its call never replayed).
    Unchecked,
}

impl Outcome {
    /// The name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::InRequest => "in request",
            Outcome::Recovery => "recovery",
            Outcome::Refetch => "re-fetch",
            Outcome::Lost => "lost",
            Outcome::Unchecked => "unchecked",
        }
    }

    /// Whether the closed loop inserted a call to get the source back.
    pub fn inserted(self) -> bool {
        matches!(self, Outcome::Recovery | Outcome::Refetch)
    }
}

/// Retention in tiers, of the session's demands at their
/// demanding calls in the open-loop run: each demand in exactly one tier.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Tiers {
    /// Verbatim in the request.
    pub in_request: usize,
    /// In a file a pointer of the request names.
    pub one_call_away: usize,
    /// In a file reached through more than one pointer.
    pub further_away: usize,
    /// Not reachable, but the source's call can be made again.
    pub refetchable: usize,
    /// None of these.
    pub lost: usize,
}

impl Tiers {
    /// The tiers of `found` (demands whose call never came are in none).
    fn of(found: &[Option<Resolution>]) -> Tiers {
        let mut t = Tiers::default();
        for r in found.iter().flatten() {
            match r {
                Resolution::InRequest => t.in_request += 1,
                Resolution::Recovery { hops: 1, .. } => t.one_call_away += 1,
                Resolution::Recovery { .. } => t.further_away += 1,
                Resolution::Searched { .. } => t.one_call_away += 1,
                Resolution::Refetch => t.refetchable += 1,
                Resolution::Lost | Resolution::Dangling { .. } => t.lost += 1,
            }
        }
        t
    }
}

/// The inserted result's size and the demand's evidence: what the agent
/// got back and where the reply used it.
#[derive(Debug, Clone)]
struct Need {
    /// The source block's text as recorded.
    source: String,
    /// The demand's span, checked in foreign blocks when the source as a
    /// whole is gone (a span kept by a summary still serves).
    span: Option<String>,
    /// The source's tool call, when re-fetchable.
    refetch: Option<(String, serde_json::Value)>,
}

/// The text of block `block` of `m`.
fn block_text(m: &Message, block: usize) -> Option<&str> {
    match &m.content {
        Content::Text(t) => (block == 0).then_some(t.as_str()),
        Content::Blocks(bs) => match bs.get(block)? {
            Block::Text { text } => Some(text),
            Block::ToolResult { content, .. } => Some(content),
            _ => None,
        },
    }
}

/// What each demand needs, by demand.
fn needs(messages: &[Message], demands: &[Demand]) -> Vec<Option<Need>> {
    let mut calls: BTreeMap<&str, (&str, &serde_json::Value)> = BTreeMap::new();
    for m in messages {
        if let Content::Blocks(bs) = &m.content {
            for b in bs {
                if let Block::ToolUse { id, name, input } = b {
                    calls.insert(id, (name, input));
                }
            }
        }
    }
    demands
        .iter()
        .map(|d| {
            let source = block_text(messages.get(d.source)?, d.source_block)?.to_string();
            if source.is_empty() {
                return None;
            }
            let call = d.source_tool.as_deref().and_then(|id| calls.get(id));
            let refetch = call
                .filter(|(name, input)| {
                    d.kind == DemandKind::Reread || crate::import::demands::refetchable(name, input)
                })
                .map(|(name, input)| (name.to_string(), (*input).clone()));
            Some(Need {
                source,
                // A re-read's span is the path, which the model's own call
                // keeps: it says nothing about the content.
                span: (d.kind != DemandKind::Reread).then(|| d.span.clone()),
                refetch,
            })
        })
        .collect()
}

/// Whether `need` is met by `request`.
fn in_request(need: &Need, request: &[Message]) -> bool {
    request.iter().any(|m| match &m.content {
        Content::Text(t) => {
            t.contains(&need.source) || need.span.as_ref().is_some_and(|s| t.contains(s))
        }
        Content::Blocks(bs) => bs.iter().any(|b| match b {
            Block::ToolResult { content, .. } => {
                content.contains(&need.source)
                    || need.span.as_ref().is_some_and(|s| content.contains(s))
            }
            Block::Text { text } => text.contains(&need.source),
            _ => false,
        }),
    })
}

/// The strings of a JSON document, joined: archives hold the source escaped.
fn decoded(text: &str) -> String {
    fn walk(v: &serde_json::Value, out: &mut String) {
        match v {
            serde_json::Value::String(s) => {
                out.push_str(s);
                out.push('\n');
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            serde_json::Value::Object(o) => o.values().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut out = String::new();
    for line in text.lines() {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
            walk(&v, &mut out);
        }
    }
    out
}

/// Lines a Read of a file on a pointer chain returns: Claude Code's Read
/// tool "reads up to 2000 lines starting from the beginning of the file"
/// (its tool description in the 2.1.153 wire capture, read 2026-12-07).
pub const READ_LINES: usize = 2_000;

/// What a Read of `text` returns: its first [`READ_LINES`] lines.
fn read_result(text: &str) -> String {
    match text.match_indices('\n').nth(READ_LINES - 1) {
        Some((i, _)) => text[..=i].to_string(),
        None => text.to_string(),
    }
}

/// The first file the request's pointers reach (breadth first through the
/// pointers files hold) whose text holds the source, as a
/// [`Resolution::Recovery`]: the file, the reads to it, and the files read
/// on the way with what each Read returned.
fn recover(need: &Need, request: &[Message], view: &View<'_>) -> Option<Resolution> {
    let start = crate::policy::findings::pointers_in_messages(view.rules, request);
    // Each entry: a path and the index of the entry whose file pointed to
    // it (None: the request itself), so the chain can be walked back.
    let mut frontier: Vec<(String, Option<usize>)> = start.into_iter().map(|p| (p, None)).collect();
    let mut texts: Vec<Option<String>> = Vec::new();
    let mut seen = HashSet::new();
    let mut dangling: Option<String> = None;
    let mut i = 0;
    while i < frontier.len() {
        let (path, _) = frontier[i].clone();
        texts.push(None);
        i += 1;
        if !seen.insert(path.clone()) {
            continue;
        }
        if view.storage.kind(Path::new(&path)).is_none() {
            // A pointer into the policy's own storage that names nothing
            // promises what no read can return.
            if Path::new(&path).starts_with(view.root) && dangling.is_none() {
                dangling = Some(path);
            }
            continue;
        }
        let bytes = view.storage.read(Path::new(&path)).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let holds =
            |t: &str| t.contains(&need.source) || need.span.as_ref().is_some_and(|s| t.contains(s));
        if holds(&text) || holds(&decoded(&text)) {
            let mut via = Vec::new();
            let mut at = frontier[i - 1].1;
            while let Some(k) = at {
                let read = texts[k].as_deref().map(read_result).unwrap_or_default();
                via.push((frontier[k].0.clone(), read));
                at = frontier[k].1;
            }
            via.reverse();
            return Some(Resolution::Recovery {
                path,
                hops: via.len() + 1,
                via,
            });
        }
        for p in crate::policy::findings::pointers_in_file(view.rules, &text) {
            frontier.push((p, Some(i - 1)));
        }
        texts[i - 1] = Some(text);
    }
    if let Some(found) = search(need, request, view) {
        return Some(found);
    }
    dangling.map(|pointer| Resolution::Dangling { pointer })
}

/// The design's own search ([`crate::policy::PointerRule::Search`]): a
/// key the request names, and the store's rows under it holding the
/// source ([`Resolution::Searched`]); rows that lack it, or no store at
/// all, make the key a dangling pointer (the footer promised them).
fn search(need: &Need, request: &[Message], view: &View<'_>) -> Option<Resolution> {
    let mut dangling = None;
    for rule in view.rules {
        let crate::policy::PointerRule::Search { store, tool, .. } = rule else {
            continue;
        };
        let mut keys = BTreeSet::new();
        for m in request {
            match &m.content {
                Content::Text(t) => keys.extend(rule.search_keys(t)),
                Content::Blocks(bs) => {
                    for b in bs {
                        match b {
                            Block::Text { text } => keys.extend(rule.search_keys(text)),
                            Block::ToolResult { content, .. } => {
                                keys.extend(rule.search_keys(content))
                            }
                            _ => {}
                        }
                    }
                }
            }
        }
        for key in keys {
            let path = view.root.join(store.as_ref()).join(format!("{key}.jsonl"));
            let rows = view
                .storage
                .read(&path)
                .map(|b| decoded(&String::from_utf8_lossy(&b)))
                .unwrap_or_default();
            let holds =
                rows.contains(&need.source) || need.span.as_ref().is_some_and(|s| rows.contains(s));
            if holds {
                return Some(Resolution::Searched {
                    tool: tool.to_string(),
                    key: key.to_string(),
                });
            }
            dangling.get_or_insert_with(|| format!("{tool}:{key}"));
        }
    }
    dangling.map(|pointer| Resolution::Dangling { pointer })
}

/// A session's demands and what each needs, made once before its
/// open-loop run, so that run is probed too: it is the closed loop's first
/// round, not replayed again.
#[derive(Debug)]
pub struct Demands {
    demands: Vec<Demand>,
    needs: Vec<Option<Need>>,
}

impl Demands {
    /// The demands of `messages` (the session as replayed).
    pub fn of(messages: &[Message]) -> Demands {
        let demands = crate::import::demands::extract(messages);
        let needs = needs(messages, &demands);
        Demands { demands, needs }
    }

    /// The observer of a run of the session itself (no call inserted).
    pub fn probe(&self) -> Probe<'_> {
        let mut probe = Probe {
            at: BTreeMap::new(),
            needs: &self.needs,
            found: vec![None; self.demands.len()],
        };
        for (id, d) in self.demands.iter().enumerate() {
            probe.at.entry(d.at).or_default().push(id);
        }
        probe
    }
}

/// The observer that resolves demands at their demanding calls.
pub struct Probe<'a> {
    /// Demand ids by the index, in the replayed messages, of the demanding
    /// message.
    at: BTreeMap<usize, Vec<usize>>,
    needs: &'a [Option<Need>],
    /// Per demand, its resolution in this run (`None`: its call never came,
    /// the run ended early).
    found: Vec<Option<Resolution>>,
}

impl Probe<'_> {
    /// Per demand, its resolution in the run observed.
    pub fn found(self) -> Vec<Option<Resolution>> {
        self.found
    }
}

impl Observer for Probe<'_> {
    fn on_request(
        &mut self,
        _call: usize,
        at: usize,
        request: &[Message],
        _events: &[PolicyEvent],
        view: &View<'_>,
    ) {
        let Some(ids) = self.at.get(&at) else { return };
        for &id in ids {
            let Some(need) = &self.needs[id] else {
                continue;
            };
            let r = if in_request(need, request) {
                Resolution::InRequest
            } else if let Some(r) = recover(need, request, view) {
                r
            } else if need.refetch.is_some() {
                Resolution::Refetch
            } else {
                Resolution::Lost
            };
            self.found[id] = Some(r);
        }
    }
}

/// A call/result pair inserted before a demanding message.
#[derive(Debug, Clone)]
struct Inserted {
    /// Original index of the demanding message.
    before: usize,
    /// The pair(s): assistant tool_use, user tool_result.
    messages: Vec<Message>,
    /// Recovery reads (0 for a re-fetch).
    recovery_calls: usize,
    refetch: bool,
}

/// The pair(s) that get `need` back as `r` says: one Read per file on the
/// pointer chain, each returning what a Read of that file returns, then
/// the file holding the source, whose Read returns the source as recorded
/// (what the demanding reply used: a lower bound when the file holds more,
/// as an agent reading with an offset would); or one re-fetch.
///
/// A file on the chain that an earlier pair before the same call read
/// already (`read`, updated here) is not read again: the agent has it.
fn pairs(
    id: usize,
    round: usize,
    need: &Need,
    r: &Resolution,
    read: &mut HashSet<String>,
) -> Vec<Message> {
    let reads: Vec<(String, serde_json::Value, String)> = match (r, &need.refetch) {
        (Resolution::Recovery { path, via, .. }, _) => via
            .iter()
            .filter(|(p, _)| read.insert(p.clone()))
            .map(|(p, read)| (p.as_str(), read.clone()))
            .chain([(path.as_str(), need.source.clone())])
            .map(|(p, result)| {
                (
                    "Read".to_string(),
                    serde_json::json!({ "file_path": p }),
                    result,
                )
            })
            .collect(),
        (Resolution::Searched { tool, key }, _) => {
            // The query: the words the reply used, else the source's start.
            let query: String = need
                .span
                .clone()
                .unwrap_or_else(|| need.source.lines().next().unwrap_or("").to_string())
                .chars()
                .take(80)
                .collect();
            vec![(
                tool.clone(),
                serde_json::json!({ "query": query, "session_id": key }),
                need.source.clone(),
            )]
        }
        (Resolution::Refetch, Some((name, input))) => {
            vec![(name.clone(), input.clone(), need.source.clone())]
        }
        _ => return Vec::new(),
    };
    let mut out = Vec::new();
    for (hop, (name, input, result)) in reads.into_iter().enumerate() {
        let call_id = format!("closed-loop-{round}-{id}-{hop}");
        out.push(Message::assistant(vec![Block::ToolUse {
            id: call_id.clone(),
            name,
            input: input.into(),
        }]));
        out.push(Message::user_blocks(vec![Block::ToolResult {
            tool_use_id: call_id,
            content: result,
        }]));
    }
    out
}

/// The session with `inserted` in place, each original index's new one,
/// and the new indices of the inserted calls.
fn build(
    messages: &[Message],
    inserted: &[Inserted],
) -> (Vec<Message>, Vec<usize>, BTreeSet<usize>) {
    let mut by: BTreeMap<usize, Vec<&Inserted>> = BTreeMap::new();
    for i in inserted {
        by.entry(i.before).or_default().push(i);
    }
    let mut out = Vec::with_capacity(messages.len());
    let mut index = Vec::with_capacity(messages.len());
    let mut calls = BTreeSet::new();
    for (i, m) in messages.iter().enumerate() {
        for ins in by.get(&i).into_iter().flatten() {
            for m in &ins.messages {
                if m.role == crate::message::Role::Assistant {
                    calls.insert(out.len());
                }
                out.push(m.clone());
            }
        }
        index.push(out.len());
        out.push(m.clone());
    }
    (out, index, calls)
}

/// The session's setup with its per-message facts moved to the new indices
/// (an inserted message takes the time of the message it precedes).
fn remap(setup: &super::SessionSetup, index: &[usize], len: usize) -> super::SessionSetup {
    let mut s = setup.clone();
    s.dump = None;
    let at = |i: usize| index.get(i).copied().unwrap_or(len + i - index.len());
    s.prefix.anchors = setup
        .prefix
        .anchors
        .iter()
        .map(|(&k, v)| (at(k), *v))
        .collect();
    s.prefix.resumes = setup.prefix.resumes.iter().map(|&k| at(k)).collect();
    if let Some(times) = &setup.times_ms {
        let mut t = vec![None; len];
        let mut prev = 0;
        for (orig, &new) in index.iter().enumerate() {
            let time = times.get(orig).copied().flatten();
            for slot in t.iter_mut().take(new + 1).skip(prev) {
                *slot = time;
            }
            prev = new + 1;
        }
        s.times_ms = Some(t);
    }
    s
}

/// One probed run: the run, its cost, each demand's resolution.
struct Round {
    run: crate::policy::engine::PolicyRun,
    cost: Option<crate::cache::CostReport>,
    found: Vec<Option<Resolution>>,
    thrash: crate::replay::observe::thrash::Thrash,
}

/// `name` on `messages` (the original session with `inserted` in place),
/// probed for `demands`.
#[allow(clippy::too_many_arguments)]
fn round(
    label: &str,
    original: &[Message],
    inserted: &[Inserted],
    demands: &[Demand],
    needs: &[Option<Need>],
    name: &crate::policy::spec::PolicySpec,
    path_len: usize,
    measure: &super::Measure,
    setup: &super::SessionSetup,
) -> LabResult<Round> {
    let (messages, index, calls) = build(original, inserted);
    let setup = remap(setup, &index, messages.len());
    let mut probe = Probe {
        at: BTreeMap::new(),
        needs,
        found: vec![None; demands.len()],
    };
    for (id, d) in demands.iter().enumerate() {
        probe.at.entry(index[d.at]).or_default().push(id);
    }
    let (run, cost) = super::run_priced(
        label,
        &messages,
        name,
        path_len,
        measure,
        &setup,
        &mut [&mut probe],
    )?;
    Ok(Round {
        thrash: crate::replay::observe::thrash::of(&run, &calls),
        run,
        cost,
        found: probe.found,
    })
}

/// The closed-loop row of `name` on one session (`open`: its open-loop run
/// as reported beside it, probed for `prepared`'s demands: `found`).
#[allow(clippy::too_many_arguments)]
pub fn closed_loop(
    label: &str,
    messages: &[Message],
    name: &crate::policy::spec::PolicySpec,
    path_len: usize,
    measure: &super::Measure,
    setup: &super::SessionSetup,
    switches: Switches,
    open: &super::Compared,
    prepared: &Demands,
    found: Vec<Option<Resolution>>,
) -> LabResult<ClosedLoopRow> {
    let (demands, needs) = (&prepared.demands, &prepared.needs);
    let mut inserted: Vec<Inserted> = Vec::new();
    let mut handled: BTreeSet<usize> = BTreeSet::new();
    // Per demand, the kind of call inserted for it (in the round that met it).
    let mut inserted_as: BTreeMap<usize, Outcome> = BTreeMap::new();
    // Round 0 is the open-loop run itself, probed as it ran.
    let mut last = Round {
        thrash: crate::replay::observe::thrash::of(&open.run, &BTreeSet::new()),
        run: open.run.clone(),
        cost: open.cost.clone(),
        found,
    };
    let tiers = Tiers::of(&last.found);
    let mut rounds = 0;
    let mut converged = true;
    loop {
        // The demands this round left unmet that no earlier round resolved;
        // one pair per source and demanding call (two uses of one result in
        // one reply need one read).
        let mut fresh: BTreeMap<(usize, usize, usize), (usize, Resolution)> = BTreeMap::new();
        let mut pending: Vec<(usize, Outcome)> = Vec::new();
        for (id, r) in last.found.iter().enumerate() {
            let Some(
                r @ (Resolution::Recovery { .. }
                | Resolution::Searched { .. }
                | Resolution::Refetch),
            ) = r
            else {
                continue;
            };
            if handled.contains(&id) {
                continue;
            }
            pending.push((
                id,
                match r {
                    Resolution::Refetch => Outcome::Refetch,
                    _ => Outcome::Recovery,
                },
            ));
            let d = &demands[id];
            fresh
                .entry((d.at, d.source, d.source_block))
                .or_insert((id, r.clone()));
            handled.insert(id);
        }
        if fresh.is_empty() {
            break;
        }
        if rounds == switches.rounds {
            converged = false;
            break;
        }
        inserted_as.extend(pending);
        rounds += 1;
        // Chain files read before each demanding call in this round.
        let mut read: BTreeMap<usize, HashSet<String>> = BTreeMap::new();
        for ((at, _, _), (id, r)) in fresh {
            let Some(need) = &needs[id] else { continue };
            let pair = pairs(id, rounds, need, &r, read.entry(at).or_default());
            inserted.push(Inserted {
                before: at,
                recovery_calls: match r {
                    Resolution::Recovery { .. } | Resolution::Searched { .. } => pair.len() / 2,
                    _ => 0,
                },
                refetch: r == Resolution::Refetch,
                messages: pair,
            });
        }
        last = round(
            label, messages, &inserted, demands, needs, name, path_len, measure, setup,
        )?;
    }
    // A demand lost in any round stays lost: its reply was unsupported
    // there and no later insertion was made for it.
    let lost = last
        .found
        .iter()
        .enumerate()
        .filter(|(id, r)| {
            !handled.contains(id)
                && matches!(r, Some(Resolution::Lost | Resolution::Dangling { .. }))
        })
        .count();
    let dangling = last
        .found
        .iter()
        .enumerate()
        .filter(|(id, r)| !handled.contains(id) && matches!(r, Some(Resolution::Dangling { .. })))
        .count();
    let met = last
        .found
        .iter()
        .filter(|r| matches!(r, Some(Resolution::InRequest)))
        .count();
    let mut estimates = vec![
        "demands: extracted by heuristics (lab import --demands; precision and recall on the labelled set)".to_string(),
        "re-fetchable: read-like tools and read-only commands assumed to return what they returned".to_string(),
        "inserted results: the source's recorded size".to_string(),
    ];
    if last.cost.is_some() {
        estimates.push("dollars: sizes by the run's token counter".to_string());
    }
    Ok(ClosedLoopRow {
        session: label.to_string(),
        policy: name.to_string(),
        demands: demands.len(),
        in_request: met,
        recovery_calls: inserted.iter().map(|i| i.recovery_calls).sum(),
        refetches: inserted.iter().filter(|i| i.refetch).count(),
        lost_demands: lost,
        dangling_recovery_pointers: dangling,
        unchecked: last.found.iter().filter(|r| r.is_none()).count(),
        compaction_calls: last.cost.as_ref().map_or(0, |c| c.compaction_calls),
        open_calls: open.run.calls.len(),
        calls: last.run.calls.len(),
        open_dollars: open.cost.as_ref().map(|c| c.dollars),
        dollars: last.cost.as_ref().map(|c| c.dollars),
        rounds,
        converged,
        mode: format!(
            "recorded replies kept; calls inserted before the demanding call; {} of at most {} rounds{}",
            rounds,
            switches.rounds,
            if converged { ", converged" } else { ", stopped" }
        ),
        estimates,
        outcomes: last
            .found
            .iter()
            .enumerate()
            .map(|(id, r)| match (inserted_as.get(&id), r) {
                (Some(&o), _) => o,
                (None, Some(Resolution::InRequest)) => Outcome::InRequest,
                (None, Some(Resolution::Lost | Resolution::Dangling { .. })) => Outcome::Lost,
                // Met by a call inserted for another demand of its source.
                (None, Some(Resolution::Recovery { .. } | Resolution::Searched { .. })) => {
                    Outcome::Recovery
                }
                (None, Some(Resolution::Refetch)) => Outcome::Refetch,
                (None, None) => Outcome::Unchecked,
            })
            .collect(),
        thrash: last.thrash,
        tiers,
    })
}

/// The closed-loop table.
pub fn table(rows: &[&ClosedLoopRow], format: crate::render::Format) -> String {
    let money = |d: Option<f64>| d.map_or("-".to_string(), |d| format!("{d:.4}"));
    let head = [
        "session",
        "policy",
        "demands",
        "in request",
        "recovery calls",
        "re-fetches",
        "lost demands",
        "compaction calls",
        "calls (open → closed)",
        "open $",
        "closed-loop $ (est.)",
        "rounds",
        "tiers: verbatim/1 call/further/re-fetchable/lost",
    ];
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.session.clone(),
                r.policy.clone(),
                match r.unchecked {
                    0 => r.demands.to_string(),
                    n => format!("{} ({n} unchecked)", r.demands),
                },
                r.in_request.to_string(),
                r.recovery_calls.to_string(),
                r.refetches.to_string(),
                match r.dangling_recovery_pointers {
                    0 => r.lost_demands.to_string(),
                    n => format!("{} ({n} dangling pointer)", r.lost_demands),
                },
                r.compaction_calls.to_string(),
                format!("{} → {}", r.open_calls, r.calls),
                money(r.open_dollars),
                money(r.dollars),
                format!(
                    "{}{}",
                    r.rounds,
                    if r.converged { "" } else { " (stopped)" }
                ),
                format!(
                    "{}/{}/{}/{}/{}",
                    r.tiers.in_request,
                    r.tiers.one_call_away,
                    r.tiers.further_away,
                    r.tiers.refetchable,
                    r.tiers.lost
                ),
            ]
        })
        .collect();
    let markdown = format == crate::render::Format::Markdown;
    let mut s = crate::render::table(&head, body, markdown);
    s.push_str(
        "\nClosed loop: a demand (lab import --demands, an estimate) whose source is not in the \
         request at its call is read back through the policy's pointer (recovery call), made \
         again (re-fetch) or lost; the calls are inserted and the session replayed again.\n",
    );
    s
}

/// The thrash table: one row per closed-loop run.
pub fn thrash_table(rows: &[&ClosedLoopRow], format: crate::render::Format) -> String {
    let head = [
        "session",
        "policy",
        "compactions",
        "per 100k new tokens (est.)",
        "filled after (of peak, est.)",
        "inserted within 5 calls",
        "median calls between",
        "loop",
    ];
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let t = &r.thrash;
            vec![
                r.session.clone(),
                r.policy.clone(),
                t.compactions.to_string(),
                format!("{:.2}", t.per_100k_new_tokens),
                format!("{:.2}", t.filled_after),
                t.refetches_near_compaction.to_string(),
                t.calls_between_median.to_string(),
                if t.looping { "yes" } else { "" }.to_string(),
            ]
        })
        .collect();
    let markdown = format == crate::render::Format::Markdown;
    let mut s = crate::render::table(&head, body, markdown);
    s.push_str(
        "\nThrash, on the closed-loop run: a compaction is a call preceded by a removal and smaller than the call before; new tokens \
         sum the request's growth (a lower bound); the peak request stands in for the window; loop: \
         two or more compactions, most followed within 5 calls by a call to get content back.\n",
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn need() -> Need {
        Need {
            source: "fn parse() {}".into(),
            span: None,
            refetch: None,
        }
    }

    #[test]
    fn a_chain_reads_each_file_on_the_way_then_the_source() {
        let r = Resolution::Recovery {
            path: "/a/3.md".into(),
            hops: 3,
            via: vec![
                ("/a/1.md".into(), "see /a/2.md".into()),
                ("/a/2.md".into(), "older: /a/3.md\n".repeat(40)),
            ],
        };
        let mut read = HashSet::new();
        let msgs = pairs(7, 1, &need(), &r, &mut read);
        assert_eq!(msgs.len(), 6, "three reads, each a call and its result");
        // A second demand before the same call, through the same chain,
        // reads only the file that holds its source.
        assert_eq!(pairs(8, 1, &need(), &r, &mut read).len(), 2);
        let read = |k: usize| match &msgs[2 * k].content {
            Content::Blocks(b) => match &b[0] {
                Block::ToolUse { input, .. } => input["file_path"].as_str().unwrap().to_string(),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        };
        let result = |k: usize| match &msgs[2 * k + 1].content {
            Content::Blocks(b) => match &b[0] {
                Block::ToolResult { content, .. } => content.clone(),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        };
        // Each hop reads its own file, in chain order, and is sized as that
        // file's Read, not as the source.
        assert_eq!(
            [read(0), read(1), read(2)],
            ["/a/1.md", "/a/2.md", "/a/3.md"]
        );
        assert_eq!(result(0), "see /a/2.md");
        assert_eq!(result(1).len(), "older: /a/3.md\n".len() * 40);
        assert_eq!(result(2), "fn parse() {}");
    }

    #[test]
    fn a_pointer_to_an_absent_file_of_the_policy_dangles_and_a_present_one_is_read() {
        use crate::storage::Storage;
        let storage = crate::storage::MemFs::new();
        let root = Path::new("/ctxlab/p");
        storage.create_dir_all(root).unwrap();
        let rules = [crate::policy::PointerRule::line_prefix("Full output: ")];
        let view = View {
            storage: &storage,
            root,
            rules: &rules,
            tokens: &crate::tokens::Approx,
            envelope: 0,
            sizes: &[],
            same: &[],
        };
        let request = [Message::user_text("Full output: /ctxlab/p/memory/notes.md")];
        // The memory file the pointer names was never written.
        match recover(&need(), &request, &view) {
            Some(Resolution::Dangling { pointer }) => {
                assert_eq!(pointer, "/ctxlab/p/memory/notes.md")
            }
            other => panic!("{other:?}"),
        }
        // A pointer outside the policy's storage is no promise of its own.
        let outside = [Message::user_text("Full output: /home/me/notes.md")];
        assert_eq!(recover(&need(), &outside, &view), None);
        // Written, it holds the source: one read.
        storage
            .create_dir_all(Path::new("/ctxlab/p/memory"))
            .unwrap();
        storage
            .write(Path::new("/ctxlab/p/memory/notes.md"), b"fn parse() {}\n")
            .unwrap();
        assert!(matches!(
            recover(&need(), &request, &view),
            Some(Resolution::Recovery { hops: 1, .. })
        ));
    }

    #[test]
    fn a_read_returns_at_most_its_line_limit() {
        let long = "x\n".repeat(READ_LINES + 500);
        assert_eq!(read_result(&long).lines().count(), READ_LINES);
        assert_eq!(read_result("a\nb"), "a\nb");
    }
}
