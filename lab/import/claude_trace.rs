//! claude-trace wire captures: one JSON line per HTTP request/response pair
//! a product sent through the logging proxy.
//!
//! Upstream: claude-trace by Mario Zechner (badlogic/lemmy,
//! `apps/claude-trace`, MIT), whose `RawPair` is
//! `{request: {timestamp, method, url, headers, body}, response: {timestamp,
//! status_code, headers, body?, body_raw?} | null, logged_at, note?}`; the
//! fork that recorded the shared captures (hanqunfeng/claude-trace) adds the
//! streamed response's SSE events as `response.events` (`{event, data,
//! timestamp}`) and `response.api_format`. Unlike a product's own log, a
//! capture holds the full request body: the system prompt, the tool
//! definitions and the reminders exactly as sent, and the usage the stream
//! reported. So it is what a product's envelope is checked against
//! (`ctxlab::replay::envelope_table`, in the binary crate).
//!
//! A model call is a pair whose request body has `messages` (Anthropic
//! Messages) or `input` (OpenAI Responses); other pairs (analytics POSTs)
//! are kept as read and skipped by [`Pair::envelope`]. A line that does not
//! parse (a body cut off while writing) and a stream whose events are out
//! of order are bad input: the error names the file, line and column and
//! says how to mend it (exit 3).

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::error::{LabError, LabResult};

/// The API shape of a pair's request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    /// Anthropic Messages: `system`, `tools`, `messages`.
    AnthropicMessages,
    /// OpenAI Responses: `instructions`, `tools`, `input`.
    OpenAiResponses,
    /// Anything else (analytics, telemetry): no model call.
    Other,
}

/// The product that sent a request, from its `user-agent`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Product {
    /// The lab's name for it (`claude-code`, `codex-cli`, `opencode`).
    pub name: String,
    /// Its release (`2.1.153`).
    pub release: String,
}

/// Which user-agent prefix names which product.
const AGENTS: [(&str, &str); 3] = [
    ("claude-cli/", "claude-code"),
    ("codex-tui/", "codex-cli"),
    ("opencode/", "opencode"),
];

impl Product {
    /// The product of a `user-agent` header (`claude-cli/2.1.153 (external,
    /// cli)`), or `None` for an agent the lab does not know.
    pub fn of_agent(agent: &str) -> Option<Product> {
        AGENTS.iter().find_map(|(prefix, name)| {
            let rest = agent.strip_prefix(prefix)?;
            let release: String = rest
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            let release = release.trim_end_matches('.').to_string();
            (!release.is_empty()).then(|| Product {
                name: name.to_string(),
                release,
            })
        })
    }
}

/// What the stream reported a call used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct StreamUsage {
    /// Uncached input tokens.
    pub input_tokens: u64,
    /// Tokens read from the cache.
    pub cache_read_tokens: u64,
    /// Tokens written to the cache.
    pub cache_write_tokens: u64,
    /// Tokens generated.
    pub output_tokens: u64,
}

/// The fixed part of a request: the system prompt (Anthropic `system`,
/// OpenAI `instructions`) and the tool definitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct EnvelopeSize {
    /// Characters (Unicode scalar values) of the system prompt's text: the
    /// text of every `system` block, or the `instructions` string.
    pub system_chars: usize,
    /// Tool definitions sent.
    pub tools: usize,
    /// Characters of the tool definitions as compact JSON.
    pub tool_chars: usize,
}

/// One request/response pair.
#[derive(Debug, Clone)]
pub struct Pair {
    /// 1-based line in the capture.
    pub line: usize,
    /// The request's URL.
    pub url: String,
    /// The sending product, when its user-agent names one the lab knows.
    pub product: Option<Product>,
    /// The request's shape.
    pub api: Api,
    /// The request body as sent.
    pub body: Value,
    /// The usage its streamed response reported, when it has one.
    pub usage: Option<StreamUsage>,
}

impl Pair {
    /// The envelope of a model call (`None` for other pairs).
    pub fn envelope(&self) -> Option<EnvelopeSize> {
        let tools = self.body.get("tools").and_then(Value::as_array);
        let (count, tool_chars) = tools.map_or((0, 0), |t| {
            let json = serde_json::to_string(t).expect("a parsed value serialises");
            (t.len(), json.chars().count())
        });
        let system_chars = match self.api {
            Api::AnthropicMessages => match self.body.get("system") {
                Some(Value::String(s)) => s.chars().count(),
                Some(Value::Array(blocks)) => blocks
                    .iter()
                    .filter_map(|b| b.get("text").and_then(Value::as_str))
                    .map(|t| t.chars().count())
                    .sum(),
                _ => 0,
            },
            Api::OpenAiResponses => self
                .body
                .get("instructions")
                .and_then(Value::as_str)
                .map_or(0, |s| s.chars().count()),
            Api::Other => return None,
        };
        Some(EnvelopeSize {
            system_chars,
            tools: count,
            tool_chars,
        })
    }
}

