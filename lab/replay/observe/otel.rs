//! `lab replay --policy … --otel FILE`: every run as OpenTelemetry spans,
//! written as OTLP/JSON (the JSON encoding of `ExportTraceServiceRequest`).
//!
//! What is followed, and at which version:
//!
//! - the wire shape: opentelemetry-proto's `trace/v1/trace.proto`
//!   (`resourceSpans` / `scopeSpans` / `spans`) under the OTLP/JSON rules of
//!   its `docs/specification.md` ("JSON Protobuf Encoding"): lowerCamelCase
//!   field names, trace and span ids as lowercase hex (not base64), 64-bit
//!   integers (`startTimeUnixNano`, `intValue`) as decimal strings, enums
//!   (`kind`) as integers. `tests/golden/otel/otlp_trace.schema.json` is the
//!   JSON Schema of the subset written here, with its source.
//! - the attributes: the GenAI semantic conventions of
//!   open-telemetry/semantic-conventions-genai v0.1.0 ([`SEMCONV`]), whose
//!   registry entries used here are checked in with their types and sources
//!   (`tests/golden/otel/semconv_genai_registry.json`).
//!
//! The shape of a replay: one trace per (session, policy) run, its root span
//! `invoke_agent POLICY` (`ctxlab.policy`), one child `chat` span per model
//! call with the request's token counts, and one span event per thing the
//! policy did before that call: `ctxlab.compaction` (messages summarised or
//! dropped), `ctxlab.clearing` (a result or input cleared or truncated),
//! `ctxlab.recovery` (content sent again after a compaction), and
//! `ctxlab.policy_event` for the rest (persisted, repaired, gated,
//! model_failed), each with the policy and the engine's event kind. The
//! conventions define no compaction *event*: they define the boolean span
//! attribute `gen_ai.conversation.compacted` (set only to `true`, on an
//! inference span whose context is a compacted view of the conversation)
//! and a `compaction` part of `gen_ai.input.messages` (message content,
//! which ctxlab does not write). So each call span after a run's first
//! compaction carries `gen_ai.conversation.compacted = true`, and the
//! events are `ctxlab.*`; every `ctxlab.*` key is listed in [`CTXLAB_KEYS`].
//!
//! Deterministic: trace and span ids are SHA-256 of (session, policy,
//! call), times are a fixed epoch ([`EPOCH_NS`]) plus the log's own message
//! times when it records one for every call, else plus one second per call.
//! The same replay writes the same bytes on any machine.

use std::path::Path;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::error::{LabError, LabResult};
use crate::message::{Message, Role};
use crate::policy::engine::{event_kind, PolicyRun};
use crate::policy::PolicyEvent;

/// The GenAI semantic conventions followed, pinned.
pub const SEMCONV: &str = "open-telemetry/semantic-conventions-genai v0.1.0";

/// 2025-01-01T00:00:00Z in nanoseconds: the fixed origin of every span's
/// time (a replay has no wall-clock time of its own).
pub const EPOCH_NS: u64 = 1_735_689_600_000_000_000;

/// Every `ctxlab.*` attribute key written, with its OTLP value type: what
/// the conventions lack and ctxlab needs (the docs list them too).
pub const CTXLAB_KEYS: &[(&str, &str)] = &[
    ("ctxlab.policy", "string"),
    ("ctxlab.session", "string"),
    ("ctxlab.tokenizer", "string"),
    ("ctxlab.tokens_estimated", "boolean"),
    ("ctxlab.calls", "int"),
    ("ctxlab.invalid_requests", "int"),
    ("ctxlab.ended_by_error", "string"),
    ("ctxlab.call", "int"),
    ("ctxlab.message_index", "int"),
    ("ctxlab.request.messages", "int"),
    ("ctxlab.request.chars", "int"),
    ("ctxlab.envelope_tokens", "int"),
    ("ctxlab.violations", "int"),
    ("ctxlab.event.kind", "string"),
    ("ctxlab.compaction.replaced", "int"),
    ("ctxlab.compaction.kept", "int"),
    ("ctxlab.compaction.dropped", "int"),
    ("ctxlab.compaction.why", "string"),
    ("ctxlab.clearing.part", "string"),
    ("ctxlab.clearing.from_chars", "int"),
    ("ctxlab.clearing.to_chars", "int"),
    ("ctxlab.recovery.items", "int"),
    ("ctxlab.recovery.chars", "int"),
    ("ctxlab.semconv", "string"),
];

