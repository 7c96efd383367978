//! Defects the differential test and the fault kit found in the store, one
//! test each: long names, silent quarantine, an obstructed or hostile
//! journal, a save whose index rewrite fails, an extraction stopped by a
//! full disk.

use std::path::Path;
use std::sync::Arc;

use ctxlab::error::LabError;
use ctxlab::memory::checker::check;
use ctxlab::memory::consolidate::{consolidate, Consolidation, ConsolidatorScript, FaultPlan};
use ctxlab::memory::extract::ExtractorScript;
use ctxlab::memory::journal::JOURNAL_FILE;
use ctxlab::memory::session::{Harness, Session, Turn};
use ctxlab::memory::store::{Memory, Store};
use ctxlab::memory::switches::{MemoryConstants, MemorySwitches};
use ctxlab::storage::{self, DiskFs, Faulty, MemFs, Shared, Storage};

fn mem(name: &str, body: &str) -> Memory {
    Memory {
        name: name.into(),
        mem_type: "user".into(),
        description: format!("about {name}"),
        body: body.into(),
    }
}

fn mem_store() -> (Shared, Store) {
    let fs: Shared = Arc::new(MemFs::new());
    let store = Store::open(fs.clone(), Path::new("/w/m"), MemorySwitches::default()).unwrap();
    (fs, store)
}

/// The outcome of saving `m` on both backends, as (ok, file or error kind).
fn save_on_both(m: &Memory) -> [Result<String, String>; 2] {
    let dir = tempfile::tempdir().unwrap();
    let disk = Store::open(
        Arc::new(DiskFs),
        &dir.path().join("m"),
        MemorySwitches::default(),
    )
    .unwrap();
    let (_, in_mem) = mem_store();
    [disk, in_mem].map(|s| match s.save(m) {
        Ok(file) => {
            let files = s.fs().list(s.root()).unwrap();
            assert!(files.iter().all(|f| !storage::is_temp_name(f)), "{files:?}");
            Ok(file)
        }
        Err(LabError::Refused { .. }) => Err("refused".into()),
        Err(e) => Err(format!("other: {e}")),
    })
}

#[test]
fn a_name_near_the_file_name_limit_saves_on_disk_and_in_memory_alike() {
    for len in [200, 223, 240, 252] {
        let name = "n".repeat(len);
        let [disk, in_mem] = save_on_both(&mem(&name, "body"));
        let want = Ok(format!("{name}.md"));
        assert_eq!(disk, want, "{len}-byte slug on disk");
        assert_eq!(in_mem, want, "{len}-byte slug in memory");
    }
    // Multi-byte: 84 three-byte characters are 252 bytes.
    let [disk, in_mem] = save_on_both(&mem(&"记".repeat(84), "body"));
    assert!(disk.is_ok() && disk == in_mem, "{disk:?} {in_mem:?}");
    for len in [253, 400] {
        let both = save_on_both(&mem(&"n".repeat(len), "body"));
        let refused: Result<String, String> = Err("refused".into());
        assert_eq!(both, [refused.clone(), refused], "{len}");
    }
}

#[test]
fn the_in_memory_backend_refuses_the_names_the_disk_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let disk_root = dir.path().canonicalize().unwrap();
    let mem = MemFs::new();
    mem.create_dir_all(Path::new("/w")).unwrap();
    for (len, ok) in [(255, true), (256, false)] {
        let name = "x".repeat(len);
        let on_disk = DiskFs.write_new(&disk_root.join(&name), b"a").is_ok();
        let in_mem = mem.write_new(&Path::new("/w").join(&name), b"a").is_ok();
        assert_eq!((on_disk, in_mem), (ok, ok), "{len}-byte name");
        let in_mem = mem.write(&Path::new("/w/y").join(&name), b"a").is_ok();
        assert!(!in_mem, "no parent: refused either way");
    }
    assert!(mem
        .create_dir_all(&Path::new("/w").join("d".repeat(256)))
        .is_err());
}

