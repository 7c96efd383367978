//! `lab replay --policy … --otel FILE`: OTLP/JSON spans under the GenAI
//! semantic conventions, checked against the checked-in OTLP/JSON schema of
//! the subset written and the conventions' registry entries used
//! (`tests/golden/otel/`), against the replay's own JSON, and in an
//! OpenTelemetry collector when one is installed.

use crate::common::{lab, lab_ok};

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn golden(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/otel")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A generated session long enough for most policies to compact: 40 tool
/// calls, every fifth result large.
fn session_file(dir: &Path) -> PathBuf {
    use ctxlab::message::{Block, Message};
    let mut messages = vec![Message::user_text("fix the failing test")];
    for t in 0..40 {
        let id = format!("toolu_{t:04}");
        messages.push(Message::assistant(vec![Block::ToolUse {
            id: id.clone(),
            name: "bash".into(),
            input: serde_json::json!({"command": format!("cat src/lib{t}.rs")}).into(),
        }]));
        let size = if t % 5 == 0 { 40_000 } else { 2_000 };
        messages.push(Message::tool_results(vec![(
            id,
            format!("fn f{t}() {{}}\n").repeat(size / 12),
        )]));
    }
    messages.push(Message::assistant(vec![Block::Text {
        text: "done".into(),
    }]));
    let file = dir.join("s.json");
    std::fs::write(&file, serde_json::to_string(&messages).unwrap()).unwrap();
    file
}

/// Replay `file` under `policies` with `--otel` and `--format json`: the
/// trace and the replay's JSON.
fn traced(file: &Path, policies: &str, extra: &[&str]) -> (Value, Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.json");
    let mut args = vec![
        "replay",
        file.to_str().unwrap(),
        "--policy",
        policies,
        "--otel",
        trace.to_str().unwrap(),
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    let out = lab_ok(&args);
    let text = std::fs::read_to_string(&trace).unwrap();
    (
        serde_json::from_str(&text).unwrap(),
        serde_json::from_str(&out).unwrap(),
        text,
    )
}

fn spans(trace: &Value) -> Vec<&Value> {
    trace["resourceSpans"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["scopeSpans"].as_array().unwrap())
        .flat_map(|s| s["spans"].as_array().unwrap())
        .collect()
}

/// Every attribute list of the trace: resource, scope, spans, events.
fn attribute_lists(trace: &Value) -> Vec<&Value> {
    let mut out = Vec::new();
    for r in trace["resourceSpans"].as_array().unwrap() {
        out.push(&r["resource"]["attributes"]);
        for s in r["scopeSpans"].as_array().unwrap() {
            out.push(&s["scope"]["attributes"]);
            for span in s["spans"].as_array().unwrap() {
                out.push(&span["attributes"]);
                for e in span["events"].as_array().into_iter().flatten() {
                    out.push(&e["attributes"]);
                }
            }
        }
    }
    out
}

/// The registry's type name of an OTLP/JSON value.
fn value_type(v: &Value) -> &'static str {
    let o = v.as_object().unwrap();
    match o.keys().next().map(String::as_str) {
        Some("stringValue") => "string",
        Some("intValue") => "int",
        Some("boolValue") => "boolean",
        Some("doubleValue") => "double",
        other => panic!("unexpected value kind {other:?} in {v}"),
    }
}

fn compactions_in_replay(replay: &Value) -> usize {
    replay["runs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["events"].as_array().unwrap())
        .filter(|e| matches!(e[1]["event"].as_str(), Some("summarised" | "dropped")))
        .count()
}

fn events_named<'a>(trace: &'a Value, name: &str) -> Vec<&'a Value> {
    spans(trace)
        .into_iter()
        .flat_map(|s| s["events"].as_array().into_iter().flatten())
        .filter(|e| e["name"] == name)
        .collect()
}

