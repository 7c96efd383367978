//! A measure does not depend on how its input is laid out: the same
//! `chat.json` indented, minified onto one line, or one record a line
//! replays to byte-identical JSON. Recorded usage (`--envelope auto`) pairs
//! each reply with its request by the place its record starts, and a
//! one-line file has every record on line 1.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::common::lab;

/// The three layouts of one array of records.
fn layouts(records: &[Value]) -> [(&'static str, String); 3] {
    let per_line: Vec<String> = records.iter().map(Value::to_string).collect();
    [
        (
            "indented",
            serde_json::to_string_pretty(&Value::Array(records.to_vec())).unwrap(),
        ),
        (
            "minified",
            serde_json::to_string(&Value::Array(records.to_vec())).unwrap(),
        ),
        ("per-record", format!("[\n{}\n]\n", per_line.join(",\n"))),
    ]
}

/// A Claude Code session whose recorded usage grows by more than the log
/// adds at some replies (attachments the replay puts back), so the numbers
/// depend on which request each reply is paired with.
fn session_records(turns: usize) -> Vec<Value> {
    let mut out = Vec::new();
    let mut parent = Value::Null;
    let mut tokens = 3_000u64;
    for t in 0..turns {
        let (u, a, r, a2) = (
            format!("u{t}"),
            format!("a{t}"),
            format!("r{t}"),
            format!("b{t}"),
        );
        let prompt = if t % 3 == 1 {
            format!("now look at @src/mod{t}.rs and fix it")
        } else {
            format!("step {t}: carry on with the plan")
        };
        out.push(
            json!({"type": "user", "uuid": u, "parentUuid": parent, "isSidechain": false,
            "version": "2.0.21", "message": {"role": "user", "content": prompt}}),
        );
        // Each request: what came before, plus an attachment at every third turn.
        tokens += 400
            + if t % 3 == 1 {
                2_500 + 300 * t as u64
            } else {
                0
            };
        let usage = |n: u64| json!({"input_tokens": 10, "cache_read_input_tokens": n - 10, "output_tokens": 40});
        out.push(json!({"type": "assistant", "uuid": a, "parentUuid": u, "isSidechain": false,
            "message": {"id": format!("msg_{t}a"), "role": "assistant", "model": "claude-sonnet-4-5-20250929",
                "content": [{"type": "tool_use", "id": format!("tu{t}"), "name": "Read",
                    "input": {"file_path": format!("/src/mod{t}.rs")}}],
                "usage": usage(tokens)}}));
        let result = format!("{t}: ").repeat(300 + 200 * (t % 4));
        out.push(
            json!({"type": "user", "uuid": r, "parentUuid": a, "isSidechain": false,
            "message": {"role": "user", "content": [{"type": "tool_result",
                "tool_use_id": format!("tu{t}"), "content": result}]}}),
        );
        tokens += 500 + 100 * (t % 4) as u64;
        out.push(json!({"type": "assistant", "uuid": a2, "parentUuid": r, "isSidechain": false,
            "message": {"id": format!("msg_{t}b"), "role": "assistant", "model": "claude-sonnet-4-5-20250929",
                "content": [{"type": "text", "text": format!("done with step {t}")}],
                "usage": usage(tokens)}}));
        parent = json!(a2);
    }
    out
}

/// Writes each layout under its own directory with the same file name (so
/// the output, which names the file, can be compared byte for byte).
fn write_layouts(root: &Path, name: &str, records: &[Value]) -> Vec<(&'static str, PathBuf)> {
    layouts(records)
        .into_iter()
        .map(|(layout, text)| {
            let dir = root.join(layout);
            std::fs::create_dir_all(&dir).unwrap();
            let p = dir.join(name);
            std::fs::write(&p, text).unwrap();
            (layout, p)
        })
        .collect()
}

/// `lab replay` of `file` with `args`: its stdout, after asserting success.
fn replay(file: &Path, args: &[&str]) -> String {
    let mut a = vec!["replay", file.to_str().unwrap()];
    a.extend(args);
    let (code, out, err) = lab(&a);
    assert_eq!(code, 0, "{}: {err}", file.display());
    out
}

const POLICIES: &[&str] = &[
    "--policy",
    "none,claude-code,codex-cli,course-main",
    "--format",
    "json",
];

/// Every layout of `records` replays to the same bytes as the indented one.
fn assert_layouts_agree(name: &str, records: &[Value], args: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let files = write_layouts(dir.path(), name, records);
    let (first, reference) = (files[0].0, replay(&files[0].1, args));
    for (layout, file) in &files[1..] {
        let out = replay(file, args);
        assert!(
            out == reference,
            "{name}: the {layout} layout replays differently from the {first} one under {args:?}"
        );
    }
}

#[test]
fn a_generated_chat_json_replays_the_same_in_every_layout() {
    let records = session_records(9);
    assert_layouts_agree("session.json", &records, POLICIES);
    // Reading every recorded count pairs each reply with its request.
    let recorded = [POLICIES, &["--anchor", "recorded"]].concat();
    assert_layouts_agree("session.json", &records, &recorded);
    // The course profiles read the same log.
    assert_layouts_agree("session.json", &records, &["--format", "json"]);
}

#[test]
fn recorded_usage_is_read_in_the_one_line_layout() {
    // The agreement above must not come from reading no usage at all: the
    // one-line file's recorded usage shows the attachments the session was
    // built with, each paired with its own request.
    let records = session_records(9);
    let dir = tempfile::tempdir().unwrap();
    let files = write_layouts(dir.path(), "session.json", &records);
    let (_, minified) = &files[1];
    let out = replay(
        minified,
        &[
            "--policy", "none", "--anchor", "recorded", "--format", "json",
        ],
    );
    let v: Value = serde_json::from_str(&out).unwrap();
    let put_back = &v["envelopes"][0]["put_back"];
    assert_eq!(put_back["attachments"], 3, "{put_back}");
}

#[test]
fn the_shared_chat_json_logs_replay_the_same_in_every_layout() {
    let Some(t) = crate::common::transcripts() else {
        return;
    };
    let dir = t.join("claude_code");
    for name in ["dmux__chat@eef6c28.json", "golfgod__chat@c2f506b.json"] {
        let path = dir.join(name);
        if !path.is_file() {
            eprintln!("SKIP: {} not found", path.display());
            continue;
        }
        let records: Vec<Value> = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_layouts_agree(
            name,
            &records,
            &["--policy", "none,claude-code", "--format", "json"],
        );
    }
}
