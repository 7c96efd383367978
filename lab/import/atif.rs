//! ATIF, the Agent Trajectory Interchange Format (Harbor RFC 0001), read
//! and written at ATIF-v1.8 as harbor 0.25.0's pydantic models define it
//! (`harbor/models/trajectories/`; its JSON Schema is checked in as
//! `lab/schemas/atif-v1.8.schema.json`).
//!
//! A trajectory is one JSON document, `{"schema_version": "ATIF-v1.x",
//! "agent", "steps": [...]}`; its steps are streamed one at a time
//! (`stream.rs`). A step is `system`, `user` or `agent`:
//!
//! * leading `system` steps are the session's system prompts; a later one is
//!   counted in `skipped` (the lab's model has no system role);
//! * a `user` step is a user message: `message` a string (plain text) or a
//!   list of content parts (text blocks; an image part an image block);
//! * an `agent` step is an assistant message: `reasoning_content` a
//!   thinking block, then the text, then a `tool_use` per `tool_calls`
//!   entry; its `observation` results are the next user message's
//!   `tool_result`s (`source_call_id` the call answered; a result without
//!   one is text).
//!
//! What ATIF's fields cannot say about a lab message (the order of its
//! blocks, several thinking blocks, an image known only by its media type,
//! content the log did not keep, a tool input that is no JSON object, a
//! user message holding both results and text) goes in the step's
//! `extra.ctxlab`, so an export re-imports to the same messages
//! ([`to_trajectory`]).
//!
//! Versions: any `ATIF-v1.*` is read (later minor versions only add
//! optional fields); another major version is refused at its
//! `schema_version` (exit 3), since its steps may mean something else.

use std::io::BufRead;

use serde_json::{json, Map, Value};

use super::stream::for_each_element;
use super::{finish_document, DiagnosticKind, ImportedSession, Origin, Sink};
use crate::error::{LabError, LabResult};
use crate::message::{Block, Content, Message, Role};

/// The version the lab writes.
pub const VERSION: &str = "ATIF-v1.8";
/// The prefix of every version the lab reads.
const MAJOR: &str = "ATIF-v1.";
/// The key under a step's (or the trajectory's) `extra` that holds what
/// ATIF's own fields cannot say about a lab message.
pub const EXTRA_KEY: &str = "ctxlab";

/// One block's kind, as a step's `extra.ctxlab.blocks` lists them.
fn kind(b: &Block) -> &'static str {
    match b {
        Block::Text { .. } => "text",
        Block::Thinking { .. } => "thinking",
        Block::ToolUse { .. } => "tool_use",
        Block::ToolResult { .. } => "tool_result",
        Block::Image { .. } => "image",
        Block::Unlogged { .. } => "unlogged",
    }
}

/// A whole-document object with an ATIF `schema_version`.
fn sniffs(h: &crate::format::Head<'_>) -> bool {
    h.is_object() && h.compact.contains("\"schema_version\":\"ATIF-v")
}

/// Where `"schema_version"`'s value starts in `head` (1-based line and
/// column) and the value, when the head holds it.
fn version_in(head: &[u8]) -> Option<(usize, usize, String)> {
    let key = b"\"schema_version\"";
    let at = head.windows(key.len()).position(|w| w == key)?;
    // After the steps began, the key may be some step's own (a tool's
    // arguments): the top level's is then checked once the stream ends.
    let steps = b"\"steps\"";
    if head[..at].windows(steps.len()).any(|w| w == steps) {
        return None;
    }
    let mut i = at + key.len();
    while head
        .get(i)
        .is_some_and(|b| b.is_ascii_whitespace() || *b == b':')
    {
        i += 1;
    }
    let rest = &head[i..];
    let value: String = serde_json::Deserializer::from_slice(rest)
        .into_iter::<String>()
        .next()?
        .ok()?;
    let before = &head[..i];
    let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    let column = 1 + String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count();
    Some((line, column, value))
}

/// The refusal of a version the lab does not read.
fn refuse(sink: &Sink<'_>, line: usize, column: usize, version: &str) -> LabError {
    sink.error(
        line,
        column,
        format!("ATIF schema_version `{version}` is not ATIF v1; the lab reads ATIF-v1.x (writes {VERSION})"),
        "convert the trajectory to ATIF v1 with the tool that wrote it, or import another of its logs",
    )
}

/// The steps being turned into messages.
#[derive(Default)]
struct Steps {
    main: Vec<Message>,
    origins: Vec<Origin>,
    /// The last agent step's observation results, not yet a message:
    /// (call id, content), at that step's position.
    pending: Vec<(Option<String>, String)>,
    pending_at: (usize, usize),
    /// A non-system step was read (later system steps are skipped).
    started: bool,
}

