//! A Claude Code log imported with its main conversation left in the file
//! (what `lab replay` does, so memory does not grow with the file) gives the
//! same session and the same replays as one imported whole: same messages
//! after every merge and repair, same sizes, lines, compactions and
//! diagnostics. Built on a small synthetic log with every repair in it.

use std::path::Path;

use ctxlab::import::{
    import_file, import_file_sessions_lazily, import_str, ImportOptions, ImportedSession,
    TranscriptFormat,
};
use ctxlab::message::Message;
use ctxlab::replay::profiles::{profile_names, replay_with, ReplayOptions};
use serde_json::{json, Value};

fn rec(kind: &str, uuid: &str, parent: Option<&str>, id: &str, content: Value) -> Value {
    json!({"type": kind, "uuid": uuid, "parentUuid": parent, "isSidechain": false,
           "toolUseResult": {"stdout": "a copy the import never reads"},
           "message": {"role": kind, "id": id, "content": content}})
}

fn call(id: &str) -> Value {
    json!({"type": "tool_use", "id": id, "name": "Bash", "input": {"command": "true"}})
}

fn result(id: &str, text: &str) -> Value {
    json!({"type": "tool_result", "tool_use_id": id, "content": text})
}

fn text(t: &str) -> Value {
    json!([{"type": "text", "text": t}])
}

/// Merges (one assistant message in two records, results in two records),
/// an orphan result, dangling calls answered into a user message and by a
/// new message, a call without an id, a damaged content kept as a link, a
/// real compaction, a sidechain, long results.
fn records() -> Vec<Value> {
    let long = "x".repeat(30_000);
    let mut r = vec![
        rec("user", "u1", None, "", json!("start the work")),
        rec("assistant", "a1", Some("u1"), "m1", text("I will run two")),
        rec(
            "assistant",
            "a2",
            Some("a1"),
            "m1",
            json!([call("t1"), call("t2")]),
        ),
        rec("user", "u2", Some("a2"), "", json!([result("t1", &long)])),
        rec(
            "user",
            "u3",
            Some("u2"),
            "",
            json!([result("t2", "two"), result("zz", "orphan")]),
        ),
        rec("assistant", "a3", Some("u3"), "m2", json!([call("t3")])),
        rec(
            "user",
            "u4",
            Some("a3"),
            "",
            json!("no result, a new request"),
        ),
        rec("assistant", "a4", Some("u4"), "m3", json!([call("t4")])),
        rec(
            "assistant",
            "a5",
            Some("a4"),
            "m4",
            json!([{"type": "tool_use", "name": "Read", "input": {}}]),
        ),
        rec("user", "u5", Some("a5"), "", json!(42)),
        rec("user", "u6", Some("u5"), "", json!([result("t5", &long)])),
    ];
    r.push(
        json!({"type": "system", "subtype": "compact_boundary", "uuid": "c1",
                  "parentUuid": null, "logicalParentUuid": "u6",
                  "compactMetadata": {"trigger": "auto", "preTokens": 1234}}),
    );
    r.push(rec(
        "user",
        "u7",
        Some("c1"),
        "",
        json!("This session is being continued from a previous conversation. Summary."),
    ));
    r.push(rec(
        "assistant",
        "a6",
        Some("u7"),
        "m5",
        json!([call("t6")]),
    ));
    let mut side = rec("assistant", "s1", None, "m9", text("a sub-agent"));
    side["isSidechain"] = json!(true);
    r.push(side);
    r.push(rec(
        "user",
        "u8",
        Some("a6"),
        "",
        json!([result("t6", &long), {"type": "text", "text": "and more"}]),
    ));
    r.push(rec("assistant", "a7", Some("u8"), "m6", text("done")));
    r
}

fn write_log(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("log.jsonl");
    // A byte-order mark and a comment line shift every offset after them.
    let mut text = String::from("\u{feff}// provenance header\n\n");
    for r in records() {
        text.push_str(&format!("{r}\n"));
    }
    std::fs::write(&path, text).unwrap();
    path
}

fn lazily(path: &Path) -> ImportedSession {
    let mut s = import_file_sessions_lazily(path, &ImportOptions::default()).unwrap();
    assert_eq!(s.len(), 1);
    s.remove(0)
}

fn streamed(s: &ImportedSession) -> Vec<Message> {
    s.main_messages().map(Result::unwrap).collect()
}

