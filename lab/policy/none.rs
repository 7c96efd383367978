//! The baseline: no context management at all; every request is the whole history.

use super::{PointerRule, Policy, PolicyCtx, PolicyInfo, Prepared, Source, Unit};
use crate::error::LabResult;
use crate::message::Message;

/// Sends everything, changes nothing (the cost and validity baseline).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoCompaction;

impl Policy for NoCompaction {
    fn info(&self) -> PolicyInfo {
        PolicyInfo {
            name: "none".to_string(),
            family: "baseline",
            summary: "no context management: every request carries the whole history".into(),
            source: Source {
                upstream: "ctxlab".into(),
                files: &[],
                license: "MIT",
                approximate: false,
            },
            constants: serde_json::json!({}),
            unit: Unit::Messages,
            differences: vec![],
        }
    }

    fn pointer_rules(&self) -> Vec<PointerRule> {
        vec![]
    }

    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        _ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        Ok(Prepared {
            request: history.clone(),
            events: vec![],
        })
    }
}
