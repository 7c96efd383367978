//! Importers on small hand-written records: every damage kind, with its position.

use crate::common;
use common::{jsonl, LENIENT, STRICT};

use std::path::Path;

use ctxlab::error::LabError;
use ctxlab::import::{
    detect_format, import_str, unpaired_ids, DiagnosticKind, ImportedSession, TranscriptFormat,
    MISSING_RESULT,
};
use ctxlab::message::{Block, Content, Role};
use serde_json::{json, Value};

fn user(uuid: &str, parent: Option<&str>, content: Value) -> Value {
    json!({"type": "user", "uuid": uuid, "parentUuid": parent, "isSidechain": false,
           "sessionId": "s", "message": {"role": "user", "content": content}})
}

fn assistant(uuid: &str, parent: &str, id: &str, content: Value) -> Value {
    json!({"type": "assistant", "uuid": uuid, "parentUuid": parent, "isSidechain": false,
           "sessionId": "s", "message": {"role": "assistant", "id": id, "content": content}})
}

fn tool_use(id: &str) -> Value {
    json!({"type": "tool_use", "id": id, "name": "Bash", "input": {"command": "true"}})
}

fn tool_result(id: &str, content: Value) -> Value {
    json!({"type": "tool_result", "tool_use_id": id, "content": content})
}

/// A well-formed three-message conversation, one record per line.
fn good() -> Vec<Value> {
    vec![
        user("u1", None, json!("hello")),
        assistant("a1", "u1", "m1", json!([tool_use("t1")])),
        user("u2", Some("a1"), json!([tool_result("t1", json!("ok"))])),
        assistant("a2", "u2", "m2", json!([{"type": "text", "text": "done"}])),
    ]
}

fn lenient(text: &str, format: TranscriptFormat) -> ImportedSession {
    import_str(text, Path::new("t.jsonl"), format, &LENIENT).unwrap()
}

fn input_error(r: Result<ImportedSession, LabError>) -> (usize, usize, String) {
    match r {
        Err(LabError::Input {
            file,
            line,
            column,
            message,
            ..
        }) => {
            assert_eq!(file, Path::new("t.jsonl"));
            (line, column, message)
        }
        Err(other) => panic!("expected LabError::Input, got {other}"),
        Ok(s) => panic!(
            "expected LabError::Input, got a session of {}",
            s.main.len()
        ),
    }
}

#[test]
fn a_good_log_imports_cleanly() {
    let s = lenient(&jsonl(&good()), TranscriptFormat::ClaudeJsonl);
    assert_eq!(s.main.len(), 4);
    assert_eq!(s.main_lines, vec![1, 2, 3, 4]);
    assert!(s.diagnostics.is_empty(), "{:?}", s.diagnostics);
    assert!(unpaired_ids(&s.main).is_empty());
    assert_eq!(s.stats.tool_uses, 1);
}

#[test]
fn a_cut_last_line_is_a_diagnostic_or_a_strict_error() {
    let mut text = jsonl(&good());
    let last = good()[3].to_string();
    text = text.replace(&format!("{last}\n"), &last[..last.len() / 2]);
    let s = lenient(&text, TranscriptFormat::ClaudeJsonl);
    let cut = s.diagnostics_of(DiagnosticKind::Truncated);
    assert_eq!(cut.len(), 1);
    assert_eq!(cut[0].line, 4);
    assert!(cut[0].column > 0);
    assert_eq!(s.main.len(), 3, "records before the cut are kept");
    let (line, column, message) = input_error(import_str(
        &text,
        Path::new("t.jsonl"),
        TranscriptFormat::ClaudeJsonl,
        &STRICT,
    ));
    assert_eq!(line, 4);
    assert!(column > 0);
    assert!(message.contains("truncated"), "{message}");
}

