//! OpenHands' per-event store: the V1 fixture written by openhands-sdk's own
//! `EventLog` (`tests/import/fixtures/openhands_events/`), counted from the
//! raw event files independently of the importer; the V0 layout (`N.json`,
//! built here from the trajectory fixture's events, which `event_to_dict`
//! writes alike) reading equal to the trajectory; the condensation as a real
//! compaction beside `openhands-llm-summarizing`; each damage class at its
//! file and position; no panic on any cut or byte of an event file.

use std::path::{Path, PathBuf};

use crate::common;

use crate::common::{LENIENT, STRICT};
use ctxlab::import::artefacts::product_artefacts;
use ctxlab::import::{
    detect_format, import_file, opens_product_compaction, unpaired_ids, DiagnosticKind,
    ImportOptions, ImportedSession, TranscriptFormat,
};
use ctxlab::message::Role;
use proptest::prelude::*;
use serde_json::{json, Value};

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/import/fixtures/openhands_events")
}

/// The fixture's event files in index order.
fn event_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("events"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
}

fn raw_events() -> Vec<Value> {
    event_files(&fixture_dir())
        .iter()
        .map(|p| serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap())
        .collect()
}

/// A copy of the fixture's conversation directory to damage.
fn copy() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let conv = dir.path().join("conv");
    std::fs::create_dir_all(conv.join("events")).unwrap();
    for f in event_files(&fixture_dir()) {
        std::fs::copy(&f, conv.join("events").join(f.file_name().unwrap())).unwrap();
    }
    (dir, conv)
}

fn import_dir(conv: &Path, options: &ImportOptions) -> ctxlab::error::LabResult<ImportedSession> {
    import_file(&event_files(conv)[0], options)
}

fn kind(e: &Value) -> &str {
    e["kind"].as_str().unwrap()
}

#[test]
fn counts_match_the_raw_events() {
    let s = import_dir(&fixture_dir(), &STRICT).unwrap();
    assert_eq!(s.format, TranscriptFormat::OpenHandsEvents);
    assert_eq!(s.label, "openhands_events/events");
    let sum = s.summary();
    // Counted from the files: each ActionEvent a call, each observation-like
    // event a result, each response id (actions, agent messages) a reply.
    let evs = raw_events();
    let calls = evs.iter().filter(|e| kind(e) == "ActionEvent").count();
    let results = evs
        .iter()
        .filter(|e| {
            [
                "ObservationEvent",
                "AgentErrorEvent",
                "UserRejectObservation",
            ]
            .contains(&kind(e))
        })
        .count();
    let mut responses: Vec<&str> = evs
        .iter()
        .filter(|e| {
            kind(e) == "ActionEvent" || (kind(e) == "MessageEvent" && e["source"] == "agent")
        })
        .map(|e| e["llm_response_id"].as_str().unwrap())
        .collect();
    responses.dedup();
    assert_eq!((calls, results, responses.len()), (5, 5, 5));
    assert_eq!(
        (sum.main_tool_uses, sum.main_tool_results),
        (calls, results)
    );
    assert_eq!(sum.main_assistant_messages, responses.len());
    // User turns: the task, the summary, and four result messages (the
    // error and the observation of one response share one).
    assert_eq!(sum.main_messages, responses.len() + 6);
    assert_eq!(sum.system_prompts, 1);
    assert_eq!(s.skipped["kind:ConversationStateUpdateEvent"], 1);
    assert_eq!(s.skipped["kind:CondensationRequest"], 1);
    assert_eq!(sum.stats.records, evs.len());
    assert!(s.diagnostics.is_empty(), "{:?}", s.diagnostics);
    assert!(unpaired_ids(&s.main).is_empty());
    // The response with two calls is one reply after its thought.
    let two = &s.main[3];
    assert_eq!(two.role, Role::Assistant);
    assert_eq!(two.tool_use_ids(), ["call_02", "call_03"]);
    assert!(two.text().contains("Look at the code"));
}

#[test]
fn the_condensation_summary_is_a_real_compaction_beside_the_port() {
    let s = import_dir(&fixture_dir(), &STRICT).unwrap();
    let summary = raw_events()
        .into_iter()
        .find(|e| kind(e) == "Condensation")
        .unwrap()["summary"]
        .as_str()
        .unwrap()
        .to_string();
    let at = s.main.iter().position(|m| m.text() == summary).unwrap();
    assert_eq!(s.real_compactions, [at]);
    assert!(opens_product_compaction(&s, at));
    assert_eq!(product_artefacts(&s), [at]);
    let first = event_files(&fixture_dir())[0].clone();
    let c = common::the_product_compaction(&first, "openhands-llm-summarizing");
    assert_eq!(c.policy.as_deref(), Some("openhands-llm-summarizing"));
    // Two responses came before it.
    assert_eq!(c.call, 2);
}

#[test]
fn the_v0_layout_reads_as_the_trajectory_does() {
    let traj = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/import/fixtures/openhands/trajectory.json");
    let events: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(&traj).unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("sessions/sid/events");
    std::fs::create_dir_all(&store).unwrap();
    for (i, e) in events.iter().enumerate() {
        std::fs::write(store.join(format!("{i}.json")), e.to_string()).unwrap();
    }
    let from_store = import_file(&store.join("0.json"), &STRICT).unwrap();
    let from_traj = import_file(&traj, &STRICT).unwrap();
    assert_eq!(from_store.format, TranscriptFormat::OpenHandsEvents);
    assert_eq!(from_store.main, from_traj.main);
    assert_eq!(from_store.real_compactions, from_traj.real_compactions);
    assert_eq!(from_store.system, from_traj.system);
    // The session directory reads as one session.
    let out = common::lab_ok(&["import", dir.path().join("sessions/sid").to_str().unwrap()]);
    assert!(out.contains("openhands_events 1"), "{out}");
}

