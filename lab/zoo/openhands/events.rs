//! OpenHands' event stream, view and message rendering, as far as the v0
//! condensers see and shape them.
//!
//! Read in `All-Hands-AI/OpenHands@156d0686c46aafb0fa9d291da6421fb6f64dddc0`:
//! `openhands/memory/view.py` (`View.from_events`), `openhands/memory/conversation_memory.py`
//! (`process_events`, `_ensure_system_message`, `_ensure_initial_user_message`,
//! `_filter_unmatched_tool_calls`, `_apply_user_message_formatting`) and
//! `openhands/events/action/agent.py` (`CondensationAction.forgotten`).
//!
//! Mapping: event 0 is the system message (upstream's `SystemMessageAction`,
//! never rendered because the lab does not model the system prompt); then,
//! per history message, a user text is a user `MessageAction`, an assistant
//! message without calls an agent `MessageAction`, each `tool_use` an action
//! of that model response, each `tool_result` an observation answering it,
//! and text blocks beside results one more user `MessageAction`.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use foldhash::fast::FixedState;

use serde::{Deserialize, Serialize};

use super::truncate_content;
use crate::message::{Block, Content, Message, Role};

/// The id upstream gives an event that never entered the stream (a summary or
/// `<MASKED>` observation built by a condenser).
pub const NO_ID: i64 = -1;

/// One event of the stream.
#[derive(Debug, Clone, PartialEq)]
pub enum Ev {
    /// `SystemMessageAction`.
    System,
    /// A user `MessageAction` (the history message itself).
    User(Message),
    /// An agent `MessageAction` without tool calls.
    Agent(Message),
    /// One tool-call action; `response` is the history index of the model
    /// response that made it.
    Action {
        /// History index of the assistant message.
        response: usize,
        /// The call id.
        call: String,
    },
    /// The observation answering a call.
    Observation {
        /// The call id.
        call: String,
        /// The result text.
        content: String,
    },
    /// `AgentCondensationObservation(content)`: a summary or `<MASKED>`.
    Condensed(String),
}

impl Ev {
    /// Is this an `Observation` subclass upstream?
    pub fn is_observation(&self) -> bool {
        matches!(self, Ev::Observation { .. } | Ev::Condensed(_))
    }
}

/// The agent's LLM settings that shape the request (`LLMConfig` in
/// `openhands/core/config/llm_config.py`); `Default` is upstream's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmConfig {
    /// `max_message_chars` (30,000): CodeAct passes it to `process_events`,
    /// which cuts an observation's content to it with `truncate_content`.
    pub max_message_chars: usize,
}

impl Default for LlmConfig {
    fn default() -> Self {
        LlmConfig {
            max_message_chars: 30_000,
        }
    }
}

/// An event with its stream id.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Stream id (`NO_ID` for condenser-made events).
    pub id: i64,
    /// What it is.
    pub ev: Ev,
}

/// The ids a `CondensationAction` forgets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Forgotten {
    /// `forgotten_events_start_id..=forgotten_events_end_id`.
    Range(i64, i64),
    /// `forgotten_event_ids`.
    Ids(BTreeSet<i64>),
}

impl Forgotten {
    /// Does this forget event `id`?
    pub fn contains(&self, id: i64) -> bool {
        match self {
            Forgotten::Range(a, b) => (*a..=*b).contains(&id),
            Forgotten::Ids(ids) => ids.contains(&id),
        }
    }
}

impl std::fmt::Display for Forgotten {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Forgotten::Range(a, b) => write!(f, "{a}..={b}"),
            Forgotten::Ids(ids) => write!(f, "{} ids", ids.len()),
        }
    }
}

/// A `CondensationAction`: what it forgets, maybe a summary at an offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condensation {
    /// The forgotten events.
    pub forgotten: Forgotten,
    /// `summary` and `summary_offset`, for the summarising condenser.
    pub summary: Option<(String, usize)>,
}

/// The event stream of `history`.
pub fn events(history: &[Message]) -> Vec<Event> {
    let mut stream = Vec::new();
    extend(&mut stream, history, 0);
    stream
}

