//! Scenario files: the shipped ones pass, damaged ones are refused with a position.

use crate::common;

use std::path::{Path, PathBuf};

use ctxlab::error::LabError;
use ctxlab::scenario;

fn shipped() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut v = common::json_files(&dir);
    v.extend(common::json_files(&dir.join("hunt")));
    v.sort();
    v
}

#[test]
fn every_shipped_scenario_meets_its_expectations() {
    let files = shipped();
    assert!(files.len() >= 10, "{files:?}");
    for f in files {
        let r = scenario::run_file(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert!(r.failures.is_empty(), "{}: {:#?}", f.display(), r.failures);
        assert!(!r.cells.is_empty());
    }
}

#[test]
fn a_broken_expectation_is_reported_as_expected_got() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s.json");
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/seed-scenario-a.json"),
    )
    .unwrap()
    .replace("\"lost_forever\": 1", "\"lost_forever\": 0");
    std::fs::write(&f, text).unwrap();
    let r = scenario::run_file(&f).unwrap();
    assert_eq!(r.failures.len(), 2, "{:?}", r.failures);
    assert!(
        r.failures[0].contains("lost_forever: expected 0, got 1"),
        "{:?}",
        r.failures
    );
}

fn error_of(text: &str) -> (usize, usize, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.json");
    std::fs::write(&f, text).unwrap();
    match scenario::run_file(&f) {
        Err(LabError::Input {
            file,
            line,
            column,
            message,
            fix,
        }) => {
            assert_eq!(file, f);
            (line, column, message, fix)
        }
        other => panic!("expected an input error, got {other:?}"),
    }
}

#[test]
fn malformed_files_name_line_column_field_and_fix() {
    let head = "{\n  \"schema\": \"ctxlab.scenario/1\",\n  \"name\": \"x\",\n  \"profile\": \"prototype\",\n  \"path_len\": [60],\n";
    let (l, c, m, _) = error_of(&format!("{head}  \"script\": [{{\"usr\": \"hi\"}}]\n}}\n"));
    assert_eq!((l, c), (6, 19));
    assert!(
        m.contains("unknown variant `usr`") && m.contains("`user`"),
        "{m}"
    );

    let (l, _, m, fix) = error_of(&format!(
        "{head}  \"script\": [],\n  \"expect\": {{\"all\": {{\"lost_forevr\": 1}}}}\n}}\n"
    ));
    assert_eq!(l, 7);
    assert!(
        m.contains("lost_forevr") && fix.contains("lost_forever"),
        "{m} / {fix}"
    );

    let (l, _, m, _) = error_of(
        &head
            .replace("prototype", "protoype")
            .replace("[60],\n", "[60],\n  \"script\": []\n}"),
    );
    assert_eq!(l, 4);
    assert!(m.contains("field `profile`"), "{m}");

    let (l, _, m, _) = error_of(&format!(
        "{head}  \"set\": {{\"unseen_gaurd\": false}},\n  \"script\": []\n}}\n"
    ));
    assert_eq!(l, 6);
    assert!(m.contains("set.unseen_gaurd"), "{m}");

    let (l, c, m, _) = error_of("{\n  \"schema\": \"ctxlab.scenario/1\",\n  \"name\": \n");
    assert!(l >= 3 && c > 0, "{l}:{c} {m}");

    let (_, _, m, _) = error_of(&format!("{head}  \"script\": [{{\"assistant\": {{\"calls\": [{{\"id\": \"a\", \"chars\": 1}}, {{\"id\": \"a\", \"chars\": 1}}]}}}}]\n}}\n"));
    assert!(m.contains("tool_use id a already used"), "{m}");
}

#[test]
fn hunt_writes_a_minimal_scenario_that_lab_run_reproduces() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("d6.json");
    common::lab_ok(&[
        "hunt",
        "--break",
        "D6",
        "--path-len",
        "60",
        "--seed",
        "3",
        "--out",
        out.to_str().unwrap(),
    ]);
    let r = scenario::run_file(&out).unwrap();
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    let c = &r.cells[0].1;
    assert!(
        c.count_of("lost_forever").unwrap() + c.count_of("pointer_lost").unwrap() > 0
            || c.flag_of("pairs_intact") == Some(false)
    );
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.contains("\"order\": \"micro_first\"") && text.contains("\"unseen_guard\": false"),
        "{text}"
    );
}

#[test]
fn bounds_are_located_errors_and_never_abort() {
    let head = "{\n  \"schema\": \"ctxlab.scenario/1\",\n  \"name\": \"x\",\n  \"profile\": \"prototype\",\n";
    let calls = |chars: &str| {
        format!("  \"script\": [{{\"user\": \"go\"}}, {{\"assistant\": {{\"calls\": [{{\"chars\": {chars}}}]}}}}]\n}}\n")
    };
    // A path length outside the bounds: located at the field, before any run.
    for len in ["5", "4097", "2147483648"] {
        let (l, c, m, _) = error_of(&format!("{head}  \"path_len\": [{len}],\n{}", calls("10")));
        assert_eq!((l, c), (5, 3), "{m}");
        assert!(m.contains("is outside 20..=4096"), "{m}");
    }
    // Result sizes that would abort an allocation are refused with a position.
    for chars in ["1000000000000", "18446744073709551615"] {
        let (l, _, m, _) = error_of(&format!("{head}  \"path_len\": [60],\n{}", calls(chars)));
        assert!(l > 0, "{m}");
        assert!(m.contains("limits:"), "{m}");
    }
}

#[test]
fn overrides_are_validated_together_with_checked_arithmetic() {
    let head = "{\n  \"schema\": \"ctxlab.scenario/1\",\n  \"name\": \"x\",\n  \"profile\": \"prototype\",\n  \"path_len\": [60],\n";
    let script = "  \"script\": [{\"user\": \"go\"}]\n}\n";
    // snip_head=100 alone is invalid; with snip_max_messages=200 the combination holds.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("ok.json");
    std::fs::write(
        &f,
        format!("{head}  \"set\": {{\"snip_head\": 100, \"snip_max_messages\": 200}},\n{script}"),
    )
    .unwrap();
    assert!(scenario::run_file(&f).is_ok());
    let (l, _, m, _) = error_of(&format!(
        "{head}  \"set\": {{\"snip_head\": 1, \"snip_tail_reserve\": 18446744073709551615}},\n{script}"
    ));
    assert_eq!(l, 6, "{m}");
    assert!(m.contains("must exceed"), "{m}");
    // The same through the command-line API, in either order.
    let mut cfg = ctxlab::compact::config::profile("prototype")
        .unwrap()
        .config;
    cfg.apply_overrides(["snip_head=100", "snip_max_messages=200"])
        .unwrap();
    let mut cfg = ctxlab::compact::config::profile("prototype")
        .unwrap()
        .config;
    let e = cfg
        .apply_overrides(["context_char_limit=18446744073709551615"])
        .unwrap_err();
    assert!(e.to_string().contains("overflows"), "{e}");
}
