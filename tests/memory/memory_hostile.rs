//! The hostile-store suite: symlinks at every path the store touches (temp
//! names, `MEMORY.md`, the store directory, record files, the journal), hard
//! links to outside files, a full disk at every write of a consolidation and
//! a kill after every file-system operation of one. The verdicts: nothing
//! outside the store changes, no acknowledged memory is lost after recovery,
//! and the index always equals what the files derive.
#![cfg(unix)]

use std::fs;
use std::os::unix::fs::symlink;
use std::sync::Arc;

use ctxlab::error::LabError;
use ctxlab::memory::consolidate::{consolidate, Consolidation, ConsolidatorScript, FaultPlan};
use ctxlab::memory::crash::{full_disk_window, kill_window};
use ctxlab::memory::journal::JOURNAL_FILE;
use ctxlab::memory::recall::{recall_turn, SelectorScript};
use ctxlab::memory::session::Harness;
use ctxlab::memory::store::{Memory, Store, INDEX_FILE};
use ctxlab::memory::switches::{MemoryConstants, MemorySwitches};
use ctxlab::memory::transcript::{text_message, Role};
use ctxlab::storage::{DiskFs, Shared};

const SECRET: &[u8] = b"outside file: must never change";

fn disk() -> Shared {
    Arc::new(DiskFs)
}

fn mem(name: &str) -> Memory {
    Memory {
        name: name.into(),
        mem_type: "user".into(),
        description: format!("about {name}"),
        body: format!("Body of {name}."),
    }
}

/// A workspace with a store and, beside the workspace, an outside file.
struct World {
    _tmp: tempfile::TempDir,
    outside: std::path::PathBuf,
    workspace: std::path::PathBuf,
}

impl World {
    fn new() -> World {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let outside = base.join("outside.txt");
        fs::write(&outside, SECRET).unwrap();
        let workspace = base.join("ws");
        fs::create_dir(&workspace).unwrap();
        World {
            _tmp: tmp,
            outside,
            workspace,
        }
    }

    fn store_dir(&self) -> std::path::PathBuf {
        self.workspace.join(".memory")
    }

    fn open(&self) -> Store {
        Store::open(disk(), &self.store_dir(), MemorySwitches::default()).unwrap()
    }

    fn outside_intact(&self) {
        assert_eq!(fs::read(&self.outside).unwrap(), SECRET);
    }
}

fn index_is_derived(store: &Store) {
    assert_eq!(store.read_index().unwrap(), store.derived_index().unwrap());
}

#[test]
fn links_planted_at_predictable_temp_names_are_never_written_through() {
    let w = World::new();
    let store = w.open();
    for name in [
        ".tabs.md.tmp",
        ".MEMORY.md.tmp",
        ".tabs.md.1.0.0000000000000000.tmp",
    ] {
        symlink(&w.outside, store.root().join(name)).unwrap();
    }
    store.save(&mem("tabs")).unwrap();
    w.outside_intact();
    index_is_derived(&store);
    // The next open removes the planted links as stale temp files (the link, not its target).
    let store = w.open();
    assert_eq!(store.recovery().stale_temps.len(), 3);
    w.outside_intact();
    assert_eq!(
        fs::read_dir(store.root()).unwrap().count(),
        2,
        "tabs.md and MEMORY.md only"
    );
}

#[test]
fn an_index_linked_outside_is_never_recalled_and_is_replaced_not_followed() {
    let w = World::new();
    let store = w.open();
    store.save(&mem("tabs")).unwrap();
    fs::remove_file(store.index_path()).unwrap();
    symlink(&w.outside, store.index_path()).unwrap();
    let msgs = vec![text_message(Role::User, "hello")];
    let r = recall_turn(
        &store,
        "/workspace",
        &msgs,
        &SelectorScript::default(),
        &MemoryConstants::default(),
    )
    .unwrap();
    assert!(!r.system.contains("outside file"), "{}", r.system);
    store.save(&mem("quotes")).unwrap();
    w.outside_intact();
    assert!(!fs::symlink_metadata(store.index_path())
        .unwrap()
        .file_type()
        .is_symlink());
    index_is_derived(&store);
}

#[test]
fn a_store_directory_linked_outside_the_workspace_is_refused() {
    let w = World::new();
    let elsewhere = w.outside.parent().unwrap().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    symlink(&elsewhere, w.store_dir()).unwrap();
    let e = Store::open(disk(), &w.store_dir(), MemorySwitches::default()).unwrap_err();
    assert!(
        matches!(&e, LabError::Refused { message, .. } if message.contains("escapes the workspace")),
        "{e}"
    );
    let e = Harness::new(
        disk(),
        &w.workspace,
        MemorySwitches::default(),
        MemoryConstants::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("escapes the workspace"), "{e}");
    assert_eq!(
        fs::read_dir(&elsewhere).unwrap().count(),
        0,
        "nothing written"
    );
}

#[test]
fn record_files_linked_outside_are_refused_skipped_and_survive_consolidation() {
    let w = World::new();
    let store = w.open();
    for i in 0..10 {
        store.save(&mem(&format!("fact {i:02}"))).unwrap();
    }
    symlink(&w.outside, store.root().join("linked.md")).unwrap();
    assert!(matches!(
        store.save(&mem("linked")),
        Err(LabError::Refused { .. })
    ));
    let r = consolidate(
        &store,
        &ConsolidatorScript::MergePairs,
        &FaultPlan::default(),
        &MemoryConstants::default(),
    )
    .unwrap();
    assert!(matches!(r, Consolidation::Done { .. }), "{r:?}");
    w.outside_intact();
    assert!(fs::symlink_metadata(store.root().join("linked.md")).is_ok());
    index_is_derived(&store);
}