/// [`events`] of `history` grown from the stream of `history[..from]`: the
/// stream is a concatenation over messages (ids by position, actions naming
/// their message by index), so a run need not convert its whole history
/// again at every call.
pub fn extend(stream: &mut Vec<Event>, history: &[Message], from: usize) {
    let mut evs = Vec::new();
    if stream.is_empty() {
        evs.push(Ev::System);
    }
    for (i, m) in history.iter().enumerate().skip(from) {
        match m.role {
            Role::Assistant if m.has_tool_use() => {
                evs.extend(m.tool_use_ids().into_iter().map(|c| Ev::Action {
                    response: i,
                    call: c.to_string(),
                }))
            }
            Role::Assistant => evs.push(Ev::Agent(m.clone())),
            Role::User if m.is_tool_result() => {
                let mut texts = Vec::new();
                for b in m.blocks() {
                    match b {
                        Block::ToolResult {
                            tool_use_id,
                            content,
                        } => evs.push(Ev::Observation {
                            call: tool_use_id.clone(),
                            content: content.clone(),
                        }),
                        Block::Text { .. } => texts.push(b.clone()),
                        _ => {}
                    }
                }
                if !texts.is_empty() {
                    evs.push(Ev::User(Message::user_blocks(texts)));
                }
            }
            Role::User => evs.push(Ev::User(m.clone())),
        }
    }
    let start = stream.len();
    stream.extend(evs.into_iter().enumerate().map(|(k, ev)| Event {
        id: (start + k) as i64,
        ev,
    }));
}

/// `View.from_events` kept between calls: the events of the stream no
/// condensation forgot, as indices into the stream, and the newest
/// condensation's summary.
///
/// Upstream builds the view from the whole stream at every step; done so
/// here, a long run cloned every event of the stream and checked it against
/// every condensation at every call. A condensation forgets events for good
/// and the stream only grows, so the kept view changes only where the stream
/// grew (each new event checked against every condensation, as upstream
/// does) and where a new condensation forgets (its events leave once).
#[derive(Debug, Clone, Default)]
pub struct Live {
    /// Indices into the stream of the events no condensation forgot, in order.
    kept: Vec<usize>,
    /// The newest summary as an event, with its offset in the view.
    summary: Option<(Event, usize)>,
}

impl Live {
    /// Take in the events of `stream[from..]`, leaving out those `condensations` forgot.
    pub fn grow(&mut self, stream: &[Event], from: usize, condensations: &[Condensation]) {
        for (i, e) in stream.iter().enumerate().skip(from) {
            if !condensations.iter().any(|c| c.forgotten.contains(e.id)) {
                self.kept.push(i);
            }
        }
    }

    /// Apply condensation `c` (the newest): its events leave the view and its
    /// summary, if any, replaces the previous one.
    pub fn forget(&mut self, stream: &[Event], c: &Condensation) {
        self.kept.retain(|&i| !c.forgotten.contains(stream[i].id));
        if let Some((summary, offset)) = &c.summary {
            let ev = Event {
                id: NO_ID,
                ev: Ev::Condensed(summary.clone()),
            };
            self.summary = Some((ev, *offset));
        }
    }

    /// The stream was cleared (the history was replaced): no event is kept;
    /// the summary, which comes from the condensations, stays.
    pub fn clear(&mut self) {
        self.kept.clear();
    }

    /// The view of `stream`: every event kept, with the newest summary
    /// inserted at its offset.
    pub fn view<'a>(&'a self, stream: &'a [Event]) -> Vec<&'a Event> {
        let mut view: Vec<&Event> = Vec::with_capacity(self.kept.len() + 1);
        view.extend(self.kept.iter().map(|&i| &stream[i]));
        if let Some((summary, offset)) = &self.summary {
            view.insert((*offset).min(view.len()), summary);
        }
        view
    }
}

/// `View.from_events` on the whole stream: every event not forgotten by a
/// condensation, with the newest condensation's summary inserted at its
/// offset ([`Live`] keeps it between calls).
pub fn view(events: &[Event], condensations: &[Condensation]) -> Vec<Event> {
    let mut kept: Vec<Event> = events
        .iter()
        .filter(|e| !condensations.iter().any(|c| c.forgotten.contains(e.id)))
        .cloned()
        .collect();
    if let Some((summary, offset)) = condensations.iter().rev().find_map(|c| c.summary.clone()) {
        kept.insert(
            offset.min(kept.len()),
            Event {
                id: NO_ID,
                ev: Ev::Condensed(summary),
            },
        );
    }
    kept
}

