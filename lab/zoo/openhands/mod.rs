//! OpenHands v0 condensers as projecting policies: the history stays whole;
//! the request is `ConversationMemory.process_events` of the condensed view.
//!
//! Upstream: `All-Hands-AI/OpenHands@156d0686c46aafb0fa9d291da6421fb6f64dddc0`
//! (MIT; constants and strings only are reproduced), files listed in
//! [`events`] and [`condensers`].
//!
//! Each condenser is a variant with its **config** defaults (the
//! `condenser_config.py` field defaults); the constructor defaults are given
//! by each switches struct's `constructor()` and listed as constants.
//!
//! Upstream a rolling condenser returns a `CondensationAction` *instead of*
//! an LLM call, and the next step's view applies it; the lab applies it at
//! once, so the condensed request is the one of the same call.
//!
//! Found while reading, reproduced as upstream does it:
//! - masking replaces an observation by an `AgentCondensationObservation`
//!   that answers no call, so the call's model response is never completed
//!   and leaves the request with its thought; `<MASKED>` stays as user text;
//! - `recent` keeps `view[:keep_first] + view[-(max_events - keep_first):]`,
//!   which repeats the head while the view is shorter than `max_events`;
//! - the first user message comes back at the front of every request after
//!   it was forgotten (`_ensure_initial_user_message`).

pub mod condensers;
pub mod events;

use serde::{Deserialize, Serialize};

use crate::error::LabResult;
use crate::message::Message;
use crate::policy::{
    PointerRule, Policy, PolicyCtx, PolicyEvent, PolicyInfo, Prepared, Source, SummaryRequest, Unit,
};

pub use condensers::{
    AmortizedForgetting, ConversationWindow, LlmSummarizing, ObservationMasking, RecentEvents,
};
use events::{Condensation, Ev, Event, LlmConfig};

/// What the condenser made of one call's view.
struct Condensed<'a> {
    /// The view to render, when the condenser changed it (masking, recent).
    view: Option<Vec<&'a Event>>,
    /// The request, when the condenser rendered it already and the view stays.
    request: Option<Vec<Message>>,
    /// A new condensation: applied, then the view is taken again.
    new: Option<Condensation>,
}

/// One condenser and its switches (upstream's `type` names).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Condenser {
    /// `observation_masking`.
    ObservationMasking(ObservationMasking),
    /// `recent`.
    Recent(RecentEvents),
    /// `amortized`.
    Amortized(AmortizedForgetting),
    /// `llm`.
    Llm(LlmSummarizing),
    /// `conversation_window`.
    ConversationWindow(ConversationWindow),
}

/// An OpenHands condenser as a policy.
#[derive(Debug, Clone)]
pub struct OpenHands {
    name: &'static str,
    condenser: Condenser,
    /// The LLM settings `process_events` is given (upstream's defaults).
    pub llm: LlmConfig,
    condensations: Vec<Condensation>,
    /// The event stream of the history so far, grown by each call's new
    /// messages ([`events::extend`]); the history is never rewritten here.
    stream: Vec<Event>,
    /// History messages `stream` covers.
    streamed: usize,
    /// The view of `stream` under `condensations`, kept between calls.
    live: events::Live,
    /// Observation masking's request, its masked prefix kept between calls.
    masked: events::MaskedRender,
    /// The conversation window's request and count, kept between calls.
    window: events::GrowingRender,
}

const UPSTREAM: &str = "All-Hands-AI/OpenHands@156d0686c46aafb0fa9d291da6421fb6f64dddc0";

impl OpenHands {
    /// A policy named `name` running `condenser`.
    pub fn new(name: &'static str, condenser: Condenser) -> Self {
        OpenHands {
            name,
            condenser,
            llm: LlmConfig::default(),
            condensations: Vec::new(),
            stream: Vec::new(),
            streamed: 0,
            live: events::Live::default(),
            masked: events::MaskedRender::default(),
            window: events::GrowingRender::default(),
        }
    }
}

/// `openhands-observation-masking` (config defaults).
pub fn observation_masking() -> Box<dyn Policy> {
    Box::new(OpenHands::new(
        "openhands-observation-masking",
        Condenser::ObservationMasking(ObservationMasking::default()),
    ))
}

/// `openhands-recent` (config defaults).
pub fn recent() -> Box<dyn Policy> {
    Box::new(OpenHands::new(
        "openhands-recent",
        Condenser::Recent(RecentEvents::default()),
    ))
}

