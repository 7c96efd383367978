//! `lab replay … --cost` end to end: output header, exit codes.

use crate::common;
use common::{lab, write};

/// A two-request Claude Code log with usage.
const LOG: &str = r#"{"uuid":"u1","parentUuid":null,"type":"user","timestamp":"2025-08-07T06:00:00Z","message":{"role":"user","content":"hello"}}
{"uuid":"a1","parentUuid":"u1","type":"assistant","timestamp":"2025-08-07T06:00:05Z","message":{"id":"m1","role":"assistant","model":"claude-opus-4-1","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}],"usage":{"input_tokens":4,"cache_creation_input_tokens":2000,"cache_read_input_tokens":0}}}
{"uuid":"u2","parentUuid":"a1","type":"user","timestamp":"2025-08-07T06:00:06Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"a.txt"}]}}
{"uuid":"a2","parentUuid":"u2","type":"assistant","timestamp":"2025-08-07T06:00:09Z","message":{"id":"m2","role":"assistant","model":"claude-opus-4-1","content":[{"type":"text","text":"one file"}],"usage":{"input_tokens":4,"cache_creation_input_tokens":30,"cache_read_input_tokens":2000}}}
"#;

#[test]
fn cost_names_the_tokenizer_and_prints_every_arm() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "s.jsonl", LOG);
    let (code, out, err) = lab(&[
        "replay",
        f.to_str().unwrap(),
        "--cost",
        "--tokens",
        "o200k",
        "--profile",
        "course-main",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("tokens: o200k"), "{out}");
    assert!(out.contains("claude-opus-4.1-5m as of 2025-11-24"), "{out}");
    for arm in ["none", "course-main", "recorded-usage", "recorded-model"] {
        assert!(out.contains(arm), "{arm} missing: {out}");
    }
}

#[test]
fn an_unknown_sheet_exits_2_naming_the_sheets() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "s.jsonl", LOG);
    let (code, out, err) = lab(&["replay", f.to_str().unwrap(), "--cost", "--sheet", "nope"]);
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert!(err.contains("nope") && err.contains("gpt-4.1"), "{err}");
}

#[test]
fn a_broken_log_exits_3_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(
        dir.path(),
        "bad.jsonl",
        "{\"type\":\"user\"}\n{oops}\n{\"type\":\"user\"}\n",
    );
    let (code, out, err) = lab(&["replay", f.to_str().unwrap(), "--cost"]);
    assert_eq!(code, 3, "{err}");
    assert!(out.is_empty());
    assert!(err.contains("bad.jsonl") && err.contains(":2:"), "{err}");
}

#[test]
fn cost_options_without_cost_are_a_usage_error() {
    let (code, out, err) = lab(&["replay", "x.jsonl", "--tokens", "o200k"]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty() && err.contains("--cost"), "{err}");
}

#[test]
fn cost_and_plot_are_exclusive() {
    let (code, _, err) = lab(&["replay", "x.jsonl", "--cost", "--plot", "p.svg"]);
    assert_eq!(code, 2, "{err}");
}

/// Policy replays are priced: every policy gets a cost row beside its loss counters.
#[test]
fn cost_with_policy_prices_every_policy() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.json");
    let session = ctxlab::replay::profiles::synthetic_main(12, 3_000);
    std::fs::write(&path, serde_json::to_string(&session).unwrap()).unwrap();
    let p = path.to_str().unwrap();
    let (code, out, err) = lab(&[
        "replay",
        p,
        "--cost",
        "--policy",
        "none,course-main",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let cost = v["cost"].as_array().unwrap();
    assert_eq!(cost.len(), 2);
    for c in cost {
        assert!(c["dollars"].as_f64().unwrap() > 0.0, "{c}");
        assert!(c["input_tokens"].as_u64().unwrap() > 0, "{c}");
    }
}

/// `lab replay --policy … --format json` has one shape whatever is measured:
/// the same keys without `--cost`/`--retention` as with them.
#[test]
fn policy_json_has_one_shape_whatever_the_flags() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.json");
    let session = ctxlab::replay::profiles::synthetic_main(6, 3_000);
    std::fs::write(&path, serde_json::to_string(&session).unwrap()).unwrap();
    let p = path.to_str().unwrap();
    let d = dir.path().to_str().unwrap();
    let keys_of = |input: &str, extra: &[&str]| {
        let mut args = vec!["replay", input, "--policy", "none", "--format", "json"];
        args.extend_from_slice(extra);
        let (code, out, err) = lab(&args);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let mut k: Vec<String> = v.as_object().expect("an object").keys().cloned().collect();
        k.sort();
        k
    };
    let keys = |extra: &[&str]| keys_of(p, extra);
    let plain = keys(&[]);
    assert_eq!(
        plain,
        [
            "aggregate",
            "closed_loop",
            "corpus",
            "cost",
            "envelopes",
            "optimal",
            "product_compactions",
            "product_counts",
            "recorded",
            "retention",
            "runs",
            "variants"
        ]
    );
    // A corpus (the directory) streams, and prints the same keys.
    assert_eq!(keys_of(d, &["--cost"]), plain);
    assert_eq!(keys(&["--cost"]), plain);
    assert_eq!(keys(&["--retention"]), plain);
    assert_eq!(keys(&["--cost", "--retention"]), plain);
}

/// `--retention` on a profile replay is refused with the fix, not dropped.
#[test]
fn retention_without_policy_is_a_usage_error() {
    let (code, out, err) = lab(&[
        "replay",
        "x.jsonl",
        "--profile",
        "course-main",
        "--retention",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty() && err.contains("--policy"), "{err}");
}

/// A Claude Code log with one prompt and one reply whose request recorded
/// `total` prompt tokens (on line 2).
fn usage_log(dir: &std::path::Path, total: u64) -> std::path::PathBuf {
    let lines = [
        serde_json::json!({"type": "user", "uuid": "u1", "parentUuid": null, "isSidechain": false,
            "message": {"role": "user", "content": "x".repeat(400)}}),
        serde_json::json!({"type": "assistant", "uuid": "a1", "parentUuid": "u1", "isSidechain": false,
            "message": {"id": "msg_1", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
                "content": [{"type": "text", "text": "ok"}],
                "usage": {"input_tokens": total, "output_tokens": 1}}}),
    ];
    let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    write(dir, "u.jsonl", &text.join("\n"))
}

/// Bad envelopes: too large for the first request, or usage below the
/// logged messages: exit 3 naming the file and line, the fix, no table.
#[test]
fn a_bad_envelope_exits_3_with_the_line_and_no_table() {
    let dir = tempfile::tempdir().unwrap();
    let ok = usage_log(dir.path(), 5_000);
    let f = ok.to_str().unwrap();
    let (code, out, err) = lab(&["replay", f, "--policy", "none", "--envelope", "6000"]);
    assert_eq!(code, 3, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains("u.jsonl:2:") && err.contains("--envelope auto"),
        "{err}"
    );
    let (code, out, _) = lab(&["replay", f, "--policy", "none", "--envelope", "4000"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("envelope of u.jsonl: 4000 tokens (estimate; --envelope)"),
        "{out}"
    );
    let low = usage_log(dir.path(), 20);
    let (code, out, err) = lab(&["replay", low.to_str().unwrap(), "--policy", "none"]);
    assert_eq!(code, 3, "{err}");
    assert!(
        out.is_empty() && err.contains(":2:") && err.contains("inconsistent usage"),
        "{err}"
    );
    let (code, _, err) = lab(&["replay", f, "--policy", "none", "--envelope", "lots"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("token count"), "{err}");
}
