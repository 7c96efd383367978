//! Retention: what the model can still reach after compaction, measured
//! without a judge.
//!
//! A [`Retention`] observer watches a policy replay. Every artifact a recorded
//! message introduces ([`extract`]) or a planted fact is, after each request,
//! **present** (verbatim somewhere in the request), **reachable** (verbatim in a
//! file that the request's pointers lead to, by the policy's own grammar, and
//! that still exists), or **gone**. The first request where an artifact is gone
//! names the mechanisms (the policy's events) that ran before it. Re-fetch
//! demand counts later tool calls that fetch again (same file, same command)
//! what the policy had removed from the request the model answered.

pub mod drift;
pub mod extract;
pub mod facts;
mod finder;
pub mod planted;
mod reach;
pub mod render;
mod scan;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use serde::Serialize;

use crate::fingerprint::fingerprint;
use crate::message::{Block, Content, Message};
use crate::policy::engine::{event_kind, Observer, View};
use crate::policy::PolicyEvent;
pub use extract::ArtifactKind;
use finder::{Finder, Key, Patterns};

/// Where an artifact stands at a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Verbatim in the request.
    Present,
    /// Verbatim in an existing file the request's pointers lead to.
    Reachable,
    /// Neither.
    Gone,
}

/// What kind of content an artifact is, by the block that brought it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// What the user wrote (a constraint, a rule, a value they stated).
    Instruction,
    /// What the agent wrote: its tool calls' inputs (paths, commands,
    /// searched identifiers), its text and thinking.
    TaskState,
    /// What a tool returned.
    ToolOutput,
}

impl Origin {
    /// Every origin, in table order.
    pub const ALL: [Origin; 3] = [Origin::Instruction, Origin::TaskState, Origin::ToolOutput];

    /// Name for tables.
    pub fn name(self) -> &'static str {
        match self {
            Origin::Instruction => "instruction",
            Origin::TaskState => "task state",
            Origin::ToolOutput => "tool output",
        }
    }

    /// The origin of content in a block of a message of `role`: a user
    /// message's tool result (`id` set) is tool output, its text an
    /// instruction; anything the assistant wrote is task state.
    fn of(role: crate::message::Role, id: Option<&str>) -> Origin {
        match (role, id) {
            (crate::message::Role::User, Some(_)) => Origin::ToolOutput,
            (crate::message::Role::User, None) => Origin::Instruction,
            _ => Origin::TaskState,
        }
    }
}

/// Where artifacts stand at the last request, in four tiers: each artifact
/// in exactly one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Tiers {
    /// Verbatim in the request.
    pub in_request: usize,
    /// Behind a pointer: verbatim in a file the request's pointers reach
    /// (one call away or more: this measure does not count the hops).
    pub behind_pointer: usize,
    /// Gone, but the call that brought it is a read-like tool or a
    /// read-only command ([`crate::demands::refetchable`]), so it
    /// can be made again.
    pub refetchable: usize,
    /// None of these.
    pub lost: usize,
}

impl Tiers {
    /// The tiers of `artifacts`.
    fn of<'a>(artifacts: impl IntoIterator<Item = &'a Artifact>) -> Tiers {
        let mut t = Tiers::default();
        for a in artifacts {
            match (a.status, a.refetchable) {
                (Status::Present, _) => t.in_request += 1,
                (Status::Reachable, _) => t.behind_pointer += 1,
                (Status::Gone, true) => t.refetchable += 1,
                (Status::Gone, false) => t.lost += 1,
            }
        }
        t
    }

    /// Artifacts in any tier.
    pub fn total(&self) -> usize {
        self.in_request + self.behind_pointer + self.refetchable + self.lost
    }

    /// `verbatim/pointer/re-fetchable/lost`, as tables print it.
    pub fn cell(&self) -> String {
        format!(
            "{}/{}/{}/{}",
            self.in_request, self.behind_pointer, self.refetchable, self.lost
        )
    }
}

