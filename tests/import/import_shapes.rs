//! Every transcript shape a new user brings, on small synthetic files built
//! here (no transcript text): trajectory arrays, wrong-typed chain fields,
//! sub-agent logs, recorded sizes, one-line files, empty input, floods, a bad
//! file among good ones, a damaged result record, real budgets and
//! compaction metadata, lying extensions.

use crate::common;
use common::{jsonl, lab, write, LENIENT, STRICT};

use std::path::{Path, PathBuf};

use ctxlab::import::{
    import_file, import_file_sessions, import_reader_sessions, import_str, unpaired_ids,
    DiagnosticKind, ImportOptions, ImportedSession, TranscriptFormat, MISSING_RESULT,
    SAMPLES_PER_KIND,
};
use ctxlab::message::Block;
use ctxlab::replay::profiles::{run_files, ReplayOptions};
use serde_json::{json, Value};

fn rec(kind: &str, uuid: &str, parent: Option<&str>, id: &str, content: Value) -> Value {
    json!({"type": kind, "uuid": uuid, "parentUuid": parent, "isSidechain": false,
           "sessionId": "s", "message": {"role": kind, "id": id, "content": content}})
}

fn call(id: &str) -> Value {
    json!({"type": "tool_use", "id": id, "name": "Bash", "input": {"command": "true"}})
}

fn result(id: &str, content: Value) -> Value {
    json!({"type": "tool_result", "tool_use_id": id, "content": content})
}

/// user → assistant(call t1) → user(result t1) → assistant(text).
fn good() -> Vec<Value> {
    vec![
        rec("user", "u1", None, "", json!("hello")),
        rec("assistant", "a1", Some("u1"), "m1", json!([call("t1")])),
        rec(
            "user",
            "u2",
            Some("a1"),
            "",
            json!([result("t1", json!("ok"))]),
        ),
        rec(
            "assistant",
            "a2",
            Some("u2"),
            "m2",
            json!([{"type": "text", "text": "done"}]),
        ),
    ]
}

fn import(text: &str, format: TranscriptFormat, options: &ImportOptions) -> ImportedSession {
    import_str(text, Path::new("t.jsonl"), format, options).unwrap()
}

fn strict_error(text: &str, format: TranscriptFormat) -> (usize, usize, String) {
    match import_str(text, Path::new("t.jsonl"), format, &STRICT) {
        Err(ctxlab::error::LabError::Input {
            line,
            column,
            message,
            ..
        }) => (line, column, message),
        other => panic!("expected an input error, got {other:?}"),
    }
}

// --- 1. trajectory arrays ---------------------------------------------------

fn trajectories() -> Value {
    let traj = |n: usize| {
        let mut m = vec![
            json!({"role": "system", "content": "policy"}),
            json!({"role": "user", "content": "help"}),
        ];
        for k in 0..n {
            let id = format!("call_{n}_{k}");
            m.push(json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": id, "type": "function", "function": {"name": "lookup", "arguments": "{\"k\": 1}"}}]}));
            m.push(
                json!({"role": "tool", "tool_call_id": id, "name": "lookup", "content": "found"}),
            );
        }
        m.push(json!({"role": "assistant", "content": "done"}));
        Value::Array(m)
    };
    json!([
        {"task_id": 7, "reward": 1.0, "info": {}, "traj": traj(1), "trial": 0},
        {"task_id": "t-8", "reward": 0.0, "info": {}, "traj": traj(2), "trial": 1},
    ])
}

#[test]
fn a_trajectory_array_is_one_session_per_trajectory() {
    let text = serde_json::to_string_pretty(&trajectories()).unwrap();
    let sessions = import_reader_sessions(
        text.as_bytes(),
        Path::new("tau.json"),
        TranscriptFormat::Trajectories,
        &LENIENT,
    )
    .unwrap();
    assert_eq!(sessions.len(), 2);
    assert_eq!(sessions[0].label, "tau.json#0 task 7 trial 0");
    assert_eq!(sessions[1].label, "tau.json#1 task t-8 trial 1");
    // user, (call, result) × n, final text
    assert_eq!(sessions[0].main.len(), 4);
    assert_eq!(sessions[1].main.len(), 6);
    assert_eq!(sessions[1].system.len(), 1);
    for s in &sessions {
        assert!(s.diagnostics.is_empty(), "{:?}", s.diagnostics);
        assert!(unpaired_ids(&s.main).is_empty());
    }
    // The format is sniffed from the content.
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "tau.json", &text);
    assert_eq!(import_file_sessions(&p, &LENIENT).unwrap().len(), 2);
    // A single-session call refuses it by name rather than picking one.
    let e = import_file(&p, &LENIENT).unwrap_err().to_string();
    assert!(e.contains("2 sessions"), "{e}");
}