/// Python's `seq[start:stop]` bounds for a sequence of `len` (negative
/// indices count from the end; `-0` is `0`).
pub fn py_slice(len: usize, start: i64, stop: i64) -> std::ops::Range<usize> {
    let fix = |i: i64| -> usize {
        let n = len as i64;
        (if i < 0 { (n + i).max(0) } else { i.min(n) }) as usize
    };
    let (a, b) = (fix(start), fix(stop));
    a..b.max(a)
}

#[derive(Debug, Clone)]
enum Out {
    /// A system message: not sent by the lab, but it separates user messages.
    System,
    User(Message),
    Assistant(Message),
    Tool(Message),
}

/// `ConversationMemory.process_events` on a view: the request the agent sends.
///
/// `_process_observation` cuts observations with `truncate_content(..,
/// max_message_chars)`: a tool result here, and an
/// `AgentCondensationObservation` (summary or `<MASKED>`). The history keeps
/// them whole, as upstream's event stream does.
pub fn render(view: &[&Event], history: &[Message], llm: LlmConfig) -> Vec<Message> {
    let (initial, _) = initial_message(view, history);
    let evs = completed(view, initial.as_ref());
    let mut fold = Fold::new(Pending::<&str>::default());
    let mut sent = Vec::new();
    let mut format = Format::default();
    for ev in evs {
        fold.step(ev, history, llm);
        format.extend(fold.out.drain(..), &mut sent);
    }
    sent
}

/// `_ensure_initial_user_message`'s message, when the view needs it: the
/// history's first user text, as an event, and its history index.
fn initial_message(view: &[&Event], history: &[Message]) -> (Option<Ev>, Option<usize>) {
    // After `_ensure_system_message` the second event is the view's first
    // unless that was the system message.
    let second = match view.first().map(|e| &e.ev) {
        Some(Ev::System) => view.get(1).map(|e| &e.ev),
        first => first,
    };
    if matches!(second, Some(Ev::User(_))) {
        return (None, None);
    }
    match history
        .iter()
        .position(|m| m.role == Role::User && !m.is_tool_result())
    {
        Some(i) => (Some(Ev::User(history[i].clone())), Some(i)),
        None => (None, None),
    }
}

/// The view's events with the system message and the initial user message
/// put in front where missing (`_ensure_system_message`,
/// `_ensure_initial_user_message`).
fn completed<'a>(view: &[&'a Event], initial: Option<&'a Ev>) -> Vec<&'a Ev> {
    let mut evs: Vec<&Ev> = Vec::with_capacity(view.len() + 2);
    if !matches!(view.first().map(|e| &e.ev), Some(Ev::System)) {
        evs.push(&Ev::System);
    }
    evs.extend(view.iter().map(|e| &e.ev));
    if let Some(initial) = initial {
        evs.insert(1, initial);
    }
    evs
}

/// `process_events`' loop state: the messages emitted, the responses
/// waiting for results and the results not yet emitted.
#[derive(Debug, Clone, Default)]
struct Fold<P> {
    out: Vec<Out>,
    pending: P,
    results: BTreeMap<String, String>,
}

impl<P> Fold<P> {
    fn new(pending: P) -> Self {
        Fold {
            out: Vec::new(),
            pending,
            results: BTreeMap::new(),
        }
    }

