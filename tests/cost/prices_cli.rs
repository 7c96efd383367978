//! `lab replay … --cost --prices FILE`: recorded usage priced by each
//! request's model from a price file (ctxlab's or LiteLLM's), and the
//! refusals: a bad price file, a model without a price.

use crate::common;
use common::{lab, write};

/// A two-request Claude Code log: an Opus 4.6 request (1,000 uncached
/// tokens, 2,000 output tokens over two streamed records) and a Haiku 4.5
/// side call, so each is priced by its own model.
fn log(second_model: &str) -> String {
    let rec = |uuid: &str, parent: &str, model: &str, id: &str, out: u32| {
        format!(
            r#"{{"uuid":"{uuid}","parentUuid":"{parent}","type":"assistant","timestamp":"2025-08-07T06:00:05Z","message":{{"id":"{id}","role":"assistant","model":"{model}","content":[{{"type":"text","text":"ok"}}],"usage":{{"input_tokens":1000,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":{out}}}}}}}"#
        )
    };
    [
        r#"{"uuid":"u1","parentUuid":null,"type":"user","timestamp":"2025-08-07T06:00:00Z","message":{"role":"user","content":"hello"}}"#.to_string(),
        rec("a1", "u1", "claude-opus-4-6", "m1", 3),
        rec("a2", "a1", "claude-opus-4-6", "m1", 2000),
        rec("a3", "a2", second_model, "m2", 0),
    ]
    .join("\n")
}

/// The cells of a Markdown table row, trimmed (the table pads its columns).
fn cells(row: &str) -> Vec<String> {
    row.trim()
        .trim_matches('|')
        .split('|')
        .map(|c| c.trim().to_string())
        .collect()
}

/// The first row whose second cell (the arm) is `arm`.
fn arm_row(out: &str, arm: &str) -> Vec<String> {
    out.lines()
        .filter(|l| l.starts_with('|'))
        .map(cells)
        .find(|c| c.get(1).is_some_and(|a| a == arm))
        .unwrap_or_else(|| panic!("no {arm} row in {out}"))
}

#[test]
fn each_recorded_request_is_priced_by_its_model_output_in_its_own_column() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "s.jsonl", &log("claude-haiku-4-5-20251001"));
    let (code, out, err) = lab(&[
        "replay",
        f.to_str().unwrap(),
        "--cost",
        "--format",
        "markdown",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("lab/measure/cache/prices/2026-12-04.json as of 2026-12-04"),
        "{out}"
    );
    let row = arm_row(&out, "recorded-usage");
    // Prompt side: 1,000 at $5 + 1,000 at $1 = $0.006; output 2,000 at $25 = $0.05.
    assert_eq!(row[row.len() - 2..], ["0.0060", "0.0560"], "{row:?}");
}

#[test]
fn a_model_without_a_price_exits_2_naming_model_file_and_fix() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "s.jsonl", &log("claude-unknown-9"));
    let (code, out, err) = lab(&["replay", f.to_str().unwrap(), "--cost"]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty(), "no partial table: {out}");
    assert!(err.contains("claude-unknown-9"), "{err}");
    // The line of the first request that model answered.
    let line = std::fs::read_to_string(&f)
        .unwrap()
        .lines()
        .position(|l| l.contains("claude-unknown-9"))
        .unwrap()
        + 1;
    assert!(err.contains(&format!("s.jsonl:{line}:")), "{err}");
    assert!(err.contains("--prices FILE"), "{err}");
}

#[test]
fn litellms_map_prices_the_session_and_a_bad_price_file_is_located() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "s.jsonl", &log("claude-unknown-9"));
    let map = r#"{
  "claude-opus-4-6": {"input_cost_per_token": 5e-06, "output_cost_per_token": 2.5e-05, "litellm_provider": "anthropic"},
  "claude-unknown-9": {"input_cost_per_token": 1e-06, "output_cost_per_token": 5e-06, "litellm_provider": "anthropic"}
}"#;
    let prices = write(dir.path(), "map.json", map);
    let args = |p: &std::path::Path| {
        vec![
            "replay".to_string(),
            f.to_str().unwrap().to_string(),
            "--cost".into(),
            "--format".into(),
            "markdown".into(),
            "--prices".into(),
            p.to_str().unwrap().to_string(),
        ]
    };
    let run = |p: &std::path::Path| {
        let a = args(p);
        lab(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let (code, out, err) = run(&prices);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("map.json as of undated"), "{out}");
    let row = arm_row(&out, "recorded-usage");
    assert_eq!(row[row.len() - 2..], ["0.0060", "0.0560"], "{row:?}");

    let bad = write(dir.path(), "bad.json", &map.replace("1e-06", "-1e-06"));
    let (code, out, err) = run(&bad);
    assert_eq!(code, 3, "{err}");
    assert!(out.is_empty(), "no partial table: {out}");
    assert!(
        err.contains("bad.json:3:") && err.contains("negative") && err.contains("fix:"),
        "{err}"
    );

    let missing = write(
        dir.path(),
        "missing.json",
        "{\"format\": \"ctxlab-prices/1\", \"date\": \"2026-01-01\",\n \"models\": [{\"model\": \"m\"}]}",
    );
    let (code, _, err) = run(&missing);
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains("missing.json:2:") && err.contains("missing field"),
        "{err}"
    );

    let not_json = write(dir.path(), "x.json", "prices!");
    let (code, _, err) = run(&not_json);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("x.json:1:1"), "{err}");
}

#[test]
fn replayed_arms_take_the_session_model_unless_a_sheet_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "s.jsonl", &log("claude-haiku-4-5-20251001"));
    let path = f.to_str().unwrap();
    // The arm and the prices it was priced at.
    let none_row = |out: &str| arm_row(out, "none")[1..3].join(" | ");
    let (code, out, err) = lab(&["replay", path, "--cost", "--format", "markdown"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("each log's session model"), "{out}");
    assert!(none_row(&out) == "none | claude-opus-4-6", "{out}");
    let (code, out, err) = lab(&[
        "replay", path, "--cost", "--format", "markdown", "--sheet", "gpt-5",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("prices: gpt-5 as of 2025-11-24"), "{out}");
    assert!(none_row(&out) == "none | gpt-5", "{out}");
}

#[test]
fn random_bytes_as_prices_are_bad_input_with_a_position_and_a_fix() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "s.jsonl", &log("claude-opus-4-6"));
    // Bytes a random file starts with: a valid first line, then a byte
    // that is not UTF-8.
    let noise = write(dir.path(), "noise.bin", b"{\n  \"a\x9f\x00\xff\xfe\x13");
    let (code, out, err) = lab(&[
        "replay",
        f.to_str().unwrap(),
        "--cost",
        "--prices",
        noise.to_str().unwrap(),
    ]);
    assert_eq!(code, 3, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("noise.bin:2:5: not UTF-8"), "{err}");
    assert!(err.contains("fix:"), "{err}");
}
