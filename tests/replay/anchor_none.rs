//! `--anchor none` reads nothing of a log's recorded usage after the first
//! request (issue 47): a replay of a shared Claude Code log and of a copy
//! with every usage figure after the first request stripped predict the same
//! bytes. Only the recorded columns the prediction is scored against (the
//! recorded next request, the product's `preTokens`) may differ, and the test
//! names them. Under `--anchor recorded` the same two files replay
//! differently, so the strip is material and the identity is no accident.

use std::path::{Path, PathBuf};

use crate::common;

/// The shared log with two automatic compactions, attachments put back from
/// recorded usage and the product's counts at every reply: everything the
/// recorded anchor reads.
const LOG: &str = "claude-code-config-9246a0c1__socialaize.jsonl";

/// A copy of `src` in `dir` (same file name, so the same session label)
/// with every usage figure stripped but the first main-chain request's:
/// `message.usage` of every other response, a Task result's usage and
/// token total, and each compaction's `preTokens`. Returns the copy and
/// how many usage objects it stripped.
fn stripped_copy(src: &Path, dir: &Path) -> (PathBuf, usize) {
    let text = std::fs::read_to_string(src).unwrap();
    let mut records: Vec<serde_json::Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let first = records
        .iter()
        .filter(|r| r.get("isSidechain").and_then(|s| s.as_bool()) != Some(true))
        .find(|r| r.pointer("/message/usage").is_some())
        .and_then(|r| r.pointer("/message/id"))
        .cloned()
        .expect("the log records usage");
    let mut stripped = 0;
    for r in &mut records {
        let keep = r.pointer("/message/id") == Some(&first);
        if let Some(m) = r.get_mut("message").and_then(|m| m.as_object_mut()) {
            if !keep && m.remove("usage").is_some() {
                stripped += 1;
            }
        }
        if let Some(t) = r.get_mut("toolUseResult").and_then(|t| t.as_object_mut()) {
            t.remove("usage");
            t.remove("totalTokens");
        }
        if let Some(c) = r.get_mut("compactMetadata").and_then(|c| c.as_object_mut()) {
            c.remove("preTokens");
        }
    }
    let out = dir.join(src.file_name().unwrap());
    let body: String = records.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&out, body).unwrap();
    (out, stripped)
}

/// `lab replay FILE --policy claude-code,none --format json` under
/// `anchor`, with the score columns set to null: what the replay predicted.
fn predicted(file: &Path, anchor: &str) -> (String, serde_json::Value) {
    let out = common::lab_ok(&[
        "replay",
        file.to_str().unwrap(),
        "--policy",
        "claude-code,none",
        "--main-chain-only",
        "--anchor",
        anchor,
        "--format",
        "json",
    ]);
    let mut json: serde_json::Value = serde_json::from_str(&out).unwrap();
    for c in json["product_compactions"].as_array_mut().unwrap() {
        c["recorded_after"] = serde_json::Value::Null;
        c["pre_tokens"] = serde_json::Value::Null;
    }
    (json.to_string(), json)
}

#[test]
fn anchor_none_predicts_the_same_bytes_from_a_log_stripped_of_usage() {
    let Some(dir) = common::transcripts() else {
        return;
    };
    let src = dir.join("claude_code").join(LOG);
    let tmp = tempfile::tempdir().unwrap();
    let (copy, stripped) = stripped_copy(&src, tmp.path());
    assert!(stripped > 100, "only {stripped} usage objects stripped");

    let (intact, json) = predicted(&src, "none");
    let (bare, _) = predicted(&copy, "none");
    assert_eq!(intact, bare, "--anchor none read recorded usage");
    // Every session row says which anchor it used, and the port fired.
    assert!(json["envelopes"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["anchor"] == "none"));
    let rows = json["product_compactions"].as_array().unwrap();
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|c| c["anchor"] == "none"), "{rows:?}");
    assert!(rows[0]["policy_call"].is_u64(), "{rows:?}");

    // The strip is material: the recorded anchor reads what it removed.
    let (intact, _) = predicted(&src, "recorded");
    let (bare, _) = predicted(&copy, "recorded");
    assert_ne!(
        intact, bare,
        "the recorded anchor read nothing the strip removed"
    );
}