#[test]
fn invalid_json_mid_file_is_an_error_with_line_and_column() {
    let mut lines: Vec<String> = good().iter().map(Value::to_string).collect();
    lines[1] = r#"{"type": "assistant", "uuid": x}"#.to_string();
    let text = lines.join("\n") + "\n";
    let (line, column, message) = input_error(import_str(
        &text,
        Path::new("t.jsonl"),
        TranscriptFormat::ClaudeJsonl,
        &LENIENT,
    ));
    assert_eq!((line, column), (2, 31));
    assert!(message.contains("invalid JSON"), "{message}");
    // Display carries file:line:column for the CLI.
    let e = import_str(
        &text,
        Path::new("t.jsonl"),
        TranscriptFormat::ClaudeJsonl,
        &LENIENT,
    )
    .unwrap_err();
    assert!(e.to_string().contains("t.jsonl:2:31"), "{e}");
}

#[test]
fn a_dangling_tool_use_gets_a_flagged_synthetic_result() {
    let mut recs = good();
    recs.truncate(2); // the log ends after the call
    let s = lenient(&jsonl(&recs), TranscriptFormat::ClaudeJsonl);
    let d = s.diagnostics_of(DiagnosticKind::DanglingToolUse);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].line, 2);
    assert!(d[0].message.contains("t1"));
    assert_eq!(s.main.len(), 3);
    assert_eq!(s.main_lines[2], 0, "synthesized, no source line");
    assert!(matches!(&s.main[2].blocks()[0],
        Block::ToolResult { tool_use_id, content } if tool_use_id == "t1" && content == MISSING_RESULT));
    assert!(unpaired_ids(&s.main).is_empty());
    let (line, ..) = input_error(import_str(
        &jsonl(&recs),
        Path::new("t.jsonl"),
        TranscriptFormat::ClaudeJsonl,
        &STRICT,
    ));
    assert_eq!(line, 2);
}

#[test]
fn a_dangling_call_before_a_user_text_is_answered_in_that_message() {
    let recs = vec![
        user("u1", None, json!("hello")),
        assistant("a1", "u1", "m1", json!([tool_use("t1")])),
        user("u2", Some("a1"), json!("[Request interrupted by user]")),
    ];
    let s = lenient(&jsonl(&recs), TranscriptFormat::ClaudeJsonl);
    assert_eq!(s.main.len(), 3);
    let blocks = s.main[2].blocks();
    assert!(
        matches!(&blocks[0], Block::ToolResult { .. }),
        "results first"
    );
    assert!(
        matches!(&blocks[1], Block::Text { .. }),
        "the user's text kept"
    );
    assert!(unpaired_ids(&s.main).is_empty());
}

#[test]
fn an_orphan_tool_result_is_removed_and_reported() {
    let recs = vec![
        user("u1", None, json!("hello")),
        assistant("a1", "u1", "m1", json!([{"type": "text", "text": "hi"}])),
        user("u2", Some("a1"), json!([tool_result("nope", json!("?"))])),
    ];
    let s = lenient(&jsonl(&recs), TranscriptFormat::ClaudeJsonl);
    let d = s.diagnostics_of(DiagnosticKind::OrphanToolResult);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].line, 3);
    assert_eq!(s.main.len(), 2, "the emptied message is gone");
}

#[test]
fn unknown_record_types_are_counted_and_reported() {
    let mut recs = good();
    recs.insert(
        1,
        json!({"type": "hologram", "uuid": "h1", "parentUuid": "u1"}),
    );
    // Re-parent a1 onto the unknown record: the chain passes through it.
    recs[2]["parentUuid"] = json!("h1");
    let s = lenient(&jsonl(&recs), TranscriptFormat::ClaudeJsonl);
    let d = s.diagnostics_of(DiagnosticKind::UnknownRecordType);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].line, 2);
    assert_eq!(s.skipped.get("hologram"), Some(&1));
    assert_eq!(s.main.len(), 4, "the chain walks through it");
    let (line, ..) = input_error(import_str(
        &jsonl(&recs),
        Path::new("t.jsonl"),
        TranscriptFormat::ClaudeJsonl,
        &STRICT,
    ));
    assert_eq!(line, 2);
}

