//! Every injected consolidation fault leaves the store byte-identical to its
//! snapshot (file names + bytes) and the index equal to what the files derive.

use std::fs;

use ctxlab::memory::consolidate::{consolidate, Consolidation, ConsolidatorScript, FaultPlan};
use ctxlab::memory::store::{Memory, Store};
use ctxlab::memory::switches::{MemoryConstants, MemorySwitches};

const N: usize = 10;

fn filled(sw: MemorySwitches) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let fs: ctxlab::storage::Shared = std::sync::Arc::new(ctxlab::storage::DiskFs);
    let store = Store::open(fs, &dir.path().join("m"), sw).unwrap();
    for i in 0..N {
        store
            .save(&Memory {
                name: format!("fact {i:02}"),
                mem_type: "project".into(),
                description: format!("fact number {i}"),
                body: format!("Body {i}\nwith two lines."),
            })
            .unwrap();
    }
    (dir, store)
}

/// Every fault point: after the snapshot, after k deletes (0..=N), after k
/// rewrites (0..=N/2, MergePairs writes N/2), during the index rebuild.
fn all_faults() -> Vec<FaultPlan> {
    let mut v = vec![FaultPlan {
        after_snapshot: true,
        ..FaultPlan::default()
    }];
    v.extend((0..=N).map(|k| FaultPlan {
        mid_delete_after: Some(k),
        ..FaultPlan::default()
    }));
    v.extend((0..=N / 2).map(|k| FaultPlan {
        mid_rewrite_after: Some(k),
        ..FaultPlan::default()
    }));
    v.push(FaultPlan {
        during_rebuild: true,
        ..FaultPlan::default()
    });
    v
}

fn dir_listing(store: &Store) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = fs::read_dir(store.root())
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn every_fault_is_rolled_back_to_the_exact_snapshot() {
    let c = MemoryConstants::default();
    let faults = all_faults();
    assert_eq!(faults.len(), 1 + (N + 1) + (N / 2 + 1) + 1);
    for plan in faults {
        let (_d, store) = filled(MemorySwitches::default());
        let before = dir_listing(&store); // every file incl. MEMORY.md, bytes
        let r = consolidate(&store, &ConsolidatorScript::MergePairs, &plan, &c).unwrap();
        assert!(
            matches!(
                r,
                Consolidation::Failed {
                    rolled_back: true,
                    ..
                }
            ),
            "{plan:?}: {r:?}"
        );
        assert_eq!(dir_listing(&store), before, "{plan:?}");
        assert_eq!(store.read_index().unwrap(), store.derived_index().unwrap());
    }
}

#[test]
fn without_rollback_faults_after_the_first_delete_lose_files() {
    let c = MemoryConstants::default();
    let off = MemorySwitches {
        rollback: false,
        ..MemorySwitches::default()
    };
    let mut lossy = 0;
    for plan in all_faults() {
        let (_d, store) = filled(off);
        let before = store.snapshot().unwrap();
        let r = consolidate(&store, &ConsolidatorScript::MergePairs, &plan, &c).unwrap();
        assert!(
            matches!(
                r,
                Consolidation::Failed {
                    rolled_back: false,
                    ..
                }
            ),
            "{plan:?}"
        );
        if store.snapshot().unwrap() != before {
            lossy += 1;
        }
    }
    // after_snapshot and mid_delete_after=0 fail before any change; every other point changes the store.
    assert_eq!(lossy, all_faults().len() - 2);
}

#[test]
fn the_normal_path_rewrites_and_rebuilds() {
    let (_d, store) = filled(MemorySwitches::default());
    let r = consolidate(
        &store,
        &ConsolidatorScript::MergePairs,
        &FaultPlan::default(),
        &MemoryConstants::default(),
    )
    .unwrap();
    match r {
        Consolidation::Done {
            before,
            after,
            model_calls,
        } => {
            assert_eq!((before.len(), after.len(), model_calls), (N, N / 2, 1));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(store.read_index().unwrap(), store.derived_index().unwrap());
    assert_eq!(store.memory_files().unwrap().len(), N / 2);
}

#[test]
fn hostile_or_invalid_consolidator_output_writes_nothing() {
    let c = MemoryConstants::default();
    let (_d, store) = filled(MemorySwitches::default());
    let before = dir_listing(&store);
    for text in [
        "no json here",
        "[]",
        r#"[{"name":"../escape","type":"user","description":"d","body":"b"}]"#,
        r#"[{"name":"MEMORY","type":"user","description":"d","body":"b"}]"#,
        r#"[{"name":"a b","type":"user","description":"d","body":"b"},{"name":"A-B","type":"user","description":"e","body":"c"}]"#,
        r#"[{"name":"x","type":"opinion","description":"d","body":"b"}]"#,
    ] {
        let r = consolidate(
            &store,
            &ConsolidatorScript::Reply(text.into()),
            &FaultPlan::default(),
            &c,
        )
        .unwrap();
        assert!(
            matches!(
                r,
                Consolidation::Failed {
                    rolled_back: false,
                    ..
                }
            ),
            "{text}: {r:?}"
        );
        assert_eq!(dir_listing(&store), before, "{text}");
    }
}

#[test]
fn reverse_gate_is_silent_warnable_and_fixable() {
    let c = MemoryConstants {
        consolidate_input_char_limit: 300,
        ..MemoryConstants::default()
    };
    let (_d, s) = filled(MemorySwitches::default());
    assert!(matches!(
        consolidate(
            &s,
            &ConsolidatorScript::MergePairs,
            &FaultPlan::default(),
            &c
        )
        .unwrap(),
        Consolidation::Skipped { warned: false, .. }
    ));
    let (_d, s) = filled(MemorySwitches {
        warn_on_skip: true,
        ..MemorySwitches::default()
    });
    assert!(matches!(
        consolidate(
            &s,
            &ConsolidatorScript::MergePairs,
            &FaultPlan::default(),
            &c
        )
        .unwrap(),
        Consolidation::Skipped { warned: true, .. }
    ));
    let (_d, s) = filled(MemorySwitches {
        chunked_consolidation: true,
        ..MemorySwitches::default()
    });
    let r = consolidate(
        &s,
        &ConsolidatorScript::MergePairs,
        &FaultPlan::default(),
        &c,
    )
    .unwrap();
    assert!(
        matches!(r, Consolidation::Done { model_calls, .. } if model_calls > 1),
        "{r:?}"
    );
    assert_eq!(s.read_index().unwrap(), s.derived_index().unwrap());
}
