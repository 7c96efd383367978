//! The cost of every policy: `lab replay --policy … --cost` output (table,
//! JSON with totals, per-request series and recorded usage), the
//! cumulative-dollars plot, and every policy priced on every shared session.

use crate::common;

use common::lab;
use serde_json::Value;

/// A Claude Code log of two requests with recorded usage: the second reads
/// the 2,000 tokens the first wrote.
const LOG: &str = r#"{"uuid":"u1","parentUuid":null,"type":"user","timestamp":"2025-08-07T06:00:00Z","message":{"role":"user","content":"hello"}}
{"uuid":"a1","parentUuid":"u1","type":"assistant","timestamp":"2025-08-07T06:00:05Z","message":{"id":"m1","role":"assistant","model":"claude-opus-4-1","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}],"usage":{"input_tokens":4,"cache_creation_input_tokens":2000,"cache_read_input_tokens":0}}}
{"uuid":"u2","parentUuid":"a1","type":"user","timestamp":"2025-08-07T06:00:06Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"a.txt"}]}}
{"uuid":"a2","parentUuid":"u2","type":"assistant","timestamp":"2025-08-07T06:00:09Z","message":{"id":"m2","role":"assistant","model":"claude-opus-4-1","content":[{"type":"text","text":"one file"}],"usage":{"input_tokens":4,"cache_creation_input_tokens":30,"cache_read_input_tokens":2000}}}
"#;

/// `common::write`, with the path as the text a command line takes.
fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    common::write(dir.path(), name, text)
        .to_string_lossy()
        .into_owned()
}

fn u(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} missing: {v}"))
}

/// Totals are numbers and equal the sums of the per-request series.
fn check_totals(c: &Value) {
    let series = c["requests"].as_array().expect("per-request series");
    assert!(!series.is_empty(), "{c}");
    for key in ["input_tokens", "cache_read_tokens", "cache_write_tokens"] {
        let sum: u64 = series.iter().map(|r| u(r, key)).sum();
        assert_eq!(u(c, key), sum, "{key}: {c}");
    }
    let dollars: f64 = series.iter().map(|r| r["dollars"].as_f64().unwrap()).sum();
    assert!(
        (c["dollars"].as_f64().unwrap() - dollars).abs() < 1e-9,
        "{c}"
    );
    assert!(series.iter().all(|r| r["broke"].is_boolean()));
}

#[test]
fn json_carries_totals_series_and_recorded_usage_beside_the_prediction() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(&dir, "s.jsonl", LOG);
    let (code, out, err) = lab(&[
        "replay",
        &f,
        "--policy",
        "none,course-main",
        "--cost",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let cost = v["cost"].as_array().unwrap();
    let policies: Vec<&str> = cost.iter().map(|c| c["policy"].as_str().unwrap()).collect();
    assert_eq!(policies, ["none", "course-main"]);
    for c in cost {
        assert!(c["session"].is_string());
        // Priced at the model that answered the log, from the dated table.
        assert_eq!(c["sheet"]["name"], "claude-opus-4-1-20250805");
        assert!(c["sheet"]["date"].is_string());
        check_totals(c);
    }
    let recorded = v["recorded"].as_array().expect("recorded usage");
    let arm = |name: &str| recorded.iter().find(|r| r["arm"] == name).unwrap();
    // What the API billed, as the log says.
    let usage = &arm("recorded-usage")["report"];
    assert_eq!(u(usage, "cache_write_tokens"), 2_030);
    assert_eq!(u(usage, "cache_read_tokens"), 2_000);
    check_totals(usage);
    // The model's prediction, with the recorded usage beside it per request.
    let model = arm("recorded-model");
    check_totals(&model["report"]);
    let series = model["recorded"]["series"].as_array().unwrap();
    assert_eq!(series.len(), 2);
    assert_eq!(u(&series[1]["recorded"], "cache_read_input_tokens"), 2_000);
    assert!(series[1]["predicted_read"].is_u64());
    assert!(series[1]["predicted_write"].is_u64());
}

#[test]
fn a_session_without_recorded_usage_has_no_recorded_rows() {
    let dir = tempfile::tempdir().unwrap();
    let session = ctxlab::replay::profiles::synthetic_main(6, 2_000);
    let f = write(&dir, "s.json", &serde_json::to_string(&session).unwrap());
    let (code, out, err) = lab(&[
        "replay", &f, "--policy", "none", "--cost", "--format", "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["recorded"], serde_json::json!([]), "{v}");
    check_totals(&v["cost"][0]);
}

#[test]
fn the_table_prints_recorded_rows_beside_the_policies() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(&dir, "s.jsonl", LOG);
    let (code, out, err) = lab(&["replay", &f, "--policy", "none", "--cost"]);
    assert_eq!(code, 0, "{err}");
    let row = |arm: &str| {
        out.lines()
            .find(|l| l.contains(&format!(" {arm} ")))
            .unwrap()
    };
    assert!(row("recorded-usage").contains(" 2000 "), "{out}");
    row("recorded-model");
    assert!(
        out.contains("claude-opus-4-1-20250805 (2026-12-04)"),
        "{out}"
    );
}

#[test]
fn the_plot_draws_every_policy_and_needs_cost() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(&dir, "s.jsonl", LOG);
    let plot = dir.path().join("d.svg");
    let p = plot.to_str().unwrap();
    let (code, _, err) = lab(&["replay", &f, "--policy", "all", "--plot", p]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--cost") && !plot.exists(), "{err}");
    let (code, _, err) = lab(&["replay", &f, "--policy", "all", "--cost", "--plot", p]);
    assert_eq!(code, 0, "{err}");
    let svg = std::fs::read_to_string(&plot).unwrap();
    for name in ctxlab::zoo::list::names() {
        assert!(svg.contains(&format!(">{name}")), "{name} missing");
    }
    assert!(svg.contains("claude-opus-4-1-20250805 as of 2026-12-04"));
    // Into a missing directory: a clear error, nothing written.
    let missing = dir.path().join("no/such/d.svg");
    let (code, out, err) = lab(&[
        "replay",
        &f,
        "--policy",
        "none",
        "--cost",
        "--plot",
        missing.to_str().unwrap(),
    ]);
    assert_ne!(code, 0);
    assert!(out.is_empty() && err.contains("--plot"), "{err}");
    assert!(!dir.path().join("no").exists());
}

/// A run that ended by the design's own error says so in the plot's legend
/// (Inspect's "compaction insufficient" before its first call: no line to
/// draw, so the legend is where a reader learns why); a finished run beside
/// it does not, and no "(same as …)" pairs two runs that drew nothing.
#[test]
fn the_plot_names_a_run_that_ended_by_error() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(&dir, "s.jsonl", LOG);
    let plot = dir.path().join("d.svg");
    let p = plot.to_str().unwrap();
    let (code, out, err) = lab(&[
        "replay",
        &f,
        "--policy",
        "inspect-edit:context_window=20",
        "--policy",
        "inspect-trim:context_window=20",
        "--policy",
        "none",
        "--cost",
        "--plot",
        p,
    ]);
    assert_eq!(code, 0, "{err}");
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(
        svg.contains(">inspect-edit:context_window=20 (ended by error at call 0)<"),
        "{svg}"
    );
    assert!(
        svg.contains(">inspect-trim:context_window=20 (ended by error at call 0)<"),
        "{svg}"
    );
    assert!(!svg.contains("(same as inspect-edit"), "{svg}");
    assert!(svg.contains(">none<") || svg.contains(">none "), "{svg}");
    assert!(!svg.contains("none (ended"), "{svg}");
    // The table's note: the error's first line, its fix line left to the
    // command line (no escaped line break in a cell).
    assert!(
        out.contains("ended: error: Compaction insufficient"),
        "{out}"
    );
    assert!(
        !out.contains("\\u{a}") && !out.contains("fix: Consider"),
        "{out}"
    );
}

/// Every policy, course profiles included, is priced on every shared
/// session (the ones under 1 MB in a debug build), and the printed cost
/// table has its row.
#[test]
fn every_policy_is_priced_on_every_shared_session() {
    use ctxlab::replay::policies::{render_with_recorded, replay_files_product, Measure, Pricing};
    let Some(dir) = common::transcripts() else {
        return;
    };
    let mut files = common::transcript_files(&dir);
    // A debug build takes minutes on the larger logs; `make replay` (a
    // release build) prices them all, as does this test under --release.
    if cfg!(debug_assertions) {
        files.retain(|f| std::fs::metadata(f).is_ok_and(|m| m.len() < 1_000_000));
        eprintln!(
            "debug build: only the transcripts under 1 MB ({})",
            files.len()
        );
    }
    let pricing = Pricing {
        provider: ctxlab::cache::provider::CacheChoice::Anthropic.provider(),
        sheet: ctxlab::cache::prices::sheet("claude-opus-4.1-5m")
            .unwrap()
            .clone(),
        prices: ctxlab::cache::prices::table::PriceTable::builtin(),
        by_model: false,
    };
    let measure = Measure {
        pricing: Some(pricing.clone()),
        // The subagents run the same engine; every policy on them too
        // would double this test's time (tests/cost/subagents.rs replays them).
        conversations: ctxlab::replay::subagents::Conversations {
            main_chain_only: true,
        },
        ..Measure::default()
    };
    let import = Default::default();
    let (out, info) =
        replay_files_product(&files, &["all".to_string()], 160, &import, measure).unwrap();
    let names = ctxlab::zoo::list::names();
    assert!(names.contains(&"course-main") && names.contains(&"none"));
    assert!(out.len() >= files.len() * names.len());
    for c in &out {
        let who = format!("{} {}", c.run.session, c.run.policy);
        let r = c.cost.as_ref().unwrap_or_else(|| panic!("{who}: no cost"));
        // Each summary call is a priced request of its own.
        assert_eq!(
            r.requests.len(),
            c.run.calls.len() + r.compaction_calls,
            "{who}"
        );
        assert!(r.input_tokens > 0 && r.dollars > 0.0, "{who}");
        assert!(r.breaks_per_turn.is_finite(), "{who}");
    }
    let recorded = info.recorded;
    let logs = files
        .iter()
        .filter(|f| f.starts_with(dir.join("claude_code")));
    assert_eq!(recorded.len(), 2 * logs.count());
    let md = render_with_recorded(&out, &recorded, ctxlab::render::Format::Markdown);
    let squeezed: String = md.split_whitespace().collect::<Vec<_>>().join(" ");
    for c in &out {
        let row = format!("| {} | {} |", c.run.session, c.run.policy);
        assert!(
            squeezed.matches(&row).count() >= 2,
            "{row}: expected a loss row and a cost row"
        );
    }
}
