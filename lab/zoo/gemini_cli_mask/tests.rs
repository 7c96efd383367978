//! Golden test against Gemini CLI's own code: `tests/golden/gemini-cli-mask/expected.json`
//! was produced by running `ToolOutputMaskingService.mask` and
//! `estimateTokenCountSync` of google-gemini/gemini-cli@00b731958a3b, transpiled
//! as they are (see `generate.mjs` there), on the two histories rebuilt
//! here; long texts are compared by length, FNV-1a 64 and their first and
//! last 200 characters, with the directory as {ROOT} and the file names'
//! random suffix as {R}.

use std::path::Path;

use serde_json::{json, Value};

use super::*;
use crate::message::Content;
use crate::policy::model::Scripted;
use crate::storage::{MemFs, Storage};

const EXPECTED: &str = include_str!("../../../tests/golden/gemini-cli-mask/expected.json");
const ROOT: &str = "/run/gmask";

fn lines(tag: &str, n: usize) -> String {
    (0..n)
        .map(|i| format!("{tag} line {i:05} {}\n", "x".repeat(36)))
        .collect()
}

fn out(k: usize) -> String {
    match k {
        1 => "ok".into(),
        2 => format!(
            "Output: {}Error: (none)\nExit Code: 1\nSignal: (none)\nBackground PIDs: (none)\nProcess Group PGID: 4242",
            lines("s2", 2000)
        ),
        3 => format!("héllo wörld ✓ 😀\n{}", lines("r3", 1200)),
        4 => lines("r4", 3000),
        _ => lines("r5", 2400),
    }
}

fn call(id: &str, name: &str) -> Message {
    Message::assistant(vec![Block::ToolUse {
        id: id.into(),
        name: name.into(),
        input: json!({}).into(),
    }])
}

fn resp(id: &str, k: usize) -> Message {
    Message::tool_results(vec![(id.into(), out(k))])
}

/// The generator's history A, then the request upstream keeps outside it.
fn history_a() -> Vec<Message> {
    vec![
        Message::user_text("fix the parser"),
        call("c1", "read_file"),
        resp("c1", 1),
        call("c2", "run_shell_command"),
        resp("c2", 2),
        Message::assistant(vec![Block::Text {
            text: "tests ran".into(),
        }]),
        Message::user_text("go on"),
        call("c3", "read_file"),
        resp("c3", 3),
        call("c4", "grep"),
        resp("c4", 4),
        call("c5", "read_file"),
        resp("c5", 5),
        call("c6", "read_file"),
        resp("c6", 4),
    ]
}

fn history_b() -> Vec<Message> {
    vec![
        Message::user_text("fix the parser"),
        call("c3", "read_file"),
        resp("c3", 3),
        call("c4", "grep"),
        resp("c4", 4),
        call("c6", "read_file"),
        resp("c6", 4),
    ]
}