#[test]
fn hard_links_to_outside_files_are_replaced_or_unlinked_never_written() {
    let w = World::new();
    let store = w.open();
    for i in 0..10 {
        store.save(&mem(&format!("fact {i:02}"))).unwrap();
    }
    // An outside file hard-linked into the store as a record (and vice versa).
    let record = store.root().join("fact-00.md");
    let twin = w.workspace.join("twin-of-fact-00.md");
    fs::hard_link(&record, &twin).unwrap();
    let twin_before = fs::read(&twin).unwrap();
    let mut m = mem("fact 00");
    m.body = "Updated body.".into();
    store.save(&m).unwrap();
    assert_eq!(
        fs::read(&twin).unwrap(),
        twin_before,
        "rename replaced the link"
    );
    let r = consolidate(
        &store,
        &ConsolidatorScript::MergePairs,
        &FaultPlan::default(),
        &MemoryConstants::default(),
    )
    .unwrap();
    assert!(matches!(r, Consolidation::Done { .. }), "{r:?}");
    assert_eq!(fs::read(&twin).unwrap(), twin_before);
    index_is_derived(&store);
}

#[test]
fn a_journal_planted_as_a_link_is_dropped_not_followed() {
    let w = World::new();
    let store = w.open();
    store.save(&mem("tabs")).unwrap();
    symlink(&w.outside, store.root().join(JOURNAL_FILE)).unwrap();
    let store = w.open();
    w.outside_intact();
    assert!(fs::symlink_metadata(store.root().join(JOURNAL_FILE)).is_err());
    assert_eq!(store.memory_files().unwrap(), vec!["tabs.md"]);
    assert!(!store.root().join(INDEX_FILE).is_symlink());
}

#[test]
fn an_interrupted_pass_is_recovered_on_the_next_open() {
    let w = World::new();
    let store = w.open();
    for i in 0..10 {
        store.save(&mem(&format!("fact {i:02}"))).unwrap();
    }
    let before = store.snapshot().unwrap();
    // Fail after four deletes with rollback off: only the journal can save the store.
    let sw = MemorySwitches {
        rollback: false,
        ..MemorySwitches::default()
    };
    let broken = Store::open(disk(), &w.store_dir(), sw).unwrap();
    let plan = FaultPlan {
        mid_delete_after: Some(4),
        ..FaultPlan::default()
    };
    let r = consolidate(
        &broken,
        &ConsolidatorScript::MergePairs,
        &plan,
        &MemoryConstants::default(),
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
        "{r:?}"
    );
    assert_eq!(broken.memory_files().unwrap().len(), 6);
    assert!(store.root().join(JOURNAL_FILE).exists());
    // A memory acknowledged after the failed pass must survive the recovery.
    broken.save(&mem("later")).unwrap();
    let reopened = w.open();
    let mut want = before.clone();
    want.insert(
        "later.md".into(),
        fs::read_to_string(reopened.root().join("later.md")).unwrap(),
    );
    assert_eq!(reopened.snapshot().unwrap(), want);
    assert!(reopened.recovery().restored.len() >= 4);
    assert!(!reopened.root().join(JOURNAL_FILE).exists());
    index_is_derived(&reopened);
}

#[test]
fn a_pending_journal_is_undone_before_the_next_pass_can_overwrite_it() {
    let w = World::new();
    let store = w.open();
    for i in 0..10 {
        store.save(&mem(&format!("fact {i:02}"))).unwrap();
    }
    let before = store.snapshot().unwrap();
    let sw = MemorySwitches {
        rollback: false,
        ..MemorySwitches::default()
    };
    let broken = Store::open(disk(), &w.store_dir(), sw).unwrap();
    let plan = FaultPlan {
        mid_rewrite_after: Some(1),
        ..FaultPlan::default()
    };
    let c = MemoryConstants::default();
    let r = consolidate(&broken, &ConsolidatorScript::MergePairs, &plan, &c).unwrap();
    assert!(matches!(r, Consolidation::Failed { .. }), "{r:?}");
    // The same process runs another pass: it first undoes the pending one.
    let r = consolidate(
        &broken,
        &ConsolidatorScript::KeepAll,
        &FaultPlan::default(),
        &c,
    )
    .unwrap();
    assert!(matches!(r, Consolidation::Done { .. }), "{r:?}");
    assert_eq!(broken.snapshot().unwrap(), before);
    index_is_derived(&broken);
}

#[test]
fn a_kill_after_every_operation_loses_nothing() {
    let r = kill_window(MemorySwitches::default()).unwrap();
    assert!(r.points > 20);
    assert_eq!(r.losing, Vec::<String>::new());
    assert_eq!(
        (r.lost, r.index_drift, r.escapes, r.leftover_temps),
        (0, 0, 0, 0)
    );
}

#[test]
fn a_full_disk_at_every_write_loses_nothing() {
    let r = full_disk_window(MemorySwitches::default()).unwrap();
    assert_eq!(r.hit_ops, r.points);
    assert_eq!(r.losing, Vec::<String>::new());
    assert_eq!(
        (
            r.lost,
            r.index_drift,
            r.escapes,
            r.leftover_temps,
            r.temps_after_failure
        ),
        (0, 0, 0, 0, 0)
    );
}