/// Schema and registry: the whole trace validates against the OTLP/JSON
/// schema of the subset, every `gen_ai.*` key is in the registry with its
/// type (and an enum's value among the members listed), every `ctxlab.*`
/// key is one the module lists, with its type; nothing else but
/// `service.name`.
fn check_conformance(trace: &Value) {
    let schema = golden("otlp_trace.schema.json");
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    let errors: Vec<String> = validator
        .iter_errors(trace)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .take(5)
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    let registry = golden("semconv_genai_registry.json");
    let ours: BTreeMap<&str, &str> = ctxlab::replay::otel::CTXLAB_KEYS.iter().copied().collect();
    let mut seen_gen_ai = 0;
    for list in attribute_lists(trace) {
        let mut keys = std::collections::HashSet::new();
        for kv in list.as_array().unwrap() {
            let key = kv["key"].as_str().unwrap();
            assert!(keys.insert(key), "attribute {key} twice in one list");
            let ty = value_type(&kv["value"]);
            if key.starts_with("gen_ai.") {
                seen_gen_ai += 1;
                let entry = &registry["attributes"][key];
                assert!(entry.is_object(), "{key} is not in the pinned registry");
                assert_eq!(entry["type"], ty, "{key}: registry type");
                if let Some(members) = entry["members"].as_array() {
                    assert!(
                        members.contains(&kv["value"]["stringValue"]),
                        "{key} = {} is not a listed member",
                        kv["value"]
                    );
                }
                if key == "gen_ai.conversation.compacted" {
                    assert_eq!(kv["value"]["boolValue"], true, "set only to true");
                }
            } else if key.starts_with("ctxlab.") {
                assert_eq!(
                    ours.get(key),
                    Some(&ty),
                    "{key} with type {ty} is not listed"
                );
            } else {
                assert_eq!(
                    key, "service.name",
                    "an attribute outside gen_ai.* and ctxlab.*"
                );
            }
        }
    }
    assert!(seen_gen_ai > 0, "no gen_ai.* attribute written");
}

#[test]
fn the_trace_validates_and_carries_one_compaction_event_per_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let file = session_file(dir.path());
    let (trace, replay, _) = traced(&file, "all", &["--cost"]);
    check_conformance(&trace);
    let compactions = compactions_in_replay(&replay);
    assert!(
        compactions > 0,
        "the generated session compacts under some policy"
    );
    assert_eq!(events_named(&trace, "ctxlab.compaction").len(), compactions);
    // Each event names its policy, as the replay's run it came from does.
    for e in events_named(&trace, "ctxlab.compaction") {
        let attrs = e["attributes"].as_array().unwrap();
        assert!(attrs.iter().any(|a| a["key"] == "ctxlab.policy"));
    }
    // One root per run, one child per model call, the call spans under
    // their run's root.
    let runs = replay["runs"].as_array().unwrap();
    let all = spans(&trace);
    let roots: Vec<_> = all.iter().filter(|s| s["parentSpanId"].is_null()).collect();
    assert_eq!(roots.len(), runs.len());
    let calls: usize = runs
        .iter()
        .map(|r| r["calls"].as_array().unwrap().len())
        .sum();
    assert_eq!(all.len() - roots.len(), calls);
    let ids: std::collections::HashSet<_> = all.iter().map(|s| s["spanId"].as_str()).collect();
    assert_eq!(ids.len(), all.len(), "span ids are unique");
    // Priced: the cache attributes are on every call span.
    let reads = all
        .iter()
        .filter(|s| {
            s["attributes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|a| a["key"] == "gen_ai.usage.cache_read.input_tokens")
        })
        .count();
    assert_eq!(reads, calls);
}

