//! Inspect AI's compaction strategies (`CompactionEdit`, `CompactionTrim`,
//! `CompactionSummary`) run by its compaction handler, as a react agent
//! runs them: before every model call the handler adds the messages that
//! arrived to the input it keeps, counts it, and past the threshold lets the
//! strategy compact it (up to three more passes while it stays above).
//!
//! Upstream: the `inspect_ai` 0.3.285 sdist on PyPI
//! (UKGovernmentBEIS/inspect_ai, `src/inspect_ai/model/_compaction/`
//! `_compaction.py`, `edit.py`, `trim.py`, `summary.py`, `memory.py`,
//! `model/_trim.py`, `model/_tokens.py`; read 2026-12-07; MIT, constants and
//! strings only are reproduced). The golden test runs that package itself
//! (`scripts/fixtures/inspect_golden.py`).
//!
//! Not ported: `CompactionNative` hands the history to the provider's own
//! compaction endpoint (Anthropic's is `anthropic-compact`, OpenAI's
//! `openai-server-compaction`) and raises `NotImplementedError` elsewhere;
//! `CompactionAuto` is Native where the provider has it and otherwise
//! exactly `CompactionSummary` with the same threshold and instructions
//! (its `memory="auto"` gives the summary `memory=True`, the default here),
//! so on a provider without native compaction it is `inspect-summary`.
//!
//! Inspect's message list has one `ChatMessageTool` per call; the lab's
//! history one user message carrying every result of a reply. The handler
//! works on Inspect's list ([`to_inspect`]) and the request is turned back
//! ([`from_inspect`]), so cut indices and `keep_tool_uses` counts are
//! upstream's. Messages are named as the golden script names them (`m3`,
//! `m3.0` for the first result of message 3, `m3.b` for the text beside
//! them); a copy upstream makes under a fresh `uuid()` gets a fresh name.
//! The handler is projecting: the history stays whole and only the input
//! the handler keeps is compacted.

pub mod edit;
pub mod summary;
pub mod trim;

use std::collections::HashSet;

use serde_json::Value;

use crate::error::{LabError, LabResult};
use crate::message::{Block, Content, Message, Role, ToolInput};
use crate::policy::{PolicyCtx, PolicyEvent, Prepared};
use crate::tokens::TokenCounter;

pub use edit::{edit, CompactionEdit};
pub use summary::{summary, CompactionSummary};
pub use trim::{trim, CompactionTrim};

/// `DEFAULT_CONTEXT_WINDOW` (`_compaction.py`): the window of a model Inspect
/// has no information for (and of `mockllm/`).
pub const DEFAULT_CONTEXT_WINDOW: usize = 128_000;
/// `MAX_ITERATIONS` of `_perform_compaction`: passes after the first.
pub const MAX_ITERATIONS: usize = 3;
/// `_count_image_tokens` for a `high`/`auto` image.
pub const IMAGE_TOKENS: usize = 765;
/// `MEMORY_TOOL` (`memory.py`).
pub const MEMORY_TOOL: &str = "memory";
/// `MEMORY_CONTENT_ARGS` (`memory.py`).
pub const MEMORY_CONTENT_ARGS: [&str; 3] = ["file_text", "insert_text", "new_str"];
/// What `clear_memory_content` puts in place of a memory call's content.
pub const MEMORY_CONTENT_CLEARED: &str = "(content saved to memory)";

/// Where the three ports come from.
pub const SOURCE: crate::policy::Source = crate::policy::Source {
    upstream: std::borrow::Cow::Borrowed(
        "pypi:inspect_ai==0.3.285 (UKGovernmentBEIS/inspect_ai), read 2026-12-07",
    ),
    files: &[
        "src/inspect_ai/model/_compaction/_compaction.py",
        "src/inspect_ai/model/_compaction/edit.py",
        "src/inspect_ai/model/_compaction/trim.py",
        "src/inspect_ai/model/_compaction/summary.py",
        "src/inspect_ai/model/_compaction/memory.py",
        "src/inspect_ai/model/_trim.py",
        "src/inspect_ai/model/_tokens.py",
    ],
    license: "MIT",
    approximate: false,
};

