//! `lab check` as a CI gate: no data is never green (no sessions, a session
//! of no model calls, import damage), unless the check file opts in; a
//! failing check prints its table and names session, policy, call and
//! metric; every key and metric is listed with its unit.

use std::path::Path;

use crate::common::{lab, lab_ok, write};

/// A directory holding the check file `check.toml` with `body`, and `files`.
fn dir_with(body: &str, files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in files {
        write(dir.path(), name, bytes);
    }
    write(dir.path(), "check.toml", body);
    dir
}

fn check(dir: &tempfile::TempDir) -> (i32, String, String) {
    lab(&["check", dir.path().join("check.toml").to_str().unwrap()])
}

fn session_json() -> Vec<u8> {
    serde_json::to_vec(&crate::common::tool_session(8, 1)).unwrap()
}

const HOLDS: &str = "policies = [\"none\"]\nexpect = [\"invalid_requests == 0\"]\n";

#[test]
fn an_empty_file_is_damage_and_fails_unless_allowed_with_no_sessions() {
    let body = format!("sessions = [\"s.jsonl\"]\n{HOLDS}");
    let dir = dir_with(&body, &[("s.jsonl", b"")]);
    let (code, _, err) = check(&dir);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("s.jsonl"), "{err}");
    assert!(err.contains("no messages"), "{err}");
    assert!(err.contains("`allow_damage = false` failed"), "{err}");
    assert!(err.contains("`min_calls = 1` failed: no session"), "{err}");
    // Damage allowed but still no session: still red.
    let body = format!("sessions = [\"s.jsonl\"]\nallow_damage = true\n{HOLDS}");
    let dir = dir_with(&body, &[("s.jsonl", b"")]);
    let (code, _, err) = check(&dir);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("warning: skipped, not a session"), "{err}");
    assert!(err.contains("no session to check"), "{err}");
    // Both opted into: green, the damage still on stderr.
    let body = format!("sessions = [\"s.jsonl\"]\nallow_damage = true\nmin_calls = 0\n{HOLDS}");
    let dir = dir_with(&body, &[("s.jsonl", b"")]);
    let (code, out, err) = check(&dir);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("0 sessions (0 model calls), 1 import damage line"),
        "{out}"
    );
    assert!(err.contains("warning: skipped, not a session"), "{err}");
}

#[test]
fn a_truncated_log_fails_naming_the_file_line_and_damage() {
    let Some(t) = crate::common::transcripts() else {
        return;
    };
    let log = t.join("claude_code/claude-code-viewer__fe5e1c67.jsonl");
    let bytes = std::fs::read(log).unwrap();
    let cut = &bytes[..300_000];
    let body = format!("sessions = [\"cut.jsonl\"]\n{HOLDS}");
    let dir = dir_with(&body, &[("cut.jsonl", cut)]);
    let (code, out, err) = check(&dir);
    assert_eq!(code, 1, "{err}");
    // The expectation itself holds: the damage is what fails.
    assert!(out.contains("holds"), "{out}");
    assert!(!out.contains("MISS"), "{out}");
    let line = err
        .lines()
        .find(|l| l.contains(": truncated:"))
        .unwrap_or_else(|| panic!("no truncation named: {err}"));
    assert!(line.contains("cut.jsonl:153:"), "{line}");
    // The intact log is clean: no damage line, exit 0.
    let dir = dir_with(
        &format!("sessions = [\"whole.jsonl\"]\n{HOLDS}"),
        &[("whole.jsonl", &bytes)],
    );
    let (code, out, err) = check(&dir);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(", 0 import damage lines"), "{out}");
    // Opted in: a warning on stderr, exit 0.
    let body = format!("sessions = [\"cut.jsonl\"]\nallow_damage = true\n{HOLDS}");
    let dir = dir_with(&body, &[("cut.jsonl", cut)]);
    let (code, _, err) = check(&dir);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("warning: ") && err.contains(": truncated:"),
        "{err}"
    );
}

#[test]
fn a_directory_of_empty_files_is_not_a_thousand_passes() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    for i in 0..120 {
        write(&logs, &format!("{i:03}.jsonl"), "");
    }
    write(
        dir.path(),
        "check.toml",
        &format!("sessions = [\"logs\"]\n{HOLDS}"),
    );
    let (code, out, err) = check(&dir);
    assert_eq!(code, 1, "{err}");
    assert!(!out.contains("holds"), "{out}");
    assert!(err.contains("no session to check"), "{err}");
    assert!(err.contains("000.jsonl"), "{err}");
    assert!(err.contains("70 more import damage lines"), "{err}");
}

#[test]
fn an_empty_directory_has_no_session_and_fails() {
    let dir = dir_with(&format!("sessions = [\"logs\"]\n{HOLDS}"), &[]);
    std::fs::create_dir(dir.path().join("logs")).unwrap();
    let (code, _, err) = check(&dir);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("check.toml: `min_calls = 1` failed: no session"),
        "{err}"
    );
}

