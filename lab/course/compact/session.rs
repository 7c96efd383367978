//! A scripted conversation driven through the pipeline, as the harness would.
//!
//! A [`Script`] is a list of [`Action`]s; it is the conversation part of a
//! scenario file. The driver runs `prepare` before every model call, checks
//! the request that would be sent, appends the scripted assistant message and
//! its tool results, and records every original result in a [`Ledger`] so the
//! checker can later say exactly what was lost.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::{Compactor, Entry, Step};
use crate::error::{LabError, LabResult};
use crate::message::{estimate_chars, Block, Message};

/// One scripted tool call and the result the tool will return.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Call {
    /// `tool_use` id; defaults to `toolu_<n>` in call order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Tool name.
    #[serde(default = "default_tool")]
    pub name: String,
    /// Result of this many chars (filled with `fill`), exclusive with `text`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chars: Option<usize>,
    /// Literal result text, exclusive with `chars`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Fill character for `chars` results.
    #[serde(default = "default_fill")]
    pub fill: char,
}

fn default_tool() -> String {
    "bash".to_string()
}

fn default_fill() -> char {
    'X'
}

impl Call {
    /// A call returning `chars` fill characters.
    pub fn sized(id: &str, chars: usize) -> Self {
        Call {
            id: Some(id.to_string()),
            name: default_tool(),
            chars: Some(chars),
            text: None,
            fill: default_fill(),
        }
    }

    fn result(&self) -> String {
        match (&self.text, self.chars) {
            (Some(t), _) => t.clone(),
            // An ASCII fill is one byte set `n` times (no repeated copies).
            (None, Some(n)) if self.fill.is_ascii() => {
                let bytes = vec![self.fill as u8; n];
                // SAFETY: one ASCII byte repeated is valid UTF-8 (checking
                // it cost more than writing it).
                unsafe { String::from_utf8_unchecked(bytes) }
            }
            // `str::repeat` copies whole runs; collecting chars pushes one at a time.
            (None, Some(n)) => self.fill.to_string().repeat(n),
            (None, None) => String::new(),
        }
    }
}

/// One model turn: optional text and zero or more tool calls.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// Assistant text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Tool calls; their results arrive as one batch.
    #[serde(default)]
    pub calls: Vec<Call>,
}

/// One scripted event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Action {
    /// A user prompt; it becomes the active request.
    User(String),
    /// A model call (pipeline first), then the assistant message and its results.
    Assistant(Turn),
    /// The model calls the `compact` tool: proactive summary after the batch.
    CompactTool,
    /// The next model call is answered prompt-too-long: reactive summary, one retry.
    PromptTooLong,
    /// Run these steps on their own, with no model call (step-level experiments).
    Steps(Vec<Step>),
    /// Append an assistant text message without a model call (marks results as seen).
    AppendAssistant(String),
    /// Run the pipeline once more and check the request that would be sent.
    Prepare,
}

/// A scripted conversation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Script(pub Vec<Action>);

/// Largest result a script may ask for (64 Mi chars, far above every profile's thresholds).
pub const MAX_RESULT_CHARS: usize = 1 << 26;
/// Largest total of result sizes in one script.
pub const MAX_SCRIPT_CHARS: usize = 1 << 28;

impl Script {
    /// Give every call an id and reject duplicates (a tool_use id is answered once).
    ///
    /// Sizes are bounded (see [`MAX_RESULT_CHARS`]) so that a typo such as
    /// `"chars": 1000000000000` is an error instead of an aborted allocation.
    pub fn normalised(&self) -> LabResult<Script> {
        self.normalised_cow().map(std::borrow::Cow::into_owned)
    }

