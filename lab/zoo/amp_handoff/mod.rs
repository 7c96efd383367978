//! Amp's handoff: instead of compacting, Amp starts a new thread whose first
//! message is a drafted prompt (what matters for the goal, written by a
//! model) and a file list, the relevant files' contents attached.
//!
//! Sources: <https://ampcode.com/news/handoff> (read 2026-12-05 through the
//! stored-pages index: compaction removed and replaced by handoff, "a prompt
//! to start the new thread, along with a list of relevant files"), and the
//! Amp CLI as published on npm, `@sourcegraph/amp` 0.0.1769314944-g5070a1
//! `dist/main.js` (read 2026-12-05; the newest release is a native binary):
//! `createHandoffPrompt` (`If`), its model call (`js4`: the prompt
//! [`HANDOFF_PROMPT`], the goal, then "Use the create_handoff_context tool
//! …"; the tool `create_handoff_context` returns `relevantInformation` and
//! `relevantFiles`), the file rules ([`files`]), the initial message
//! ("Continuing work from thread …", the `@` mentions, "Other relevant
//! files: …", the information, the goal, joined by blank lines), how a
//! user message's attached files reach the model (`gS4`, `CZ`), and the
//! context-usage warning (`qz8`, `JP`, `Pm`).
//!
//! **Trigger** (the lab's; Amp's handoff is started by the user or by the
//! agent's `handoff` tool, never by a threshold): the first point at which
//! Amp's status line tells the user to hand off, "Optimize context. Use
//! thread:handoff or thread:new to continue in a new thread.", reached when
//! the input tokens are `recommendation` (0.8) of the model's input limit
//! (window − max output) for limits under 400,000 (`qz8`); Amp's default
//! model of that release, Claude Opus 4.5, has a 200,000 window and 32,000
//! output tokens, so 134,400 tokens. The lab hands off there at once, with
//! the latest user prompt as the goal.
//!
//! The request after a handoff is not a continuation of the history: the
//! history is replaced by the new thread's first message, and the recorded
//! replies that follow are appended to it. The checker, retention and cost
//! measure it as every rewriting design: what the new thread does not hold
//! is lost (the old thread stays on Amp's server, reachable with
//! `read_thread`; the lab does not model that store, as `hermes-lean` does
//! not model Hermes' session search), the attached files count where they
//! hold a fact, and the new prefix is written to the cache afresh.

pub mod files;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

use crate::error::LabResult;
use crate::message::{Block, Message, Role};
use crate::policy::{
    PointerRule, Policy, PolicyCtx, PolicyEvent, PolicyInfo, Prepared, Source, SummaryRequest, Unit,
};

/// The policy name in `lab policies`.
pub const NAME: &str = "amp-handoff";

/// `Ms4` as Amp sends it (dedented by the `dedent` tag, trimmed).
pub const HANDOFF_PROMPT: &str = r#"Extract relevant context from the conversation above for continuing this work. Write from my perspective (first person: "I did...", "I told you...").

Consider what would be useful to know based on my request below. Questions that might be relevant:
- What did I just do or implement?
- What instructions did I already give you which are still relevant (e.g. follow patterns in the codebase)?
   - What files did I already tell you that's important or that I am working on (and should continue working on)?
- Did I provide a plan or spec that should be included?
- What did I already tell you that's important (certain libraries, patterns, constraints, preferences)?
- What important technical details did I discover (APIs, methods, patterns)?
- What caveats, limitations, or open questions did I find?

Extract what matters for the specific request below. Don't answer questions that aren't relevant. Pick an appropriate length based on the complexity of the request.

Focus on capabilities and behavior, not file-by-file changes. Avoid excessive implementation details (variable names, storage keys, constants) unless critical.

Format: Plain text with bullets. No markdown headers, no bold/italic, no code fences. Use workspace-relative paths for files.

My request:"#;

/// What follows the goal in the handoff's model call.
pub const USE_TOOL: &str =
    "Use the create_handoff_context tool to extract relevant information and files.";