/// One artifact and its fate.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Artifact {
    /// What it is.
    pub kind: ArtifactKind,
    /// Its text (a label for planted facts).
    pub label: String,
    /// The verbatim text searched for.
    #[serde(skip)]
    pub text: String,
    /// Status at the last request.
    pub status: Status,
    /// The tool call whose input or result introduced it.
    #[serde(skip)]
    pub source_id: Option<String>,
    /// What kind of content it is, by the block that brought it.
    pub origin: Origin,
    /// The call that brought it can be made again (set at the end of the
    /// replay from the calls seen).
    pub refetchable: bool,
    /// The first request (0-based) at which it was gone, if ever.
    pub first_gone: Option<usize>,
    /// The policy's event kinds at that request that concern it: events on
    /// its tool call, else events on no call (summaries, drops); `none` when
    /// the policy recorded nothing that explains the loss.
    pub mechanisms: Vec<&'static str>,
}

/// Recall at one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct RecallPoint {
    /// 0-based request.
    pub call: usize,
    /// Artifacts seen before it.
    pub seen: usize,
    /// Present verbatim.
    pub present: usize,
    /// Reachable through a pointer.
    pub reachable: usize,
}

/// The observer; [`Retention::finish`] gives the report.
#[derive(Debug, Default)]
pub struct Retention {
    artifacts: Vec<Artifact>,
    index: HashMap<(ArtifactKind, String), usize>,
    facts: Vec<(String, String)>,
    finder: Finder,
    /// The last request's messages as read ([`scan`]).
    scans: scan::Scans,
    /// The files pointers reached ([`reach`]).
    reach: reach::Reach,
    series: Vec<RecallPoint>,
    refetch: Refetch,
    keyed: facts::FactLedger,
    /// The session this observer was prepared for, if it was.
    prepared: Option<Arc<Prepared>>,
    /// Ids of the calls seen that could be made again.
    refetchable_calls: HashSet<String>,
}

/// What a message brings: kind, label, verbatim text, source call id, origin.
type Brought = (ArtifactKind, String, String, Option<String>, Origin);

/// What every retention run over one session shares, made once
/// ([`Retention::prepare`]): the session, what each of its messages
/// brings, and the automata over all of it. Every policy replays the same
/// session; without it each run extracted every message's artifacts
/// twice and built its own automata.
#[derive(Debug)]
pub struct Prepared {
    messages: Vec<Message>,
    facts: Vec<(String, String)>,
    brings: Vec<Vec<Brought>>,
    patterns: Arc<Patterns>,
}

impl Prepared {
    /// The session it was prepared for.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }
}

/// The tool results of some messages: call id and the content's
/// fingerprint, in order.
type Results = Arc<Vec<(String, (u64, usize))>>;

/// An earlier fetch: its call id and its result's fingerprint once it arrived.
type Fetch = (String, Option<(u64, usize)>);

/// Re-fetch bookkeeping.
#[derive(Debug, Default)]
struct Refetch {
    /// Fetch key -> each earlier fetch.
    earlier: HashMap<(ArtifactKind, String), Vec<Fetch>>,
    /// Call id -> the keys it fetched (one, unless ids repeat), so a result
    /// finds its fetch without a scan of every key.
    keys_of: HashMap<String, Vec<(ArtifactKind, String)>>,
    /// Results present verbatim in the last request: (id, fingerprint),
    /// per message. Kept as the scans' own lists (shared, not copied into
    /// a set at every request): they are looked up only when a call
    /// fetches again what an earlier call fetched.
    last_present: Vec<Results>,
    /// Ids of calls counted as re-fetches whose result has not arrived.
    pending: HashSet<String>,
    /// Results of re-fetches, counted in tokens at the next request.
    to_count: Vec<String>,
    calls: usize,
    tokens: usize,
    samples: Vec<String>,
}