/// The deliberate differences the three ports share.
pub fn differences() -> Vec<&'static str> {
    vec![
        "tokens are counted by the run's counter on upstream's text (every text part and each call's function and json.dumps(arguments), joined by newlines, plus 10 %); upstream counts with tiktoken o200k_base (the golden test uses the lab's o200k counter)",
        "the usage baseline (`record_output`) is not modelled: every call counts the whole input, as upstream before its first reply",
        "tool definitions count as the replay's envelope (at least 1, what upstream counts for no tools); the system prompt is not a message in the lab",
        "the prefix is the history before the first model call and no message has `source=\"input\"`: the input partition is the conversation up to its first user message",
        "a fractional threshold is taken of `context_window` (default 128,000, upstream's window for a model it has no information on); upstream reads the model's window from its model database (200,000 for Claude Sonnet 4.5, so 180,000 at 0.9)",
        "a threshold of exactly 1 is a fraction (the whole window), as a float is upstream; upstream's int 1 is one token",
        "where upstream raises (compaction insufficient after three more passes, a failed summary call) the policy's run ends there",
    ]
}

/// Role of one Inspect message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImRole {
    /// `ChatMessageUser`.
    User,
    /// `ChatMessageAssistant`.
    Assistant,
    /// `ChatMessageTool`.
    Tool,
}

/// `content`: a string or a list of parts (text, reasoning, images; the
/// lab's [`Block::Unlogged`] is carried as its size).
#[derive(Debug, Clone, PartialEq)]
pub enum ImContent {
    /// `content: str`.
    Str(String),
    /// `content: list[Content]` (no `ToolUse`/`ToolResult` blocks).
    List(Vec<Block>),
}

/// One `ToolCall`.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// `id`.
    pub id: String,
    /// `function`.
    pub function: String,
    /// `arguments`.
    pub arguments: ToolInput,
}

/// One Inspect `ChatMessage`.
#[derive(Debug, Clone, PartialEq)]
pub struct Im {
    /// `id`: `m<index>[.<k>|.b]` for a message of the history, `new<n>` for a copy.
    pub id: String,
    /// The message class.
    pub role: ImRole,
    /// `content`.
    pub content: ImContent,
    /// `tool_calls` of an assistant message (empty: `None`).
    pub tool_calls: Vec<Call>,
    /// `tool_call_id` of a tool message.
    pub tool_call_id: Option<String>,
    /// `"summary" in metadata`.
    pub summary: bool,
    /// A user message made of the blocks beside results in one lab message
    /// (it goes back into that message).
    pub beside: bool,
    /// The lab message this one is, while it is unchanged (so that the
    /// request holds it byte for byte).
    pub original: Option<Message>,
}

impl Im {
    fn user(id: String, content: ImContent) -> Im {
        Im {
            id,
            role: ImRole::User,
            content,
            tool_calls: Vec::new(),
            tool_call_id: None,
            summary: false,
            beside: false,
            original: None,
        }
    }
}

/// The Inspect messages of lab message `index` (`m<index>`; results
/// `m<index>.<k>` in block order, then the blocks beside them as `m<index>.b`).
pub fn to_inspect(index: usize, m: &Message) -> Vec<Im> {
    let id = format!("m{index}");
    match (m.role, &m.content) {
        (Role::Assistant, content) => {
            let (content, tool_calls) = match content {
                Content::Text(t) => (ImContent::Str(t.clone()), Vec::new()),
                Content::Blocks(blocks) => {
                    let mut parts = Vec::new();
                    let mut calls = Vec::new();
                    for b in blocks {
                        match b {
                            Block::ToolUse { id, name, input } => calls.push(Call {
                                id: id.clone(),
                                function: name.clone(),
                                arguments: input.clone(),
                            }),
                            other => parts.push(other.clone()),
                        }
                    }
                    (ImContent::List(parts), calls)
                }
            };
            vec![Im {
                id,
                role: ImRole::Assistant,
                content,
                tool_calls,
                tool_call_id: None,
                summary: false,
                beside: false,
                original: Some(m.clone()),
            }]
        }
        (Role::User, Content::Text(t)) => {
            let mut u = Im::user(id, ImContent::Str(t.clone()));
            u.original = Some(m.clone());
            vec![u]
        }
        (Role::User, Content::Blocks(blocks)) => {
            let mut out = Vec::new();
            let mut beside = Vec::new();
            for b in blocks {
                match b {
                    Block::ToolResult {
                        tool_use_id,
                        content,
                    } => {
                        let k = out.len();
                        out.push(Im {
                            id: format!("{id}.{k}"),
                            role: ImRole::Tool,
                            content: ImContent::Str(content.clone()),
                            tool_calls: Vec::new(),
                            tool_call_id: Some(tool_use_id.clone()),
                            summary: false,
                            beside: false,
                            original: None,
                        });
                    }
                    other => beside.push(other.clone()),
                }
            }
            if out.is_empty() {
                let mut u = Im::user(id, ImContent::List(beside));
                u.original = Some(m.clone());
                return vec![u];
            }
            if !beside.is_empty() {
                let mut u = Im::user(format!("{id}.b"), ImContent::List(beside.clone()));
                u.beside = true;
                u.original = Some(Message::user_blocks(beside));
                out.push(u);
            }
            out
        }
    }
}

