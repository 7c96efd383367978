//! The API requests a Claude Code session log records, with their `usage`.
//!
//! Claude Code writes one record per content block of a response; all
//! records of one response share `message.id` and carry the same `usage`.
//! A request is identified by that id; the messages it sent are the records
//! on the `parentUuid` chain above its first record, consecutive records of
//! one response merged back into one message. The chain's root names the
//! conversation (the main agent, each subagent sidechain, each session after
//! a compaction), since each starts from its own system prompt.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use crate::error::LabResult;
use crate::message::{Block, Content, Message, Role};
use crate::{flatten_tool_result, image_source};

/// The `usage` of one request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Usage {
    /// Tokens after the last cache breakpoint.
    pub input_tokens: u64,
    /// Tokens written to the cache.
    pub cache_creation_input_tokens: u64,
    /// Tokens read from the cache.
    pub cache_read_input_tokens: u64,
}

impl Usage {
    /// Every prompt token of the request.
    pub fn total(&self) -> u64 {
        // Saturating: a corrupt log's huge numbers must not overflow.
        self.input_tokens
            .saturating_add(self.cache_creation_input_tokens)
            .saturating_add(self.cache_read_input_tokens)
    }
}

/// What a request's `usage` says beyond the prompt sizes: what the bill
/// also needs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Billing {
    /// Tokens generated: the largest `output_tokens` among the response's
    /// records (Claude Code logs each content block as it streams, so the
    /// first record of a response carries a partial count; the count only grows).
    pub output_tokens: u64,
    /// Of `cache_creation_input_tokens`, those written with a 1-hour
    /// lifetime (`cache_creation.ephemeral_1h_input_tokens`); logs without
    /// the split wrote with the default 5-minute lifetime.
    pub cache_write_1h_tokens: u64,
    /// Where `output_tokens` is a stream placeholder ([`placeholders`]):
    /// the reply's logged content counted with the Claude estimator, an
    /// estimate of what was generated. `None` where the count is real.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_estimate: Option<u64>,
}

impl Billing {
    /// The output to price: the estimate where the recorded count is a
    /// placeholder (with `true`: estimated), else the recorded count.
    pub fn best_output(&self) -> (u64, bool) {
        match self.output_estimate {
            Some(e) => (e, true),
            None => (self.output_tokens, false),
        }
    }
}

/// The messages one request sent: a prefix of a list shared by the
/// requests of its conversation. Each request resends everything before
/// it, so a copy per request grows with the square of the session (a 29 MB
/// chained log held 5.5 GB of copies); shared, the conversation is held
/// about once. Reads as a slice.
#[derive(Clone, Default)]
pub struct Sent {
    all: Arc<Vec<Message>>,
    len: usize,
}

impl Sent {
    /// The first `len` messages of `all` (at most all of them).
    pub fn prefix(all: &Arc<Vec<Message>>, len: usize) -> Sent {
        Sent {
            all: Arc::clone(all),
            len: len.min(all.len()),
        }
    }

    /// Whether `self` and `other` read the same held list (one copy).
    pub fn shares_with(&self, other: &Sent) -> bool {
        Arc::ptr_eq(&self.all, &other.all)
    }
}

impl From<Vec<Message>> for Sent {
    fn from(v: Vec<Message>) -> Sent {
        let len = v.len();
        Sent {
            all: Arc::new(v),
            len,
        }
    }
}

impl std::ops::Deref for Sent {
    type Target = [Message];
    fn deref(&self) -> &[Message] {
        &self.all[..self.len]
    }
}

impl PartialEq for Sent {
    fn eq(&self, other: &Sent) -> bool {
        **self == **other
    }
}

impl std::fmt::Debug for Sent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// The messages of a log's requests, shared: per conversation, the longest
/// list so far of which each request's messages are a prefix. A request
/// that is not a prefix of it, nor extends it (an earlier turn's thinking
/// stripped, an edit), starts a new list.
#[derive(Default)]
struct Shared {
    lists: Vec<Vec<Message>>,
    current: HashMap<String, usize>,
    /// (list, length) of each request, in order.
    placed: Vec<(usize, usize)>,
}

impl Shared {
    fn add(&mut self, chain: &str, messages: Vec<Message>) {
        let len = messages.len();
        if let Some(&k) = self.current.get(chain) {
            let list = &mut self.lists[k];
            if list.len() <= len && messages[..list.len()] == list[..] {
                *list = messages;
                self.placed.push((k, len));
                return;
            }
            if len <= list.len() && list[..len] == messages[..] {
                self.placed.push((k, len));
                return;
            }
        }
        self.lists.push(messages);
        self.current.insert(chain.to_string(), self.lists.len() - 1);
        self.placed.push((self.lists.len() - 1, len));
    }