fn fnv(s: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// `{ROOT}` for the directory and `{R}` for each file name's suffix.
fn normal(s: &str) -> String {
    let t = s.replace(ROOT, "{ROOT}");
    let mut out = String::new();
    let mut rest = t.as_str();
    while let Some(at) = rest.find(".txt") {
        let (before, after) = rest.split_at(at);
        match before.rfind('_') {
            Some(u) if before[u + 1..].chars().all(|c| c.is_ascii_alphanumeric()) => {
                out.push_str(&before[..u]);
                out.push_str("_{R}");
            }
            _ => out.push_str(before),
        }
        out.push_str(".txt");
        rest = &after[4..];
    }
    out.push_str(rest);
    out
}

fn digest(s: &str) -> Value {
    let t = normal(s);
    let chars: Vec<char> = t.chars().collect();
    json!({
        "len": chars.len(),
        "fnv": fnv(&t),
        "head": chars[..200.min(chars.len())].iter().collect::<String>(),
        "tail": chars[chars.len().saturating_sub(200)..].iter().collect::<String>(),
    })
}

/// The request in the generator's shape.
fn as_expected(messages: &[Message]) -> Value {
    let parts = |m: &Message| -> Vec<Value> {
        match &m.content {
            Content::Text(t) => vec![json!({ "text": t })],
            Content::Blocks(bs) => bs
                .iter()
                .map(|b| match b {
                    Block::Text { text } => json!({ "text": text }),
                    Block::ToolUse { id, .. } => json!({ "functionCall": id }),
                    Block::ToolResult {
                        tool_use_id,
                        content,
                    } => json!({ "functionResponse": { "id": tool_use_id, "output": digest(content) } }),
                    other => panic!("unexpected block {other:?}"),
                })
                .collect(),
        }
    };
    Value::Array(
        messages
            .iter()
            .map(|m| {
                let role = if m.role == Role::User {
                    "user"
                } else {
                    "model"
                };
                json!({ "role": role, "parts": parts(m) })
            })
            .collect(),
    )
}

fn files(fs: &MemFs) -> Value {
    let dir = Path::new(ROOT).join(TOOL_OUTPUTS_DIR);
    let mut out: Vec<Value> = fs
        .list(&dir)
        .unwrap_or_default()
        .into_iter()
        .map(|name| {
            let text = String::from_utf8(fs.read(&dir.join(&name)).unwrap()).unwrap();
            json!({ "name": normal(&name), "output": digest(&text) })
        })
        .collect();
    out.sort_by_key(|f| f["name"].as_str().unwrap_or_default().to_string());
    Value::Array(out)
}

fn run(p: &mut GeminiCliMask, h: &mut Vec<Message>, fs: &MemFs) -> Prepared {
    let mut model = Scripted::default();
    let mut ctx = PolicyCtx {
        storage: fs,
        root: Path::new(ROOT),
        tokens: &crate::tokens::Approx,
        turn: 0,
        envelope: 0,
        anchor: None,
        read_lines: None,
        now_ms: None,
        model: &mut model,
    };
    p.prepare(h, &mut ctx).unwrap()
}

fn masked(out: &Prepared) -> Vec<&str> {
    out.events
        .iter()
        .filter_map(|e| match e {
            PolicyEvent::Truncated { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn golden_matches_gemini_cli_on_both_histories() {
    let expected: Value = serde_json::from_str(EXPECTED).unwrap();
    for (key, history) in [("A", history_a()), ("B", history_b())] {
        let fs = MemFs::new();
        let mut h = history.clone();
        let out = run(&mut GeminiCliMask::default(), &mut h, &fs);
        let n = h.len() - 1;
        assert_eq!(
            as_expected(&h[..n]),
            expected[key]["history"],
            "history {key}"
        );
        assert_eq!(
            h[n], history[n],
            "the request being sent is never masked ({key})"
        );
        assert_eq!(
            as_expected(&out.request[..n]),
            expected[key]["history"],
            "request {key}"
        );
        assert_eq!(files(&fs), expected[key]["files"], "files {key}");
        assert_eq!(
            masked(&out).len(),
            expected[key]["maskedCount"].as_u64().unwrap() as usize,
            "maskedCount {key}"
        );
    }
}

#[test]
fn the_crossing_output_and_older_ones_are_masked_newest_first_and_never_again() {
    let fs = MemFs::new();
    let mut p = GeminiCliMask::default();
    let mut h = history_a();
    let out = run(&mut p, &mut h, &fs);
    assert_eq!(masked(&out), ["c4", "c3", "c2"]);
    // c1's snippet would be longer than "ok": written, kept.
    assert!(out.events.contains(&PolicyEvent::Persisted {
        id: "c1".into(),
        path: format!("{ROOT}/tool-outputs/read_file_c1_4.txt"),
        chars: 2,
    }));
    let Block::ToolResult { content, .. } = &h[10].blocks()[0] else {
        panic!("c4 moved")
    };
    let paths = crate::policy::pointers_in(&p.pointer_rules(), content);
    assert_eq!(paths, [format!("{ROOT}/tool-outputs/grep_c4_1.txt")]);
    assert_eq!(fs.read(Path::new(paths[0])).unwrap(), out_bytes(4));
    // Masked outputs are skipped by the next scan: only c1 is left, too small.
    let again = run(&mut p, &mut h, &fs);
    assert!(masked(&again).is_empty());
}

fn out_bytes(k: usize) -> Vec<u8> {
    out(k).into_bytes()
}

#[test]
fn nothing_is_masked_inside_the_protection_or_under_the_batch_threshold() {
    let mut p = GeminiCliMask::default();
    let (prunable, total) = p.scan(&history_b(), 6);
    assert_eq!(prunable.len(), 1, "c3 crosses the protection");
    assert!(total < 30_000);
    p.switches.DEFAULT_MIN_PRUNABLE_TOKENS_THRESHOLD = total;
    let fs = MemFs::new();
    let mut h = history_b();
    assert_eq!(
        masked(&run(&mut p, &mut h, &fs)),
        ["c3"],
        "at the threshold it masks"
    );
    // Without the latest-turn protection the scan starts one message later.
    let mut q = GeminiCliMask {
        switches: Switches {
            DEFAULT_PROTECT_LATEST_TURN: false,
            ..Switches::default()
        },
        ..GeminiCliMask::default()
    };
    let mut short = history_b();
    short.truncate(5);
    assert_eq!(q.scan(&short, 5).0.len(), 1);
    assert_eq!(GeminiCliMask::default().scan(&short, 5).0.len(), 0);
}

#[test]
fn previews_follow_upstream_shapes() {
    let shell = shell_preview("Output: a\nb\nExit Code: 2");
    assert_eq!(shell, "Output: a\nb\nExit Code: 2");
    assert_eq!(shell_preview("plain"), "plain");
    let many: String = (0..25).map(|i| format!("l{i}\n")).collect();
    let simple = simple_preview(&many);
    assert!(
        simple.contains("\n\n... [6 lines omitted] ...\n\n"),
        "{simple}"
    );
    let small = preview("read_file", "short");
    assert_eq!(small, "{\n  \"output\": \"short\"\n}");
    assert_eq!(
        response_tokens("grep", "abcd"),
        5,
        "(4 + 17) / 4 = 5.25, floored"
    );
}

#[test]
fn a_json_string_is_measured_as_the_string_built() {
    let texts = [
        "",
        "plain",
        "quote \" back\\slash",
        "lines\nand\ttabs\r\u{8}\u{c}",
        "controls \u{0}\u{1}\u{1f} del \u{7f}",
        "ü é 😀 𝄞 中文",
    ];
    for t in texts {
        assert_eq!(
            json_string_utf16_len(t),
            utf16_len(&json_string(t)),
            "{t:?}"
        );
        let built = format!("{{\"output\":{}}}", json_string(t));
        assert_eq!(
            response_tokens("grep", t),
            ((utf16_len("grep") + utf16_len(&built)) as f64 / 4.0).floor() as usize,
            "{t:?}"
        );
    }
}

/// A prunable output as (message and block, tool, tokens).
type Seen = ((usize, usize), String, usize);

/// The scan's prunable outputs and total, comparable.
fn scanned(scan: &(Vec<Prunable>, usize)) -> (Vec<Seen>, usize) {
    let list = scan.0.iter().map(|p| (p.at, p.tool.clone(), p.tokens));
    (list.collect(), scan.1)
}

/// The scan keeps what it measured of each result (tag, size) by the
/// string's address and length: at every call of a growing history that
/// is masked several times, replaced once with notice and once without,
/// the kept scan equals a scan by a policy that measured nothing.
#[test]
fn the_kept_sizes_scan_equals_a_fresh_scan_at_every_call() {
    let fs = MemFs::new();
    let mut p = GeminiCliMask::default();
    let mut h = vec![Message::user_text("fix the parser")];
    let mut masking_calls = 0;
    for t in 0..40 {
        let id = format!("c{t}");
        let tool = if t % 3 == 0 { SHELL_TOOL_NAME } else { "grep" };
        h.push(call(&id, tool));
        h.push(resp(&id, t % 5 + 1));
        if t == 20 {
            h = h.clone();
            p.history_replaced();
        }
        if t == 30 {
            h = h.clone();
        }
        let end = h
            .iter()
            .rposition(|m| m.role == Role::Assistant)
            .map_or(0, |i| i + 1);
        let fresh = GeminiCliMask::default().scan(&h, end);
        assert_eq!(scanned(&p.scan(&h, end)), scanned(&fresh), "call {t}");
        let out = run(&mut p, &mut h, &fs);
        masking_calls += usize::from(!masked(&out).is_empty());
    }
    assert!(masking_calls >= 3, "{masking_calls} calls masked");
}
