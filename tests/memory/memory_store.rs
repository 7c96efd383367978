//! Store invariants: hostile names are refused and write nothing, symlinks
//! out of the store are refused, writes are atomic, the index is derived.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use ctxlab::error::LabError;
use ctxlab::memory::checker::check;
use ctxlab::memory::extract::ExtractorScript;
use ctxlab::memory::session::{Harness, Session, Turn};
use ctxlab::memory::store::{Memory, Store};
use ctxlab::memory::switches::{MemoryConstants, MemorySwitches};
use ctxlab::storage::{DiskFs, Shared};

/// The store on the real file system (these tests plant real symlinks).
fn disk_store(dir: &Path) -> Store {
    let fs: Shared = std::sync::Arc::new(DiskFs);
    Store::open(fs, dir, MemorySwitches::default()).unwrap()
}

/// Every file and directory under `root` with its bytes (dirs and symlinks marked).
fn tree(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = fs::symlink_metadata(&p).unwrap();
            if m.file_type().is_symlink() {
                out.insert(
                    p.clone(),
                    format!("-> {}", fs::read_link(&p).unwrap().display()).into_bytes(),
                );
            } else if m.is_dir() {
                out.insert(p.clone(), b"<dir>".to_vec());
                stack.push(p);
            } else {
                out.insert(p.clone(), fs::read(&p).unwrap());
            }
        }
    }
    out
}

fn hostile_names() -> Vec<String> {
    let mut v: Vec<String> = [
        "",
        "   ",
        "a/b",
        "/etc/passwd",
        "../escape",
        "x/../../escape",
        "..",
        "a..b",
        "a\\b",
        "..\\escape",
        "a\0b",
        "MEMORY.md",
        "memory.md",
        "Memory.MD",
        "MEMORY",
        " memory ",
        "memory!",
        "!!!",
        "---",
        "\u{FE52}\u{FE52}",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.push("a".repeat(300));
    v
}

fn mem(name: &str) -> Memory {
    Memory {
        name: name.into(),
        mem_type: "user".into(),
        description: "hostile".into(),
        body: "body".into(),
    }
}

#[test]
fn every_hostile_name_is_refused_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = disk_store(&dir.path().join("store"));
    store.save(&mem("existing")).unwrap();
    let before = tree(dir.path());
    for name in hostile_names() {
        for result in [
            store.save(&mem(&name)).map(|_| ()),
            store.delete(&name).map(|_| ()),
        ] {
            match result {
                Err(LabError::Refused { message, fix }) => {
                    assert!(!message.is_empty() && !fix.is_empty(), "{name:?}");
                }
                other => panic!("{name:?} not refused: {other:?}"),
            }
        }
        assert_eq!(
            tree(dir.path()),
            before,
            "{name:?} changed the store or its parent"
        );
    }
}

#[test]
fn hostile_names_from_the_extractor_are_refused_in_a_session() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = Harness::new(
        std::sync::Arc::new(DiskFs),
        dir.path(),
        MemorySwitches::default(),
        MemoryConstants::default(),
    )
    .unwrap();
    let names = hostile_names();
    let items: Vec<serde_json::Value> = names
        .iter()
        .filter(|n| !n.trim().is_empty())
        .map(|n| serde_json::json!({"name": n, "type": "user", "description": format!("d {n}"), "body": format!("b {n}"), "scope": "persistent"}))
        .collect();
    let n = items.len() as u64;
    let turn = Turn {
        user: "remember these".into(),
        assistant: "ok".into(),
        extractor: ExtractorScript::Reply(serde_json::Value::Array(items).to_string()),
        ..Turn::default()
    };
    h.run_sessions(&[Session { turns: vec![turn] }]).unwrap();
    let c = check(&h).unwrap();
    assert_eq!(c.count_of("written_outside_store"), Some(0));
    assert_eq!(c.count_of("refused_writes"), Some(n));
    assert_eq!(c.count_of("store_size"), Some(0));
    // Nothing at all outside `.memory`, and nothing but the (empty) index plus no temp files inside.
    let files: Vec<String> = tree(dir.path())
        .keys()
        .map(|p| p.strip_prefix(dir.path()).unwrap().display().to_string())
        .collect();
    assert_eq!(files, vec![".memory".to_string()], "{files:?}");
}

