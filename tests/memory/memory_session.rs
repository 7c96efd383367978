//! Harness control flow: recall once per turn from user text only, extraction
//! only after a turn without a tool call, consolidation only after a store,
//! one log line per skipped consolidation, growth past the input cap.

use ctxlab::memory::checker::check;
use ctxlab::memory::consolidate::{ConsolidatorScript, FaultPlan};
use ctxlab::memory::experiments::growth_curve;
use ctxlab::memory::extract::ExtractorScript;
use ctxlab::memory::recall::{SelectionPath, SelectorScript};
use ctxlab::memory::session::{Harness, Session, ToolCall, Turn};
use ctxlab::memory::store::Memory;
use ctxlab::memory::switches::{MemoryConstants, MemorySwitches};

fn cand(name: &str) -> String {
    serde_json::json!([{"name": name, "type": "user", "description": format!("about {name}"), "body": format!("{name} body"), "scope": "persistent"}]).to_string()
}

fn harness() -> Harness {
    let (fs, dir) = ctxlab::memory::session::sandbox();
    Harness::new(
        fs,
        &dir,
        MemorySwitches::default(),
        MemoryConstants::default(),
    )
    .unwrap()
}

#[test]
fn tool_output_reaches_neither_query_nor_extractor() {
    let mut h = harness();
    h.seed(&[Memory {
        name: "tabs".into(),
        mem_type: "user".into(),
        description: "prefers tabs".into(),
        body: "Use tabs.".into(),
    }])
    .unwrap();
    let turn = Turn {
        user: "Format the file with my indentation.".into(),
        tool_calls: vec![ToolCall {
            name: "bash".into(),
            input: serde_json::json!({"command": "cat x"}),
            result: "TOOL-OUTPUT-SECRET ".repeat(50),
        }],
        assistant: "Done with tabs.".into(),
        selector: SelectorScript::Fail("timeout".into()),
        ..Turn::default()
    };
    h.run_sessions(&[Session {
        turns: vec![
            turn.clone(),
            Turn {
                user: "Thanks".into(),
                ..turn
            },
        ],
    }])
    .unwrap();
    let recall = h.last_recall.clone().unwrap();
    assert_eq!(recall.query, "Format the file with my indentation.\nThanks");
    assert_eq!(recall.selection.path, SelectionPath::KeywordFallback);
    let ex = h.last_extract.clone().unwrap();
    // Six text messages, none carrying tool output.
    let expected = "user: Format the file with my indentation.\nassistant: Done with tabs.\nuser: Thanks\nassistant: Done with tabs.";
    assert_eq!(ex.input_chars, expected.chars().count());
    assert!(
        ex.prompt.ends_with(&format!("Dialogue:\n{expected}")),
        "{}",
        ex.prompt
    );
    assert!(ex
        .prompt
        .contains("Existing memory catalog:\n- tabs: prefers tabs"));
    assert!(!ex.prompt.contains("TOOL-OUTPUT") && !recall.selector_prompt.contains("TOOL-OUTPUT"));
    assert!(
        recall
            .selector_prompt
            .ends_with("Memory catalog:\n0: tabs - prefers tabs"),
        "{}",
        recall.selector_prompt
    );
    assert_eq!(check(&h).unwrap().count_of("system_prompts"), Some(2));
}

#[test]
fn extraction_waits_for_a_turn_without_tool_call() {
    let mut h = harness();
    let interrupted = Turn {
        user: "remember tabs".into(),
        tool_calls: vec![ToolCall {
            name: "bash".into(),
            input: serde_json::Value::Null,
            result: "ok".into(),
        }],
        interrupted: true,
        extractor: ExtractorScript::Reply(cand("tabs")),
        ..Turn::default()
    };
    h.run_sessions(&[Session {
        turns: vec![interrupted.clone()],
    }])
    .unwrap();
    assert!(h.last_extract.is_none());
    assert_eq!(h.store.memory_files().unwrap().len(), 0);
    h.run_sessions(&[Session {
        turns: vec![Turn {
            interrupted: false,
            assistant: "ok".into(),
            ..interrupted
        }],
    }])
    .unwrap();
    assert_eq!(h.store.memory_files().unwrap(), vec!["tabs.md"]);
}

