//! Insta snapshots: each memory verdict's counters, a rebuilt MEMORY.md, a
//! memory file, and an assembled system prompt. All inputs are fixed, so the
//! bytes are stable across runs and machines.

use ctxlab::memory::checker::render;
use ctxlab::memory::experiments::EXPERIMENTS;
use ctxlab::memory::extract::ExtractorScript;
use ctxlab::memory::recall::SelectorScript;
use ctxlab::memory::session::{Harness, Session, Turn};
use ctxlab::memory::store::{Memory, Store};
use ctxlab::memory::switches::{MemoryConstants, MemorySwitches};
use ctxlab::registry::RunOptions;
use ctxlab::storage::Shared;

#[test]
fn verdict_counters() {
    for row in EXPERIMENTS {
        let v = (row.run)(&RunOptions::default()).unwrap();
        let mut text = format!("{}\nchange: {}\n", v.title, v.change);
        for c in &v.cells {
            text.push_str(&format!(
                "\n== [{}] baseline\n{}== [{}] broken\n{}",
                c.label,
                render(&c.baseline),
                c.label,
                render(&c.broken)
            ));
        }
        insta::assert_snapshot!(format!("verdict_{}", row.id), text);
    }
}

#[test]
fn verdict_json_is_stable() {
    let row = EXPERIMENTS.iter().find(|r| r.id == "M-dedup-off").unwrap();
    let v = (row.run)(&RunOptions::default()).unwrap();
    insta::assert_json_snapshot!("verdict_json_M-dedup-off", v);
}

fn sample_store(fs: &Shared, dir: &std::path::Path) -> Store {
    let store = Store::open(fs.clone(), &dir.join(".memory"), MemorySwitches::default()).unwrap();
    for (name, ty, desc, body) in [
        (
            "user-preference-tabs",
            "user",
            "User prefers tabs for indentation",
            "Use tabs, not spaces.\n**Why:** consistency.",
        ),
        (
            "no db mocks",
            "feedback",
            "Integration tests must hit a real database",
            "Do not mock the database.",
        ),
        (
            "auth rewrite",
            "project",
            "Auth rewrite is\ncompliance driven",
            "Legal asked for session token storage changes.",
        ),
        ("用户偏好", "user", "用户喜欢单引号", "字符串使用单引号。"),
        (
            "pipeline bugs",
            "reference",
            "Pipeline bugs: Linear project INGEST",
            "See Linear INGEST.",
        ),
    ] {
        store
            .save(&Memory {
                name: name.into(),
                mem_type: ty.into(),
                description: desc.into(),
                body: body.into(),
            })
            .unwrap();
    }
    store
}

#[test]
fn rebuilt_index_and_memory_file() {
    let (fs, dir) = ctxlab::memory::session::sandbox();
    let store = sample_store(&fs, &dir);
    insta::assert_snapshot!("rebuilt_memory_md", store.read_index().unwrap());
    let raw = fs
        .read_to_string(&store.root().join("auth-rewrite.md"))
        .unwrap();
    insta::assert_snapshot!("memory_file_quoted_description", raw);
}

#[test]
fn assembled_system_prompt() {
    let (fs, dir) = ctxlab::memory::session::sandbox();
    drop(sample_store(&fs, &dir));
    let constants = MemoryConstants {
        recall_char_limit: 150,
        ..MemoryConstants::default()
    };
    let mut h = Harness::new(fs, &dir, MemorySwitches::default(), constants).unwrap();
    let turn = Turn {
        user: "Write the test helper; remember my style preferences.".into(),
        selector: SelectorScript::Reply("Relevant: [4, 1, 4]".into()),
        assistant: "Done.".into(),
        extractor: ExtractorScript::default(),
        ..Turn::default()
    };
    h.run_sessions(&[Session { turns: vec![turn] }]).unwrap();
    let recall = h.last_recall.clone().unwrap();
    assert_eq!(recall.cut_midway, vec!["no-db-mocks.md".to_string()]);
    insta::assert_snapshot!("system_prompt", recall.system);
    insta::assert_snapshot!("selector_prompt", recall.selector_prompt);
    insta::assert_snapshot!("extractor_prompt", h.last_extract.clone().unwrap().prompt);
}
