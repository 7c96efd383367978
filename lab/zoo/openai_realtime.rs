//! OpenAI Realtime API server-side conversation truncation: the session field
//! `truncation`. When the conversation after the instructions exceeds the
//! model's input token limit, the server leaves the oldest items out of the
//! model's context:
//! - `"auto"` (the default) drops "just enough" old items to fit, so the start
//!   of the context moves on every turn once over the limit (each turn a
//!   cache miss);
//! - `{"type": "retention_ratio", "retention_ratio": r, "token_limits":
//!   {"post_instructions": N}}` drops old items until `r` of the allowed
//!   tokens are used, one larger cut after which the prefix stays put for
//!   several turns (fewer truncations, better cache rate);
//! - `"disabled"` never truncates and returns an error instead.
//!
//! There is no upstream code (the behaviour is server-side); the sources are
//! OpenAI's documentation, each constant citing its own:
//! - the API reference's `RealtimeTruncation` description, as generated into
//!   the SDKs (openai/openai-java 4.7.1 `RealtimeTruncation`; openai/openai-python
//!   `src/openai/types/realtime/realtime_truncation_retention_ratio.py` at
//!   5852fbb8f2abf1ee509ea45d3a2043a8eb9cd210 and the `TokenLimits` docstring of
//!   the same type in the OpenAPI spec);
//! - the guide <https://developers.openai.com/api/docs/guides/realtime-costs>
//!   (a conversation is a list of items; the whole conversation is sent for
//!   each response);
//! - openai/openai-cookbook@0dee719e3d86c5679443d5790b2cd0910f57152a
//!   `examples/Prompt_Caching_201.ipynb` §7 and §7.1 (the 28,224 figure, the
//!   `retention_ratio: 0.7` example, "just enough" and "frequent cache misses").
//!
//! Behaviour the documents leave open is a lab choice, listed in
//! [`DIFFERENCES`], so the policy is marked approximate.
//!
//! A projecting design in the lab: the server keeps the whole conversation
//! (items are left out of the model's context, not deleted by the client),
//! so the history stays whole and the request is its kept tail.

use serde::{Deserialize, Serialize};

use crate::error::{LabError, LabResult};
use crate::message::Message;
use crate::policy::{
    PointerRule, Policy, PolicyCtx, PolicyEvent, PolicyInfo, Prepared, Source, Unit,
};
use crate::tokens::TokenCounter;

/// "A 32k context model" (openai/openai-cookbook@0dee719e
/// `examples/Prompt_Caching_201.ipynb` §7, "the shorter context window of the
/// Realtime API (currently 32k)"; the same sentence in the API reference's
/// `RealtimeTruncation` description). Read as 32 768 tokens.
pub const CONTEXT_WINDOW: usize = 32_768;
/// "with 4,096 max output tokens" (same sentence, same two sources).
pub const MAX_OUTPUT_TOKENS: usize = 4_096;
/// "can only include 28,224 tokens in the context before truncation occurs"
/// (same sentence, same two sources): the model's default input token limit.
/// It is not `CONTEXT_WINDOW - MAX_OUTPUT_TOKENS` (28 672), so the lab takes
/// the documented figure as given rather than deriving it.
pub const DEFAULT_INPUT_LIMIT: usize = 28_224;
/// The cookbook's example ratio, `"retention_ratio": 0.7` ("keeps roughly 70%
/// of the existing conversation window and drops the oldest ~30%";
/// openai/openai-cookbook@0dee719e `examples/Prompt_Caching_201.ipynb` §7.1).
/// The API reference's field description uses 0.8 only to explain the field.
pub const COOKBOOK_RETENTION_RATIO: f64 = 0.7;

/// The session's `truncation` setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// `"auto"`: drop just enough of the oldest items to fit.
    Auto,
    /// `{"type": "retention_ratio", …}`: drop down to `retention_ratio` of the limit.
    RetentionRatio,
    /// `"disabled"`: never truncate; an over-limit conversation is an error.
    Disabled,
}