#[test]
fn a_lazy_session_equals_the_whole_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_log(dir.path());
    let whole = import_file(&path, &ImportOptions::default()).unwrap();
    let held = import_str(
        &std::fs::read_to_string(&path).unwrap(),
        &path,
        TranscriptFormat::ClaudeJsonl,
        &ImportOptions::default(),
    )
    .unwrap();
    let lazy = lazily(&path);

    assert!(
        lazy.main.is_empty(),
        "the main conversation stays in the file"
    );
    assert!(!whole.main.is_empty());
    assert_eq!(
        whole.main, held.main,
        "read back from the file = kept in memory"
    );
    assert_eq!(streamed(&lazy), whole.main);
    // Read twice: the stream starts over.
    assert_eq!(streamed(&lazy), whole.main);
    assert_eq!(lazy.main_len(), whole.main.len());
    for s in [&held, &lazy] {
        assert_eq!(s.main_lines, whole.main_lines);
        assert_eq!(s.main_sent_chars, whole.main_sent_chars);
        assert_eq!(s.real_compaction_meta, whole.real_compaction_meta);
        assert_eq!(s.diagnostics, whole.diagnostics);
        assert_eq!(s.suppressed, whole.suppressed);
        assert_eq!(s.stats, whole.stats);
        assert_eq!(s.first_tool_use_chars(), whole.first_tool_use_chars());
    }
    // The log has each repair, so the comparison covers them.
    let kinds: Vec<&str> = whole.diagnostics.iter().map(|d| d.kind.name()).collect();
    for k in ["orphan_tool_result", "dangling_tool_use", "invalid_record"] {
        assert!(kinds.contains(&k), "{k} in {kinds:?}");
    }
    assert_eq!(whole.real_compactions.len(), 1);
    assert_eq!(held.sidechains, whole.sidechains);
    assert_eq!(whole.sidechains.len(), 1);
    // Replay reads the main conversation only: the rest is not kept.
    assert!(lazy.sidechains.is_empty() && lazy.detached.is_empty());
}

#[test]
fn replays_of_a_lazy_session_equal_those_of_the_whole_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_log(dir.path());
    let whole = import_file(&path, &ImportOptions::default()).unwrap();
    let lazy = lazily(&path);
    for scale_to_real in [false, true] {
        let options = ReplayOptions {
            scale: 0.05,
            scale_to_real,
            ..ReplayOptions::default()
        };
        for p in profile_names() {
            let a = replay_with(&whole, p, &options).unwrap();
            let b = replay_with(&lazy, p, &options).unwrap();
            assert_eq!(a, b, "{p}, scale_to_real {scale_to_real}");
        }
    }
}

#[test]
fn a_lazy_sub_agent_log_keeps_the_sidechain_it_replays() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.jsonl");
    let side: String = records()[..4]
        .iter()
        .map(|r| {
            let mut r = r.clone();
            r["isSidechain"] = json!(true);
            format!("{r}\n")
        })
        .collect();
    std::fs::write(&path, side).unwrap();
    let whole = import_file(&path, &ImportOptions::default()).unwrap();
    let lazy = lazily(&path);
    assert_eq!(lazy.main_from_sidechain, Some(0));
    assert_eq!(lazy.main, whole.main);
    assert_eq!(streamed(&lazy), whole.main);
    assert!(!whole.main.is_empty());
}

#[test]
fn a_log_changed_after_import_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_log(dir.path());
    let lazy = lazily(&path);
    std::fs::write(&path, "{\"type\": \"user\"}\n").unwrap();
    let err = lazy
        .main_messages()
        .find_map(Result::err)
        .expect("an error item");
    assert!(err.to_string().contains("log.jsonl"), "{err}");
    assert!(
        replay_with(&lazy, "hardened", &ReplayOptions::default()).is_err(),
        "the replay stops with the error"
    );
}

/// A generated log: per turn, whether the call is answered, whether a user
/// text comes between, whether the assistant record is split in two, and
/// whether an orphan result follows.
fn generated(turns: &[(bool, bool, bool, bool)]) -> String {
    let mut recs = vec![rec("user", "u0", None, "", json!("héllo ✓"))];
    let mut parent = "u0".to_string();
    let mut push = |recs: &mut Vec<Value>, kind: &str, uuid: String, id: &str, content: Value| {
        recs.push(rec(kind, &uuid, Some(&parent), id, content));
        parent = uuid;
    };
    for (k, &(answered, between, split, orphan)) in turns.iter().enumerate() {
        let (m, t) = (format!("m{k}"), format!("t{k}"));
        if split {
            push(
                &mut recs,
                "assistant",
                format!("s{k}"),
                &m,
                text("thinking aloud"),
            );
        }
        push(
            &mut recs,
            "assistant",
            format!("a{k}"),
            &m,
            json!([call(&t)]),
        );
        if between {
            push(
                &mut recs,
                "user",
                format!("x{k}"),
                "",
                json!("ünterbrochen"),
            );
        }
        if answered {
            push(
                &mut recs,
                "user",
                format!("r{k}"),
                "",
                json!([result(&t, "ørange")]),
            );
        }
        if orphan {
            push(
                &mut recs,
                "user",
                format!("o{k}"),
                "",
                json!([result("nobody", "?")]),
            );
        }
    }
    recs.iter().map(|r| format!("{r}\n")).collect()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(32))]

    #[test]
    fn any_generated_log_streams_as_it_imports(
        turns in proptest::collection::vec(proptest::prelude::any::<(bool, bool, bool, bool)>(), 0..8)
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.jsonl");
        let text = generated(&turns);
        std::fs::write(&path, &text).unwrap();
        let held = import_str(&text, &path, TranscriptFormat::ClaudeJsonl, &ImportOptions::default()).unwrap();
        let lazy = lazily(&path);
        proptest::prop_assert_eq!(streamed(&lazy), held.main.clone());
        proptest::prop_assert_eq!(&lazy.main_sent_chars, &held.main_sent_chars);
        proptest::prop_assert_eq!(&lazy.main_lines, &held.main_lines);
        proptest::prop_assert_eq!(&lazy.diagnostics, &held.diagnostics);
    }
}
