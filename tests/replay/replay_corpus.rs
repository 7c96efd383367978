//! `lab replay CORPUS --policy …`: one aggregate row per policy by default,
//! each session's tables with `--per-session`, one JSON record per session ×
//! policy with `--format jsonl`; the JSON object keeps its one shape.

use crate::common;

use std::path::Path;

use common::lab;

/// A directory of `n` generated sessions of 2 to 10 tool rounds.
fn corpus(dir: &Path, n: usize) -> String {
    let root = dir.join("corpus");
    std::fs::create_dir(&root).unwrap();
    for i in 0..n {
        let messages = ctxlab::replay::profiles::synthetic_main(2 + i % 9, 300 + 97 * (i % 13));
        common::write(
            &root,
            &format!("s{i:03}.json"),
            &serde_json::to_string(&messages).unwrap(),
        );
    }
    root.to_str().unwrap().to_string()
}

fn ok(args: &[&str]) -> String {
    let (code, out, err) = lab(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    out
}

#[test]
fn two_hundred_sessions_print_one_short_aggregate_table() {
    let dir = tempfile::tempdir().unwrap();
    let root = corpus(dir.path(), 200);
    let out = ok(&["replay", &root, "--policy", "all"]);
    let lines = out.lines().count();
    assert!(lines <= 60, "{lines} lines:\n{out}");
    let names = ctxlab::zoo::list::names();
    for n in &names {
        let row = out
            .lines()
            .find(|l| l.starts_with(&format!("│ {n} ")))
            .unwrap_or_else(|| panic!("no row for {n}:\n{out}"));
        assert!(row.contains("┆ 200 "), "{row}");
    }
    assert!(out.contains("mean / median / p95"), "{out}");
}

#[test]
fn the_aggregates_are_exact_over_the_streamed_records() {
    let dir = tempfile::tempdir().unwrap();
    let root = corpus(dir.path(), 21);
    let policies = "none,prototype,swe-agent-mask-5";
    let lines = ok(&[
        "replay", &root, "--policy", policies, "--cost", "--format", "jsonl",
    ]);
    let records: Vec<serde_json::Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 21 * 3);
    let json: serde_json::Value = serde_json::from_str(&ok(&[
        "replay", &root, "--policy", policies, "--cost", "--format", "json",
    ]))
    .unwrap();
    // One shape whatever the input: a corpus leaves the per-run arrays empty.
    for key in ["runs", "retention", "cost", "recorded"] {
        assert_eq!(json[key], serde_json::json!([]), "{key}");
    }
    let agg = json["aggregate"].as_array().unwrap();
    assert_eq!(agg.len(), 3);
    for a in agg {
        let policy = a["policy"].as_str().unwrap();
        assert_eq!(a["sessions"], 21);
        for (field, metric) in [
            ("peak_chars", "peak chars"),
            ("dollars", "dollars"),
            ("events", "events"),
        ] {
            let mut v: Vec<f64> = records
                .iter()
                .filter(|r| r["policy"] == policy)
                .map(|r| r[field].as_f64().unwrap())
                .collect();
            v.sort_by(f64::total_cmp);
            let s = &a["stats"][metric];
            // 21 sessions: the median is the 11th value, p95 the 20th (nearest rank).
            assert_eq!(s["median"].as_f64().unwrap(), v[10], "{policy} {metric}");
            assert_eq!(s["p95"].as_f64().unwrap(), v[19], "{policy} {metric}");
            let mean = v.iter().sum::<f64>() / 21.0;
            assert!(
                (s["mean"].as_f64().unwrap() - mean).abs() < 1e-9,
                "{policy} {metric}"
            );
        }
    }
}

#[test]
fn a_small_corpus_table_and_its_per_session_form() {
    let dir = tempfile::tempdir().unwrap();
    let root = corpus(dir.path(), 5);
    let args = [
        "replay",
        &root,
        "--policy",
        "none,prototype,vercel-prune-messages",
        "--cost",
    ];
    let out = ok(&args);
    let body = out.replace(&root, "CORPUS");
    insta::assert_snapshot!("replay_corpus_aggregate", body);
    let mut per = args.to_vec();
    per.push("--per-session");
    let per = ok(&per);
    // Each session's own tables, then the same aggregate.
    for i in 0..5 {
        assert!(per.contains(&format!("│ s{i:03}.json ")), "s{i:03}:\n{per}");
    }
    assert!(
        per.ends_with(&out),
        "the aggregate closes the per-session output"
    );
}

#[test]
fn one_file_keeps_its_per_session_tables_and_the_json_gains_the_aggregate() {
    let dir = tempfile::tempdir().unwrap();
    let root = corpus(dir.path(), 1);
    let file = format!("{root}/s000.json");
    let out = ok(&["replay", &file, "--policy", "none,prototype"]);
    assert!(out.contains("│ s000.json "), "{out}");
    let json: serde_json::Value = serde_json::from_str(&ok(&[
        "replay", &file, "--policy", "none", "--format", "json",
    ]))
    .unwrap();
    assert_eq!(json["runs"].as_array().unwrap().len(), 1);
    assert_eq!(json["aggregate"][0]["sessions"], 1);
}

