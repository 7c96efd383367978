//! Each subagent conversation of a Claude Code log replayed as a session of
//! its own: the recorded rows of the main chain and of every subagent
//! together are the whole log's bill (same requests, same dollars), and
//! each subagent's replayed calls pair one to one with its own recorded
//! requests.

use std::collections::HashSet;
use std::path::Path;

use crate::common;
use ctxlab::cache::prices::table::PriceTable;
use ctxlab::message::Role;
use ctxlab::replay::subagents::{sessions_of, Conversations, LoggedSession};
use serde_json::{json, Value};

/// One conversation of `turns` user/assistant turns answered by `model`:
/// the main chain when `side` is `None`, else the sidechain named `side`.
fn conversation(side: Option<&str>, model: &str, turns: usize, base: u64) -> Vec<Value> {
    let tag = side.unwrap_or("main");
    let mut out = Vec::new();
    let mut parent: Option<String> = None;
    for i in 0..turns {
        let (user, assistant) = (format!("{tag}-u{i}"), format!("{tag}-a{i}"));
        out.push(json!({
            "type": "user", "uuid": user, "parentUuid": parent, "sessionId": "s",
            "isSidechain": side.is_some(),
            "message": {"role": "user", "content": [{"type": "text", "text": format!("{tag} step {i} ").repeat(40)}]},
        }));
        out.push(json!({
            "type": "assistant", "uuid": assistant, "parentUuid": user, "sessionId": "s",
            "isSidechain": side.is_some(), "requestId": format!("{tag}-req{i}"),
            "message": {"id": format!("{tag}-msg{i}"), "role": "assistant", "model": model,
                "content": [{"type": "text", "text": format!("{tag} did {i} ").repeat(30)}],
                "usage": {"input_tokens": 7, "cache_creation_input_tokens": base + 300 * i as u64,
                          "cache_read_input_tokens": 1000 * i as u64, "output_tokens": 40 + i as u64}},
        }));
        parent = Some(assistant);
    }
    out
}

/// A Sonnet main chain with two Haiku subagents logged between its turns.
fn log() -> Vec<Value> {
    let main = conversation(None, "claude-sonnet-4-5-20250929", 4, 20_000);
    let mut out = main[..4].to_vec();
    out.extend(conversation(
        Some("explore"),
        "claude-haiku-4-5-20251001",
        3,
        9_000,
    ));
    out.extend(main[4..6].iter().cloned());
    out.extend(conversation(
        Some("review"),
        "claude-haiku-4-5-20251001",
        2,
        11_000,
    ));
    out.extend(main[6..].iter().cloned());
    out
}

/// The whole log's recorded bill: every request at its own model's price.
fn whole_bill(file: &Path) -> (usize, f64) {
    let recorded = ctxlab::tokens::recorded::read_file(file).unwrap();
    let name = file.file_name().unwrap().to_string_lossy();
    let b = ctxlab::cache::bill::bill(&name, &recorded, &PriceTable::builtin()).unwrap();
    (b.requests, b.dollars)
}

/// The recorded-usage rows of a `--policy none --cost --format json` replay:
/// requests and billed dollars summed over the conversations, and what
/// the rows leave out.
fn recorded_sum(v: &Value) -> (usize, f64, usize) {
    let rows: Vec<&Value> = v["recorded"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["arm"] == "recorded-usage")
        .collect();
    let requests = rows
        .iter()
        .map(|r| r["covers"]["requests"].as_u64().unwrap() as usize)
        .sum();
    let dollars = rows
        .iter()
        .map(|r| r["billed"]["dollars"].as_f64().unwrap())
        .sum();
    let left_out = rows
        .iter()
        .map(|r| r["covers"]["left_out"].as_u64().unwrap() as usize)
        .sum();
    (requests, dollars, left_out)
}

/// Each priced session's replayed requests under `none`, by session.
fn replayed(v: &Value) -> Vec<(String, usize)> {
    v["cost"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let n = c["requests"].as_array().unwrap().len();
            (c["session"].as_str().unwrap().to_string(), n)
        })
        .collect()
}