    /// [`Script::normalised`], borrowing a script whose calls all have ids
    /// already (the probe's scripts): a sweep cell then skips the copy.
    pub(crate) fn normalised_cow(&self) -> LabResult<std::borrow::Cow<'_, Script>> {
        if self.calls().all(|c| c.id.is_some()) {
            self.validate()?;
            return Ok(std::borrow::Cow::Borrowed(self));
        }
        let mut out = self.clone();
        let mut n = 0usize;
        for a in &mut out.0 {
            if let Action::Assistant(turn) = a {
                for c in &mut turn.calls {
                    c.id.get_or_insert_with(|| format!("toolu_{n}"));
                    n += 1;
                }
            }
        }
        out.validate()?;
        Ok(std::borrow::Cow::Owned(out))
    }

    /// Every tool call of the script, in order.
    fn calls(&self) -> impl Iterator<Item = &Call> {
        self.0.iter().flat_map(|a| match a {
            Action::Assistant(turn) => &turn.calls[..],
            _ => &[],
        })
    }

    /// The checks of [`Script::normalised`] on a script whose calls have ids.
    fn validate(&self) -> LabResult<()> {
        // Hashed: a long script's ids share a prefix (`toolu_…`) that an
        // ordered map compares again on every step of every insert.
        let mut seen: HashMap<&str, usize, foldhash::fast::FixedState> =
            HashMap::with_capacity_and_hasher(self.calls().count(), Default::default());
        let mut total = 0usize;
        for (ai, a) in self.0.iter().enumerate() {
            let Action::Assistant(turn) = a else { continue };
            for c in &turn.calls {
                let id = c.id.as_deref().unwrap_or_default();
                // The schema says exactly one: a call with neither
                // would silently return an empty result.
                if c.chars.is_some() == c.text.is_some() {
                    let has = if c.chars.is_some() { "both" } else { "neither" };
                    return Err(LabError::usage(
                        format!("action {ai}: call {id} has {has} chars and text"),
                        "give a call exactly one of \"chars\": N or \"text\": \"...\"",
                    ));
                }
                let size = c.chars.unwrap_or(0);
                total = total.saturating_add(size);
                if size > MAX_RESULT_CHARS || total > MAX_SCRIPT_CHARS {
                    return Err(LabError::usage(
                        format!(
                            "action {ai}: call {id} asks for {size} chars \
                             (limits: {MAX_RESULT_CHARS} per result, {MAX_SCRIPT_CHARS} per script)"
                        ),
                        "use smaller \"chars\" values; thresholds scale, see `lab profiles`",
                    ));
                }
                if let Some(prev) = seen.insert(id, ai) {
                    return Err(LabError::usage(
                        format!("action {ai}: tool_use id {id} already used by action {prev}"),
                        "tool_use ids must be unique in a script",
                    ));
                }
            }
        }
        Ok(())
    }

    /// Length of the first tool id: the id the exact path length is built for.
    pub fn reference_id_chars(&self) -> usize {
        self.0
            .iter()
            .find_map(|a| match a {
                Action::Assistant(t) => t
                    .calls
                    .first()
                    .and_then(|c| c.id.as_ref())
                    .map(|i| i.chars().count()),
                _ => None,
            })
            .unwrap_or(7)
    }
}

/// Every original tool result, in arrival order.
///
/// Only a fingerprint of each original is kept (`Ledger::record`, defined
/// beside the checker that reads it): the checker only asks whether a text
/// equals it, and a copy of every result would make a replay's memory grow
/// with the whole transcript.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Ledger {
    /// `(tool_use_id, fingerprint of the original text)`.
    pub originals: Vec<(String, (u64, usize))>,
}

/// One request the harness sent (or would send) to the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Request {
    /// Messages in the request.
    pub messages: usize,
    /// Estimated chars (the course's size measure); 0 in a session run for
    /// its counters only ([`Session::counters_only`]), which never reads it.
    pub chars: usize,
    /// Pair-rule violations (empty = a valid request).
    pub violations: Vec<String>,
}

/// A conversation in progress.
#[derive(Debug)]
pub struct Session {
    /// The pipeline.
    pub compactor: Compactor,
    /// Current history.
    pub messages: Vec<Message>,
    /// Originals of every tool result.
    pub ledger: Ledger,
    /// Every request, in order.
    pub requests: Vec<Request>,
    active_request: String,
    prompt_too_long: bool,
    /// Whether requests record their size (see [`Session::counters_only`]).
    measure_requests: bool,
}

impl Session {
    /// A session with an empty history.
    pub fn new(compactor: Compactor) -> Self {
        Session {
            compactor,
            messages: Vec::new(),
            ledger: Ledger::default(),
            requests: Vec::new(),
            active_request: String::new(),
            prompt_too_long: false,
            measure_requests: true,
        }
    }

    /// A session whose requests are not sized (`chars` stays 0): the
    /// checker's counters never read a request's size, and sizing the whole
    /// history on every call was a fourteenth of a sweep cell. The pipeline's
    /// own size checks (micro's target, fit, summary) are not affected.
    pub fn counters_only(mut self) -> Self {
        self.measure_requests = false;
        self
    }

    /// Run every action of a (normalised) script.
    /// A failing summary call ends the run there, as the course's exception ends
    /// its session (unless the switch `survive_summary_failure` is on).
    pub fn run(&mut self, script: &Script) -> LabResult<()> {
        self.run_normalised(&script.normalised()?)
    }

