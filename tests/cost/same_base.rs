//! Replayed and recorded rows on the same base: a replay of a Claude Code
//! log is priced at the model that answered its main chain (not one sheet
//! for every session), and the recorded rows beside it cover that main
//! chain; each subagent is a session of its own with its own rows, or with
//! `--main-chain-only` its requests are named and billed apart.

use crate::common;
use serde_json::{json, Value};

/// A log of `turns` main-chain turns answered by `model`, plus one
/// subagent request; every assistant record carries usage.
fn log(model: &str, turns: usize) -> Vec<Value> {
    let mut out = Vec::new();
    let mut parent: Option<String> = None;
    for i in 0..turns {
        let (user, assistant) = (format!("u{i}"), format!("a{i}"));
        out.push(json!({
            "type": "user", "uuid": user, "parentUuid": parent, "sessionId": "s", "isSidechain": false,
            "message": {"role": "user", "content": [{"type": "text", "text": "go on ".repeat(300)}]},
        }));
        out.push(json!({
            "type": "assistant", "uuid": assistant, "parentUuid": user, "sessionId": "s", "isSidechain": false,
            "requestId": format!("req{i}"),
            "message": {"id": format!("msg{i}"), "role": "assistant", "model": model,
                "content": [{"type": "text", "text": "done ".repeat(200)}],
                "usage": {"input_tokens": 10, "cache_creation_input_tokens": 2000 + 500 * i as u64,
                          "cache_read_input_tokens": 3000 * i as u64, "output_tokens": 50}},
        }));
        parent = Some(assistant);
    }
    out.push(json!({
        "type": "user", "uuid": "side-u", "parentUuid": null, "sessionId": "s", "isSidechain": true,
        "message": {"role": "user", "content": [{"type": "text", "text": "look around"}]},
    }));
    out.push(json!({
        "type": "assistant", "uuid": "side-a", "parentUuid": "side-u", "sessionId": "s", "isSidechain": true,
        "requestId": "side-req",
        "message": {"id": "side-msg", "role": "assistant", "model": "claude-haiku-4-5-20251001",
            "content": [{"type": "text", "text": "found it"}],
            "usage": {"input_tokens": 900, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0, "output_tokens": 20}},
    }));
    out
}

#[test]
fn a_replay_is_priced_at_its_session_model_unless_a_sheet_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let sonnet = common::write(
        dir.path(),
        "s.jsonl",
        &common::jsonl(&log("claude-sonnet-4-5-20250929", 4)),
    );
    let v = common::replay_none_cost_json(&sonnet, &[]);
    let sheet = &v["cost"][0]["sheet"];
    assert_eq!(sheet["name"], "claude-sonnet-4-5-20250929", "{sheet}");
    // Sonnet 4.5's list input price, not the default sheet's Opus price.
    assert_eq!(sheet["input_per_mtok"].as_f64(), Some(3.0), "{sheet}");
    let named = common::replay_none_cost_json(&sonnet, &["--sheet", "claude-opus-4.1-5m"]);
    assert_eq!(named["cost"][0]["sheet"]["name"], "claude-opus-4.1-5m");
    // The cache model's prediction beside the usage is priced as the replay.
    let model = named["recorded"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["arm"] == "recorded-model")
        .unwrap();
    assert_eq!(model["report"]["sheet"]["name"], "claude-opus-4.1-5m");
}