/// Every string a request carries, one per line: texts, tool inputs, results,
/// thinking.
pub fn request_text(request: &[Message]) -> String {
    request_pieces(request).0
}

/// [`request_text`] and the end of each block's piece of it. Every piece
/// ends with a newline, so a text without one is found in the request
/// exactly when it is found in one of its pieces.
fn request_pieces(request: &[Message]) -> (String, Vec<usize>) {
    let mut out = String::new();
    let mut ends = Vec::new();
    for m in request {
        match &m.content {
            Content::Text(t) => {
                out.push_str(t);
                out.push('\n');
                ends.push(out.len());
            }
            Content::Blocks(blocks) => {
                for b in blocks {
                    match b {
                        Block::Text { text: t }
                        | Block::Thinking { thinking: t }
                        | Block::ToolResult { content: t, .. }
                        | Block::Image { source: t } => {
                            out.push_str(t);
                            out.push('\n');
                        }
                        Block::ToolUse { input, .. } => collect_strings(input, &mut out),
                        // Its content is not known: nothing to find in it.
                        Block::Unlogged { .. } => {}
                    }
                    ends.push(out.len());
                }
            }
        }
    }
    (out, ends)
}

impl Retention {
    /// An observer that also follows `facts`: `(label, verbatim text)` pairs,
    /// counted from the message that first contains them.
    pub fn with_facts(facts: Vec<(String, String)>) -> Self {
        Retention {
            facts,
            ..Retention::default()
        }
    }

    /// [`Retention::with_facts`] for a replay of `messages`: every artifact
    /// they bring is searched for with one automaton built here, instead of
    /// one rebuilt at each request that brings new artifacts. The report is
    /// the same.
    pub fn for_session(messages: &[Message], facts: Vec<(String, String)>) -> Self {
        Retention::from_prepared(&Retention::prepare(messages, facts))
    }

    /// What every [`Retention::from_prepared`] observer of a replay of
    /// `messages` with `facts` shares.
    pub fn prepare(messages: &[Message], facts: Vec<(String, String)>) -> Arc<Prepared> {
        let brings: Vec<Vec<Brought>> = messages.iter().map(|m| artifacts_of(m, &facts)).collect();
        let patterns = brings
            .iter()
            .flatten()
            .map(|(kind, _, text, _, _)| (*kind, text.clone()))
            .collect();
        Arc::new(Prepared {
            messages: messages.to_vec(),
            facts,
            brings,
            patterns: Arc::new(Patterns::new(patterns)),
        })
    }

    /// [`Retention::for_session`] from a preparation shared with other
    /// runs of the same session: the report is the same.
    pub fn from_prepared(prepared: &Arc<Prepared>) -> Self {
        Retention {
            facts: prepared.facts.clone(),
            finder: Finder::sharing(Arc::clone(&prepared.patterns)),
            prepared: Some(Arc::clone(prepared)),
            ..Retention::default()
        }
    }

    fn add(&mut self, (kind, label, text, source_id, origin): Brought) {
        let key: Key = (kind, text.clone());
        if self.index.contains_key(&key) {
            return;
        }
        self.finder.register(&key, self.artifacts.len());
        self.index.insert(key, self.artifacts.len());
        self.artifacts.push(Artifact {
            kind,
            label,
            text,
            source_id,
            origin,
            refetchable: false,
            status: Status::Present,
            first_gone: None,
            mechanisms: vec![],
        });
    }

    /// Per artifact, whether it is present in the request the scans were
    /// last updated with, and whether it is reachable (never both).
    fn statuses(&mut self, request: &[Message], view: &View<'_>) -> (Vec<bool>, Vec<bool>) {
        let n = self.artifacts.len();
        let scans = self.scans.current();
        let mut present = vec![false; n];
        let lines = scans.iter().flat_map(|s| s.lines.iter().copied());
        self.finder
            .mark_present_in(lines, request, self.scans.kept(), &mut present);
        let mut reachable = vec![false; n];
        if present.iter().all(|&p| p) || view.rules.is_empty() {
            return (present, reachable);
        }
        // The checker's walk: pointers block by block, then through files.
        let pointers: BTreeSet<&String> = scans.iter().flat_map(|s| &s.pointers).collect();
        let pointers = pointers.into_iter().cloned().collect();
        self.reach
            .mark(&mut self.finder, pointers, &present, &mut reachable, view);
        (present, reachable)
    }

