//! Golden test against Gemini CLI itself: `tests/golden/gemini-cli/expected.json`
//! was produced by running `ChatCompressionService.compress` of
//! `@google/gemini-cli-core@0.61.0` (see `generate.mjs` there) on the two
//! histories rebuilt here; long texts are compared by length, FNV-1a 64 and
//! their first and last 200 characters.

use std::path::Path;

use serde_json::{json, Value};

use super::*;
use crate::policy::model::Scripted;
use crate::storage::{MemFs, Storage};
use crate::tokens::Approx;

const EXPECTED: &str = include_str!("../../../tests/golden/gemini-cli/expected.json");
const ROOT: &str = "/run/gemini";

fn output(k: usize) -> String {
    (0..2_500)
        .map(|i| format!("r{k} line {i:05} {}\n", "x".repeat(40)))
        .collect()
}

fn call(id: &str, name: &str, args: Value) -> Message {
    Message::assistant(vec![Block::ToolUse {
        id: id.into(),
        name: name.into(),
        input: args.into(),
    }])
}

fn resp(id: &str, out: String) -> Message {
    Message::tool_results(vec![(id.into(), out)])
}

fn say(text: &str) -> Message {
    Message::assistant(vec![Block::Text { text: text.into() }])
}

fn history_a() -> Vec<Message> {
    vec![
        Message::user_text("fix the parser; keep the API stable"),
        call("c1", "read_file", json!({"path": "src/parser.rs"})),
        resp("c1", output(1)),
        say("read it"),
        Message::user_text("now run the tests"),
        call("c2", "run_shell_command", json!({"command": "cargo test"})),
        resp("c2", output(2)),
        say("tests ran"),
        Message::user_text("summarise the failures"),
        call("c3", "grep", json!({"pattern": "FAIL"})),
        resp("c3", output(3)),
    ]
}

fn history_b() -> Vec<Message> {
    let mut h = history_a();
    h.truncate(7);
    h.extend([
        call("c3", "grep", json!({"pattern": "FAIL"})),
        resp("c3", output(3)),
    ]);
    h
}