/// A capture read whole.
#[derive(Debug, Clone)]
pub struct Capture {
    /// The file.
    pub path: PathBuf,
    /// Its pairs in file order.
    pub pairs: Vec<Pair>,
}

impl Capture {
    /// The model calls of `product` (by the lab's name).
    pub fn calls_of<'a>(&'a self, product: &'a str) -> impl Iterator<Item = &'a Pair> + 'a {
        self.pairs.iter().filter(move |p| {
            p.api != Api::Other && p.product.as_ref().is_some_and(|q| q.name == product)
        })
    }
}

/// Whether `head` (a file's first bytes) looks like a claude-trace
/// capture: its first line opens a `request` object whose `method` and
/// `url` come before the body, as the proxy writes them (`logged_at` ends
/// the line, often past the bytes sniffed).
pub fn sniff(head: &[u8]) -> bool {
    let first = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let text = String::from_utf8_lossy(first);
    let t = text.trim_start();
    let Some(request) = t.strip_prefix("{\"request\":{") else {
        return false;
    };
    let before_body = request.split("\"body\":").next().unwrap_or_default();
    before_body.contains("\"method\":") && before_body.contains("\"url\":")
}

/// Reads the capture at `path`.
pub fn read(path: &Path) -> LabResult<Capture> {
    let text = crate::input::read_text(path, "a claude-trace capture")?;
    parse(path, &text)
}

/// Parses `text` (named `path` in errors).
pub fn parse(path: &Path, text: &str) -> LabResult<Capture> {
    let mut pairs = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(raw).map_err(|e| {
            bad(
                path,
                line,
                e.column().max(1),
                format!("not a complete request/response pair ({e}): the line was cut off while the proxy wrote it, or edited"),
                "delete the line (the pairs before and after it stay usable), or capture the session again",
            )
        })?;
        pairs.push(pair(path, line, &v)?);
    }
    Ok(Capture {
        path: path.to_path_buf(),
        pairs,
    })
}

fn bad(path: &Path, line: usize, column: usize, message: String, fix: &str) -> LabError {
    LabError::Input {
        file: path.to_path_buf(),
        line,
        column,
        message,
        fix: fix.to_string(),
    }
}

/// One line's pair.
fn pair(path: &Path, line: usize, v: &Value) -> LabResult<Pair> {
    let Some(request) = v.get("request").filter(|r| r.is_object()) else {
        return Err(bad(
            path,
            line,
            1,
            "a pair without a `request` object".into(),
            "each line of a claude-trace capture is {\"request\": …, \"response\": …, \"logged_at\": …}; delete the line",
        ));
    };
    let body = request.get("body").cloned().unwrap_or(Value::Null);
    let api = if body.get("messages").is_some() {
        Api::AnthropicMessages
    } else if body.get("input").is_some() && body.get("model").is_some() {
        Api::OpenAiResponses
    } else {
        Api::Other
    };
    let product = request
        .pointer("/headers/user-agent")
        .and_then(Value::as_str)
        .and_then(Product::of_agent);
    let response = v.get("response").filter(|r| r.is_object());
    let usage = match (api, response) {
        (Api::AnthropicMessages, Some(r)) => anthropic_usage(path, line, r)?,
        (Api::OpenAiResponses, Some(r)) => responses_usage(path, line, r)?,
        _ => None,
    };
    Ok(Pair {
        line,
        url: request
            .get("url")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        product,
        api,
        body,
        usage,
    })
}