    /// The report, after the replay.
    pub fn finish(mut self) -> RetentionReport {
        let classes = self.keyed.finish();
        for a in &mut self.artifacts {
            a.refetchable = a
                .source_id
                .as_ref()
                .is_some_and(|id| self.refetchable_calls.contains(id));
        }
        RetentionReport::new(self.artifacts, self.series, self.refetch, classes)
    }
}

fn collect_strings(v: &serde_json::Value, out: &mut String) {
    match v {
        serde_json::Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| collect_strings(x, out)),
        serde_json::Value::Object(o) => o.values().for_each(|x| collect_strings(x, out)),
        _ => {}
    }
}

impl Observer for Retention {
    fn on_message(&mut self, index: usize, m: &Message) {
        // The prepared session's message `index` brings what was read of it
        // once; any other message is read now.
        let brought = self
            .prepared
            .as_ref()
            .filter(|p| p.messages.get(index) == Some(m))
            .map(|p| p.brings[index].clone());
        let brought = brought.unwrap_or_else(|| artifacts_of(m, &self.facts));
        for b in brought {
            self.add(b);
        }
        for b in m.blocks() {
            if let Block::ToolUse { id, name, input } = b {
                if crate::demands::refetchable(name, input) {
                    self.refetchable_calls.insert(id.clone());
                }
            }
        }
        self.refetch.on_message(m);
        self.keyed.on_message(m);
    }

    fn on_request(
        &mut self,
        call: usize,
        _at: usize,
        request: &[Message],
        events: &[PolicyEvent],
        view: &View<'_>,
    ) {
        self.scans.update(request, view, &mut self.finder);
        let scans = self.scans.current();
        self.refetch
            .on_results(scans.iter().map(|s| Arc::clone(&s.results)), view);
        self.keyed
            .on_facts(call, scans.iter().flat_map(|s| &s.facts));
        let (present, reachable) = self.statuses(request, view);
        for (i, a) in self.artifacts.iter_mut().enumerate() {
            a.status = if present[i] {
                Status::Present
            } else if reachable[i] {
                Status::Reachable
            } else {
                Status::Gone
            };
            if a.status == Status::Gone && a.first_gone.is_none() {
                a.first_gone = Some(call);
                a.mechanisms = mechanisms(events, a.source_id.as_deref());
            }
        }
        let count = |v: &[bool]| v.iter().filter(|&&x| x).count();
        self.series.push(RecallPoint {
            call,
            seen: self.artifacts.len(),
            present: count(&present),
            reachable: count(&reachable),
        });
    }
}

/// What `m` brings, in the order it is added: its extracted artifacts, then
/// the `facts` its text holds, as (kind, label, text, source call id).
fn artifacts_of(m: &Message, facts: &[(String, String)]) -> Vec<Brought> {
    let mut out: Vec<_> = extract::artifacts(m)
        .into_iter()
        .map(|(kind, text, id)| {
            let origin = Origin::of(m.role, id.as_deref());
            (kind, text.clone(), text, id, origin)
        })
        .collect();
    if !facts.is_empty() {
        let text = request_text(std::slice::from_ref(m));
        for (label, fact) in facts.iter().filter(|(_, f)| text.contains(f.as_str())) {
            let id = extract::block_id_holding(m, fact);
            let origin = Origin::of(m.role, id.as_deref());
            out.push((ArtifactKind::Fact, label.clone(), fact.clone(), id, origin));
        }
    }
    out
}