/// The lab request of an Inspect list: consecutive tool messages become one
/// user message of results, and the blocks split off it go back into it.
pub fn from_inspect(ims: &[Im]) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::new();
    let mut results: Vec<(String, String)> = Vec::new();
    for m in ims {
        if m.role == ImRole::Tool {
            let text = match &m.content {
                ImContent::Str(s) => s.clone(),
                ImContent::List(_) => m.text(),
            };
            results.push((m.tool_call_id.clone().unwrap_or_default(), text));
            continue;
        }
        if !results.is_empty() {
            let mut merged = Message::tool_results(std::mem::take(&mut results));
            if m.beside {
                if let Content::Blocks(blocks) = &mut merged.content {
                    blocks.extend(lab_message(m).blocks().iter().cloned());
                }
                out.push(merged);
                continue;
            }
            out.push(merged);
        }
        out.push(lab_message(m));
    }
    if !results.is_empty() {
        out.push(Message::tool_results(results));
    }
    out
}

/// One user or assistant Inspect message as a lab message: the original
/// while unchanged, else its content and then its calls (Inspect keeps them
/// apart, so a changed copy sends them after the content).
fn lab_message(m: &Im) -> Message {
    if let Some(o) = &m.original {
        return o.clone();
    }
    let role = if m.role == ImRole::Assistant {
        Role::Assistant
    } else {
        Role::User
    };
    let content = match (&m.content, m.tool_calls.is_empty()) {
        (ImContent::Str(s), true) => Content::Text(s.clone()),
        (content, _) => {
            let mut blocks = match content {
                ImContent::Str(s) if s.is_empty() => Vec::new(),
                ImContent::Str(s) => vec![Block::Text { text: s.clone() }],
                ImContent::List(parts) => parts.clone(),
            };
            blocks.extend(m.tool_calls.iter().map(|c| Block::ToolUse {
                id: c.id.clone(),
                name: c.function.clone(),
                input: c.arguments.clone(),
            }));
            Content::Blocks(blocks)
        }
    };
    Message { role, content }
}

