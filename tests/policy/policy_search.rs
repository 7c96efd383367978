//! Sweeps and hunts over policies, end to end.

use crate::common;
use common::lab;

#[test]
fn a_policy_sweep_separates_the_baseline_from_a_lossy_design() {
    let (code, out, err) = lab(&[
        "sweep",
        "--policy",
        "none,course-f9e8b28",
        "--seeds",
        "3",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let rows: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    assert_eq!(rows.len(), 6);
    for r in &rows {
        let damage = [
            "lost_forever",
            "pointer_lost",
            "dangling_pointers",
            "invalid_requests",
        ]
        .iter()
        .map(|k| r[*k].as_u64().unwrap())
        .sum::<u64>();
        match r["policy"].as_str().unwrap() {
            "none" => assert_eq!(damage, 0, "{r}"),
            _ => assert!(
                damage > 0,
                "f9e8b28 loses results on every generated session: {r}"
            ),
        }
    }
    let (code, _, err) = lab(&["sweep", "--policy", "nope"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn a_policy_hunt_writes_a_shrunk_session_that_replays_the_damage() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("h.json");
    let o = out.to_str().unwrap();
    let (code, text, err) = lab(&["hunt", "--policy", "course-f9e8b28", "--out", o]);
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("shrunk to"), "{text}");
    let (code, json, err) = lab(&[
        "replay",
        o,
        "--policy",
        "course-f9e8b28",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let out: serde_json::Value = serde_json::from_str(&json).unwrap();
    let runs = out["runs"].as_array().unwrap();
    let f = &runs[0]["findings"];
    assert!(
        f["lost_forever"]["count"].as_u64().unwrap() + f["pointer_lost"]["count"].as_u64().unwrap()
            > 0
    );
    // The baseline damages nothing, so its hunt finds nothing and writes nothing.
    let none = dir.path().join("n.json");
    let (code, text, _) = lab(&[
        "hunt",
        "--policy",
        "none",
        "--tries",
        "5",
        "--out",
        none.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    assert!(text.contains("no damaging session"), "{text}");
    assert!(!none.exists());
}
