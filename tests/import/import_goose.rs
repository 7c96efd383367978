//! goose JSON Lines sessions: the hand-made fixture
//! (`tests/import/fixtures/goose/`, synthetic, to upstream's types) counted
//! by hand from its generator; the agent-only summary after the hidden
//! originals a real compaction set beside `goose-auto-compact`; each damage
//! class at its line; no panic on any cut or byte.

use std::path::{Path, PathBuf};

use crate::common;

use crate::common::{LENIENT, STRICT};
use ctxlab::import::artefacts::{product_artefacts, without_product_artefacts};
use ctxlab::import::{
    import_file, import_reader, opens_product_compaction, unpaired_ids, DiagnosticKind,
    ImportOptions, ImportedSession, TranscriptFormat,
};
use ctxlab::message::Block;
use proptest::prelude::*;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/import/fixtures/goose/session.jsonl")
}

fn lines() -> Vec<String> {
    std::fs::read_to_string(fixture())
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn import_text(text: &str, options: &ImportOptions) -> ctxlab::error::LabResult<ImportedSession> {
    import_reader(
        text.as_bytes(),
        Path::new("session.jsonl"),
        TranscriptFormat::Goose,
        options,
    )
}

#[test]
fn messages_calls_and_results_are_counted_as_written() {
    let s = import_file(&fixture(), &STRICT).unwrap();
    assert_eq!(s.format, TranscriptFormat::Goose);
    let sum = s.summary();
    // make_fixture.py: 18 message lines, less the user-only notice.
    assert_eq!(sum.main_messages, 17);
    // Replies: 5 before the compaction, the continuation note, 2 after.
    assert_eq!(sum.main_assistant_messages, 8);
    assert_eq!((sum.main_tool_uses, sum.main_tool_results), (5, 5));
    assert_eq!((sum.main_images, sum.main_thinking_blocks), (1, 1));
    assert!(unpaired_ids(&s.main).is_empty());
    for kind in ["metadata", "conversationCompacted", "redactedThinking"] {
        assert_eq!(s.skipped[kind], 1, "{kind}");
    }
    let results: Vec<&str> = s
        .main
        .iter()
        .flat_map(|m| m.blocks())
        .filter_map(|b| match b {
            Block::ToolResult { content, .. } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(results[1], "-32603: /work/src/parse.rs does not exist");
    assert_eq!(results[4], "Wrote /work/tests/parse.rs");
    // The call goose could not parse keeps its error as its input.
    let bad = s.main[5].blocks();
    assert!(
        matches!(&bad[0], Block::ToolUse { input, .. } if input["error"].as_str().unwrap().starts_with("-32602")),
        "{bad:?}"
    );
    assert!(s.diagnostics.is_empty(), "{:?}", s.diagnostics);
}

#[test]
fn the_agent_only_summary_after_hidden_originals_is_a_real_compaction() {
    let s = import_file(&fixture(), &STRICT).unwrap();
    assert_eq!(s.real_compactions, [11]);
    assert_eq!(s.real_compaction_meta[0].trigger.as_deref(), Some("auto"));
    assert!(s.main[11].text().starts_with("## Summary"));
    assert!(opens_product_compaction(&s, 11));
    // The summary, the continuation note and the copy of the last request.
    assert_eq!(product_artefacts(&s), [11, 12, 13]);
    let kept = without_product_artefacts(&s);
    assert_eq!(kept.len(), 14);
    assert!(kept.iter().all(|m| !m.text().starts_with("## Summary")));
    let mut other = s.clone();
    other.format = TranscriptFormat::ClaudeJsonl;
    assert!(!opens_product_compaction(&other, 11));
}

#[test]
fn the_replay_sets_the_port_beside_the_compaction() {
    let c = common::the_product_compaction(&fixture(), "goose-auto-compact");
    assert_eq!(c.policy.as_deref(), Some("goose-auto-compact"));
    assert_eq!(c.trigger.as_deref(), Some("auto"));
    // Five replies before the summary.
    assert_eq!(c.call, 5);
}

#[test]
fn the_cli_imports_and_replays_the_session() {
    let path = fixture();
    let path = path.to_str().unwrap();
    assert!(common::lab_ok(&["import", path]).contains("goose"));
    let json = common::lab_ok(&["replay", path, "--policy", "all", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let runs = v["runs"].as_array().expect("runs");
    assert!(runs.len() > 20, "{}", runs.len());
    for r in runs {
        assert_eq!(r["invalid_requests"], 0, "{}", r["policy"]);
    }
    let (code, out, err) = common::lab(&["replay", path, "--policy", "all"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("goose-auto-compact"), "{out}");
}

#[test]
fn a_cut_last_line_keeps_the_messages_before_it() {
    let text = std::fs::read_to_string(fixture()).unwrap();
    let cut = &text[..text.len() - 40];
    let s = import_text(cut, &LENIENT).unwrap();
    let t = s.diagnostics_of(DiagnosticKind::Truncated);
    assert_eq!((t.len(), t[0].line), (1, 19));
    assert_eq!(s.summary().main_messages, 16);
    assert!(unpaired_ids(&s.main).is_empty());
    let e = import_text(cut, &STRICT).unwrap_err();
    assert_eq!(e.exit_code(), 3);
    assert!(e.to_string().contains("session.jsonl:19:"), "{e}");
}

#[test]
fn wrong_types_and_missing_ids_are_reported_at_their_line() {
    let mut l = lines();
    // Line 3: a role of the wrong type; line 5: content not a list;
    // line 7: a tool response with no id; line 9: an unknown content type.
    l[2] = l[2].replace("\"role\":\"assistant\"", "\"role\":7");
    l[4] = l[4]
        .replacen("\"content\":[", "\"content\":{\"x\":[", 1)
        .replacen("],\"metadata\"", "]},\"metadata\"", 1);
    l[6] = l[6].replacen("\"id\":\"toolu_03\"", "\"ident\":\"toolu_03\"", 1);
    l[8] = l[8].replacen("\"type\":\"text\"", "\"type\":\"hologram\"", 1);
    let text = l.join("\n");
    let s = import_text(&text, &LENIENT).unwrap();
    let at = |k| {
        s.diagnostics_of(k)
            .iter()
            .map(|d| (d.line, d.column))
            .collect::<Vec<_>>()
    };
    assert_eq!(at(DiagnosticKind::InvalidRecord), [(3, 1), (5, 1), (7, 1)]);
    assert_eq!(at(DiagnosticKind::UnknownBlockType), [(9, 1)]);
    // The calls left without their results are answered by the repair.
    assert!(unpaired_ids(&s.main).is_empty());
    let e = import_text(&text, &STRICT).unwrap_err().to_string();
    assert!(e.contains("session.jsonl:3:1"), "{e}");
}

#[test]
fn an_older_list_result_and_a_missing_metadata_line_are_read() {
    let text = concat!(
        r#"{"role":"user","created":1,"content":[{"type":"text","text":"hi"}]}"#,
        "\n",
        r#"{"role":"assistant","created":2,"content":[{"type":"toolRequest","id":"c","toolCall":{"status":"success","value":{"name":"shell","arguments":{"command":"ls"}}}}]}"#,
        "\n",
        r#"{"role":"user","created":3,"content":[{"type":"toolResponse","id":"c","toolResult":{"status":"success","value":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}]}"#,
        "\n",
    );
    assert_eq!(
        ctxlab::import::detect_format(Path::new("x.jsonl"), text.as_bytes()),
        TranscriptFormat::Goose
    );
    let s = import_text(text, &STRICT).unwrap();
    assert_eq!(s.main.len(), 3);
    assert!(
        matches!(&s.main[2].blocks()[0], Block::ToolResult { content, .. } if content == "a\nb")
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any cut of the session, and any byte changed in it, imports or fails
    /// with an input error; never a panic, and pairs stay valid.
    #[test]
    fn any_cut_or_byte_of_a_session_is_handled(
        frac in 0.0f64..1.0,
        flip in proptest::option::of((0.0f64..1.0, any::<u8>())),
    ) {
        let bytes = common::cut_or_flipped(std::fs::read(fixture()).unwrap(), frac, flip);
        match import_reader(bytes.as_slice(), Path::new("s.jsonl"), TranscriptFormat::Goose, &LENIENT) {
            Ok(s) => prop_assert!(unpaired_ids(&s.main).is_empty()),
            Err(e) => prop_assert_eq!(e.exit_code(), 3, "{}", e),
        }
    }
}
