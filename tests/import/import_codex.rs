//! Codex CLI rollout logs: counts against a count of the raw lines, the
//! product's `compacted` record as a real compaction, its `token_count`
//! events as the product's own series, and each damage class with its
//! position. The rollout is synthetic, written here in the shape of
//! `codex-rs/protocol`'s `RolloutItem` (no licensed real rollout is in the
//! shared transcripts).

use std::path::Path;

use crate::common::{LENIENT, STRICT};
use ctxlab::import::{
    import_reader, unpaired_ids, DiagnosticKind, ImportOptions, ImportedSession, TranscriptFormat,
};
use ctxlab::message::Role;
use serde_json::{json, Value};

fn line(kind: &str, payload: Value) -> String {
    json!({"timestamp": "2025-10-29T00:59:38.317Z", "type": kind, "payload": payload}).to_string()
}

fn text(role: &str, kind: &str, t: &str) -> String {
    line(
        "response_item",
        json!({"type": "message", "role": role, "content": [{"type": kind, "text": t}]}),
    )
}

/// A session: meta, two user turns of `calls` shell calls each, a
/// compaction between them, token counts after each call.
fn rollout(calls: usize) -> Vec<String> {
    let mut out = vec![
        line(
            "session_meta",
            json!({"id": "s", "cwd": "/w", "cli_version": "0.46.0"}),
        ),
        text("developer", "input_text", "<permissions instructions>"),
        line("turn_context", json!({"cwd": "/w", "model": "gpt-5-codex"})),
    ];
    for turn in 0..2 {
        out.push(text("user", "input_text", &format!("task {turn}")));
        for c in 0..calls {
            let id = format!("call_{turn}_{c}");
            out.push(line("response_item", json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": "think"}], "encrypted_content": "x"})));
            out.push(line("response_item", json!({"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"ls\"]}", "call_id": id})));
            out.push(line(
                "response_item",
                json!({"type": "function_call_output", "call_id": id, "output": "a\nb\n"}),
            ));
            out.push(line("event_msg", json!({"type": "token_count", "info": {"last_token_usage": {"input_tokens": 1000 + c, "output_tokens": 20}}})));
        }
        out.push(text("assistant", "output_text", "done"));
        if turn == 0 {
            out.push(line(
                "compacted",
                json!({"message": "summary of turn 0", "replacement_history": []}),
            ));
        }
    }
    out
}

fn import(lines: &[String], options: &ImportOptions) -> ctxlab::error::LabResult<ImportedSession> {
    let text = lines.join("\n") + "\n";
    import_reader(
        text.as_bytes(),
        Path::new("rollout.jsonl"),
        TranscriptFormat::CodexRollout,
        options,
    )
}

/// Counted from the raw lines: (calls, outputs, compactions, token counts).
fn count(lines: &[String]) -> (usize, usize, usize, usize) {
    let kinds: Vec<(String, String)> = lines
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|v| {
            let t = v["type"].as_str().unwrap_or_default().to_string();
            let p = v["payload"]["type"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            (t, p)
        })
        .collect();
    let has = |t: &str, p: &str| {
        kinds
            .iter()
            .filter(|k| k.0 == t && (p.is_empty() || k.1 == p))
            .count()
    };
    (
        has("response_item", "function_call"),
        has("response_item", "function_call_output"),
        has("compacted", ""),
        has("event_msg", "token_count"),
    )
}

#[test]
fn items_become_messages_calls_and_results() {
    let lines = rollout(3);
    let s = import(&lines, &STRICT).unwrap();
    let (calls, outputs, compactions, tokens) = count(&lines);
    assert_eq!((calls, outputs, compactions, tokens), (6, 6, 1, 6));
    let sum = s.summary();
    assert_eq!(sum.main_tool_uses, calls);
    assert_eq!(sum.main_tool_results, outputs);
    assert_eq!(s.real_compactions.len(), compactions);
    assert_eq!(s.recorded_tokens.len(), tokens);
    assert!(unpaired_ids(&s.main).is_empty());
    assert_eq!(s.system, ["<permissions instructions>"]);
    // Per turn: the task, then (call, output) per call each its own model
    // call, then the final answer; the summary between the turns.
    assert_eq!(s.main.len(), 2 * (1 + 2 * 3 + 1) + 1);
    let at = s.real_compactions[0];
    assert_eq!(at, 8);
    assert_eq!(s.main[at].text(), "summary of turn 0");
    assert_eq!(s.main[at].role, Role::User);
    assert_eq!(
        s.main[1].blocks().len(),
        2,
        "reasoning and call join one reply"
    );
    assert_eq!(s.recorded_tokens[2].sent, 1002);
    assert_eq!(s.recorded_tokens[0].after_messages, 3);
    assert!(s.diagnostics.is_empty(), "{:?}", s.diagnostics);
}

#[test]
fn the_format_is_detected_from_content() {
    let lines = rollout(1);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("rollout-2025.jsonl");
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    let s = ctxlab::import::import_file(&p, &LENIENT).unwrap();
    assert_eq!(s.format, TranscriptFormat::CodexRollout);
}

#[test]
fn a_cut_last_line_keeps_what_precedes_it() {
    let mut lines = rollout(2);
    let last = lines.pop().unwrap();
    lines.push(last[..last.len() / 2].to_string());
    let text = lines.join("\n");
    let s = import_reader(
        text.as_bytes(),
        Path::new("r.jsonl"),
        TranscriptFormat::CodexRollout,
        &LENIENT,
    )
    .unwrap();
    let d = s.diagnostics_of(DiagnosticKind::Truncated);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].line, lines.len());
    let e = import_reader(
        text.as_bytes(),
        Path::new("r.jsonl"),
        TranscriptFormat::CodexRollout,
        &STRICT,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains(&format!("r.jsonl:{}:", lines.len())), "{e}");
    // Invalid JSON before the last line is an error at its line.
    let mut mid = rollout(2);
    mid[4] = "{not json".into();
    let e = import(&mid, &LENIENT).unwrap_err();
    assert_eq!(e.exit_code(), 3);
    assert!(e.to_string().contains("rollout.jsonl:5:"), "{e}");
}

