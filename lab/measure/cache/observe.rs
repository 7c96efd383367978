//! The policy engine's hook: an [`Observer`] that turns every request a
//! policy sends into a [`CacheRequest`] and prices the run.
//!
//! ```ignore
//! let mut cost = CostObserver::new(0, session.times_ms);
//! replay_observed(policy, session, env, &mut [&mut cost])?;
//! let report = cost.finish(&provider, &sheet);
//! ```
//!
//! Sizes use the run's own counter (`View::tokens`), times the recorded
//! message times, and each message segment that changed since the previous
//! request is labelled with the policy events of that call, so a break's
//! `break_at.label` names the event that caused it.

use super::compaction::Shape;
use super::session::{starts_turn, RequestBuilder};
use super::{BreakCause, CacheRequest, CostReport, PriceSheet, Provider, Segment};
use crate::message::Message;
use crate::policy::engine::{event_kind, Observer, View};
use crate::policy::side_calls::SideCalls;
use crate::policy::PolicyEvent;
use crate::tokens::Tokens;

/// Collects the cache requests of one policy run.
#[derive(Debug)]
pub struct CostObserver {
    builder: RequestBuilder,
    times_ms: Option<Vec<Option<u64>>>,
    requests: Vec<CacheRequest>,
    turn: usize,
    /// The policy's summary calls and how its product sends them, when
    /// they are priced ([`CostObserver::with_side_calls`]).
    side: Option<(SideCalls, &'static Shape)>,
    /// Each priced compaction call: its index in `requests`, its output tokens.
    compactions: Vec<(usize, u64)>,
    /// The conversation's last request in `requests` (compaction calls
    /// are not its previous request).
    last_main: Option<usize>,
    /// The calls not priced at the run's sheet, by the recorded reply they
    /// were sent before ([`CostObserver::with_call_prices`]).
    call_prices: std::collections::BTreeMap<usize, CallPrice>,
    /// How each request in `requests` is priced.
    per_call: CallPricing,
}

/// How one replayed call is priced when not at the run's sheet.
#[derive(Debug, Clone, PartialEq)]
pub enum CallPrice {
    /// The product wrote the reply itself (Claude Code's `<synthetic>`
    /// placeholder after an interrupted turn): no request was sent, so
    /// none is priced.
    NotSent,
    /// Another model than the run's answered it: priced at `sheet`, read
    /// from and written to that model's own cache (the provider keeps one
    /// per model).
    At {
        /// The model that answered.
        model: String,
        /// Its prices.
        sheet: PriceSheet,
    },
}

/// The streams another model's calls are judged on while the cache model
/// runs (each model's prefix is its own cache, so its calls break nothing
/// of the conversation's); below the compaction calls' stream.
const OTHER_MODEL_STREAM: u32 = 1 << 30;

impl CostObserver {
    /// An observer; `system_tokens` sizes the system prompt and tools the
    /// transcript does not record; `times_ms` are the session's message times.
    pub fn new(system_tokens: u64, times_ms: Option<&[Option<u64>]>) -> CostObserver {
        CostObserver {
            builder: RequestBuilder::new(Tokens::Approx, system_tokens),
            times_ms: times_ms.map(<[_]>::to_vec),
            requests: Vec::new(),
            turn: 0,
            side: None,
            compactions: Vec::new(),
            last_main: None,
            call_prices: Default::default(),
            per_call: CallPricing::default(),
        }
    }

    /// Prices the call sent before recorded reply `at` as `prices[at]`
    /// says where it says: a reply made without a call is not priced, a
    /// reply of another model at that model's sheet (as a recorded bill
    /// prices each request at the model that answered it).
    pub fn with_call_prices(
        mut self,
        prices: std::collections::BTreeMap<usize, CallPrice>,
    ) -> CostObserver {
        self.call_prices = prices;
        self
    }

    /// Prices the summary calls `log` receives (the policy's model wrapped
    /// in [`crate::policy::side_calls::Recording`]) as requests sent in
    /// `shape`, before the model call they preceded.
    pub fn with_side_calls(mut self, log: SideCalls, shape: &'static Shape) -> CostObserver {
        self.side = Some((log, shape));
        self
    }

    /// The requests seen so far.
    pub fn requests(&self) -> &[CacheRequest] {
        &self.requests
    }