#[test]
fn recorded_rows_cover_one_conversation_each_and_name_what_they_leave_out() {
    let dir = tempfile::tempdir().unwrap();
    let file = common::write(
        dir.path(),
        "s.jsonl",
        &common::jsonl(&log("claude-sonnet-4-5-20250929", 4)),
    );
    // By default the subagent is a session of its own, priced at its model.
    let v = common::replay_none_cost_json(&file, &[]);
    let cost = v["cost"].as_array().unwrap();
    assert_eq!(cost.len(), 2, "{v}");
    assert_eq!(cost[0]["requests"].as_array().unwrap().len(), 4);
    assert_eq!(cost[1]["session"], "s.jsonl › subagent 1");
    assert_eq!(cost[1]["sheet"]["name"], "claude-haiku-4-5-20251001");
    assert_eq!(cost[1]["requests"].as_array().unwrap().len(), 1);
    let recorded = v["recorded"].as_array().unwrap();
    assert_eq!(recorded.len(), 4, "{v}");
    for row in recorded {
        let covers = &row["covers"];
        let subagent = row["source"] == "s.jsonl › subagent 1";
        let (conversation, requests) = if subagent {
            ("subagent 1", 1)
        } else {
            ("main chain", 4)
        };
        assert_eq!(covers["conversation"], conversation, "{row}");
        assert_eq!(covers["requests"], requests, "{row}");
        assert_eq!(covers["left_out"], 0, "{row}");
        assert_eq!(
            row["report"]["requests"].as_array().unwrap().len(),
            requests
        );
    }
    // With --main-chain-only the subagent's requests are named beside.
    let v = common::replay_none_cost_json(&file, &["--main-chain-only"]);
    assert_eq!(v["cost"].as_array().unwrap().len(), 1, "{v}");
    for row in v["recorded"].as_array().unwrap() {
        let covers = &row["covers"];
        assert_eq!(covers["conversation"], "main chain", "{row}");
        assert_eq!(covers["requests"], 4, "{row}");
        assert_eq!(covers["left_out"], 1, "{row}");
        // Haiku 4.5: 900 input tokens at $1/M and 20 output at $5/M.
        let billed = covers["left_out_billed"].as_f64().unwrap();
        assert!(
            (billed - (900.0 + 20.0 * 5.0) / 1e6).abs() < 1e-12,
            "{billed}"
        );
        // Prompt side, as the rows beside it: the 900 input tokens alone.
        let prompt = covers["left_out_prompt"].as_f64().unwrap();
        assert!((prompt - 900.0 / 1e6).abs() < 1e-12, "{prompt}");
    }
    let table = common::lab_ok(&[
        "replay",
        file.to_str().unwrap(),
        "--policy",
        "none",
        "--cost",
        "--main-chain-only",
    ]);
    assert!(table.contains("requests"), "{table}");
    assert!(
        table.contains(
            "s.jsonl: 1 subagent requests in no recorded row (0.0009 prompt side, as the rows beside; billed 0.0010 with output)"
        ),
        "{table}"
    );
}