/// The tool call an event concerns, if it names one.
fn event_id(e: &PolicyEvent) -> Option<&str> {
    match e {
        PolicyEvent::Persisted { id, .. }
        | PolicyEvent::Cleared { id, .. }
        | PolicyEvent::Truncated { id, .. }
        | PolicyEvent::Repaired { id, .. } => Some(id),
        _ => None,
    }
}

/// The kinds of the events that explain a loss of something from call `id`.
fn mechanisms(events: &[PolicyEvent], id: Option<&str>) -> Vec<&'static str> {
    let mine: Vec<&PolicyEvent> = events
        .iter()
        .filter(|e| id.is_some() && event_id(e) == id)
        .collect();
    let chosen = if mine.is_empty() {
        events.iter().filter(|e| event_id(e).is_none()).collect()
    } else {
        mine
    };
    let mut out: Vec<&'static str> = chosen.into_iter().map(event_kind).collect();
    out.sort_unstable();
    out.dedup();
    if out.is_empty() {
        out.push("none");
    }
    out
}

impl Refetch {
    fn on_message(&mut self, m: &Message) {
        for b in m.blocks() {
            match b {
                Block::ToolUse { id, input, .. } => {
                    let Some(key) = extract::fetch_key(input) else {
                        continue;
                    };
                    let earlier = self.earlier.entry(key.clone()).or_default();
                    let removed = !earlier.is_empty()
                        && !earlier.iter().any(|(eid, fp)| {
                            fp.is_some_and(|fp| {
                                self.last_present
                                    .iter()
                                    .flat_map(|r| r.iter())
                                    .any(|(id, f)| id == eid && *f == fp)
                            })
                        });
                    if removed {
                        self.calls += 1;
                        self.pending.insert(id.clone());
                        if self.samples.len() < 3 {
                            self.samples.push(format!("{}: {}", key.0.name(), key.1));
                        }
                    }
                    earlier.push((id.clone(), None));
                    self.keys_of.entry(id.clone()).or_default().push(key);
                }
                Block::ToolResult {
                    tool_use_id,
                    content,
                } => {
                    let fp = fingerprint(content);
                    for key in self.keys_of.get(tool_use_id).into_iter().flatten() {
                        let list = self.earlier.get_mut(key).into_iter().flatten();
                        for e in list.filter(|e| e.0 == *tool_use_id && e.1.is_none()) {
                            e.1 = Some(fp);
                        }
                    }
                    if self.pending.remove(tool_use_id) {
                        self.to_count.push(content.clone());
                    }
                }
                _ => {}
            }
        }
    }

    fn on_request(&mut self, request: &[Message], view: &View<'_>) {
        let results = Arc::new(scan::result_fingerprints(request));
        self.on_results(std::iter::once(results), view);
    }

    /// A request was sent whose tool results are `results`: (call id,
    /// fingerprint of the content).
    fn on_results(&mut self, results: impl Iterator<Item = Results>, view: &View<'_>) {
        for t in self.to_count.drain(..) {
            self.tokens += view.tokens.count(&t);
        }
        self.last_present = results.collect();
    }
}

/// Re-fetch demand alone, as an observer: what [`Retention`] counts as
/// re-fetches, without following artifacts (for runs too long to search
/// every request for every artifact).
#[derive(Debug, Default)]
pub struct RefetchDemand(Refetch);

impl RefetchDemand {
    /// Later calls so far that fetched again what the policy had removed.
    pub fn calls(&self) -> usize {
        self.0.calls
    }

    /// Tokens of those calls' results counted so far.
    pub fn tokens(&self) -> usize {
        self.0.tokens
    }
}

impl Observer for RefetchDemand {
    fn on_message(&mut self, _index: usize, m: &Message) {
        self.0.on_message(m);
    }