#[test]
fn corpus_refusals_are_clear() {
    let dir = tempfile::tempdir().unwrap();
    let root = corpus(dir.path(), 2);
    let html = dir.path().join("r.html");
    let (code, _, err) = lab(&[
        "replay",
        &root,
        "--policy",
        "none",
        "--html",
        html.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--html") && !html.exists(), "{err}");
    // A shard's part is what `--merge` reads: per-session objects have no
    // place in it.
    let (code, _, err) = lab(&[
        "replay",
        &root,
        "--policy",
        "none",
        "--per-session",
        "--format",
        "json",
        "--shard",
        "0/2",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--per-session"), "{err}");
    let (code, _, err) = lab(&["replay", &root, "--format", "jsonl"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--policy"), "{err}");
}

#[test]
fn a_corpus_plot_draws_each_policys_cost_distribution() {
    let dir = tempfile::tempdir().unwrap();
    let root = corpus(dir.path(), 12);
    let plot = dir.path().join("ecdf.svg");
    ok(&[
        "replay",
        &root,
        "--policy",
        "all",
        "--cost",
        "--plot",
        plot.to_str().unwrap(),
    ]);
    let svg = std::fs::read_to_string(&plot).unwrap();
    let p = ctxlab::plot::lint::check(&svg);
    assert!(p.is_empty(), "{p:#?}");
    // Every policy highlighted once, in its group's panel.
    assert_eq!(p.series, ctxlab::zoo::list::names().len());
    assert!(svg.contains("empirical CDF") && svg.contains(">sessions at or below (%)<"));
    // The caption names what priced the sessions (each session's model by
    // default, the dated sheet for logs naming none) and the counter.
    assert!(
        svg.contains("prices each session&apos;s model (")
            || svg.contains("prices each session's model ("),
        "{svg}"
    );
    assert!(
        svg.contains(" as of 20") && svg.contains("tokenizer approx"),
        "the sheet's date and the counter"
    );
    // Each ECDF rises to every session: 12 steps end at 100 %.
    let none = svg
        .lines()
        .find(|l| l.contains("data-label=\"none\""))
        .unwrap();
    assert_eq!(none.matches(" V").count(), 11, "{none}");
}

#[test]
fn a_reader_that_closes_the_stream_ends_it_quietly() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let root = corpus(dir.path(), 60);
    let mut child = common::lab_command()
        .args(["replay", &root, "--policy", "all", "--format", "jsonl"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with('{'), "{first}");
    // The reader is gone (dropped above): the next write fails with EPIPE.
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("error"), "{err}");
}

/// A Claude Code log replayed as a corpus is sent as the same file named:
/// with what its log leaves out put back (golfgod's background-shell
/// reminders), so its requests are the same size either way.
#[test]
fn a_corpus_session_is_sent_as_the_named_file_is() {
    let Some(dir) = common::transcripts() else {
        return;
    };
    let name = "golfgod__chat@c2f506b.json";
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("corpus");
    std::fs::create_dir(&root).unwrap();
    std::fs::copy(dir.join("claude_code").join(name), root.join(name)).unwrap();
    let args = ["--policy", "none", "--format", "json"];
    let corpus: serde_json::Value =
        serde_json::from_str(&ok(
            &[&["replay", root.to_str().unwrap()], &args[..]].concat()
        ))
        .unwrap();
    let file = root.join(name);
    let named: serde_json::Value =
        serde_json::from_str(&ok(
            &[&["replay", file.to_str().unwrap()], &args[..]].concat()
        ))
        .unwrap();
    let record = &corpus["corpus"]["records"][0]["records"][0];
    let calls = named["runs"][0]["calls"].as_array().unwrap();
    let last = calls.last().unwrap();
    let peak = calls.iter().map(|c| c["chars"].as_u64().unwrap()).max();
    assert_eq!(record["last_tokens"], last["tokens"]);
    assert_eq!(record["peak_chars"].as_u64(), peak);
    // The reminders are in both: the named replay says so.
    assert!(named["envelopes"][0]["put_back"]["shell_reminders"].as_u64() > Some(0));
}

#[test]
fn per_session_json_is_one_object_each_session_as_named_files_print_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = corpus(dir.path(), 5);
    let policies = "none,prototype";
    let out = ok(&[
        "replay",
        &root,
        "--policy",
        policies,
        "--per-session",
        "--format",
        "json",
        "--jobs",
        "2",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/lab/schemas/replay-per-session.schema.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    let errors: Vec<String> = validator
        .iter_errors(&v)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .take(5)
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    let sessions = v["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 5);
    // Each session's object is what the session alone prints.
    for (n, s) in sessions.iter().enumerate() {
        let file = Path::new(&root).join(format!("s{n:03}.json"));
        assert_eq!(s["key"], format!("s{n:03}.json"));
        let alone: serde_json::Value = serde_json::from_str(&ok(&[
            "replay",
            file.to_str().unwrap(),
            "--policy",
            policies,
            "--format",
            "json",
        ]))
        .unwrap();
        assert_eq!(s["replay"]["runs"], alone["runs"], "session {n}");
        assert_eq!(s["replay"]["envelopes"], alone["envelopes"], "session {n}");
    }
    // And the corpus part is the corpus replay without --per-session.
    let whole: serde_json::Value = serde_json::from_str(&ok(&[
        "replay", &root, "--policy", policies, "--format", "json",
    ]))
    .unwrap();
    assert_eq!(v["corpus"], whole);
}