    /// The run priced: [`super::cost`] of its requests, call by call.
    pub fn finish(&self, provider: &Provider, sheet: &PriceSheet) -> CostReport {
        self.finish_with_output(provider, sheet, None)
    }

    /// [`CostObserver::finish`] with the compaction calls' output priced
    /// at `output_per_mtok` dollars per million tokens (`None`: unpriced).
    pub fn finish_with_output(
        &self,
        provider: &Provider,
        sheet: &PriceSheet,
        output_per_mtok: Option<f64>,
    ) -> CostReport {
        let report = self.per_call.cost(&self.requests, provider, sheet);
        if self.compactions.is_empty() {
            return report;
        }
        super::compaction::settle(report, &self.compactions, output_per_mtok)
    }

    /// The summary calls made before this request, as requests.
    fn side_requests(&mut self, view: &View<'_>, at_ms: Option<i64>) {
        let Some((log, shape)) = &self.side else {
            return;
        };
        let envelope = self.builder.system_tokens();
        for call in log.drain() {
            let (mut r, output) = super::compaction::request(
                &call,
                shape,
                &mut self.builder,
                self.turn,
                view.tokens,
                envelope,
            );
            r.at_ms = at_ms;
            self.compactions.push((self.requests.len(), output));
            self.per_call.admit(&mut r, None);
            self.requests.push(r);
        }
    }
}

/// Requests priced call by call: each at the sheet of the model that
/// answered it, each model from its own cache, a call never sent left out.
/// What [`CostObserver::with_call_prices`] does, for callers that build
/// their requests themselves (the cost arms).
#[derive(Debug, Clone, Default)]
pub struct CallPricing {
    /// Per request admitted, the sheet it is priced at when not the run's.
    sheets: Vec<Option<PriceSheet>>,
    /// The other models answering calls, in order of first answer: model
    /// `k` keeps its own cache on stream `OTHER_MODEL_STREAM + k`.
    other_models: Vec<String>,
}

impl CallPricing {
    /// Admits the next request, `r`, priced as `price` says (`None`: at
    /// the run's sheet); false when the call was never sent and `r` must
    /// not be priced.
    pub fn admit(&mut self, r: &mut CacheRequest, price: Option<&CallPrice>) -> bool {
        match price {
            Some(CallPrice::NotSent) => return false,
            Some(CallPrice::At { model, sheet }) => {
                self.on_model(r, model);
                self.sheets.push(Some(sheet.clone()));
            }
            None => self.sheets.push(None),
        }
        true
    }

    /// `requests`, the ones admitted in order, priced: at `sheet` but
    /// where another model answered.
    pub fn cost(
        &self,
        requests: &[CacheRequest],
        provider: &Provider,
        sheet: &PriceSheet,
    ) -> CostReport {
        let report = super::cost_each(requests, provider, sheet, &self.sheets);
        if self.other_models.is_empty() {
            return report;
        }
        // Judged on their own streams, another model's calls still serve
        // the conversation's turns.
        let mut requests = report.requests;
        for r in &mut requests {
            if (OTHER_MODEL_STREAM..super::compaction::STREAM).contains(&r.stream) {
                r.stream = 0;
            }
        }
        super::summarize(report.provider, report.sheet, requests)
    }

