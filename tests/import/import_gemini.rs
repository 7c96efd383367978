//! Gemini CLI chat recordings: the fixtures written by the product's own
//! recorder (`tests/import/fixtures/gemini_cli/`, synthetic sessions driven
//! through `@google/gemini-cli-core`'s `ChatRecordingService`), counted by
//! hand from their generators; the compression checkpoint as a real
//! compaction set beside the `gemini-cli` port; each damage class with its
//! position; and no panic on any cut or any bytes.

use std::path::{Path, PathBuf};

use crate::common;

use crate::common::{LENIENT, STRICT};
use ctxlab::import::artefacts::{product_artefacts, without_product_artefacts};
use ctxlab::import::{
    import_file, import_reader, is_product_summary, unpaired_ids, DiagnosticKind, ImportOptions,
    ImportedSession, TranscriptFormat,
};
use ctxlab::message::Role;
use proptest::prelude::*;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/import/fixtures/gemini_cli")
        .join(name)
}

fn read(name: &str) -> String {
    std::fs::read_to_string(fixture(name)).unwrap()
}

fn import_text(text: &str, options: &ImportOptions) -> ctxlab::error::LabResult<ImportedSession> {
    import_reader(
        text.as_bytes(),
        Path::new("session.jsonl"),
        TranscriptFormat::GeminiCli,
        options,
    )
}

#[test]
fn the_recording_imports_as_the_chat_held_it() {
    let s = import_file(&fixture("session.jsonl"), &STRICT).unwrap();
    assert_eq!(s.format, TranscriptFormat::GeminiCli);
    let sum = s.summary();
    // generate.mjs: turns of 2, 1 (rewound), 1 and 2 calls: 5 calls kept.
    assert_eq!((sum.main_tool_uses, sum.main_tool_results), (5, 5));
    // Turn 1: context + prompt (one user message), 2 x (call, response),
    // answer = 6; turn 3: 4; the summary and its acknowledgement: 2; turn 4: 6.
    assert_eq!(sum.main_messages, 18);
    assert_eq!(sum.main_assistant_messages, 9);
    // One thought per call.
    assert_eq!(sum.main_thinking_blocks, 5);
    assert!(unpaired_ids(&s.main).is_empty());
    // The rewound turn: its prompt, two replies (one rewritten) and the response.
    assert_eq!(s.skipped["rewound message"], 4);
    assert_eq!(s.skipped["info"], 1);
    // Every reply recorded its tokens: 3 + 2 + 3 kept (the rewound two dropped).
    let sent: Vec<u64> = s.recorded_tokens.iter().map(|t| t.sent).collect();
    assert_eq!(sent, [3000, 3400, 3800, 5000, 5400, 2500, 2900, 3300]);
    for t in &s.recorded_tokens {
        assert_eq!(s.main[t.after_messages - 1].role, Role::Assistant);
    }
    // The raw file: 6 distinct call ids, one of them (call-3) rewound.
    let text = read("session.jsonl");
    let ids: std::collections::BTreeSet<&str> = text
        .match_indices("\"functionResponse\":{\"id\":\"")
        .map(|(i, m)| {
            let rest = &text[i + m.len()..];
            &rest[..rest.find('"').unwrap()]
        })
        .collect();
    assert_eq!(ids.len(), 6);
    assert!(s.main.iter().all(|m| !m.tool_use_ids().contains(&"call-3")));
    assert!(s.diagnostics.is_empty(), "{:?}", s.diagnostics);
}

#[test]
fn the_compression_checkpoint_is_a_real_compaction() {
    let s = import_file(&fixture("session.jsonl"), &STRICT).unwrap();
    assert_eq!(s.real_compactions, [10]);
    let summary = &s.main[10];
    assert!(is_product_summary(summary));
    assert!(summary.text().contains("<state_snapshot>"));
    assert_eq!(s.main[11].text(), ctxlab::import::gemini::COMPRESSION_ACK);
    // The port writes the same acknowledgement.
    assert_eq!(
        ctxlab::import::gemini::COMPRESSION_ACK,
        ctxlab::zoo::gemini_cli::ACK
    );
    // The history before it is all there: the first prompt opens main.
    assert!(s.main[0].text().contains("Find where the config is read."));
    // A policy replays without the summary and the acknowledgement.
    assert_eq!(product_artefacts(&s), [10, 11]);
    let kept = without_product_artefacts(&s);
    assert_eq!(kept.len(), 16);
    assert!(kept.iter().all(|m| !is_product_summary(m)));
    assert!(kept.windows(2).all(|w| w[0].role != w[1].role));
}