/// What the trace needs of one session besides its runs: its label, the
/// model and provider its log names, each recorded reply's size and the
/// log's message times (the replayed messages', product artefacts left out).
#[derive(Debug, Clone, Default)]
pub struct TracedSession {
    /// The session's label (`gen_ai.conversation.id`).
    pub label: String,
    /// The model its log names, where it names one (`gen_ai.request.model`).
    pub model: Option<String>,
    /// The provider its format speaks to, where the format says
    /// (`gen_ai.provider.name`).
    pub provider: Option<&'static str>,
    /// Tokens of each recorded assistant reply by the run's counter, by
    /// message index (0 for other messages): `gen_ai.usage.output_tokens`.
    pub reply_tokens: Vec<usize>,
    /// Milliseconds since the session's start per message, when recorded.
    pub times_ms: Option<Vec<Option<u64>>>,
    /// The runs of this session: a range of the replay's runs.
    pub runs: std::ops::Range<usize>,
}

impl TracedSession {
    /// The trace facts of `session` (replayed as `messages`, its product
    /// artefacts left out), its model `model`, counted with `counter`; its
    /// runs are `runs` of the replay's.
    pub fn of(
        session: &crate::import::ImportedSession,
        model: Option<&str>,
        counter: &dyn crate::tokens::TokenCounter,
        runs: std::ops::Range<usize>,
    ) -> TracedSession {
        let messages = crate::import::artefacts::without_product_artefacts(session);
        TracedSession {
            label: session.label.clone(),
            model: model.map(str::to_string),
            provider: provider_of(session.format.name()),
            reply_tokens: reply_tokens(&messages, counter),
            times_ms: crate::import::artefacts::times_without_product_artefacts(session),
            runs,
        }
    }
}

/// Each assistant message's tokens by `counter`, 0 for the others.
fn reply_tokens(messages: &[Message], counter: &dyn crate::tokens::TokenCounter) -> Vec<usize> {
    messages
        .iter()
        .map(|m| match m.role {
            Role::Assistant => counter.count_messages(std::slice::from_ref(m)),
            _ => 0,
        })
        .collect()
}

/// `gen_ai.provider.name` of a log format, where the format speaks to one
/// provider's API (the registry's well-known values).
fn provider_of(format: &str) -> Option<&'static str> {
    match format {
        "claude_jsonl" | "chat_json" | "anthropic" | "claude_trace" => Some("anthropic"),
        "openai" | "codex_rollout" => Some("openai"),
        "gemini_cli" | "gemini_contents" => Some("gcp.gemini"),
        _ => None,
    }
}

/// One run to trace: the engine's run and, when priced, its cache model's
/// per-request verdicts.
#[derive(Debug, Clone, Copy)]
pub struct TracedRun<'a> {
    /// The run.
    pub run: &'a PolicyRun,
    /// Its cost report with `--cost`.
    pub cost: Option<&'a crate::cache::CostReport>,
}

/// `ExportTraceServiceRequest` as OTLP/JSON.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Export {
    /// One resource: the lab.
    pub resource_spans: Vec<ResourceSpans>,
}

/// `ResourceSpans`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSpans {
    /// The resource's attributes.
    pub resource: Resource,
    /// One scope: the replay.
    pub scope_spans: Vec<ScopeSpans>,
}

/// `Resource`.
#[derive(Debug, Serialize)]
pub struct Resource {
    /// `service.name`.
    pub attributes: Vec<KeyValue>,
}

/// `ScopeSpans`.
#[derive(Debug, Serialize)]
pub struct ScopeSpans {
    /// The instrumentation scope.
    pub scope: Scope,
    /// Every span of every run.
    pub spans: Vec<Span>,
}

/// `InstrumentationScope`.
#[derive(Debug, Serialize)]
pub struct Scope {
    /// `ctxlab.replay`.
    pub name: String,
    /// The lab's version.
    pub version: String,
    /// `ctxlab.semconv`: the conventions followed.
    pub attributes: Vec<KeyValue>,
}

/// `Span`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Span {
    /// 16 bytes, lowercase hex.
    pub trace_id: String,
    /// 8 bytes, lowercase hex.
    pub span_id: String,
    /// The root's id for a call span; absent on a root.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub parent_span_id: String,
    /// `invoke_agent POLICY` or `chat MODEL`.
    pub name: String,
    /// `SpanKind`: 1 internal (the run), 3 client (a model call).
    pub kind: u8,
    /// Nanoseconds since the Unix epoch, as a decimal string.
    pub start_time_unix_nano: String,
    /// Nanoseconds since the Unix epoch, as a decimal string.
    pub end_time_unix_nano: String,
    /// The span's attributes.
    pub attributes: Vec<KeyValue>,
    /// What the policy did before the call.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<Event>,
    /// Error when the run ended by the policy's error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
}