#[test]
fn a_quarantined_file_reaches_the_checker_with_its_reason_and_fix_and_a_log_line() {
    let fs: Shared = Arc::new(MemFs::new());
    let sandbox = Path::new("/s");
    fs.create_dir_all(&sandbox.join(".memory")).unwrap();
    fs.write(
        &sandbox.join(".memory/broken.md"),
        b"---\nname: broken\ndescription: [not, a, string]\ntype: user\n---\n\nbody\n",
    )
    .unwrap();
    let h = Harness::new(
        fs,
        sandbox,
        MemorySwitches::default(),
        MemoryConstants::default(),
    )
    .unwrap();
    let c = check(&h).unwrap();
    assert_eq!(c.count_of("quarantined"), Some(1));
    let sample = &c.get("quarantined").unwrap().samples[0];
    assert!(sample.starts_with("broken.md:3:14: "), "{sample}");
    assert!(sample.contains("nested or aliased value"), "{sample}");
    assert!(sample.contains("fix: "), "{sample}");
    let line = h.log.iter().find(|l| l.contains("broken.md")).cloned();
    let line = line.unwrap_or_else(|| panic!("no log line: {:?}", h.log));
    assert!(
        line.contains("quarantined") && line.contains(":3:14"),
        "{line}"
    );
}

#[test]
fn a_nul_inside_a_value_is_reported_on_its_own_line() {
    let (fs, store) = mem_store();
    let text = "---\nname: ok\ntype: user\ndescription: a\u{0}b\n---\n\nbody\n";
    fs.write(&store.root().join("nul.md"), text.as_bytes())
        .unwrap();
    let q = store.scan().unwrap().quarantined;
    assert_eq!(q.len(), 1, "{q:?}");
    assert_eq!((q[0].line, q[0].column), (4, 15), "{q:?}");
}

