//! The golden of `openai-server-compaction`, derived line by line from
//! OpenAI's compaction guide (no upstream code runs: the compaction is
//! server-side). Each test quotes the line it checks.

use serde_json::json;

use super::*;
use crate::message::Block;
use crate::policy::engine::{replay, Env, Session};
use crate::policy::model::Scripted;
use crate::policy::responses;
use crate::policy::validity;
use crate::tokens::TokenCounter;

/// Text of exactly `n` tokens under the `approx` counter (4 chars a token).
fn text(n: usize) -> String {
    "abcd".repeat(n)
}

fn at(threshold: usize) -> ServerCompaction {
    ServerCompaction {
        config: Switches {
            compact_threshold: threshold,
        },
        compactions: 0,
    }
}

/// One Codex-shaped step: a call and its output of `n` tokens.
fn step(id: &str, n: usize) -> [Message; 2] {
    [
        Message::assistant(vec![Block::ToolUse {
            id: id.into(),
            name: "shell".into(),
            input: json!({"command": ["cat", "f"]}).into(),
        }]),
        Message::tool_results(vec![(id.into(), text(n))]),
    ]
}

fn history() -> Vec<Message> {
    let mut h = vec![Message::user_text("fix the failing test")];
    h.extend(step("call_1", 300));
    h.extend(step("call_2", 300));
    h
}

/// `prepare` with the scripted replies and `envelope` tokens of instructions.
fn prepare(
    p: &mut ServerCompaction,
    h: &mut Vec<Message>,
    model: &mut Scripted,
    envelope: usize,
) -> Prepared {
    PolicyCtx::with_test("/run/osc", model, |ctx| {
        ctx.envelope = envelope;
        p.prepare(h, ctx).unwrap()
    })
}

#[test]
fn under_the_threshold_the_input_is_sent_as_it_is() {
    // "When the rendered token count crosses the configured threshold, the
    // server runs server-side compaction": not before.
    let mut h = history();
    let n = crate::tokens::Approx.count_messages(&h);
    let mut p = at(n);
    let mut model = Scripted::default();
    let got = prepare(&mut p, &mut h, &mut model, 0);
    assert_eq!(got.request, history());
    assert_eq!(got.events, vec![]);
    assert_eq!(h, history());
}

#[test]
fn the_rendered_count_includes_instructions_and_tools() {
    // "rendered token count": the envelope (instructions, tools) counts.
    let mut h = history();
    let n = crate::tokens::Approx.count_messages(&h);
    let mut p = at(n);
    let mut model = Scripted::replies(["user: fix the failing test"]);
    let got = prepare(&mut p, &mut h, &mut model, 1);
    assert_eq!(got.events.len(), 1, "{:?}", got.events);
}

#[test]
fn past_the_threshold_the_input_becomes_one_compaction_item() {
    // "the server triggers a compaction pass, emits a compaction output item
    // in the same stream, and prunes context before continuing inference";
    // "you can drop items that came before the most recent compaction item".
    let mut h = history();
    let mut p = at(500);
    let mut model = Scripted::replies(["SUMMARY ONE"]);
    let got = prepare(&mut p, &mut h, &mut model, 0);
    let item = compaction_message("SUMMARY ONE");
    assert_eq!(got.request, vec![item.clone()]);
    assert_eq!(h, vec![item]);
    assert_eq!(
        got.events,
        vec![PolicyEvent::Summarised {
            replaced: 5,
            kept: 0,
            archive: None,
        }]
    );
    assert_eq!(p.compactions, 1);
    // The item is one the Responses rules accept, as is every request.
    assert_eq!(responses::check(&got.request), vec![]);
    assert_eq!(validity::check(&got.request), vec![]);
}

#[test]
fn later_calls_append_to_the_item_and_a_second_compaction_extends_it() {
    // "For stateless input-array chaining, append output items as usual";
    // "The returned compaction item carries forward key prior state".
    let mut h = history();
    let mut p = at(500);
    let mut model = Scripted::replies(["SUMMARY ONE", "SUMMARY TWO"]);
    prepare(&mut p, &mut h, &mut model, 0);
    h.extend(step("call_3", 100));
    let got = prepare(&mut p, &mut h, &mut model, 0);
    assert_eq!(got.events, vec![], "under the threshold again");
    assert_eq!(got.request.len(), 3);
    assert_eq!(compaction_content(&got.request[0]), Some("SUMMARY ONE"));
    assert_eq!(responses::check(&got.request), vec![]);
    h.extend(step("call_4", 600));
    let got = prepare(&mut p, &mut h, &mut model, 0);
    assert_eq!(got.request, vec![compaction_message("SUMMARY TWO")]);
    assert_eq!(p.compactions, 2);
}

