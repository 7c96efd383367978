//! opencode's storage directory: the fixture
//! (`tests/import/fixtures/opencode_storage/`, written by opencode 1.1.53's
//! own `opencode import` from the hand-made export) counted by hand from the
//! export's generator and equal to the export; the compaction part a real compaction beside the
//! `opencode` port; each damage class reported in the file it is in, with
//! its line:column; no panic on any cut or byte of a message file.

use std::path::{Path, PathBuf};

use crate::common;

use crate::common::{LENIENT, STRICT};
use ctxlab::import::{
    import_file, opens_product_compaction, unpaired_ids, DiagnosticKind, ImportedSession,
    TranscriptFormat,
};
use proptest::prelude::*;
use serde_json::Value;

const SESSION: &str = "session/global/ses_fixture0001.json";

fn storage() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/import/fixtures/opencode_storage/storage")
}

/// A copy of the fixture's storage to damage; the session file in it.
fn copy() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&storage(), &dir.path().join("storage"));
    let session = dir.path().join("storage").join(SESSION);
    (dir, session)
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

fn at(s: &ImportedSession, kind: DiagnosticKind) -> Vec<(String, usize, usize)> {
    s.diagnostics_of(kind)
        .iter()
        .map(|d| {
            let file = d.file.as_deref().unwrap_or(&s.source);
            let name = file.components().rev().take(3).collect::<Vec<_>>();
            let name: PathBuf = name.into_iter().rev().collect();
            (name.display().to_string(), d.line, d.column)
        })
        .collect()
}

#[test]
fn the_storage_holds_the_exports_session() {
    let s = import_file(&storage().join(SESSION), &STRICT).unwrap();
    assert_eq!(s.format, TranscriptFormat::OpenCodeStorage);
    let sum = s.summary();
    // make_fixture.py of ../opencode: replies of 3, 2, 1 (the summary) and 2
    // steps; the reply that failed with an API error is not sent.
    assert_eq!(sum.main_assistant_messages, 8);
    assert_eq!((sum.main_tool_uses, sum.main_tool_results), (5, 5));
    assert_eq!(sum.main_messages, 17);
    assert_eq!((sum.main_images, sum.main_thinking_blocks), (1, 1));
    // Files read: the session, 9 messages, 34 parts.
    assert_eq!(s.stats.records, 1 + 9 + 34);
    let sent: Vec<u64> = s.recorded_tokens.iter().map(|t| t.sent).collect();
    assert_eq!(sent, [1500, 1700, 1950, 2300, 4200, 2100, 2500]);
    assert!(unpaired_ids(&s.main).is_empty());
    assert!(s.diagnostics.is_empty(), "{:?}", s.diagnostics);
    let export = import_file(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/import/fixtures/opencode/export.json"),
        &STRICT,
    )
    .unwrap();
    assert_eq!(s.main, export.main);
}

#[test]
fn the_compaction_part_is_a_real_compaction_beside_the_port() {
    let s = import_file(&storage().join(SESSION), &STRICT).unwrap();
    assert_eq!(s.real_compactions, [11]);
    assert_eq!(s.real_compaction_meta[0].trigger.as_deref(), Some("auto"));
    assert!(opens_product_compaction(&s, 11));
    assert_eq!(ctxlab::import::artefacts::product_artefacts(&s), [11, 12]);
    let c = common::the_product_compaction(&storage().join(SESSION), "opencode");
    assert_eq!(c.policy.as_deref(), Some("opencode"));
    assert_eq!((c.call, c.recorded_after), (5, Some(2100)));
}