#[test]
fn a_directory_in_the_journal_s_place_opens_the_store_and_refuses_consolidation_by_name() {
    let (fs, store) = mem_store();
    for i in 0..4 {
        store.save(&mem(&format!("fact {i}"), "b")).unwrap();
    }
    let journal = store.root().join(JOURNAL_FILE);
    fs.create_dir_all(&journal.join("inside")).unwrap();
    fs.write(&journal.join("inside/keep.txt"), b"someone's")
        .unwrap();
    let store = Store::open(fs.clone(), Path::new("/w/m"), MemorySwitches::default()).unwrap();
    let why = store.recovery().untrusted_journal.clone().unwrap();
    assert!(
        why.contains(JOURNAL_FILE) && why.contains("directory"),
        "{why}"
    );
    assert_eq!(store.memory_files().unwrap().len(), 4);
    let before = store.snapshot().unwrap();
    let constants = MemoryConstants {
        consolidate_threshold: 2,
        ..MemoryConstants::default()
    };
    let r = consolidate(
        &store,
        &ConsolidatorScript::MergePairs,
        &FaultPlan::default(),
        &constants,
    )
    .unwrap();
    match r {
        Consolidation::Failed { error, .. } => {
            assert!(
                error.contains(JOURNAL_FILE) && error.contains("move"),
                "{error}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(store.snapshot().unwrap(), before, "nothing deleted");
    assert_eq!(
        fs.read(&journal.join("inside/keep.txt")).unwrap(),
        b"someone's"
    );
}

#[test]
fn a_journal_naming_a_path_outside_the_store_is_not_acted_on() {
    let (fs, store) = mem_store();
    store.save(&mem("tabs", "Use tabs.")).unwrap();
    fs.create_dir_all(Path::new("/w/x")).unwrap();
    let journal = store.root().join(JOURNAL_FILE);
    for bad in ["../x/evil.md", "/etc/evil.md", "sub/evil.md", ".hidden.md"] {
        let text = serde_json::json!({
            "schema": "ctxlab.memory-journal/1",
            "before": {"tabs.md": "---\nname: tabs\n---\nreplaced", bad: "planted"},
            "writes": {},
        });
        fs.write(&journal, text.to_string().as_bytes()).unwrap();
        let before = store.snapshot().unwrap();
        let reopened =
            Store::open(fs.clone(), Path::new("/w/m"), MemorySwitches::default()).unwrap();
        let why = reopened.recovery().untrusted_journal.clone().unwrap();
        assert!(why.contains(JOURNAL_FILE) && why.contains(bad), "{why}");
        assert!(reopened.recovery().restored.is_empty(), "{bad}");
        assert_eq!(reopened.snapshot().unwrap(), before, "{bad}");
        assert!(
            fs.kind(&journal).is_none(),
            "{bad}: the untrusted journal stays"
        );
        assert!(fs.kind(Path::new("/w/x/evil.md")).is_none());
        assert!(fs.kind(Path::new("/etc/evil.md")).is_none());
    }
}

/// A store whose backend has `free` bytes left.
fn full_store(free: u64) -> (Shared, Store) {
    let inner: Shared = Arc::new(MemFs::new());
    let plan = storage::FaultPlan {
        free_bytes: Some(free),
        ..storage::FaultPlan::default()
    };
    let fs: Shared = Arc::new(Faulty::new(inner, plan));
    let store = Store::open(fs.clone(), Path::new("/w/m"), MemorySwitches::default()).unwrap();
    (fs, store)
}

#[test]
fn a_save_whose_index_rewrite_fails_says_the_memory_was_kept() {
    let m = mem("tabs", "Use tabs.");
    let (_, probe) = mem_store();
    let (path, text) = probe.planned(&m).unwrap();
    // Room for the memory file, not for the index after it.
    let (fs, store) = full_store(text.len() as u64 + 10);
    let e = store.save(&m).unwrap_err();
    assert_eq!(e.exit_code(), 5, "the documented code for kept data");
    assert!(e.to_string().contains("kept: nothing was lost"), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("\"tabs\" was written to tabs.md and is kept"),
        "{msg}"
    );
    assert_eq!(fs.read(&path).unwrap(), text.as_bytes());
    assert_eq!(store.written(&m).unwrap(), Some("tabs.md".into()));
    // Intact: with room for both, no error.
    let (_, roomy) = full_store(10_000);
    roomy.save(&m).unwrap();
}

fn extraction_turn(items: &[Memory]) -> Turn {
    let items: Vec<serde_json::Value> = items
        .iter()
        .map(|m| serde_json::json!({"name": m.name, "type": m.mem_type, "description": m.description, "body": m.body, "scope": "persistent"}))
        .collect();
    Turn {
        user: "remember these".into(),
        assistant: "ok".into(),
        extractor: ExtractorScript::Reply(serde_json::Value::Array(items).to_string()),
        ..Turn::default()
    }
}

/// Run one extraction turn of `items` on a backend with `free` bytes.
fn extract_on_full_disk(free: u64, items: &[Memory]) -> Harness {
    let inner: Shared = Arc::new(MemFs::new());
    let plan = storage::FaultPlan {
        free_bytes: Some(free),
        ..storage::FaultPlan::default()
    };
    let fs: Shared = Arc::new(Faulty::new(inner, plan));
    let mut h = Harness::new(
        fs,
        Path::new("/s"),
        MemorySwitches::default(),
        MemoryConstants::default(),
    )
    .unwrap();
    h.run_sessions(&[Session {
        turns: vec![extraction_turn(items)],
    }])
    .expect("a full disk stops the batch, not the turn");
    h
}

#[test]
fn a_full_disk_mid_extraction_keeps_and_acknowledges_what_was_stored() {
    let items = [
        mem("first", "Short."),
        mem("second", &"big ".repeat(5_000)),
        mem("third", "Short too."),
    ];
    let h = extract_on_full_disk(2_000, &items);
    assert_eq!(
        h.ledger.acknowledged.keys().collect::<Vec<_>>(),
        vec!["first"]
    );
    assert_eq!(h.store.memory_files().unwrap(), vec!["first.md"]);
    let report = h.last_extract.as_ref().unwrap();
    assert!(report.stopped.is_some());
    assert_eq!(report.outcomes.len(), 2, "the third is not tried");
    let log = h.log.join("\n");
    assert!(
        log.contains("[Memory extraction stopped") && log.contains("kept the 1 record(s)"),
        "{log}"
    );
    let c = check(&h).unwrap();
    assert_eq!(c.count_of("acknowledged_lost"), Some(0));
    // Intact: with room, all three are stored and nothing stops.
    let h = extract_on_full_disk(1_000_000, &items);
    assert_eq!(h.ledger.acknowledged.len(), 3);
    assert!(h.last_extract.as_ref().unwrap().stopped.is_none());
}

/// A memory directory on disk: two good memories, one malformed, plus
/// files the store does not list (hidden, the index, not Markdown).
fn store_on_disk(dir: &Path) -> std::path::PathBuf {
    let store = dir.join("store");
    std::fs::create_dir_all(&store).unwrap();
    let good = |name: &str| {
        format!(
            "---\nname: {name}\ndescription: about {name}\ntype: user\n---\n\nBody of {name}.\n"
        )
    };
    std::fs::write(store.join("tabs.md"), good("tabs")).unwrap();
    std::fs::write(store.join("quotes.md"), good("quotes")).unwrap();
    std::fs::write(store.join("broken.md"), "---\nname: [x]\n---\n").unwrap();
    std::fs::write(store.join(".hidden.md"), good("hidden")).unwrap();
    std::fs::write(store.join("MEMORY.md"), "stale index").unwrap();
    std::fs::write(store.join("notes.txt"), "not a memory").unwrap();
    store
}

fn listing(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn a_memory_scenario_starts_from_a_store_on_disk_on_either_backend_and_never_writes_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_on_disk(dir.path());
    let before = listing(&store);
    let scenario = crate::common::write(
        dir.path(),
        "from_disk.json",
        r#"{"schema": "ctxlab.memory-scenario/1", "seed_store": "store",
            "sessions": [{"turns": [{"user": "hi", "assistant": "ok"}]}],
            "expect": {"store_size": 2, "quarantined": 1, "index_drift": 0}}"#,
    );
    let path = scenario.to_str().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    for fs in ["mem", "disk"] {
        let out = crate::common::lab_command()
            .args(["run", path, "--fs", fs, "--format", "json"])
            .env("TMPDIR", tmp.path())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "--fs {fs}: {stdout} {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("broken.md:2:7"), "--fs {fs}: {stdout}");
        assert_eq!(listing(&store), before, "--fs {fs} wrote to the seed store");
        let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
        assert!(left.is_empty(), "--fs {fs} left {left:?} behind");
    }
}

#[test]
fn fs_disk_runs_a_memory_scenario_on_disk() {
    // With TMPDIR pointing nowhere, only a run that really goes to disk fails.
    let dir = tempfile::tempdir().unwrap();
    let scenario = crate::common::write(
        dir.path(),
        "tiny.json",
        r#"{"schema": "ctxlab.memory-scenario/1", "sessions": [], "expect": {"store_size": 0}}"#,
    );
    let nowhere = dir.path().join("no-such-dir");
    let run = |fs: &str| {
        crate::common::lab_command()
            .args(["run", scenario.to_str().unwrap(), "--fs", fs])
            .env("TMPDIR", &nowhere)
            .output()
            .unwrap()
    };
    assert!(run("mem").status.success());
    let out = run("disk");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("creating a sandbox"), "{err}");
}

#[test]
fn a_missing_seed_store_is_an_input_error_at_its_field() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = crate::common::write(
        dir.path(),
        "missing.json",
        "{\"schema\": \"ctxlab.memory-scenario/1\",\n  \"seed_store\": \"nowhere\", \"sessions\": []}",
    );
    let (code, _, err) = crate::common::lab(&["run", scenario.to_str().unwrap()]);
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains("missing.json:2:3") && err.contains("nowhere"),
        "{err}"
    );
    assert!(err.contains("fix:"), "{err}");
}