#[test]
fn the_cli_reads_the_conversation_directory_as_one_session() {
    let (_tmp, conv) = copy();
    std::fs::write(conv.join("base_state.json"), "{}").unwrap();
    let path = conv.to_str().unwrap();
    let out = common::lab_ok(&["import", path]);
    assert!(out.contains("openhands_events 1"), "{out}");
    let (code, _, err) = common::lab(&["replay", path, "--policy", "all"]);
    assert_eq!(code, 0, "{err}");
    // Any event file names the whole directory.
    let later = &event_files(&conv)[7];
    assert_eq!(import_file(later, &STRICT).unwrap().main.len(), 11);
}

#[test]
fn the_content_decides_whatever_the_extension() {
    for f in event_files(&fixture_dir()) {
        let bytes = std::fs::read(&f).unwrap();
        assert_eq!(
            detect_format(Path::new("x.jsonl"), &bytes),
            TranscriptFormat::OpenHandsEvents,
            "{}",
            f.display()
        );
    }
}

/// Rewrite event `idx` of `conv` with `f`.
fn edit(conv: &Path, idx: usize, f: impl FnOnce(&mut Value)) -> PathBuf {
    let file = event_files(conv)[idx].clone();
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(&file, v.to_string()).unwrap();
    file
}

#[test]
fn a_cut_event_file_is_truncated_there_and_the_rest_imports() {
    let (_tmp, conv) = copy();
    let file = event_files(&conv)[5].clone();
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, &text[..text.len() / 2]).unwrap();
    let s = import_dir(&conv, &LENIENT).unwrap();
    let [d] = s.diagnostics_of(DiagnosticKind::Truncated)[..] else {
        panic!("{:?}", s.diagnostics)
    };
    assert_eq!((d.line, d.column), (1, text.len() / 2));
    assert_eq!(s.summary().main_tool_uses, 4);
    assert!(unpaired_ids(&s.main).is_empty());
    let e = import_dir(&conv, &STRICT).unwrap_err();
    assert_eq!(e.exit_code(), 3);
    let name = file.file_name().unwrap().to_str().unwrap();
    assert!(e.to_string().contains(&format!("{name}:1:")), "{e}");
}

#[test]
fn wrong_types_are_invalid_records_in_their_file() {
    let (_tmp, conv) = copy();
    // A call id of the wrong type, and a file that is no object.
    let file = edit(&conv, 3, |v| v["tool_call_id"] = json!(5));
    std::fs::write(event_files(&conv)[13].clone(), "\"text\"").unwrap();
    let s = import_dir(&conv, &LENIENT).unwrap();
    let bad = s.diagnostics_of(DiagnosticKind::InvalidRecord);
    assert_eq!(bad.len(), 2, "{:?}", s.diagnostics);
    assert!(s.diagnostic_lines()[0].contains(file.file_name().unwrap().to_str().unwrap()));
    assert!(unpaired_ids(&s.main).is_empty());
    // The call's result now answers nothing.
    assert_eq!(s.diagnostics_of(DiagnosticKind::OrphanToolResult).len(), 1);
    assert_eq!(import_dir(&conv, &STRICT).unwrap_err().exit_code(), 3);
}

#[test]
fn missing_ids_are_reported_and_a_missing_event_ends_the_conversation() {
    let (_tmp, conv) = copy();
    edit(&conv, 4, |v| {
        v.as_object_mut().unwrap().remove("tool_call_id");
    });
    let s = import_dir(&conv, &LENIENT).unwrap();
    let bad = s.diagnostics_of(DiagnosticKind::InvalidRecord);
    assert_eq!(bad.len(), 1);
    assert!(bad[0].message.contains("tool_call_id"));
    // Its call is answered by the repair instead.
    assert_eq!(s.diagnostics_of(DiagnosticKind::DanglingToolUse).len(), 1);
    assert!(unpaired_ids(&s.main).is_empty());
    // Event 12 gone: OpenHands reads nothing from the gap on.
    std::fs::remove_file(&event_files(&conv)[12]).unwrap();
    let s = import_dir(&conv, &LENIENT).unwrap();
    let cut = s.diagnostics_of(DiagnosticKind::Truncated);
    assert_eq!(cut.len(), 1);
    assert!(cut[0].message.contains("event 12 is missing"));
    assert_eq!(s.summary().stats.records, 12);
    assert_eq!(import_dir(&conv, &STRICT).unwrap_err().exit_code(), 3);
}

#[test]
fn an_event_file_outside_its_directory_is_refused_with_a_fix() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("event.json");
    std::fs::copy(&event_files(&fixture_dir())[0], &p).unwrap();
    let e = import_file(&p, &LENIENT).unwrap_err();
    assert_eq!(e.exit_code(), 3);
    assert!(e.to_string().contains("events directory"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Any cut of an event file, and any byte changed in it, imports or
    /// fails with an input error; never a panic, and pairs stay valid.
    #[test]
    fn any_cut_or_byte_of_an_event_file_is_handled(
        which in 0usize..16,
        frac in 0.0f64..1.0,
        flip in proptest::option::of((0.0f64..1.0, any::<u8>())),
    ) {
        let (_tmp, conv) = copy();
        let file = event_files(&conv)[which].clone();
        let bytes = common::cut_or_flipped(std::fs::read(&file).unwrap(), frac, flip);
        std::fs::write(&file, bytes).unwrap();
        match import_dir(&conv, &LENIENT) {
            Ok(s) => prop_assert!(unpaired_ids(&s.main).is_empty()),
            Err(e) => prop_assert_eq!(e.exit_code(), 3, "{}", e),
        }
    }
}
