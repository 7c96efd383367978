//! `lab sweep --policy NAME --vary KEY=A..B:STEP`: a policy's constants
//! swept, with the steps where what it loses or costs changes.

use crate::common;
use serde_json::Value;

#[test]
fn a_codex_window_sweep_on_generated_sessions_finds_where_loss_changes() {
    let out = common::lab_ok(&[
        "sweep",
        "--policy",
        "codex-cli",
        "--vary",
        "context_window=30000|45000|60000",
        "--seeds",
        "4",
        "--jobs",
        "2",
    ]);
    insta::assert_snapshot!("codex_window_sweep", out);
    let json = common::lab_ok(&[
        "sweep",
        "--policy",
        "codex-cli",
        "--vary",
        "context_window=30000|45000|60000",
        "--seeds",
        "4",
        "--format",
        "json",
    ]);
    let v: Value = serde_json::from_str(&json).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0]["policy"], "codex-cli:context_window=30000");
    let lost: Vec<u64> = rows
        .iter()
        .map(|r| r["lost_forever"].as_u64().unwrap())
        .collect();
    assert!(lost[0] > lost[2], "a smaller window loses more: {lost:?}");
    // The thresholds are the steps where a result changes, and only those.
    let steps = v["thresholds"].as_array().unwrap();
    let changed = lost.windows(2).filter(|w| w[0] != w[1]).count();
    assert!(steps.len() >= changed && changed >= 1, "{steps:?}");
}

#[test]
fn each_variant_equals_the_same_spec_replayed_alone() {
    let dir = tempfile::tempdir().unwrap();
    let session = common::write(
        dir.path(),
        "s.json",
        &serde_json::to_string(&common::tool_session(30, 4)).unwrap(),
    );
    let s = session.to_str().unwrap();
    let json = common::lab_ok(&[
        "sweep",
        "--policy",
        "claude-code",
        "--vary",
        "context_window=40000..80000:20000",
        "--sessions",
        s,
        "--format",
        "json",
    ]);
    let v: Value = serde_json::from_str(&json).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    for row in rows {
        let spec = row["policy"].as_str().unwrap();
        let one: Value = serde_json::from_str(&common::lab_ok(&[
            "replay", s, "--policy", spec, "--cost", "--format", "json",
        ]))
        .unwrap();
        let run = &one["runs"][0];
        assert_eq!(
            row["calls"],
            run["calls"].as_array().unwrap().len(),
            "{spec}"
        );
        assert_eq!(
            row["events"],
            run["events"].as_array().unwrap().len(),
            "{spec}"
        );
        assert_eq!(
            row["lost_forever"], run["findings"]["lost_forever"]["count"],
            "{spec}"
        );
        let dollars = one["cost"][0]["dollars"]
            .as_f64()
            .or_else(|| one["cost"][0]["totals"]["dollars"].as_f64());
        let d = row["dollars"].as_f64().unwrap();
        assert!(
            dollars.is_some_and(|x| (x - d).abs() < 1e-9),
            "{spec}: {d} vs {dollars:?}"
        );
    }
}

#[test]
fn bad_sweeps_of_constants_are_usage_errors() {
    for args in [
        &[
            "sweep",
            "--policy",
            "codex-cli",
            "--vary",
            "no_such_key=1|2",
        ][..],
        &[
            "sweep",
            "--policy",
            "codex-cli",
            "--vary",
            "context_window=3..1",
        ],
        &[
            "sweep",
            "--policy",
            "codex-cli,claude-code",
            "--vary",
            "context_window=1|2",
        ],
        &["sweep", "--policy", "aider-chat-summary", "--vary", "x=1|2"],
    ] {
        let (code, out, err) = common::lab(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty() && err.contains("fix:"), "{args:?}: {err}");
    }
}
