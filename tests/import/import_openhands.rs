//! OpenHands trajectories: the fixture written by OpenHands' own serializer
//! (`tests/import/fixtures/openhands/`, a scripted run), counted by hand
//! from its generator; one model response as one reply; the condensation
//! summary as a real compaction set beside the `openhands-llm-summarizing`
//! port; each damage class with its position; no panic on any cut or byte.

use std::path::{Path, PathBuf};

use crate::common;

use crate::common::{LENIENT, STRICT};
use ctxlab::import::artefacts::{product_artefacts, without_product_artefacts};
use ctxlab::import::{
    import_file, import_reader, opens_product_compaction, unpaired_ids, DiagnosticKind,
    ImportOptions, ImportedSession, TranscriptFormat,
};
use ctxlab::message::{Block, Role};
use proptest::prelude::*;
use serde_json::{json, Value};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/import/fixtures/openhands/trajectory.json")
}

fn events() -> Vec<Value> {
    serde_json::from_str(&std::fs::read_to_string(fixture()).unwrap()).unwrap()
}

fn import_text(text: &str, options: &ImportOptions) -> ctxlab::error::LabResult<ImportedSession> {
    import_reader(
        text.as_bytes(),
        Path::new("trajectory.json"),
        TranscriptFormat::OpenHands,
        options,
    )
}

#[test]
fn each_model_response_is_one_reply_and_each_observation_its_result() {
    let s = import_file(&fixture(), &STRICT).unwrap();
    assert_eq!(s.format, TranscriptFormat::OpenHands);
    let sum = s.summary();
    // generate.py: responses with 1, 2, 1 and 1 calls, an agent message and
    // the finish: 6 replies; 5 calls, each observed.
    assert_eq!(sum.main_assistant_messages, 6);
    assert_eq!((sum.main_tool_uses, sum.main_tool_results), (5, 5));
    // The task, 4 result messages and the condensation summary: 6 user messages.
    assert_eq!(sum.main_messages, 12);
    assert_eq!(sum.system_prompts, 1);
    assert_eq!(s.skipped["observation:agent_state_changed"], 1);
    assert!(unpaired_ids(&s.main).is_empty());
    // The response with two calls is one reply holding both, after its text.
    let two = &s.main[3];
    assert_eq!(two.role, Role::Assistant);
    assert_eq!(two.tool_use_ids(), ["toolu_02", "toolu_03"]);
    assert!(
        matches!(&two.blocks()[0], Block::Text { text } if text == "Look at the code and the last commit.")
    );
    // The model's own arguments, parsed.
    assert!(matches!(&two.blocks()[1], Block::ToolUse { input, .. }
        if input == &json!({"command": "view", "path": "/workspace/utils.py"})));
    // Each response's prompt tokens, by its response id.
    let sent: Vec<u64> = s.recorded_tokens.iter().map(|t| t.sent).collect();
    assert_eq!(sent, [2400, 3100, 3900, 1500, 1800]);
    for t in &s.recorded_tokens {
        assert_eq!(s.main[t.after_messages - 1].role, Role::Assistant);
    }
    assert!(s.diagnostics.is_empty(), "{:?}", s.diagnostics);
    // Independently: the raw events hold 5 observations with call metadata.
    let answered = events()
        .iter()
        .filter(|e| e.get("observation").is_some() && e["tool_call_metadata"].is_object())
        .count();
    assert_eq!(answered, sum.main_tool_results);
}

#[test]
fn the_condensation_summary_is_a_real_compaction() {
    let s = import_file(&fixture(), &STRICT).unwrap();
    assert_eq!(s.real_compactions, [7]);
    assert!(s.main[7].text().starts_with("The test of add fails"));
    assert!(opens_product_compaction(&s, 7));
    assert_eq!(product_artefacts(&s), [7]);
    let kept = without_product_artefacts(&s);
    assert_eq!(kept.len(), 11);
    // What it forgot stays in the history before it.
    assert!(s.main[..7]
        .iter()
        .any(|m| m.tool_use_ids().contains(&"toolu_04")));
}

#[test]
fn the_replay_sets_the_port_beside_the_condensation() {
    let c = common::the_product_compaction(&fixture(), "openhands-llm-summarizing");
    assert_eq!(c.policy.as_deref(), Some("openhands-llm-summarizing"));
    // Three responses before it; the first after it recorded 1500 prompt tokens.
    assert_eq!((c.call, c.recorded_after), (3, Some(1500)));
}