#[test]
fn the_cli_reads_the_storage_directory_or_a_session_file() {
    let dir = storage();
    // The directory: its one session, not its 43 message and part files
    // nor opencode's project record and migration marker.
    let out = common::lab_ok(&["import", dir.to_str().unwrap(), "--format", "json"]);
    assert_eq!(out.matches("\"opencode_storage\"").count(), 1, "{out}");
    assert!(!out.contains("not a session"), "{out}");
    let file = dir.join(SESSION);
    let (code, out, err) = common::lab(&["replay", file.to_str().unwrap(), "--policy", "all"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("opencode fired @call"), "{out}");
    let json = common::lab_ok(&[
        "import",
        file.to_str().unwrap(),
        "--format-in",
        "opencode_storage",
        "--format",
        "json",
    ]);
    assert!(json.contains("opencode_storage"), "{json}");
}

#[test]
fn a_cut_file_is_reported_in_it_and_the_rest_still_imports() {
    let (_dir, session) = copy();
    let root = session
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .parent()
        .unwrap();
    let msg = root.join("message/ses_fixture0001/msg_0007.json");
    let text = std::fs::read_to_string(&msg).unwrap();
    std::fs::write(&msg, &text[..text.len() / 2]).unwrap();
    let s = import_file(&session, &LENIENT).unwrap();
    let cut = at(&s, DiagnosticKind::Truncated);
    assert_eq!(cut.len(), 1);
    assert_eq!(cut[0].0, "message/ses_fixture0001/msg_0007.json");
    let lines = text[..text.len() / 2].lines().count();
    assert_eq!(cut[0].1, lines);
    // msg_0007 is the synthetic "Continue" prompt; everything else stays.
    assert_eq!(s.summary().main_assistant_messages, 8);
    assert!(unpaired_ids(&s.main).is_empty());
    let e = import_file(&session, &STRICT).unwrap_err();
    assert_eq!(e.exit_code(), 3);
    let e = e.to_string();
    assert!(e.contains(&format!("msg_0007.json:{lines}:")), "{e}");
}

#[test]
fn wrong_types_and_missing_ids_are_reported_in_their_file() {
    let (_dir, session) = copy();
    let root = session
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .parent()
        .unwrap();
    let edit = |rel: &str, f: &dyn Fn(&mut Value)| {
        let p = root.join(rel);
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        f(&mut v);
        std::fs::write(&p, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    };
    // A role of the wrong type, a part type of the wrong type, a tool part
    // with no call id, a part file that is no object.
    edit("message/ses_fixture0001/msg_0005.json", &|v| {
        v["role"] = 7.into()
    });
    edit("part/msg_0003/prt_0016.json", &|v| v["type"] = 5.into());
    edit("part/msg_0004/prt_0019.json", &|v| {
        v.as_object_mut().unwrap().remove("callID");
    });
    std::fs::write(root.join("part/msg_0001/prt_0002.json"), "[1, 2]").unwrap();
    let s = import_file(&session, &LENIENT).unwrap();
    assert_eq!(
        at(&s, DiagnosticKind::InvalidRecord),
        [
            ("part/msg_0001/prt_0002.json".to_string(), 1, 1),
            ("part/msg_0004/prt_0019.json".to_string(), 1, 1),
            ("message/ses_fixture0001/msg_0005.json".to_string(), 1, 1),
        ]
    );
    assert_eq!(
        at(&s, DiagnosticKind::UnknownBlockType),
        [("part/msg_0003/prt_0016.json".to_string(), 1, 1)]
    );
    assert!(unpaired_ids(&s.main).is_empty());
    let printed = s.diagnostic_lines().join("\n");
    assert!(
        printed.contains("prt_0019.json:1:1: invalid_record"),
        "{printed}"
    );
    let e = import_file(&session, &STRICT).unwrap_err().to_string();
    assert!(e.contains("prt_0002.json:1:1"), "{e}");
}

#[test]
fn a_session_file_outside_its_storage_is_refused_with_a_fix() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("ses_fixture0001.json");
    std::fs::copy(storage().join(SESSION), &p).unwrap();
    let e = import_file(&p, &LENIENT).unwrap_err();
    assert_eq!(e.exit_code(), 3);
    assert!(e.to_string().contains("storage directory"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Any cut of a message or part file, and any byte changed in it,
    /// imports or fails with an input error; never a panic.
    #[test]
    fn any_cut_or_byte_of_a_stored_file_is_handled(
        which in 0usize..43,
        frac in 0.0f64..1.0,
        flip in proptest::option::of((0.0f64..1.0, any::<u8>())),
    ) {
        let (_dir, session) = copy();
        let root = session.parent().unwrap().parent().unwrap().parent().unwrap().to_path_buf();
        let mut files: Vec<PathBuf> = ["message/ses_fixture0001", "part"]
            .iter()
            .flat_map(|d| walk(&root.join(d)))
            .collect();
        files.sort();
        let f = &files[which % files.len()];
        let bytes = common::cut_or_flipped(std::fs::read(f).unwrap(), frac, flip);
        std::fs::write(f, bytes).unwrap();
        match import_file(&session, &LENIENT) {
            Ok(s) => prop_assert!(unpaired_ids(&s.main).is_empty()),
            Err(e) => prop_assert_eq!(e.exit_code(), 3, "{}", e),
        }
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