    /// One event of the view.
    fn step<'h>(&mut self, ev: &Ev, history: &'h [Message], llm: LlmConfig)
    where
        P: Waiting<'h>,
    {
        let cut = |t: &str| truncate_content(t, llm.max_message_chars);
        match ev {
            Ev::System => self.out.push(Out::System),
            Ev::User(m) => self.out.push(Out::User(m.clone())),
            Ev::Agent(m) => self.out.push(Out::Assistant(m.clone())),
            Ev::Condensed(t) => self.out.push(Out::User(Message::user_text(cut(t)))),
            Ev::Action { response, .. } => {
                if self.pending.add(*response, history) {
                    self.flush(&[*response], history);
                }
            }
            Ev::Observation { call, content } => {
                self.results.insert(call.clone(), cut(content));
                let waiting = self.pending.waiting_on(call);
                self.flush(&waiting, history);
            }
        }
    }

    /// Emit each of `candidates` (pending responses, in seen order) whose
    /// calls all have results, with those results right after it.
    fn flush<'h>(&mut self, candidates: &[usize], history: &'h [Message])
    where
        P: Waiting<'h>,
    {
        for &r in candidates {
            let calls = history[r].tool_use_ids();
            if !calls.iter().all(|c| self.results.contains_key(*c)) {
                continue;
            }
            self.out.push(Out::Assistant(history[r].clone()));
            let answers = calls
                .iter()
                .map(|c| (c.to_string(), self.results.remove(*c).unwrap_or_default()))
                .collect();
            self.out.push(Out::Tool(Message::tool_results(answers)));
            self.pending.remove(r, history);
        }
    }
}

/// Model responses seen whose calls do not all have results yet
/// (upstream's `pending_tool_call_action_messages`), as the render loop
/// uses them.
///
/// Upstream re-checks every pending response after each event. Only the
/// event's own response (an action) or the responses waiting on its call
/// (an observation) can become complete, since every other one was
/// incomplete after the previous event and emitting a response only takes
/// results away: checking those alone emits the same messages in the same
/// order, without a pass over every pending response per event (responses
/// whose results a condenser masked stay pending for good, so that pass
/// made rendering quadratic in the history).
trait Waiting<'h> {
    /// Add response `r` unless it is pending already; whether it was added.
    fn add(&mut self, r: usize, history: &'h [Message]) -> bool;
    /// History indices of the pending responses that call `call`, in seen order.
    fn waiting_on(&self, call: &str) -> Vec<usize>;
    /// Response `r` was emitted.
    fn remove(&mut self, r: usize, history: &[Message]);
}

/// The pending responses of a render, in seen order, keyed by call ids
/// borrowed from the history (`&str`, one call's render) or owned
/// (`String`, a prefix kept between calls: added once per run).
///
/// Kept in hash maps (foldhash, no iteration), not B-trees: every masked
/// response is added again at every whole render, so this was most of a
/// long masking run.
#[derive(Debug, Clone)]
struct Pending<K> {
    /// History index of every response added, by the order it was seen (a
    /// removed one is never looked up again: its seen-order leaves `by_call`).
    order: Vec<usize>,
    /// Seen-order of each pending response, by history index.
    seen: HashMap<usize, usize, FixedState>,
    /// Pending responses (seen-order, ascending) calling each tool call id.
    by_call: HashMap<K, Vec<usize>, FixedState>,
}

impl<K> Default for Pending<K> {
    fn default() -> Self {
        Pending {
            order: Vec::new(),
            seen: HashMap::default(),
            by_call: HashMap::default(),
        }
    }
}

/// A call id as a [`Pending`] key.
trait CallKey<'h>: std::borrow::Borrow<str> + std::hash::Hash + Eq {
    fn of(call: &'h str) -> Self;
}

impl<'h> CallKey<'h> for &'h str {
    fn of(call: &'h str) -> Self {
        call
    }
}

impl<'h> CallKey<'h> for String {
    fn of(call: &'h str) -> Self {
        call.to_string()
    }
}

impl<'h, K: CallKey<'h>> Waiting<'h> for Pending<K> {
    fn add(&mut self, r: usize, history: &'h [Message]) -> bool {
        if self.seen.contains_key(&r) {
            return false;
        }
        let n = self.order.len();
        self.order.push(r);
        self.seen.insert(r, n);
        for c in history[r].tool_use_ids() {
            let ns = self.by_call.entry(K::of(c)).or_default();
            // Seen-orders only grow: the newest goes last, once.
            if ns.last() != Some(&n) {
                ns.push(n);
            }
        }
        true
    }

    fn waiting_on(&self, call: &str) -> Vec<usize> {
        self.by_call
            .get(call)
            .map(|ns| ns.iter().map(|&n| self.order[n]).collect())
            .unwrap_or_default()
    }

    fn remove(&mut self, r: usize, history: &[Message]) {
        if let Some(n) = self.seen.remove(&r) {
            for c in history[r].tool_use_ids() {
                if let Some(ns) = self.by_call.get_mut(c) {
                    ns.retain(|&m| m != n);
                    if ns.is_empty() {
                        self.by_call.remove(c);
                    }
                }
            }
        }
    }
}