#[test]
fn anchor_named_on_a_log_without_usage_is_a_usage_error() {
    let Some(dir) = common::transcripts() else {
        return;
    };
    let traj = dir
        .join("openai_format")
        .join("swe-agent__function-calling-demo__marshmallow-1867.traj");
    let path = traj.to_str().unwrap();
    let (code, out, err) = common::lab(&["replay", path, "--policy", "none", "--anchor", "none"]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty(), "a partial table: {out}");
    assert!(err.contains("--anchor none") && err.contains(path), "{err}");
    assert!(err.contains("records none"), "{err}");
    // Not named, the default applies without a word.
    let (code, _, err) = common::lab(&["replay", path, "--policy", "none"]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn anchor_on_a_profile_replay_is_refused() {
    let (code, out, err) = common::lab(&[
        "replay",
        "scenarios/does-not-matter.json",
        "--profile",
        "course-main",
        "--anchor",
        "recorded",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty());
    assert!(err.contains("--anchor"), "{err}");
}

#[test]
fn a_check_file_carries_the_anchor() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("s.json"),
        serde_json::to_string(&common::tool_session(4, 1)).unwrap(),
    )
    .unwrap();
    let check = |anchor: &str| {
        let body = format!(
            "sessions = [\"s.json\"]\npolicies = [\"none\"]\nanchor = \"{anchor}\"\nexpect = [\"invalid_requests == 0\"]\n"
        );
        let path = dir.path().join("check.toml");
        std::fs::write(&path, body).unwrap();
        common::lab(&["check", path.to_str().unwrap()])
    };
    // An unknown anchor: the file's line and the names to use.
    let (code, _, err) = check("sideways");
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains("check.toml:3:") && err.contains("none or recorded"),
        "{err}"
    );
    // A named anchor on a session that records no usage: a usage error.
    let (code, out, err) = check("recorded");
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty() && err.contains("records none"), "{err}");
}

/// `lab replay FILE --policy none --cost --main-chain-only` in `format`,
/// with the extra arguments.
fn replayed_none(path: &str, format: &str, extra: &[&str]) -> String {
    let mut args = vec![
        "replay",
        path,
        "--policy",
        "none",
        "--cost",
        "--main-chain-only",
        "--format",
        format,
    ];
    args.extend_from_slice(extra);
    common::lab_ok(&args)
}

/// [`replayed_none`]'s JSON Lines rows.
fn jsonl_rows(path: &str, extra: &[&str]) -> Vec<serde_json::Value> {
    replayed_none(path, "jsonl", extra)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn every_run_row_names_its_anchor() {
    let Some(dir) = common::transcripts() else {
        return;
    };
    let log = dir.join("claude_code").join(LOG);
    let path = log.to_str().unwrap();
    // A JSON Lines record stands alone, so it says what its dollars read.
    for (extra, want) in [
        (&[][..], "none"),
        (&["--anchor", "recorded"][..], "recorded"),
    ] {
        let rows = jsonl_rows(path, extra);
        assert!(!rows.is_empty());
        assert!(rows.iter().all(|r| r["anchor"] == want), "{rows:?}");
    }
    // The same through the corpus path (a directory holding the log).
    let corpus = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(&log, corpus.path().join(LOG)).unwrap();
    let rows = jsonl_rows(corpus.path().to_str().unwrap(), &["--anchor", "recorded"]);
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|r| r["anchor"] == "recorded"), "{rows:?}");
    // `--format json`: every run and every priced row.
    let out = replayed_none(path, "json", &["--anchor", "recorded"]);
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    for part in ["runs", "cost"] {
        let rows = json[part].as_array().unwrap();
        assert!(!rows.is_empty(), "{part}");
        assert!(rows.iter().all(|r| r["anchor"] == "recorded"), "{part}");
    }
    // A session that records no usage has no anchor to name.
    let traj = dir
        .join("openai_format")
        .join("swe-agent__function-calling-demo__marshmallow-1867.traj");
    let rows = jsonl_rows(traj.to_str().unwrap(), &[]);
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|r| r["anchor"].is_null()), "{rows:?}");
}
