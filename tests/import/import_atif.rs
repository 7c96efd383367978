//! ATIF (Harbor RFC 0001, ATIF-v1.8 as harbor 0.25.0's models define it):
//! a file Harbor's own code wrote imports with the counts its steps hold;
//! another major version is refused at its `schema_version`; every export
//! validates against the checked-in schema and the models' own rules; every
//! shared session exports and re-imports to the same messages.

use std::path::{Path, PathBuf};

use ctxlab::import::{atif, import_file_sessions, import_str, ImportOptions, TranscriptFormat};
use serde_json::Value;

use crate::common::{lab, lab_ok, transcripts};

const LENIENT: ImportOptions = ImportOptions {
    strict: false,
    format: None,
};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/import/fixtures/atif/harbor_0.25.0.json")
}

fn schema() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("lab/schemas/atif-v1.8.schema.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Every way `t` breaks the schema or the rules harbor's validators add
/// (step ids from 1, agent-only fields, results naming a call of their step).
fn violations(schema: &Value, t: &Value) -> Vec<String> {
    let validator = jsonschema::validator_for(schema).expect("a valid schema");
    let mut out: Vec<String> = validator
        .iter_errors(t)
        .take(5)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    for (i, step) in t["steps"].as_array().unwrap().iter().enumerate() {
        if step["step_id"] != i + 1 {
            out.push(format!("step {i}: step_id {}", step["step_id"]));
        }
        if step["source"] != "agent" {
            for k in ["model_name", "reasoning_content", "tool_calls", "metrics"] {
                if step.get(k).is_some() {
                    out.push(format!("step {i}: {k} on a {} step", step["source"]));
                }
            }
        }
        let calls: Vec<&Value> = step["tool_calls"]
            .as_array()
            .map(|c| c.iter().map(|c| &c["tool_call_id"]).collect())
            .unwrap_or_default();
        for r in step["observation"]["results"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if r.get("source_call_id").is_some() && !calls.contains(&&r["source_call_id"]) {
                out.push(format!(
                    "step {i}: result for {} of no call",
                    r["source_call_id"]
                ));
            }
        }
    }
    out
}

#[test]
fn a_trajectory_harbor_wrote_imports_with_the_counts_its_steps_hold() {
    let path = fixture();
    let text = std::fs::read_to_string(&path).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert!(violations(&schema(), &doc).is_empty());
    // The counts, from the steps themselves.
    let steps = doc["steps"].as_array().unwrap();
    let of = |s: &str| steps.iter().filter(|x| x["source"] == s).count();
    let observed = steps
        .iter()
        .filter(|x| x.get("observation").is_some())
        .count();
    let calls: usize = steps
        .iter()
        .map(|x| x["tool_calls"].as_array().map_or(0, Vec::len))
        .sum();
    let results: usize = steps
        .iter()
        .map(|x| x["observation"]["results"].as_array().map_or(0, Vec::len))
        .sum();
    let s = ctxlab::import::import_file(&path, &LENIENT).unwrap();
    assert_eq!(s.format, TranscriptFormat::Atif);
    assert_eq!(s.system.len(), of("system"));
    assert_eq!(s.main.len(), of("user") + of("agent") + observed);
    let summary = s.summary();
    assert_eq!(summary.main_tool_uses, calls);
    assert_eq!(summary.main_tool_results, results);
    assert_eq!(summary.main_thinking_blocks, 1);
    assert!(s.diagnostics.is_empty(), "{:?}", s.diagnostics);
    // The same file under another name is still ATIF.
    let dir = tempfile::tempdir().unwrap();
    let renamed = crate::common::write(dir.path(), "trajectory.jsonl", &text);
    let again = ctxlab::import::import_file(&renamed, &LENIENT).unwrap();
    assert_eq!(again.format, TranscriptFormat::Atif);
    assert_eq!(again.main, s.main);
    // And it replays.
    let out = lab_ok(&[
        "replay",
        path.to_str().unwrap(),
        "--policy",
        "none,claude-code",
    ]);
    assert!(out.contains("claude-code"), "{out}");
}

#[test]
fn harbors_own_code_writes_the_checked_in_fixture() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/fixtures/atif_from_harbor.sh");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let run = std::process::Command::new("bash")
        .arg(&script)
        .arg(&out)
        .env("TMPDIR", std::env::temp_dir())
        .output()
        .unwrap();
    if !run.status.success() {
        eprintln!(
            "SKIP: {} needs Python >= 3.12 and PyPI (harbor 0.25.0): {}",
            script.display(),
            String::from_utf8_lossy(&run.stderr)
                .lines()
                .last()
                .unwrap_or("")
        );
        return;
    }
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        std::fs::read_to_string(fixture()).unwrap(),
        "harbor 0.25.0 writes the checked-in fixture"
    );
}