#[test]
fn known_non_message_records_are_counted_not_reported() {
    let mut recs = good();
    recs.insert(
        0,
        json!({"type": "summary", "summary": "title", "leafUuid": "a2"}),
    );
    recs.insert(
        1,
        json!({"type": "file-history-snapshot", "messageId": "x"}),
    );
    recs.push(json!({"type": "progress", "uuid": "p1", "parentUuid": "a2"}));
    let s = lenient(&jsonl(&recs), TranscriptFormat::ClaudeJsonl);
    assert!(s.diagnostics.is_empty(), "{:?}", s.diagnostics);
    assert_eq!(s.skipped.len(), 3);
    assert!(
        s.real_compactions.is_empty(),
        "a title summary is not a compaction"
    );
    assert_eq!(s.main.len(), 4);
}

#[test]
fn comment_lines_are_skipped_explicitly() {
    let text = format!("// source: somewhere\n  // another\n\n{}", jsonl(&good()));
    let s = lenient(&text, TranscriptFormat::ClaudeJsonl);
    assert_eq!(s.stats.comment_lines, 2);
    assert_eq!(s.main_lines, vec![4, 5, 6, 7], "lines count the comments");
    assert!(s.diagnostics.is_empty());
}

#[test]
fn records_of_one_api_message_merge_and_blocks_keep_their_kinds() {
    let recs = vec![
        user("u1", None, json!("hello")),
        assistant(
            "a1",
            "u1",
            "m1",
            json!([{"type": "thinking", "thinking": "hmm", "signature": "s"}]),
        ),
        assistant("a2", "a1", "m1", json!([tool_use("t1")])),
        assistant("a3", "a2", "m1", json!([tool_use("t2")])),
        user(
            "u2",
            Some("a3"),
            json!([tool_result(
                "t1",
                json!([
            {"type": "text", "text": "line one"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
            {"type": "text", "text": "line two"}])
            )]),
        ),
        user("u3", Some("u2"), json!([tool_result("t2", json!("two"))])),
    ];
    let s = lenient(&jsonl(&recs), TranscriptFormat::ClaudeJsonl);
    assert_eq!(s.main.len(), 3, "{:#?}", s.main);
    let a = s.main[1].blocks();
    assert!(matches!(a[0], Block::Thinking { .. }));
    assert_eq!(s.main[1].tool_use_ids(), vec!["t1", "t2"]);
    let u = s.main[2].blocks();
    assert!(matches!(&u[0], Block::ToolResult { content, .. } if content == "line one\nline two"));
    assert!(matches!(&u[1], Block::Image { source } if source == "image/png"));
    assert_eq!(s.main[2].tool_result_ids(), vec!["t1", "t2"]);
    assert!(unpaired_ids(&s.main).is_empty());
    assert!(s.diagnostics.is_empty(), "{:?}", s.diagnostics);
}

#[test]
fn unknown_blocks_become_placeholders_with_a_diagnostic() {
    let recs = vec![
        user("u1", None, json!([{"type": "document", "source": {}}])),
        assistant("a1", "u1", "m1", json!("ok")),
    ];
    let s = lenient(&jsonl(&recs), TranscriptFormat::ClaudeJsonl);
    let d = s.diagnostics_of(DiagnosticKind::UnknownBlockType);
    assert_eq!((d.len(), d[0].line), (1, 1));
    assert!(s.main[0].text().contains("unsupported block: document"));
}

#[test]
fn sidechains_are_kept_apart() {
    let mut recs = good();
    let mut side1 = user("s1", None, json!("sub-agent task"));
    side1["isSidechain"] = json!(true);
    let mut side2 = assistant("s2", "s1", "sm1", json!("sub-agent answer"));
    side2["isSidechain"] = json!(true);
    recs.insert(2, side1);
    recs.insert(3, side2);
    let s = lenient(&jsonl(&recs), TranscriptFormat::ClaudeJsonl);
    assert_eq!(s.main.len(), 4);
    assert_eq!(s.sidechains.len(), 1);
    assert_eq!(s.sidechains[0].len(), 2);
}

#[test]
fn an_unreachable_branch_is_detached_with_a_diagnostic() {
    let mut recs = vec![
        user("o1", None, json!("an earlier conversation")),
        assistant("o2", "o1", "om", json!("reply")),
    ];
    recs.extend(good());
    let s = lenient(&jsonl(&recs), TranscriptFormat::ClaudeJsonl);
    assert_eq!(s.main.len(), 4);
    assert_eq!(s.detached.len(), 1);
    let d = s.diagnostics_of(DiagnosticKind::DetachedChain);
    assert_eq!(d[0].line, 1);
    // Informational: strict accepts it.
    import_str(
        &jsonl(&recs),
        Path::new("t.jsonl"),
        TranscriptFormat::ClaudeJsonl,
        &STRICT,
    )
    .unwrap();
}

#[test]
fn a_compact_summary_root_continues_the_session_it_compacted() {
    let mut recs = good();
    let mut summary = user(
        "c1",
        None,
        json!(
            "This session is being continued from a previous conversation that ran out of context."
        ),
    );
    summary["isCompactSummary"] = json!(true);
    recs.push(summary);
    recs.push(assistant("c2", "c1", "m9", json!("continuing")));
    let s = lenient(&jsonl(&recs), TranscriptFormat::ClaudeJsonl);
    assert_eq!(s.main.len(), 6, "pre-compaction history stays in main");
    assert_eq!(s.real_compactions, vec![4]);
    assert!(s.detached.is_empty());
}

#[test]
fn a_continuation_text_alone_marks_a_compaction() {
    let mut recs = good();
    recs.push(user(
        "c1",
        Some("a2"),
        json!([{"type": "text", "text": "This session is being continued from a previous conversation."}]),
    ));
    let s = lenient(&jsonl(&recs), TranscriptFormat::ClaudeJsonl);
    assert_eq!(s.real_compactions, vec![4]);
}

#[test]
fn a_compact_boundary_links_to_its_logical_parent() {
    let mut recs = good();
    recs.push(
        json!({"type": "system", "subtype": "compact_boundary", "uuid": "b1",
                     "parentUuid": null, "logicalParentUuid": "a2", "isSidechain": false}),
    );
    recs.push(user(
        "c1",
        Some("b1"),
        json!("summary of the conversation so far"),
    ));
    recs.push(assistant("c2", "c1", "m9", json!("continuing")));
    let s = lenient(&jsonl(&recs), TranscriptFormat::ClaudeJsonl);
    assert_eq!(s.main.len(), 6);
    assert_eq!(s.real_compactions, vec![4]);
    assert_eq!(s.skipped.get("system"), Some(&1));
}

fn pretty_array(records: &[Value]) -> String {
    serde_json::to_string_pretty(&Value::Array(records.to_vec())).unwrap()
}

#[test]
fn chat_json_streams_elements_with_their_start_lines() {
    let text = pretty_array(&good());
    let s = import_str(
        &text,
        Path::new("t.jsonl"),
        TranscriptFormat::ChatJson,
        &LENIENT,
    )
    .unwrap();
    assert_eq!(s.main.len(), 4);
    for &line in &s.main_lines {
        let first = text.lines().nth(line - 1).unwrap().trim();
        assert_eq!(first, "{", "line {line} starts an element");
    }
    assert_eq!(s.main_lines[0], 2);
}

#[test]
fn a_truncated_chat_json_keeps_what_precedes_the_cut() {
    let text = pretty_array(&good());
    let cut = &text[..text.len() - 40];
    let s = import_str(
        cut,
        Path::new("t.jsonl"),
        TranscriptFormat::ChatJson,
        &LENIENT,
    )
    .unwrap();
    let d = s.diagnostics_of(DiagnosticKind::Truncated);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].line, cut.lines().count());
    assert_eq!(s.main.len(), 3);
    let (line, ..) = input_error(import_str(
        cut,
        Path::new("t.jsonl"),
        TranscriptFormat::ChatJson,
        &STRICT,
    ));
    assert_eq!(line, cut.lines().count());
}

