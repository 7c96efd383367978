//! `lab replay --policy … --dump DIR` and `lab import --export OUT`: every
//! request each policy sent, its changes, and the messages it came from.

use crate::common::{lab, lab_ok};

use ctxlab::import::{import_file, ImportOptions, TranscriptFormat};
use ctxlab::message::Message;
use serde_json::{json, Value};
use std::path::Path;

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Replay the generated session under `policies` with `--dump`; the dump dir.
fn dumped(policies: &str, extra: &[&str]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.json");
    std::fs::write(
        &file,
        serde_json::to_string(&crate::common::tool_session(6, 1)).unwrap(),
    )
    .unwrap();
    let out = dir.path().join("dump");
    let mut args = vec!["replay", file.to_str().unwrap(), "--policy", policies];
    args.extend_from_slice(&["--dump", out.to_str().unwrap()]);
    args.extend_from_slice(extra);
    lab_ok(&args);
    let session = out.join("s.json");
    (dir, session)
}

#[test]
fn the_intact_run_changes_nothing_and_every_message_is_its_source() {
    let (_d, s) = dumped("none", &[]);
    let calls = lines(&s.join("none.jsonl"));
    assert_eq!(calls.len(), 7, "one line per model call");
    for (n, c) in calls.iter().enumerate() {
        assert_eq!(c["version"], "ctxlab.dump/1");
        assert_eq!(c["call"], n);
        assert_eq!(c["changes"], json!([]), "call {n}");
        let sources: Vec<Value> = (0..c["sources"].as_array().unwrap().len())
            .map(|i| json!(i))
            .collect();
        assert_eq!(c["sources"], Value::Array(sources), "call {n}");
    }
    let exported = lines(&s.join("messages.jsonl"));
    assert_eq!(exported.len(), crate::common::tool_session(6, 1).len());
    assert_eq!(
        exported[3]["message"],
        serde_json::to_value(&crate::common::tool_session(6, 1)[3]).unwrap()
    );
}

#[test]
fn a_replaced_result_is_a_change_with_its_sizes_and_placeholder() {
    let (_d, s) = dumped("course-main", &[]);
    let calls = lines(&s.join("course-main.jsonl"));
    let rewrites: Vec<&Value> = calls
        .iter()
        .flat_map(|c| c["changes"].as_array().unwrap())
        .filter(|ch| ch["change"] == "result_rewritten" && ch["tool_use_id"] == "toolu_0001")
        .collect();
    assert!(
        !rewrites.is_empty(),
        "the 60,000-char result is persisted and replaced"
    );
    let first = rewrites[0];
    assert_eq!(first["chars_before"], 60_000);
    let after = first["chars_after"].as_u64().unwrap();
    assert!(after < 60_000, "{first}");
    // The request carries exactly what the change says was written.
    let call = calls
        .iter()
        .find(|c| c["changes"].as_array().unwrap().contains(first))
        .unwrap();
    let request = call["request"]["messages"].to_string();
    if let Some(text) = first["text_after"].as_str() {
        let escaped = serde_json::to_string(text).unwrap();
        assert!(request.contains(escaped.trim_matches('"')), "{text}");
    }
    let events: usize = calls
        .iter()
        .map(|c| c["events"].as_array().unwrap().len())
        .sum();
    assert!(
        events > 0,
        "the policy's own events travel with the changes"
    );
}

#[test]
fn a_dumped_request_round_trips_through_the_importer() {
    for wire in ["anthropic", "openai"] {
        let (d, s) = dumped("course-main", &["--wire", wire]);
        let calls = lines(&s.join("course-main.jsonl"));
        let last = calls.last().unwrap();
        assert_eq!(last["wire"], wire);
        let file = d.path().join(format!("request-{wire}.json"));
        std::fs::write(&file, last["request"].to_string()).unwrap();
        let format = if wire == "openai" {
            TranscriptFormat::OpenAi
        } else {
            TranscriptFormat::Anthropic
        };
        let options = ImportOptions {
            strict: true,
            format: Some(format),
        };
        let back = import_file(&file, &options).unwrap();
        // What the policy sent, in the lab's shape: rebuilt from the anthropic dump.
        let (_d2, s2) = dumped("course-main", &[]);
        let sent: Vec<Message> = serde_json::from_value(
            lines(&s2.join("course-main.jsonl")).last().unwrap()["request"]["messages"].clone(),
        )
        .unwrap();
        assert_eq!(back.main, sent, "{wire}");
    }
}

