//! Roo Code / Cline task histories: the hand-made task folder
//! (`tests/import/fixtures/roo_code/`, synthetic, to upstream's types)
//! counted by hand from its generator; the condense summary as a real
//! compaction set beside the `roo-code-auto-condense` port, its size before
//! from `ui_messages.json`; Cline's plain history; each damage class with its
//! position; no panic on any cut or byte.

use std::path::{Path, PathBuf};

use crate::common;

use crate::common::{LENIENT, STRICT};
use ctxlab::import::artefacts::{product_artefacts, without_product_artefacts};
use ctxlab::import::{
    import_file, import_reader, opens_product_compaction, unpaired_ids, DiagnosticKind,
    ImportOptions, ImportedSession, TranscriptFormat,
};
use ctxlab::message::Role;
use proptest::prelude::*;
use serde_json::{json, Value};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/import/fixtures/roo_code")
}

fn fixture() -> PathBuf {
    dir().join("api_conversation_history.json")
}

fn doc() -> Vec<Value> {
    serde_json::from_str(&std::fs::read_to_string(fixture()).unwrap()).unwrap()
}

fn import_text(text: &str, options: &ImportOptions) -> ctxlab::error::LabResult<ImportedSession> {
    import_reader(
        text.as_bytes(),
        Path::new("api_conversation_history.json"),
        TranscriptFormat::RooCode,
        options,
    )
}

#[test]
fn every_message_of_the_history_is_kept_in_order() {
    let s = import_file(&fixture(), &STRICT).unwrap();
    assert_eq!(s.format, TranscriptFormat::RooCode);
    let sum = s.summary();
    // make_fixture.py: 7 messages tagged with the condense, the summary, 5
    // after it; none joins (the summary follows the results it condensed).
    assert_eq!((s.stats.records, sum.main_messages), (13, 13));
    assert_eq!(sum.main_assistant_messages, 6);
    assert_eq!((sum.main_tool_uses, sum.main_tool_results), (5, 5));
    // A reasoning block with text and an Anthropic thinking block; the
    // encrypted reasoning is the provider's only.
    assert_eq!(sum.main_thinking_blocks, 2);
    assert_eq!(s.skipped["block:reasoning (encrypted)"], 1);
    assert!(unpaired_ids(&s.main).is_empty());
    assert!(s.main[0].text().contains("trailing commas"));
    assert_eq!(s.main[12].role, Role::Assistant);
    assert!(s.diagnostics.is_empty(), "{:?}", s.diagnostics);
}

#[test]
fn the_condense_summary_is_a_real_compaction() {
    let s = import_file(&fixture(), &STRICT).unwrap();
    assert_eq!(s.real_compactions, [7]);
    let meta = &s.real_compaction_meta[0];
    // ui_messages.json's condense_context record, by condenseId.
    assert_eq!(
        (meta.trigger.as_deref(), meta.pre_tokens),
        (None, Some(151234))
    );
    assert!(s.main[7].text().starts_with("## Conversation Summary"));
    assert!(opens_product_compaction(&s, 7));
    assert_eq!(product_artefacts(&s), [7]);
    let kept = without_product_artefacts(&s);
    assert_eq!(kept.len(), 12);
    assert!(kept
        .iter()
        .all(|m| !m.text().contains("## Conversation Summary")));
    // The same message in a plain Anthropic array is no compaction.
    let mut other = s.clone();
    other.format = TranscriptFormat::Anthropic;
    assert!(!opens_product_compaction(&other, 7));
}

#[test]
fn without_ui_messages_the_size_before_is_unknown_and_a_broken_one_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("api_conversation_history.json");
    std::fs::copy(fixture(), &p).unwrap();
    let s = import_file(&p, &STRICT).unwrap();
    assert_eq!(s.real_compactions, [7]);
    assert_eq!(s.real_compaction_meta[0].pre_tokens, None);
    std::fs::write(tmp.path().join("ui_messages.json"), "[{\"ts\": 1,\n  oops").unwrap();
    let s = import_file(&p, &LENIENT).unwrap();
    let d = s.diagnostics_of(DiagnosticKind::InvalidRecord);
    assert_eq!(d.len(), 1);
    assert!(
        d[0].message.contains("ui_messages.json at 2:3"),
        "{}",
        d[0].message
    );
    assert_eq!(s.real_compactions, [7]);
    let e = import_file(&p, &STRICT).unwrap_err();
    assert_eq!(e.exit_code(), 3);
    assert!(e.to_string().contains("ui_messages.json"), "{e}");
}

#[test]
fn the_replay_sets_the_port_beside_the_condense() {
    let c = common::the_product_compaction(&fixture(), "roo-code-auto-condense");
    assert_eq!(c.policy.as_deref(), Some("roo-code-auto-condense"));
    assert_eq!(c.pre_tokens, Some(151234));
    // Three replies before the summary; the history records no usage.
    assert_eq!((c.call, c.recorded_after), (3, None));
}