#[test]
fn wrong_types_and_unknown_kinds_are_reported_with_their_line() {
    let mut lines = rollout(1);
    lines.insert(
        3,
        line(
            "response_item",
            json!({"type": "function_call", "name": "shell", "arguments": "{}"}),
        ),
    );
    lines.insert(
        4,
        r#"{"type":"response_item","payload":"text"}"#.to_string(),
    );
    lines.insert(5, line("mystery", json!({})));
    let s = import(&lines, &LENIENT).unwrap();
    let invalid = s.diagnostics_of(DiagnosticKind::InvalidRecord);
    assert_eq!(invalid.iter().map(|d| d.line).collect::<Vec<_>>(), [4, 5]);
    assert!(invalid[0].message.contains("no call_id"));
    assert_eq!(
        s.diagnostics_of(DiagnosticKind::UnknownRecordType)[0].line,
        6
    );
    assert!(import(&lines, &STRICT).is_err());
}

#[test]
fn an_output_with_a_missing_call_is_removed_and_reported() {
    let mut lines = rollout(1);
    lines.retain(|l| !l.contains(r#""type":"function_call"}"#));
    let s = import(&lines, &LENIENT).unwrap();
    assert_eq!(s.diagnostics_of(DiagnosticKind::OrphanToolResult).len(), 2);
    assert!(unpaired_ids(&s.main).is_empty());
    let e = import(&lines, &STRICT).unwrap_err().to_string();
    assert!(e.contains("orphan_tool_result"), "{e}");
}

#[test]
fn the_compaction_is_set_beside_the_codex_cli_port() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("rollout.jsonl");
    std::fs::write(&p, rollout(3).join("\n") + "\n").unwrap();
    let s = ctxlab::import::import_file(&p, &STRICT).unwrap();
    assert!(ctxlab::import::opens_product_compaction(&s, 8));
    // The summary goes for a replay; the turns around it stay.
    assert_eq!(ctxlab::import::artefacts::product_artefacts(&s), [8]);
    let c = crate::common::the_product_compaction(&p, "codex-cli");
    assert_eq!(c.policy.as_deref(), Some("codex-cli"));
    // Four model calls before it (3 calls and the answer); the first token
    // count after it is the second turn's first call.
    assert_eq!((c.call, c.recorded_after), (4, Some(1000)));
}