/// The lab's name of the thread a handoff leaves (Amp's are `T-` and a UUID).
pub const THREAD_PREFIX: &str = "T-ctxlab-";

/// The model call's prompt for `goal` (`js4`).
pub fn model_prompt(goal: &str) -> String {
    format!("{HANDOFF_PROMPT}\n\n{goal}\n\n{USE_TOOL}")
}

/// The new thread's first message text (the end of `If`).
pub fn initial_text(thread: &str, chosen: &files::Chosen, information: &str, goal: &str) -> String {
    let mut parts = vec![format!(
        "Continuing work from thread {thread}. When you lack specific information you can use read_thread to get it."
    )];
    let mentions: Vec<String> = chosen
        .mention
        .iter()
        .map(|t| format!("@{}", t.path))
        .collect();
    if !mentions.is_empty() {
        parts.push(mentions.join(" "));
    }
    if !chosen.named.is_empty() {
        parts.push(format!("Other relevant files: {}", chosen.named.join(", ")));
    }
    if !information.is_empty() {
        parts.push(information.to_string());
    }
    parts.push(goal.to_string());
    parts.join("\n\n")
}

/// `qz8`: the warning fractions for an input limit.
pub fn thresholds(max_input_tokens: usize) -> [f64; 3] {
    if max_input_tokens >= 900_000 {
        [0.2, 0.8, 0.9]
    } else if max_input_tokens >= 400_000 {
        [0.7, 0.8, 0.9]
    } else {
        [0.8, 0.9, 0.95]
    }
}

/// Constants under Amp's names; `Default` is the release read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[allow(non_snake_case)]
pub struct Switches {
    /// The model's window (Claude Opus 4.5: 200,000).
    pub contextWindow: usize,
    /// The model's output tokens (Claude Opus 4.5: 32,000).
    pub maxOutputTokens: usize,
    /// Which warning the user hands off at: `recommendation`, `warning` or `danger`.
    pub threshold: String,
}

impl Default for Switches {
    fn default() -> Self {
        Switches {
            contextWindow: 200_000,
            maxOutputTokens: 32_000,
            threshold: "recommendation".into(),
        }
    }
}

impl Switches {
    /// `maxInputTokens`: the window less the output.
    pub fn max_input_tokens(&self) -> usize {
        self.contextWindow.saturating_sub(self.maxOutputTokens)
    }

    /// Tokens at which the lab hands off (`None` for an unknown level).
    pub fn handoff_at(&self) -> Option<usize> {
        let level = ["recommendation", "warning", "danger"]
            .iter()
            .position(|l| *l == self.threshold)?;
        let max = self.max_input_tokens();
        Some((thresholds(max)[level] * max as f64).ceil() as usize)
    }
}

/// The policy: switches, the goal (the latest user prompt that arrived) and
/// the threads handed off so far.
#[derive(Debug, Clone, Default)]
pub struct AmpHandoff {
    /// Constants.
    pub switches: Switches,
    goal: String,
    seen: usize,
    threads: usize,
}

/// A boxed policy with the release's defaults.
pub fn make() -> Box<dyn Policy> {
    Box::new(AmpHandoff::default())
}

/// A user message's own text (a prompt, not tool results), if it has any.
fn prompt_text(m: &Message) -> Option<String> {
    if m.role != Role::User {
        return None;
    }
    let text = m.text();
    (!text.trim().is_empty()).then_some(text)
}

impl AmpHandoff {
    /// The new thread's first message: the attached files, then the text.
    fn handoff(&mut self, history: &[Message], information: &str) -> Message {
        let chosen = files::choose(&self.goal, &files::touched(history));
        let thread = format!("{THREAD_PREFIX}{}", self.threads);
        let text = initial_text(&thread, &chosen, information, &self.goal);
        let mut blocks = Vec::new();
        if !chosen.mention.is_empty() {
            blocks.push(Block::Text {
                text: files::attached(&chosen.mention),
            });
        }
        blocks.push(Block::Text { text });
        Message::user_blocks(blocks)
    }
}