/// Switches, under the API's field names. `Default` is the API's default
/// (`truncation: "auto"`) on the documented 32k model (window 32 768, 4 096
/// output tokens, input limit 28 224), with the cookbook's ratio 0.7 ready for
/// `retention_ratio` and no `token_limits.post_instructions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Truncation {
    /// `truncation`: `auto`, `retention_ratio` or `disabled`.
    pub truncation: Mode,
    /// `retention_ratio` (0.0 to 1.0): share of the allowed post-instruction
    /// tokens kept after a cut; read only in `retention_ratio` mode.
    pub retention_ratio: f64,
    /// `token_limits.post_instructions`: a lower cap on the conversation's
    /// tokens after the instructions; only the `retention_ratio` object has it,
    /// and it "cannot be higher than the model's context window size minus the
    /// maximum output tokens".
    pub post_instructions: Option<usize>,
    /// The model's context window, tokens.
    pub context_window: usize,
    /// The model's maximum output tokens.
    pub max_output_tokens: usize,
    /// The model's default input token limit ("the model's default token
    /// limits will be used" when `token_limits` is absent).
    pub model_input_limit: usize,
}

impl Default for Truncation {
    fn default() -> Self {
        Truncation {
            truncation: Mode::Auto,
            retention_ratio: COOKBOOK_RETENTION_RATIO,
            post_instructions: None,
            context_window: CONTEXT_WINDOW,
            max_output_tokens: MAX_OUTPUT_TOKENS,
            model_input_limit: DEFAULT_INPUT_LIMIT,
        }
    }
}

/// A usage error naming the bad switch.
fn bad(message: String, fix: &str) -> LabError {
    LabError::usage(format!("openai-realtime: {message}"), fix)
}

impl Truncation {
    /// Refuse switches the API would refuse or that make no sense.
    pub fn validate(&self) -> LabResult<()> {
        let r = self.retention_ratio;
        if !(0.0..=1.0).contains(&r) {
            return Err(bad(
                format!("retention_ratio {r} is outside 0.0 to 1.0"),
                "set retention_ratio between 0.0 and 1.0 (the cookbook uses 0.7)",
            ));
        }
        let room = self.context_window.saturating_sub(self.max_output_tokens);
        if room == 0 {
            return Err(bad(
                format!(
                    "context_window {} leaves no input room after max_output_tokens {}",
                    self.context_window, self.max_output_tokens
                ),
                "set context_window above max_output_tokens",
            ));
        }
        if self.model_input_limit == 0 || self.model_input_limit > room {
            return Err(bad(
                format!(
                    "model_input_limit {} is not in 1..={room}",
                    self.model_input_limit
                ),
                "set model_input_limit to at most context_window - max_output_tokens",
            ));
        }
        self.validate_post_instructions(room)
    }

    fn validate_post_instructions(&self, room: usize) -> LabResult<()> {
        match self.post_instructions {
            None => Ok(()),
            Some(_) if self.truncation != Mode::RetentionRatio => Err(bad(
                "post_instructions is set but truncation is not retention_ratio".into(),
                "token_limits exists only on the retention_ratio object: drop it or switch mode",
            )),
            Some(n) if n == 0 || n > room => Err(bad(
                format!("post_instructions {n} is not in 1..={room}"),
                "the API caps it at the context window minus the maximum output tokens",
            )),
            Some(_) => Ok(()),
        }
    }

    /// The most post-instruction tokens allowed before truncation.
    pub fn limit(&self) -> usize {
        match (self.truncation, self.post_instructions) {
            (Mode::RetentionRatio, Some(n)) => n,
            _ => self.model_input_limit,
        }
    }

    /// The tokens a cut brings the conversation down to: the limit for `auto`
    /// ("just enough"), `floor(r * limit)` for `retention_ratio`.
    pub fn target(&self) -> usize {
        match self.truncation {
            Mode::RetentionRatio => (self.retention_ratio * self.limit() as f64).floor() as usize,
            Mode::Auto | Mode::Disabled => self.limit(),
        }
    }
}