#[test]
fn trajectories_replay_each_with_an_aggregate_row() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "tau.json",
        &serde_json::to_string(&trajectories()).unwrap(),
    );
    let run = run_files(
        &[p],
        &["hardened"],
        &ReplayOptions::default(),
        &ImportOptions::default(),
    )
    .unwrap();
    let sources: Vec<&str> = run.reports.iter().map(|r| r.source.as_str()).collect();
    assert_eq!(
        sources,
        [
            "tau.json#0 task 7 trial 0",
            "tau.json#1 task t-8 trial 1",
            "tau.json (all 2)"
        ]
    );
    let all = &run.reports[2];
    assert_eq!(
        all.model_calls,
        run.reports[0].model_calls + run.reports[1].model_calls
    );
    assert_eq!(all.tool_results, 3);
}

#[test]
fn an_array_of_neither_messages_nor_trajectories_is_refused() {
    let text = r#"[{"task_id": 1, "reward": 0}, {"task_id": 2}]"#;
    for fmt in [
        TranscriptFormat::OpenAi,
        TranscriptFormat::Anthropic,
        TranscriptFormat::Trajectories,
    ] {
        let e = import_reader_sessions(text.as_bytes(), Path::new("x.json"), fmt, &LENIENT)
            .unwrap_err();
        assert_eq!(e.exit_code(), 3, "{fmt:?}");
        let e = e.to_string();
        assert!(e.contains("x.json:1:2"), "{fmt:?}: {e}");
        assert!(
            e.contains("none of the 2") || e.contains("no element"),
            "{e}"
        );
    }
}

// --- 2. wrong-typed chain fields --------------------------------------------

#[test]
fn a_wrong_typed_parent_is_named_and_does_not_cut_the_conversation() {
    let mut recs = good();
    recs[2]["parentUuid"] = json!(["a1"]);
    let text = jsonl(&recs);
    let s = import(&text, TranscriptFormat::ClaudeJsonl, &LENIENT);
    assert_eq!(s.main.len(), 4, "chained to the previous record");
    let d = s.diagnostics_of(DiagnosticKind::InvalidRecord);
    assert_eq!(d.len(), 1);
    assert_eq!((d[0].line, d[0].column), (3, 1));
    assert!(d[0].message.contains("`parentUuid` is an array"), "{d:?}");
    let (line, _, msg) = strict_error(&text, TranscriptFormat::ClaudeJsonl);
    assert_eq!(line, 3);
    assert!(msg.starts_with("invalid_record"), "{msg}");
}

#[test]
fn a_wrong_typed_sidechain_flag_is_named() {
    let mut recs = good();
    recs[3]["isSidechain"] = json!("yes");
    recs[1]["uuid"] = json!(12);
    let s = import(&jsonl(&recs), TranscriptFormat::ClaudeJsonl, &LENIENT);
    let lines: Vec<usize> = s
        .diagnostics_of(DiagnosticKind::InvalidRecord)
        .iter()
        .map(|d| d.line)
        .collect();
    assert!(lines.contains(&4) && lines.contains(&2), "{lines:?}");
    // The uuid of line 2 is lost, so line 3's parent is missing: the start
    // of the conversation is cut off, which is damage, not information.
    assert_eq!(s.diagnostics_of(DiagnosticKind::DetachedStart).len(), 1);
    assert!(DiagnosticKind::DetachedStart.is_damage());
}

