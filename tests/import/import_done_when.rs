//! The product-logs done-when, for the formats whose own test file lacks a
//! class (see the table in notes/import.md): counts pinned against a count
//! of the raw JSON written here, and each damage class (a truncated
//! document, a value of the wrong type, a missing id) reported at a place
//! with a line, an error (exit 3) under `--strict`, the pairs valid after
//! the repair.

use std::path::Path;

use crate::common::{LENIENT, STRICT};
use ctxlab::import::{
    import_reader, unpaired_ids, DiagnosticKind, ImportOptions, ImportedSession, TranscriptFormat,
};
use serde_json::{json, Value};

fn import(
    text: &str,
    format: TranscriptFormat,
    options: &ImportOptions,
) -> ctxlab::error::LabResult<ImportedSession> {
    import_reader(text.as_bytes(), Path::new("t.json"), format, options)
}

/// One line per element, so a diagnostic's line names its element.
fn lines(elements: &[Value]) -> String {
    let rows: Vec<String> = elements.iter().map(Value::to_string).collect();
    format!("[\n{}\n]\n", rows.join(",\n"))
}

/// A damaged file: reported (of a damage kind, at a line), an input error
/// under `--strict`, and valid pairs after the lenient repair.
fn damaged(text: &str, format: TranscriptFormat, what: &str) -> ImportedSession {
    let s = import(text, format, &LENIENT).unwrap();
    let damage: Vec<_> = s
        .diagnostics
        .iter()
        .filter(|d| d.kind.is_damage())
        .collect();
    assert!(!damage.is_empty(), "{what}: no damage reported");
    assert!(damage.iter().all(|d| d.line > 0), "{what}: {damage:?}");
    assert!(unpaired_ids(&s.main).is_empty(), "{what}");
    let e = import(text, format, &STRICT).unwrap_err();
    assert_eq!(e.exit_code(), 3, "{what}: {e}");
    s
}

/// Tool calls and results in OpenAI-shaped messages, counted from the JSON.
fn openai_counts(messages: &[Value]) -> (usize, usize) {
    let calls = messages
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .map(Vec::len)
        .sum();
    let results = messages.iter().filter(|m| m["role"] == "tool").count();
    (calls, results)
}

fn openai_messages() -> Vec<Value> {
    let call = |id: &str| json!({"id": id, "type": "function", "function": {"name": "bash", "arguments": "{\"cmd\": \"ls\"}"}});
    vec![
        json!({"role": "system", "content": "be brief"}),
        json!({"role": "user", "content": "list the files"}),
        json!({"role": "assistant", "content": null, "tool_calls": [call("c1"), call("c2")]}),
        json!({"role": "tool", "tool_call_id": "c1", "content": "a.txt"}),
        json!({"role": "tool", "tool_call_id": "c2", "content": "b.txt"}),
        json!({"role": "assistant", "content": "two files"}),
    ]
}

#[test]
fn openai_counts_and_damage() {
    let msgs = openai_messages();
    let s = import(&lines(&msgs), TranscriptFormat::OpenAi, &STRICT).unwrap();
    let sum = s.summary();
    assert_eq!(
        (sum.main_tool_uses, sum.main_tool_results),
        openai_counts(&msgs)
    );
    let non_system = msgs.iter().filter(|m| m["role"] != "system").count();
    // The two results are one user turn.
    assert_eq!(sum.main_messages, non_system - 1);
    // Truncated inside the last element.
    let text = lines(&msgs);
    let cut = &text[..text.len() - 20];
    let s = damaged(cut, TranscriptFormat::OpenAi, "openai cut");
    assert_eq!(s.diagnostics_of(DiagnosticKind::Truncated).len(), 1);
    // Wrong types: content a number.
    let mut wrong = msgs.clone();
    wrong[5]["content"] = json!(5);
    damaged(
        &lines(&wrong),
        TranscriptFormat::OpenAi,
        "openai wrong type",
    );
    // A missing id: a tool message without its tool_call_id.
    let mut missing = msgs.clone();
    missing[4].as_object_mut().unwrap().remove("tool_call_id");
    damaged(
        &lines(&missing),
        TranscriptFormat::OpenAi,
        "openai missing id",
    );
}

#[test]
fn trajectories_counts_and_damage() {
    let traj = |task: u64| json!({"task_id": task, "trial": 0, "traj": openai_messages()});
    let elements = [traj(1), traj(2)];
    let text = lines(&elements);
    let sessions = ctxlab::import::import_reader_sessions(
        text.as_bytes(),
        Path::new("t.json"),
        TranscriptFormat::Trajectories,
        &STRICT,
    )
    .unwrap();
    assert_eq!(sessions.len(), elements.len());
    for s in &sessions {
        let sum = s.summary();
        assert_eq!(
            (sum.main_tool_uses, sum.main_tool_results),
            openai_counts(&openai_messages())
        );
    }
    let read = |text: &str, options: &ImportOptions| {
        ctxlab::import::import_reader_sessions(
            text.as_bytes(),
            Path::new("t.json"),
            TranscriptFormat::Trajectories,
            options,
        )
    };
    // Truncated: the second trajectory cut; the first survives.
    let cut = &text[..text.len() - 30];
    let got = read(cut, &LENIENT).unwrap();
    let diagnosed: usize = got
        .iter()
        .map(|s| s.diagnostics_of(DiagnosticKind::Truncated).len())
        .sum();
    assert!(diagnosed >= 1, "{got:?}");
    assert!(read(cut, &STRICT).is_err());
    // Wrong types and a missing id inside one trajectory's messages.
    let mut bad = traj(3);
    bad["traj"][5]["content"] = json!({"not": "text"});
    bad["traj"][4]
        .as_object_mut()
        .unwrap()
        .remove("tool_call_id");
    let text = lines(&[traj(1), bad]);
    let got = read(&text, &LENIENT).unwrap();
    let damage: Vec<_> = got[1]
        .diagnostics
        .iter()
        .filter(|d| d.kind.is_damage())
        .collect();
    assert!(damage.len() >= 2, "{damage:?}");
    assert!(got.iter().all(|s| unpaired_ids(&s.main).is_empty()));
    assert_eq!(read(&text, &STRICT).unwrap_err().exit_code(), 3);
}

