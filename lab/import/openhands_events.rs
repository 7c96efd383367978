//! OpenHands' per-event store: a conversation's `events/` directory, one
//! JSON file per event, read as one session.
//!
//! Two layouts, told apart by the file names:
//!
//! * **V1**, the `openhands-sdk` (read in openhands-sdk 1.58.2,
//!   `conversation/event_store.py` `EventLog` and `persistence_const.py`):
//!   `events/event-{idx:05d}-{event_id}.json`, each
//!   `event.model_dump_json(exclude_none=True)` of an `Event` whose `kind`
//!   names its class. `EventLog` loads the indices from 0 up to the first
//!   gap, so a missing file ends the conversation here too.
//! * **V0**, openhands-ai's `EventStream` (`sessions/SID/events/{id}.json`,
//!   `event_to_dict`): the same object a trajectory element is (a trajectory
//!   only strips screenshots), so each is read as [`super::openhands`] reads
//!   a trajectory element.
//!
//! V1 events are turned into that trajectory shape and go through the same
//! [`super::openhands`] stream, so both layouts and the trajectory give the
//! same messages, and a `Condensation` with a `summary` is a real compaction
//! the same way (the summary where the event stands; `forgotten_event_ids`
//! stay before it in `main`; `summary_offset` is not used). What
//! `events_to_messages` sends: `SystemPromptEvent` the system prompt,
//! `MessageEvent` user or agent text (its `extended_content` appended),
//! the `ActionEvent`s of one `llm_response_id` one reply (the first's
//! `thought` as its text, then a `tool_use` per call with the call's own
//! arguments), `ObservationEvent` / `AgentErrorEvent` /
//! `UserRejectObservation` the result of their `tool_call_id`. Other kinds
//! (state updates, condensation requests, pauses) are never sent and are
//! counted in `skipped` as `kind:NAME`. An observation's text is its
//! `content` texts: a tool's own `to_llm_content` formatting (an exit code
//! line) is not reproduced. V1 events carry no per-call token usage.
//!
//! The input is any event file of the directory (the directory itself is a
//! corpus whose session is its first event file, see [`super::corpus`]).
//! Damage is reported in the event file it is in, at its line:column: a cut
//! file is `truncated`, a file that is no JSON object `invalid_record`, a
//! call or result with no string `tool_call_id`, or a message with no
//! `llm_message` object, `invalid_record`; a missing index is `truncated`
//! (nothing after it is read, as upstream reads nothing after it).

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::opencode_storage::object;
use super::openhands::Stream;
use super::{DiagnosticKind, ImportedSession, Sink};
use crate::error::{LabError, LabResult};
use crate::input::{check_regular, MAX_TRANSCRIPT_BYTES};

/// How the event files of a directory are named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// `event-00012-ID.json` (openhands-sdk).
    V1,
    /// `12.json` (openhands-ai's `EventStream`).
    V0,
}

/// The layout and index `name` has as an event file.
fn event_index(name: &str) -> Option<(Layout, u64)> {
    let stem = name.strip_suffix(".json")?;
    if let Some(rest) = stem.strip_prefix("event-") {
        let (idx, id) = rest.split_once('-')?;
        let id_ok = id.len() >= 8 && id.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
        if idx.len() >= 5 && id_ok {
            return Some((Layout::V1, idx.parse().ok()?));
        }
        return None;
    }
    if !stem.is_empty() && stem.bytes().all(|b| b.is_ascii_digit()) {
        return Some((Layout::V0, stem.parse().ok()?));
    }
    None
}