#[test]
fn a_missing_parent_that_detaches_the_start_is_damage() {
    let mut recs = good();
    recs[2]["parentUuid"] = json!("nowhere");
    let text = jsonl(&recs);
    let s = import(&text, TranscriptFormat::ClaudeJsonl, &LENIENT);
    // Only the last answer is reachable (its orphaned result is removed).
    assert_eq!(s.main.len(), 1);
    let d = s.diagnostics_of(DiagnosticKind::DetachedStart);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].line, 1);
    // An earlier, complete conversation before a fresh root stays informational.
    let mut two = vec![
        rec("user", "o1", None, "", json!("earlier")),
        rec("assistant", "o2", Some("o1"), "om", json!("reply")),
    ];
    two.extend(good());
    let s = import(&jsonl(&two), TranscriptFormat::ClaudeJsonl, &STRICT);
    assert_eq!(s.diagnostics_of(DiagnosticKind::DetachedChain).len(), 1);
    assert!(s.diagnostics_of(DiagnosticKind::DetachedStart).is_empty());
}

// --- 3. a sub-agent log on its own --------------------------------------------

#[test]
fn a_sidechain_only_log_replays_its_sidechain_and_says_so() {
    let recs: Vec<Value> = good()
        .into_iter()
        .map(|mut r| {
            r["isSidechain"] = json!(true);
            r
        })
        .collect();
    let s = import(&jsonl(&recs), TranscriptFormat::ClaudeJsonl, &STRICT);
    assert_eq!(s.main.len(), 4);
    assert_eq!(s.main_from_sidechain, Some(0));
    assert_eq!(s.sidechains.len(), 1);
    assert_eq!(s.diagnostics_of(DiagnosticKind::SidechainOnly).len(), 1);
    let r = ctxlab::replay::profiles::replay(&s, "hardened", 1.0).unwrap();
    assert_eq!(r.model_calls, 2);
    let table = ctxlab::replay::profiles::render_table(&[r]);
    assert!(table.contains("sidechain 1 replayed"), "{table}");
}

// --- 4. the size estimate -------------------------------------------------------

#[test]
fn the_sent_size_counts_what_the_lab_model_leaves_out() {
    let data = "iVBORw0KGgo".repeat(500);
    let image = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}});
    let thinking = json!({"type": "thinking", "thinking": "hm", "signature": "sig".repeat(100)});
    let contents = [
        json!("look"),
        json!([thinking, call("t1")]),
        json!([{"type": "tool_result", "tool_use_id": "t1", "is_error": true,
                "content": [{"type": "text", "text": "shot"}, image]}]),
        json!([{"type": "text", "text": "done"}]),
    ];
    let mut recs = good();
    for (r, c) in recs.iter_mut().zip(&contents) {
        r["message"]["content"] = c.clone();
    }
    let s = import(&jsonl(&recs), TranscriptFormat::ClaudeJsonl, &STRICT);
    let recorded: Vec<Value> = contents
        .iter()
        .zip(["user", "assistant", "user", "assistant"])
        .map(|(c, role)| json!({"role": role, "content": c}))
        .collect();
    let course = ctxlab::pyjson::dumps_len(&recorded);
    let summary = s.summary();
    assert_eq!(summary.main_sent_chars, course);
    assert!(
        summary.main_chars + data.len() <= course,
        "the lab model drops the image data"
    );
    let r = ctxlab::replay::profiles::replay(&s, "hardened", 1.0).unwrap();
    assert_eq!(r.sent_final_chars, course);
    assert_eq!(r.raw_final_chars, summary.main_chars);
}

#[test]
fn merged_records_are_sized_as_the_one_message_the_api_saw() {
    // One API message written as two records (one per block), answered by
    // two result records that merge into one user message.
    let recs = vec![
        rec("user", "u1", None, "", json!("go")),
        rec("assistant", "a1", Some("u1"), "m1", json!([call("t1")])),
        rec("assistant", "a2", Some("a1"), "m1", json!([call("t2")])),
        rec(
            "user",
            "u2",
            Some("a2"),
            "",
            json!([result("t1", json!("one"))]),
        ),
        rec(
            "user",
            "u3",
            Some("u2"),
            "",
            json!([result("t2", json!([{"type": "text", "text": "two"}]))]),
        ),
        rec("assistant", "a3", Some("u3"), "m2", json!("end")),
    ];
    let s = import(&jsonl(&recs), TranscriptFormat::ClaudeJsonl, &STRICT);
    assert_eq!(s.main.len(), 4);
    let as_sent = json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [call("t1"), call("t2")]},
        {"role": "user", "content": [result("t1", json!("one")),
                                      result("t2", json!([{"type": "text", "text": "two"}]))]},
        {"role": "assistant", "content": "end"},
    ]);
    assert_eq!(
        s.summary().main_sent_chars,
        ctxlab::pyjson::dumps_len(&as_sent)
    );
}