fn fnv(s: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

fn digest(s: &str) -> Value {
    let t = s.replace(ROOT, "{ROOT}");
    let chars: Vec<char> = t.chars().collect();
    json!({
        "len": chars.len(),
        "fnv": fnv(&t),
        "head": chars[..200.min(chars.len())].iter().collect::<String>(),
        "tail": chars[chars.len().saturating_sub(200)..].iter().collect::<String>(),
    })
}

/// The lab's history in the generator's digest shape.
fn as_expected(history: &[Message]) -> Value {
    let name_of = |id: &str| tool_name(history, id);
    let parts = |m: &Message| -> Vec<Value> {
        match &m.content {
            Content::Text(t) => vec![json!({ "text": t })],
            Content::Blocks(bs) => bs
                .iter()
                .map(|b| match b {
                    Block::Text { text } => json!({ "text": text }),
                    Block::ToolUse { id, name, input } => {
                        json!({ "functionCall": { "id": id, "name": name, "args": input } })
                    }
                    Block::ToolResult { tool_use_id, content } => json!({ "functionResponse": {
                        "id": tool_use_id, "name": name_of(tool_use_id), "output": digest(content) } }),
                    other => panic!("unexpected block {other:?}"),
                })
                .collect(),
        }
    };
    Value::Array(
        history
            .iter()
            .map(|m| json!({ "role": if m.role == Role::User { "user" } else { "model" }, "parts": parts(m) }))
            .collect(),
    )
}

fn run_forced(history: Vec<Message>, fs: &MemFs) -> (Vec<Message>, Prepared) {
    let mut p = GeminiCli::default();
    // `force`: the generator called compress(.., force = true).
    p.switches.DEFAULT_COMPRESSION_TOKEN_THRESHOLD = 1e-9;
    let mut model = Scripted::replies([
        "SUMMARY-DRAFT",
        "<state_snapshot>goal: fix the parser</state_snapshot>",
    ]);
    let mut ctx = PolicyCtx {
        storage: fs,
        root: Path::new(ROOT),
        tokens: &Approx,
        turn: 0,
        envelope: 0,
        anchor: None,
        read_lines: None,
        now_ms: None,
        model: &mut model,
    };
    let mut h = history;
    let out = p.prepare(&mut h, &mut ctx).unwrap();
    (h, out)
}

fn files(fs: &MemFs) -> Value {
    let dir = Path::new(ROOT).join("tool-outputs");
    Value::Array(
        fs.list(&dir)
            .unwrap()
            .into_iter()
            .map(|name| {
                let text = String::from_utf8(fs.read(&dir.join(&name)).unwrap()).unwrap();
                json!({ "name": name, "content": digest(&text) })
            })
            .collect(),
    )
}

#[test]
fn golden_matches_gemini_cli_core_on_both_histories() {
    let expected: Value = serde_json::from_str(EXPECTED).unwrap();
    for (key, history) in [("A", history_a()), ("B", history_b())] {
        let fs = MemFs::new();
        let (h, out) = run_forced(history, &fs);
        assert_eq!(as_expected(&h), expected[key]["history"], "history {key}");
        assert_eq!(files(&fs), expected[key]["files"], "files {key}");
        assert_eq!(
            as_expected(&out.request),
            expected[key]["history"],
            "request {key}"
        );
    }
}

#[test]
fn split_point_cuts_only_before_a_plain_user_message() {
    // Nothing after the target: the last candidate, unless the history ends
    // with a model text, when everything may go.
    let h = history_a();
    assert_eq!(split_point(&h, 0.7), 8);
    let mut ended = h.clone();
    ended.push(say("all done"));
    assert_eq!(split_point(&ended, 0.7), ended.len());
    assert_eq!(split_point(&h[..3], 0.1), 0);
}

#[test]
fn truncated_excerpt_names_the_file_for_the_checker() {
    let fs = MemFs::new();
    let (h, _) = run_forced(history_b(), &fs);
    let rules = GeminiCli::default().pointer_rules();
    let Block::ToolResult { content, .. } = &h[4].blocks()[0] else {
        panic!("moved")
    };
    assert_eq!(
        crate::policy::pointers_in(&rules, content),
        ["/run/gemini/tool-outputs/run_shell_command_1.txt"]
    );
    assert_eq!(format_truncated("short", "/f", 40_000), "short");
    assert_eq!(grouped(1_234_567), "1,234,567");
    assert_eq!(estimate("abcd"), 1);
    assert_eq!(estimate("é"), 1);
}

#[test]
fn failed_summary_keeps_the_history_and_an_inflated_one_stops_summaries() {
    let mut p = GeminiCli::default();
    p.switches.DEFAULT_COMPRESSION_TOKEN_THRESHOLD = 1e-9;
    let fs = MemFs::new();
    let mut model = Scripted::default();
    let mut ctx = PolicyCtx {
        storage: &fs,
        root: Path::new(ROOT),
        tokens: &Approx,
        turn: 0,
        envelope: 0,
        anchor: None,
        read_lines: None,
        now_ms: None,
        model: &mut model,
    };
    let mut h = vec![
        Message::user_text("a"),
        say("b"),
        Message::user_text("c"),
        say("d"),
        Message::user_text("e"),
    ];
    let before = h.clone();
    let out = p.prepare(&mut h, &mut ctx).unwrap();
    assert_eq!(h, before);
    assert!(matches!(out.events[..], [PolicyEvent::ModelFailed { .. }]));
    // A summary longer than what it replaces is refused and remembered.
    let mut model = Scripted::replies(["x".repeat(4_000), "x".repeat(4_000)]);
    let mut ctx = PolicyCtx {
        storage: &fs,
        root: Path::new(ROOT),
        tokens: &Approx,
        turn: 1,
        envelope: 0,
        anchor: None,
        read_lines: None,
        now_ms: None,
        model: &mut model,
    };
    p.prepare(&mut h, &mut ctx).unwrap();
    assert_eq!(h, before);
    assert!(p.failed);
}

/// The names looked up at once are the names searched one by one: the
/// first call of a repeated id wins, an id no call has is unknown.
#[test]
fn tool_names_at_once_equal_tool_name_for_each_id() {
    let call = |id: &str, name: &str| Block::ToolUse {
        id: id.into(),
        name: name.into(),
        input: json!({}).into(),
    };
    let history = vec![
        Message::user_text("go"),
        Message {
            role: crate::message::Role::Assistant,
            content: Content::Blocks(vec![call("a", "read_file"), call("b", "shell")]),
        },
        Message {
            role: crate::message::Role::Assistant,
            content: Content::Blocks(vec![call("a", "write_file"), call("c", "grep")]),
        },
    ];
    let names = super::tool_names(&history);
    for id in ["a", "b", "c", "missing"] {
        let at_once = names.get(id).map_or("unknown_tool", |n| n);
        assert_eq!(at_once, tool_name(&history, id), "{id}");
    }
    assert_eq!(names["a"], "read_file");
}
