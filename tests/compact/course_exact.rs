//! One minimal case per way ctxlab used to differ from the course's own code.
//!
//! Every expected number below was computed from the course's `code.py` (the
//! revision named in each test): by hand from its expressions, and checked by
//! running the unmodified code with the stub model of
//! `tests/golden/course/generate.py` at the same result-path length (160).

use crate::common;
use common::turn;

// These cases plant and read files with std::fs next to the run, so the run is on disk.
use ctxlab::compact::config::profile;
use ctxlab::compact::session::{Action, Call, Script, Session, Turn};
use ctxlab::compact::{Compactor, Config, LabRoot, Step, Summarizer};
use ctxlab::message::{Block, Message};
use ctxlab::storage::Backend;

/// 160 leaves room for a 60-char TMPDIR (the minimum is about 113 there).
const PATH_LEN: usize = 160;

fn config(name: &str) -> Config {
    profile(name).unwrap().config
}

fn session(config: Config, fail_from: Option<usize>) -> Session {
    let root = LabRoot::on(Backend::Disk, Some(PATH_LEN), 7).unwrap();
    let mut c = Compactor::new(config, root).unwrap();
    c.summarizer = Summarizer::Stub { fail_from };
    Session::new(c)
}

fn run(config: Config, script: &Script, fail_from: Option<usize>) -> Session {
    let mut s = session(config, fail_from);
    s.run(script).unwrap();
    s
}

fn done() -> Action {
    Action::Assistant(Turn {
        text: Some("done".into()),
        calls: vec![],
    })
}

fn request_chars(s: &Session) -> Vec<usize> {
    s.requests.iter().map(|r| r.chars).collect()
}

fn files(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir).unwrap().count()
}

/// A user turn, 27 turns with one result of `small` chars, one result of `last` chars, "done".
fn long_tail(small: usize, last: usize) -> Script {
    let mut a = vec![Action::User("go".into())];
    for i in 0..27 {
        a.push(turn(vec![Call::sized(&format!("toolu_{i}"), small)]));
    }
    a.push(turn(vec![Call::sized("toolu_27", last)]));
    a.push(done());
    Script(a)
}

#[test]
fn summary_input_is_json_dumps_text() {
    // user "hi", the compact tool, "done". The course summarises
    // json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content":
    // [{"type": "tool_use", "id": "compact_1", "name": "compact", "input": {}}]},
    // {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "compact_1",
    // "content": "Compaction requested after this tool batch."}]}]): 286 chars
    // (compact JSON, without the 23 separator spaces, was 263).
    let script = Script(vec![Action::User("hi".into()), Action::CompactTool, done()]);
    let s = run(config("course-f9e8b28"), &script, None);
    let first = s.messages[0].text();
    assert!(first.contains("stub summary 0: 286 input chars"), "{first}");
    // Request 1 is the bare prompt (35 chars), request 2 the summary plus "done"'s call.
    assert_eq!(request_chars(&s), [35, 502]);
}