#[test]
fn openai_messages_are_sized_as_recorded() {
    let msgs = json!([
        {"role": "user", "content": "fix it"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "x", "arguments": "{}"}},
            {"id": "c2", "type": "function", "function": {"name": "y", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "a"},
        {"role": "tool", "tool_call_id": "c2", "content": "b"},
        {"role": "assistant", "content": "ok"},
    ]);
    let s = import(&msgs.to_string(), TranscriptFormat::OpenAi, &STRICT);
    assert_eq!(s.main.len(), 4);
    assert_eq!(
        s.summary().main_sent_chars,
        ctxlab::pyjson::dumps_len(&msgs)
    );
}

// --- 5. one-line files ---------------------------------------------------------

#[test]
fn a_one_line_file_names_each_element_by_its_column() {
    let mut recs = good();
    recs.insert(2, json!({"type": "mystery", "uuid": "z"}));
    let text = serde_json::to_string(&recs).unwrap();
    let s = import(&text, TranscriptFormat::ChatJson, &LENIENT);
    let d = s.diagnostics_of(DiagnosticKind::UnknownRecordType);
    let col = text.find(r#"{"type":"mystery""#).unwrap() + 1;
    assert_eq!((d[0].line, d[0].column), (1, col));
    let msgs = json!([{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}]);
    let text = msgs.to_string();
    let s = import(&text, TranscriptFormat::OpenAi, &LENIENT);
    let d = s.diagnostics_of(DiagnosticKind::UnknownRole);
    assert_eq!(d[0].column, text.find(r#"{"content":"b""#).unwrap() + 1);
}

// --- 7. floods --------------------------------------------------------------------

#[test]
fn repeated_diagnostics_keep_a_few_samples_and_a_count() {
    let mut recs = good();
    for k in 0..40 {
        recs.push(json!({"type": "progress", "uuid": "u1", "n": k}));
    }
    let s = import(&jsonl(&recs), TranscriptFormat::ClaudeJsonl, &LENIENT);
    assert_eq!(
        s.diagnostics_of(DiagnosticKind::DuplicateUuid).len(),
        SAMPLES_PER_KIND
    );
    assert_eq!(s.suppressed["duplicate_uuid"], 40 - SAMPLES_PER_KIND);
    assert_eq!(s.summary().diagnostics["duplicate_uuid"], 40);
    let lines: Vec<String> = s
        .diagnostic_lines()
        .into_iter()
        .filter(|l| l.contains("duplicate_uuid"))
        .collect();
    assert_eq!(lines.len(), SAMPLES_PER_KIND + 1);
    assert!(lines.last().unwrap().contains("35 more"), "{lines:?}");
}

// --- 8. one bad file does not hide the good ones -----------------------------------

#[test]
fn a_bad_file_among_good_ones_fails_after_the_good_results() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "good.jsonl", &jsonl(&good()));
    let bad = dir.path().join("binary.jsonl");
    std::fs::write(&bad, [0u8, 159, 146, 150, b'\n']).unwrap();
    let empty = write(dir.path(), "empty.json", "[]");
    let (g, b, e) = (
        good.to_str().unwrap(),
        bad.to_str().unwrap(),
        empty.to_str().unwrap(),
    );
    for cmd in [
        vec!["import", b, g, e],
        vec!["replay", b, g, e, "--profile", "hardened"],
    ] {
        let (code, out, err) = lab(&cmd);
        assert_eq!(code, 3, "{cmd:?}: {err}");
        assert!(out.contains("good.jsonl"), "{cmd:?}: {out}");
        assert!(err.contains("binary.jsonl:1:"), "{cmd:?}: {err}");
        assert!(err.contains("no messages in empty.json"), "{cmd:?}: {err}");
    }
    let run = run_files(
        &[bad, good],
        &["hardened"],
        &ReplayOptions::default(),
        &LENIENT,
    )
    .unwrap();
    assert_eq!((run.reports.len(), run.errors.len()), (1, 1));
}

#[test]
fn lab_run_reports_every_scenario_file_before_failing() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(dir.path(), "bad.json", "{");
    let scenarios: Vec<PathBuf> = std::fs::read_dir("scenarios")
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    let Some(good) = scenarios.iter().min() else {
        println!("skipped: no scenario files in scenarios/");
        return;
    };
    let (code, out, err) = lab(&["run", bad.to_str().unwrap(), good.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("bad.json"), "{err}");
    // The later file still ran: its report is printed (or, when this
    // machine's TMPDIR is too long for its path length, its own error).
    assert!(
        !out.is_empty() || err.matches("error:").count() == 2,
        "{out}\n{err}"
    );
}

// --- 9. a damaged result record does not cost its neighbour -------------------------

#[test]
fn a_damaged_result_record_costs_only_its_own_call() {
    let recs = vec![
        rec("user", "u1", None, "", json!("go")),
        rec(
            "assistant",
            "a1",
            Some("u1"),
            "m1",
            json!([call("t1"), call("t2")]),
        ),
        rec("user", "u2", Some("a1"), "", json!(42)),
        rec(
            "user",
            "u3",
            Some("u2"),
            "",
            json!([result("t2", json!("intact"))]),
        ),
        rec("assistant", "a2", Some("u3"), "m2", json!("end")),
    ];
    let s = import(&jsonl(&recs), TranscriptFormat::ClaudeJsonl, &LENIENT);
    let bad = s.diagnostics_of(DiagnosticKind::InvalidRecord);
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0].line, 3);
    assert!(s
        .diagnostics_of(DiagnosticKind::OrphanToolResult)
        .is_empty());
    let dangling = s.diagnostics_of(DiagnosticKind::DanglingToolUse);
    assert_eq!(dangling.len(), 1, "only the damaged call");
    assert!(dangling[0].message.contains("`t1`"));
    let results: Vec<(&str, &str)> = s.main[2]
        .blocks()
        .iter()
        .filter_map(|b| match b {
            Block::ToolResult {
                tool_use_id,
                content,
            } => Some((tool_use_id.as_str(), content.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(results, [("t1", MISSING_RESULT), ("t2", "intact")]);
}

// --- 10. budgets on equal terms --------------------------------------------------------

fn compacted_log() -> Vec<Value> {
    let big = "y".repeat(20_000);
    vec![
        rec("user", "u1", None, "", json!(big)),
        rec("assistant", "a1", Some("u1"), "m1", json!("ok")),
        json!({"type": "system", "subtype": "compact_boundary", "uuid": "b1", "parentUuid": null,
               "logicalParentUuid": "a1", "compactMetadata": {"trigger": "auto", "preTokens": 156953}}),
        rec(
            "user",
            "c1",
            Some("b1"),
            "",
            json!("This session is being continued from a previous conversation."),
        ),
        rec("assistant", "a2", Some("c1"), "m2", json!("go on")),
    ]
}

#[test]
fn compaction_metadata_is_kept_and_shown() {
    let s = import(
        &jsonl(&compacted_log()),
        TranscriptFormat::ClaudeJsonl,
        &STRICT,
    );
    assert_eq!(s.real_compactions, vec![2]);
    let m = &s.real_compaction_meta[0];
    assert_eq!(
        (m.trigger.as_deref(), m.pre_tokens),
        (Some("auto"), Some(156_953))
    );
    assert_eq!(m.describe(), "2 (auto, 156953 tok)");
    assert!(!s.starts_with_summary);
    let r = ctxlab::replay::profiles::replay(&s, "hardened", 1.0).unwrap();
    // Markdown carries every column (the terminal table's defaults are narrow).
    assert!(ctxlab::replay::profiles::render_markdown(&[r]).contains("2 (auto, 156953 tok)"));
}

#[test]
fn a_file_that_starts_with_a_summary_says_so() {
    let recs: Vec<Value> = compacted_log().split_off(2);
    let s = import(&jsonl(&recs), TranscriptFormat::ClaudeJsonl, &STRICT);
    assert!(s.starts_with_summary);
    assert!(
        s.real_compactions.is_empty(),
        "its compaction is before the file"
    );
    let r = ctxlab::replay::profiles::replay(&s, "hardened", 1.0).unwrap();
    assert!(r.starts_with_summary);
    assert!(ctxlab::replay::profiles::render_table(&[r]).contains("starts with a summary"));
}

#[test]
fn scale_to_real_replays_at_the_real_budget() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "c.jsonl", &jsonl(&compacted_log()));
    let s = import_file(&p, &LENIENT).unwrap();
    let want = ctxlab::replay::profiles::scale_to_real(&s, "course-f9e8b28")
        .unwrap()
        .unwrap();
    let options = ReplayOptions {
        scale_to_real: true,
        ..ReplayOptions::default()
    };
    let run = run_files(
        std::slice::from_ref(&p),
        &["course-f9e8b28"],
        &options,
        &LENIENT,
    )
    .unwrap();
    let r = &run.reports[0];
    assert!(r.scaled_to_real);
    assert_eq!(r.scale, want);
    // Without a real compaction the given scale stays.
    let g = write(dir.path(), "g.jsonl", &jsonl(&good()));
    let run = run_files(&[g], &["course-f9e8b28"], &options, &LENIENT).unwrap();
    assert!(!run.reports[0].scaled_to_real);
    assert_eq!(run.reports[0].scale, 1.0);
    let (code, out, err) = lab(&[
        "replay",
        p.to_str().unwrap(),
        "--profile",
        "course-f9e8b28",
        "--scale-to-real",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("scale = real budget"), "{out}");
}

// --- 11. lying extensions and --format-in -------------------------------------------------

#[test]
fn the_content_decides_the_format_and_format_in_forces_it() {
    let dir = tempfile::tempdir().unwrap();
    let lines = jsonl(&good());
    let as_json = write(dir.path(), "log.json", &lines);
    let s = import_file(&as_json, &LENIENT).unwrap();
    assert_eq!((s.format, s.main.len()), (TranscriptFormat::ClaudeJsonl, 4));
    let array = write(
        dir.path(),
        "chat.jsonl",
        &serde_json::to_string_pretty(&good()).unwrap(),
    );
    let s = import_file(&array, &LENIENT).unwrap();
    assert_eq!((s.format, s.main.len()), (TranscriptFormat::ChatJson, 4));
    // Forcing the wrong format is obeyed, and fails with the fix named.
    let forced = ImportOptions {
        strict: false,
        format: Some(TranscriptFormat::ChatJson),
    };
    let e = import_file(&as_json, &forced).unwrap_err().to_string();
    assert!(e.contains("--format-in"), "{e}");
    let (code, out, _) = lab(&[
        "import",
        as_json.to_str().unwrap(),
        "--format-in",
        "claude_jsonl",
    ]);
    assert_eq!(code, 0);
    assert!(out.contains("claude_jsonl"), "{out}");
    let (code, _, err) = lab(&["import", as_json.to_str().unwrap(), "--format-in", "yaml"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("trajectories"), "{err}");
}

#[test]
fn an_empty_trajectory_is_skipped_by_name_and_the_others_replay() {
    let mut t = trajectories();
    t.as_array_mut()
        .unwrap()
        .push(json!({"task_id": 9, "traj": []}));
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "tau.json", &t.to_string());
    let run = run_files(&[p], &["hardened"], &ReplayOptions::default(), &LENIENT).unwrap();
    assert_eq!(run.reports.len(), 3, "two trajectories and the aggregate");
    assert!(
        run.diagnostics
            .iter()
            .any(|d| d.contains("skipped") && d.contains("no messages in tau.json#2 task 9")),
        "{:?}",
        run.diagnostics
    );
    let only_empty = write(dir.path(), "none.json", r#"[{"task_id": 1, "traj": []}]"#);
    let run = run_files(
        &[only_empty],
        &["hardened"],
        &ReplayOptions::default(),
        &LENIENT,
    )
    .unwrap();
    assert_eq!(run.errors.len(), 1);
    assert!(run.errors[0].to_string().contains("no messages"));
}
