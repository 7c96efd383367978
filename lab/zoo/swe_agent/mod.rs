//! SWE-agent's history processors and the "Complexity Trap" study's
//! configurations of them, as one projecting policy: the history stays whole,
//! the request is the processors' output.
//!
//! Upstream: `SWE-agent/SWE-agent@3ea751c087f32b16e039a2233dd6eefecef325d5`
//! (`sweagent/agent/history_processors.py`) and the study's fork
//! `Recursive-Safeguarding/the-complexity-trap@1b07decf4ca4b5d722d25a57810fe18a2d8b60fb`
//! (`sweagent/agent/history_processors.py`, `sweagent/agent/models.py`, and
//! the `config/default_no_demo_*.yaml` files each variant names). MIT licence;
//! constants and strings only are reproduced.
//!
//! Variants:
//! - `swe-agent-mask-5`: `last_n_observations` `n: 5` (SWE-agent 0.7 configs);
//! - `swe-agent-mask-10`: the study's observation masking (`default_no_demo_N=1_M=10.yaml`);
//! - `swe-agent-summary-21-10`: `summarize_every_n_turns` `n: 21`,
//!   `keep_last_m_turns: 10`, static checkpointing
//!   (`default_no_demo_checkpoint_same_model_openhands_N=21_M=10.yaml`);
//! - `swe-agent-hybrid`: `summarize_every_n_turns` `n: 43`, `keep_last_m_turns: 10`,
//!   then `last_n_observations` `n: 10`
//!   (`default_no_demo_checkpoint_same_model_openhands_N=43_M=10_masking_M=10.yaml`).

mod kept;
pub mod mask;
pub mod summary;

use serde::{Deserialize, Serialize};

use crate::error::LabResult;
use crate::message::Message;
use crate::policy::{PointerRule, Policy, PolicyCtx, PolicyInfo, Prepared, Source, Unit};

pub use mask::LastNObservations;
pub use summary::{SummarizeEveryNTurns, SummaryFaults, SummaryState};

/// The processors of one configuration, in upstream's order (summary first,
/// then masking, as the hybrid YAML lists them).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SweAgentConfig {
    /// `summarize_every_n_turns`, if configured.
    pub summarize_every_n_turns: Option<SummarizeEveryNTurns>,
    /// `last_n_observations`, if configured.
    pub last_n_observations: Option<LastNObservations>,
}

/// A SWE-agent configuration as a policy.
#[derive(Debug, Clone)]
pub struct SweAgent {
    name: &'static str,
    config: SweAgentConfig,
    state: SummaryState,
    /// The masking as of the last call, when the processors are masking
    /// alone ([`kept`]).
    kept: Option<kept::KeptMask>,
}

const UPSTREAM_MASK: &str = "SWE-agent/SWE-agent@3ea751c087f32b16e039a2233dd6eefecef325d5";
const UPSTREAM_STUDY: &str =
    "Recursive-Safeguarding/the-complexity-trap@1b07decf4ca4b5d722d25a57810fe18a2d8b60fb";

impl SweAgent {
    /// A policy named `name` running `config`.
    pub fn new(name: &'static str, config: SweAgentConfig) -> Self {
        SweAgent {
            name,
            config,
            state: SummaryState::default(),
            kept: None,
        }
    }

    /// `last_n_observations` with `n`.
    pub fn mask(name: &'static str, n: usize) -> Self {
        Self::new(
            name,
            SweAgentConfig {
                last_n_observations: Some(LastNObservations {
                    n,
                    ..Default::default()
                }),
                summarize_every_n_turns: None,
            },
        )
    }

    /// `summarize_every_n_turns` with the study's switches, optionally followed by masking.
    pub fn summary(name: &'static str, n: usize, mask_n: Option<usize>) -> Self {
        Self::new(
            name,
            SweAgentConfig {
                summarize_every_n_turns: Some(SummarizeEveryNTurns {
                    n,
                    keep_last_m_turns: 10,
                    enable_static_checkpointing: true,
                    ..Default::default()
                }),
                last_n_observations: mask_n.map(|n| LastNObservations {
                    n,
                    ..Default::default()
                }),
            },
        )
    }

    /// The configuration (for sweeps and fault switches).
    pub fn config_mut(&mut self) -> &mut SweAgentConfig {
        &mut self.config
    }
}

/// `swe-agent-mask-5`.
pub fn mask_5() -> Box<dyn Policy> {
    Box::new(SweAgent::mask("swe-agent-mask-5", 5))
}

