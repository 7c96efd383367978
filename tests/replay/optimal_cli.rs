//! `lab replay --optimal`: the cheapest schedule's table, the regret column,
//! one JSON shape, and bad input refused or reported, never a panic.

use crate::common::{lab, lab_ok};

/// A generated session in a temporary directory; the directory and the file.
fn session() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.json");
    std::fs::write(
        &file,
        serde_json::to_string(&crate::common::tool_session(12, 3)).unwrap(),
    )
    .unwrap();
    let path = file.to_str().unwrap().to_string();
    (dir, path)
}

#[test]
fn the_schedule_and_the_regret_column_are_printed() {
    let (_dir, f) = session();
    let alone = lab_ok(&["replay", &f, "--cost", "--optimal"]);
    insta::assert_snapshot!("optimal_alone", alone);
    let with = lab_ok(&[
        "replay",
        &f,
        "--policy",
        "none,anthropic-clear-tool-uses,prototype,vercel-prune-messages",
        "--retention",
        "--cost",
        "--optimal",
        "--envelope",
        "none",
    ]);
    insta::assert_snapshot!("optimal_with_policies", with);
}

#[test]
fn json_has_one_shape_and_every_regret_is_a_bound() {
    let (_dir, f) = session();
    let plain: serde_json::Value = serde_json::from_str(&lab_ok(&[
        "replay", &f, "--policy", "none", "--cost", "--format", "json",
    ]))
    .unwrap();
    assert_eq!(plain["optimal"], serde_json::json!([]));
    assert!(plain["cost"][0]["regret"].is_null());
    let v: serde_json::Value = serde_json::from_str(&lab_ok(&[
        "replay",
        &f,
        "--policy",
        "all",
        "--retention",
        "--cost",
        "--optimal",
        "--format",
        "json",
    ]))
    .unwrap();
    assert_eq!(v["optimal"].as_array().unwrap().len(), 1);
    assert_eq!(v["optimal"][0]["status"], "optimal");
    let costs = v["cost"].as_array().unwrap();
    assert!(costs.len() > 20);
    for c in costs {
        let r = &c["regret"];
        let d = r["dollars"].as_f64().unwrap();
        assert!(d >= -1e-12, "{}: regret {d}", c["policy"]);
        let bound = r["bound"].as_f64().unwrap();
        assert!((c["dollars"].as_f64().unwrap() - bound - d).abs() < 1e-9);
    }
}

#[test]
fn a_floor_out_of_range_is_refused_and_an_impossible_limit_is_reported() {
    let (_dir, f) = session();
    let (code, _, err) = lab(&[
        "replay",
        &f,
        "--cost",
        "--optimal",
        "--optimal-floor",
        "150",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a recall percent in [0, 100]"), "{err}");
    let (code, _, err) = lab(&["replay", &f, "--optimal"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--cost"), "{err}");
    let out = lab_ok(&[
        "replay",
        &f,
        "--cost",
        "--optimal",
        "--optimal-limit",
        "10",
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let status = v["optimal"][0]["status"].as_str().unwrap();
    assert!(
        status.starts_with("infeasible: some request exceeds the limit"),
        "{status}"
    );
    assert!(v["optimal"][0]["schedule"].is_null());
    // A floor above what the uncompacted session keeps is infeasible too
    // (here recall is 100 % without compaction, so 100 is met).
    let out = lab_ok(&[
        "replay",
        &f,
        "--cost",
        "--optimal",
        "--optimal-floor",
        "100",
    ]);
    assert!(out.contains("optimal"), "{out}");
}