#[test]
fn invalid_json_in_a_chat_json_is_an_error_with_position() {
    let text = pretty_array(&good()).replacen("\"uuid\": \"a1\"", "\"uuid\": a1", 1);
    let line = text
        .lines()
        .position(|l| l.contains("\"uuid\": a1"))
        .unwrap()
        + 1;
    let (l, c, _) = input_error(import_str(
        &text,
        Path::new("t.jsonl"),
        TranscriptFormat::ChatJson,
        &LENIENT,
    ));
    assert_eq!(l, line);
    assert_eq!(
        c,
        text.lines().nth(line - 1).unwrap().find("a1").unwrap() + 1
    );
}

#[test]
fn a_chat_json_that_is_not_an_array_is_refused() {
    let (l, ..) = input_error(import_str(
        "{\"a\": 1}",
        Path::new("t.jsonl"),
        TranscriptFormat::ChatJson,
        &LENIENT,
    ));
    assert_eq!(l, 1);
    let (l, ..) = input_error(import_str(
        "[1,2] x",
        Path::new("t.jsonl"),
        TranscriptFormat::ChatJson,
        &LENIENT,
    ));
    assert_eq!(l, 1);
}

#[test]
fn anthropic_requests_with_and_without_the_envelope() {
    let msgs = json!([
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [tool_use("t1")]},
        {"role": "user", "content": [tool_result("t1", json!("ok"))]},
    ]);
    let bare = lenient(&msgs.to_string(), TranscriptFormat::Anthropic);
    assert_eq!(bare.main.len(), 3);
    let wrapped = json!({"model": "m", "system": [{"type": "text", "text": "be brief"}],
                         "max_tokens": 10, "messages": msgs});
    let s = lenient(
        &serde_json::to_string_pretty(&wrapped).unwrap(),
        TranscriptFormat::Anthropic,
    );
    assert_eq!(s.main, bare.main);
    assert_eq!(s.system, vec!["be brief".to_string()]);
    assert!(unpaired_ids(&s.main).is_empty());
}