    /// Each request's messages, in the order they were added.
    fn finish(self) -> Vec<Sent> {
        let lists: Vec<Arc<Vec<Message>>> = self.lists.into_iter().map(Arc::new).collect();
        self.placed
            .into_iter()
            .map(|(k, len)| Sent::prefix(&lists[k], len))
            .collect()
    }
}

/// One recorded request.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// The response's `message.id` (locates the request in its file).
    pub id: String,
    /// Uuid of the chain's root record: one conversation, one system prompt.
    pub chain: String,
    /// Whether it is a subagent's request.
    pub sidechain: bool,
    /// The model that answered (each model has its own cache).
    pub model: String,
    /// When the response was logged, in Unix milliseconds.
    pub at_ms: Option<i64>,
    /// When the request was sent: the time its last message was logged (the
    /// tool result or prompt that completed it), in Unix milliseconds. The
    /// response's own time comes after the model's latency (thinking can
    /// take minutes), so cache lifetimes are measured between send times.
    pub sent_ms: Option<i64>,
    /// The messages sent, oldest first (shared with the conversation's
    /// other requests, [`Sent`]).
    pub messages: Sent,
    /// o200k tokens of file contents Claude Code re-sent with tool results of
    /// these messages without logging them ([`reminders`]).
    pub resent_units: f64,
    /// User prompts on the chain that followed a Stop hook ([`stop_hooks`]).
    pub prompts_after_stop_hook: u32,
    /// The 1-based line of the log where the response's first record
    /// starts (`None` when the records were not read from a file).
    pub line: Option<usize>,
    /// What the API reported.
    pub usage: Usage,
    /// The provider caches implicitly, so every prompt token, the uncached
    /// `input_tokens` included, is prefix a later request can read (a
    /// mini-swe-agent trajectory); false where `input_tokens` is the tail
    /// after the last cache breakpoint (Claude Code).
    pub implicit_cache: bool,
    /// Output tokens and the 1-hour share of the writes.
    pub billing: Billing,
    /// What the provider charged for the call, in dollars, where the log
    /// records it (OpenRouter's `usage.cost` in a mini-swe-agent
    /// trajectory); Claude Code logs record no charge.
    pub charged: Option<f64>,
}

/// Reads a Claude Code `.jsonl` log or `chat.json` array (through the
/// importer's reader, [`crate::recorded::log_records`]) and returns its
/// requests in log order. Requests without usage (or with all-zero usage,
/// as the `<synthetic>` placeholders) are left out.
pub fn read_file(path: &Path) -> LabResult<Vec<RecordedRequest>> {
    let (records, places) = crate::recorded::log_records::read_placed(path)?;
    Ok(requests_placed(&records, &places))
}

