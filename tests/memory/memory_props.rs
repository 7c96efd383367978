//! Properties: after any sequence of saves and consolidations with injected
//! failures, every acknowledged memory is on disk or deliberately merged, the
//! index equals what the files derive, and nothing is written outside the store.

use proptest::prelude::*;

use ctxlab::memory::checker::{check, render};
use ctxlab::memory::consolidate::{ConsolidatorScript, FaultPlan};
use ctxlab::memory::extract::ExtractorScript;
use ctxlab::memory::session::{Harness, Session, Turn};
use ctxlab::memory::store::{guard_name, Memory, Store};
use ctxlab::memory::switches::{MemoryConstants, MemorySwitches};

const POOL: [&str; 8] = [
    "tabs",
    "quotes",
    "db mocks",
    "auth",
    "ingest",
    "Tabs",
    "release day",
    "用户偏好",
];

fn fault_strategy() -> impl Strategy<Value = FaultPlan> {
    prop_oneof![
        3 => Just(FaultPlan::default()),
        1 => Just(FaultPlan { after_snapshot: true, ..FaultPlan::default() }),
        2 => (0usize..6).prop_map(|k| FaultPlan { mid_delete_after: Some(k), ..FaultPlan::default() }),
        2 => (0usize..4).prop_map(|k| FaultPlan { mid_rewrite_after: Some(k), ..FaultPlan::default() }),
        1 => Just(FaultPlan { during_rebuild: true, ..FaultPlan::default() }),
    ]
}

fn consolidator_strategy() -> impl Strategy<Value = ConsolidatorScript> {
    prop_oneof![
        3 => Just(ConsolidatorScript::MergePairs),
        1 => Just(ConsolidatorScript::KeepAll),
        1 => Just(ConsolidatorScript::Fail("model timeout".into())),
        1 => Just(ConsolidatorScript::Reply("not json".into())),
    ]
}

/// One turn: which pool names the extractor proposes (with a body variant so
/// dedup sometimes fires), the consolidator, and the faults.
fn turn_strategy() -> impl Strategy<Value = Turn> {
    (
        prop::collection::vec((0..POOL.len(), 0u8..3), 0..4),
        consolidator_strategy(),
        fault_strategy(),
    )
        .prop_map(|(picks, consolidator, faults)| {
            let items: Vec<serde_json::Value> = picks
                .iter()
                .map(|(i, v)| {
                    let n = POOL[*i];
                    serde_json::json!({"name": n, "type": "user", "description": format!("{n} v{v}"), "body": format!("about {n}, version {v}"), "scope": "persistent"})
                })
                .collect();
            Turn {
                user: "remember things".into(),
                assistant: "ok".into(),
                extractor: ExtractorScript::Reply(serde_json::Value::Array(items).to_string()),
                consolidator,
                faults,
                ..Turn::default()
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn acknowledged_memories_survive_any_faulty_sequence(turns in prop::collection::vec(turn_strategy(), 1..8)) {
        let (fs, dir) = ctxlab::memory::session::sandbox();
        let constants = MemoryConstants { consolidate_threshold: 3, ..MemoryConstants::default() };
        let mut h = Harness::new(fs, &dir, MemorySwitches::default(), constants).unwrap();
        for t in &turns {
            h.run_sessions(&[Session { turns: vec![t.clone()] }]).unwrap();
            let c = check(&h).unwrap();
            prop_assert_eq!(c.count_of("acknowledged_lost"), Some(0), "{}", render(&c));
            prop_assert_eq!(c.count_of("index_drift"), Some(0), "{}", render(&c));
            prop_assert_eq!(c.count_of("written_outside_store"), Some(0), "{}", render(&c));
            prop_assert_eq!(c.count_of("duplicates_stored"), Some(0), "{}", render(&c));
        }
    }

    #[test]
    fn guard_accepts_only_plain_slugs(name in "[a-zA-Z0-9 ./\\\\:_\\-\u{2215}\u{FF0F}\u{2024}\u{FF0E}\0\n]{0,12}") {
        if let Ok(s) = guard_name(&name) {
            prop_assert!(!s.is_empty());
            prop_assert!(!s.contains('/') && !s.contains('\\') && !s.contains(".."));
            let file = format!("{}.md", s);
            prop_assert!(!file.eq_ignore_ascii_case("MEMORY.md"));
            prop_assert!(s.chars().all(|c| c.is_alphanumeric() || c == '-' || c == '_'));
        }
    }

    #[test]
    fn any_name_is_refused_or_lands_directly_in_the_store(name in "\\PC{0,16}") {
        let dir = tempfile::tempdir().unwrap();
        let fs: ctxlab::storage::Shared = std::sync::Arc::new(ctxlab::storage::DiskFs);
        let store = Store::open(fs, &dir.path().join("store"), MemorySwitches::default()).unwrap();
        let m = Memory { name: name.clone(), mem_type: "user".into(), description: "d".into(), body: "b".into() };
        match store.save(&m) {
            Ok(file) => {
                prop_assert_eq!(store.memory_files().unwrap(), vec![file]);
                prop_assert_eq!(store.read_index().unwrap(), store.derived_index().unwrap());
            }
            Err(ctxlab::error::LabError::Refused { .. }) => {
                prop_assert!(store.memory_files().unwrap().is_empty());
                prop_assert!(!store.index_path().exists());
            }
            Err(e) => prop_assert!(false, "unexpected error {e}"),
        }
        let top: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        prop_assert_eq!(top, vec![std::ffi::OsString::from("store")]);
    }
}

/// The property has teeth: with rollback switched off, proptest finds a
/// faulty sequence that loses an acknowledged memory.
#[test]
fn without_rollback_the_property_finds_a_loss() {
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let result = runner.run(&prop::collection::vec(turn_strategy(), 1..8), |turns| {
        let (fs, dir) = ctxlab::memory::session::sandbox();
        let constants = MemoryConstants {
            consolidate_threshold: 3,
            ..MemoryConstants::default()
        };
        let sw = MemorySwitches {
            rollback: false,
            ..MemorySwitches::default()
        };
        let mut h = Harness::new(fs, &dir, sw, constants).unwrap();
        h.run_sessions(&[Session { turns }]).unwrap();
        let c = check(&h).unwrap();
        prop_assert_eq!(c.count_of("acknowledged_lost"), Some(0));
        Ok(())
    });
    assert!(
        result.is_err(),
        "rollback off should lose a memory in some sequence"
    );
}