#[test]
fn the_replay_sets_the_port_beside_the_compression() {
    let c = common::the_product_compaction(&fixture("session.jsonl"), "gemini-cli");
    assert_eq!(c.policy.as_deref(), Some("gemini-cli"));
    // Five replies before the summary; the first after it recorded 2500.
    assert_eq!((c.call, c.recorded_after), (5, Some(2500)));
    // Half of a 1M-token window is never reached by so short a session.
    assert_eq!(c.policy_call, None);
    let table =
        ctxlab::replay::product::render(std::slice::from_ref(&c), ctxlab::render::Format::Markdown);
    assert!(table.contains("gemini-cli fired @call"), "{table}");
}

#[test]
fn the_cli_imports_and_replays_the_fixtures() {
    for name in ["session.jsonl", "session-legacy.json"] {
        let path = fixture(name);
        let path = path.to_str().unwrap();
        let out = common::lab_ok(&["import", path]);
        assert!(out.contains("gemini_cli"), "{out}");
        let (code, out, err) = common::lab(&["replay", path, "--policy", "all"]);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("gemini-cli"), "{out}");
        // Every policy's every request is valid for both providers.
        let json = common::lab_ok(&["replay", path, "--policy", "all", "--format", "json"]);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        let runs = v["runs"].as_array().expect("runs");
        assert!(runs.len() > 20, "{}", runs.len());
        for r in runs {
            assert_eq!(r["invalid_requests"], 0, "{}", r["policy"]);
        }
    }
}

#[test]
fn the_one_document_format_answers_calls_from_their_results() {
    let s = import_file(&fixture("session-legacy.json"), &STRICT).unwrap();
    assert_eq!(s.format, TranscriptFormat::GeminiCli);
    let sum = s.summary();
    // generate_legacy.mjs: turns of 3 and 2 calls, each (reply, results),
    // then the answer: 1 + 3 x 2 + 1 and 1 + 2 x 2 + 1.
    assert_eq!((sum.main_messages, sum.main_assistant_messages), (14, 7));
    assert_eq!((sum.main_tool_uses, sum.main_tool_results), (5, 5));
    assert!(unpaired_ids(&s.main).is_empty());
    assert!(s.real_compactions.is_empty());
    assert_eq!(s.skipped["error"], 1);
    assert_eq!(s.recorded_tokens.len(), 7);
    // The first element of `messages` is on line 7 of the pretty document.
    assert_eq!(s.main_lines[0], 7);
    let results = s.main[2].blocks();
    assert!(
        matches!(&results[0], ctxlab::message::Block::ToolResult { tool_use_id, content }
        if tool_use_id == "call-1" && content.starts_with("step 1 ok\n"))
    );
}

#[test]
fn a_cut_last_line_keeps_what_precedes_it() {
    let text = read("session.jsonl");
    let cut = &text[..text.len() - 40];
    let lines = cut.lines().count();
    let s = import_text(cut, &LENIENT).unwrap();
    let d = s.diagnostics_of(DiagnosticKind::Truncated);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].line, lines);
    let e = import_text(cut, &STRICT).unwrap_err().to_string();
    assert!(e.contains(&format!("session.jsonl:{lines}:")), "{e}");
    // The one-document format cut anywhere inside: the same.
    let doc = read("session-legacy.json");
    let s = import_reader(
        &doc.as_bytes()[..doc.len() / 2],
        Path::new("s.json"),
        TranscriptFormat::GeminiCli,
        &LENIENT,
    )
    .unwrap();
    assert_eq!(s.diagnostics_of(DiagnosticKind::Truncated).len(), 1);
    assert!(s.main_len() > 0);
}