pub(crate) fn read<R: BufRead>(
    mut reader: R,
    session: &mut ImportedSession,
    sink: &mut Sink<'_>,
) -> LabResult<()> {
    let head = reader
        .fill_buf()
        .map_err(|e| LabError::io("reading transcript", sink.source, e))?;
    let found = version_in(head);
    if let Some((line, column, v)) = &found {
        if !v.starts_with(MAJOR) {
            return Err(refuse(sink, *line, *column, v));
        }
    }
    let source = sink.source.to_path_buf();
    let mut steps = Steps::default();
    let end = for_each_element(
        reader,
        &source,
        &["steps"],
        &["schema_version"],
        |v, line, column| {
            session.stats.records += 1;
            steps.step(&v, (line, column), session, sink)
        },
    )?;
    if found.is_none() {
        let version = end
            .captured
            .iter()
            .find(|(k, _)| k == "schema_version")
            .and_then(|(_, v)| v.as_str());
        match version {
            Some(v) if v.starts_with(MAJOR) => {}
            Some(v) => return Err(refuse(sink, 1, 1, v)),
            None => {
                return Err(sink.error(
                    1,
                    1,
                    "the trajectory has no `schema_version` (ATIF requires it)".into(),
                    "add \"schema_version\": \"ATIF-v1.8\" if the file is ATIF v1, or name its format with --format-in",
                ))
            }
        }
    }
    steps.flush(session);
    finish_document(session, steps.main, steps.origins, end.truncated, sink)
}

/// The step's `extra.ctxlab`, when it has one.
fn ours(step: &Value) -> Option<&Map<String, Value>> {
    step.get("extra")?.get(EXTRA_KEY)?.as_object()
}

/// A list under `extra.ctxlab`.
fn listed<'a>(extra: Option<&'a Map<String, Value>>, key: &str) -> Vec<&'a Value> {
    extra
        .and_then(|e| e.get(key))
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default()
}