/// `openhands-amortized` (config defaults).
pub fn amortized() -> Box<dyn Policy> {
    Box::new(OpenHands::new(
        "openhands-amortized",
        Condenser::Amortized(AmortizedForgetting::default()),
    ))
}

/// `openhands-llm-summarizing` (config defaults).
pub fn llm_summarizing() -> Box<dyn Policy> {
    Box::new(OpenHands::new(
        "openhands-llm-summarizing",
        Condenser::Llm(LlmSummarizing::default()),
    ))
}

/// `openhands-conversation-window` (its only switch is the lab's stand-in
/// for the provider's context limit).
pub fn conversation_window() -> Box<dyn Policy> {
    Box::new(OpenHands::new(
        "openhands-conversation-window",
        Condenser::ConversationWindow(ConversationWindow::default()),
    ))
}

/// `truncate_content` (`openhands/events/serialization/event.py`): the
/// middle of an over-long text replaced by a marker; lengths in code points,
/// as Python's `len`.
pub fn truncate_content(content: &str, max_chars: usize) -> String {
    // No more bytes than the limit: no more chars either, nothing to cut
    // (spares a char vector per observation rendered).
    if content.len() <= max_chars {
        return content.to_string();
    }
    let chars: Vec<char> = content.chars().collect();
    if chars.len() <= max_chars {
        return content.to_string();
    }
    let half = max_chars / 2;
    let head: String = chars[..half].iter().collect();
    // Python's `content[-half:]` is the whole text when `half` is 0.
    let from = if half == 0 { 0 } else { chars.len() - half };
    let tail: String = chars[from..].iter().collect();
    format!("{head}\n[... Observation truncated due to length ...]\n{tail}")
}

/// The history messages behind forgotten events (what the summariser reads).
fn source_messages(forgotten: &[Event], history: &[Message]) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::new();
    for e in forgotten {
        let m = match &e.ev {
            Ev::System => continue,
            Ev::User(m) | Ev::Agent(m) => m.clone(),
            Ev::Action { response, .. } => history[*response].clone(),
            Ev::Observation { call, content } => {
                Message::tool_results(vec![(call.clone(), content.clone())])
            }
            Ev::Condensed(t) => Message::user_text(t.clone()),
        };
        if out.last() != Some(&m) {
            out.push(m);
        }
    }
    out
}

/// What [`condense`] keeps between calls: the conversation window's
/// render of its growing view, and the condensations the view has seen.
struct Keep<'k> {
    window: &'k mut events::GrowingRender,
    condensations: usize,
}

/// Run `condenser` on `view`; a new condensation is reported in `events`
/// and returned, to be recorded by the caller.
fn condense<'a>(
    condenser: &Condenser,
    llm: LlmConfig,
    view: &[&'a Event],
    history: &[Message],
    ctx: &mut PolicyCtx<'_>,
    events: &mut Vec<PolicyEvent>,
    keep: Keep<'_>,
) -> LabResult<Condensed<'a>> {
    let mut out = Condensed {
        view: None,
        request: None,
        new: None,
    };
    out.new = match condenser {
        Condenser::ObservationMasking(m) => {
            out.view = Some(masked(m, view, events));
            return Ok(out);
        }
        Condenser::Recent(r) => {
            out.view = Some(kept_recent(r, view, events));
            return Ok(out);
        }
        Condenser::Amortized(a) => a.condensation(view)?,
        Condenser::ConversationWindow(w) => {
            let (request, tokens) =
                keep.window
                    .render(view, keep.condensations, history, llm, ctx.tokens);
            if tokens <= w.context_window_tokens {
                // The view stays: this is the request sent.
                out.request = Some(request);
                return Ok(out);
            }
            w.condensation(view)
        }
        Condenser::Llm(l) => summarised(l, view, history, ctx, events)?,
    };
    if let Some(c) = &out.new {
        report(c, view, events);
    }
    Ok(out)
}

/// Report a new condensation as a summary or as dropped events.
fn report(c: &Condensation, view: &[&Event], events: &mut Vec<PolicyEvent>) {
    let forgotten = view
        .iter()
        .filter(|e| e.id != events::NO_ID && c.forgotten.contains(e.id))
        .count();
    events.push(match c.summary {
        Some(_) => PolicyEvent::Summarised {
            replaced: forgotten,
            kept: view.len() - forgotten,
            archive: None,
        },
        None => PolicyEvent::Dropped {
            messages: forgotten,
            why: format!("events {} forgotten", c.forgotten),
        },
    });
}