#[test]
fn anthropic_unknown_roles_are_reported() {
    let msgs = json!([{"role": "user", "content": "hi"}, {"role": "narrator", "content": "x"}]);
    let s = lenient(
        &serde_json::to_string_pretty(&msgs).unwrap(),
        TranscriptFormat::Anthropic,
    );
    let d = s.diagnostics_of(DiagnosticKind::UnknownRole);
    assert_eq!(
        (d.len(), d[0].line),
        (1, 6),
        "`[`, then 4 lines of the first element"
    );
    assert_eq!(s.skipped.get("role:narrator"), Some(&1));
}

#[test]
fn openai_tool_calls_become_tool_use_and_results() {
    let history = json!([
        {"role": "system", "content": "sys"},
        {"role": "user", "content": [{"type": "text", "text": "fix it"}]},
        {"role": "assistant", "content": "looking", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"cmd\": \"ls\"}"}},
            {"id": "c2", "type": "function", "function": {"name": "bash", "arguments": "not json"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "a b"},
        {"role": "tool", "tool_call_ids": ["c2"], "content": [{"type": "text", "text": "x"}]},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "c3", "type": "function", "function": {"name": "submit", "arguments": "{}"}}]},
    ]);
    let traj = json!({"trajectory": [{"huge": "ignored"}], "history": history, "info": {}});
    let s = lenient(
        &serde_json::to_string_pretty(&traj).unwrap(),
        TranscriptFormat::OpenAi,
    );
    assert_eq!(s.system.len(), 1);
    assert_eq!(s.main.len(), 5, "{:#?}", s.main);
    assert_eq!(s.main[1].role, Role::Assistant);
    assert_eq!(s.main[1].tool_use_ids(), vec!["c1", "c2"]);
    assert!(matches!(&s.main[1].blocks()[1], Block::ToolUse { input, .. } if input["cmd"] == "ls"));
    assert_eq!(s.main[2].tool_result_ids(), vec!["c1", "c2"]);
    let bad = s.diagnostics_of(DiagnosticKind::BadToolArguments);
    assert_eq!(bad.len(), 1);
    // The last call has no result: repaired.
    assert_eq!(s.diagnostics_of(DiagnosticKind::DanglingToolUse).len(), 1);
    assert!(matches!(s.main[4].content, Content::Blocks(_)));
    assert!(unpaired_ids(&s.main).is_empty());
    assert_eq!((s.stats.tool_uses, s.stats.tool_results), (3, 2));
}