/// The event files of `dir` in `layout`, by index.
fn event_files(dir: &Path, layout: Layout) -> LabResult<Vec<(u64, PathBuf)>> {
    let entries = std::fs::read_dir(dir).map_err(|e| LabError::io("reading directory", dir, e))?;
    let mut out = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|e| LabError::io("reading directory", dir, e))?
            .path();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        if let Some((l, idx)) = name.as_deref().and_then(event_index) {
            if l == layout && path.is_file() {
                out.push((idx, path));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The first event file of `dir` when it is an OpenHands events directory
/// (its lowest-index event file sniffs as an OpenHands event: `sniff`
/// is the registry's, passed in because the registry names this module).
pub fn first_event_file(
    dir: &Path,
    sniff: impl Fn(&[u8]) -> Option<super::TranscriptFormat>,
) -> Option<PathBuf> {
    [Layout::V1, Layout::V0].into_iter().find_map(|layout| {
        let (_, first) = event_files(dir, layout).ok()?.into_iter().next()?;
        let head = std::fs::read(&first).ok()?;
        let head = &head[..head.len().min(8192)];
        (sniff(head) == Some(super::TranscriptFormat::OpenHandsEvents)).then_some(first)
    })
}

pub(crate) fn read(session: &mut ImportedSession, sink: &mut Sink<'_>) -> LabResult<()> {
    let source = sink.source.to_path_buf();
    let (dir, layout) = locate(&source)?;
    if let Some(conversation) = dir.parent().and_then(Path::file_name) {
        session.label = format!("{}/events", conversation.to_string_lossy());
    }
    let mut stream = Stream::default();
    for (expected, (idx, file)) in (0u64..).zip(event_files(&dir, layout)?) {
        if idx != expected {
            let msg = format!("event {expected} is missing (the next is {idx}); the events from it on are not read, as OpenHands reads none after a gap");
            sink.report(1, 1, DiagnosticKind::Truncated, msg)?;
            break;
        }
        session.stats.records += 1;
        sink.file = Some(file.clone());
        check_regular(&file, "an OpenHands event file", MAX_TRANSCRIPT_BYTES)?;
        let bytes = std::fs::read(&file).map_err(|e| LabError::io("reading", &file, e))?;
        let v = match object(&bytes) {
            Ok(v) => v,
            Err(((line, column), kind, msg)) => {
                session.skip("(unreadable event file)");
                sink.report(line, column, kind, format!("{msg}; skipped"))?;
                continue;
            }
        };
        match as_trajectory_event(v) {
            Adapted::Event(e) => stream.event(&e, (1, 1), session, sink)?,
            Adapted::Skip(what) => session.skip(&what),
            Adapted::Bad(msg) => {
                session.skip("(invalid event)");
                sink.report(1, 1, DiagnosticKind::InvalidRecord, msg)?;
            }
        }
    }
    sink.file = None;
    stream.finish(None, session, sink)
}

/// The events directory and layout of an event file.
fn locate(file: &Path) -> LabResult<(PathBuf, Layout)> {
    let resolved = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    let name = resolved
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    let layout = name.as_deref().and_then(event_index).map(|(l, _)| l);
    match (resolved.parent(), layout) {
        (Some(dir), Some(layout)) if dir.is_dir() => Ok((dir.to_path_buf(), layout)),
        _ => Err(LabError::Input {
            file: file.to_path_buf(),
            line: 0,
            column: 0,
            message: "an OpenHands event file must lie in its conversation's events directory, named event-NNNNN-ID.json (openhands-sdk) or N.json (openhands-ai)".into(),
            fix: "pass the events directory (or one of its files) as OpenHands wrote it; a trajectory export reads as --format-in openhands".into(),
        }),
    }
}

/// A stored event, as the trajectory stream takes it.
enum Adapted {
    /// A trajectory-shaped event.
    Event(Value),
    /// An event that is never sent to the model, by `skipped` key.
    Skip(String),
    /// A V1 event missing what it must carry: why.
    Bad(String),
}

/// A V0 event as it is; a V1 event (`kind`) in the trajectory shape.
fn as_trajectory_event(v: Value) -> Adapted {
    let Some(kind) = v.get("kind").and_then(Value::as_str).map(str::to_string) else {
        return Adapted::Event(v);
    };
    let source = v.get("source").cloned().unwrap_or(Value::Null);
    match kind.as_str() {
        "SystemPromptEvent" => {
            let text = texts(
                v.get("system_prompt")
                    .into_iter()
                    .chain(v.get("dynamic_context")),
            );
            Adapted::Event(json!({"source": source, "action": "system", "args": {"content": text}}))
        }
        "MessageEvent" => message(&v),
        "ActionEvent" => call(&v),
        "ObservationEvent" => {
            let content = v.pointer("/observation/content").and_then(Value::as_array);
            let extended = v.get("extended_content").and_then(Value::as_array);
            let all = content.into_iter().chain(extended).flatten();
            result(&v, &kind, texts(all))
        }
        "AgentErrorEvent" => {
            let error = v.get("error").and_then(Value::as_str).unwrap_or_default();
            result(&v, &kind, error.to_string())
        }
        "UserRejectObservation" => {
            let reason = v.get("rejection_reason").and_then(Value::as_str);
            let reason = reason.unwrap_or("User rejected the action");
            result(&v, &kind, format!("Action rejected: {reason}"))
        }
        "Condensation" => Adapted::Event(json!({
            "source": source,
            "action": "condensation",
            "args": {"summary": v.get("summary")},
        })),
        other => Adapted::Skip(format!("kind:{other}")),
    }
}

/// The text items of a list of `TextContent`, joined by newlines.
fn texts<'a>(items: impl Iterator<Item = &'a Value>) -> String {
    let parts: Vec<&str> = items
        .filter_map(|c| c.get("text").and_then(Value::as_str))
        .collect();
    parts.join("\n")
}

fn message(v: &Value) -> Adapted {
    let Some(msg) = v.get("llm_message").filter(|m| m.is_object()) else {
        return Adapted::Bad("MessageEvent has no `llm_message` object; skipped".into());
    };
    let content = match msg.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => {
            let extended = v.get("extended_content").and_then(Value::as_array);
            texts(items.iter().chain(extended.into_iter().flatten()))
        }
        _ => String::new(),
    };
    let source = match msg.get("role").and_then(Value::as_str) {
        Some("user") => "user",
        _ => "agent",
    };
    Adapted::Event(json!({"source": source, "action": "message", "args": {"content": content}}))
}

