//! Every JSON output with a schema: the checked-in schema is the one the
//! types generate, and what the command prints validates against it
//! whatever the flags (one shape).

use crate::common;
use common::{lab, lab_ok, transcript_files, transcripts};

use serde_json::{json, Value};

fn checked_in(name: &str) -> Value {
    let path = format!(
        "{}/lab/schemas/{name}.schema.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap()
}

#[test]
fn checked_in_schemas_are_the_generated_ones() {
    for (name, make) in ctxlab::cli::SCHEMAS {
        assert_eq!(
            checked_in(name),
            make(),
            "lab/schemas/{name}.schema.json is stale: run `make schemas`"
        );
        assert_eq!(lab_ok(&["schema", name]), ctxlab::render::json(&make()));
    }
    let (code, _, err) = lab(&["schema", "nope"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("replay-policies"), "{err}");
}

/// Every error of `instance` against the schema, as text.
fn errors(schema: &Value, instance: &Value) -> Vec<String> {
    let validator = jsonschema::validator_for(schema).expect("a valid schema");
    validator
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .take(5)
        .collect()
}

#[test]
fn replay_policies_json_validates_whatever_the_flags() {
    let schema = checked_in("replay-policies");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.json");
    std::fs::write(
        &path,
        serde_json::to_string(&common::tool_session(6, 2)).unwrap(),
    )
    .unwrap();
    let p = path.to_str().unwrap();
    let policies = "none,course-main,claude-code,swe-agent-mask-10";
    let mut keys = Vec::new();
    for extra in [
        &[][..],
        &["--retention"],
        &["--cost"],
        &["--retention", "--cost"],
    ] {
        let mut args = vec!["replay", p, "--policy", policies, "--format", "json"];
        args.extend_from_slice(extra);
        let v: Value = serde_json::from_str(&lab_ok(&args)).unwrap();
        let errs = errors(&schema, &v);
        assert!(errs.is_empty(), "{extra:?}: {errs:#?}");
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        keys.push(k);
    }
    // A corpus (the directory), a shard of it and the merged parts: the same shape.
    let shard = |i: &str| {
        let a = [
            "replay",
            dir.path().to_str().unwrap(),
            "--policy",
            policies,
            "--cost",
        ];
        lab_ok(&[&a[..], &["--shard", i, "--format", "json"]].concat())
    };
    let parts = tempfile::tempdir().unwrap();
    let part0 = parts.path().join("part0.json");
    let part1 = parts.path().join("part1.json");
    std::fs::write(&part0, shard("0/2")).unwrap();
    std::fs::write(&part1, shard("1/2")).unwrap();
    for text in [
        lab_ok(&[
            "replay",
            dir.path().to_str().unwrap(),
            "--policy",
            policies,
            "--format",
            "json",
        ]),
        std::fs::read_to_string(&part0).unwrap(),
        lab_ok(&[
            "replay",
            "--merge",
            part0.to_str().unwrap(),
            part1.to_str().unwrap(),
            "--format",
            "json",
        ]),
    ] {
        let v: Value = serde_json::from_str(&text).unwrap();
        let errs = errors(&schema, &v);
        assert!(errs.is_empty(), "corpus: {errs:#?}");
        assert!(v["corpus"].is_object(), "{v}");
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        keys.push(k);
    }
    assert!(keys.windows(2).all(|w| w[0] == w[1]), "one shape: {keys:?}");
}

#[test]
fn a_change_of_shape_is_caught() {
    // The check above could only fail if the validator rejects what the
    // schema does not describe: a run without its calls must not validate.
    let schema = checked_in("replay-policies");
    let bad = json!({"runs": [{"policy": "none"}], "retention": [], "cost": [], "recorded": []});
    assert!(!errors(&schema, &bad).is_empty());
}

#[test]
fn replay_policies_json_of_a_claude_code_log_validates() {
    let Some(dir) = transcripts() else { return };
    let schema = checked_in("replay-policies");
    let file = transcript_files(&dir)
        .into_iter()
        .find(|f| f.to_string_lossy().ends_with(".jsonl"))
        .expect("a Claude Code log");
    let f = file.to_str().unwrap();
    let args = [
        "replay",
        f,
        "--policy",
        "none,claude-code",
        "--retention",
        "--cost",
        "--format",
        "json",
    ];
    let v: Value = serde_json::from_str(&lab_ok(&args)).unwrap();
    assert!(
        !v["recorded"].as_array().unwrap().is_empty(),
        "recorded usage priced"
    );
    let errs = errors(&schema, &v);
    assert!(errs.is_empty(), "{errs:#?}");
}

#[test]
fn dump_and_export_lines_validate() {
    let dump = checked_in("dump");
    let export = checked_in("export");
    let demands = checked_in("demands");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.json");
    std::fs::write(
        &path,
        serde_json::to_string(&common::tool_session(6, 2)).unwrap(),
    )
    .unwrap();
    let out = dir.path().join("dump");
    let p = path.to_str().unwrap();
    let policies = "none,course-main,claude-code,openhands-recent";
    lab_ok(&[
        "replay",
        p,
        "--policy",
        policies,
        "--dump",
        out.to_str().unwrap(),
    ]);
    let mut seen = 0;
    for entry in std::fs::read_dir(out.join("s.json")).unwrap() {
        let file = entry.unwrap().path();
        let schema = if file.ends_with("messages.jsonl") {
            &export
        } else if file.ends_with("demands.json") {
            &demands
        } else {
            &dump
        };
        for line in std::fs::read_to_string(&file).unwrap().lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            let errs = errors(schema, &v);
            assert!(errs.is_empty(), "{}: {errs:#?}", file.display());
            seen += 1;
        }
    }
    assert!(
        seen > 4 * 7,
        "every policy's calls and the messages: {seen}"
    );
}

#[test]
fn memory_tool_protocol_lines_validate() {
    let request = checked_in("memtool-request");
    let answer = checked_in("memtool-answer");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("memories");
    let lines: Vec<Value> = [
        json!({"command": "create", "path": "/memories/a.md", "file_text": "one\n"}),
        json!({"command": "view", "path": "/memories/a.md", "view_range": [1, -1]}),
        json!({"command": "str_replace", "path": "/memories/a.md", "old_str": "x", "new_str": "y"}),
        json!({"command": "insert", "path": "/memories/a.md", "insert_line": 0, "insert_text": "zero"}),
        json!({"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/b.md"}),
        json!({"command": "delete", "path": "/memories/b.md"}),
    ]
    .into_iter()
    .enumerate()
    .map(|(i, input)| json!({"protocol": "ctxlab.memtool/1", "id": i + 1, "root": root, "input": input}))
    .collect();
    let mut input = String::new();
    for l in &lines {
        assert!(errors(&request, l).is_empty(), "{l}");
        input.push_str(&format!("{l}\n"));
    }
    let bad = json!({"protocol": "ctxlab.memtool/1", "id": 1, "root": "/r", "input": {"command": "view"}});
    assert!(!errors(&request, &bad).is_empty(), "a view without a path");
    let out = common::lab_command()
        .args(["memtool-serve", "reference"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(input.as_bytes())?;
            child.wait_with_output()
        })
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let answers: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(answers.len(), lines.len(), "{text}");
    for (i, a) in answers.iter().enumerate() {
        assert!(errors(&answer, a).is_empty(), "{a}");
        assert_eq!(a["id"], json!(i + 1));
    }
    assert_eq!(
        answers[0]["result"],
        json!("File created successfully at: /memories/a.md")
    );
    assert!(answers[2]["error"]
        .as_str()
        .unwrap()
        .starts_with("No replacement was performed"));
    assert_eq!(
        answers[5]["result"],
        json!("Successfully deleted /memories/b.md")
    );
}

#[test]
fn external_policy_protocol_lines_validate() {
    let (request, hello, answer) = (
        checked_in("policy-request"),
        checked_in("policy-hello"),
        checked_in("policy-answer"),
    );
    let dir = tempfile::tempdir().unwrap();
    let session = common::write(
        dir.path(),
        "s.json",
        &serde_json::to_string(&common::tool_session(4, 1)).unwrap(),
    );
    let seen = dir.path().join("seen.jsonl");
    let hello_line = r#"{"protocol":"ctxlab.policy/1","summary":"echo","pointer_rules":[{"rule":"after","open":"see: "}]}"#;
    let script = format!(
        "read l\necho \"$l\" >> '{}'\necho '{hello_line}'\nn=0\nwhile read l; do n=$((n+1)); echo \"$l\" >> '{}'; echo \"{{\\\"id\\\":$n}}\"; done\n",
        seen.display(),
        seen.display()
    );
    let script = common::write(dir.path(), "echo.sh", &script);
    let spec = format!("exec:sh {}", script.display());
    lab_ok(&["replay", session.to_str().unwrap(), "--policy", &spec]);
    let lines = std::fs::read_to_string(&seen).unwrap();
    assert_eq!(
        lines.lines().count(),
        1 + 5,
        "hello and one prepare per call"
    );
    for line in lines.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let errs = errors(&request, &v);
        assert!(errs.is_empty(), "{line}: {errs:#?}");
    }
    assert!(errors(&hello, &serde_json::from_str(hello_line).unwrap()).is_empty());
    let good = json!({"id": 3, "request": [{"role": "user", "content": "x"}], "events": [{"event": "dropped", "messages": 2, "why": "window"}], "writes": [{"path": "a/b.txt", "content": "y"}]});
    assert!(errors(&answer, &good).is_empty(), "{good}");
    let bad = json!({"id": 3, "events": [{"event": "dropped"}]});
    assert!(
        !errors(&answer, &bad).is_empty(),
        "an event without its fields"
    );
}

/// `lab horizon --format json`: one shape whether a run reaches the
/// horizon, compacts, or stalls for good (`none` over the window); a
/// required field removed is refused.
#[test]
fn horizon_json_validates_whatever_the_runs_did() {
    let schema = checked_in("horizon");
    let out = lab_ok(&[
        "horizon",
        "--tokens",
        "250000",
        "--policy",
        "none,claude-code,swe-agent-mask-5",
        "--jobs",
        "1",
        "--format",
        "json",
    ]);
    let mut v: Value = serde_json::from_str(&out).unwrap();
    let errs = errors(&schema, &v);
    assert!(errs.is_empty(), "{errs:#?}");
    let policies = v["policies"].as_array().unwrap();
    assert!(
        policies[0]["stalled_for_good_at"].is_u64(),
        "{}",
        policies[0]
    );
    assert!(!policies[1]["compactions"].as_array().unwrap().is_empty());
    v["policies"][1].as_object_mut().unwrap().remove("calls");
    assert!(!errors(&schema, &v).is_empty(), "a run without `calls`");
}