#[test]
fn the_previous_item_is_passed_as_the_summary_to_extend() {
    // The extractive model shows what it was given: the previous item's text
    // first, then the salient lines of what followed it (not the item again).
    let mut h = vec![
        compaction_message("user: earlier goal"),
        Message::user_text("now the docs"),
    ];
    let mut p = at(1);
    let mut model = crate::policy::model::Extractive::default();
    let got = PolicyCtx::with_test("/run/osc", &mut model, |ctx| {
        p.prepare(&mut h, ctx).unwrap()
    });
    assert_eq!(
        compaction_content(&got.request[0]),
        Some("user: earlier goal\nuser: now the docs")
    );
}

#[test]
fn a_failed_compaction_sends_the_input_whole() {
    let mut h = history();
    let mut p = at(500);
    let mut model = Scripted::default();
    let got = prepare(&mut p, &mut h, &mut model, 0);
    assert_eq!(got.request, history());
    assert!(matches!(
        got.events.as_slice(),
        [PolicyEvent::ModelFailed {
            role: "summary",
            ..
        }]
    ));
    assert_eq!(p.compactions, 0);
}

#[test]
fn the_threshold_is_a_variant_and_defaults_to_codex_s_limit() {
    assert_eq!(DEFAULT_COMPACT_THRESHOLD, 244_800);
    let p = crate::list::make(&format!("{NAME}:compact_threshold=9000")).unwrap();
    assert_eq!(
        p.info().constants["context_management"][0],
        json!({"type": "compaction", "compact_threshold": 9000})
    );
    assert!(p.sends_responses(), "a variant still sends /responses");
    let Err(err) = crate::list::make(&format!("{NAME}:threshold=9")) else {
        panic!("an unknown switch is refused");
    };
    assert!(err.to_string().contains("threshold"), "{err}");
}

#[test]
fn a_replay_checks_its_requests_against_the_responses_rules() {
    // A reasoning item cut off from its reply: the Responses rules reject
    // it, the Anthropic and Chat rules do not; the engine applies the
    // Responses rules to this policy's requests only.
    let messages = vec![
        Message::user_text("go"),
        Message::assistant(vec![Block::Thinking {
            thinking: "hm".into(),
        }]),
        Message::user_text("well?"),
        Message::assistant(vec![Block::Text { text: "ok".into() }]),
    ];
    let session = Session {
        name: "cut-off",
        messages: &messages,
        times_ms: None,
    };
    let mut none = crate::policy::none::NoCompaction;
    let base = replay(&mut none, session, &mut Env::default()).unwrap();
    assert_eq!(base.invalid_requests, 0);
    let run = replay(
        &mut ServerCompaction::default(),
        session,
        &mut Env::default(),
    )
    .unwrap();
    assert_eq!(run.invalid_requests, 1);
    let v = &run.calls[1].violations;
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].kind, validity::Kind::ReasoningWithoutFollowingItem);
    assert_eq!(v[0].provider, validity::Provider::OpenAiResponses);
}

#[test]
fn an_unanswered_call_and_what_follows_it_stay_after_the_item() {
    // A recorded reply split over two messages: the first call is answered
    // only after the second message, so compacting before that second call
    // keeps the first call's message and everything after it.
    let mut h = history();
    let [call_3, out_3] = step("call_3", 10);
    h.push(call_3);
    let mut p = at(500);
    let mut model = Scripted::replies(["SUMMARY ONE"]);
    let got = prepare(&mut p, &mut h, &mut model, 0);
    assert_eq!(
        got.request,
        vec![compaction_message("SUMMARY ONE"), h[1].clone()]
    );
    assert_eq!(
        got.events,
        vec![PolicyEvent::Summarised {
            replaced: 5,
            kept: 1,
            archive: None,
        }]
    );
    h.push(out_3);
    assert_eq!(responses::check(&h), vec![]);
    // Nothing before the pending call: nothing to compact.
    let mut h = vec![step("call_9", 900)[0].clone()];
    let mut p = at(1);
    let got = prepare(&mut p, &mut h, &mut Scripted::default(), 0);
    assert_eq!(got.events, vec![]);
}

#[test]
fn an_empty_summary_still_makes_an_item_with_content() {
    let mut h = history();
    let mut p = at(500);
    let mut model = Scripted::replies([""]);
    let got = prepare(&mut p, &mut h, &mut model, 0);
    assert_eq!(compaction_content(&got.request[0]), Some(EMPTY_SUMMARY));
    assert_eq!(responses::check(&got.request), vec![]);
}