/// A call's pending set over a kept prefix's, left untouched: what the call
/// emits is taken out here (`removed`), what it adds goes in `local`, whose
/// seen-orders all come after the prefix's.
struct Overlay<'k, 'h> {
    base: &'k Pending<String>,
    removed: BTreeSet<usize>,
    local: Pending<&'h str>,
}

impl<'h> Waiting<'h> for Overlay<'_, 'h> {
    fn add(&mut self, r: usize, history: &'h [Message]) -> bool {
        if self.base.seen.contains_key(&r) && !self.removed.contains(&r) {
            return false;
        }
        Waiting::add(&mut self.local, r, history)
    }

    fn waiting_on(&self, call: &str) -> Vec<usize> {
        let mut w: Vec<usize> = self
            .base
            .by_call
            .get(call)
            .into_iter()
            .flatten()
            .map(|&n| self.base.order[n])
            .filter(|r| !self.removed.contains(r))
            .collect();
        w.extend(Waiting::waiting_on(&self.local, call));
        w
    }

    fn remove(&mut self, r: usize, history: &[Message]) {
        if self.local.seen.contains_key(&r) {
            Waiting::remove(&mut self.local, r, history);
        } else {
            self.removed.insert(r);
        }
    }
}

/// `_apply_user_message_formatting` as a stream: a user message right after
/// another user message (not a tool message) gets `\n\n` before its first
/// text.
#[derive(Debug, Clone, Copy, Default)]
struct Format {
    prev_user: bool,
}

impl Format {
    fn extend(&mut self, outs: impl IntoIterator<Item = Out>, sent: &mut Vec<Message>) {
        for o in outs {
            match o {
                Out::System => self.prev_user = false,
                Out::User(mut m) => {
                    if self.prev_user {
                        prepend_first_text(&mut m);
                    }
                    self.prev_user = true;
                    sent.push(m);
                }
                Out::Assistant(m) | Out::Tool(m) => {
                    self.prev_user = false;
                    sent.push(m);
                }
            }
        }
    }
}

/// [`render`] of a masked view kept between calls, for observation masking.
///
/// Masking is monotone on a stream that only grows: every observation
/// before the view's last `attention_window` events is `<MASKED>`, for good,
/// and rendering is a left-to-right fold. So the fold over that masked
/// prefix is done once per event: its emitted messages are kept, and each
/// call folds only the newest `attention_window` events, over the prefix's
/// pending responses left untouched (an overlay). No observation is in the
/// prefix, so no result waits there and no pending response of it was
/// emitted; anything else (a history replaced, another initial message)
/// starts the prefix again. Done whole at every call, the render was most
/// of a long masking run: every masked response was added again per call.
/// `tests::the_kept_masked_render_equals_the_whole_render_at_every_call`.
#[derive(Debug, Clone, Default)]
pub struct MaskedRender {
    /// Whether the system message was put in front, and the initial
    /// message put in (history index), once something is kept.
    header: Option<(bool, Option<usize>)>,
    /// Leading events of the completed view folded into the prefix.
    done: usize,
    /// The prefix's messages, formatted.
    sent: Vec<Message>,
    format: Format,
    /// The fold over the prefix: its pending responses (no result waits
    /// there, and it emits only what is not a response).
    prefix: Fold<Pending<String>>,
}

impl MaskedRender {
    /// Events of the completed view kept rendered.
    pub fn kept(&self) -> usize {
        self.done
    }

    /// Forget the kept prefix (the history was replaced).
    pub fn clear(&mut self) {
        *self = MaskedRender::default();
    }