/// Observation masking: the view with old observations masked, each masked
/// one reported as cleared.
fn masked<'a>(
    m: &ObservationMasking,
    view: &[&'a Event],
    events: &mut Vec<PolicyEvent>,
) -> Vec<&'a Event> {
    let after = m.condense(view);
    for (before, after) in view.iter().zip(&after) {
        if let (Ev::Observation { call, .. }, Ev::Condensed(p)) = (&before.ev, &after.ev) {
            events.push(PolicyEvent::Cleared {
                id: call.clone(),
                part: "result",
                placeholder: p.clone(),
            });
        }
    }
    after
}

/// Recent events: the kept view, the events left out reported as dropped.
fn kept_recent<'a>(
    r: &RecentEvents,
    view: &[&'a Event],
    events: &mut Vec<PolicyEvent>,
) -> Vec<&'a Event> {
    let kept = r.condense(view);
    let ids: std::collections::BTreeSet<i64> = kept.iter().map(|e| e.id).collect();
    // Without a summary the view's ids are stream positions, each once, and
    // the kept events are view events: so the view holds exactly `ids.len()`
    // of the kept ids, and a scan of a whole long view per call is not needed.
    let unique = view.iter().all(|e| e.id != events::NO_ID);
    let gone = if unique {
        view.len() - ids.len()
    } else {
        view.iter().filter(|e| !ids.contains(&e.id)).count()
    };
    if gone > 0 {
        events.push(PolicyEvent::Dropped {
            messages: gone,
            why: "events outside keep_first and the newest max_events".into(),
        });
    }
    kept
}

/// The LLM summarising condenser: a condensation with the model's summary,
/// or none when nothing is due or the summary call fails (the view is then
/// sent uncondensed).
fn summarised(
    l: &LlmSummarizing,
    view: &[&Event],
    history: &[Message],
    ctx: &mut PolicyCtx<'_>,
    events: &mut Vec<PolicyEvent>,
) -> LabResult<Option<Condensation>> {
    let Some(plan) = l.plan(view)? else {
        return Ok(None);
    };
    let messages = source_messages(&plan.forgotten, history);
    let previous = truncate_content(&plan.previous, l.max_event_length);
    let req = SummaryRequest {
        prompt: condensers::LLM_SUMMARY_PROMPT,
        messages: &messages,
        previous: Some(&previous),
    };
    match ctx.model.summarise(&req) {
        Ok(s) => Ok(Some(l.condensation(&plan, s))),
        Err(e) => {
            events.push(PolicyEvent::ModelFailed {
                role: "summary",
                outcome: format!("{e}; view sent uncondensed"),
            });
            Ok(None)
        }
    }
}

impl Policy for OpenHands {
    fn configure(&mut self, overrides: &crate::policy::variant::Overrides) -> Result<(), String> {
        use crate::policy::variant::{set_fields, Overrides};
        // `max_message_chars` and the other LLM settings go to the LLM
        // config, every other key to the condenser's own table.
        let llm_keys = match serde_json::to_value(self.llm) {
            Ok(serde_json::Value::Object(m)) => m.keys().cloned().collect(),
            _ => Vec::new(),
        };
        let (llm, rest): (Overrides, Overrides) = overrides
            .clone()
            .into_iter()
            .partition(|(k, _)| llm_keys.contains(k));
        let mut condenser = self.condenser.clone();
        match &mut condenser {
            Condenser::ObservationMasking(c) => set_fields(c, &rest),
            Condenser::Recent(c) => set_fields(c, &rest),
            Condenser::Amortized(c) => set_fields(c, &rest),
            Condenser::Llm(c) => set_fields(c, &rest),
            Condenser::ConversationWindow(c) => set_fields(c, &rest),
        }?;
        set_fields(&mut self.llm, &llm)?;
        self.condenser = condenser;
        Ok(())
    }

    fn variant_keys(&self) -> crate::policy::variant::Overrides {
        use crate::policy::variant::fields;
        let mut keys = match &self.condenser {
            Condenser::ObservationMasking(c) => fields(c),
            Condenser::Recent(c) => fields(c),
            Condenser::Amortized(c) => fields(c),
            Condenser::Llm(c) => fields(c),
            Condenser::ConversationWindow(c) => fields(c),
        };
        keys.extend(fields(&self.llm));
        keys
    }