fn anthropic_messages() -> Vec<Value> {
    vec![
        json!({"role": "user", "content": "list the files"}),
        json!({"role": "assistant", "content": [
            {"type": "text", "text": "Listing."},
            {"type": "tool_use", "id": "t1", "name": "bash", "input": {"cmd": "ls"}},
            {"type": "tool_use", "id": "t2", "name": "bash", "input": {"cmd": "pwd"}}]}),
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "a.txt"},
            {"type": "tool_result", "tool_use_id": "t2", "content": "/w"}]}),
        json!({"role": "assistant", "content": [{"type": "text", "text": "done"}]}),
    ]
}

/// Blocks of `kind` in Anthropic-shaped messages, counted from the JSON.
fn blocks(messages: &[Value], kind: &str) -> usize {
    messages
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == kind)
        .count()
}

#[test]
fn anthropic_counts_and_damage() {
    let msgs = anthropic_messages();
    let body = |m: &[Value]| {
        let rows: Vec<String> = m.iter().map(Value::to_string).collect();
        format!(
            "{{\"model\": \"m\", \"messages\": [\n{}\n]}}\n",
            rows.join(",\n")
        )
    };
    let s = import(&body(&msgs), TranscriptFormat::Anthropic, &STRICT).unwrap();
    let sum = s.summary();
    assert_eq!(
        (sum.main_messages, sum.main_tool_uses, sum.main_tool_results),
        (
            msgs.len(),
            blocks(&msgs, "tool_use"),
            blocks(&msgs, "tool_result")
        )
    );
    let text = body(&msgs);
    let s = damaged(
        &text[..text.len() - 25],
        TranscriptFormat::Anthropic,
        "anthropic cut",
    );
    assert_eq!(s.diagnostics_of(DiagnosticKind::Truncated).len(), 1);
    let mut wrong = msgs.clone();
    wrong[3]["content"] = json!(7);
    damaged(
        &body(&wrong),
        TranscriptFormat::Anthropic,
        "anthropic wrong type",
    );
    let mut missing = msgs.clone();
    missing[2]["content"][1]
        .as_object_mut()
        .unwrap()
        .remove("tool_use_id");
    damaged(
        &body(&missing),
        TranscriptFormat::Anthropic,
        "anthropic missing id",
    );
}

#[test]
fn chat_json_counts_and_damage() {
    // Claude Code records as `logs/chat.json` holds them, chained by uuid.
    let msgs = anthropic_messages();
    let records: Vec<Value> = msgs
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let parent = if i == 0 {
                Value::Null
            } else {
                json!(format!("u{}", i - 1))
            };
            json!({"type": m["role"], "uuid": format!("u{i}"), "parentUuid": parent,
                   "sessionId": "s", "message": m})
        })
        .collect();
    let s = import(&lines(&records), TranscriptFormat::ChatJson, &STRICT).unwrap();
    let sum = s.summary();
    assert_eq!(
        (sum.main_messages, sum.main_tool_uses, sum.main_tool_results),
        (
            msgs.len(),
            blocks(&msgs, "tool_use"),
            blocks(&msgs, "tool_result")
        )
    );
    let mut wrong = records.clone();
    wrong[3]["message"]["content"] = json!(7);
    damaged(
        &lines(&wrong),
        TranscriptFormat::ChatJson,
        "chat.json wrong type",
    );
    let mut missing = records.clone();
    missing[2]["message"]["content"][0]
        .as_object_mut()
        .unwrap()
        .remove("tool_use_id");
    damaged(
        &lines(&missing),
        TranscriptFormat::ChatJson,
        "chat.json missing id",
    );
}

#[test]
fn roo_code_missing_ids_are_reported() {
    // Roo's history with a result whose tool_use_id is gone, and a call
    // with no id.
    let mut msgs: Vec<Value> = anthropic_messages()
        .into_iter()
        .enumerate()
        .map(|(i, mut m)| {
            m["ts"] = json!(i);
            m
        })
        .collect();
    msgs[2]["content"][0]
        .as_object_mut()
        .unwrap()
        .remove("tool_use_id");
    let s = damaged(
        &lines(&msgs),
        TranscriptFormat::RooCode,
        "roo missing result id",
    );
    // The call whose result lost its id is answered by the repair.
    assert_eq!(s.diagnostics_of(DiagnosticKind::DanglingToolUse).len(), 1);
    msgs[1]["content"][2].as_object_mut().unwrap().remove("id");
    damaged(
        &lines(&msgs),
        TranscriptFormat::RooCode,
        "roo missing call id",
    );
}

#[test]
fn openhands_missing_call_ids_are_reported() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/import/fixtures/openhands/trajectory.json");
    let mut events: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    // An action whose call metadata lost its id: its observation answers nothing.
    let action = events
        .iter()
        .position(|e| e.get("action").is_some() && e["tool_call_metadata"].is_object())
        .unwrap();
    events[action]["tool_call_metadata"]
        .as_object_mut()
        .unwrap()
        .remove("tool_call_id");
    damaged(
        &lines(&events),
        TranscriptFormat::OpenHands,
        "openhands missing id",
    );
}