#[cfg(unix)]
#[test]
fn symlink_out_of_the_store_is_refused_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    fs::create_dir(&outside).unwrap();
    fs::write(outside.join("target.md"), b"precious").unwrap();
    let store = disk_store(&dir.path().join("store"));
    std::os::unix::fs::symlink(outside.join("target.md"), store.root().join("linked.md")).unwrap();
    std::os::unix::fs::symlink(
        dir.path().join("nowhere.md"),
        store.root().join("dangling.md"),
    )
    .unwrap();
    fs::create_dir(store.root().join("folder.md")).unwrap();
    let before = tree(dir.path());
    for name in ["linked", "dangling", "folder"] {
        let r = store.save(&mem(name));
        assert!(matches!(r, Err(LabError::Refused { .. })), "{name}: {r:?}");
        assert_eq!(tree(dir.path()), before, "{name}");
    }
    assert_eq!(fs::read(outside.join("target.md")).unwrap(), b"precious");
    // The listing (and so the index) ignores the escaping entries.
    store.save(&mem("fine")).unwrap();
    assert_eq!(store.memory_files().unwrap(), vec!["fine.md"]);
    assert_eq!(store.read_index().unwrap(), "- [fine](fine.md) - hostile\n");
}

#[cfg(unix)]
#[test]
fn symlink_inside_the_store_is_replaced_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let store = disk_store(&dir.path().join("store"));
    store.save(&mem("real")).unwrap();
    std::os::unix::fs::symlink(store.root().join("real.md"), store.root().join("alias.md"))
        .unwrap();
    let real_before = fs::read(store.root().join("real.md")).unwrap();
    store.save(&mem("alias")).unwrap();
    assert_eq!(fs::read(store.root().join("real.md")).unwrap(), real_before);
    assert!(!fs::symlink_metadata(store.root().join("alias.md"))
        .unwrap()
        .file_type()
        .is_symlink());
}

#[test]
fn writes_leave_no_temp_files_and_index_is_derived() {
    let dir = tempfile::tempdir().unwrap();
    let store = disk_store(&dir.path().join("store"));
    for n in ["b note", "a note", "B Note", "note: colon", "用户偏好"] {
        store.save(&mem(n)).unwrap();
    }
    let names: Vec<String> = fs::read_dir(store.root())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.starts_with('.')), "{names:?}");
    assert_eq!(
        store.memory_files().unwrap(),
        vec!["a-note.md", "b-note.md", "note-colon.md", "用户偏好.md"]
    );
    assert_eq!(store.read_index().unwrap(), store.derived_index().unwrap());
    // Frontmatter round-trips through the strict parser, including a quoted name.
    let recs = store.records().unwrap();
    assert!(recs.iter().any(|r| r.memory.name == "note: colon"));
}

#[test]
fn a_hand_edited_index_is_overwritten_by_the_next_write() {
    let dir = tempfile::tempdir().unwrap();
    let store = disk_store(&dir.path().join("store"));
    store.save(&mem("one")).unwrap();
    fs::write(store.index_path(), "- [ghost](ghost.md) - not a file\n").unwrap();
    store.save(&mem("two")).unwrap();
    assert_eq!(
        store.read_index().unwrap(),
        "- [one](one.md) - hostile\n- [two](two.md) - hostile\n"
    );
}

#[test]
fn malformed_memory_file_is_quarantined_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let store = disk_store(&dir.path().join("store"));
    fs::write(
        store.root().join("bad.md"),
        "---\nname: [bad\n---\n\nbody\n",
    )
    .unwrap();
    store.save(&mem("good")).unwrap();
    let scan = store.scan().unwrap();
    assert_eq!(scan.records.len(), 1);
    assert_eq!(scan.quarantined.len(), 1);
    assert_eq!(scan.quarantined[0].file, "bad.md");
    assert_eq!(scan.quarantined[0].line, 2, "{:?}", scan.quarantined);
    assert_eq!(store.read_index().unwrap(), "- [good](good.md) - hostile\n");
    assert!(
        store.root().join("bad.md").exists(),
        "quarantine never deletes"
    );
}