#[test]
fn formats_are_detected_by_extension_then_content() {
    assert_eq!(
        detect_format(Path::new("x.jsonl"), b""),
        TranscriptFormat::ClaudeJsonl
    );
    assert_eq!(
        detect_format(Path::new("x.traj"), b"{}"),
        TranscriptFormat::OpenAi
    );
    assert_eq!(
        detect_format(
            Path::new("chat.json"),
            b"[\n {\"type\": \"summary\", \"leafUuid\": \"x\"}"
        ),
        TranscriptFormat::ChatJson
    );
    assert_eq!(
        detect_format(
            Path::new("r.json"),
            br#"[{"role": "tool", "tool_call_id": "c"}]"#
        ),
        TranscriptFormat::OpenAi
    );
    assert_eq!(
        detect_format(
            Path::new("r.json"),
            br#"{"messages": [{"role": "user", "content": "hi"}]}"#
        ),
        TranscriptFormat::Anthropic
    );
    assert_eq!(
        TranscriptFormat::from_name("chat_json").unwrap(),
        TranscriptFormat::ChatJson
    );
    assert!(TranscriptFormat::from_name("yaml").is_err());
}

#[test]
fn import_file_reads_and_detects_from_disk() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    std::fs::write(&p, jsonl(&good())).unwrap();
    let s = ctxlab::import::import_file(&p, &LENIENT).unwrap();
    assert_eq!((s.format, s.main.len()), (TranscriptFormat::ClaudeJsonl, 4));
    let missing = ctxlab::import::import_file(&dir.path().join("nope.json"), &LENIENT);
    assert!(matches!(missing, Err(LabError::Io { .. })));
}

#[test]
fn the_array_scanner_refuses_what_json_refuses() {
    for (text, line, col) in [
        ("[{\"type\": \"summary\"},]", 1, 22),
        ("[{\"type\": \"summary\"} {}]", 1, 22),
        ("[{\"type\": \"summary\"}] x", 1, 23),
        ("\n\n  [{\"type\": ]", 3, 13),
        ("{\"messages\": 5}", 1, 14),
        ("{\"messages\" [] }", 1, 13),
        ("{3: []}", 1, 2),
        ("tru", 1, 1),
    ] {
        let fmt = if text.contains("messages") || text.starts_with("{3") {
            TranscriptFormat::Anthropic
        } else {
            TranscriptFormat::ChatJson
        };
        let (l, c, m) = input_error(import_str(text, Path::new("t.jsonl"), fmt, &LENIENT));
        assert_eq!((l, c), (line, col), "{text:?}: {m}");
    }
}

#[test]
fn the_array_scanner_handles_brackets_and_escapes_inside_strings() {
    let tricky = "a \"quoted\" ] } [ { \\ back\\slash\n new line ✓";
    let doc = json!({
        "skip": {"x": [tricky, {"y": "]]]}}}"}], "z": "\\\""},
        "system": tricky,
        "messages": [{"role": "user", "content": tricky}, {"role": "assistant", "content": "]"}],
        "after": [1, 2, {"k": "}"}]
    });
    for text in [doc.to_string(), serde_json::to_string_pretty(&doc).unwrap()] {
        let s = lenient(&text, TranscriptFormat::Anthropic);
        assert_eq!(s.main.len(), 2);
        assert_eq!(s.main[0].text(), tricky);
        assert_eq!(s.main[1].text(), "]");
        assert_eq!(s.system, vec![tricky.to_string()]);
    }
}

