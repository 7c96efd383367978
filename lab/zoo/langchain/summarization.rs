//! `SummarizationMiddleware`: once the messages reach the trigger, everything
//! before a pair-safe cutoff becomes one human message
//! `Here is a summary of the conversation to date:\n\n{summary}`.

use serde::{Deserialize, Serialize};

use super::{from_lc, to_lc, Lc};
use crate::error::LabResult;
use crate::message::Message;
use crate::policy::{
    PointerRule, Policy, PolicyCtx, PolicyEvent, PolicyInfo, Prepared, Source, SummaryRequest, Unit,
};

/// `DEFAULT_SUMMARY_PROMPT`, byte for byte.
pub const DEFAULT_SUMMARY_PROMPT: &str = include_str!("default_summary_prompt.txt");
/// `_DEFAULT_MESSAGES_TO_KEEP`.
pub const DEFAULT_MESSAGES_TO_KEEP: usize = 20;
/// The summary message's prefix, byte for byte (`_build_new_messages`).
pub const SUMMARY_PREFIX: &str = "Here is a summary of the conversation to date:\n\n";

/// Switches, under upstream's names. Upstream's constructor has no trigger
/// (`trigger=None`: never summarises); `Default` pins the documented example
/// `trigger=("tokens", 4000), keep=("messages", 20)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SummarizationMiddleware {
    /// `trigger=("tokens", n)`: summarise once the messages hold `n` tokens.
    pub trigger_tokens: usize,
    /// `keep=("messages", n)`: newest messages kept (before the pair-safe cut).
    pub keep_messages: usize,
    /// Fault: look for the calls of the results at the cut only this many
    /// messages back, and cut there anyway when none is found (the search
    /// bound of langchain before PR 34184; <https://github.com/langchain-ai/langchain/issues/34282>).
    pub fault_search_range: Option<usize>,
}

impl Default for SummarizationMiddleware {
    fn default() -> Self {
        SummarizationMiddleware {
            trigger_tokens: 4_000,
            keep_messages: DEFAULT_MESSAGES_TO_KEEP,
            fault_search_range: None,
        }
    }
}

impl SummarizationMiddleware {
    /// `_find_safe_cutoff`: where the kept messages start (0: summarise nothing).
    pub fn cutoff(&self, lc: &[Lc]) -> usize {
        if lc.len() <= self.keep_messages {
            return 0;
        }
        self.safe_cutoff_point(lc, lc.len() - self.keep_messages)
    }

    /// `_find_safe_cutoff_point`: a cut on tool messages moves back to the AI
    /// message that called any of them, else forward past them.
    fn safe_cutoff_point(&self, lc: &[Lc], cut: usize) -> usize {
        if !matches!(lc.get(cut), Some(Lc::Tool { .. })) {
            return cut;
        }
        let run: Vec<&str> = lc[cut..]
            .iter()
            .map_while(|m| match m {
                Lc::Tool { id, .. } => Some(id.as_str()),
                _ => None,
            })
            .collect();
        let lowest = self.fault_search_range.map_or(0, |r| cut.saturating_sub(r));
        for i in (lowest..cut).rev() {
            if let Lc::Ai(m) = &lc[i] {
                if m.tool_use_ids().iter().any(|id| run.contains(id)) {
                    return i;
                }
            }
        }
        if self.fault_search_range.is_some() {
            return cut;
        }
        cut + run.len()
    }
}

/// The middleware as a policy (it rewrites the history, as the agent state is).
#[derive(Debug, Clone, Default)]
pub struct Summarization {
    /// The switches.
    pub config: SummarizationMiddleware,
}

/// `langchain-summarization` with the documented example switches.
pub fn summarization() -> Box<dyn Policy> {
    Box::new(Summarization::default())
}

impl Policy for Summarization {
    fn configure(&mut self, overrides: &crate::policy::variant::Overrides) -> Result<(), String> {
        crate::policy::variant::set_fields(&mut self.config, overrides)
    }

    fn variant_keys(&self) -> crate::policy::variant::Overrides {
        crate::policy::variant::fields(&self.config)
    }

    fn info(&self) -> PolicyInfo {
        PolicyInfo {
            name: "langchain-summarization".into(),
            family: "LangChain",
            summary: "past trigger tokens, summarise all but the newest keep messages into one human message, never splitting an AI message from its tool messages".into(),
            source: Source {
                upstream: "pypi:langchain==1.5.0 (langchain-ai/langchain libs/langchain_v1), read 2026-12-03".into(),
                files: &["langchain/agents/middleware/summarization.py"],
                license: "MIT",
                approximate: false,
            },
            constants: serde_json::json!({
                "trigger": ["tokens", self.config.trigger_tokens],
                "keep": ["messages", self.config.keep_messages],
                "_DEFAULT_TRIM_TOKEN_LIMIT": 4000,
                "summary_prefix": SUMMARY_PREFIX,
            }),
            unit: Unit::Tokens,
            differences: vec![
                "tokens are counted by the run's counter (upstream: count_tokens_approximately) and usage reported by the model is not modelled",
                "trim_tokens_to_summarize is not applied: the summariser gets every message to summarise",
                "a failed summary call leaves the history whole (upstream retries, then raises and ends the run)",
                "only the ('tokens', n) trigger and ('messages', n) keep forms are modelled",
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
        if ctx.tokens.count_messages(history) >= self.config.trigger_tokens {
            let lc = to_lc(history);
            let cut = self.config.cutoff(&lc);
            if cut > 0 {
                let summarised = from_lc(&lc[..cut]);
                let req = SummaryRequest {
                    prompt: DEFAULT_SUMMARY_PROMPT,
                    messages: &summarised,
                    previous: None,
                };
                match ctx.model.summarise(&req) {
                    Ok(s) => {
                        let mut out =
                            vec![Message::user_text(format!("{SUMMARY_PREFIX}{}", s.trim()))];
                        out.extend(from_lc(&lc[cut..]));
                        events.push(PolicyEvent::Summarised {
                            replaced: cut,
                            kept: lc.len() - cut,
                            archive: None,
                        });
                        *history = out;
                    }
                    Err(e) => events.push(PolicyEvent::ModelFailed {
                        role: "summary",
                        outcome: format!("{e}; history left whole"),
                    }),
                }
            }
        }
        Ok(Prepared {
            request: history.clone(),
            events,
        })
    }
}