/// A seed store whose consolidation died midway (its journal still there,
/// one memory already deleted) is recovered when the sandbox's store opens,
/// as the real store would be: the deleted memory is back.
#[test]
fn a_seed_store_carries_its_journal_and_is_recovered() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    std::fs::create_dir_all(&store).unwrap();
    let good = |name: &str| {
        format!(
            "---\nname: {name}\ndescription: about {name}\ntype: user\n---\n\nBody of {name}.\n"
        )
    };
    std::fs::write(store.join("tabs.md"), good("tabs")).unwrap();
    let journal = serde_json::json!({
        "schema": "ctxlab.memory-journal/1",
        "before": {"tabs.md": good("tabs"), "quotes.md": good("quotes")},
        "writes": {}
    });
    std::fs::write(
        store.join(".consolidation-journal.json"),
        journal.to_string(),
    )
    .unwrap();
    let scenario = crate::common::write(
        dir.path(),
        "journal.json",
        r#"{"schema": "ctxlab.memory-scenario/1", "seed_store": "store",
            "sessions": [{"turns": [{"user": "hi", "assistant": "ok"}]}],
            "expect": {"store_size": 2}}"#,
    );
    let out = crate::common::lab_command()
        .args(["run", scenario.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{} {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        store.join(".consolidation-journal.json").exists(),
        "the seed store was written"
    );
}
