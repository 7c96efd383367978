//! The `ctxlab.policy/1` wire format: what ctxlab writes to an external
//! policy and what it must answer, one JSON object per line. The schemas
//! are generated from these types (`lab schema policy-request`,
//! `policy-answer`, `policy-hello`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::message::Message;
use crate::{PointerRule, PolicyEvent, Unit};

/// The protocol's name and version.
pub const PROTOCOL: &str = "ctxlab.policy/1";

/// The JSON Schema of a line ctxlab writes (`hello` or `prepare`).
pub fn request_schema() -> serde_json::Value {
    ctxlab_core::render::schema_of::<Request>()
}

/// The JSON Schema of the answer to `hello`.
pub fn hello_schema() -> serde_json::Value {
    ctxlab_core::render::input_schema_of::<Hello>()
}

/// The JSON Schema of the answer to a `prepare`.
pub fn answer_schema() -> serde_json::Value {
    ctxlab_core::render::input_schema_of::<Answer>()
}

/// A line ctxlab writes: first a `hello`, then a `prepare` before each
/// model call.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Request {
    /// Sent once, before any call.
    Hello {
        /// Always [`PROTOCOL`].
        protocol: String,
        /// The token counter whose counts `prepare` carries (`approx`, `claude`, …).
        tokens: String,
    },
    /// Sent before each model call.
    Prepare {
        /// Always [`PROTOCOL`].
        protocol: String,
        /// 1-based, increasing; the answer repeats it.
        id: u64,
        /// 0-based index of the model call about to be made.
        call: usize,
        /// The policy's directory in the run's storage. Placeholders name
        /// files below it; the files themselves are written through
        /// `writes` in an answer, never by the process.
        root: String,
        /// The policy's history is the first `keep` messages of the history
        /// it held after its last answer (its rewrite, or what it was sent),
        /// then `append`. Always 0 in `full` mode, and after the lab changed
        /// messages the process holds (a resume of the product drops the
        /// `unlogged` blocks put back before it).
        keep: usize,
        /// Messages after the first `keep` (the whole history in `full` mode).
        append: Vec<Message>,
        /// Token counts of the run's counter (an estimate, named in `hello`).
        tokens: Counts,
        /// Tokens of the fixed prefix the request carries besides the
        /// history (system prompt, tools; an estimate), 0 when none.
        envelope: usize,
        /// Milliseconds since the session started, when the log recorded times.
        now_ms: Option<u64>,
    },
}

/// Token counts sent with a `prepare`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Counts {
    /// Tokens of each message of `append`, in order.
    pub append: Vec<usize>,
    /// Tokens of the whole history (kept and appended).
    pub history: usize,
}

/// How much history each `prepare` carries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HistoryMode {
    /// Only the messages since the last answer.
    #[default]
    Delta,
    /// The whole history every time.
    Full,
}

/// The answer to `hello`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Hello {
    /// Must be [`PROTOCOL`].
    pub protocol: String,
    /// One line: what the design does (shown in listings).
    #[serde(default)]
    pub summary: Option<String>,
    /// Its constants, for the record (any JSON).
    #[serde(default)]
    pub constants: serde_json::Value,
    /// The unit it budgets in (default `tokens`).
    #[serde(default)]
    pub unit: Option<Unit>,
    /// How its placeholders name where an original went (none: they name no place).
    #[serde(default)]
    pub pointer_rules: Vec<Rule>,
    /// `delta` (default) or `full`.
    #[serde(default)]
    pub history: HistoryMode,
}

/// A [`PointerRule`] on the wire.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "rule", rename_all = "snake_case", deny_unknown_fields)]
pub enum Rule {
    /// A line that starts with `prefix`; the rest of the line is the path.
    LinePrefix {
        /// Text before the path.
        prefix: String,
    },
    /// A whole text `open<path>close`.
    Wrapped {
        /// Text before the path.
        open: String,
        /// Text after the path.
        close: String,
    },
    /// Anywhere in a line: `open<path>close`.
    Inline {
        /// Text before the path.
        open: String,
        /// Text after the path.
        close: String,
    },
    /// The rest of a line after `open`.
    After {
        /// Text before the path.
        open: String,
    },
}