#[test]
fn invalid_json_before_the_last_line_is_an_error_at_its_place() {
    let mut lines: Vec<String> = read("session.jsonl").lines().map(str::to_string).collect();
    lines[4] = "{\"id\": oops}".into();
    let e = import_text(&(lines.join("\n") + "\n"), &LENIENT).unwrap_err();
    assert_eq!(e.exit_code(), 3);
    assert!(e.to_string().contains("session.jsonl:5:8"), "{e}");
}

#[test]
fn wrong_types_and_unknown_kinds_are_reported_with_their_line() {
    let mut lines: Vec<String> = read("session.jsonl").lines().map(str::to_string).collect();
    lines.insert(2, r#"{"mystery": 1}"#.into());
    lines.insert(3, r#"{"id": "x1", "type": "user", "content": 42}"#.into());
    lines.insert(
        4,
        r#"{"id": "x2", "type": "robot", "content": "hi"}"#.into(),
    );
    lines.insert(5, r#"{"id": "x3", "content": "hi"}"#.into());
    lines.insert(
        6,
        r#"{"id": "x4", "type": "user", "content": [{"videoMetadata": {}}]}"#.into(),
    );
    let s = import_text(&lines.join("\n"), &LENIENT).unwrap();
    let at = |k| {
        s.diagnostics_of(k)
            .iter()
            .map(|d| d.line)
            .collect::<Vec<_>>()
    };
    assert_eq!(at(DiagnosticKind::UnknownRecordType), [3]);
    assert_eq!(at(DiagnosticKind::InvalidRecord), [4, 6]);
    assert_eq!(at(DiagnosticKind::UnknownRole), [5]);
    assert_eq!(at(DiagnosticKind::UnknownBlockType), [7]);
    assert!(unpaired_ids(&s.main).is_empty());
    let e = import_text(&lines.join("\n"), &STRICT)
        .unwrap_err()
        .to_string();
    assert!(e.contains("session.jsonl:3:1"), "{e}");
}

#[test]
fn a_call_with_no_response_is_answered_and_reported() {
    // The last call's response record and its recorded result both gone.
    let lines: Vec<String> = read("session.jsonl")
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["content"][0]["functionResponse"]["id"] != "call-6")
        .map(|mut v| {
            for call in v["toolCalls"].as_array_mut().into_iter().flatten() {
                if call["id"] == "call-6" {
                    call["result"] = serde_json::Value::Null;
                }
            }
            v.to_string()
        })
        .collect();
    let s = import_text(&lines.join("\n"), &LENIENT).unwrap();
    assert_eq!(s.diagnostics_of(DiagnosticKind::DanglingToolUse).len(), 1);
    assert!(unpaired_ids(&s.main).is_empty());
    let e = import_text(&lines.join("\n"), &STRICT)
        .unwrap_err()
        .to_string();
    assert!(e.contains("dangling_tool_use"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any cut of either fixture, and any byte changed in it, imports or
    /// fails with an input error; never a panic, and pairs stay valid.
    #[test]
    fn any_cut_or_byte_of_a_recording_is_handled(
        legacy in any::<bool>(),
        frac in 0.0f64..1.0,
        flip in proptest::option::of((0.0f64..1.0, any::<u8>())),
    ) {
        let text = read(if legacy { "session-legacy.json" } else { "session.jsonl" });
        let bytes = common::cut_or_flipped(text.into_bytes(), frac, flip);
        match import_reader(bytes.as_slice(), Path::new("p.jsonl"), TranscriptFormat::GeminiCli, &LENIENT) {
            Ok(s) => prop_assert!(unpaired_ids(&s.main).is_empty()),
            Err(e) => prop_assert_eq!(e.exit_code(), 3, "{}", e),
        }
    }
}

#[test]
fn the_content_decides_whatever_the_extension() {
    let dir = tempfile::tempdir().unwrap();
    for (name, saved_as) in [
        ("session.jsonl", "chat.json"),
        ("session-legacy.json", "chat.jsonl"),
    ] {
        let p = dir.path().join(saved_as);
        std::fs::copy(fixture(name), &p).unwrap();
        assert_eq!(
            import_file(&p, &LENIENT).unwrap().format,
            TranscriptFormat::GeminiCli
        );
    }
}