impl Policy for AmpHandoff {
    fn configure(&mut self, overrides: &crate::policy::variant::Overrides) -> Result<(), String> {
        let mut s = self.switches.clone();
        crate::policy::variant::set_fields(&mut s, overrides)?;
        if s.handoff_at().is_none() {
            return Err(format!(
                "`threshold` is `{}`: one of recommendation, warning, danger",
                s.threshold
            ));
        }
        self.switches = s;
        Ok(())
    }

    fn variant_keys(&self) -> crate::policy::variant::Overrides {
        crate::policy::variant::fields(&self.switches)
    }

    fn info(&self) -> PolicyInfo {
        PolicyInfo {
            name: NAME.into(),
            family: "Amp",
            summary: "handoff instead of compaction: at Amp's first context warning a new thread starts from a drafted prompt and up to 10 relevant files, contents attached within 25k tokens".into(),
            source: Source {
                upstream: "npm @sourcegraph/amp@0.0.1769314944-g5070a1 main.js; ampcode.com/news/handoff (both read 2026-12-05)".into(),
                files: &[
                    "main.js: createHandoffPrompt (If, js4, Ms4, Is4 create_handoff_context, Ds4, ha0, Bs4, Ns4, ws4, Us4)",
                    "main.js: user messages' attached files (gS4, CZ)",
                    "main.js: context warning (qz8, JP, Pm) and Claude Opus 4.5's window",
                    "ampcode.com/news/handoff: handoff replaces compaction",
                ],
                license: "proprietary (constants and strings only)",
                approximate: true,
            },
            constants: serde_json::json!({
                "switches": self.switches,
                "handoff_at": self.switches.handoff_at(),
                "thresholds (qz8)": thresholds(self.switches.max_input_tokens()),
                "Ds4 (files)": files::MAX_FILES,
                "ha0 (file tokens)": files::FILE_TOKEN_BUDGET,
                "Bs4 (bytes counted)": files::FILE_SIZE_CAP,
                "Ns4 (bytes per token)": files::BYTES_PER_TOKEN,
            }),
            unit: Unit::Tokens,
            differences: vec![
                "the trigger is the lab's: Amp hands off when the user (or the agent's handoff tool) asks; the lab does at the first context warning, at once, with the latest user prompt as the goal",
                "the create_handoff_context model is the lab's summariser (its text is the relevant information); the relevant files are the files the thread's calls touched, newest first, their contents the newest the thread shows; a file it never showed is left out",
                "the old thread (reachable with read_thread) is not modelled: what the new thread does not hold counts as lost",
                "attached files are not cut to Amp's line limits; guidance files (AGENTS.md) are not attached",
                "the thread id is the lab's (`T-ctxlab-N`)",
            ],
        }
    }

    fn pointer_rules(&self) -> Vec<PointerRule> {
        // The thread id names Amp's server store, which the lab does not model.
        Vec::new()
    }

    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        if let Some(goal) = history[self.seen.min(history.len())..]
            .iter()
            .rev()
            .find_map(prompt_text)
        {
            self.goal = goal;
        }
        let mut events = Vec::new();
        let at = self.switches.handoff_at().unwrap_or(usize::MAX);
        if ctx.envelope + ctx.tokens.count_messages(history) >= at {
            let prompt = model_prompt(&self.goal);
            let req = SummaryRequest {
                prompt: &prompt,
                messages: history,
                previous: None,
            };
            match ctx.model.summarise(&req) {
                Ok(information) => {
                    let first = self.handoff(history, &information);
                    self.threads += 1;
                    events.push(PolicyEvent::Summarised {
                        replaced: history.len(),
                        kept: 0,
                        archive: None,
                    });
                    *history = vec![first];
                }
                Err(e) => events.push(PolicyEvent::ModelFailed {
                    role: "summary",
                    outcome: format!("handoff failed, the thread goes on: {e}"),
                }),
            }
        }
        self.seen = history.len();
        Ok(Prepared {
            request: history.clone(),
            events,
        })
    }
}