    /// [`Session::run`] of a script that is already [`Script::normalised`]
    /// (the probe normalises once to size its root, and a sweep cell is
    /// small enough that a second pass showed in its cost).
    pub(crate) fn run_normalised(&mut self, script: &Script) -> LabResult<()> {
        // Sized for the whole script at once (a sweep cell's vectors
        // otherwise regrew a dozen times): an action adds at most two
        // messages and one request, a call one original and about one event.
        let (actions, calls) = (script.0.len(), script.calls().count());
        self.messages.reserve(2 * actions);
        self.requests.reserve(actions);
        self.ledger.originals.reserve(calls);
        self.compactor.events.reserve(calls);
        for action in &script.0 {
            if self.compactor.halted {
                break;
            }
            self.step(action)?;
        }
        Ok(())
    }

    fn prepare(&mut self) -> LabResult<()> {
        let msgs = std::mem::take(&mut self.messages);
        self.messages = self.compactor.prepare(msgs, &self.active_request)?;
        Ok(())
    }

    fn record_request(&mut self) {
        self.requests.push(Request {
            messages: self.messages.len(),
            chars: if self.measure_requests {
                estimate_chars(&self.messages)
            } else {
                0
            },
            violations: super::pairs::pair_violations(&self.messages),
        });
    }

    /// Pipeline, then the model call; returns false when the call failed for good
    /// or the session ended (a summary call failed inside the pipeline).
    fn model_call(&mut self) -> LabResult<bool> {
        self.prepare()?;
        if self.compactor.halted {
            return Ok(false);
        }
        self.record_request();
        if std::mem::take(&mut self.prompt_too_long) {
            // Course: MAX_REACTIVE_RETRIES = 1; reactive compact, then the loop
            // runs prepare again before the retried call.
            let msgs = std::mem::take(&mut self.messages);
            match self.compactor.reactive_compact(msgs, &self.active_request) {
                Ok(m) => self.messages = m,
                Err((m, _)) => {
                    self.messages = m;
                    self.compactor.halted = !self.compactor.config.switches.survive_summary_failure;
                    return Ok(false);
                }
            }
            self.prepare()?;
            if self.compactor.halted {
                return Ok(false);
            }
            self.record_request();
        }
        Ok(true)
    }

    fn append_turn(&mut self, turn: &Turn, compact_call: Option<&str>) {
        let n = turn.calls.len() + usize::from(compact_call.is_some());
        let mut blocks = Vec::with_capacity(n + 1);
        if let Some(t) = &turn.text {
            blocks.push(Block::Text { text: t.clone() });
        }
        let mut results = Vec::with_capacity(n);
        for c in &turn.calls {
            let id = c.id.clone().expect("normalised");
            blocks.push(Block::ToolUse {
                id: id.clone(),
                name: c.name.clone(),
                input: serde_json::json!({}).into(),
            });
            let out = c.result();
            self.ledger.record(&id, &out);
            results.push(Block::ToolResult {
                tool_use_id: id,
                content: out,
            });
        }
        if let Some(id) = compact_call {
            blocks.push(Block::ToolUse {
                id: id.to_string(),
                name: "compact".to_string(),
                input: serde_json::json!({}).into(),
            });
            results.push(Block::ToolResult {
                tool_use_id: id.to_string(),
                content: "Compaction requested after this tool batch.".to_string(),
            });
        }
        self.messages.push(Message::assistant(blocks));
        if !results.is_empty() {
            self.messages.push(Message::user_blocks(results));
        }
    }

    /// Apply one action.
    pub fn step(&mut self, action: &Action) -> LabResult<()> {
        match action {
            Action::User(text) => {
                self.active_request = text.clone();
                self.messages.push(Message::user_text(text.clone()));
            }
            Action::Assistant(turn) => {
                if self.model_call()? {
                    self.append_turn(turn, None);
                }
            }
            Action::CompactTool => {
                if self.model_call()? {
                    let id = format!("compact_{}", self.requests.len());
                    self.append_turn(&Turn::default(), Some(&id));
                    let msgs = std::mem::take(&mut self.messages);
                    self.messages = match self.compactor.compact_history(
                        msgs,
                        &self.active_request,
                        Entry::Tool,
                    ) {
                        Ok(m) => m,
                        Err((m, _)) => {
                            self.compactor.halted =
                                !self.compactor.config.switches.survive_summary_failure;
                            m
                        }
                    };
                }
            }
            Action::PromptTooLong => self.prompt_too_long = true,
            Action::Steps(steps) => {
                for s in steps {
                    let msgs = std::mem::take(&mut self.messages);
                    self.messages = self.compactor.run_step(*s, msgs, &self.active_request)?;
                }
            }
            Action::AppendAssistant(text) => self
                .messages
                .push(Message::assistant(vec![Block::Text { text: text.clone() }])),
            Action::Prepare => {
                self.prepare()?;
                if !self.compactor.halted {
                    self.record_request();
                }
            }
        }
        Ok(())
    }
}