#[test]
fn another_major_version_is_refused_at_its_schema_version() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture())
        .unwrap()
        .replace("\"ATIF-v1.8\"", "\"ATIF-v2.0\"");
    let path = crate::common::write(dir.path(), "v2.json", &text);
    let line = text.lines().position(|l| l.contains("ATIF-v2.0")).unwrap() + 1;
    let column = text
        .lines()
        .nth(line - 1)
        .unwrap()
        .find("\"ATIF-v2.0\"")
        .unwrap()
        + 1;
    let (code, _, err) = lab(&["import", path.to_str().unwrap()]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains(&format!("v2.json:{line}:{column}")), "{err}");
    assert!(
        err.contains("ATIF-v2.0") && err.contains("ATIF-v1"),
        "{err}"
    );
    let (code, _, err) = lab(&["replay", path.to_str().unwrap(), "--policy", "none"]);
    assert_eq!(code, 3, "{err}");
    // A minor version the lab has not seen is read.
    let minor = text.replace("\"ATIF-v2.0\"", "\"ATIF-v1.9\"");
    let path = crate::common::write(dir.path(), "v19.json", &minor);
    let s = ctxlab::import::import_file(&path, &LENIENT).unwrap();
    assert_eq!(s.format, TranscriptFormat::Atif);
}

/// `session` exported and read back as ATIF: its main messages.
fn round_trip(session: &ctxlab::import::ImportedSession) -> (Value, Vec<ctxlab::message::Message>) {
    let meta = atif::Meta {
        session_id: &session.label,
        source_format: session.format.name(),
        system: &session.system,
        agent: session.format.name(),
    };
    let t = atif::to_trajectory(&meta, &session.main, &|_| None);
    let text = serde_json::to_string(&t).unwrap();
    let back = import_str(&text, Path::new("t.json"), TranscriptFormat::Atif, &LENIENT).unwrap();
    assert!(
        back.diagnostics.is_empty(),
        "{}: {:?}",
        session.label,
        back.diagnostics
    );
    assert_eq!(back.system, session.system, "{}", session.label);
    (t, back.main)
}

#[test]
fn every_shared_session_exports_to_atif_and_reimports_to_the_same_messages() {
    let Some(dir) = transcripts() else {
        return;
    };
    let schema = schema();
    let mut files = Vec::new();
    for sub in ["claude_code", "openai_format", "aider", "pi"] {
        for e in std::fs::read_dir(dir.join(sub)).unwrap() {
            files.push(e.unwrap().path());
        }
    }
    files.sort();
    let (mut sessions, mut messages) = (0, 0);
    for file in &files {
        for session in import_file_sessions(file, &LENIENT).unwrap() {
            let (t, back) = round_trip(&session);
            let bad = violations(&schema, &t);
            assert!(bad.is_empty(), "{}: {bad:#?}", session.label);
            assert_eq!(back.len(), session.main.len(), "{}", session.label);
            for (i, (a, b)) in back.iter().zip(&session.main).enumerate() {
                assert_eq!(a, b, "{} message {i}", session.label);
            }
            sessions += 1;
            messages += back.len();
        }
    }
    eprintln!("{sessions} sessions, {messages} messages round-tripped");
    assert!(sessions >= 12, "{sessions}");
}