#[test]
fn a_call_after_a_compaction_is_marked_compacted_and_none_before() {
    let dir = tempfile::tempdir().unwrap();
    let file = session_file(dir.path());
    let (trace, replay, _) = traced(&file, "all", &[]);
    for run in replay["runs"].as_array().unwrap() {
        let policy = run["policy"].as_str().unwrap();
        let first = run["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| matches!(e[1]["event"].as_str(), Some("summarised" | "dropped")))
            .map(|e| e[0].as_u64().unwrap())
            .min();
        for s in spans(&trace) {
            let attrs = s["attributes"].as_array().unwrap();
            let get = |k: &str| attrs.iter().find(|a| a["key"] == k).map(|a| &a["value"]);
            if s["parentSpanId"].is_null()
                || get("ctxlab.policy").and_then(|v| v["stringValue"].as_str()) != Some(policy)
            {
                continue;
            }
            let call: u64 = get("ctxlab.call").unwrap()["intValue"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap();
            let marked = get("gen_ai.conversation.compacted").is_some();
            assert_eq!(
                marked,
                first.is_some_and(|f| call >= f),
                "{policy} call {call} (first compaction before call {first:?})"
            );
        }
    }
}

#[test]
fn the_same_replay_writes_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let file = session_file(dir.path());
    let (_, _, a) = traced(
        &file,
        "none,openhands-observation-masking",
        &["--jobs", "1"],
    );
    let (_, _, b) = traced(
        &file,
        "none,openhands-observation-masking",
        &["--jobs", "3"],
    );
    assert_eq!(a, b);
    // A different policy list is a different trace (the check can fail).
    let (_, _, c) = traced(&file, "none", &[]);
    assert_ne!(a, c);
}

#[test]
fn a_failed_replay_leaves_no_trace_and_a_corpus_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.json");
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "[{\"role\": \"user\", \"content\": ").unwrap();
    let (code, _, err) = lab(&[
        "replay",
        bad.to_str().unwrap(),
        "--policy",
        "none",
        "--otel",
        trace.to_str().unwrap(),
        "--strict",
    ]);
    assert_eq!(code, 3, "{err}");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("bad.json")], "{left:?}");
    // A missing directory is a usage error before any work.
    let (code, _, err) = lab(&[
        "replay",
        bad.to_str().unwrap(),
        "--policy",
        "none",
        "--otel",
        dir.path().join("no/such/t.json").to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    // A corpus is streamed, never held: refused by name.
    let corpus = dir.path().join("corpus");
    std::fs::create_dir(&corpus).unwrap();
    session_file(&corpus);
    let (code, _, err) = lab(&[
        "replay",
        corpus.to_str().unwrap(),
        "--policy",
        "none",
        "--otel",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--otel"), "{err}");
    assert!(!trace.exists());
}

#[test]
fn real_sessions_trace_one_compaction_event_per_reported_compaction() {
    let Some(dir) = crate::common::transcripts() else {
        return;
    };
    let file = dir.join("claude_code/claude-code-config-73752f2f__dotclaude.jsonl");
    if !file.is_file() {
        eprintln!("SKIP: {} not found", file.display());
        return;
    }
    let (trace, replay, _) = traced(&file, "all", &[]);
    check_conformance(&trace);
    let compactions = compactions_in_replay(&replay);
    assert!(compactions > 0);
    assert_eq!(events_named(&trace, "ctxlab.compaction").len(), compactions);
    // The log names its model and provider: both are on every call span.
    for s in spans(&trace)
        .iter()
        .filter(|s| !s["parentSpanId"].is_null())
    {
        let keys: Vec<_> = s["attributes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["key"].as_str().unwrap())
            .collect();
        assert!(keys.contains(&"gen_ai.request.model"), "{keys:?}");
        assert!(keys.contains(&"gen_ai.provider.name"), "{keys:?}");
    }
}

/// The trace loads in an OpenTelemetry collector: `otelcol-contrib`'s
/// `otlpjsonfile` receiver reads it and its `file` exporter writes every
/// span back. Skipped with a reason when the collector is not installed
/// (tests never download it).
#[test]
fn an_opentelemetry_collector_reads_the_trace() {
    let Some(collector) = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("otelcol-contrib"))
            .find(|p| p.is_file())
    }) else {
        eprintln!("SKIP: otelcol-contrib is not on PATH; the collector test needs it installed");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = session_file(dir.path());
    let (trace, _, text) = traced(&file, "none,openhands-observation-masking", &[]);
    let input = dir.path().join("in.json");
    std::fs::write(&input, text).unwrap();
    let output = dir.path().join("out.json");
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "receivers:\n  otlpjsonfile:\n    include: [\"{}\"]\n    start_at: beginning\n\
             exporters:\n  file:\n    path: \"{}\"\n\
             service:\n  telemetry:\n    metrics:\n      level: none\n  pipelines:\n    traces:\n      receivers: [otlpjsonfile]\n      exporters: [file]\n",
            input.display(),
            output.display()
        ),
    )
    .unwrap();
    let mut child = std::process::Command::new(collector)
        .arg("--config")
        .arg(&config)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let want = spans(&trace).len();
    let mut got = 0;
    for _ in 0..100 {
        std::thread::sleep(std::time::Duration::from_millis(200));
        if let Ok(t) = std::fs::read_to_string(&output) {
            got = t
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .map(|v| spans(&v).len())
                .sum();
            if got >= want {
                break;
            }
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(got, want, "spans the collector exported");
}