/// The call's id, or why the event is unusable without it.
fn call_id(v: &Value, kind: &str) -> Result<String, Adapted> {
    v.get("tool_call_id")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| Adapted::Bad(format!("{kind} has no string `tool_call_id`; skipped")))
}

/// An `ActionEvent` as a trajectory action with its call's metadata: the
/// model response (`llm_response_id`) holding its thought and arguments.
fn call(v: &Value) -> Adapted {
    let id = match call_id(v, "ActionEvent") {
        Ok(id) => id,
        Err(bad) => return bad,
    };
    let thought = texts(
        v.get("thought")
            .and_then(Value::as_array)
            .into_iter()
            .flatten(),
    );
    let arguments = v.pointer("/tool_call/arguments").cloned();
    let name = v.get("tool_name").cloned().unwrap_or(Value::Null);
    Adapted::Event(json!({
        "source": "agent",
        "action": "call",
        "args": v.get("action"),
        "tool_call_metadata": {
            "tool_call_id": id,
            "function_name": name,
            "model_response": {
                "id": v.get("llm_response_id"),
                "choices": [{"message": {
                    "content": thought,
                    "tool_calls": [{"id": id, "function": {"arguments": arguments}}],
                }}],
            },
        },
    }))
}

/// A tool's answer to call `tool_call_id` as a trajectory observation.
fn result(v: &Value, kind: &str, content: String) -> Adapted {
    match call_id(v, kind) {
        Ok(id) => Adapted::Event(json!({
            "source": "environment",
            "observation": kind,
            "content": content,
            "tool_call_metadata": {"tool_call_id": id},
        })),
        Err(bad) => bad,
    }
}

/// The `openhands_events` format's registration (`format_list.rs`).
pub const FORMAT: crate::format::Format = crate::format::Format {
    name: "openhands_events",
    sniff: Some((55, crate::sniff::openhands_events)),
    name_endings: &[],
    extensions: &[],
    product: Some("openhands-llm-summarizing"),
    compaction_by_index: true,
    read: |input| {
        // The event files are read from the directory the named file is in.
        input.one(|_, s, k| read(s, k))
    },
};