#[test]
fn lab_import_export_to_atif_validates_and_carries_recorded_usage() {
    let schema = schema();
    let dir = tempfile::tempdir().unwrap();
    // A generated session: one trajectory to the file.
    let session = crate::common::write(
        dir.path(),
        "s.json",
        &serde_json::to_string(&crate::common::tool_session(6, 2)).unwrap(),
    );
    let out = dir.path().join("one.json");
    let printed = lab_ok(&[
        "import",
        session.to_str().unwrap(),
        "--export",
        out.to_str().unwrap(),
        "--to",
        "atif",
    ]);
    assert!(printed.contains("ATIF-v1.8"), "{printed}");
    let t: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(violations(&schema, &t), Vec::<String>::new());
    let back = ctxlab::import::import_file(&out, &LENIENT).unwrap();
    let original = ctxlab::import::import_file(&session, &LENIENT).unwrap();
    assert_eq!(back.main, original.main);
    // A Claude Code log: its recorded usage on the agent steps, cache
    // writes in the extension field.
    let Some(shared) = transcripts() else {
        return;
    };
    let log = shared.join("claude_code/claude-code-viewer__fe5e1c67.jsonl");
    let out = dir.path().join("many");
    lab_ok(&[
        "import",
        log.to_str().unwrap(),
        "--export",
        out.to_str().unwrap(),
        "--to",
        "atif",
    ]);
    let mut written: Vec<PathBuf> = std::fs::read_dir(&out)
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_else(|_| vec![out.clone()]);
    written.sort();
    let t: Value = serde_json::from_str(&std::fs::read_to_string(&written[0]).unwrap()).unwrap();
    assert_eq!(violations(&schema, &t), Vec::<String>::new());
    let writes: u64 = t["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["metrics"]["extra"]["cache_creation_input_tokens"].as_u64())
        .sum();
    assert!(writes > 0, "no cache writes recorded on any step");
}

#[test]
fn replay_dump_to_atif_writes_each_policys_requests_as_trajectories() {
    let schema = schema();
    let dir = tempfile::tempdir().unwrap();
    let session = crate::common::write(
        dir.path(),
        "s.json",
        &serde_json::to_string(&crate::common::tool_session(6, 2)).unwrap(),
    );
    let dump = dir.path().join("dump");
    lab_ok(&[
        "replay",
        session.to_str().unwrap(),
        "--policy",
        "none,swe-agent-mask-5",
        "--dump",
        dump.to_str().unwrap(),
        "--to",
        "atif",
    ]);
    let sdir = dump.join("s.json");
    let calls = ctxlab::import::import_file(&session, &LENIENT)
        .unwrap()
        .main
        .iter()
        .filter(|m| m.role == ctxlab::message::Role::Assistant)
        .count();
    let recorded: Value =
        serde_json::from_str(&std::fs::read_to_string(sdir.join("messages.atif.json")).unwrap())
            .unwrap();
    assert_eq!(violations(&schema, &recorded), Vec::<String>::new());
    for policy in ["none", "swe-agent-mask-5"] {
        let text = std::fs::read_to_string(sdir.join(format!("{policy}.atif.jsonl"))).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        // One trajectory per model call: the session's assistant messages.
        assert_eq!(lines.len(), calls, "{policy}");
        for (call, t) in lines.iter().enumerate() {
            assert_eq!(
                violations(&schema, t),
                Vec::<String>::new(),
                "{policy} {call}"
            );
            assert_eq!(t["extra"]["ctxlab"]["call"], call);
            assert_eq!(t["agent"]["name"], policy);
        }
        // The last request holds every step the recorded session had before
        // its last reply under `none`.
        if policy == "none" {
            let last = lines.last().unwrap()["steps"].as_array().unwrap().len();
            assert!(
                last + 1 >= recorded["steps"].as_array().unwrap().len() - 1,
                "{last}"
            );
        }
    }
}

#[test]
fn a_schema_version_inside_a_step_is_not_the_trajectorys() {
    // The top-level version after the steps, and a step whose tool input
    // names a version of its own: read, and refused only by the top level.
    let doc = |top: &str| {
        format!(
            r#"{{"steps": [{{"step_id": 1, "source": "agent", "message": "",
  "tool_calls": [{{"tool_call_id": "c", "function_name": "f", "arguments": {{"schema_version": "v9"}}}}]}}],
  "agent": {{"name": "a", "version": "1"}}, "schema_version": "{top}"}}"#
        )
    };
    let s = import_str(
        &doc("ATIF-v1.2"),
        Path::new("late.json"),
        TranscriptFormat::Atif,
        &LENIENT,
    )
    .unwrap();
    assert_eq!(s.summary().main_tool_uses, 1);
    let e = import_str(
        &doc("ATIF-v3.0"),
        Path::new("late.json"),
        TranscriptFormat::Atif,
        &LENIENT,
    )
    .unwrap_err();
    assert_eq!(e.exit_code(), 3);
    assert!(e.to_string().contains("ATIF-v3.0"), "{e}");
}
