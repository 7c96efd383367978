//! ctxlab against the course's own code, byte for byte.
//!
//! `tests/golden/course/generate.py` ran the unmodified `code.py` of three
//! course revisions (with a deterministic stub model) on generated conversations
//! near every threshold and recorded, per conversation: the size estimate of
//! every request, the history after every action, whether the session ended on
//! an exception, every result file and every archive. This test runs the same
//! scripts through ctxlab's matching profile with the same result-path length
//! and the same stub (`Summarizer::Stub`), and compares everything: texts as
//! `[chars, fnv1a64]` of their exact bytes with paths redacted.

use std::path::{Path, PathBuf};

use ctxlab::compact::config::profile;
use ctxlab::compact::session::{Action, Script, Session};
use ctxlab::compact::{Compactor, LabRoot, Summarizer};
use serde_json::Value;

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/course/fixtures")
}

/// FNV-1a 64 over the UTF-8 bytes, as the generator hashes them.
fn fnv(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

fn digest(text: &str) -> Value {
    serde_json::json!([text.chars().count(), fnv(text)])
}

/// `{"repeat": s, "times": n}` stands for `s` repeated `n` times (keeps fixtures small).
fn expand(v: &Value) -> Value {
    match v {
        Value::Object(m) if m.len() == 2 && m.contains_key("repeat") && m.contains_key("times") => {
            let s = m["repeat"].as_str().unwrap_or_default();
            let n = m["times"].as_u64().unwrap_or(0) as usize;
            Value::String(s.repeat(n))
        }
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), expand(v))).collect()),
        Value::Array(a) => Value::Array(a.iter().map(expand).collect()),
        other => other.clone(),
    }
}

fn files(root: &LabRoot, dir: &Path) -> Value {
    // The run's own storage (in memory by default, or disk with --fs disk).
    let fs = root.fs();
    let mut names: Vec<PathBuf> = fs
        .list(dir)
        .map(|v| v.into_iter().map(|n| dir.join(n)).collect())
        .unwrap_or_default();
    names.sort();
    let rows: Vec<Value> = names
        .iter()
        .map(|p| {
            let text = fs.read_to_string(p).expect("lab files are UTF-8");
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let d = digest(&root.redact(&text));
            serde_json::json!([name, d[0], d[1]])
        })
        .collect();
    Value::Array(rows)
}

/// What ctxlab records for one fixture case, in the fixture's shape; `None`
/// when this machine's temp dir is too long for the case's path length.
fn run_case(profile_name: &str, case: &Value) -> Option<Value> {
    let script: Script = serde_json::from_value(expand(&case["script"])).expect("script");
    let script = script.normalised().expect("normalised");
    let ref_id = script.reference_id_chars();
    let path_len = case["results_dir_chars"].as_u64().unwrap() as usize + 1 + ref_id + 4;
    let root = LabRoot::new(Some(path_len), ref_id).ok()?;
    let config = profile(profile_name).unwrap().config;
    let mut compactor = Compactor::new(config, root).unwrap();
    compactor.summarizer = Summarizer::Stub {
        fail_from: case["fail_from"].as_u64().map(|n| n as usize),
    };
    let mut session = Session::new(compactor);
    let mut histories = Vec::new();
    for action in &script.0 {
        if session.compactor.halted {
            break;
        }
        session.step(action).unwrap();
        if *action != Action::PromptTooLong {
            let text = session
                .compactor
                .root
                .redact(&ctxlab::pyjson::dumps(&session.messages));
            let d = digest(&text);
            histories.push(serde_json::json!([session.messages.len(), d[0], d[1]]));
        }
    }
    let root = &session.compactor.root;
    Some(serde_json::json!({
        "requests": session.requests.iter().map(|r| r.chars).collect::<Vec<_>>(),
        "histories": histories,
        "ended": session.compactor.halted,
        "results": files(root, root.results()),
        "archives": files(root, root.transcripts()),
    }))
}

/// The first field where ctxlab and the course differ, for the failure message.
fn first_difference(want: &Value, got: &Value) -> Option<String> {
    for key in ["requests", "histories", "ended", "results", "archives"] {
        if want[key] != got[key] {
            let (w, g) = (&want[key], &got[key]);
            let at = match (w.as_array(), g.as_array()) {
                (Some(a), Some(b)) => (0..a.len().max(b.len()))
                    .find(|&i| a.get(i) != b.get(i))
                    .map(|i| format!("[{i}] course {:?} ctxlab {:?}", a.get(i), b.get(i))),
                _ => Some(format!("course {w} ctxlab {g}")),
            };
            return Some(format!("{key}{}", at.unwrap_or_default()));
        }
    }
    None
}

/// Run every case of one profile's fixture file; panics listing the differences.
fn agree(profile_name: &str) {
    let path = fixtures_dir().join(format!("{profile_name}.json"));
    let text = std::fs::read_to_string(&path).expect("fixture file");
    let cases: Vec<Value> = serde_json::from_str(&text).expect("fixture JSON");
    assert!(!cases.is_empty(), "{} has no cases", path.display());
    let (mut checked, mut skipped) = (0, 0);
    let mut failures = Vec::new();
    for case in &cases {
        let Some(got) = run_case(profile_name, case) else {
            skipped += 1;
            continue;
        };
        checked += 1;
        if let Some(diff) = first_difference(case, &got) {
            failures.push(format!(
                "{} (results dir {}): {diff}",
                case["name"].as_str().unwrap_or("?"),
                case["results_dir_chars"]
            ));
        }
    }
    if skipped > 0 {
        println!("skipped {skipped} {profile_name} cases: TMPDIR is too long for their result-path length");
    }
    assert!(checked > 0, "no {profile_name} case could run here");
    assert!(
        failures.is_empty(),
        "{} of {checked} {profile_name} conversations differ from the course:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn course_f9e8b28_agrees_byte_for_byte() {
    agree("course-f9e8b28");
}

#[test]
fn course_main_agrees_byte_for_byte() {
    agree("course-main");
}

#[test]
fn course_old_agrees_byte_for_byte() {
    agree("course-old");
}

#[test]
fn the_comparison_would_notice_a_difference() {
    // A fixture with one request estimate off by one must be reported.
    let path = fixtures_dir().join("course-f9e8b28.json");
    let cases: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let case = cases
        .iter()
        .find(|c| c["results_dir_chars"] == 148)
        .expect("a case at the long path");
    let Some(got) = run_case("course-f9e8b28", case) else {
        println!("skipped: TMPDIR is too long for a 160-char result path");
        return;
    };
    assert_eq!(first_difference(case, &got), None);
    let mut bent = case.clone();
    bent["requests"][0] = Value::from(bent["requests"][0].as_u64().unwrap() + 1);
    let diff = first_difference(&bent, &got).expect("a difference");
    assert!(diff.starts_with("requests[0]"), "{diff}");
}