/// The records of a log's text (`path` names it in errors): what
/// [`read_file`] reads, from memory, with the 1-based (line, column) where
/// each starts.
pub fn parse_records(path: &Path, text: &str) -> LabResult<crate::recorded::log_records::Placed> {
    crate::recorded::log_records::from_reader_placed(text.as_bytes(), path)
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// The requests of a list of records. Timestamps shared by many records
/// (an export's stamp) count as unknown.
pub fn requests(records: &[Value]) -> Vec<RecordedRequest> {
    requests_placed(records, &[])
}

/// [`requests`] of records that start at `places` (1-based line and
/// column, one per record; empty when unknown): each request knows the
/// line of its response.
pub fn requests_placed(records: &[Value], places: &[(usize, usize)]) -> Vec<RecordedRequest> {
    let index = assemble::Index::new(records);
    let reminders = reminders::Reminders::of(records);
    let by_uuid: HashMap<&str, &Value> = records
        .iter()
        .filter_map(|r| Some((str_of(r, "uuid")?, r)))
        .collect();
    let outputs = output_tokens(records);
    // Claude Code's output: the Claude estimator judges placeholders.
    let estimates = placeholders::placeholder_outputs(
        records,
        crate::tokens::Tokens::Claude.counter().as_ref(),
    );
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let mut shared = Shared::default();
    for (i, r) in records.iter().enumerate() {
        let Some(usage) = usage_of(r) else { continue };
        let Some(id) = r.pointer("/message/id").and_then(Value::as_str) else {
            continue;
        };
        if !seen.insert(id) || usage.total() == 0 {
            continue;
        }
        let chain = ancestors(r, &by_uuid);
        let root = chain.first().copied().unwrap_or(r);
        let before = index.position(r).unwrap_or(records.len());
        let model = r
            .pointer("/message/model")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut messages = to_messages(index.messages(&chain, before));
        if !thinking::keeps_thinking(model) {
            thinking::strip_earlier_turns(&mut messages, |m| reminders.starts_turn(m));
        }
        let chain_id = str_of(root, "uuid").unwrap_or_default().to_string();
        let resent_units = reminders.resent_units(&messages);
        shared.add(&chain_id, messages);
        out.push(RecordedRequest {
            id: id.to_string(),
            chain: chain_id,
            sidechain: r
                .get("isSidechain")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            model: model.to_string(),
            at_ms: index.time(r),
            sent_ms: chain.last().and_then(|p| index.time(p)),
            resent_units,
            prompts_after_stop_hook: stop_hooks::prompts_after(&chain),
            messages: Sent::default(),
            line: places.get(i).map(|p| p.0),
            usage,
            implicit_cache: false,
            billing: Billing {
                output_tokens: outputs.get(id).copied().unwrap_or(0),
                cache_write_1h_tokens: r
                    .pointer("/message/usage/cache_creation/ephemeral_1h_input_tokens")
                    .and_then(Value::as_u64)
                    .unwrap_or(0),
                output_estimate: estimates
                    .get(id)
                    .filter(|o| o.placeholder())
                    .map(|o| o.counted as u64),
            },
            charged: None,
        });
    }
    for (r, sent) in out.iter_mut().zip(shared.finish()) {
        r.messages = sent;
    }
    out
}

/// The largest `output_tokens` of each response id's records.
fn output_tokens(records: &[Value]) -> HashMap<&str, u64> {
    let mut out: HashMap<&str, u64> = HashMap::new();
    for r in records
        .iter()
        .filter(|r| str_of(r, "type") == Some("assistant"))
    {
        let id = r.pointer("/message/id").and_then(Value::as_str);
        let n = r
            .pointer("/message/usage/output_tokens")
            .and_then(Value::as_u64);
        if let (Some(id), Some(n)) = (id, n) {
            let slot = out.entry(id).or_default();
            *slot = (*slot).max(n);
        }
    }
    out
}

fn usage_of(r: &Value) -> Option<Usage> {
    if str_of(r, "type") != Some("assistant") {
        return None;
    }
    let u = r.pointer("/message/usage")?;
    let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
    Some(Usage {
        input_tokens: n("input_tokens"),
        cache_creation_input_tokens: n("cache_creation_input_tokens"),
        cache_read_input_tokens: n("cache_read_input_tokens"),
    })
}

/// The records above `r` on its `parentUuid` chain, root first. A cycle or a
/// missing parent ends the chain.
fn ancestors<'a>(r: &'a Value, by_uuid: &HashMap<&str, &'a Value>) -> Vec<&'a Value> {
    let mut out = Vec::new();
    let mut visited = HashSet::new();
    let mut next = str_of(r, "parentUuid");
    while let Some(p) = next {
        let Some(rec) = by_uuid.get(p) else { break };
        if !visited.insert(p) {
            break;
        }
        out.push(*rec);
        next = str_of(rec, "parentUuid");
    }
    out.reverse();
    out
}

/// Grouped content items as messages.
fn to_messages(groups: Vec<(Role, Vec<&Value>)>) -> Vec<Message> {
    groups
        .into_iter()
        .map(|(role, items)| Message {
            role,
            content: Content::Blocks(items.into_iter().flat_map(item_blocks).collect()),
        })
        .collect()
}

/// One content item (a block, or a message's whole string content).
fn item_blocks(item: &Value) -> Vec<Block> {
    match item {
        Value::String(s) => vec![Block::Text { text: s.clone() }],
        other => block_of(other),
    }
}

fn block_of(item: &Value) -> Vec<Block> {
    let text = |k: &str| str_of(item, k).unwrap_or_default().to_string();
    match str_of(item, "type") {
        Some("text") => vec![Block::Text { text: text("text") }],
        Some("thinking") => vec![Block::Thinking {
            thinking: text("thinking"),
        }],
        Some("tool_use") => vec![Block::ToolUse {
            id: text("id"),
            name: text("name"),
            input: item.get("input").cloned().unwrap_or(Value::Null).into(),
        }],
        Some("tool_result") => {
            let (content, images) = flatten_tool_result(item.get("content"));
            let mut v = vec![Block::ToolResult {
                tool_use_id: text("tool_use_id"),
                content,
            }];
            v.extend(images);
            v
        }
        Some("image") => vec![Block::Image {
            source: image_source(item),
        }],
        _ => Vec::new(),
    }
}

/// `2025-08-07T06:20:35.956Z` (UTC, optional fraction) as Unix milliseconds.
pub fn parse_timestamp_ms(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[10] != b'T' || !s.ends_with('Z') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let frac = s.get(19..s.len() - 1).unwrap_or("");
    let ms = match frac.strip_prefix('.') {
        Some(f) if !f.is_empty() => format!("{f:0<3}").get(..3)?.parse::<i64>().ok()?,
        _ if frac.is_empty() => 0,
        _ => return None,
    };
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    Some(((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60_000 + sec * 1000 + ms)
}

/// Days since 1970-01-01 (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

pub mod assemble;
pub mod placeholders;
pub mod reminders;
pub mod stop_hooks;
pub mod thinking;
pub mod trajectory;

#[cfg(test)]
mod tests;