/// `swe-agent-mask-10`.
pub fn mask_10() -> Box<dyn Policy> {
    Box::new(SweAgent::mask("swe-agent-mask-10", 10))
}

/// `swe-agent-summary-21-10`.
pub fn summary_21_10() -> Box<dyn Policy> {
    Box::new(SweAgent::summary("swe-agent-summary-21-10", 21, None))
}

/// `swe-agent-hybrid`.
pub fn hybrid() -> Box<dyn Policy> {
    Box::new(SweAgent::summary("swe-agent-hybrid", 43, Some(10)))
}

impl Policy for SweAgent {
    fn configure(&mut self, overrides: &crate::policy::variant::Overrides) -> Result<(), String> {
        crate::policy::variant::set_fields(&mut self.config, overrides)
    }

    fn variant_keys(&self) -> crate::policy::variant::Overrides {
        crate::policy::variant::fields(&self.config)
    }

    fn info(&self) -> PolicyInfo {
        let summarises = self.config.summarize_every_n_turns.is_some();
        let mut differences = vec![
            "no system prompt is modelled: the kept prefix is the first message (upstream: system prompt and instance template)",
            "observations are the first user message and every tool-result message; plain user messages later in a session are not observations",
            "text and image blocks beside tool results are never masked (upstream masks a whole one-result observation)",
        ];
        if summarises {
            differences.extend([
                "a failed summary call is recorded and retried at the next call (upstream raises and ends the run)",
                "per_instance_call_limit is not modelled, so the 'Summary skipped due to API call limit' checkpoint never appears",
                "the summariser gets the turns as messages and the PROBLEM_STATEMENT / PREVIOUS_CHECKPOINT context as the previous summary, not upstream's rendered user prompt",
            ]);
        }
        PolicyInfo {
            name: self.name.to_string(),
            family: "SWE-agent",
            summary: if summarises {
                "summarise the oldest n (action, observation) turns into a checkpoint once n + m are unprocessed".into()
            } else {
                "replace all but the last n observations by a line count".into()
            },
            source: Source {
                upstream: if summarises {
                    UPSTREAM_STUDY.into()
                } else {
                    UPSTREAM_MASK.into()
                },
                files: &[
                    "sweagent/agent/history_processors.py",
                    "sweagent/agent/models.py",
                    "config/default_no_demo_N=1_M=10.yaml",
                    "config/default_no_demo_checkpoint_same_model_openhands_N=21_M=10.yaml",
                    "config/default_no_demo_checkpoint_same_model_openhands_N=43_M=10_masking_M=10.yaml",
                ],
                license: "MIT",
                approximate: false,
            },
            constants: serde_json::to_value(&self.config).unwrap_or_default(),
            unit: Unit::Messages,
            differences,
        }
    }

    fn acts_on(&self) -> crate::policy::shape::ActsOn {
        // Masking elides observations after the first message and summaries
        // take (action, observation) turns: both need tool results.
        crate::policy::shape::ActsOn::ToolResults
    }

    fn pointer_rules(&self) -> Vec<PointerRule> {
        // Placeholders name no place: masked output and summarised turns are gone.
        Vec::new()
    }

    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        let mut events = Vec::new();
        if let Some(request) = self.advance(history, &mut events)? {
            return Ok(Prepared { request, events });
        }
        let mut request = match &self.config.summarize_every_n_turns {
            Some(s) => s.apply(&mut self.state, history, ctx, &mut events)?,
            None => history.clone(),
        };
        if let Some(m) = &self.config.last_n_observations {
            m.apply(&mut request, &mut events)?;
        }
        Ok(Prepared { request, events })
    }

    fn history_replaced(&mut self) {
        self.kept = None;
    }
}

impl SweAgent {
    /// The request from the kept masking, when masking is all there is.
    fn advance(
        &mut self,
        history: &[Message],
        events: &mut Vec<crate::policy::PolicyEvent>,
    ) -> LabResult<Option<Vec<Message>>> {
        let mask = match &self.config {
            SweAgentConfig {
                summarize_every_n_turns: None,
                last_n_observations: Some(m),
            } if kept::KeptMask::applies(m) => m,
            _ => return Ok(None),
        };
        mask.validate()?;
        let len = history.len();
        if !self.kept.as_ref().is_some_and(|k| k.fits(mask, len)) {
            self.kept = Some(kept::KeptMask::new(mask));
        }
        let kept = self.kept.get_or_insert_with(|| kept::KeptMask::new(mask));
        Ok(Some(kept.advance(history, events).to_vec()))
    }
}

#[cfg(test)]
mod tests;
