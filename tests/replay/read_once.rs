//! A Claude Code log is read once on its way to a replay: the importer
//! keeps the text the recorded log is then built from
//! (`import_file_sessions_with_log`, `RecordedLog::from_text`), where it
//! used to be streamed by the importer, its contents read back, and read
//! whole a second time for the envelope. Counted with the thread's own
//! read counter (`/proc/thread-self/io`, `rchar`), so tests running beside
//! it do not count; skipped with a reason where the counter is absent.

use std::io::Write;

use ctxlab::import::{import_file_sessions, ImportOptions};
use ctxlab::replay::envelope::RecordedLog;
use ctxlab::replay::subagents::{sessions_of, Conversations};
use serde_json::json;

/// Bytes this thread has read so far (`None`: no per-thread counter).
fn rchar() -> Option<u64> {
    let io = std::fs::read_to_string("/proc/thread-self/io").ok()?;
    io.lines()
        .find_map(|l| l.strip_prefix("rchar:"))?
        .trim()
        .parse()
        .ok()
}

/// A Claude Code log of `turns` tool calls, each result 4 KB, every reply
/// with usage.
fn log(turns: usize) -> tempfile::NamedTempFile {
    let mut lines = vec![json!({"type": "user", "uuid": "u0", "parentUuid": null,
        "isSidechain": false, "version": "2.0.22",
        "message": {"role": "user", "content": "fix the build"}})];
    let mut parent = "u0".to_string();
    for t in 0..turns {
        let (a, r) = (format!("a{t}"), format!("r{t}"));
        let id = format!("toolu_{t:04}");
        lines.push(json!({"type": "assistant", "uuid": a, "parentUuid": parent,
            "isSidechain": false, "version": "2.0.22",
            "message": {"id": format!("msg_{t}"), "role": "assistant",
                "model": "claude-sonnet-4-5-20250929",
                "content": [{"type": "tool_use", "id": id, "name": "Bash",
                    "input": {"command": format!("cat f{t}")}}],
                "usage": {"input_tokens": 10, "cache_read_input_tokens": 1_000 * (t + 1),
                    "output_tokens": 5}}}));
        lines.push(
            json!({"type": "user", "uuid": r, "parentUuid": a, "isSidechain": false,
            "message": {"role": "user", "content": [{"type": "tool_result",
                "tool_use_id": id, "content": format!("{t}:{}", "x".repeat(4_000))}]}}),
        );
        parent = r;
    }
    let mut f = tempfile::Builder::new()
        .suffix(".jsonl")
        .tempfile()
        .unwrap();
    let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    f.write_all(text.join("\n").as_bytes()).unwrap();
    f
}

#[test]
fn a_claude_code_log_is_read_once_for_its_sessions_and_its_recorded_log() {
    let f = log(300);
    let size = std::fs::metadata(f.path()).unwrap().len();
    let Some(before) = rchar() else {
        println!("SKIP: no /proc/thread-self/io to count this thread's reads");
        return;
    };
    let once = sessions_of(
        f.path(),
        &ImportOptions::default(),
        Conversations::default(),
    )
    .unwrap();
    let read = rchar().unwrap() - before;
    // The whole file once (plus the counter's own small reads), where a
    // second read of it would be twice its size at least.
    assert!(
        read >= size && read < size + size / 2,
        "read {read} bytes of a {size}-byte log"
    );
    // The same session and the same recorded requests as reading it twice.
    let [one] = once.as_slice() else {
        panic!("one session, no subagents: {}", once.len());
    };
    let twice = import_file_sessions(f.path(), &ImportOptions::default()).unwrap();
    assert_eq!(one.session.main, twice[0].main);
    let log = one.log.as_ref().expect("a Claude Code log records usage");
    let again = RecordedLog::read(f.path(), twice[0].format)
        .unwrap()
        .unwrap();
    assert_eq!(log.requests.len(), 300);
    let ids = |l: &RecordedLog| l.requests.iter().map(|r| r.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(log), ids(&again));
    assert_eq!(log.version, again.version);
}