#[test]
fn the_cli_imports_and_replays_the_history() {
    let path = fixture();
    let path = path.to_str().unwrap();
    assert!(common::lab_ok(&["import", path]).contains("roo_code"));
    let json = common::lab_ok(&["replay", path, "--policy", "all", "--format", "json"]);
    let v: Value = serde_json::from_str(&json).unwrap();
    let runs = v["runs"].as_array().expect("runs");
    assert!(runs.len() > 20, "{}", runs.len());
    for r in runs {
        assert_eq!(r["invalid_requests"], 0, "{}", r["policy"]);
    }
    let (code, out, err) = common::lab(&["replay", path, "--policy", "all"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("roo-code-auto-condense fired @call"), "{out}");
}

#[test]
fn clines_plain_history_reads_as_anthropic_or_by_name() {
    // Cline writes bare MessageParam[] (no ts, no condense tags).
    let plain: Vec<Value> = doc()
        .into_iter()
        .filter(|m| m.get("isSummary").is_none())
        .map(|m| json!({"role": m["role"], "content": m["content"]}))
        .collect();
    let text = Value::Array(plain).to_string();
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("api_conversation_history.json");
    std::fs::write(&p, &text).unwrap();
    assert_eq!(
        import_file(&p, &LENIENT).unwrap().format,
        TranscriptFormat::Anthropic
    );
    let s = import_text(&text, &STRICT).unwrap();
    assert_eq!(s.main_len(), 12);
    assert!(s.real_compactions.is_empty());
    assert!(unpaired_ids(&s.main).is_empty());
}

#[test]
fn a_cut_history_keeps_the_messages_before_the_cut() {
    let text = std::fs::read_to_string(fixture()).unwrap();
    let cut = &text[..text.len() * 2 / 3];
    let s = import_text(cut, &LENIENT).unwrap();
    assert_eq!(s.diagnostics_of(DiagnosticKind::Truncated).len(), 1);
    assert!(s.main_len() > 0);
    assert!(unpaired_ids(&s.main).is_empty());
    let e = import_text(cut, &STRICT).unwrap_err();
    assert_eq!(e.exit_code(), 3);
}

#[test]
fn wrong_shapes_and_unknown_kinds_are_reported_at_their_element() {
    let mut d = doc();
    d.insert(1, json!({"content": "no role", "ts": 1}));
    d.insert(
        2,
        json!({"type": "reasoning", "encrypted_content": "x", "ts": 2}),
    );
    d.insert(
        3,
        json!({"role": "user", "content": [{"type": "hologram"}], "ts": 3}),
    );
    d.insert(4, json!({"role": "tool", "content": "x", "ts": 4}));
    // One element per line, so each diagnostic's line names its element.
    let elements: Vec<String> = d.iter().map(Value::to_string).collect();
    let text = format!("[\n{}\n]\n", elements.join(",\n"));
    let s = import_text(&text, &LENIENT).unwrap();
    let at = |k| {
        s.diagnostics_of(k)
            .iter()
            .map(|d| (d.line, d.column))
            .collect::<Vec<_>>()
    };
    assert_eq!(at(DiagnosticKind::InvalidRecord), [(3, 1)]);
    assert_eq!(at(DiagnosticKind::UnknownRole), [(6, 1)]);
    assert_eq!(at(DiagnosticKind::UnknownBlockType), [(5, 1)]);
    assert_eq!(s.skipped["reasoning item"], 1);
    assert!(unpaired_ids(&s.main).is_empty());
    // The summary is still found, four elements later.
    assert_eq!(s.real_compactions.len(), 1);
    assert!(s.main[s.real_compactions[0]]
        .text()
        .starts_with("## Conversation Summary"));
    let e = import_text(&text, &STRICT).unwrap_err().to_string();
    assert!(e.contains("api_conversation_history.json:3:1"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any cut of the history, and any byte changed in it, imports or fails
    /// with an input error; never a panic, and pairs stay valid.
    #[test]
    fn any_cut_or_byte_of_a_history_is_handled(
        frac in 0.0f64..1.0,
        flip in proptest::option::of((0.0f64..1.0, any::<u8>())),
    ) {
        let bytes = common::cut_or_flipped(std::fs::read(fixture()).unwrap(), frac, flip);
        match import_reader(bytes.as_slice(), Path::new("h.json"), TranscriptFormat::RooCode, &LENIENT) {
            Ok(s) => prop_assert!(unpaired_ids(&s.main).is_empty()),
            Err(e) => prop_assert_eq!(e.exit_code(), 3, "{}", e),
        }
    }
}

#[test]
fn the_content_decides_whatever_the_extension() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("session.jsonl");
    std::fs::copy(fixture(), &p).unwrap();
    assert_eq!(
        import_file(&p, &LENIENT).unwrap().format,
        TranscriptFormat::RooCode
    );
}
