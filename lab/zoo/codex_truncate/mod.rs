//! Codex's per-model truncation of tool outputs (openai/codex, Apache-2.0):
//! each function output is cut to 1.2 × the model's `truncation_policy` as
//! it is recorded into the history, and stays cut.
//!
//! Read in the stored code index:
//! - `codex-rs/core/models.json@21dac7d7a4d1cef78f2b399180653b3b8f03f2f7`:
//!   `gpt-5.2-codex` has `context_window` 272,000 and `truncation_policy`
//!   `{"mode": "tokens", "limit": 10000}`;
//! - `codex-rs/core/src/context_manager/history.rs` in the version of the
//!   same era (personality, `input_modalities`): `record_items` →
//!   `process_item`, a text `FunctionCallOutput` or a `CustomToolCallOutput`
//!   becomes `truncate_text(content, policy * 1.2)`;
//! - the `truncate_text` that version imports (`crate::truncate`, which
//!   re-exports `approx_tokens_from_byte_count_i64`): every stored version of
//!   it delegates to `codex_utils_string`'s `truncate_middle_with_token_budget`
//!   / `truncate_middle_chars` (`split_string`, `…N tokens truncated…`),
//!   read in `codex-rs/utils/string/src/truncate.rs` as stored. The index
//!   names no commit for these two files; the policy is marked approximate.
//!
//! The `codex-cli` policy's `[…N tokens truncated…]` with newline-aligned
//! cuts is the older `core/src/truncate.rs` this one replaced.

mod middle;

#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

use crate::error::LabResult;
use crate::message::{Block, Message};
use crate::policy::{
    PointerRule, Policy, PolicyCtx, PolicyEvent, PolicyInfo, Prepared, Source, Unit,
};
pub use middle::{split_string, truncate_text, TruncationPolicy};

/// The policy name in `lab policies`.
pub const NAME: &str = "codex-truncate";

/// `context_window` of `gpt-5.2-codex` (reported; this policy only truncates).
pub const CONTEXT_WINDOW: usize = 272_000;

/// `TruncationMode` (`truncation_policy.mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// A budget in approximate tokens (4 bytes each).
    Tokens,
    /// A budget in bytes.
    Bytes,
}

/// The model's `truncation_policy` (`TruncationPolicyConfig`, flattened so
/// a variant sets `mode` and `limit` by name) and the history's scaling;
/// `Default` is `gpt-5.2-codex`'s.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Switches {
    /// `truncation_policy.mode` (`tokens`).
    pub mode: Mode,
    /// `truncation_policy.limit` (10,000).
    pub limit: usize,
    /// `process_item`'s unnamed `policy * 1.2`, room for serialization.
    pub serialization_budget: f64,
}

impl Default for Switches {
    fn default() -> Self {
        Switches {
            mode: Mode::Tokens,
            limit: 10_000,
            serialization_budget: 1.2,
        }
    }
}

impl Switches {
    /// The policy `process_item` truncates with.
    pub fn policy(&self) -> TruncationPolicy {
        let base = match self.mode {
            Mode::Tokens => TruncationPolicy::Tokens(self.limit),
            Mode::Bytes => TruncationPolicy::Bytes(self.limit),
        };
        base * self.serialization_budget
    }
}

/// The policy: its switches and how many messages it has recorded.
#[derive(Debug, Clone, Default)]
pub struct CodexTruncate {
    /// Constants.
    pub switches: Switches,
    recorded: usize,
}

/// A boxed policy with `gpt-5.2-codex`'s truncation.
pub fn make() -> Box<dyn Policy> {
    Box::new(CodexTruncate::default())
}

impl CodexTruncate {
    /// `process_item` on every tool output of `history` not yet processed
    /// (from message `from` on); the events of the ones it cut.
    fn record(&self, history: &mut [Message], from: usize) -> Vec<PolicyEvent> {
        let policy = self.switches.policy();
        let mut events = Vec::new();
        for b in history.iter_mut().skip(from).flat_map(|m| m.blocks_mut()) {
            let Block::ToolResult {
                tool_use_id,
                content,
            } = b
            else {
                continue;
            };
            let cut = truncate_text(content, policy);
            if cut != *content {
                events.push(PolicyEvent::Truncated {
                    id: tool_use_id.clone(),
                    from_chars: content.chars().count(),
                    to_chars: cut.chars().count(),
                    saved_to: None,
                });
                *content = cut;
            }
        }
        events
    }
}

impl Policy for CodexTruncate {
    fn configure(&mut self, overrides: &crate::policy::variant::Overrides) -> Result<(), String> {
        crate::policy::variant::set_fields(&mut self.switches, overrides)
    }

    fn variant_keys(&self) -> crate::policy::variant::Overrides {
        crate::policy::variant::fields(&self.switches)
    }

    fn info(&self) -> PolicyInfo {
        PolicyInfo {
            name: NAME.into(),
            family: "Codex CLI",
            summary: "each tool output cut once as recorded to 1.2 × the model's truncation_policy (gpt-5.2-codex: 48,000 bytes), head and tail around …N tokens truncated…".into(),
            source: Source {
                upstream: "openai/codex (models.json@21dac7d7a4d1cef78f2b399180653b3b8f03f2f7; history.rs, utils/string truncate.rs as stored)".into(),
                files: &[
                    "codex-rs/core/models.json",
                    "codex-rs/core/src/context_manager/history.rs (process_item)",
                    "codex-rs/utils/string/src/truncate.rs",
                ],
                license: "Apache-2.0 (constants and strings only)",
                approximate: true,
            },
            constants: serde_json::json!({
                "switches": self.switches,
                "context_window": CONTEXT_WINDOW,
                "byte_budget": self.switches.policy().byte_budget(),
            }),
            unit: Unit::Tokens,
            differences: vec![
                "the truncation alone: auto-compaction and history normalisation are the `codex-cli` policy's; the shell tools' own `formatted_truncate_text` (a `Total output lines` header at the unscaled limit) is not applied, so every tool output gets the record-time cut only",
                "a tool result is one text output (upstream's content items, images and the omitted-items note are not modelled)",
                "history.rs and truncate.rs are read in the stored versions of the models.json era, not at its commit (marked approximate)",
            ],
        }
    }

    fn acts_on(&self) -> crate::policy::shape::ActsOn {
        crate::policy::shape::ActsOn::ToolResults
    }

    fn sends_responses(&self) -> bool {
        // Codex talks to `/responses`: its requests are checked against
        // the Responses input-item rules too.
        true
    }

    fn pointer_rules(&self) -> Vec<PointerRule> {
        // The cut names no place: the middle is gone from the model's history.
        Vec::new()
    }

    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        _ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        // Upstream cuts each item once, when it is recorded; a cut output
        // can exceed the budget by the marker's length, so cutting it again
        // would not be a no-op.
        let events = self.record(history, self.recorded);
        self.recorded = history.len();
        Ok(Prepared {
            request: history.clone(),
            events,
        })
    }
}
