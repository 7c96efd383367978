//! Shipped scenario files run green; malformed files are located errors.

use crate::common;

use std::path::{Path, PathBuf};

use ctxlab::error::LabError;
use ctxlab::memory::scenario::run_scenario_file;

fn scenario_files() -> Vec<PathBuf> {
    common::json_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/memory"))
}

#[test]
fn shipped_scenarios_declare_the_memory_schema() {
    for f in scenario_files() {
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(
            ctxlab::memory::scenario::is_memory_scenario(&text),
            "{}",
            f.display()
        );
    }
    assert!(!ctxlab::memory::scenario::is_memory_scenario(
        r#"{"schema": "ctxlab.scenario/1"}"#
    ));
}

#[test]
fn shipped_scenarios_meet_their_expectations() {
    let files = scenario_files();
    assert!(files.len() >= 4, "{files:?}");
    for f in files {
        let (counters, failures) =
            run_scenario_file(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert!(
            failures.is_empty(),
            "{}: {failures:?}\n{}",
            f.display(),
            ctxlab::memory::checker::render(&counters)
        );
    }
}

#[test]
fn scenario_runs_are_deterministic() {
    for f in scenario_files() {
        let a = run_scenario_file(&f).unwrap();
        let b = run_scenario_file(&f).unwrap();
        assert_eq!(a, b, "{}", f.display());
    }
}

#[test]
fn failed_expectations_are_reported_not_raised() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.json");
    std::fs::write(
        &p,
        r#"{"schema": "ctxlab.memory-scenario/1", "sessions": [], "expect": {"store_size": 2, "index_drift": 0}}"#,
    )
    .unwrap();
    let (_, failures) = run_scenario_file(&p).unwrap();
    assert_eq!(failures, vec!["store_size: expected 2, got 0".to_string()]);
}

#[test]
fn malformed_scenario_file_names_file_line_column_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.json");
    std::fs::write(&p, "{\n  \"schema\": \"ctxlab.memory-scenario/1\",\n  \"sessions\": [\n    {\"turns\": [\n      {\"user\": \"hi\", \"faults\": {\"mid_delete_after\": \"three\"}}\n    ]}\n  ]\n}\n").unwrap();
    match run_scenario_file(&p) {
        Err(e @ LabError::Input { .. }) => {
            let LabError::Input {
                ref file,
                line,
                column,
                ref message,
                ref fix,
            } = e
            else {
                unreachable!()
            };
            assert_eq!(file, &p);
            assert_eq!(line, 5);
            assert!(column > 0);
            assert!(
                message.contains("expected usize") && message.contains("field `mid_delete_after`"),
                "{message}"
            );
            assert!(!fix.is_empty());
            let shown = e.to_string();
            assert!(shown.contains("bad.json:5:"), "{shown}");
        }
        other => panic!("{other:?}"),
    }
    std::fs::write(
        &p,
        "{\"schema\": \"ctxlab.memory-scenario/1\", \"sessions\": [], ",
    )
    .unwrap();
    assert!(matches!(
        run_scenario_file(&p),
        Err(LabError::Input { line: 1, .. })
    ));
    assert!(matches!(
        run_scenario_file(&dir.path().join("missing.json")),
        Err(LabError::Io { .. })
    ));
}