/// The Realtime server's conversation as a policy: the items left out so far
/// (a prefix of the history) and the switches.
#[derive(Debug, Clone, Default)]
pub struct Realtime {
    /// The switches.
    pub config: Truncation,
    /// Messages of the history left out of the context so far; never moves
    /// back (an item once truncated is not re-included).
    pub start: usize,
    /// Truncations made so far.
    pub truncations: usize,
}

/// The name of the default (`auto`) policy.
pub const NAME_AUTO: &str = "openai-realtime-auto";
/// The name of the `retention_ratio` policy.
pub const NAME_RETENTION: &str = "openai-realtime-retention";

/// `openai-realtime-auto`: `truncation: "auto"` on the documented 32k model.
pub fn auto() -> Box<dyn Policy> {
    Box::new(Realtime::default())
}

/// `openai-realtime-retention`: the cookbook's `retention_ratio: 0.7`,
/// without `token_limits` (the model's default limit, as in the cookbook).
pub fn retention() -> Box<dyn Policy> {
    Box::new(Realtime {
        config: Truncation {
            truncation: Mode::RetentionRatio,
            ..Truncation::default()
        },
        ..Realtime::default()
    })
}

/// Whether `history[at]` may be the first kept message: it answers no call
/// of a message left out (a call and its output go together).
fn cut_ok(history: &[Message], at: usize) -> bool {
    let Some(first) = history.get(at) else {
        return false;
    };
    let results = first.tool_result_ids();
    results.is_empty()
        || !history[..at]
            .last()
            .is_some_and(|m| m.tool_use_ids().iter().any(|id| results.contains(id)))
}

/// The last position a cut may reach: the newest group (the last message,
/// with the call message its results answer) is always kept.
fn last_cut(history: &[Message]) -> usize {
    let mut at = history.len().saturating_sub(1);
    while at > 0 && !cut_ok(history, at) {
        at -= 1;
    }
    at
}

/// A cut of the kept tail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut {
    /// The new first kept message.
    pub start: usize,
    /// Tokens before the cut.
    pub before: usize,
    /// Tokens after the cut.
    pub after: usize,
}

/// Drop from `start` until the kept tail is at most `target` tokens, cutting
/// only between groups and never past the newest group.
pub fn cut_to(history: &[Message], start: usize, target: usize, tokens: &dyn TokenCounter) -> Cut {
    let before = tokens.count_messages(history.get(start..).unwrap_or_default());
    let stop = last_cut(history).max(start);
    let (mut at, mut kept) = (start, before);
    while kept > target && at < stop {
        kept -= tokens.count_message(&history[at]).min(kept);
        at += 1;
        while at < stop && !cut_ok(history, at) {
            kept -= tokens.count_message(&history[at]).min(kept);
            at += 1;
        }
    }
    Cut {
        start: at,
        before,
        after: kept,
    }
}

impl Realtime {
    /// The policy with these switches, refused when they are invalid.
    pub fn new(config: Truncation) -> LabResult<Self> {
        config.validate()?;
        Ok(Realtime {
            config,
            ..Realtime::default()
        })
    }

    /// The server's turn: truncate when the kept conversation is over the
    /// limit (or refuse, when disabled); the events of what was done.
    pub fn truncate(
        &mut self,
        history: &[Message],
        tokens: &dyn TokenCounter,
    ) -> LabResult<Vec<PolicyEvent>> {
        self.config.validate()?;
        self.start = self.start.min(history.len());
        let limit = self.config.limit();
        let kept = tokens.count_messages(&history[self.start..]);
        if kept <= limit {
            return Ok(Vec::new());
        }
        if self.config.truncation == Mode::Disabled {
            return Err(over_limit(kept, limit));
        }
        let cut = cut_to(history, self.start, self.config.target(), tokens);
        let dropped = cut.start - self.start;
        self.start = cut.start;
        if dropped == 0 {
            return Ok(Vec::new());
        }
        self.truncations += 1;
        Ok(vec![PolicyEvent::Dropped {
            messages: dropped,
            why: self.why(cut, limit),
        }])
    }

