//! Derived line by line from Amp CLI's `dist/main.js` (npm
//! `@sourcegraph/amp` 0.0.1769314944-g5070a1): `If`, `js4`, `ws4`, `Us4`,
//! `CZ`, `qz8`. The CLI needs Amp's server to run a handoff, so no upstream
//! run produced these; each expected value is worked out from that code.

use super::files::{attached, choose, estimated_tokens, mentioned, touched, Touched};
use super::*;
use crate::policy::model::Scripted;
use crate::tokens::TokenCounter;
use serde_json::json;

fn call(id: &str, name: &str, input: serde_json::Value) -> Message {
    Message::assistant(vec![Block::ToolUse {
        id: id.into(),
        name: name.into(),
        input: input.into(),
    }])
}

fn result(id: &str, content: &str) -> Message {
    Message::tool_results(vec![(id.into(), content.into())])
}

fn file(path: &str, content: Option<&str>) -> Touched {
    Touched {
        path: path.into(),
        content: content.map(String::from),
    }
}

#[test]
fn the_trigger_is_the_first_warning_of_the_model_input_limit() {
    // 200,000 − 32,000 = 168,000; 0.8 of it.
    assert_eq!(Switches::default().handoff_at(), Some(134_400));
    let at = |window, level: &str| {
        Switches {
            contextWindow: window,
            maxOutputTokens: 0,
            threshold: level.into(),
        }
        .handoff_at()
    };
    assert_eq!(at(100_000, "danger"), Some(95_000));
    assert_eq!(at(400_000, "recommendation"), Some(280_000));
    assert_eq!(at(1_000_000, "recommendation"), Some(200_000));
    assert_eq!(at(1_000_000, "warning"), Some(800_000));
    assert_eq!(at(1_000_000, "full"), None);
}

#[test]
fn the_model_is_asked_with_the_prompt_the_goal_and_the_tool() {
    let p = model_prompt("add teams");
    assert!(p.starts_with("Extract relevant context from the conversation above for continuing this work. Write from my perspective (first person: \"I did...\", \"I told you...\").\n\nConsider"));
    // The one line indented with spaces keeps three after the dedent of one tab.
    assert!(p.contains("\n   - What files did I already tell you"));
    assert!(p.ends_with("Use workspace-relative paths for files.\n\nMy request:\n\nadd teams\n\nUse the create_handoff_context tool to extract relevant information and files."));
}

#[test]
fn files_are_sized_at_three_and_a_half_bytes_a_token_capped() {
    assert_eq!(estimated_tokens(35), 10);
    assert_eq!(estimated_tokens(36), 11, "rounded up");
    // 32,768 / 3.5 = 9,362.3 → 9,363, whatever the size past the cap.
    assert_eq!(estimated_tokens(70_000), 9_363);
    // `@([^\s@]+)`: a comma stays in the path, an `@` ends it.
    assert_eq!(
        mentioned("fix @src/a.rs and @b.rs, then @c@d"),
        ["src/a.rs", "b.rs,", "c", "d"]
    );
}

#[test]
fn the_touched_files_come_newest_first_with_their_newest_content() {
    let h = vec![
        Message::user_text("go"),
        call("r1", "Read", json!({"file_path": "src/a.rs"})),
        result("r1", "old a"),
        call(
            "w1",
            "create_file",
            json!({"path": "src/b.rs", "content": "b"}),
        ),
        result("w1", "ok"),
        call(
            "e1",
            "edit_file",
            json!({"path": "src/c.rs", "old_str": "x"}),
        ),
        result("e1", "ok"),
        call("r2", "Read", json!({"path": "src/a.rs"})),
        result("r2", "new a"),
        call("b1", "Bash", json!({"command": "ls"})),
        result("b1", "a b c"),
    ];
    assert_eq!(
        touched(&h),
        [
            file("src/a.rs", Some("new a")),
            file("src/c.rs", None),
            file("src/b.rs", Some("b")),
        ]
    );
}