/// Every subagent session's assistant messages pair, by response id, with
/// distinct recorded requests of that subagent, all of them.
fn assert_paired(logged: &LoggedSession, what: &str) {
    let log = logged
        .log
        .as_ref()
        .expect("a Claude Code log records usage");
    let s = &logged.session;
    let mut ids = HashSet::new();
    for (i, m) in s.main.iter().enumerate() {
        if m.role != Role::Assistant {
            continue;
        }
        let line = s.main_lines[i];
        let r = log
            .request_at(s.main_place(i).unwrap())
            .unwrap_or_else(|| panic!("{what}: the reply at line {line} pairs with no request"));
        assert!(
            r.sidechain,
            "{what}: line {line} paired with a main-chain request"
        );
        assert!(ids.insert(r.id.clone()), "{what}: {} paired twice", r.id);
    }
    assert_eq!(ids.len(), log.requests.len(), "{what}: unpaired requests");
}

#[test]
fn main_chain_and_subagent_rows_together_are_the_whole_bill() {
    let dir = tempfile::tempdir().unwrap();
    let file = common::write(dir.path(), "s.jsonl", &common::jsonl(&log()));
    let (requests, dollars) = whole_bill(&file);
    assert_eq!(requests, 9);
    let v = replayed_as_the_whole_bill(&file);
    assert_eq!(
        replayed(&v),
        [
            ("s.jsonl".to_string(), 4),
            ("s.jsonl › subagent 1".to_string(), 3),
            ("s.jsonl › subagent 2".to_string(), 2),
        ]
    );
    // Each subagent is priced at its own model, with its own envelope.
    let cost = v["cost"].as_array().unwrap();
    assert_eq!(cost[0]["sheet"]["name"], "claude-sonnet-4-5-20250929");
    assert_eq!(cost[1]["sheet"]["name"], "claude-haiku-4-5-20251001");
    let envelopes: Vec<u64> = v["envelopes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["tokens"].as_u64().unwrap())
        .collect();
    assert_eq!(envelopes.len(), 3, "{v}");
    // The recorded first requests wrote 20000, 9000 and 11000 tokens (+7).
    assert!(
        envelopes[0] > 19_000 && envelopes[0] < 20_007,
        "{envelopes:?}"
    );
    assert!(
        envelopes[1] > 8_000 && envelopes[1] < 9_007,
        "{envelopes:?}"
    );
    assert!(
        envelopes[2] > 10_000 && envelopes[2] < 11_007,
        "{envelopes:?}"
    );
    for logged in sessions_of(&file, &common::LENIENT, Conversations::default()).unwrap() {
        if logged.session.subagent.is_some() {
            assert_paired(&logged, &logged.session.label);
        }
    }
    // The cost arms replay the same sessions, with the same recorded rows.
    let arms = common::replay_cost_json(&file, &["--profile", "course-main"], &[]);
    let rows = arms["rows"].as_array().unwrap();
    let covered: usize = rows
        .iter()
        .filter(|r| r["arm"] == "recorded-usage")
        .map(|r| r["covers"]["requests"].as_u64().unwrap() as usize)
        .sum();
    assert_eq!(covered, requests, "{arms}");
    let nones: Vec<usize> = rows
        .iter()
        .filter(|r| r["arm"] == "none")
        .map(|r| r["report"]["requests"].as_array().unwrap().len())
        .collect();
    assert_eq!(nones, [4, 3, 2]);
    // --optimal schedules each session, the subagents too, and bounds each run.
    let opt = common::replay_none_cost_json(&file, &["--optimal"]);
    let optima: Vec<&str> = opt["optimal"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["session"].as_str().unwrap())
        .collect();
    assert_eq!(
        optima,
        ["s.jsonl", "s.jsonl › subagent 1", "s.jsonl › subagent 2"],
        "{opt}"
    );
    for c in opt["cost"].as_array().unwrap() {
        assert!(c["regret"]["bound"].is_number(), "{c}");
    }
    // --main-chain-only: one session, the subagents named beside.
    let only = common::replay_none_cost_json(&file, &["--main-chain-only"]);
    assert_eq!(replayed(&only), [("s.jsonl".to_string(), 4)]);
    let (n, billed, left_out) = recorded_sum(&only);
    assert_eq!((n, left_out), (4, 5), "{only}");
    assert!(billed < dollars);
}

/// On the shared Claude Code logs: every recorded request is in the main
/// chain's rows or one subagent's (none left out), the dollars add up to
/// the whole bill, and each subagent's calls pair with its own requests;
/// under `none`, each subagent session replays as many requests as it
/// recorded (the binary on the logs a debug build replays quickly).
#[test]
fn on_the_shared_logs_every_request_is_in_one_conversation() {
    let Some(dir) = common::transcripts() else {
        return;
    };
    let mut subagents = 0;
    for f in common::transcript_files(&dir)
        .iter()
        .filter(|f| f.starts_with(dir.join("claude_code")))
    {
        let what = f.display().to_string();
        let sessions = sessions_of(f, &common::LENIENT, Conversations::default()).unwrap();
        let (requests, dollars) = whole_bill(f);
        let prices = PriceTable::builtin();
        let (mut n, mut billed) = (0, 0.0);
        for logged in &sessions {
            let log = logged.log.as_ref().unwrap();
            assert!(log.left_out.is_empty(), "{what}: {:?}", log.left_out.len());
            n += log.requests.len();
            billed += ctxlab::cache::bill::bill(&what, &log.requests, &prices)
                .unwrap()
                .dollars;
            if logged.session.subagent.is_some() {
                assert_paired(logged, &logged.session.label);
                subagents += 1;
            }
        }
        assert_eq!(n, requests, "{what}");
        assert!(
            (billed - dollars).abs() <= dollars * 1e-3,
            "{what}: {billed} vs {dollars}"
        );
        // Debug builds take minutes to replay the larger logs.
        let small = std::fs::metadata(f).is_ok_and(|m| m.len() < 1_500_000);
        if sessions.len() > 1 && (small || !cfg!(debug_assertions)) {
            let v = common::replay_none_cost_json(f, &[]);
            let counts: std::collections::HashMap<String, usize> =
                replayed(&v).into_iter().collect();
            for row in v["recorded"].as_array().unwrap() {
                let source = row["source"].as_str().unwrap();
                if source.contains(" › subagent ") {
                    assert_eq!(
                        Some(&(row["covers"]["requests"].as_u64().unwrap() as usize)),
                        counts.get(source),
                        "{source}"
                    );
                }
            }
        }
    }
    assert!(subagents > 0, "no shared log has a subagent");
}

/// A corpus (a directory) streams each subagent after its log, as a named
/// file's replay does; `--main-chain-only` leaves them out there too.
#[test]
fn a_corpus_streams_the_subagents_after_their_log() {
    let dir = tempfile::tempdir().unwrap();
    common::write(dir.path(), "s.jsonl", &common::jsonl(&log()));
    let d = dir.path().to_str().unwrap();
    let sessions = |extra: &[&str]| -> Vec<(String, u64)> {
        let mut args = vec!["replay", d, "--policy", "none", "--format", "jsonl"];
        args.extend_from_slice(extra);
        common::lab_ok(&args)
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                let name = v["session"].as_str().unwrap().to_string();
                (name, v["calls"].as_u64().unwrap())
            })
            .collect()
    };
    assert_eq!(
        sessions(&[]),
        [
            ("s.jsonl".to_string(), 4),
            ("s.jsonl › subagent 1".to_string(), 3),
            ("s.jsonl › subagent 2".to_string(), 2),
        ]
    );
    assert_eq!(
        sessions(&["--main-chain-only"]),
        [("s.jsonl".to_string(), 4)]
    );
}

