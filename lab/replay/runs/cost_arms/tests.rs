use super::*;
use crate::render::Format;
use serde_json::json;

/// A three-request Claude Code log: the third request is sent (its tool
/// result logged) 9 minutes after the second, so its 5-minute cache has
/// expired and the read collapses.
/// A tool output of `n` characters that tokenises like real text (a run of
/// one letter would merge into a handful of tokens).
fn listing(n: usize) -> String {
    let mut out = String::new();
    for i in 0.. {
        if out.len() >= n {
            break;
        }
        out.push_str(&format!("file_{i}.rs {} bytes\n", i * 37 % 1000));
    }
    out.truncate(n);
    out
}

fn log() -> String {
    let rec =
        |uuid: &str, parent: Option<&str>, kind: &str, min: u32, message: serde_json::Value| {
            json!({"uuid": uuid, "parentUuid": parent, "type": kind, "isSidechain": false,
               "timestamp": format!("2025-08-07T06:{min:02}:00.000Z"), "message": message})
            .to_string()
        };
    let usage = |i: u64, w: u64, r: u64| json!({"input_tokens": i, "cache_creation_input_tokens": w, "cache_read_input_tokens": r});
    let call = |id: &str, tool: &str, u| {
        json!({"id": id, "role": "assistant", "model": "claude-opus-4-1",
        "content": [{"type": "tool_use", "id": tool, "name": "Bash", "input": {"command": "ls"}}], "usage": u})
    };
    let result = |tool: &str, n: usize| {
        json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": tool, "content": listing(n)}]})
    };
    [
        rec(
            "u1",
            None,
            "user",
            0,
            json!({"role": "user", "content": "list the files"}),
        ),
        rec(
            "a1",
            Some("u1"),
            "assistant",
            1,
            call("msg_1", "toolu_01", usage(10, 3_000, 0)),
        ),
        rec("u2", Some("a1"), "user", 1, result("toolu_01", 3_000)),
        rec(
            "a2",
            Some("u2"),
            "assistant",
            2,
            call("msg_2", "toolu_02", usage(10, 800, 3_000)),
        ),
        rec("u3", Some("a2"), "user", 10, result("toolu_02", 9_000)),
        rec(
            "a3",
            Some("u3"),
            "assistant",
            11,
            json!({"id": "msg_3", "role": "assistant", "model": "claude-opus-4-1",
            "content": [{"type": "text", "text": "done"}], "usage": usage(10, 6_100, 0)}),
        ),
    ]
    .join("\n")
}

fn rows() -> (Vec<CostRow>, CostOptions) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("synthetic.jsonl");
    std::fs::write(&path, log()).unwrap();
    let options = CostOptions {
        tokens: Tokens::Claude,
        ..CostOptions::default()
    };
    let replay = ReplayOptions {
        scale: 0.05,
        ..ReplayOptions::default()
    };
    let import = ImportOptions {
        strict: true,
        format: None,
    };
    let rows = run_cost(&[path], &["course-main"], &replay, &import, &options).unwrap();
    (rows, options)
}

#[test]
fn every_arm_is_priced_and_the_recorded_arms_agree() {
    let (rows, _) = rows();
    let arms: Vec<&str> = rows.iter().map(|r| r.arm.as_str()).collect();
    assert_eq!(
        arms,
        ["none", "course-main", "recorded-usage", "recorded-model"]
    );
    assert_eq!(rows[0].report.breaks, 0);
    assert!(rows[1].tradeoff.is_some() && rows[0].tradeoff.is_none());
    let usage = &rows[2].report;
    assert_eq!(
        (
            usage.cache_read_tokens,
            usage.cache_write_tokens,
            usage.uncached_tokens
        ),
        (3_000, 9_900, 30)
    );
    assert_eq!(
        usage.breaks, 1,
        "the expired cache collapses the third read"
    );
    let model = &rows[3].report;
    assert_eq!(
        (
            model.cache_read_tokens,
            model.cache_write_tokens,
            model.breaks
        ),
        (3_000, 9_900, 1)
    );
    let v = rows[3].recorded.as_ref().unwrap();
    assert_eq!(
        (v.within_5pct, v.recorded_rewrites, v.flagged_rewrites),
        (3, 1, 1)
    );
    // Opus 4.1 at $15: 30 plain + 9,900 written at 1.25x + 3,000 read at 0.1x.
    let dollars = (30.0 + 9_900.0 * 1.25 + 3_000.0 * 0.1) * 15.0 / 1e6;
    assert!((usage.dollars - dollars).abs() < 1e-12);
}

#[test]
fn json_carries_totals_series_and_recorded_usage() {
    let (rows, options) = rows();
    let doc: serde_json::Value =
        serde_json::from_str(&render_cost(&rows, &options, Format::Json)).unwrap();
    let model = &doc["rows"][3];
    for key in [
        "cache_read_tokens",
        "cache_write_tokens",
        "input_tokens",
        "dollars",
    ] {
        assert!(model["report"][key].is_number(), "{key}");
    }
    assert_eq!(model["report"]["requests"].as_array().unwrap().len(), 3);
    assert_eq!(
        model["recorded"]["series"][1]["recorded"]["cache_read_input_tokens"],
        3_000
    );
    assert_eq!(doc["options"]["sheet"]["date"], "2025-11-24");
}

#[test]
fn cost_table_snapshot() {
    let (rows, options) = rows();
    insta::assert_snapshot!(render_cost(&rows, &options, Format::Markdown));
}

/// A file name with `|` and an escape byte neither splits a Markdown row
/// nor reaches the terminal raw: every row has as many cell separators as
/// the header.
#[test]
fn a_hostile_file_name_stays_in_its_cell() {
    let (mut rows, options) = rows();
    for r in &mut rows {
        r.source = "a|b\u{1b}[2J.jsonl".to_string();
    }
    let seps = |line: &str| line.replace("\\|", "").matches('|').count();
    let md = render_cost(&rows, &options, Format::Markdown);
    let lines: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
    assert!(lines.len() > rows.len(), "{md}");
    assert!(lines.iter().all(|l| seps(l) == seps(lines[0])), "{md}");
    for format in [Format::Markdown, Format::Table] {
        let out = render_cost(&rows, &options, format);
        assert!(!out.contains('\u{1b}'), "{out}");
        assert!(out.contains("\\u{1b}"), "{out}");
    }
}

#[test]
fn an_unknown_sheet_is_a_usage_error_listing_the_sheets() {
    let err = CostOptions::default().with_sheet("gpt-9").unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("gpt-9") && text.contains("claude-sonnet-4.5-5m"),
        "{text}"
    );
    assert_eq!(err.exit_code(), 2);
}
