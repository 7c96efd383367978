//! opencode session exports: the hand-made fixture
//! (`tests/import/fixtures/opencode/`, synthetic, to upstream's types)
//! counted by hand from its generator; steps as model calls; the compaction
//! part and its summary reply as a real compaction set beside the `opencode`
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
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/import/fixtures/opencode/export.json")
}

fn doc() -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture()).unwrap()).unwrap()
}

fn import_text(text: &str, options: &ImportOptions) -> ctxlab::error::LabResult<ImportedSession> {
    import_reader(
        text.as_bytes(),
        Path::new("export.json"),
        TranscriptFormat::OpenCode,
        options,
    )
}

#[test]
fn each_step_is_a_model_call_and_each_tool_part_a_pair() {
    let s = import_file(&fixture(), &STRICT).unwrap();
    assert_eq!(s.format, TranscriptFormat::OpenCode);
    let sum = s.summary();
    // make_fixture.py: replies of 3, 2 (aborted while running), 1 (the
    // summary) and 2 steps; the reply that failed with an API error is not sent.
    assert_eq!(sum.main_assistant_messages, 8);
    assert_eq!((sum.main_tool_uses, sum.main_tool_results), (5, 5));
    // 8 replies, 4 user prompts (one with a compaction part, one synthetic)
    // and a results message after each of the 5 steps with calls; none
    // joins: each prompt follows a reply or opens the compacted context.
    assert_eq!(sum.main_messages, 17);
    assert_eq!((sum.main_images, sum.main_thinking_blocks), (1, 1));
    assert!(unpaired_ids(&s.main).is_empty());
    assert_eq!(s.skipped["assistant with error"], 1);
    // The ignored text part is not sent.
    assert!(s.main.iter().all(|m| !m.text().contains("editor context")));
    // A call left running is answered as upstream answers it.
    let results: Vec<&str> = s
        .main
        .iter()
        .flat_map(|m| m.blocks())
        .filter_map(|b| match b {
            Block::ToolResult { content, .. } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(results[2], "Command failed: exit code 1");
    assert_eq!(results[3], "[Tool execution was interrupted]");
    // A pruned output is kept whole.
    assert!(results[4].starts_with("3 passed\n3 passed"));
    // One count per step-finish: input + cache read + cache write.
    let sent: Vec<u64> = s.recorded_tokens.iter().map(|t| t.sent).collect();
    assert_eq!(sent, [1500, 1700, 1950, 2300, 4200, 2100, 2500]);
    for t in &s.recorded_tokens {
        assert_eq!(s.main[t.after_messages - 1].role, Role::Assistant);
    }
    assert!(s.diagnostics.is_empty(), "{:?}", s.diagnostics);
}

#[test]
fn the_compaction_part_and_its_summary_are_a_real_compaction() {
    let s = import_file(&fixture(), &STRICT).unwrap();
    assert_eq!(s.real_compactions, [11]);
    assert_eq!(s.real_compaction_meta[0].trigger.as_deref(), Some("auto"));
    assert_eq!(
        s.main[11].text(),
        ctxlab::import::opencode::COMPACTION_PROMPT
    );
    assert!(opens_product_compaction(&s, 11));
    assert!(s.main[12].text().starts_with("## Goal"));
    assert_eq!(product_artefacts(&s), [11, 12]);
    let kept = without_product_artefacts(&s);
    assert_eq!(kept.len(), 15);
    assert!(kept.iter().all(|m| !m.text().starts_with("## Goal")));
    // The same words typed by a user elsewhere are no compaction.
    let mut other = s.clone();
    other.format = TranscriptFormat::Anthropic;
    assert!(!opens_product_compaction(&other, 11));
}

#[test]
fn the_replay_sets_the_port_beside_the_compaction() {
    let c = common::the_product_compaction(&fixture(), "opencode");
    assert_eq!(c.policy.as_deref(), Some("opencode"));
    assert_eq!(c.trigger.as_deref(), Some("auto"));
    // Five replies before the prompt; the summary call's own count is the
    // product's, the first reply after it recorded 2100.
    assert_eq!((c.call, c.recorded_after), (5, Some(2100)));
    // The port prunes outputs; it never summarises.
    assert_eq!(c.policy_call, None);
}

#[test]
fn the_cli_imports_and_replays_the_export() {
    let path = fixture();
    let path = path.to_str().unwrap();
    assert!(common::lab_ok(&["import", path]).contains("opencode"));
    let json = common::lab_ok(&["replay", path, "--policy", "all", "--format", "json"]);
    let v: Value = serde_json::from_str(&json).unwrap();
    let runs = v["runs"].as_array().expect("runs");
    assert!(runs.len() > 20, "{}", runs.len());
    for r in runs {
        assert_eq!(r["invalid_requests"], 0, "{}", r["policy"]);
    }
    let (code, out, err) = common::lab(&["replay", path, "--policy", "all"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("opencode fired @call"), "{out}");
}

#[test]
fn a_cut_export_keeps_the_messages_before_the_cut() {
    let text = std::fs::read_to_string(fixture()).unwrap();
    let s = import_text(&text[..text.len() * 2 / 3], &LENIENT).unwrap();
    assert_eq!(s.diagnostics_of(DiagnosticKind::Truncated).len(), 1);
    assert!(s.main_len() > 0);
    assert!(unpaired_ids(&s.main).is_empty());
    let e = import_text(&text[..text.len() * 2 / 3], &STRICT).unwrap_err();
    assert_eq!(e.exit_code(), 3);
}

#[test]
fn wrong_shapes_and_unknown_kinds_are_reported_at_their_element() {
    let mut d = doc();
    let messages = d["messages"].as_array_mut().unwrap();
    messages.insert(
        1,
        json!({"info": {"id": "m", "role": "system"}, "parts": []}),
    );
    messages.insert(2, json!({"info": {"id": "m2", "role": "user"}}));
    messages.insert(
        3,
        json!({"info": {"id": "m3", "role": "user"}, "parts": [{"type": "hologram"}]}),
    );
    messages.insert(4, json!({"info": {"id": "m4", "role": "assistant"}, "parts": [{"type": "tool", "tool": "bash", "state": {"status": "completed", "output": ""}}]}));
    // One element per line, so each diagnostic's line names its element.
    let elements: Vec<String> = messages.iter().map(Value::to_string).collect();
    let text = format!(
        "{{\"info\": {},\n\"messages\": [\n{}\n]}}\n",
        d["info"],
        elements.join(",\n")
    );
    let s = import_text(&text, &LENIENT).unwrap();
    let at = |k| {
        s.diagnostics_of(k)
            .iter()
            .map(|d| (d.line, d.column))
            .collect::<Vec<_>>()
    };
    assert_eq!(at(DiagnosticKind::UnknownRole), [(4, 1)]);
    assert_eq!(at(DiagnosticKind::InvalidRecord), [(5, 1), (7, 1)]);
    assert_eq!(at(DiagnosticKind::UnknownBlockType), [(6, 1)]);
    assert!(unpaired_ids(&s.main).is_empty());
    let e = import_text(&text, &STRICT).unwrap_err().to_string();
    assert!(e.contains("export.json:4:1"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any cut of the export, and any byte changed in it, imports or fails
    /// with an input error; never a panic, and pairs stay valid.
    #[test]
    fn any_cut_or_byte_of_an_export_is_handled(
        frac in 0.0f64..1.0,
        flip in proptest::option::of((0.0f64..1.0, any::<u8>())),
    ) {
        let bytes = common::cut_or_flipped(std::fs::read(fixture()).unwrap(), frac, flip);
        match import_reader(bytes.as_slice(), Path::new("e.json"), TranscriptFormat::OpenCode, &LENIENT) {
            Ok(s) => prop_assert!(unpaired_ids(&s.main).is_empty()),
            Err(e) => prop_assert_eq!(e.exit_code(), 3, "{}", e),
        }
    }
}

#[test]
fn the_content_decides_whatever_the_extension() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("session.jsonl");
    std::fs::copy(fixture(), &p).unwrap();
    assert_eq!(
        import_file(&p, &LENIENT).unwrap().format,
        TranscriptFormat::OpenCode
    );
}