/// `Span.Event`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// Nanoseconds since the Unix epoch, as a decimal string.
    pub time_unix_nano: String,
    /// `ctxlab.compaction`, `ctxlab.clearing`, `ctxlab.recovery` or `ctxlab.policy_event`.
    pub name: String,
    /// The policy, the event's kind and its numbers.
    pub attributes: Vec<KeyValue>,
}

/// `Status`.
#[derive(Debug, Serialize)]
pub struct Status {
    /// What ended the run.
    pub message: String,
    /// 2: `STATUS_CODE_ERROR`.
    pub code: u8,
}

/// `KeyValue`.
#[derive(Debug, Clone, Serialize)]
pub struct KeyValue {
    /// The attribute's key.
    pub key: String,
    /// Its value.
    pub value: AnyValue,
}

/// `AnyValue`, the kinds written here.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum AnyValue {
    /// A string.
    #[serde(rename = "stringValue")]
    String(String),
    /// A 64-bit integer, as OTLP/JSON writes it: a decimal string.
    #[serde(rename = "intValue")]
    Int(String),
    /// A boolean.
    #[serde(rename = "boolValue")]
    Bool(bool),
}

fn s(key: &str, v: impl Into<String>) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: AnyValue::String(v.into()),
    }
}

fn i(key: &str, v: impl Into<u64>) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: AnyValue::Int(v.into().to_string()),
    }
}

fn b(key: &str, v: bool) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: AnyValue::Bool(v),
    }
}

/// The first `n` bytes of SHA-256 of `parts` (each followed by a NUL, so
/// `("ab","c")` and `("a","bc")` differ), lowercase hex; never all zeros.
fn id(parts: &[&str], n: usize) -> String {
    let mut h = Sha256::new();
    h.update(b"ctxlab otel\0");
    for p in parts {
        h.update(p.as_bytes());
        h.update([0u8]);
    }
    let digest = h.finalize();
    let mut bytes = digest[..n].to_vec();
    if bytes.iter().all(|&x| x == 0) {
        // An all-zero id is invalid in OTLP; a digest that starts so is
        // astronomically rare, and one set bit keeps it deterministic.
        bytes[n - 1] = 1;
    }
    bytes.iter().map(|x| format!("{x:02x}")).collect()
}

/// How an engine event is named as a span event.
pub fn event_name(e: &PolicyEvent) -> &'static str {
    match e {
        PolicyEvent::Summarised { .. } | PolicyEvent::Dropped { .. } => "ctxlab.compaction",
        PolicyEvent::Cleared { .. } | PolicyEvent::Truncated { .. } => "ctxlab.clearing",
        PolicyEvent::Restored { .. } => "ctxlab.recovery",
        PolicyEvent::Persisted { .. }
        | PolicyEvent::Repaired { .. }
        | PolicyEvent::Gated { .. }
        | PolicyEvent::ModelFailed { .. } => "ctxlab.policy_event",
    }
}

/// Whether `e` compacts the history (the request after it is a compacted
/// view: `gen_ai.conversation.compacted`).
pub fn is_compaction(e: &PolicyEvent) -> bool {
    event_name(e) == "ctxlab.compaction"
}

/// The attributes of one span event.
fn event_attributes(policy: &str, e: &PolicyEvent) -> Vec<KeyValue> {
    let mut a = vec![
        s("ctxlab.policy", policy),
        s("ctxlab.event.kind", event_kind(e)),
    ];
    let n = |v: usize| v as u64;
    match e {
        PolicyEvent::Summarised { replaced, kept, .. } => {
            a.push(i("ctxlab.compaction.replaced", n(*replaced)));
            a.push(i("ctxlab.compaction.kept", n(*kept)));
        }
        PolicyEvent::Dropped { messages, why } => {
            a.push(i("ctxlab.compaction.dropped", n(*messages)));
            a.push(s("ctxlab.compaction.why", why.as_str()));
        }
        PolicyEvent::Cleared { id, part, .. } => {
            a.push(s("gen_ai.tool.call.id", id.as_str()));
            a.push(s("ctxlab.clearing.part", *part));
        }
        PolicyEvent::Truncated {
            id,
            from_chars,
            to_chars,
            ..
        } => {
            a.push(s("gen_ai.tool.call.id", id.as_str()));
            a.push(i("ctxlab.clearing.from_chars", n(*from_chars)));
            a.push(i("ctxlab.clearing.to_chars", n(*to_chars)));
        }
        PolicyEvent::Restored { items, chars } => {
            a.push(i("ctxlab.recovery.items", n(items.len())));
            a.push(i("ctxlab.recovery.chars", n(*chars)));
        }
        PolicyEvent::Persisted { id, .. } | PolicyEvent::Repaired { id, .. } => {
            a.push(s("gen_ai.tool.call.id", id.as_str()));
        }
        PolicyEvent::Gated { .. } | PolicyEvent::ModelFailed { .. } => {}
    }
    a
}