#[test]
fn archives_hold_json_dumps_lines() {
    let script = Script(vec![Action::User("hi".into()), Action::CompactTool, done()]);
    let s = run(config("course-f9e8b28"), &script, None);
    let dir = s.compactor.root.transcripts();
    let name = "transcript_00000000000000000000000000000001.jsonl";
    let text = std::fs::read_to_string(dir.join(name)).unwrap();
    // write_transcript: json.dumps(message, default=str, ensure_ascii=False) + "\n" per message.
    assert_eq!(
        text.lines().next(),
        Some(r#"{"role": "user", "content": "hi"}"#)
    );
    assert_eq!(
        text.lines().nth(1),
        Some(
            r#"{"role": "assistant", "content": [{"type": "tool_use", "id": "compact_1", "name": "compact", "input": {}}]}"#
        )
    );
    assert_eq!(text.lines().count(), 3);
}

#[test]
fn transcript_names_have_the_course_length_at_the_limit() {
    // f9e8b28, result path 160: snip archives "[3 messages archived at <dir>/transcript_<32 hex>.jsonl]"
    // (49-char name); with a last result of 44 423 chars the course's context is
    // 50 001 chars and it summarises; one char less (50 000) it does not. With
    // the old 21-char names the same history was 28 chars shorter and never summarised.
    let s = run(config("course-f9e8b28"), &long_tail(10, 44_422), None);
    assert_eq!(request_chars(&s)[26..], [5_584, 5_586, 50_000]);
    assert!(s.messages[3].text().contains("transcript_"));
    let s = run(config("course-f9e8b28"), &long_tail(10, 44_423), None);
    assert_eq!(request_chars(&s)[27..], [5_586, 504]);
    assert!(s.messages[0]
        .text()
        .contains("stub summary 0: 50001 input chars"));
}

#[test]
fn saved_previews_are_read_back_in_text_mode() {
    // course main, result path 160: a 48 400-char prompt and one result of
    // 18 182 "crlf line\r\n" lines (200 002 chars). Step 1 persists it (over the
    // 200 000 budget); the estimate is over 50 000, so fit_tool_results re-reads
    // the saved file with open(encoding="utf-8").read(1000): "\r\n" arrives as
    // "\n", the preview is 82 JSON chars shorter than a raw-bytes one, and the
    // request is 49 960 chars: no summary, three messages.
    let script = Script(vec![
        Action::User("p".repeat(48_400)),
        turn(vec![Call {
            text: Some("crlf line\r\n".repeat(18_182)),
            chars: None,
            ..Call::sized("toolu_0", 0)
        }]),
        done(),
    ]);
    let s = run(config("course-main"), &script, None);
    assert_eq!(request_chars(&s), [48_433, 49_960]);
    assert_eq!(s.messages.len(), 4);
    let Block::ToolResult { content, .. } = &s.messages[2].blocks()[0] else {
        panic!("a result");
    };
    assert!(
        content.contains("Preview:\ncrlf line\ncrlf line\n"),
        "{content:.200}"
    );
    assert!(!content.contains('\r'));
}

#[test]
fn a_failing_summary_ends_the_session_as_the_course_leaves_it() {
    // f9e8b28, results of 200 chars, then 44 423 chars, summary model raising.
    // In the course the exception leaves `prepare` before `messages[:] = ...`:
    // the history keeps step 3's in-place "omitted" placeholders but not the
    // snip of that last prepare (54 messages, not the snipped list), four
    // transcripts exist (three snips, one orphan from compact_history), the
    // request of the failing call is never sent, and no action runs after it.
    let s = run(config("course-f9e8b28"), &long_tail(200, 44_423), Some(0));
    assert!(s.compactor.halted);
    assert_eq!(s.messages.len(), 54);
    assert_eq!(request_chars(&s)[26..], [6_764, 6_766]);
    assert_eq!(files(s.compactor.root.transcripts()), 4);
    let Block::ToolResult { content, .. } = &s.messages[2].blocks()[0] else {
        panic!("a result");
    };
    assert_eq!(content, "[Earlier tool result omitted.]");
    assert!(s.messages[3].text().contains("3 messages archived"));

    // The switch keeps the harness going with the snipped list instead.
    let mut cfg = config("course-f9e8b28");
    cfg.switches.survive_summary_failure = true;
    let s = run(cfg, &long_tail(200, 44_423), Some(0));
    assert!(!s.compactor.halted);
    assert_eq!(request_chars(&s).len(), 29);
    assert!(s.messages.len() < 54);
}

#[test]
fn failing_compact_tool_and_reactive_summaries_also_end_the_session() {
    // The compact tool: the exception leaves the batch with its result in place.
    let script = Script(vec![Action::User("hi".into()), Action::CompactTool, done()]);
    let s = run(config("course-f9e8b28"), &script, Some(0));
    assert!(s.compactor.halted);
    assert_eq!(s.messages.len(), 3);
    assert_eq!(request_chars(&s), [35]);
    // Prompt too long: reactive_compact raises inside the except clause; the
    // prepared history stays and the retried call never happens.
    let script = Script(vec![
        Action::User("hi".into()),
        Action::PromptTooLong,
        done(),
        done(),
    ]);
    let s = run(config("course-f9e8b28"), &script, Some(0));
    assert!(s.compactor.halted);
    assert_eq!(s.messages.len(), 1);
    assert_eq!(request_chars(&s), [35]);
}

fn result_msgs(results: &[(&str, String)]) -> Vec<Message> {
    let mut out = vec![Message::user_text("go")];
    for (id, text) in results {
        out.push(Message::assistant(vec![Block::ToolUse {
            id: id.to_string(),
            name: "bash".into(),
            input: serde_json::json!({}).into(),
        }]));
        out.push(Message::tool_results(vec![(id.to_string(), text.clone())]));
    }
    out.push(Message::assistant(vec![Block::Text { text: "ok".into() }]));
    out
}

fn content(m: &Message) -> &str {
    match &m.blocks()[0] {
        Block::ToolResult { content, .. } => content,
        _ => panic!("a result"),
    }
}

#[test]
fn full_output_lines_split_as_python_splitlines() {
    // f9e8b28 micro_compact: "...\x0bFull output: /p\x0b..." — \v ends a line for
    // str.splitlines(), so the course finds the pointer; Rust's lines() did not.
    let crafted = format!("head\u{b}Full output: /p/x.txt\u{b}{}", "y".repeat(150));
    let mut msgs = result_msgs(&[
        ("a", crafted),
        ("b", "1".repeat(200)),
        ("c", "2".repeat(200)),
        ("d", "3".repeat(200)),
    ]);
    let mut s = session(config("course-f9e8b28"), None);
    s.compactor.micro_compact(&mut msgs, None).unwrap();
    assert_eq!(content(&msgs[2]), "[Earlier tool result saved at /p/x.txt]");
}

#[test]
fn course_main_overwrites_a_saved_file_of_the_same_name() {
    // save_output: path.write_text(output) — ids "x/1" and "x_1" share x_1.txt,
    // which ends with the later result (f9e8b28 kept the first: `if not path.exists()`).
    let msgs = result_msgs(&[
        ("x/1", "first".repeat(40)),
        ("x_1", "second".repeat(40)),
        ("b", "1".repeat(200)),
        ("c", "2".repeat(200)),
        ("d", "3".repeat(200)),
    ]);
    let mut s = session(config("course-main"), None);
    s.compactor
        .run_step(Step::Micro, msgs.clone(), "go")
        .unwrap();
    let saved = s.compactor.root.results().join("x_1.txt");
    assert_eq!(
        std::fs::read_to_string(&saved).unwrap(),
        "second".repeat(40)
    );
    let mut s = session(config("course-f9e8b28"), None);
    s.compactor.config.switches.save_before_omit = true;
    s.compactor.run_step(Step::Micro, msgs, "go").unwrap();
    let saved = s.compactor.root.results().join("x_1.txt");
    assert_eq!(std::fs::read_to_string(&saved).unwrap(), "first".repeat(40));
}

#[test]
fn pointers_must_resolve_inside_the_results_dir() {
    // course main persisted_output_path: Path(p).resolve().is_relative_to(results.resolve()).
    // "$RESULTS/../outside.txt" resolves outside: not a pointer, so micro saves the
    // placeholder text itself and points at $RESULTS/a.txt instead.
    let mut s = session(config("course-main"), None);
    let results = s.compactor.root.results().to_path_buf();
    let outside = results.parent().unwrap().join("outside.txt");
    std::fs::write(&outside, "x").unwrap();
    let escape = format!(
        "[Earlier tool result saved at {}/../outside.txt]",
        results.display()
    );
    let mut msgs = result_msgs(&[
        ("a", escape.clone()),
        ("b", "1".repeat(200)),
        ("c", "2".repeat(200)),
        ("d", "3".repeat(200)),
    ]);
    s.compactor.micro_compact(&mut msgs, None).unwrap();
    let want = format!("[Earlier tool result saved at {}/a.txt]", results.display());
    assert_eq!(content(&msgs[2]), want);
    let saved = std::fs::read_to_string(results.join("a.txt")).unwrap();
    assert_eq!(saved, escape);
}

/// 51 messages whose snip middle (course main: head 3 grown to 4 past a
/// tool pair, tail of 46) is exactly message 4.
fn lone_middle(marker: String) -> Vec<Message> {
    let mut m = vec![
        Message::user_text("go"),
        Message::assistant(vec![Block::Text { text: "t".into() }]),
        Message::assistant(vec![Block::ToolUse {
            id: "t0".into(),
            name: "bash".into(),
            input: serde_json::json!({}).into(),
        }]),
        Message::tool_results(vec![("t0".into(), "r".into())]),
        Message::user_text(marker),
    ];
    for i in 0..46 {
        m.push(if i % 2 == 0 {
            Message::assistant(vec![Block::Text { text: "a".into() }])
        } else {
            Message::user_text("u")
        });
    }
    m
}

fn snips(marker: String, s: &mut Session) -> bool {
    let before = s.compactor.events.len();
    s.compactor
        .run_step(Step::Snip, lone_middle(marker), "go")
        .unwrap();
    s.compactor.events.len() > before
}

#[test]
fn archive_markers_match_unicode_digits_and_resolve_inside() {
    // course main is_archive_marker: re.fullmatch(r"\[\d+ messages archived at (.+)\]")
    // — \d matches "١٢" (Arabic-Indic) — and the path must resolve inside the
    // transcript dir and be a file. A lone marker is left alone (no snip).
    let mut s = session(config("course-main"), None);
    let dir = s.compactor.root.transcripts().to_path_buf();
    std::fs::write(dir.join("t.jsonl"), "").unwrap();
    let outside = dir.parent().unwrap().join("t.jsonl");
    std::fs::write(&outside, "").unwrap();
    let arabic = format!(
        "[\u{661}\u{662} messages archived at {}/t.jsonl]",
        dir.display()
    );
    assert!(!snips(arabic, &mut s), "a Unicode-digit marker is a marker");
    let ascii = format!("[12 messages archived at {}/t.jsonl]", dir.display());
    assert!(!snips(ascii, &mut s));
    let escape = format!("[12 messages archived at {}/../t.jsonl]", dir.display());
    assert!(
        snips(escape, &mut s),
        "a marker resolving outside is archived"
    );
    let superscript = format!("[\u{b2} messages archived at {}/t.jsonl]", dir.display());
    assert!(snips(superscript, &mut s), "'²' is not a \\d digit");
}

#[test]
fn floats_in_tool_inputs_are_sized_as_python_prints_them() {
    // json.dumps({"x": 1e-07}) == '{"x": 1e-07}': 12 chars (serde_json: "1e-7", 11).
    let v = serde_json::json!({"x": 1e-7});
    assert_eq!(ctxlab::message::python_json_chars(&v), 12);
    let m = Message::assistant(vec![Block::ToolUse {
        id: "t".into(),
        name: "n".into(),
        input: v.into(),
    }]);
    // The walking estimate and the json.dumps text agree.
    assert_eq!(
        ctxlab::message::estimate_chars(std::slice::from_ref(&m)),
        ctxlab::pyjson::dumps_len(&vec![m])
    );
}