impl Im {
    /// The text parts of the content, joined (what a tool result reads).
    pub fn text(&self) -> String {
        match &self.content {
            ImContent::Str(s) => s.clone(),
            ImContent::List(parts) => parts
                .iter()
                .filter_map(|b| match b {
                    Block::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

/// `json.dumps(value)` with Python's defaults: `", "`/`": "` and every
/// character past ASCII as `\uXXXX` (UTF-16 units), as `count_tokens`
/// writes a call's arguments.
pub fn dumps_ascii(value: &Value) -> String {
    let text = crate::pyjson::dumps(value);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        }
    }
    out
}

/// `count_text_tokens`: the counter's tokens plus 10 %, at least 1
/// (upstream: tiktoken `o200k_base`).
pub fn count_text(tokens: &dyn TokenCounter, text: &str) -> usize {
    let n = tokens.count(text);
    (((n as f64) * 1.1) as usize).max(1)
}

/// `count_tokens` (`model/_tokens.py`): every text part of the messages
/// (string content, text parts, reasoning summaries (none in the lab), each
/// call's function and `json.dumps(arguments)`) joined by newlines and
/// counted once, plus media; at least 1.
pub fn count(tokens: &dyn TokenCounter, ims: &[Im]) -> usize {
    let mut text = String::new();
    let mut any = false;
    let mut media = 0usize;
    let mut push = |s: &str, text: &mut String| {
        if any {
            text.push('\n');
        }
        any = true;
        text.push_str(s);
    };
    for m in ims {
        match &m.content {
            ImContent::Str(s) => push(s, &mut text),
            ImContent::List(parts) => {
                for p in parts {
                    match p {
                        Block::Text { text: t } => push(t, &mut text),
                        Block::Image { .. } => media += IMAGE_TOKENS,
                        Block::Unlogged { tokens: n, .. } => media += n,
                        Block::Thinking { .. }
                        | Block::ToolUse { .. }
                        | Block::ToolResult { .. } => {}
                    }
                }
            }
        }
        for c in &m.tool_calls {
            push(&c.function, &mut text);
            push(&dumps_ascii(&c.arguments), &mut text);
        }
    }
    let mut total = media;
    if any {
        total += count_text(tokens, &text);
    }
    total.max(1)
}

/// A strategy's `compact()`: the input to send and the message to append to
/// the history (a summary), or an error upstream raises.
pub struct Compacted {
    /// `input`.
    pub input: Vec<Im>,
    /// The supplemental message (the summary), if any.
    pub message: Option<Im>,
    /// What the pass did.
    pub events: Vec<PolicyEvent>,
}

/// One of Inspect's strategies.
pub trait Strategy: Send {
    /// `threshold`: tokens when above 1, else a fraction of the window.
    fn threshold(&self) -> f64;
    /// The window a fractional threshold is taken of.
    fn context_window(&self) -> usize;
    /// `compact(model, messages, tools)`.
    fn compact(
        &mut self,
        messages: &[Im],
        fresh: &mut Fresh,
        ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Compacted>;
}

/// A strategy as a zoo row: what tells the three rows apart. The rest (the
/// handler, variants, no pointers) is [`Compaction`]'s, once.
pub trait Row:
    Strategy + serde::Serialize + serde::de::DeserializeOwned + Default + Clone + std::fmt::Debug
{
    /// The row's name in the policy list.
    const NAME: &'static str;
    /// What the row does, in one line.
    const SUMMARY: &'static str;
    /// Its arguments and upstream's constants, as `lab policies` shows them.
    fn constants(&self) -> Value;
    /// Where the port departs from upstream (the handler's, plus the
    /// strategy's own).
    fn differences(&self) -> Vec<&'static str> {
        differences()
    }
}

/// A strategy under Inspect's compaction handler: one of the `inspect-*`
/// rows.
#[derive(Debug, Clone, Default)]
pub struct Compaction<S> {
    /// The strategy's arguments.
    pub config: S,
    handler: Handler,
}

impl<S> Compaction<S> {
    /// The policy with these arguments.
    pub fn new(config: S) -> Compaction<S> {
        Compaction {
            config,
            handler: Handler::default(),
        }
    }
}

impl<S: Row> crate::policy::Policy for Compaction<S> {
    fn configure(&mut self, overrides: &crate::policy::variant::Overrides) -> Result<(), String> {
        crate::policy::variant::set_fields(&mut self.config, overrides)
    }

    fn variant_keys(&self) -> crate::policy::variant::Overrides {
        crate::policy::variant::fields(&self.config)
    }

    fn info(&self) -> crate::policy::PolicyInfo {
        crate::policy::PolicyInfo {
            name: S::NAME.into(),
            family: "Inspect AI",
            summary: S::SUMMARY.into(),
            source: SOURCE,
            constants: self.config.constants(),
            unit: crate::policy::Unit::Tokens,
            differences: self.config.differences(),
        }
    }

    fn pointer_rules(&self) -> Vec<crate::policy::PointerRule> {
        // A placeholder, a cut or a summary: none names a place the removed
        // content can be read back from.
        Vec::new()
    }

    fn history_replaced(&mut self) {
        self.handler = Handler::default();
    }

    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        self.handler.prepare(&mut self.config, history, ctx)
    }
}

/// Names for the copies upstream makes under a new `uuid()`.
#[derive(Debug, Default, Clone)]
pub struct Fresh(usize);

impl Fresh {
    /// A name no message of the history has.
    pub fn id(&mut self) -> String {
        self.0 += 1;
        format!("new{}", self.0)
    }
}

/// `_resolve_threshold`: an absolute count above 1, else that fraction of the
/// window (`int(threshold * context_window)`).
pub fn resolve_threshold(threshold: f64, context_window: usize) -> usize {
    if threshold > 1.0 {
        threshold as usize
    } else {
        (threshold * context_window as f64) as usize
    }
}

/// The handler's state (`_CompactionState`) and the caches `compaction()`
/// resolves once.
#[derive(Debug, Default, Clone)]
pub struct Handler {
    /// `compacted_input`.
    compacted: Vec<Im>,
    /// Lab messages already added (every call processes all that arrived,
    /// so `processed_message_ids` is the history up to here).
    seen: usize,
    /// `prefix`: the messages the agent started with.
    prefix: Option<Vec<Im>>,
    fresh: Fresh,
}

impl Handler {
    /// `compact_input(messages)` on the lab history: the request and events.
    pub fn prepare<S: Strategy + ?Sized>(
        &mut self,
        strategy: &mut S,
        history: &[Message],
        ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        if self.seen > history.len() {
            // The history was replaced under the handler: start again.
            *self = Handler::default();
        }
        let unprocessed: Vec<Im> = history[self.seen..]
            .iter()
            .enumerate()
            .flat_map(|(k, m)| to_inspect(self.seen + k, m))
            .collect();
        self.seen = history.len();
        if self.prefix.is_none() {
            // react passes `state.messages` as it starts: the sample's input.
            self.prefix = Some(unprocessed.clone());
        }
        let threshold = resolve_threshold(strategy.threshold(), strategy.context_window());
        // `count_tool_tokens([])` counts one empty user message: 1.
        let tool_tokens = ctx.envelope.max(1);
        let mut target = std::mem::take(&mut self.compacted);
        target.extend(unprocessed);
        let total = tool_tokens + count(ctx.tokens, &target);
        if total <= threshold {
            self.compacted = target;
            return Ok(Prepared {
                request: from_inspect(&self.compacted),
                events: Vec::new(),
            });
        }
        let mut events = Vec::new();
        let mut outcome = strategy.compact(&target, &mut self.fresh, ctx)?;
        events.append(&mut outcome.events);
        let mut total_compacted = tool_tokens + count(ctx.tokens, &outcome.input);
        for _ in 0..MAX_ITERATIONS {
            if total_compacted <= threshold {
                break;
            }
            let prev = total_compacted;
            let input = std::mem::take(&mut outcome.input);
            outcome = strategy.compact(&input, &mut self.fresh, ctx)?;
            events.append(&mut outcome.events);
            total_compacted = tool_tokens + count(ctx.tokens, &outcome.input);
            if total_compacted >= prev {
                break;
            }
        }
        if total_compacted > threshold {
            return Err(LabError::usage(
                format!(
                    "Compaction insufficient: {} tokens still exceeds threshold of {} (inspect_ai raises here and the sample ends)",
                    group(total_compacted),
                    group(threshold)
                ),
                "Consider using a lower compaction threshold to accommodate tool definitions and prefix.",
            ));
        }
        // Prefix messages the strategy dropped go back in front (no system
        // messages in the lab, so the splice puts them first).
        let ids: HashSet<&str> = outcome.input.iter().map(|m| m.id.as_str()).collect();
        let mut input: Vec<Im> = self
            .prefix
            .iter()
            .flatten()
            .filter(|m| !ids.contains(m.id.as_str()))
            .cloned()
            .collect();
        input.append(&mut outcome.input);
        self.compacted = input;
        Ok(Prepared {
            request: from_inspect(&self.compacted),
            events,
        })
    }
}

/// `f"{n:,}"`.
fn group(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `clear_memory_content`: a `memory` call's content arguments replaced,
/// its other arguments kept (a changed message gets a new id).
pub fn clear_memory_content(messages: &mut [Im], fresh: &mut Fresh) {
    for m in messages.iter_mut() {
        if m.role != ImRole::Assistant || m.tool_calls.is_empty() {
            continue;
        }
        let mut modified = false;
        for c in &mut m.tool_calls {
            let Value::Object(args) = c.arguments.value() else {
                continue;
            };
            if c.function == MEMORY_TOOL
                && MEMORY_CONTENT_ARGS.iter().any(|k| args.contains_key(*k))
            {
                // Only a call that is cleared is un-shared from the history.
                let Value::Object(args) = c.arguments.make_mut() else {
                    continue;
                };
                for (k, v) in args.iter_mut() {
                    if MEMORY_CONTENT_ARGS.contains(&k.as_str()) {
                        *v = Value::String(MEMORY_CONTENT_CLEARED.into());
                    }
                }
                modified = true;
            }
        }
        if modified {
            m.id = fresh.id();
            m.original = None;
        }
    }
}

/// `has_memory_calls`.
pub fn has_memory_calls(messages: &[Im]) -> bool {
    messages.iter().any(|m| {
        m.role == ImRole::Assistant && m.tool_calls.iter().any(|c| c.function == MEMORY_TOOL)
    })
}

/// `partition_messages` (`model/_trim.py`) without system messages (the
/// lab has none) and without `source="input"` (the lab's messages have no
/// source): `input` is the conversation up to its first user message.
pub fn partition(messages: &[Im]) -> (Vec<Im>, Vec<Im>) {
    let mut conversation: std::collections::VecDeque<Im> = messages.iter().cloned().collect();
    let mut input = Vec::new();
    while conversation.front().is_some_and(|m| !m.summary) {
        let Some(m) = conversation.pop_front() else {
            break;
        };
        let user = m.role == ImRole::User;
        input.push(m);
        if user {
            break;
        }
    }
    (input, conversation.into())
}

#[cfg(test)]
mod tests;