/// Each call's start in nanoseconds: the fixed epoch plus the log's time of
/// the reply it produced when the log records one for every call, else
/// plus one second per call (so spans never overlap and order holds).
fn call_starts(run: &PolicyRun, session: &TracedSession) -> Vec<u64> {
    let recorded: Option<Vec<u64>> = session.times_ms.as_ref().and_then(|t| {
        run.calls
            .iter()
            .map(|c| t.get(c.at).copied().flatten())
            .collect()
    });
    match recorded {
        Some(ms) => ms
            .iter()
            .map(|m| EPOCH_NS.saturating_add(m.saturating_mul(1_000_000)))
            .collect(),
        None => (0..run.calls.len() as u64)
            .map(|k| EPOCH_NS + k * 1_000_000_000)
            .collect(),
    }
}

/// The spans of one run of `session`; `occurrence` tells apart sessions
/// with the same label (0 for the first).
fn run_spans(t: &TracedRun<'_>, session: &TracedSession, occurrence: usize, out: &mut Vec<Span>) {
    let run = t.run;
    let nth = occurrence.to_string();
    let key = [session.label.as_str(), nth.as_str(), run.policy.as_str()];
    let trace_id = id(&key, 16);
    let root_id = id(&[key[0], key[1], key[2], "run"], 8);
    let starts = call_starts(run, session);
    // A call span lasts 1 ms: a replay knows no model latency.
    const CALL_NS: u64 = 1_000_000;
    let root_start = starts.first().copied().unwrap_or(EPOCH_NS);
    let root_end = starts.iter().max().map_or(EPOCH_NS, |s| s + CALL_NS);
    // Cache reads and writes per model call: the priced requests that are
    // not a policy's own summary call, in call order.
    let priced: Vec<&crate::cache::RequestCost> = t
        .cost
        .map(|c| c.requests.iter().filter(|r| !r.compaction).collect())
        .unwrap_or_default();
    let priced = (priced.len() == run.calls.len()).then_some(priced);
    let mut events_by_call: Vec<Vec<&PolicyEvent>> = vec![Vec::new(); run.calls.len() + 1];
    for (at, e) in &run.events {
        events_by_call[(*at).min(run.calls.len())].push(e);
    }
    let mut compacted = false;
    let mut spans = Vec::with_capacity(run.calls.len());
    for (k, call) in run.calls.iter().enumerate() {
        let start = starts[k];
        let events: Vec<Event> = events_by_call[k]
            .iter()
            .map(|e| Event {
                time_unix_nano: start.to_string(),
                name: event_name(e).to_string(),
                attributes: event_attributes(&run.policy, e),
            })
            .collect();
        compacted |= events_by_call[k].iter().any(|e| is_compaction(e));
        let mut a = vec![
            s("gen_ai.operation.name", "chat"),
            s("gen_ai.conversation.id", session.label.as_str()),
        ];
        if let Some(p) = session.provider {
            a.push(s("gen_ai.provider.name", p));
        }
        if let Some(m) = &session.model {
            a.push(s("gen_ai.request.model", m.as_str()));
        }
        a.push(i(
            "gen_ai.usage.input_tokens",
            (call.tokens + call.envelope) as u64,
        ));
        let reply = session.reply_tokens.get(call.at).copied().unwrap_or(0);
        a.push(i("gen_ai.usage.output_tokens", reply as u64));
        if let Some(p) = &priced {
            a.push(i(
                "gen_ai.usage.cache_read.input_tokens",
                p[k].cache_read_tokens,
            ));
            a.push(i(
                "gen_ai.usage.cache_write.input_tokens",
                p[k].cache_write_tokens,
            ));
        }
        if compacted {
            a.push(b("gen_ai.conversation.compacted", true));
        }
        a.extend([
            s("ctxlab.policy", run.policy.as_str()),
            i("ctxlab.call", k as u64),
            i("ctxlab.message_index", call.at as u64),
            i("ctxlab.request.messages", call.messages as u64),
            i("ctxlab.request.chars", call.chars as u64),
            i("ctxlab.envelope_tokens", call.envelope as u64),
            i("ctxlab.violations", call.violations.len() as u64),
        ]);
        let call_no = k.to_string();
        spans.push(Span {
            trace_id: trace_id.clone(),
            span_id: id(&[key[0], key[1], key[2], "call", &call_no], 8),
            parent_span_id: root_id.clone(),
            name: match &session.model {
                Some(m) => format!("chat {m}"),
                None => "chat".to_string(),
            },
            kind: 3,
            start_time_unix_nano: start.to_string(),
            end_time_unix_nano: (start + CALL_NS).to_string(),
            attributes: a,
            events,
            status: None,
        });
    }
    // Events after the last call (a policy acting on the end of the
    // history) belong to the run.
    let tail: Vec<Event> = events_by_call[run.calls.len()]
        .iter()
        .map(|e| Event {
            time_unix_nano: root_end.to_string(),
            name: event_name(e).to_string(),
            attributes: event_attributes(&run.policy, e),
        })
        .collect();
    let mut a = vec![
        s("gen_ai.operation.name", "invoke_agent"),
        s("gen_ai.agent.name", run.policy.as_str()),
        s("gen_ai.conversation.id", session.label.as_str()),
        s("ctxlab.policy", run.policy.as_str()),
        s("ctxlab.session", run.session.as_str()),
        s("ctxlab.tokenizer", run.tokenizer.as_str()),
        b("ctxlab.tokens_estimated", true),
        i("ctxlab.calls", run.calls.len() as u64),
        i("ctxlab.invalid_requests", run.invalid_requests),
    ];
    if let Some(e) = &run.ended_by_error {
        a.push(s("ctxlab.ended_by_error", e.as_str()));
    }
    out.push(Span {
        trace_id,
        span_id: root_id,
        parent_span_id: String::new(),
        name: format!("invoke_agent {}", run.policy),
        kind: 1,
        start_time_unix_nano: root_start.to_string(),
        end_time_unix_nano: root_end.to_string(),
        attributes: a,
        events: tail,
        status: run.ended_by_error.as_ref().map(|e| Status {
            message: e.clone(),
            code: 2,
        }),
    });
    out.extend(spans);
}