#[test]
fn empty_input_is_no_messages_not_a_cut_file() {
    for (text, fmt) in [
        ("  \n", TranscriptFormat::ChatJson),
        ("", TranscriptFormat::Anthropic),
        ("\n\n", TranscriptFormat::OpenAi),
        ("[]", TranscriptFormat::OpenAi),
        (" [ ] ", TranscriptFormat::ChatJson),
        ("{\"messages\": []}", TranscriptFormat::Anthropic),
        ("", TranscriptFormat::ClaudeJsonl),
        ("\n   \n\n", TranscriptFormat::ClaudeJsonl),
    ] {
        let s = lenient(text, fmt);
        assert!(s.diagnostics.is_empty(), "{text:?}: {:?}", s.diagnostics);
        assert!(s.main.is_empty());
        let e = s.require_messages().unwrap_err();
        assert_eq!(e.exit_code(), 3);
        assert!(
            e.to_string().contains("no messages in t.jsonl"),
            "{text:?}: {e}"
        );
    }
    // A file cut before its first message says both.
    let s = lenient("[{\"type\": \"us", TranscriptFormat::ChatJson);
    let e = s.require_messages().unwrap_err().to_string();
    assert!(e.contains("no messages") && e.contains("cut"), "{e}");
    assert!(lenient(&jsonl(&good()), TranscriptFormat::ClaudeJsonl)
        .require_messages()
        .is_ok());
}

#[test]
fn a_byte_order_mark_is_skipped() {
    let bom = "\u{feff}";
    let s = lenient(
        &format!("{bom}{}", jsonl(&good())),
        TranscriptFormat::ClaudeJsonl,
    );
    assert_eq!((s.main.len(), s.diagnostics.len()), (4, 0));
    let s = lenient(
        &format!("{bom}{}", pretty_array(&good())),
        TranscriptFormat::ChatJson,
    );
    assert_eq!((s.main.len(), s.diagnostics.len()), (4, 0));
}

#[test]
fn legacy_openai_function_calls_pair_up() {
    let msgs = json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": null, "function_call": {"name": "ls", "arguments": "{\"p\": 1}"}},
        {"role": "function", "name": "ls", "content": "a b"},
        {"role": "assistant", "content": "ok"},
    ]);
    let s = lenient(&msgs.to_string(), TranscriptFormat::OpenAi);
    assert_eq!(s.main.len(), 4);
    assert_eq!(s.main[1].tool_use_ids(), vec!["function-call-line-1"]);
    assert_eq!(s.main[2].tool_result_ids(), vec!["function-call-line-1"]);
    assert!(unpaired_ids(&s.main).is_empty());
    assert!(s.diagnostics.is_empty(), "{:?}", s.diagnostics);
}

#[test]
fn summaries_render_in_every_format() {
    let s = lenient(&jsonl(&good()), TranscriptFormat::ClaudeJsonl);
    let rows = vec![("t.jsonl".to_string(), s.summary())];
    let table = ctxlab::import::render_summaries(&rows, ctxlab::render::Format::Table);
    assert!(
        table.contains("claude_jsonl") && table.contains("t.jsonl"),
        "{table}"
    );
    let md = ctxlab::import::render_summaries(&rows, ctxlab::render::Format::Markdown);
    assert!(md.starts_with("| file"), "{md}");
    let json: Value = serde_json::from_str(&ctxlab::import::render_summaries(
        &rows,
        ctxlab::render::Format::Json,
    ))
    .unwrap();
    assert_eq!(json[0]["summary"]["main_messages"], 4);
}

#[test]
fn a_hostile_file_name_neither_splits_a_cell_nor_reaches_the_terminal() {
    let s = lenient(&jsonl(&good()), TranscriptFormat::ClaudeJsonl);
    let rows = vec![("a|b\u{1b}[2Jc\n.jsonl".to_string(), s.summary())];
    let md = ctxlab::import::render_summaries(&rows, ctxlab::render::Format::Markdown);
    let row = md.lines().nth(2).expect("a data row");
    assert!(row.starts_with("| a\\|b\\u{1b}[2Jc\\u{a}.jsonl |"), "{md}");
    assert_eq!(
        row.matches(" | ").count() + 2,
        md.lines().next().unwrap().matches(" | ").count() + 2,
        "as many cells as the header: {md}"
    );
    let table = ctxlab::import::render_summaries(&rows, ctxlab::render::Format::Table);
    assert!(!table.contains('\u{1b}'), "{table}");
}