/// A log of subagents only (a sub-agent's own file): its longest sidechain
/// is replayed as the main conversation, on that sidechain's own requests
/// and envelope; the other is a subagent session; together the whole bill.
#[test]
fn a_log_of_subagents_only_replays_each_on_its_own_requests() {
    let dir = tempfile::tempdir().unwrap();
    let mut records = conversation(Some("explore"), "claude-haiku-4-5-20251001", 3, 9_000);
    records.extend(conversation(
        Some("review"),
        "claude-haiku-4-5-20251001",
        2,
        11_000,
    ));
    let file = common::write(dir.path(), "s.jsonl", &common::jsonl(&records));
    let v = replayed_as_the_whole_bill(&file);
    assert_eq!(
        replayed(&v),
        [
            ("s.jsonl".to_string(), 3),
            ("s.jsonl › subagent 2".to_string(), 2),
        ]
    );
    let conversations: Vec<&str> = v["recorded"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["arm"] == "recorded-usage")
        .map(|r| r["covers"]["conversation"].as_str().unwrap())
        .collect();
    assert_eq!(conversations, ["subagent 1 (no main chain)", "subagent 2"]);
    let first = v["envelopes"][0]["tokens"].as_u64().unwrap();
    assert!(first > 8_000 && first < 9_007, "{v}");
}

