//! OpenHands v0 condensers: observation masking, recent events, amortized
//! forgetting and LLM summarising, one switches struct each.
//!
//! Read in `All-Hands-AI/OpenHands@156d0686c46aafb0fa9d291da6421fb6f64dddc0`:
//! `openhands/memory/condenser/impl/{observation_masking,recent_events,amortized_forgetting,llm_summarizing}_condenser.py`
//! and `openhands/core/config/condenser_config.py`.
//!
//! Constructor and config defaults differ upstream. Every `Default` here is
//! the **config** default (what a `[condenser]` TOML section without the
//! field gives); each struct's `constructor()` gives the Python constructor's
//! defaults.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::events::{py_slice, Condensation, Ev, Event, Forgotten, NO_ID};
use crate::error::{LabError, LabResult};

/// `observation_masking`: observations older than the window become `<MASKED>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ObservationMasking {
    /// Most recent events whose observations stay (config 100, constructor 5).
    pub attention_window: usize,
}

impl Default for ObservationMasking {
    fn default() -> Self {
        ObservationMasking {
            attention_window: 100,
        }
    }
}

impl ObservationMasking {
    /// The constructor's defaults.
    pub fn constructor() -> Self {
        ObservationMasking {
            attention_window: 5,
        }
    }

    /// The masked view (upstream returns a new `View`, no condensation event).
    pub fn condense<'a>(&self, view: &[&'a Event]) -> Vec<&'a Event> {
        let len = view.len();
        let masked: &'a Event = &MASKED_EVENT;
        view.iter()
            .enumerate()
            .map(|(i, &e)| {
                if e.ev.is_observation() && i + self.attention_window < len {
                    masked
                } else {
                    e
                }
            })
            .collect()
    }
}

/// The masking placeholder, byte for byte.
pub const MASKED: &str = "<MASKED>";

/// The event a masked observation becomes (one, shared by every view).
static MASKED_EVENT: std::sync::LazyLock<Event> = std::sync::LazyLock::new(|| Event {
    id: NO_ID,
    ev: Ev::Condensed(MASKED.into()),
});

/// `recent`: the first `keep_first` events and the newest up to `max_events`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RecentEvents {
    /// Events always kept at the start (config 1, constructor 1).
    pub keep_first: usize,
    /// Most events kept (config 100, constructor 10).
    pub max_events: usize,
}

impl Default for RecentEvents {
    fn default() -> Self {
        RecentEvents {
            keep_first: 1,
            max_events: 100,
        }
    }
}

impl RecentEvents {
    /// The constructor's defaults.
    pub fn constructor() -> Self {
        RecentEvents {
            keep_first: 1,
            max_events: 10,
        }
    }

    /// `head + tail` exactly as upstream slices: `view[-0:]` is the whole
    /// view, and a view shorter than `max_events` repeats its head.
    pub fn condense<'a>(&self, view: &[&'a Event]) -> Vec<&'a Event> {
        let len = view.len() as i64;
        let head = &view[py_slice(view.len(), 0, self.keep_first as i64)];
        let tail_length = (self.max_events as i64 - head.len() as i64).max(0);
        let tail = &view[py_slice(view.len(), -tail_length, len)];
        head.iter().chain(tail).copied().collect()
    }
}

/// Shared rule of the rolling condensers.
fn validate(keep_first: usize, max_size: usize) -> LabResult<()> {
    if keep_first >= max_size / 2 || max_size < 1 {
        return Err(LabError::usage(
            format!("keep_first ({keep_first}) must be less than half of max_size ({max_size})"),
            "lower keep_first or raise max_size",
        ));
    }
    Ok(())
}

/// `amortized`: past `max_size` events, forget all but `keep_first` and the
/// newest, down to `max_size // 2`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AmortizedForgetting {
    /// Events that trigger forgetting when exceeded (config 100, constructor 100).
    pub max_size: usize,
    /// Events always kept at the start (config 1, constructor 0).
    pub keep_first: usize,
}

impl Default for AmortizedForgetting {
    fn default() -> Self {
        AmortizedForgetting {
            max_size: 100,
            keep_first: 1,
        }
    }
}

impl AmortizedForgetting {
    /// The constructor's defaults.
    pub fn constructor() -> Self {
        AmortizedForgetting {
            max_size: 100,
            keep_first: 0,
        }
    }

    /// The condensation due on `view`, if any.
    pub fn condensation(&self, view: &[&Event]) -> LabResult<Option<Condensation>> {
        validate(self.keep_first, self.max_size)?;
        if view.len() <= self.max_size {
            return Ok(None);
        }
        let target = (self.max_size / 2) as i64;
        let head = &view[py_slice(view.len(), 0, self.keep_first as i64)];
        let from_tail = target - head.len() as i64;
        let tail = &view[py_slice(view.len(), -from_tail, view.len() as i64)];
        let keep: BTreeSet<i64> = head.iter().chain(tail).map(|e| e.id).collect();
        let forget: Vec<i64> = view
            .iter()
            .map(|e| e.id)
            .filter(|id| !keep.contains(id))
            .collect();
        Ok(range(&forget).map(|(start, end)| Condensation {
            forgotten: Forgotten::Range(start, end),
            summary: None,
        }))
    }
}