    /// The request of `view`, every observation of whose first `masked`
    /// events is masked.
    pub fn render(
        &mut self,
        view: &[&Event],
        masked: usize,
        history: &[Message],
        llm: LlmConfig,
    ) -> Vec<Message> {
        let (initial, at) = initial_message(view, history);
        let evs = completed(view, initial.as_ref());
        // The prefix in the completed list: what precedes the view's
        // `masked`-th event.
        let prefix = evs.len() - (view.len() - masked.min(view.len()));
        let system = !matches!(view.first().map(|e| &e.ev), Some(Ev::System));
        if self.header != Some((system, at)) || prefix < self.done {
            self.clear();
            self.header = Some((system, at));
        }
        for ev in &evs[self.done..prefix] {
            if matches!(ev, Ev::Observation { .. }) {
                // Not a masked view: no prefix to keep.
                self.clear();
                return render(view, history, llm);
            }
            self.prefix.step(ev, history, llm);
            self.format
                .extend(self.prefix.out.drain(..), &mut self.sent);
        }
        debug_assert!(self.prefix.results.is_empty());
        self.done = prefix;
        let mut fold = Fold::new(Overlay {
            base: &self.prefix.pending,
            removed: BTreeSet::new(),
            local: Pending::<&str>::default(),
        });
        let mut sent = self.sent.clone();
        let mut format = self.format;
        for ev in &evs[prefix..] {
            fold.step(ev, history, llm);
            format.extend(fold.out.drain(..), &mut sent);
        }
        sent
    }
}

fn prepend_first_text(m: &mut Message) {
    match &mut m.content {
        Content::Text(t) => t.insert_str(0, "\n\n"),
        Content::Blocks(blocks) => {
            if let Some(Block::Text { text }) =
                blocks.iter_mut().find(|b| matches!(b, Block::Text { .. }))
            {
                text.insert_str(0, "\n\n");
            }
        }
    }
}

/// [`render`] of a view that only grows, kept between calls, with the
/// request's token count: the conversation window's test of every call.
///
/// Between two condensations the conversation window's view only gains
/// events at its end ([`Live::grow`]), and rendering is a left-to-right
/// fold whose messages, once emitted, never change (formatting looks only
/// at the message before). So the fold goes on from where the last call
/// left it, and the count is the last one plus the new messages' (a
/// counter's count of a request is the sum of its messages'). A new
/// condensation, another initial message, or a history replaced starts it
/// again. Done whole, each call rendered and counted the whole view.
/// `tests::the_kept_window_render_equals_the_whole_render_at_every_call`.
#[derive(Debug, Clone, Default)]
pub struct GrowingRender {
    /// The view's shape when the fold started: the system message put in
    /// front, the initial message put in, the condensations made.
    key: Option<(bool, Option<usize>, usize)>,
    /// Events of the completed view folded.
    done: usize,
    fold: Fold<Pending<String>>,
    format: Format,
    sent: Vec<Message>,
    tokens: usize,
    /// Events folded over the run, through every restart: what the fold
    /// cost (a whole render per call would fold the whole view each time).
    folded: usize,
}

impl GrowingRender {
    /// Events of the completed view folded so far.
    pub fn kept(&self) -> usize {
        self.done
    }

    /// Events folded over the run, restarts included.
    pub fn folded(&self) -> usize {
        self.folded
    }

    /// Forget the fold (the history was replaced).
    pub fn clear(&mut self) {
        *self = GrowingRender {
            folded: self.folded,
            ..GrowingRender::default()
        };
    }

    /// The request of `view` (after `condensations` condensations) and its
    /// tokens by `counter`.
    pub fn render(
        &mut self,
        view: &[&Event],
        condensations: usize,
        history: &[Message],
        llm: LlmConfig,
        counter: &dyn crate::tokens::TokenCounter,
    ) -> (Vec<Message>, usize) {
        let (initial, at) = initial_message(view, history);
        let evs = completed(view, initial.as_ref());
        let system = !matches!(view.first().map(|e| &e.ev), Some(Ev::System));
        let key = Some((system, at, condensations));
        if self.key != key || evs.len() < self.done {
            self.clear();
            self.key = key;
        }
        self.folded += evs.len() - self.done;
        for ev in &evs[self.done..] {
            self.fold.step(ev, history, llm);
            let from = self.sent.len();
            self.format.extend(self.fold.out.drain(..), &mut self.sent);
            self.tokens += counter.count_messages(&self.sent[from..]);
        }
        self.done = evs.len();
        (self.sent.clone(), self.tokens)
    }
}
