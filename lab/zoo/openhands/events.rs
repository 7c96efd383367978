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
    let cut = |t: &str| truncate_content(t, llm.max_message_chars);
    let mut evs: Vec<&Ev> = view.iter().map(|e| &e.ev).collect();
    if !matches!(evs.first(), Some(Ev::System)) {
        evs.insert(0, &Ev::System);
    }
    let initial = history
        .iter()
        .find(|m| m.role == Role::User && !m.is_tool_result())
        .map(|m| Ev::User(m.clone()));
    if let Some(initial) = &initial {
        if !matches!(evs.get(1), Some(Ev::User(_))) {
            evs.insert(1, initial);
        }
    }
    let mut out = Vec::new();
    let mut pending = Pending::default();
    let mut results: BTreeMap<String, String> = BTreeMap::new();
    for ev in evs {
        match ev {
            Ev::System => out.push(Out::System),
            Ev::User(m) => out.push(Out::User(m.clone())),
            Ev::Agent(m) => out.push(Out::Assistant(m.clone())),
            Ev::Condensed(t) => out.push(Out::User(Message::user_text(cut(t)))),
            Ev::Action { response, .. } => {
                if pending.add(*response, history) {
                    pending.flush(&[*response], &mut results, history, &mut out);
                }
            }
            Ev::Observation { call, content } => {
                results.insert(call.clone(), cut(content));
                let waiting = pending.waiting_on(call);
                pending.flush(&waiting, &mut results, history, &mut out);
            }
        }
    }
    format_consecutive_users(out)
}

/// Model responses seen whose calls do not all have results yet, in the
/// order they were seen (upstream's `pending_tool_call_action_messages`).
///
/// Upstream re-checks every pending response after each event. Only the
/// event's own response (an action) or the responses waiting on its call
/// (an observation) can become complete, since every other one was
/// incomplete after the previous event and emitting a response only takes
/// results away: checking those alone emits the same messages in the same
/// order, without a pass over every pending response per event (responses
/// whose results a condenser masked stay pending for good, so that pass
/// made rendering quadratic in the history).
///
/// Kept in hash maps (foldhash, no iteration) keyed by the history's own ids,
/// not B-trees of copied strings: every masked response is added again at
/// every call, so this was most of a long masking run.
#[derive(Default)]
struct Pending<'h> {
    /// History index of every response added, by the order it was seen (a
    /// removed one is never looked up again: its seen-order leaves `by_call`).
    order: Vec<usize>,
    /// Seen-order of each pending response, by history index.
    seen: HashMap<usize, usize, FixedState>,
    /// Pending responses (seen-order, ascending) calling each tool call id.
    by_call: HashMap<&'h str, Vec<usize>, FixedState>,
}

impl<'h> Pending<'h> {
    /// Add response `r` unless it is pending already; whether it was added.
    fn add(&mut self, r: usize, history: &'h [Message]) -> bool {
        if self.seen.contains_key(&r) {
            return false;
        }
        let n = self.order.len();
        self.order.push(r);
        self.seen.insert(r, n);
        for c in history[r].tool_use_ids() {
            let ns = self.by_call.entry(c).or_default();
            // Seen-orders only grow: the newest goes last, once.
            if ns.last() != Some(&n) {
                ns.push(n);
            }
        }
        true
    }

    /// History indices of the pending responses that call `call`, in seen order.
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

    /// Emit each of `candidates` (pending responses, in seen order) whose
    /// calls all have results, with those results right after it.
    fn flush(
        &mut self,
        candidates: &[usize],
        results: &mut BTreeMap<String, String>,
        history: &'h [Message],
        out: &mut Vec<Out>,
    ) {
        for &r in candidates {
            let calls = history[r].tool_use_ids();
            if !calls.iter().all(|c| results.contains_key(*c)) {
                continue;
            }
            out.push(Out::Assistant(history[r].clone()));
            let answers = calls
                .iter()
                .map(|c| (c.to_string(), results.remove(*c).unwrap_or_default()))
                .collect();
            out.push(Out::Tool(Message::tool_results(answers)));
            self.remove(r, history);
        }
    }
}

/// `_apply_user_message_formatting`: a user message right after another user
/// message (not a tool message) gets `\n\n` before its first text.
fn format_consecutive_users(out: Vec<Out>) -> Vec<Message> {
    let mut prev_user = false;
    out.into_iter()
        .filter_map(|o| match o {
            Out::System => {
                prev_user = false;
                None
            }
            Out::User(mut m) => {
                if prev_user {
                    prepend_first_text(&mut m);
                }
                prev_user = true;
                Some(m)
            }
            Out::Assistant(m) | Out::Tool(m) => {
                prev_user = false;
                Some(m)
            }
        })
        .collect()
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