/// The usage of an Anthropic stream (`response.events`): `message_start`
/// carries the prompt side, the last `message_delta` the output. The events
/// must come in the stream's order: `message_start` first, each content
/// block started before its deltas and stopped after them, `message_delta`
/// after every block, `message_stop` last.
fn anthropic_usage(path: &Path, line: usize, r: &Value) -> LabResult<Option<StreamUsage>> {
    let Some(events) = r.get("events").and_then(Value::as_array) else {
        // A response not streamed: its body's usage.
        return Ok(r.pointer("/body/usage").map(|u| usage_of(u, None)));
    };
    if events.is_empty() {
        return Ok(None);
    }
    let out_of_order = |k: usize, what: String| {
        bad(
            path,
            line,
            1,
            format!("streamed events out of order: event {k} ({what})"),
            "the events of a response are written in the order the stream sent them; re-capture the call, or delete the line",
        )
    };
    let kind = |e: &Value| {
        e.get("event")
            .or_else(|| e.pointer("/data/type"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let mut open: Vec<u64> = Vec::new();
    let (mut started, mut delta_seen, mut stopped) = (false, false, false);
    let mut usage = StreamUsage::default();
    for (k, e) in events.iter().enumerate() {
        let t = kind(e);
        let index = e.pointer("/data/index").and_then(Value::as_u64);
        if stopped {
            return Err(out_of_order(k, format!("`{t}` after `message_stop`")));
        }
        match t.as_str() {
            "message_start" => {
                if started {
                    return Err(out_of_order(k, "a second `message_start`".into()));
                }
                started = true;
                if let Some(u) = e.pointer("/data/message/usage") {
                    usage = usage_of(u, None);
                }
            }
            _ if !started => {
                return Err(out_of_order(k, format!("`{t}` before `message_start`")));
            }
            "content_block_start" => {
                let i = index.unwrap_or(0);
                if delta_seen || open.contains(&i) {
                    return Err(out_of_order(
                        k,
                        format!("block {i} started again or after `message_delta`"),
                    ));
                }
                open.push(i);
            }
            "content_block_delta" | "content_block_stop" => {
                let i = index.unwrap_or(0);
                if !open.contains(&i) {
                    return Err(out_of_order(
                        k,
                        format!("`{t}` of block {i}, which is not open"),
                    ));
                }
                if t == "content_block_stop" {
                    open.retain(|&o| o != i);
                }
            }
            "message_delta" => {
                if !open.is_empty() {
                    return Err(out_of_order(
                        k,
                        format!("`message_delta` while block {} is open", open[0]),
                    ));
                }
                delta_seen = true;
                if let Some(u) = e.pointer("/data/usage") {
                    usage = usage_of(u, Some(usage));
                }
            }
            "message_stop" => stopped = true,
            _ => {}
        }
    }
    Ok(Some(usage))
}

/// Usage fields of an Anthropic `usage` object; fields it lacks keep
/// `before`'s (a `message_delta` may carry the output alone).
fn usage_of(u: &Value, before: Option<StreamUsage>) -> StreamUsage {
    let b = before.unwrap_or_default();
    let n = |k: &str, d: u64| u.get(k).and_then(Value::as_u64).unwrap_or(d);
    StreamUsage {
        input_tokens: n("input_tokens", b.input_tokens),
        cache_read_tokens: n("cache_read_input_tokens", b.cache_read_tokens),
        cache_write_tokens: n("cache_creation_input_tokens", b.cache_write_tokens),
        output_tokens: n("output_tokens", b.output_tokens),
    }
}

/// The usage of an OpenAI Responses stream (`response.body_raw`, SSE
/// text): the `response.completed` event's. A stream that ends without
/// one was cut off.
fn responses_usage(path: &Path, line: usize, r: &Value) -> LabResult<Option<StreamUsage>> {
    let Some(raw) = r.get("body_raw").and_then(Value::as_str) else {
        return Ok(None);
    };
    let mut created = false;
    for data in raw.lines().filter_map(|l| l.strip_prefix("data: ")) {
        let Ok(e) = serde_json::from_str::<Value>(data) else {
            continue;
        };
        match e.get("type").and_then(Value::as_str) {
            Some("response.created") => created = true,
            Some("response.completed") if !created => {
                return Err(bad(
                    path,
                    line,
                    1,
                    "streamed events out of order: `response.completed` before `response.created`".into(),
                    "the events of a response are written in the order the stream sent them; re-capture the call, or delete the line",
                ));
            }
            Some("response.completed") => {
                let u = e.pointer("/response/usage");
                let n = |p: &str| {
                    u.and_then(|u| u.pointer(p))
                        .and_then(Value::as_u64)
                        .unwrap_or(0)
                };
                let cached = n("/input_tokens_details/cached_tokens");
                return Ok(Some(StreamUsage {
                    input_tokens: n("/input_tokens").saturating_sub(cached),
                    cache_read_tokens: cached,
                    cache_write_tokens: 0,
                    output_tokens: n("/output_tokens"),
                }));
            }
            _ => {}
        }
    }
    Err(bad(
        path,
        line,
        1,
        "a streamed response without `response.completed`: the body was cut off".into(),
        "capture the call again, or delete the line",
    ))
}

/// The conversation a model call belongs to: its product and the session
/// key the request carries (Claude Code's `x-claude-code-session-id`
/// header, a Responses `prompt_cache_key`), else the product alone.
fn conversation_key(p: &Pair, headers: Option<&Value>) -> (String, String) {
    let product = p.product.as_ref().map_or_else(
        || "unknown".to_string(),
        |q| format!("{} {}", q.name, q.release),
    );
    let key = headers
        .and_then(|h| h.get("x-claude-code-session-id"))
        .or_else(|| p.body.get("prompt_cache_key"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    (product, key)
}

/// The sessions of a capture read as a session format: one per
/// conversation of Anthropic Messages calls (Claude Code, opencode), its
/// messages those of the conversation's largest request (each request
/// re-sends the whole history) followed by that call's reply, its system
/// prompt the request's. A Responses conversation (Codex CLI) gives its
/// envelope ([`Pair::envelope`]) but no session: its `input` items are not
/// read as messages yet.
pub(crate) fn sessions<R: std::io::BufRead>(
    mut reader: R,
    source: &Path,
    options: &super::ImportOptions,
) -> LabResult<Vec<super::ImportedSession>> {
    let mut bytes = Vec::new();
    reader
        .read_to_end(&mut bytes)
        .map_err(|e| LabError::io("reading a claude-trace capture", source, e))?;
    // Invalid UTF-8 is bad input at its line and column (exit 3), as for
    // every other format, not a failure to read the file.
    let text = crate::input::decode(source, bytes)?;
    let capture = parse(source, &text)?;
    let lines: Vec<&str> = text.lines().collect();
    // Conversations in order of their first call, each with its largest request.
    let mut order: Vec<((String, String), usize)> = Vec::new();
    for (k, p) in capture.pairs.iter().enumerate() {
        if p.api != Api::AnthropicMessages {
            continue;
        }
        let raw: Value = serde_json::from_str(lines[p.line - 1]).expect("parsed above");
        let key = conversation_key(p, raw.pointer("/request/headers"));
        let size = |q: &Pair| {
            q.body
                .get("messages")
                .and_then(Value::as_array)
                .map_or(0, Vec::len)
        };
        match order.iter_mut().find(|(c, _)| *c == key) {
            Some((_, best)) if size(p) >= size(&capture.pairs[*best]) => *best = k,
            Some(_) => {}
            None => order.push((key, k)),
        }
    }
    let mut out = Vec::new();
    for (n, ((product, _), k)) in order.into_iter().enumerate() {
        let p = &capture.pairs[k];
        let raw: Value = serde_json::from_str(lines[p.line - 1]).expect("parsed above");
        let mut messages = p
            .body
            .get("messages")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if let Some(content) = raw
            .pointer("/response/body/content")
            .filter(|c| c.is_array())
        {
            messages.push(serde_json::json!({"role": "assistant", "content": content}));
        }
        let doc = serde_json::json!({
            "system": p.body.get("system").cloned().unwrap_or(Value::Null),
            "messages": messages,
        });
        let body = serde_json::to_vec(&doc).expect("a parsed value serialises");
        let mut session = super::ImportedSession::new(source, super::TranscriptFormat::ClaudeTrace);
        session.label = format!("{} › {product} conversation {}", session.label, n + 1);
        let mut sink = super::Sink::new(source, options.strict);
        super::anthropic::read(std::io::Cursor::new(body), &mut session, &mut sink)?;
        sink.finish_into(&mut session);
        out.push(session);
    }
    if out.is_empty() {
        return Err(bad(
            source,
            1,
            1,
            "a claude-trace capture with no Anthropic Messages call to read as a session".into(),
            "read its envelope only (lab::import::claude_trace::read), or capture a Claude Code or opencode session",
        ));
    }
    Ok(out)
}

/// A captured request/response pair (ranked before the other object
/// tests: a captured request body holds any format's keys).
fn sniffs(h: &crate::format::Head<'_>) -> bool {
    h.is_object() && sniff(h.text)
}

/// The `claude_trace` format's registration (`format_list.rs`).
pub const FORMAT: crate::format::Format = crate::format::Format {
    name: "claude_trace",
    sniff: Some((15, sniffs)),
    name_endings: &[],
    extensions: &[],
    product: None,
    compaction_by_index: false,
    read: |input| {
        // One session per conversation of the capture.
        sessions(input.reader, input.source, input.options)
    },
};