#[test]
fn the_cli_imports_and_replays_the_trajectory() {
    let path = fixture();
    let path = path.to_str().unwrap();
    assert!(common::lab_ok(&["import", path]).contains("openhands"));
    let json = common::lab_ok(&["replay", path, "--policy", "all", "--format", "json"]);
    let v: Value = serde_json::from_str(&json).unwrap();
    let runs = v["runs"].as_array().expect("runs");
    assert!(runs.len() > 20, "{}", runs.len());
    for r in runs {
        assert_eq!(r["invalid_requests"], 0, "{}", r["policy"]);
    }
    let (code, _, err) = common::lab(&["replay", path, "--policy", "all"]);
    assert_eq!(code, 0, "{err}");
    // The server route's shape, `{"trajectory": [...]}`, reads the same.
    let dir = tempfile::tempdir().unwrap();
    let wrapped = dir.path().join("t.json");
    std::fs::write(&wrapped, json!({"trajectory": events()}).to_string()).unwrap();
    let s = import_file(&wrapped, &STRICT).unwrap();
    assert_eq!((s.format, s.main.len()), (TranscriptFormat::OpenHands, 12));
}

#[test]
fn a_cut_trajectory_keeps_the_events_before_the_cut() {
    let text = std::fs::read_to_string(fixture()).unwrap();
    let cut = &text[..text.len() * 2 / 3];
    let s = import_text(cut, &LENIENT).unwrap();
    assert_eq!(s.diagnostics_of(DiagnosticKind::Truncated).len(), 1);
    assert!(s.main_len() > 0);
    assert!(unpaired_ids(&s.main).is_empty());
    assert_eq!(import_text(cut, &STRICT).unwrap_err().exit_code(), 3);
}

#[test]
fn wrong_shapes_are_reported_at_their_event() {
    let mut evs = events();
    evs.insert(2, json!("text"));
    evs.insert(3, json!({"id": 99, "source": "agent"}));
    // An observation answering a call nobody made.
    evs.insert(
        4,
        json!({"id": 98, "source": "environment", "observation": "run", "content": "x",
        "tool_call_metadata": {"tool_call_id": "toolu_99", "function_name": "execute_bash"}}),
    );
    // One event per line, so each diagnostic's line names its event.
    let lines: Vec<String> = evs.iter().map(Value::to_string).collect();
    let text = format!("[\n{}\n]\n", lines.join(",\n"));
    let s = import_text(&text, &LENIENT).unwrap();
    let at = |k| {
        s.diagnostics_of(k)
            .iter()
            .map(|d| (d.line, d.column))
            .collect::<Vec<_>>()
    };
    assert_eq!(at(DiagnosticKind::InvalidRecord), [(4, 1)]);
    assert_eq!(at(DiagnosticKind::UnknownRecordType), [(5, 1)]);
    assert_eq!(s.diagnostics_of(DiagnosticKind::OrphanToolResult).len(), 1);
    assert!(unpaired_ids(&s.main).is_empty());
    let e = import_text(&text, &STRICT).unwrap_err().to_string();
    assert!(e.contains("trajectory.json:4:1"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any cut of the trajectory, and any byte changed in it, imports or
    /// fails with an input error; never a panic, and pairs stay valid.
    #[test]
    fn any_cut_or_byte_of_a_trajectory_is_handled(
        frac in 0.0f64..1.0,
        flip in proptest::option::of((0.0f64..1.0, any::<u8>())),
    ) {
        let bytes = common::cut_or_flipped(std::fs::read(fixture()).unwrap(), frac, flip);
        match import_reader(bytes.as_slice(), Path::new("t.json"), TranscriptFormat::OpenHands, &LENIENT) {
            Ok(s) => prop_assert!(unpaired_ids(&s.main).is_empty()),
            Err(e) => prop_assert_eq!(e.exit_code(), 3, "{}", e),
        }
    }
}

#[test]
fn the_content_decides_whatever_the_extension() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("run.jsonl");
    std::fs::copy(fixture(), &p).unwrap();
    assert_eq!(
        import_file(&p, &LENIENT).unwrap().format,
        TranscriptFormat::OpenHands
    );
}