#[test]
fn export_writes_every_message_with_its_line_and_validates() {
    let Some(dir) = crate::common::transcripts() else {
        return;
    };
    let file = dir.join("claude_code/claude-code-config-9246a0c1__socialaize.jsonl");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("export.jsonl");
    let said = lab_ok(&[
        "import",
        file.to_str().unwrap(),
        "--export",
        out.to_str().unwrap(),
    ]);
    assert!(said.starts_with("exported 1 session with "), "{said}");
    let exported = lines(&out);
    let session = import_file(&file, &ImportOptions::default()).unwrap();
    assert_eq!(exported.len(), session.main.len());
    let text = std::fs::read_to_string(&file).unwrap();
    let source: Vec<&str> = text.lines().collect();
    for e in exported.iter().step_by(7) {
        let line = e["line"].as_u64().expect("every message has its line") as usize;
        // The line a message names is a record of its role.
        let role = e["message"]["role"].as_str().unwrap();
        assert!(
            source[line - 1].contains(&format!("\"{role}\"")),
            "line {line}"
        );
    }
}

#[test]
fn a_dump_into_a_file_fails_with_the_path_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.json");
    std::fs::write(
        &file,
        serde_json::to_string(&crate::common::tool_session(6, 1)).unwrap(),
    )
    .unwrap();
    let blocker = dir.path().join("taken");
    std::fs::write(&blocker, "a file").unwrap();
    let (code, out, err) = lab(&[
        "replay",
        file.to_str().unwrap(),
        "--policy",
        "none",
        "--dump",
        blocker.to_str().unwrap(),
    ]);
    assert_eq!(code, 4, "{err}");
    assert!(out.is_empty(), "no table after a failed dump: {out}");
    assert!(err.contains("taken"), "{err}");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(left.len(), 2, "only the session and the blocking file");
}

#[test]
fn the_dump_carries_the_sessions_demands_as_lab_import_demands_lists_them() {
    use ctxlab::message::Block;
    let read = |id: &str| {
        Message::assistant(vec![Block::ToolUse {
            id: id.into(),
            name: "Read".into(),
            input: json!({"file_path": "/w/src/lib.rs"}).into(),
        }])
    };
    let body = "pub fn answer() -> u32 { 42 }\n".repeat(20);
    let messages = vec![
        Message::user_text("what does src/lib.rs return?"),
        read("toolu_a"),
        Message::tool_results(vec![("toolu_a".into(), body.clone())]),
        read("toolu_b"),
        Message::tool_results(vec![("toolu_b".into(), body)]),
        Message::assistant(vec![Block::Text {
            text: "It returns 42.".into(),
        }]),
    ];
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r.json");
    std::fs::write(&file, serde_json::to_string(&messages).unwrap()).unwrap();
    let out = dir.path().join("dump");
    lab_ok(&[
        "replay",
        file.to_str().unwrap(),
        "--policy",
        "none",
        "--dump",
        out.to_str().unwrap(),
    ]);
    let dumped = lines(&out.join("r.json").join("demands.json"));
    assert_eq!(dumped.len(), 1);
    assert_eq!(dumped[0]["session"], "r.json");
    let demands = dumped[0]["demands"].as_array().unwrap();
    assert!(
        demands
            .iter()
            .any(|d| d["kind"] == "reread" && d["at"] == 3 && d["source"] == 2),
        "{demands:?}"
    );
    // The same list `lab import --demands --format json` gives.
    let listed: Value = serde_json::from_str(&lab_ok(&[
        "import",
        file.to_str().unwrap(),
        "--demands",
        "--format",
        "json",
    ]))
    .unwrap();
    assert_eq!(listed["sessions"][0]["demands"], dumped[0]["demands"]);
}
