//! Aider's `ChatSummary`: when the finished exchanges (`done_messages`) pass
//! `max_tokens`, the older part is summarised into one user message starting
//! `I spoke to you previously about a number of things.\n`, recursing up to
//! depth 3 until summary and tail fit.
//!
//! Upstream: `Aider-AI/aider@5dc9490bb35f9729ef2c95d00a19ccd30c26339c`
//! (Apache-2.0; constants and strings only are reproduced): `aider/history.py`
//! (`ChatSummary`), `aider/prompts.py` (`summarize`, `summary_prefix`),
//! `aider/models.py` (`token_count`, `max_chat_history_tokens`) and
//! `aider/coders/base_coder.py` (`summarize_start`, `summarize_worker`).
//!
//! A rewriting design: the summary replaces the messages in the history.

use serde::{Deserialize, Serialize};

use crate::error::LabResult;
use crate::message::{Content, Message, Role};
use crate::policy::{
    ModelError, PointerRule, Policy, PolicyCtx, PolicyEvent, PolicyInfo, Prepared, Source,
    SummaryRequest, Unit,
};
use crate::tokens::TokenCounter;

/// `prompts.summarize`, byte for byte.
pub const SUMMARIZE: &str = include_str!("summarize_prompt.txt");
/// `prompts.summary_prefix`, byte for byte.
pub const SUMMARY_PREFIX: &str = "I spoke to you previously about a number of things.\n";

/// Switches of `ChatSummary`, under their upstream names.
///
/// `Default` is what a coder gives its summariser for a model with 200 000
/// input tokens: `max_tokens = min(max(max_input_tokens / 16, 1024), 8192)`
/// = 8192 (`ChatSummary`'s own constructor default is 1024).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ChatSummary {
    /// Tokens `done_messages` may hold before they are summarised.
    pub max_tokens: usize,
    /// The summarising model's `max_input_tokens` (`None`: upstream's 4096
    /// fallback); 512 are reserved, the head beyond is not summarised.
    pub max_input_tokens: Option<usize>,
}

impl Default for ChatSummary {
    fn default() -> Self {
        ChatSummary {
            max_tokens: 8192,
            max_input_tokens: Some(200_000),
        }
    }
}

/// Split point below which everything is summarised at once.
const MIN_SPLIT: usize = 4;
/// Deepest recursion before everything is summarised at once.
const MAX_DEPTH: usize = 3;

/// `Model.token_count(msg)`: tokens of `json.dumps(msg)`.
pub fn token_count(tokens: &dyn TokenCounter, msg: &Message) -> usize {
    tokens.count(&crate::pyjson::dumps(msg))
}

/// Can the head end here? Upstream: on an assistant message. The lab also
/// refuses an assistant message whose calls would be answered in the tail.
fn head_may_end_with(m: &Message) -> bool {
    m.role == Role::Assistant && !m.has_tool_use()
}

impl ChatSummary {
    /// `too_big`.
    pub fn too_big(&self, tokens: &dyn TokenCounter, messages: &[Message]) -> bool {
        messages
            .iter()
            .map(|m| token_count(tokens, m))
            .sum::<usize>()
            > self.max_tokens
    }

    /// `summarize`: [`Self::summarize_real`], then `Ok.` from the assistant
    /// if the result does not end with an assistant message.
    pub fn summarize(
        &self,
        messages: &[Message],
        ctx: &mut PolicyCtx<'_>,
    ) -> Result<Vec<Message>, ModelError> {
        let mut out = self.summarize_real(messages.to_vec(), 0, ctx)?;
        if out.last().is_some_and(|m| m.role != Role::Assistant) {
            out.push(Message {
                role: Role::Assistant,
                content: Content::Text("Ok.".into()),
            });
        }
        Ok(out)
    }

    /// `summarize_real`: keep a tail under half the budget, summarise the head.
    pub fn summarize_real(
        &self,
        messages: Vec<Message>,
        depth: usize,
        ctx: &mut PolicyCtx<'_>,
    ) -> Result<Vec<Message>, ModelError> {
        let sized: Vec<usize> = messages
            .iter()
            .map(|m| token_count(ctx.tokens, m))
            .collect();
        if sized.iter().sum::<usize>() <= self.max_tokens && depth == 0 {
            return Ok(messages);
        }
        if messages.len() <= MIN_SPLIT || depth > MAX_DEPTH {
            return self.summarize_all(&messages, ctx);
        }
        let split = self.split_index(&messages, &sized);
        if split <= MIN_SPLIT {
            return self.summarize_all(&messages, ctx);
        }
        let limit = self.max_input_tokens.unwrap_or(4096).saturating_sub(512);
        let mut total = 0;
        let keep: Vec<Message> = messages[..split]
            .iter()
            .zip(&sized)
            .take_while(|(_, t)| {
                total += **t;
                total <= limit
            })
            .map(|(m, _)| m.clone())
            .collect();
        let mut out = self.summarize_all(&keep, ctx)?;
        let summary_tokens: usize = out.iter().map(|m| token_count(ctx.tokens, m)).sum();
        let tail_tokens: usize = sized[split..].iter().sum();
        out.extend_from_slice(&messages[split..]);
        if summary_tokens + tail_tokens < self.max_tokens {
            return Ok(out);
        }
        self.summarize_real(out, depth + 1, ctx)
    }