    /// `r` sent to `model`, not the run's: its own stream and a prefix
    /// keyed by the model, so it reads only what that model cached.
    fn on_model(&mut self, r: &mut CacheRequest, model: &str) {
        let k = match self.other_models.iter().position(|m| m == model) {
            Some(k) => k,
            None => {
                self.other_models.push(model.to_string());
                self.other_models.len() - 1
            }
        };
        r.stream = OTHER_MODEL_STREAM.saturating_add(u32::try_from(k).unwrap_or(u32::MAX));
        if let Some(system) = r.segments.first_mut() {
            let mut own = Segment::new("system", (system.key, model), system.tokens);
            own.cause = system.cause.take();
            *system = own;
        }
    }
}

/// `cleared+summarised`: the events' kinds, in order, deduplicated.
fn event_kinds(events: &[PolicyEvent]) -> String {
    let mut kinds: Vec<String> = Vec::new();
    for e in events {
        let v = serde_json::to_value(e).unwrap_or_default();
        let k = v["event"].as_str().unwrap_or("event").to_string();
        if !kinds.contains(&k) {
            kinds.push(k);
        }
    }
    kinds.join("+")
}

/// The tool call an event names, if any.
fn event_id(e: &PolicyEvent) -> Option<&str> {
    match e {
        PolicyEvent::Persisted { id, .. }
        | PolicyEvent::Cleared { id, .. }
        | PolicyEvent::Truncated { id, .. }
        | PolicyEvent::Repaired { id, .. } => Some(id),
        _ => None,
    }
}

fn messages_changed(e: &PolicyEvent) -> BreakCause {
    BreakCause::MessagesChanged {
        event: Some(event_kind(e).to_string()),
        id: event_id(e).map(str::to_string),
    }
}

/// Which of a call's `events` changed message `m`: the first naming one of
/// its tool calls or results, else the first naming none (a summary, a
/// drop: they act on whole messages), else the call's first event.
fn cause_of(m: &Message, events: &[PolicyEvent]) -> BreakCause {
    let mut ids = m.tool_use_ids();
    ids.extend(m.tool_result_ids());
    events
        .iter()
        .find(|e| event_id(e).is_some_and(|id| ids.contains(&id)))
        .or_else(|| events.iter().find(|e| event_id(e).is_none()))
        .map_or_else(|| call_cause(events), messages_changed)
}

/// The cause of a change no event names by its tool call (messages
/// removed from the end, a message the design edits by position): the
/// kind of the call's first message-level event, else of its first event,
/// without a tool id (none of the message's own).
fn call_cause(events: &[PolicyEvent]) -> BreakCause {
    let event = events
        .iter()
        .find(|e| event_id(e).is_none())
        .or(events.first());
    BreakCause::MessagesChanged {
        event: event.map(|e| event_kind(e).to_string()),
        id: None,
    }
}

impl Observer for CostObserver {
    fn on_message(&mut self, _index: usize, message: &Message) {
        self.turn += starts_turn(message) as usize;
    }

    fn on_request(
        &mut self,
        _call: usize,
        at: usize,
        request: &[Message],
        events: &[PolicyEvent],
        view: &View<'_>,
    ) {
        let time = self
            .times_ms
            .as_ref()
            .and_then(|t| t.get(at).copied().flatten());
        let at_ms = time.and_then(|t| i64::try_from(t).ok());
        // Summary calls went out before this request, behind the prefix
        // the conversation had then (a product's compaction switches it).
        self.side_requests(view, at_ms);
        let price = self.call_prices.get(&at);
        if price == Some(&CallPrice::NotSent) {
            return;
        }
        // The replay's fixed prefix is the system segment, cached first.
        if view.envelope > 0 {
            self.builder.set_system_tokens(view.envelope as u64);
        }
        let mut r = if view.sizes.len() == request.len() {
            self.builder.request_sized(request, self.turn, view.sizes)
        } else {
            self.builder
                .request_counted(request, self.turn, view.tokens)
        };
        r.at_ms = at_ms;
        let prev = self
            .last_main
            .map(|i| &self.requests[i].segments[..])
            .unwrap_or(&[]);
        if events.is_empty() {
            // The engine's requests all come from the policy: a message it
            // changed without an event was re-derived.
            for (i, seg) in r.segments.iter_mut().enumerate().skip(1) {
                if prev.get(i).is_some_and(|p| p.key != seg.key) {
                    seg.cause = Some(BreakCause::Rederived);
                }
            }
            r.call_cause = Some(BreakCause::Rederived);
        } else {
            let kinds = event_kinds(events);
            for (i, seg) in r.segments.iter_mut().enumerate() {
                if prev.get(i).map(|p| p.key) != Some(seg.key) {
                    seg.label = format!("{} after {kinds}", seg.label);
                    // Segment 0 is the fixed prefix, no message of the request.
                    if let Some(m) = i.checked_sub(1).and_then(|j| request.get(j)) {
                        seg.cause = Some(cause_of(m, events));
                    }
                }
            }
            r.call_cause = Some(call_cause(events));
        }
        if price.is_none() {
            self.last_main = Some(self.requests.len());
        }
        self.per_call.admit(&mut r, price);
        self.requests.push(r);
    }
}

#[cfg(test)]
mod tests;