/// A content part list or string as blocks: text parts as text, media
/// parts as images (by media type).
fn parts(v: &Value) -> Vec<Block> {
    match v {
        Value::String(s) => vec![Block::Text { text: s.clone() }],
        Value::Array(items) => items
            .iter()
            .map(|p| match p.get("type").and_then(Value::as_str) {
                Some("text") => Block::Text {
                    text: p
                        .get("text")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                },
                _ => Block::Image {
                    source: p
                        .get("source")
                        .and_then(|s| s.get("media_type"))
                        .and_then(Value::as_str)
                        .unwrap_or("unknown")
                        .to_string(),
                },
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// An observation result's content as the text of a `tool_result`.
fn result_text(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => parts(other)
            .into_iter()
            .filter_map(|b| match b {
                Block::Text { text } => Some(text),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

impl Steps {
    fn step(
        &mut self,
        v: &Value,
        pos: (usize, usize),
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        match v.get("source").and_then(Value::as_str) {
            Some("system") if ours(v).is_some_and(|e| e.contains_key("placeholder")) => Ok(()),
            Some("system") if !self.started => {
                session.system.push(result_text(v.get("message")));
                Ok(())
            }
            Some("system") => {
                session.skip("system step");
                Ok(())
            }
            Some("user") => {
                session.stats.message_records += 1;
                self.started = true;
                self.user(v, pos, session);
                Ok(())
            }
            Some("agent") => {
                session.stats.message_records += 1;
                self.started = true;
                self.flush(session);
                self.agent(v, pos, session);
                Ok(())
            }
            None if !v.is_object() => {
                session.skip("(not an object)");
                sink.report(
                    pos.0,
                    pos.1,
                    DiagnosticKind::InvalidRecord,
                    "step is no JSON object; skipped".into(),
                )
            }
            other => session.skip_role(other, pos, sink),
        }
    }

    fn push(&mut self, m: Message, pos: (usize, usize), session: &mut ImportedSession) {
        session.stats.tool_uses += m.tool_use_ids().len();
        session.stats.tool_results += m.tool_result_ids().len();
        self.main.push(m);
        self.origins.push(Origin::at(pos.0, pos.1, 0));
    }

    /// The pending observation results as one user message.
    fn flush(&mut self, session: &mut ImportedSession) {
        if self.pending.is_empty() {
            return;
        }
        let blocks = std::mem::take(&mut self.pending)
            .into_iter()
            .map(|(id, content)| match id {
                Some(tool_use_id) => Block::ToolResult {
                    tool_use_id,
                    content,
                },
                None => Block::Text { text: content },
            })
            .collect();
        let at = self.pending_at;
        self.push(
            Message {
                role: Role::User,
                content: Content::Blocks(blocks),
            },
            at,
            session,
        );
    }

    fn user(&mut self, v: &Value, pos: (usize, usize), session: &mut ImportedSession) {
        let extra = ours(v);
        let message = v.get("message").unwrap_or(&Value::Null);
        let layout = listed(extra, "blocks");
        if !layout.iter().any(|k| k.as_str() == Some("tool_result")) {
            self.flush(session);
        }
        if layout.is_empty() {
            let content = match message {
                Value::String(s) => Content::Text(s.clone()),
                other => Content::Blocks(parts(other)),
            };
            self.push(
                Message {
                    role: Role::User,
                    content,
                },
                pos,
                session,
            );
            return;
        }
        // A message that held results and more: the results come from the
        // observation before it, in the order the layout names.
        let mut pools = Pools::new(message, None, extra);
        pools.results = std::mem::take(&mut self.pending)
            .into_iter()
            .map(|(id, content)| Block::ToolResult {
                tool_use_id: id.unwrap_or_default(),
                content,
            })
            .collect::<Vec<_>>()
            .into_iter();
        let blocks = pools.lay_out(&layout);
        self.push(
            Message {
                role: Role::User,
                content: Content::Blocks(blocks),
            },
            pos,
            session,
        );
    }

    fn agent(&mut self, v: &Value, pos: (usize, usize), session: &mut ImportedSession) {
        let extra = ours(v);
        let message = v.get("message").unwrap_or(&Value::Null);
        let calls: Vec<Block> = v
            .get("tool_calls")
            .and_then(Value::as_array)
            .map(|calls| calls.iter().map(tool_use).collect())
            .unwrap_or_default();
        let reasoning = v.get("reasoning_content").and_then(Value::as_str);
        let layout = listed(extra, "blocks");
        let content = if layout.is_empty() {
            match (message, reasoning, calls.is_empty()) {
                (Value::String(s), None, true) => Content::Text(s.clone()),
                _ => {
                    let mut blocks: Vec<Block> = reasoning
                        .map(|t| Block::Thinking {
                            thinking: t.to_string(),
                        })
                        .into_iter()
                        .collect();
                    blocks.extend(match message {
                        Value::String(s) if s.is_empty() => Vec::new(),
                        other => parts(other),
                    });
                    blocks.extend(calls);
                    Content::Blocks(blocks)
                }
            }
        } else {
            let mut pools = Pools::new(message, reasoning, extra);
            pools.calls = calls.into_iter();
            Content::Blocks(pools.lay_out(&layout))
        };
        self.push(
            Message {
                role: Role::Assistant,
                content,
            },
            pos,
            session,
        );
        if let Some(results) = v
            .get("observation")
            .and_then(|o| o.get("results"))
            .and_then(Value::as_array)
        {
            self.pending = results
                .iter()
                .map(|r| {
                    (
                        r.get("source_call_id")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                        result_text(r.get("content")),
                    )
                })
                .collect();
            self.pending_at = pos;
        }
    }
}

/// A tool call as a `tool_use`: its arguments as the input, unless the
/// input was no JSON object (kept whole in the call's `extra.ctxlab_input`).
fn tool_use(call: &Value) -> Block {
    let text = |k: &str| {
        call.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let input = call
        .get("extra")
        .and_then(|e| e.get("ctxlab_input"))
        .or_else(|| call.get("arguments"))
        .cloned()
        .unwrap_or(Value::Object(Map::new()));
    Block::ToolUse {
        id: text("tool_call_id"),
        name: text("function_name"),
        input: input.into(),
    }
}

/// The blocks of one step by kind, taken in the order a layout names.
struct Pools {
    texts: std::vec::IntoIter<Block>,
    thinking: std::vec::IntoIter<Block>,
    calls: std::vec::IntoIter<Block>,
    results: std::vec::IntoIter<Block>,
    images: std::vec::IntoIter<Block>,
    unlogged: std::vec::IntoIter<Block>,
}

impl Pools {
    fn new(message: &Value, reasoning: Option<&str>, extra: Option<&Map<String, Value>>) -> Self {
        let listed_thinking = listed(extra, "thinking");
        let thinking: Vec<Block> = if listed_thinking.is_empty() {
            reasoning
                .map(|t| Block::Thinking {
                    thinking: t.to_string(),
                })
                .into_iter()
                .collect()
        } else {
            listed_thinking
                .into_iter()
                .map(|t| Block::Thinking {
                    thinking: t.as_str().unwrap_or_default().to_string(),
                })
                .collect()
        };
        let images = listed(extra, "images")
            .into_iter()
            .map(|s| Block::Image {
                source: s.as_str().unwrap_or_default().to_string(),
            })
            .collect::<Vec<_>>();
        let unlogged = listed(extra, "unlogged")
            .into_iter()
            .map(|u| Block::Unlogged {
                what: u
                    .get("what")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                tokens: u.get("tokens").and_then(Value::as_u64).unwrap_or(0) as usize,
            })
            .collect::<Vec<_>>();
        let texts: Vec<Block> = match message {
            Value::String(s) if s.is_empty() => Vec::new(),
            other => parts(other),
        };
        Pools {
            texts: texts.into_iter(),
            thinking: thinking.into_iter(),
            calls: Vec::new().into_iter(),
            results: Vec::new().into_iter(),
            images: images.into_iter(),
            unlogged: unlogged.into_iter(),
        }
    }

    /// The blocks in `layout`'s order (a kind whose pool is empty is left out).
    fn lay_out(&mut self, layout: &[&Value]) -> Vec<Block> {
        layout
            .iter()
            .filter_map(|k| match k.as_str()? {
                "text" => self.texts.next(),
                "thinking" => self.thinking.next(),
                "tool_use" => self.calls.next(),
                "tool_result" => self.results.next(),
                "image" => self.images.next(),
                "unlogged" => self.unlogged.next(),
                _ => None,
            })
            .collect()
    }
}

/// The order the reader puts an agent step's blocks in without a layout.
fn canonical_rank(kind: &str) -> u8 {
    match kind {
        "thinking" => 0,
        "text" => 1,
        _ => 2,
    }
}

/// Who a trajectory is about: the session (`session_id`), the format it
/// was read from, its system prompts, and the agent (`agent.name`: the
/// format, or the policy whose requests it holds).
pub struct Meta<'a> {
    /// The session's name.
    pub session_id: &'a str,
    /// The format it was imported from.
    pub source_format: &'a str,
    /// Its system prompts (leading system steps).
    pub system: &'a [String],
    /// `agent.name`.
    pub agent: &'a str,
}

/// A trajectory of `messages`: the system prompts as system steps, then a
/// step per message (a user message's tool results in the observation of
/// the agent step before it). `metrics` gives an agent step's metrics by
/// the index of its message in `messages`, when the caller knows them.
pub fn to_trajectory(
    meta: &Meta<'_>,
    messages: &[Message],
    metrics: &dyn Fn(usize) -> Option<Value>,
) -> Value {
    let mut steps: Vec<Value> = meta
        .system
        .iter()
        .map(|s| json!({"source": "system", "message": s}))
        .collect();
    for (i, m) in messages.iter().enumerate() {
        match m.role {
            Role::Assistant => steps.push(agent_step(m, metrics(i))),
            Role::User => user_steps(m, &mut steps),
        }
    }
    if steps.is_empty() {
        // ATIF requires a step; this one stands for none.
        steps.push(json!({"source": "system", "message": "",
            "extra": {EXTRA_KEY: {"placeholder": true}}}));
    }
    for (i, s) in steps.iter_mut().enumerate() {
        let mut numbered = Map::new();
        numbered.insert("step_id".into(), json!(i + 1));
        numbered.extend(std::mem::take(
            s.as_object_mut().expect("steps are objects"),
        ));
        *s = Value::Object(numbered);
    }
    json!({
        "schema_version": VERSION,
        "session_id": meta.session_id,
        "agent": {"name": meta.agent, "version": "unrecorded"},
        "steps": steps,
        "extra": {EXTRA_KEY: {"source_format": meta.source_format}},
    })
}

/// A content part list of a message's text blocks.
fn text_parts(blocks: &[Block]) -> Value {
    Value::Array(
        blocks
            .iter()
            .filter_map(|b| match b {
                Block::Text { text } => Some(json!({"type": "text", "text": text})),
                _ => None,
            })
            .collect(),
    )
}

/// What ATIF's fields leave out of `blocks`, as `extra.ctxlab` (with the
/// layout when `layout` is set).
fn extra_of(blocks: &[Block], layout: bool, thinking_listed: bool) -> Map<String, Value> {
    let mut extra = Map::new();
    if layout {
        extra.insert(
            "blocks".into(),
            Value::Array(blocks.iter().map(|b| json!(kind(b))).collect()),
        );
    }
    let mut put = |key: &str, items: Vec<Value>| {
        if !items.is_empty() {
            extra.insert(key.into(), Value::Array(items));
        }
    };
    put(
        "thinking",
        if thinking_listed {
            blocks
                .iter()
                .filter_map(|b| match b {
                    Block::Thinking { thinking } => Some(json!(thinking)),
                    _ => None,
                })
                .collect()
        } else {
            Vec::new()
        },
    );
    put(
        "images",
        blocks
            .iter()
            .filter_map(|b| match b {
                Block::Image { source } => Some(json!(source)),
                _ => None,
            })
            .collect(),
    );
    put(
        "unlogged",
        blocks
            .iter()
            .filter_map(|b| match b {
                Block::Unlogged { what, tokens } => Some(json!({"what": what, "tokens": tokens})),
                _ => None,
            })
            .collect(),
    );
    extra
}

fn agent_step(m: &Message, metrics: Option<Value>) -> Value {
    let mut step = Map::new();
    step.insert("source".into(), json!("agent"));
    let blocks = match &m.content {
        Content::Text(s) => {
            step.insert("message".into(), json!(s));
            &[][..]
        }
        Content::Blocks(blocks) => {
            step.insert("message".into(), text_parts(blocks));
            &blocks[..]
        }
    };
    let thinking: Vec<&str> = blocks
        .iter()
        .filter_map(|b| match b {
            Block::Thinking { thinking } => Some(thinking.as_str()),
            _ => None,
        })
        .collect();
    if !thinking.is_empty() {
        step.insert("reasoning_content".into(), json!(thinking.join("\n\n")));
    }
    let calls: Vec<Value> = blocks
        .iter()
        .filter_map(|b| match b {
            Block::ToolUse { id, name, input } => Some(match input.value() {
                Value::Object(_) => {
                    json!({"tool_call_id": id, "function_name": name, "arguments": input})
                }
                other => json!({"tool_call_id": id, "function_name": name, "arguments": {},
                    "extra": {"ctxlab_input": other}}),
            }),
            _ => None,
        })
        .collect();
    if !calls.is_empty() {
        step.insert("tool_calls".into(), Value::Array(calls));
    }
    if let Some(metrics) = metrics {
        step.insert("metrics".into(), metrics);
    }
    let kinds: Vec<&str> = blocks.iter().map(kind).collect();
    let canonical = kinds
        .windows(2)
        .all(|w| canonical_rank(w[0]) <= canonical_rank(w[1]))
        && kinds
            .iter()
            .all(|k| matches!(*k, "thinking" | "text" | "tool_use"))
        && thinking.len() <= 1;
    let extra = extra_of(blocks, !canonical, thinking.len() > 1);
    if !extra.is_empty() {
        step.insert("extra".into(), json!({EXTRA_KEY: extra}));
    }
    Value::Object(step)
}

/// A user message's steps: its tool results go to the observation of the
/// agent step before it; anything else (or a message with no result) is a
/// user step, laid out when it also held results.
fn user_steps(m: &Message, steps: &mut Vec<Value>) {
    let blocks = match &m.content {
        Content::Text(s) => {
            steps.push(json!({"source": "user", "message": s}));
            return;
        }
        Content::Blocks(blocks) => blocks,
    };
    let results: Vec<Value> = blocks
        .iter()
        .filter_map(|b| match b {
            Block::ToolResult {
                tool_use_id,
                content,
            } => Some(json!({"source_call_id": tool_use_id, "content": content})),
            _ => None,
        })
        .collect();
    let previous_is_agent = steps
        .last()
        .is_some_and(|s| s.get("source").and_then(Value::as_str) == Some("agent"));
    if !results.is_empty() && previous_is_agent {
        let last = steps.last_mut().expect("an agent step");
        last["observation"] = json!({ "results": results });
        if blocks.len() == results.len() {
            return;
        }
    }
    let texts_only = blocks.iter().all(|b| matches!(b, Block::Text { .. }));
    let mut step = json!({"source": "user", "message": text_parts(blocks)});
    let extra = extra_of(blocks, !texts_only, true);
    if !extra.is_empty() {
        step["extra"] = json!({ EXTRA_KEY: extra });
    }
    steps.push(step);
}

/// The `atif` format's registration (`format_list.rs`).
pub const FORMAT: crate::format::Format = crate::format::Format {
    name: "atif",
    sniff: Some((17, sniffs)),
    name_endings: &[],
    extensions: &[],
    product: None,
    compaction_by_index: false,
    read: |input| input.one(|r, s, k| read(r, s, k)),
};