    fn info(&self) -> PolicyInfo {
        let (summary, constructor) = match &self.condenser {
            Condenser::ObservationMasking(_) => (
                "mask observations outside the newest attention_window events as <MASKED>",
                serde_json::to_value(ObservationMasking::constructor()),
            ),
            Condenser::Recent(_) => (
                "keep the first keep_first and the newest max_events events",
                serde_json::to_value(RecentEvents::constructor()),
            ),
            Condenser::Amortized(_) => (
                "past max_size events, forget the middle down to max_size // 2",
                serde_json::to_value(AmortizedForgetting::constructor()),
            ),
            Condenser::Llm(_) => (
                "past max_size events, summarise the middle into one event at keep_first",
                serde_json::to_value(LlmSummarizing::constructor()),
            ),
            Condenser::ConversationWindow(_) => (
                "when the request is too long, keep the first user message and the newest half of the events",
                serde_json::to_value(serde_json::json!({})),
            ),
        };
        PolicyInfo {
            name: self.name.to_string(),
            family: "OpenHands",
            summary: summary.into(),
            source: Source {
                upstream: UPSTREAM.into(),
                files: &[
                    "openhands/memory/condenser/impl/",
                    "openhands/core/config/condenser_config.py",
                    "openhands/memory/view.py",
                    "openhands/memory/conversation_memory.py",
                    "openhands/core/config/llm_config.py (max_message_chars)",
                    "openhands/events/serialization/event.py (truncate_content)",
                ],
                license: "MIT",
                approximate: false,
            },
            constants: serde_json::json!({
                "config_defaults (used)": serde_json::to_value(&self.condenser).unwrap_or_default(),
                "constructor_defaults": constructor.unwrap_or_default(),
                "llm_config": self.llm,
            }),
            unit: Unit::Messages,
            differences: vec![
                "a condensation applies on the same call (upstream spends an agent step returning a CondensationAction)",
                "no RecallAction/RecallObservation or system prompt events besides one system event at id 0",
                "the summariser gets the forgotten events as messages, not as <EVENT id=...> str(event) text",
                "image blocks beside tool results are not modelled as events",
                "conversation_window: the condensation request is a request over context_window_tokens by the run's counter (upstream: the provider's context-window error)",
                "tool results carry no observation type, so every one is cut to max_message_chars (30,000 chars) as CmdOutputObservation and most types are: a file view (FileReadObservation) or browser page, sent whole upstream, is cut too, and an error result gets no `[Error occurred in processing last action]` line",
            ],
        }
    }

    fn acts_on(&self) -> crate::policy::shape::ActsOn {
        use crate::policy::shape::ActsOn;
        match self.condenser {
            // Only observations are masked; the other condensers forget or
            // summarise events of any kind.
            Condenser::ObservationMasking(_) => ActsOn::ToolResults,
            _ => ActsOn::Messages,
        }
    }

    fn pointer_rules(&self) -> Vec<PointerRule> {
        // `<MASKED>` and summaries name no place: the event log is not in the request.
        Vec::new()
    }

    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        let mut evs = Vec::new();
        if history.len() < self.streamed {
            self.history_replaced();
        }
        let from = self.stream.len();
        events::extend(&mut self.stream, history, self.streamed);
        self.streamed = history.len();
        self.live.grow(&self.stream, from, &self.condensations);
        let view = self.live.view(&self.stream);
        let keep = Keep {
            window: &mut self.window,
            condensations: self.condensations.len(),
        };
        let out = condense(
            &self.condenser,
            self.llm,
            &view,
            history,
            ctx,
            &mut evs,
            keep,
        )?;
        let request = match out {
            Condensed { new: Some(c), .. } => {
                drop(view);
                self.live.forget(&self.stream, &c);
                self.condensations.push(c);
                events::render(&self.live.view(&self.stream), history, self.llm)
            }
            Condensed {
                request: Some(request),
                ..
            } => request,
            Condensed { view: Some(v), .. } => match &self.condenser {
                Condenser::ObservationMasking(m) => {
                    let masked = v.len().saturating_sub(m.attention_window);
                    self.masked.render(&v, masked, history, self.llm)
                }
                _ => events::render(&v, history, self.llm),
            },
            Condensed { .. } => events::render(&view, history, self.llm),
        };
        Ok(Prepared {
            request,
            events: evs,
        })
    }

    fn history_replaced(&mut self) {
        self.stream.clear();
        self.streamed = 0;
        self.live.clear();
        self.masked.clear();
        self.window.clear();
    }
}

#[cfg(test)]
mod tests;