/// The export of `runs` (the replay's, in order) whose sessions are
/// `sessions` (each naming its range of `runs`).
pub fn export(runs: &[TracedRun<'_>], sessions: &[TracedSession]) -> Export {
    let mut spans = Vec::new();
    let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for session in sessions {
        let n = seen.entry(session.label.as_str()).or_insert(0);
        let occurrence = *n;
        *n += 1;
        for t in runs.get(session.runs.clone()).unwrap_or(&[]) {
            run_spans(t, session, occurrence, &mut spans);
        }
    }
    Export {
        resource_spans: vec![ResourceSpans {
            resource: Resource {
                attributes: vec![s("service.name", "ctxlab")],
            },
            scope_spans: vec![ScopeSpans {
                scope: Scope {
                    name: "ctxlab.replay".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    attributes: vec![s("ctxlab.semconv", SEMCONV)],
                },
                spans,
            }],
        }],
    }
}

/// Write the export of `runs` to `path` whole (a temporary file renamed
/// into place: nothing is left behind on an error).
pub fn write(path: &Path, runs: &[TracedRun<'_>], sessions: &[TracedSession]) -> LabResult<()> {
    // Strings, integers and booleans only: serialising cannot fail.
    let mut text = serde_json::to_string(&export(runs, sessions)).expect("the export serialises");
    text.push('\n');
    crate::storage::root::cleanup::write_replacing(path, text.as_bytes())
        .map_err(|e| LabError::io("writing the OTLP/JSON trace", path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_hex_of_the_right_length_and_differ_by_any_part() {
        let a = id(&["s", "0", "p"], 16);
        assert_eq!(a.len(), 32);
        assert!(a
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_ne!(a, id(&["s", "0", "q"], 16));
        assert_ne!(id(&["ab", "c"], 8), id(&["a", "bc"], 8));
        assert_eq!(id(&["x"], 8), id(&["x"], 8));
    }

    #[test]
    fn every_event_kind_has_a_class_and_only_summaries_and_drops_compact() {
        let summarised = PolicyEvent::Summarised {
            replaced: 3,
            kept: 1,
            archive: None,
        };
        let cleared = PolicyEvent::Cleared {
            id: "t".into(),
            part: "result",
            placeholder: "[cleared]".into(),
        };
        let restored = PolicyEvent::Restored {
            items: vec!["a.rs".into()],
            chars: 10,
        };
        assert!(is_compaction(&summarised));
        assert!(is_compaction(&PolicyEvent::Dropped {
            messages: 2,
            why: "window".into()
        }));
        assert!(!is_compaction(&cleared));
        assert_eq!(event_name(&cleared), "ctxlab.clearing");
        assert_eq!(event_name(&restored), "ctxlab.recovery");
    }
}