/// `none` replayed with cost: its recorded rows cover every request of the
/// log, none left out, and add up to the whole bill. The replay's JSON.
fn replayed_as_the_whole_bill(file: &Path) -> Value {
    let (requests, dollars) = whole_bill(file);
    let v = common::replay_none_cost_json(file, &[]);
    let (n, billed, left_out) = recorded_sum(&v);
    assert_eq!((n, left_out), (requests, 0), "{v}");
    assert!((billed - dollars).abs() < 1e-12, "{billed} vs {dollars}");
    v
}

/// The dollars plot draws a log's subagents together, not a panel set per
/// subagent: per policy group one panel of the main chain and one of the
/// two subagents one after another (3 + 2 calls), each policy's line
/// ending at the sum of its two subagents' dollars; the text output gives
/// each subagent in a table under it (snapshotted).
#[test]
fn the_dollars_plot_draws_the_subagents_together_with_a_table_of_each() {
    let dir = tempfile::tempdir().unwrap();
    let file = common::write(dir.path(), "s.jsonl", &common::jsonl(&log()));
    let plot = dir.path().join("dollars.svg");
    let (code, out, err) = common::lab(&[
        "replay",
        file.to_str().unwrap(),
        "--policy",
        "none,claude-code",
        "--cost",
        "--plot",
        plot.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(!svg.contains("› subagent 1 ·"), "a panel per subagent");
    let titles: Vec<&str> = svg
        .lines()
        .filter(|l| l.contains(r#"font-weight="bold""#))
        .collect();
    // none and claude-code are in two groups: two panels per conversation set.
    assert_eq!(titles.len(), 4, "{titles:#?}");
    assert_eq!(
        titles
            .iter()
            .filter(|t| t.contains("its 2 subagents together"))
            .count(),
        2
    );
    let problems = ctxlab::plot::lint::check(&svg);
    assert!(problems.is_empty(), "{problems:#?}");
    // The aggregate line of `none` runs over 5 calls and ends at the sum of
    // its subagents' dollars.
    let v = common::replay_none_cost_json(&file, &[]);
    let sum: f64 = v["cost"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["session"].as_str().unwrap().contains("› subagent"))
        .map(|c| c["dollars"].as_f64().unwrap())
        .sum();
    let desc = svg.split("<desc").nth(1).unwrap();
    let ends = format!(
        "its 2 subagents together · {} (cumulative cost (dollars)): 1 series; none ends at {}",
        ctxlab::replay::family::group("none"),
        (sum * 1e4).round() / 1e4
    );
    assert!(desc.contains(&ends), "{ends} not in {desc}");
    assert!(sum > 0.0);
    let table = &out[out
        .find("subagents (drawn together")
        .expect("the subagent table")..];
    assert!(table.contains("s.jsonl") && table.contains("| 1 ") || table.contains(" 1 "));
    insta::assert_snapshot!("subagent_table", table);
}