    /// The newest messages under `max_tokens // 2`, moved back until the head
    /// ends with an assistant message.
    fn split_index(&self, messages: &[Message], sized: &[usize]) -> usize {
        let half = self.max_tokens / 2;
        let mut tail_tokens = 0;
        let mut split = messages.len();
        for i in (0..sized.len()).rev() {
            if tail_tokens + sized[i] < half {
                tail_tokens += sized[i];
                split = i;
            } else {
                break;
            }
        }
        while split > 1 && !head_may_end_with(&messages[split - 1]) {
            split -= 1;
        }
        split
    }

    /// `summarize_all`: one user message, the prefix then the model's summary.
    fn summarize_all(
        &self,
        messages: &[Message],
        ctx: &mut PolicyCtx<'_>,
    ) -> Result<Vec<Message>, ModelError> {
        let req = SummaryRequest {
            prompt: SUMMARIZE,
            messages,
            previous: None,
        };
        let summary = ctx.model.summarise(&req)?;
        Ok(vec![Message::user_text(format!(
            "{SUMMARY_PREFIX}{summary}"
        ))])
    }
}

/// Aider's chat history summariser as a policy.
#[derive(Debug, Clone, Default)]
pub struct Aider {
    /// The switches.
    pub config: ChatSummary,
}

/// `aider-chat-summary` with the default switches.
pub fn chat_summary() -> Box<dyn Policy> {
    Box::new(Aider::default())
}

/// Index where the current exchange starts: the last user message that is
/// not a tool result (aider's `cur_messages`); everything before is done.
fn current_start(history: &[Message]) -> usize {
    history
        .iter()
        .rposition(|m| m.role == Role::User && !m.is_tool_result())
        .unwrap_or(0)
}

impl Policy for Aider {
    fn configure(&mut self, overrides: &crate::policy::variant::Overrides) -> Result<(), String> {
        crate::policy::variant::set_fields(&mut self.config, overrides)
    }

    fn variant_keys(&self) -> crate::policy::variant::Overrides {
        crate::policy::variant::fields(&self.config)
    }

    fn info(&self) -> PolicyInfo {
        PolicyInfo {
            name: "aider-chat-summary".into(),
            family: "Aider",
            summary: "summarise the older finished exchanges into one user message once they pass max_tokens".into(),
            source: Source {
                upstream: "Aider-AI/aider@5dc9490bb35f9729ef2c95d00a19ccd30c26339c".into(),
                files: &[
                    "aider/history.py",
                    "aider/prompts.py",
                    "aider/models.py",
                    "aider/coders/base_coder.py",
                ],
                license: "Apache-2.0",
                approximate: false,
            },
            constants: serde_json::json!({
                "max_tokens": self.config.max_tokens,
                "max_input_tokens": self.config.max_input_tokens,
                "min_split": MIN_SPLIT,
                "max_depth": MAX_DEPTH,
                "summary_prefix": SUMMARY_PREFIX,
            }),
            unit: Unit::Tokens,
            differences: vec![
                "summarises before the call, synchronously (upstream summarises in a background thread after a reply and swaps the result in later)",
                "the head never ends with an assistant message that calls tools, so no tool result opens the tail (upstream has no tool calls)",
                "a summary is counted per message like the rest (upstream counts the summary list with litellm.token_counter)",
                "one summarising model (upstream tries the weak model, then the main model)",
            ],
        }
    }

    fn pointer_rules(&self) -> Vec<PointerRule> {
        // The summary names no place; the summarised messages are gone.
        Vec::new()
    }

    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        let mut events = Vec::new();
        let start = current_start(history);
        if self.config.too_big(ctx.tokens, &history[..start]) {
            match self.config.summarize(&history[..start], ctx) {
                Ok(done) => {
                    let kept = history[..start]
                        .iter()
                        .rev()
                        .zip(done.iter().rev())
                        .take_while(|(a, b)| a == b)
                        .count();
                    events.push(PolicyEvent::Summarised {
                        replaced: start - kept,
                        kept: kept + (history.len() - start),
                        archive: None,
                    });
                    history.splice(..start, done);
                }
                Err(e) => events.push(PolicyEvent::ModelFailed {
                    role: "summary",
                    outcome: format!("{e}; done messages kept whole (aider warns and goes on)"),
                }),
            }
        }
        Ok(Prepared {
            request: history.clone(),
            events,
        })
    }
}

#[cfg(test)]
mod tests;