#[test]
fn a_session_model_without_a_price_is_refused_before_any_table() {
    let dir = tempfile::tempdir().unwrap();
    let file = common::write(
        dir.path(),
        "s.jsonl",
        &common::jsonl(&log("claude-imaginary-9", 3)),
    );
    let (code, out, err) = common::lab(&[
        "replay",
        file.to_str().unwrap(),
        "--policy",
        "none",
        "--cost",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains("claude-imaginary-9") && err.contains("--prices"),
        "{err}"
    );
    // Named at the line of the first request that model answered.
    let line = common::jsonl(&log("claude-imaginary-9", 3))
        .lines()
        .position(|l| l.contains("claude-imaginary-9"))
        .unwrap()
        + 1;
    assert!(err.contains(&format!("s.jsonl:{line}:")), "{err}");
    // Naming a sheet prices the replay, but the recorded usage still needs
    // the model's price.
    let (code, _, err) = common::lab(&[
        "replay",
        file.to_str().unwrap(),
        "--policy",
        "none",
        "--cost",
        "--sheet",
        "claude-opus-4.1-5m",
    ]);
    assert_eq!(code, 2, "{err}");
}

/// The cost arms (`lab replay --cost`) and the policy replay (`--policy …
/// --cost`) send the same requests for `none` and a course profile, with
/// the same envelope, times and prices, so they price them alike: on every
/// shared Claude Code log without a real compaction (where the policy
/// replay leaves the product's artefacts out and the cost arms cannot).
#[test]
fn the_cost_arms_and_the_policy_replay_price_alike() {
    let Some(dir) = common::transcripts() else {
        return;
    };
    let mut checked = 0;
    let logs = common::transcript_files(&dir);
    for f in logs
        .iter()
        .filter(|f| f.starts_with(dir.join("claude_code")))
    {
        // Debug builds take minutes on the larger logs.
        if cfg!(debug_assertions) && std::fs::metadata(f).map_or(true, |m| m.len() > 1_500_000) {
            continue;
        }
        let path = f.to_str().unwrap();
        let policy: Value = serde_json::from_str(&common::lab_ok(&[
            "replay",
            path,
            "--policy",
            "none,course-main",
            "--cost",
            "--format",
            "json",
        ]))
        .unwrap();
        if !policy["product_compactions"].as_array().unwrap().is_empty() {
            continue;
        }
        let arms = common::replay_cost_json(
            std::path::Path::new(path),
            &["--profile", "course-main"],
            &[],
        );
        for name in ["none", "course-main"] {
            let p = policy["cost"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["policy"] == name)
                .unwrap();
            let a = arms["rows"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["arm"] == name)
                .unwrap();
            for key in [
                "input_tokens",
                "cache_read_tokens",
                "cache_write_tokens",
                "dollars",
            ] {
                assert_eq!(p[key], a["report"][key], "{path} {name} {key}");
            }
        }
        checked += 1;
    }
    assert!(
        checked > 0,
        "no shared log without a real compaction was checked"
    );
}

/// A main chain whose turn `i` is answered by `models[i]`: `<synthetic>`
/// writes the product's own placeholder reply (all-zero usage, no call),
/// as Claude Code does after an interrupted turn. User messages are large
/// enough (~4k tokens each) for every model's cache minimum.
fn mixed_log(models: &[&str]) -> Vec<Value> {
    let mut out = Vec::new();
    let mut parent: Option<String> = None;
    let mut sent = 0u64;
    for (i, model) in models.iter().enumerate() {
        let (user, assistant) = (format!("u{i}"), format!("a{i}"));
        out.push(json!({
            "type": "user", "uuid": user, "parentUuid": parent, "sessionId": "s", "isSidechain": false,
            "message": {"role": "user", "content": [{"type": "text", "text": format!("step {i} ").repeat(2500)}]},
        }));
        let synthetic = *model == "<synthetic>";
        let usage = if synthetic {
            json!({"input_tokens": 0, "cache_creation_input_tokens": 0,
                   "cache_read_input_tokens": 0, "output_tokens": 0})
        } else {
            sent += 20_000;
            json!({"input_tokens": 10, "cache_creation_input_tokens": 20_000,
                   "cache_read_input_tokens": sent - 20_000, "output_tokens": 50})
        };
        let mut record = json!({
            "type": "assistant", "uuid": assistant, "parentUuid": user, "sessionId": "s", "isSidechain": false,
            "message": {"id": format!("msg{i}"), "role": "assistant", "model": model,
                "content": [{"type": "text", "text": if synthetic { "No response requested." } else { "done" }}],
                "usage": usage},
        });
        if !synthetic {
            record["requestId"] = json!(format!("req{i}"));
        }
        out.push(record);
        parent = Some(assistant);
    }
    out
}

/// Dollars of one priced request at `input`, `write` and `read` dollars
/// per million tokens.
fn dollars_at(r: &Value, input: f64, write: f64, read: f64) -> f64 {
    let n = |k: &str| r[k].as_u64().unwrap() as f64;
    (n("uncached_tokens") * input + n("cache_write_tokens") * write + n("cache_read_tokens") * read)
        / 1e6
}

#[test]
fn a_synthetic_reply_is_not_a_priced_call() {
    let dir = tempfile::tempdir().unwrap();
    let sonnet = "claude-sonnet-4-5-20250929";
    let file = common::write(
        dir.path(),
        "s.jsonl",
        &common::jsonl(&mixed_log(&[sonnet, sonnet, "<synthetic>", sonnet])),
    );
    let v = common::replay_none_cost_json(&file, &[]);
    let replayed = v["cost"][0]["requests"].as_array().unwrap();
    // Three calls reached the API; the placeholder was written without one.
    assert_eq!(replayed.len(), 3, "{v}");
    for row in v["recorded"].as_array().unwrap() {
        assert_eq!(row["covers"]["requests"], 3, "{row}");
        assert_eq!(row["report"]["requests"].as_array().unwrap().len(), 3);
    }
}

#[test]
fn each_replayed_call_is_priced_at_the_model_that_answered_it() {
    let dir = tempfile::tempdir().unwrap();
    let (opus, haiku) = ("claude-opus-4-5-20251101", "claude-haiku-4-5-20251001");
    let file = common::write(
        dir.path(),
        "s.jsonl",
        &common::jsonl(&mixed_log(&[opus, opus, haiku, opus])),
    );
    let v = common::replay_none_cost_json(&file, &[]);
    let cost = &v["cost"][0];
    assert_eq!(cost["sheet"]["name"], opus, "{cost}");
    let requests = cost["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 4, "{cost}");
    // Opus 4.5: $5 in, $6.25 write, $0.50 read; Haiku 4.5: $1, $1.25, $0.10.
    for (i, r) in requests.iter().enumerate() {
        let (sheet, want) = if i == 2 {
            (json!(haiku), dollars_at(r, 1.0, 1.25, 0.1))
        } else {
            (Value::Null, dollars_at(r, 5.0, 6.25, 0.5))
        };
        assert_eq!(r["sheet"], sheet, "request {i}: {r}");
        let got = r["dollars"].as_f64().unwrap();
        assert!((got - want).abs() < 1e-12, "request {i}: {got} vs {want}");
    }
    // Each model has its own cache: Haiku reads nothing Opus wrote, and
    // Opus after it still reads its own prefix, with no break.
    assert_eq!(requests[2]["cache_read_tokens"], 0, "{}", requests[2]);
    assert!(requests[3]["cache_read_tokens"].as_u64().unwrap() > 0);
    assert_eq!(requests[3]["broke"], false, "{}", requests[3]);
    let sum: f64 = requests
        .iter()
        .map(|r| r["dollars"].as_f64().unwrap())
        .sum();
    assert!((cost["dollars"].as_f64().unwrap() - sum).abs() < 1e-12);
    // A named sheet prices every call at it.
    let named = common::replay_none_cost_json(&file, &["--sheet", "claude-opus-4.1-5m"]);
    let named = named["cost"][0]["requests"].as_array().unwrap();
    assert!(named.iter().all(|r| r.get("sheet").is_none()), "{named:?}");
}

/// session-share's main chain holds two `<synthetic>` replies and calls
/// answered by Opus 4.5 and Haiku 4.5: the replay prices as many requests
/// as the recorded rows, each at the model that answered it.
#[test]
fn session_share_is_priced_on_the_recorded_base() {
    let Some(dir) = common::transcripts() else {
        return;
    };
    let file = dir
        .join("claude_code")
        .join("session-share__general-tool-calls.jsonl");
    let v = common::replay_none_cost_json(&file, &["--main-chain-only"]);
    let replayed = v["cost"][0]["requests"].as_array().unwrap();
    let recorded = v["recorded"].as_array().unwrap();
    assert!(!recorded.is_empty());
    for row in recorded {
        assert_eq!(
            row["covers"]["requests"].as_u64().unwrap() as usize,
            replayed.len(),
            "{}",
            row["covers"]
        );
    }
    let haiku = replayed
        .iter()
        .filter(|r| r["sheet"] == "claude-haiku-4-5-20251001")
        .count();
    assert!(haiku > 0, "no call priced at Haiku");
}