#[test]
fn files_are_mentioned_while_the_budget_lasts_and_named_after() {
    let big = "x".repeat(70_000);
    let t = vec![
        file("one", Some(&big)),
        file("two", Some(&big)),
        file("three", Some(&big)),
        file("gone", None),
        file("four", Some("small")),
    ];
    // 25,000 − 9,363 − 9,363 = 6,274 < 9,363: "three" is named; "four"
    // (2 tokens) still fits; "gone" cannot be sized and is left out.
    let c = choose("continue", &t);
    let mentioned: Vec<&str> = c.mention.iter().map(|t| t.path.as_str()).collect();
    assert_eq!(mentioned, ["one", "two", "four"]);
    assert_eq!(c.named, ["three"]);
    // The goal's mentions go first; ten files at most.
    let many: Vec<Touched> = (0..12).map(|i| file(&format!("f{i}"), Some("c"))).collect();
    let c = choose("look at @f11", &many);
    let order: Vec<&str> = c.mention.iter().map(|t| t.path.as_str()).collect();
    assert_eq!(
        order,
        ["f11", "f0", "f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8"]
    );
}

#[test]
fn attached_files_are_fenced_by_base_name_with_numbered_lines() {
    let a = attached(&[
        file("src/a.rs", Some("fn a() {}\n\nend\n")),
        file("b", Some("x")),
    ]);
    assert_eq!(
        a,
        "# Attached Files\n\n```a.rs\n1: fn a() {}\n2: \n3: end\n```\n```b\n1: x\n```\n\n"
    );
}

fn prepare(p: &mut AmpHandoff, h: &mut Vec<Message>, model: &mut Scripted) -> Prepared {
    PolicyCtx::with_test("/run/amp", model, |ctx| p.prepare(h, ctx).unwrap())
}

/// A thread that read `src/lib.rs` and ran a command.
fn thread() -> Vec<Message> {
    vec![
        Message::user_text("make the parser strict"),
        call("r1", "Read", json!({"path": "src/lib.rs"})),
        result("r1", "pub fn parse() {}\n"),
        call("b1", "Bash", json!({"command": "cargo test"})),
        result("b1", &"test output\n".repeat(40)),
    ]
}

#[test]
fn a_handoff_starts_a_new_thread_with_the_prompt_and_files() {
    let mut p = AmpHandoff::default();
    let mut h = thread();
    let mut quiet = Scripted::default();
    assert!(
        prepare(&mut p, &mut h, &mut quiet).events.is_empty(),
        "below the warning"
    );
    p.switches.contextWindow =
        crate::tokens::Approx.count_messages(&h) + p.switches.maxOutputTokens;
    // 0.8 of the limit is now reached.
    let out = prepare(
        &mut p,
        &mut h,
        &mut Scripted::replies(["- I read src/lib.rs"]),
    );
    assert_eq!(
        out.events,
        [PolicyEvent::Summarised {
            replaced: 5,
            kept: 0,
            archive: None
        }]
    );
    let want = Message::user_blocks(vec![
        Block::Text {
            text: "# Attached Files\n\n```lib.rs\n1: pub fn parse() {}\n```\n\n".into(),
        },
        Block::Text {
            text: "Continuing work from thread T-ctxlab-0. When you lack specific information you can use read_thread to get it.\n\n@src/lib.rs\n\n- I read src/lib.rs\n\nmake the parser strict".into(),
        },
    ]);
    assert_eq!(out.request, std::slice::from_ref(&want));
    assert_eq!(h, [want], "the thread is replaced");
    // The reply and a new prompt arrive: the new prompt is the next goal, the
    // handoff message never is.
    h.push(Message::assistant(vec![Block::Text { text: "ok".into() }]));
    h.push(Message::user_text("now the lexer"));
    p.switches.contextWindow = 1_000_000;
    prepare(&mut p, &mut h, &mut Scripted::default());
    assert_eq!(p.goal, "now the lexer");
}

#[test]
fn a_failed_handoff_leaves_the_thread_as_it_was() {
    let mut p = AmpHandoff::default();
    p.switches.contextWindow = p.switches.maxOutputTokens + 1;
    let mut h = thread();
    let out = prepare(&mut p, &mut h, &mut Scripted::default());
    assert_eq!(engine_kinds(&out), ["model_failed"]);
    assert_eq!(h, thread());
}

fn engine_kinds(out: &Prepared) -> Vec<&'static str> {
    out.events
        .iter()
        .map(crate::policy::engine::event_kind)
        .collect()
}

#[test]
fn a_variant_picks_the_warning_level() {
    use crate::policy::variant::parse;
    let mut p = AmpHandoff::default();
    let (_, set) = parse("amp-handoff:threshold=danger").unwrap();
    p.configure(&set).unwrap();
    assert_eq!(p.switches.handoff_at(), Some(159_600));
    let (_, bad) = parse("amp-handoff:threshold=full").unwrap();
    assert!(p.configure(&bad).unwrap_err().contains("recommendation"));
    assert_eq!(p.switches.threshold, "danger", "unchanged on an error");
}