    fn why(&self, cut: Cut, limit: usize) -> String {
        let mode = match self.config.truncation {
            Mode::RetentionRatio => format!("retention_ratio {}", self.config.retention_ratio),
            _ => "auto".to_string(),
        };
        let over = if cut.after > limit {
            " (the newest item alone is over the limit)"
        } else {
            ""
        };
        format!(
            "truncation {mode}: {} tokens over the {limit}-token limit, oldest items dropped to {}{over}",
            cut.before, cut.after
        )
    }

    fn constants(&self) -> serde_json::Value {
        let c = &self.config;
        serde_json::json!({
            "truncation": c.truncation,
            "retention_ratio": c.retention_ratio,
            "token_limits.post_instructions": c.post_instructions,
            "context_window": c.context_window,
            "max_output_tokens": c.max_output_tokens,
            "model input limit": c.model_input_limit,
        })
    }
}

/// What the lab returns where the server, with truncation disabled, "would
/// instead return an error if the conversation exceeds the model's input
/// token limit" (the error's wording is not documented; this text is the lab's).
fn over_limit(kept: usize, limit: usize) -> LabError {
    LabError::Refused {
        message: format!(
            "openai-realtime (truncation disabled): the conversation is {kept} tokens, over the {limit}-token input limit"
        ),
        fix: "use truncation auto or retention_ratio, or shorten the conversation".into(),
    }
}

impl Policy for Realtime {
    fn configure(&mut self, overrides: &crate::policy::variant::Overrides) -> Result<(), String> {
        crate::policy::variant::set_fields(&mut self.config, overrides)
    }

    fn variant_keys(&self) -> crate::policy::variant::Overrides {
        crate::policy::variant::fields(&self.config)
    }

    fn info(&self) -> PolicyInfo {
        let (name, summary) = match self.config.truncation {
            Mode::RetentionRatio => (
                NAME_RETENTION,
                "over the input token limit, drop the oldest items until retention_ratio of the limit is used: one larger cut, a stable prefix",
            ),
            Mode::Auto => (
                NAME_AUTO,
                "over the input token limit, drop just enough of the oldest items to fit (the start moves every turn)",
            ),
            Mode::Disabled => (
                "openai-realtime-disabled",
                "never truncate; over the input token limit the request is an error",
            ),
        };
        PolicyInfo {
            name: name.into(),
            family: "OpenAI API",
            summary: summary.into(),
            source: Source {
                upstream: "https://developers.openai.com/api/docs/guides/realtime-costs; openai/openai-cookbook@0dee719e".into(),
                files: &[
                    "API reference RealtimeTruncation, RetentionRatioTruncation, token_limits.post_instructions (openai/openai-python@5852fbb8 src/openai/types/realtime/realtime_truncation_retention_ratio.py)",
                    "examples/Prompt_Caching_201.ipynb (section 7)",
                ],
                license: "documentation (no code reproduced)",
                approximate: true,
            },
            constants: self.constants(),
            unit: Unit::Tokens,
            differences: DIFFERENCES.to_vec(),
        }
    }

    fn pointer_rules(&self) -> Vec<PointerRule> {
        // Truncated items leave no placeholder in the model's context.
        Vec::new()
    }

    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        let events = self.truncate(history, ctx.tokens)?;
        Ok(Prepared {
            request: history[self.start..].to_vec(),
            events,
        })
    }
}

/// Every deliberate difference from the documented behaviour, for `lab
/// policies` and GUIDE.md.
pub const DIFFERENCES: &[&str] = &[
    "server-side and closed: the cut rule is read from documentation only (approximate)",
    "an item is a lab message: the server's conversation splits an assistant turn into a message and function_call items and a tool turn into function_call_output items, but the lab cuts only between messages",
    "a function call and its output are dropped together (the documents do not say how the server treats a pair; the lab never leaves one half in the context)",
    "the newest message (with the call its results answer) is always kept, even when alone over the limit (the documents do not say what the server does then)",
    "instructions and tool definitions are not modelled: every request token counts as post-instruction, against the model's documented 28 224-token limit",
    "tokens are the run's counter over text, not the Realtime tokenizer over text and audio",
    "disabled (an error past the limit) is a switch, not a registered policy: a replay would stop at the first overflow",
];

#[cfg(test)]
mod tests;