impl Rule {
    /// The engine's rule, owning its strings.
    pub fn to_rule(&self) -> PointerRule {
        match self {
            Rule::LinePrefix { prefix } => PointerRule::LinePrefix {
                prefix: prefix.clone().into(),
            },
            Rule::Wrapped { open, close } => PointerRule::Wrapped {
                open: open.clone().into(),
                close: close.clone().into(),
            },
            Rule::Inline { open, close } => PointerRule::Inline {
                open: open.clone().into(),
                close: close.clone().into(),
            },
            Rule::After { open } => PointerRule::After {
                open: open.clone().into(),
            },
        }
    }
}

/// The answer to a `prepare`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    /// The `prepare`'s id.
    pub id: u64,
    /// The policy's new history, when it rewrote it (a summarising design);
    /// absent: the history stays as sent.
    #[serde(default)]
    pub history: Option<Vec<Message>>,
    /// The request to send; absent: the (new) history itself.
    #[serde(default)]
    pub request: Option<Vec<Message>>,
    /// What it did, in order (the engine's event shapes).
    #[serde(default)]
    pub events: Vec<Event>,
    /// Files to write below `root`, before the request is judged.
    #[serde(default)]
    pub writes: Vec<Write>,
}

/// A file an answer writes.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Write {
    /// Relative to `root`: no `..`, no leading `/`.
    pub path: String,
    /// The file's text.
    pub content: String,
}

/// A [`PolicyEvent`] on the wire (same tags and fields).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "event", rename_all = "snake_case", deny_unknown_fields)]
pub enum Event {
    /// A result's full text was written to storage.
    Persisted {
        /// Tool call id.
        id: String,
        /// File written.
        path: String,
        /// Chars saved.
        chars: usize,
    },
    /// A result's (`result`) or a call's input's (`input`) content was replaced.
    Cleared {
        /// Tool call id.
        id: String,
        /// `result` or `input`.
        part: String,
        /// The placeholder put in its place.
        placeholder: String,
    },
    /// A result was shortened in place.
    Truncated {
        /// Tool call id.
        id: String,
        /// Chars before.
        from_chars: usize,
        /// Chars after.
        to_chars: usize,
        /// Where the full text went, if anywhere.
        #[serde(default)]
        saved_to: Option<String>,
    },
    /// Messages were replaced by a summary.
    Summarised {
        /// Messages replaced.
        replaced: usize,
        /// Messages kept verbatim.
        kept: usize,
        /// Where the replaced messages were archived, if anywhere.
        #[serde(default)]
        archive: Option<String>,
    },
    /// Messages were dropped without a summary.
    Dropped {
        /// Messages removed.
        messages: usize,
        /// Why.
        why: String,
    },
    /// The history was repaired for the provider.
    Repaired {
        /// Tool call id.
        id: String,
        /// What was done.
        what: String,
    },
}

impl Event {
    /// The engine's event; `Err` names a `part` that is neither `result` nor `input`.
    pub fn to_event(self) -> Result<PolicyEvent, String> {
        Ok(match self {
            Event::Persisted { id, path, chars } => PolicyEvent::Persisted { id, path, chars },
            Event::Cleared {
                id,
                part,
                placeholder,
            } => PolicyEvent::Cleared {
                id,
                part: match part.as_str() {
                    "result" => "result",
                    "input" => "input",
                    other => return Err(format!("a `cleared` event's part is `{other}`")),
                },
                placeholder,
            },
            Event::Truncated {
                id,
                from_chars,
                to_chars,
                saved_to,
            } => PolicyEvent::Truncated {
                id,
                from_chars,
                to_chars,
                saved_to,
            },
            Event::Summarised {
                replaced,
                kept,
                archive,
            } => PolicyEvent::Summarised {
                replaced,
                kept,
                archive,
            },
            Event::Dropped { messages, why } => PolicyEvent::Dropped { messages, why },
            Event::Repaired { id, what } => PolicyEvent::Repaired { id, what },
        })
    }
}