#[test]
fn a_session_of_no_model_calls_fails_unless_min_calls_is_0() {
    let one = serde_json::to_vec(&[ctxlab::message::Message::user_text("hello")]).unwrap();
    let body = format!("sessions = [\"q.json\", \"s.json\"]\n{HOLDS}");
    let files: &[(&str, &[u8])] = &[("q.json", &one), ("s.json", &session_json())];
    let dir = dir_with(&body, files);
    let (code, _, err) = check(&dir);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("q.json: `min_calls = 1` failed: got 0 model calls"),
        "{err}"
    );
    assert!(
        !err.contains("s.json:"),
        "the session with calls is fine: {err}"
    );
    let body = format!("sessions = [\"q.json\", \"s.json\"]\nmin_calls = 0\n{HOLDS}");
    let dir = dir_with(&body, files);
    let (code, out, err) = check(&dir);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("2 sessions (9 model calls)"), "{out}");
    // A higher floor: the 9-call session is under 10.
    let body = format!("sessions = [\"s.json\"]\nmin_calls = 10\n{HOLDS}");
    let dir = dir_with(&body, &[("s.json", &session_json())]);
    let (code, _, err) = check(&dir);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("got 9 model calls"), "{err}");
}

#[test]
fn a_failing_check_prints_its_table_and_names_session_policy_call_and_metric() {
    let body = "sessions = [\"s.json\"]\npolicies = [\"none\", \"vercel-prune-messages\"]\n\
                expect = [\"lost_forever == 0\", \"peak_chars < 1000\"]\n";
    let dir = dir_with(body, &[("s.json", &session_json())]);
    let (code, out, err) = check(&dir);
    assert_eq!(code, 1, "{err}");
    assert!(out.contains("MISS"), "the table is printed: {out}");
    assert!(out.contains("holds"), "{out}");
    let lost = err
        .lines()
        .find(|l| l.contains("under vercel-prune-messages") && l.contains("lost_forever"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(lost.contains(", call "), "a call is named: {lost}");
    assert!(lost.contains(": lost_forever: "), "{lost}");
    let peak = err
        .lines()
        .find(|l| l.contains("s.json under none, call ") && l.contains("peak_chars"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(peak.contains("(chars)"), "{peak}");
    assert!(
        !err.contains("under none, call 0: lost_forever"),
        "`none` loses nothing: {err}"
    );
}

#[test]
fn an_unknown_policy_in_the_check_file_is_named_with_its_line() {
    let body = "sessions = [\"s.json\"]\npolicies = [\"none\", \"claude-kode\"]\nexpect = [\"calls > 0\"]\n";
    let dir = dir_with(body, &[("s.json", &session_json())]);
    let (code, out, err) = check(&dir);
    assert_eq!(code, 3, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("check.toml:2:22:"), "{err}");
    assert!(err.contains("claude-kode"), "{err}");
}

#[test]
fn artifact_recall_is_a_percent_as_everywhere_else() {
    let body =
        "sessions = [\"s.json\"]\npolicies = [\"none\"]\nexpect = [\"artifact_recall == 100\"]\n";
    let dir = dir_with(body, &[("s.json", &session_json())]);
    let (code, out, err) = check(&dir);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("artifact_recall == 100 ┆ 100"), "{out}");
}

#[test]
fn the_retention_json_carries_artifact_recall_in_percent_too() {
    // One unit per metric: the replay's retention JSON as `lab check` and the tables.
    let dir = dir_with("", &[("s.json", &session_json())]);
    let file = dir.path().join("s.json");
    let out = lab_ok(&[
        "replay",
        file.to_str().unwrap(),
        "--policy",
        "none",
        "--retention",
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let scored = &v["retention"][0];
    assert_eq!(scored["artifact_recall"], 100.0, "{scored}");
    assert_eq!(scored["retention"]["artifact_recall"], 100.0);
}

#[test]
fn help_and_guide_list_every_key_and_metric_with_its_unit() {
    let help = lab_ok(&["check", "--help"]);
    let guide = crate::common::guide();
    // The chapter `docs/src/lab-check.md`, up to the next chapter.
    let section = guide
        .split("\n# lab check\n")
        .nth(1)
        .and_then(|s| s.split("\n# ").next())
        .expect("the guide has a lab check chapter");
    for m in ctxlab::ci_gate::metrics::METRICS {
        let line = format!("{:<18} {}: {}", m.name, m.unit.name(), m.meaning);
        assert!(help.contains(&line), "--help lacks {line:?}:\n{help}");
        let row = format!("| `{}` | {} | {} |", m.name, m.unit.name(), m.meaning);
        assert!(section.contains(&row), "GUIDE lacks {row:?}");
    }
    for (key, value, meaning) in ctxlab::ci_gate::metrics::KEYS {
        assert!(
            help.contains(&format!("{key:<18} {value}: {meaning}")),
            "{key}: {help}"
        );
        let row = format!("| `{key}` | {value} | {meaning} |");
        assert!(section.contains(&row), "GUIDE lacks {row:?}");
    }
}

#[test]
fn the_readme_example_holds_on_the_shared_sessions_with_the_output_shown() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    if !root.join("../shared/transcripts/claude_code").is_dir() {
        eprintln!("SKIP: ../shared/transcripts not found");
        return;
    }
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(readme.contains("lab check examples/ctxlab-check.toml"));
    let shown = readme
        .split("It holds (exit 0):\n\n```text\n")
        .nth(1)
        .and_then(|s| s.split("```").next())
        .expect("the README shows the example's output");
    let out = lab_ok(&["check", "examples/ctxlab-check.toml"]);
    assert_eq!(out, shown);
    let toml = std::fs::read_to_string(root.join("examples/ctxlab-check.toml")).unwrap();
    for line in toml.lines().filter(|l| !l.starts_with('#')) {
        assert!(readme.contains(line), "the README shows {line:?}");
    }
}