    fn on_request(
        &mut self,
        _call: usize,
        _at: usize,
        request: &[Message],
        _events: &[PolicyEvent],
        view: &View<'_>,
    ) {
        self.0.on_request(request, view);
    }
}

/// Per-kind figures at the end.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct KindFigures {
    /// Artifacts of this kind seen.
    pub seen: usize,
    /// Present or reachable at the last request.
    pub kept: usize,
}

/// What a replay kept, per artifact kind and over time.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct RetentionReport {
    /// Artifacts seen in the session.
    pub artifacts: usize,
    /// Present at the last request.
    pub present: usize,
    /// Reachable through a pointer at the last request.
    pub reachable: usize,
    /// Percent of the artifacts present or reachable at the last request:
    /// 100 × (present + reachable) / artifacts; 100 when there are none.
    /// Percent like every printed table and `lab check`.
    pub artifact_recall: f64,
    /// Per kind.
    pub by_kind: BTreeMap<ArtifactKind, KindFigures>,
    /// Later calls that fetched again what the policy had removed.
    pub refetch_calls: usize,
    /// Tokens of those calls' results.
    pub refetch_tokens: usize,
    /// A few re-fetched keys.
    pub refetch_samples: Vec<String>,
    /// Planted facts and their fate.
    pub facts: Vec<Artifact>,
    /// A few gone artifacts (not facts), for reading.
    pub gone_samples: Vec<Artifact>,
    /// Recall at every request.
    pub series: Vec<RecallPoint>,
    /// Keyed facts ([`facts`]): held with a value never stated (mutated),
    /// or at a superseded value while the latest is lost (stale).
    pub classes: facts::FactClasses,
    /// Every artifact (planted facts included, as in `artifacts`) in
    /// tiers at the last request: `in_request + behind_pointer` is
    /// `present + reachable`.
    pub tiers: Tiers,
    /// The planted facts alone in tiers.
    pub fact_tiers: Tiers,
    /// Every artifact in tiers by what kind of content it is (instruction,
    /// task state, tool output).
    pub by_origin: BTreeMap<Origin, Tiers>,
}

impl RetentionReport {
    fn new(
        artifacts: Vec<Artifact>,
        series: Vec<RecallPoint>,
        refetch: Refetch,
        classes: facts::FactClasses,
    ) -> Self {
        let kept = |a: &Artifact| a.status != Status::Gone;
        let mut by_kind: BTreeMap<ArtifactKind, KindFigures> = BTreeMap::new();
        for a in &artifacts {
            let k = by_kind.entry(a.kind).or_default();
            k.seen += 1;
            k.kept += usize::from(kept(a));
        }
        let present = artifacts
            .iter()
            .filter(|a| a.status == Status::Present)
            .count();
        let reachable = artifacts
            .iter()
            .filter(|a| a.status == Status::Reachable)
            .count();
        let n = artifacts.len();
        RetentionReport {
            artifacts: n,
            present,
            reachable,
            artifact_recall: if n == 0 {
                100.0
            } else {
                100.0 * (present + reachable) as f64 / n as f64
            },
            by_kind,
            refetch_calls: refetch.calls,
            refetch_tokens: refetch.tokens,
            refetch_samples: refetch.samples,
            facts: artifacts
                .iter()
                .filter(|a| a.kind == ArtifactKind::Fact)
                .cloned()
                .collect(),
            gone_samples: artifacts
                .iter()
                .filter(|a| a.kind != ArtifactKind::Fact && !kept(a))
                .take(3)
                .cloned()
                .collect(),
            series,
            classes,
            tiers: Tiers::of(&artifacts),
            fact_tiers: Tiers::of(artifacts.iter().filter(|a| a.kind == ArtifactKind::Fact)),
            by_origin: Origin::ALL
                .iter()
                .map(|&o| (o, Tiers::of(artifacts.iter().filter(|a| a.origin == o))))
                .filter(|(_, t)| t.total() > 0)
                .collect(),
        }
    }
}
