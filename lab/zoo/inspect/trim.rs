//! `CompactionTrim` (`trim_messages`): the input messages and the newest
//! `preserve` share of the conversation; results whose call was cut are
//! dropped, calls left without a result lose that call, and a trailing
//! assistant message goes.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::{clear_memory_content, partition, Compacted, Fresh, Im, ImRole, Strategy};
use crate::error::{LabError, LabResult};
use crate::policy::{Policy, PolicyCtx, PolicyEvent};

/// The policy's name.
pub const NAME: &str = "inspect-trim";

/// `CompactionTrim(...)`'s arguments under upstream's names; `Default` is
/// upstream's, with the window of a model Inspect does not know.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CompactionTrim {
    /// `threshold`: tokens when above 1, else a fraction of `context_window`.
    pub threshold: f64,
    /// The model's input window (`get_model_input_tokens`; 128,000 unknown).
    pub context_window: usize,
    /// `memory`: clear the content of `memory` tool calls.
    pub memory: bool,
    /// `preserve`: share of the conversation kept.
    pub preserve: f64,
    /// Fault: keep a call whose result the cut dropped (`trim_messages`
    /// before inspect_ai PR 2999, "remove orphan tool calls in trim"), so
    /// the request holds a `tool_use` without its `tool_result`.
    pub fault_keep_orphan_calls: bool,
}

impl Default for CompactionTrim {
    fn default() -> Self {
        CompactionTrim {
            threshold: 0.9,
            context_window: super::DEFAULT_CONTEXT_WINDOW,
            memory: true,
            preserve: 0.8,
            fault_keep_orphan_calls: false,
        }
    }
}

/// `trim_messages(messages, preserve)`: the kept messages and how many of
/// the conversation's were dropped.
pub fn trim_messages(
    messages: &[Im],
    preserve: f64,
    keep_orphan_calls: bool,
    fresh: &mut Fresh,
) -> LabResult<(Vec<Im>, usize)> {
    if !(0.0..=1.0).contains(&preserve) {
        return Err(LabError::usage(
            format!("preserve must be in range [0,1], got {preserve}"),
            "set inspect-trim:preserve to a ratio between 0 and 1",
        ));
    }
    let (input, conversation) = partition(messages);
    let start = ((conversation.len() as f64) * (1.0 - preserve)) as usize;
    let mut kept: Vec<Im> = Vec::new();
    let mut active: HashSet<String> = HashSet::new();
    for m in &conversation[start.min(conversation.len())..] {
        match m.role {
            ImRole::Assistant => {
                active = m.tool_calls.iter().map(|c| c.id.clone()).collect();
                kept.push(m.clone());
            }
            ImRole::Tool => {
                if m.tool_call_id
                    .as_ref()
                    .is_some_and(|id| active.contains(id))
                {
                    kept.push(m.clone());
                }
            }
            ImRole::User => {
                active.clear();
                kept.push(m.clone());
            }
        }
    }
    if !keep_orphan_calls {
        let answered: HashSet<String> = kept
            .iter()
            .filter(|m| m.role == ImRole::Tool)
            .filter_map(|m| m.tool_call_id.clone())
            .collect();
        for m in kept.iter_mut().filter(|m| m.role == ImRole::Assistant) {
            let before = m.tool_calls.len();
            m.tool_calls.retain(|c| answered.contains(&c.id));
            if m.tool_calls.len() != before {
                m.id = fresh.id();
                m.original = None;
            }
        }
    }
    if kept.last().is_some_and(|m| m.role == ImRole::Assistant) {
        kept.pop();
    }
    let dropped = conversation.len() - kept.len();
    let mut out = input;
    out.extend(kept);
    Ok((out, dropped))
}

impl Strategy for CompactionTrim {
    fn threshold(&self) -> f64 {
        self.threshold
    }

    fn context_window(&self) -> usize {
        self.context_window
    }

    fn compact(
        &mut self,
        messages: &[Im],
        fresh: &mut Fresh,
        _ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Compacted> {
        let (mut input, dropped) =
            trim_messages(messages, self.preserve, self.fault_keep_orphan_calls, fresh)?;
        if self.memory {
            clear_memory_content(&mut input, fresh);
        }
        let events = if dropped > 0 {
            vec![PolicyEvent::Dropped {
                messages: dropped,
                why: format!("trim_messages(preserve={})", self.preserve),
            }]
        } else {
            Vec::new()
        };
        Ok(Compacted {
            input,
            message: None,
            events,
        })
    }
}

/// `CompactionTrim` under Inspect's compaction handler.
pub type Trim = super::Compaction<CompactionTrim>;

/// `inspect-trim` with upstream's defaults.
pub fn trim() -> Box<dyn Policy> {
    Box::new(Trim::default())
}

impl super::Row for CompactionTrim {
    const NAME: &'static str = NAME;
    const SUMMARY: &'static str = "past the threshold, keep the input and the newest preserve share of the conversation, dropping results of cut calls and calls left unanswered";

    fn constants(&self) -> serde_json::Value {
        serde_json::json!({
            "threshold": self.threshold,
            "DEFAULT_CONTEXT_WINDOW": super::DEFAULT_CONTEXT_WINDOW,
            "context_window": self.context_window,
            "preserve": self.preserve,
            "memory": self.memory,
            "MAX_ITERATIONS": super::MAX_ITERATIONS,
        })
    }
}