#[test]
fn consolidation_runs_only_after_a_store_and_logs_one_line_on_failure() {
    let (fs, dir) = ctxlab::memory::session::sandbox();
    let constants = MemoryConstants {
        consolidate_threshold: 2,
        ..MemoryConstants::default()
    };
    let mut h = Harness::new(fs, &dir, MemorySwitches::default(), constants).unwrap();
    h.seed(&[
        Memory {
            name: "a".into(),
            mem_type: "user".into(),
            description: "a".into(),
            body: "a".into(),
        },
        Memory {
            name: "b".into(),
            mem_type: "user".into(),
            description: "b".into(),
            body: "b".into(),
        },
    ])
    .unwrap();
    // Over threshold, but nothing new stored: no consolidation.
    let quiet = Turn {
        user: "hi".into(),
        assistant: "hello".into(),
        consolidator: ConsolidatorScript::Fail("must not be called".into()),
        ..Turn::default()
    };
    h.run_sessions(&[Session { turns: vec![quiet] }]).unwrap();
    assert!(h.log.is_empty(), "{:?}", h.log);
    // A new store triggers it; the injected fault is rolled back and logged once.
    let t = Turn {
        user: "remember c".into(),
        assistant: "ok".into(),
        extractor: ExtractorScript::Reply(cand("c")),
        faults: FaultPlan {
            mid_rewrite_after: Some(1),
            ..FaultPlan::default()
        },
        ..Turn::default()
    };
    h.run_sessions(&[Session { turns: vec![t] }]).unwrap();
    let skipped: Vec<&String> = h
        .log
        .iter()
        .filter(|l| l.starts_with("[Memory consolidation skipped:"))
        .collect();
    assert_eq!(skipped.len(), 1, "{:?}", h.log);
    let c = check(&h).unwrap();
    assert_eq!(
        (
            c.count_of("rollbacks"),
            c.count_of("acknowledged_lost"),
            c.count_of("store_size")
        ),
        (Some(1), Some(0), Some(3))
    );
}

#[test]
fn growth_is_unbounded_past_the_cap_and_bounded_when_chunked() {
    let course = growth_curve(10, MemorySwitches::default()).unwrap();
    assert_eq!(course, (1..=10).map(|s| 3 * s).collect::<Vec<u64>>());
    let chunked = growth_curve(
        10,
        MemorySwitches {
            chunked_consolidation: true,
            ..MemorySwitches::default()
        },
    )
    .unwrap();
    assert!(chunked.iter().all(|&n| n <= 12), "{chunked:?}");
    assert_eq!(
        growth_curve(10, MemorySwitches::default()).unwrap(),
        course,
        "deterministic"
    );
}

#[test]
fn names_sharing_a_slug_are_counted_as_overwrites_and_losses() {
    let mut h = harness();
    let m = |name: &str, d: &str| ctxlab::memory::store::Memory {
        name: name.into(),
        mem_type: "user".into(),
        description: d.into(),
        body: format!("{d} body"),
    };
    h.seed(&[m("Tabs", "one"), m("tabs", "two"), m("TABS!", "three")])
        .unwrap();
    let c = ctxlab::memory::checker::check(&h).unwrap();
    assert_eq!(c.count_of("store_size"), Some(1));
    assert_eq!(c.count_of("acknowledged_lost"), Some(2));
    assert_eq!(c.count_of("overwritten_by_other_memory"), Some(2));
    let lost = &c.get("acknowledged_lost").unwrap().samples;
    assert_eq!(lost, &vec!["Tabs".to_string(), "tabs".to_string()]);
    // The same name written again is an update, not a loss.
    let mut h = harness();
    h.seed(&[m("tabs", "one"), m("tabs", "two")]).unwrap();
    let c = ctxlab::memory::checker::check(&h).unwrap();
    assert_eq!(c.count_of("acknowledged_lost"), Some(0));
    assert_eq!(c.count_of("overwritten_by_other_memory"), Some(0));
}

#[test]
fn a_refused_model_tool_write_is_counted() {
    let (fs, dir) = ctxlab::memory::session::sandbox();
    let sw = MemorySwitches {
        model_has_write_tool: true,
        ..MemorySwitches::default()
    };
    let mut h = Harness::new(fs, &dir, sw, MemoryConstants::default()).unwrap();
    let write = |name: &str, description: &str| ToolCall {
        name: "memory_write".into(),
        input: serde_json::json!({"name": name, "type": "user", "description": description, "body": "b"}),
        result: String::new(),
    };
    let turn = Turn {
        user: "remember".into(),
        assistant: "ok".into(),
        tool_calls: vec![
            write("../escape", "d"),
            write("blank", " "),
            write("fine", "d"),
        ],
        ..Turn::default()
    };
    h.run_sessions(&[Session { turns: vec![turn] }]).unwrap();
    let c = check(&h).unwrap();
    assert_eq!(c.count_of("refused_writes"), Some(2));
    assert_eq!(c.count_of("model_writes"), Some(1));
    assert_eq!(c.count_of("written_outside_store"), Some(0));
}