fn range(ids: &[i64]) -> Option<(i64, i64)> {
    Some((*ids.iter().min()?, *ids.iter().max()?))
}

/// `llm`: like amortized, plus one summary event at `keep_first` that folds in
/// the previous summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmSummarizing {
    /// Events always kept at the start (config 1, constructor 1).
    pub keep_first: usize,
    /// Events that trigger a summary when exceeded (config 100, constructor 100).
    pub max_size: usize,
    /// Chars of one event in the summary prompt (config 10 000, constructor 10 000).
    pub max_event_length: usize,
}

impl Default for LlmSummarizing {
    fn default() -> Self {
        LlmSummarizing {
            keep_first: 1,
            max_size: 100,
            max_event_length: 10_000,
        }
    }
}

/// What a due summary covers.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryPlan {
    /// The previous summary (`No events summarized` the first time).
    pub previous: String,
    /// The events to forget and summarise (never a summary event).
    pub forgotten: Vec<Event>,
}

impl LlmSummarizing {
    /// The constructor's defaults (equal to the config's).
    pub fn constructor() -> Self {
        Self::default()
    }

    /// The summary due on `view`, if any.
    pub fn plan(&self, view: &[&Event]) -> LabResult<Option<SummaryPlan>> {
        validate(self.keep_first, self.max_size)?;
        if view.len() <= self.max_size {
            return Ok(None);
        }
        let head_len = py_slice(view.len(), 0, self.keep_first as i64).len() as i64;
        let from_tail = (self.max_size / 2) as i64 - head_len - 1;
        let previous = match view.get(self.keep_first).map(|e| &e.ev) {
            Some(Ev::Condensed(s)) => s.clone(),
            _ => "No events summarized".to_string(),
        };
        let forgotten: Vec<Event> = view[py_slice(view.len(), self.keep_first as i64, -from_tail)]
            .iter()
            .filter(|e| !matches!(e.ev, Ev::Condensed(_)))
            .map(|&e| e.clone())
            .collect();
        if forgotten.is_empty() {
            return Ok(None);
        }
        Ok(Some(SummaryPlan {
            previous,
            forgotten,
        }))
    }

    /// The condensation recording `summary` for `plan`.
    pub fn condensation(&self, plan: &SummaryPlan, summary: String) -> Condensation {
        let ids: Vec<i64> = plan.forgotten.iter().map(|e| e.id).collect();
        let (start, end) = range(&ids).unwrap_or((NO_ID, NO_ID));
        Condensation {
            forgotten: Forgotten::Range(start, end),
            summary: Some((summary, self.keep_first)),
        }
    }
}

/// The summarising condenser's prompt, byte for byte up to the previous summary
/// (the events follow as messages, see the module's differences).
pub const LLM_SUMMARY_PROMPT: &str = include_str!("llm_summary_prompt.txt");

/// `conversation_window`: on a condensation request (upstream: the provider
/// rejected the request as too long), keep the system message, the first user
/// message and about the newest half of the rest, without dangling
/// observations at the cut (`conversation_window_condenser.py`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConversationWindow {
    /// Lab stand-in for the provider's limit: a request of more tokens than
    /// this (by the run's counter) is what upstream's `ContextWindowExceededError`
    /// would be (upstream has no constant; 200 000 is a Claude-class window).
    pub context_window_tokens: usize,
}

impl Default for ConversationWindow {
    fn default() -> Self {
        ConversationWindow {
            context_window_tokens: 200_000,
        }
    }
}

impl ConversationWindow {
    /// The condensation for `view` (upstream's `get_condensation`), `None`
    /// when it forgets nothing.
    pub fn condensation(&self, view: &[&Event]) -> Option<Condensation> {
        let system = view.iter().find(|e| matches!(e.ev, Ev::System));
        let first_user = view.iter().find(|e| matches!(e.ev, Ev::User(_)))?;
        let essential: BTreeSet<i64> = system
            .into_iter()
            .chain([first_user])
            .map(|e| e.id)
            .collect();
        let total = view.len();
        let keep_recent = (total.saturating_sub(essential.len()) / 2).max(1);
        let start = total.saturating_sub(keep_recent);
        let first_valid = view[start..]
            .iter()
            .position(|e| !e.ev.is_observation())
            .map_or(total, |i| start + i);
        let keep: BTreeSet<i64> = essential
            .into_iter()
            .chain(view[first_valid..].iter().map(|e| e.id))
            .collect();
        let forgotten: BTreeSet<i64> = view
            .iter()
            .map(|e| e.id)
            .filter(|id| !keep.contains(id))
            .collect();
        if forgotten.is_empty() {
            return None;
        }
        Some(Condensation {
            forgotten: Forgotten::Ids(forgotten),
            summary: None,
        })
    }
}
