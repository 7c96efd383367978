//! The golden tests against Roo Code's own TypeScript (fixture made by
//! `tests/golden/roo_code/generate.mjs` at RooCodeInc/Roo-Code@d1e74cb) and
//! unit tests of the trigger, the kept messages, the summary, the refusals
//! and the fallback truncation.

use serde_json::{json, Value};

use super::condense::summarize;
use super::*;
use crate::message::{Block, Content, Role};
use crate::policy::model::{ModelError, ModelRole, Scripted};
use crate::policy::validity;
use crate::policy::SummaryRequest;

/// Replies in order, the last one repeated (as the generator's handler), and
/// records every summary call's messages.
struct Recorder {
    replies: Vec<String>,
    sent: Vec<Vec<Message>>,
}

impl Recorder {
    fn new(replies: Vec<String>) -> Self {
        Recorder {
            replies,
            sent: Vec::new(),
        }
    }
}

impl ModelRole for Recorder {
    fn name(&self) -> String {
        "recorder".into()
    }

    fn summarise(&mut self, req: &SummaryRequest<'_>) -> Result<String, ModelError> {
        assert_eq!(req.prompt, SUMMARY_PROMPT);
        assert!(req.previous.is_none());
        self.sent.push(req.messages.to_vec());
        match self.replies.len() {
            0 => Err(ModelError("no reply".into())),
            1 => Ok(self.replies[0].clone()),
            _ => Ok(self.replies.remove(0)),
        }
    }
}

fn with_ctx<T>(model: &mut dyn ModelRole, f: impl FnOnce(&mut PolicyCtx<'_>) -> T) -> T {
    PolicyCtx::with_test("/run/roo", model, f)
}

fn fixture() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/golden/roo_code/expected.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn messages(v: &Value) -> Vec<Message> {
    serde_json::from_value(v.clone()).unwrap()
}

/// The generator's tag strings for the stored history.
fn tags(stored: &[ApiMessage]) -> Vec<String> {
    let at = |f: &dyn Fn(&ApiMessage) -> bool| stored.iter().position(f).unwrap();
    stored
        .iter()
        .map(|m| {
            let mut t = match m.message.role {
                Role::User => "user".to_string(),
                Role::Assistant => "assistant".to_string(),
            };
            if m.is_summary {
                t += " summary";
            }
            if m.is_truncation_marker {
                t += " marker";
            }
            if let Some(p) = m.condense_parent {
                t += &format!(" condensed:{}", at(&|x| x.condense_id == Some(p)));
            }
            if let Some(p) = m.truncation_parent {
                t += &format!(" truncated:{}", at(&|x| x.truncation_id == Some(p)));
            }
            t
        })
        .collect()
}

fn task() -> Message {
    Message::user_text("task: fix the parser, keep the API stable")
}

/// The generator's `step(k, chars)`: a call and its result.
fn step(k: usize, chars: usize) -> Vec<Message> {
    let id = format!("call_{k}");
    let out: String = format!("out {k} ")
        .repeat(chars)
        .chars()
        .take(chars)
        .collect();
    vec![
        Message::assistant(vec![
            Block::Text {
                text: format!("step {k}"),
            },
            Block::ToolUse {
                id: id.clone(),
                name: "bash".into(),
                input: json!({ "cmd": format!("run {k}") }).into(),
            },
        ]),
        Message::tool_results(vec![(id, out)]),
    ]
}

fn config(case: &Value) -> AutoCondense {
    AutoCondense {
        auto_condense_context: case["auto_condense_context"].as_bool().unwrap(),
        auto_condense_context_percent: case["auto_condense_context_percent"].as_f64().unwrap(),
        profile_threshold: case["profile_threshold"].as_f64(),
        context_window: case["context_window"].as_u64().unwrap() as usize,
        max_tokens: case["max_tokens"].as_u64().unwrap() as usize,
    }
}

fn check_step(
    name: &str,
    k: usize,
    want: &Value,
    policy: &RooCode,
    got: &Prepared,
    sent: &[Vec<Message>],
) {
    let at = format!("{name} call {k}");
    assert_eq!(policy.last_error.as_deref(), want["error"].as_str(), "{at}");
    let removed: usize = got
        .events
        .iter()
        .map(|e| match e {
            PolicyEvent::Dropped { messages, .. } => *messages,
            _ => 0,
        })
        .sum();
    assert_eq!(
        removed as u64,
        want["messages_removed"].as_u64().unwrap(),
        "{at}"
    );
    let want_sent: Vec<Vec<Message>> = serde_json::from_value(want["summarised"].clone()).unwrap();
    assert_eq!(sent, want_sent.as_slice(), "{at}: summary call");
    match want.get("request") {
        Some(r) => {
            assert_eq!(got.request, messages(r), "{at}: request");
            let want_tags: Vec<String> = serde_json::from_value(want["stored"].clone()).unwrap();
            assert_eq!(tags(&policy.stored), want_tags, "{at}: stored tags");
        }
        None => assert_eq!(
            got.request.len() as u64,
            want["request_len"].as_u64().unwrap(),
            "{at}"
        ),
    }
    assert!(
        validity::check(&got.request).is_empty(),
        "{at}: provider rules"
    );
}

/// Every case's replay, call by call: the requests, the summary calls, the
/// refusal texts, the hidden counts and the tags equal upstream's.
#[test]
fn golden_replays_equal_roo_code() {
    let fx = fixture();
    for (name, case) in fx["cases"].as_object().unwrap() {
        let mut policy = RooCode {
            config: config(case),
            ..RooCode::default()
        };
        let mut model = Recorder::new(serde_json::from_value(case["replies"].clone()).unwrap());
        let chars = case["result_chars"].as_u64().unwrap() as usize;
        let mut history = Vec::new();
        for (k, want) in case["steps"].as_array().unwrap().iter().enumerate() {
            history.extend(if k == 0 { vec![task()] } else { step(k, chars) });
            let before = model.sent.len();
            let got = with_ctx(&mut model, |ctx| policy.prepare(&mut history, ctx)).unwrap();
            check_step(name, k, want, &policy, &got, &model.sent[before..]);
        }
    }
}

/// Direct `summarizeConversation` calls: the refusals, and the tags of a
/// condense whose kept messages follow an old summary.
#[test]
fn golden_summarize_equals_roo_code() {
    let fx = fixture();
    assert_eq!(fx["summary_prompt"].as_str().unwrap(), SUMMARY_PROMPT);
    for (name, case) in fx["summarize"].as_object().unwrap() {
        let flags: Vec<bool> = serde_json::from_value(case["is_summary"].clone()).unwrap();
        let stored: Vec<ApiMessage> = messages(&case["messages"])
            .into_iter()
            .zip(flags)
            .map(|(m, s)| ApiMessage {
                is_summary: s,
                condense_id: s.then_some(1),
                ..ApiMessage::from(m)
            })
            .collect();
        let mut model = Recorder::new(vec!["S".into()]);
        let got = with_ctx(&mut model, |ctx| summarize(&stored, 1_000_000_000, 2, ctx));
        match case["error"].as_str() {
            Some(e) => assert_eq!(got.unwrap_err().message, e, "{name}"),
            None => {
                let want: Vec<String> = serde_json::from_value(case["stored"].clone()).unwrap();
                assert_eq!(tags(&got.unwrap().stored), want, "{name}");
            }
        }
        let want_sent: Vec<Vec<Message>> =
            serde_json::from_value(case["summarised"].clone()).unwrap();
        assert_eq!(model.sent, want_sent, "{name}: summary call");
    }
}

fn small() -> AutoCondense {
    AutoCondense {
        context_window: 300,
        max_tokens: 30,
        ..AutoCondense::default()
    }
}

/// `manageContext`: `allowedTokens = 300 * (1 - 0.1) - 30 = 240`; the
/// condense test is `prevContextTokens > allowedTokens`, strictly.
#[test]
fn trigger_is_strictly_over_the_allowed_tokens() {
    let c = small();
    assert_eq!(c.allowed_tokens(), 240.0);
    assert!(!c.should_condense(240));
    assert!(c.should_condense(241));
    assert!(!c.over_allowed(240));
    assert!(c.over_allowed(241));
    // Defaults: 200 000 * 0.9 - 8 192 = 171 808 allowed; 100 % is never first.
    let d = AutoCondense::default();
    assert_eq!(d.allowed_tokens(), 171_808.0);
    assert!(!d.should_condense(171_808));
    assert!(d.should_condense(171_809));
}

/// `contextPercent >= effectiveThreshold` (inclusive), and the profile
/// threshold rules: -1 inherits, 5..=100 applies, anything else is ignored.
#[test]
fn percent_threshold_is_inclusive_and_profiles_are_checked() {
    let c = AutoCondense {
        auto_condense_context_percent: 50.0,
        ..small()
    };
    assert!(!c.should_condense(149));
    assert!(c.should_condense(150));
    for (profile, want) in [
        (-1.0, 50.0),
        (5.0, 5.0),
        (100.0, 100.0),
        (4.0, 50.0),
        (101.0, 50.0),
    ] {
        let p = AutoCondense {
            profile_threshold: Some(profile),
            ..c.clone()
        };
        assert_eq!(p.effective_threshold(), want, "profile {profile}");
    }
    let off = AutoCondense {
        auto_condense_context: false,
        ..c
    };
    assert!(!off.should_condense(1_000));
    assert!(off.over_allowed(1_000));
}

fn plain(ms: Vec<Message>) -> Vec<ApiMessage> {
    ms.into_iter().map(ApiMessage::from).collect()
}

fn history(steps: usize) -> Vec<Message> {
    let mut h = vec![task()];
    for k in 1..=steps {
        h.extend(step(k, 40));
    }
    h
}

/// `summarizeConversation`: the first message, an assistant summary with
/// the `tool_use` its first kept result answers, then the last
/// `N_MESSAGES_TO_KEEP` messages; the summary text is the trimmed reply.
#[test]
fn summary_is_placed_before_the_kept_three_with_the_call_they_answer() {
    let stored = plain(history(5));
    let mut model = Scripted::replies(["  \n1. Previous Conversation: parser\n\n"]);
    let done = with_ctx(&mut model, |ctx| summarize(&stored, 10_000, 7, ctx)).unwrap();
    let keep_start = stored.len() - N_MESSAGES_TO_KEEP;
    assert_eq!(done.stored.len(), stored.len() + 1);
    assert_eq!(
        done.stored[keep_start].message,
        Message::assistant(vec![
            Block::Text {
                text: "1. Previous Conversation: parser".into()
            },
            step(4, 40)[0].blocks()[1].clone(),
        ])
    );
    assert!(done.stored[keep_start].is_summary);
    assert_eq!(done.stored[keep_start + 1..], stored[keep_start..]);
    assert_eq!(
        (done.replaced, done.kept),
        (keep_start - 1, N_MESSAGES_TO_KEEP + 1)
    );
    let effective = effective_api_history(&done.stored);
    let request = messages_since_last_summary(&effective);
    assert_eq!(request[0], task());
    assert_eq!(request.len(), 2 + N_MESSAGES_TO_KEEP);
    assert!(validity::check(&request).is_empty());
}

/// Without a result among the kept messages the summary is a plain string,
/// as `buildCleanConversationHistory` sends a lone text block.
#[test]
fn summary_without_preserved_calls_is_plain_text() {
    let mut h = history(3);
    for (a, u) in [("done", "thanks"), ("ok", "bye")] {
        h.push(Message::assistant(vec![Block::Text { text: a.into() }]));
        h.push(Message::user_text(u));
    }
    let stored = plain(h);
    let mut model = Scripted::replies(["S"]);
    let done = with_ctx(&mut model, |ctx| summarize(&stored, 10_000, 1, ctx)).unwrap();
    let s = &done.stored[stored.len() - N_MESSAGES_TO_KEEP].message;
    assert_eq!(
        (s.role, &s.content),
        (Role::Assistant, &Content::Text("S".into()))
    );
}

/// The refusals, line for line: `messagesToSummarize.length <= 1` with at
/// most `N_MESSAGES_TO_KEEP + 1` messages is "not enough"; a summary among
/// the kept messages is "condensed recently"; an empty (trimmed) reply is
/// "failed"; a summary plus kept messages not smaller than before "grew".
#[test]
fn refusals_carry_upstream_texts() {
    let mut model = Scripted::replies([" \n", "S", "S"]);
    let four = plain(
        history(1)
            .into_iter()
            .chain([Message::user_text("x")])
            .collect(),
    );
    let err = with_ctx(&mut model, |ctx| summarize(&four, 10_000, 1, ctx)).unwrap_err();
    assert_eq!(
        (err.message.as_str(), err.model_called),
        (CONDENSE_NOT_ENOUGH_MESSAGES, false)
    );
    let mut recent = plain(history(3));
    recent[4].is_summary = true;
    recent[4].condense_id = Some(9);
    let err = with_ctx(&mut model, |ctx| summarize(&recent, 10_000, 1, ctx)).unwrap_err();
    assert_eq!(err.message, CONDENSED_RECENTLY);
    let six = plain(history(3));
    let err = with_ctx(&mut model, |ctx| summarize(&six, 10_000, 1, ctx)).unwrap_err();
    assert_eq!(
        (err.message.as_str(), err.model_called),
        (CONDENSE_FAILED, true)
    );
    // Kept 10 + 7 + 10 tokens, the summary 1 + 5 (the preserved call): 33
    // is not under 33 (`newContextTokens >= prevContextTokens`).
    let err = with_ctx(&mut model, |ctx| summarize(&six, 33, 1, ctx)).unwrap_err();
    assert_eq!(
        (err.message.as_str(), err.model_called),
        (CONDENSE_CONTEXT_GREW, true)
    );
    assert!(with_ctx(&mut model, |ctx| summarize(&six, 34, 1, ctx)).is_ok());
}

/// `truncateConversation(messages, 0.5)`: message 0 stays, then
/// `floor((visible - 1) * 0.5)` rounded down to even are hidden and the
/// marker goes before the first kept one.
#[test]
fn fallback_truncation_hides_an_even_count_after_the_first() {
    for (visible, hidden) in [
        (1, 0),
        (2, 0),
        (3, 0),
        (4, 0),
        (5, 2),
        (6, 2),
        (7, 2),
        (8, 2),
        (9, 4),
        (10, 4),
        (11, 4),
    ] {
        let mut stored = plain(history(5).into_iter().take(visible).collect());
        let got = truncate_conversation(&mut stored, TRUNCATION_FRACTION, 1);
        assert_eq!(got, hidden, "{visible} visible");
        if hidden == 0 {
            assert_eq!(stored.len(), visible);
            continue;
        }
        assert!(stored[0].truncation_parent.is_none());
        assert!(stored[1..=hidden]
            .iter()
            .all(|m| m.truncation_parent == Some(1)));
        assert_eq!(
            stored[hidden + 1].message,
            Message::user_text(truncation_marker(hidden))
        );
        assert!(stored[hidden + 1].is_truncation_marker);
        let request = messages_since_last_summary(&effective_api_history(&stored));
        assert_eq!(request.len(), visible - hidden + 1);
        // A history cut after a call is unanswered by construction; one that
        // ends with its result stays valid (the first kept is an assistant).
        if visible % 2 == 1 {
            assert!(validity::check(&request).is_empty(), "{visible} visible");
        }
    }
    let mut none: Vec<ApiMessage> = Vec::new();
    assert_eq!(truncate_conversation(&mut none, TRUNCATION_FRACTION, 1), 0);
}

/// A failing summary call: an event, the error kept, then the sliding
/// window when over the allowed tokens.
#[test]
fn failing_summary_call_falls_back_to_the_window() {
    let mut policy = RooCode {
        config: small(),
        ..RooCode::default()
    };
    let mut model = Scripted::default();
    let mut h = vec![task()];
    with_ctx(&mut model, |ctx| policy.prepare(&mut h, ctx)).unwrap();
    h = history(14);
    let got = with_ctx(&mut model, |ctx| policy.prepare(&mut h, ctx)).unwrap();
    assert!(
        matches!(&got.events[0], PolicyEvent::ModelFailed { role: "summary", outcome } if outcome.ends_with("sliding window truncation follows"))
    );
    assert!(matches!(
        got.events[1],
        PolicyEvent::Dropped { messages: 14, .. }
    ));
    assert_eq!(h.len(), 29, "the history stays whole");
    assert!(validity::check(&got.request).is_empty());
}

/// Bad input never panics: no messages, a zero window, odd roles.
#[test]
fn odd_input_does_not_panic() {
    let mut policy = RooCode {
        config: AutoCondense {
            context_window: 0,
            ..AutoCondense::default()
        },
        ..RooCode::default()
    };
    let mut model = Scripted::replies(["S"]);
    let mut h = Vec::new();
    for _ in 0..3 {
        with_ctx(&mut model, |ctx| policy.prepare(&mut h, ctx)).unwrap();
    }
    h = vec![Message::assistant(vec![Block::Text { text: "a".into() }]); 9];
    let got = with_ctx(&mut model, |ctx| policy.prepare(&mut h, ctx)).unwrap();
    assert!(!got.request.is_empty());
    h.truncate(2);
    with_ctx(&mut model, |ctx| policy.prepare(&mut h, ctx)).unwrap();
}

#[test]
fn info_lists_constants_and_differences() {
    let info = RooCode::default().info();
    assert_eq!(info.name, NAME);
    assert_eq!(info.constants["N_MESSAGES_TO_KEEP"], 3);
    assert_eq!(info.constants["TOKEN_BUFFER_PERCENTAGE"], 0.1);
    assert_eq!(info.constants["maxTokens"], 8192);
    assert!(!info.differences.is_empty());
    assert!(SUMMARY_PROMPT.starts_with("Your task is to create a detailed summary"));
    assert!(SUMMARY_PROMPT.ends_with("without any additional commentary or explanation."));
}

/// A user message after a user message joins it, results first, as Roo's
/// one user message per turn; assistants are never merged.
#[test]
fn consecutive_user_messages_are_stored_as_one() {
    let mut policy = RooCode::default();
    let mut h = history(1);
    // The words before the results: stored after them.
    h.insert(2, Message::user_text("also check the lexer"));
    h.push(Message::assistant(vec![Block::Text { text: "a".into() }]));
    h.push(Message::assistant(vec![Block::Text { text: "b".into() }]));
    let mut model = Scripted::default();
    let got = with_ctx(&mut model, |ctx| policy.prepare(&mut h, ctx)).unwrap();
    assert_eq!(got.request.len(), 5);
    assert_eq!(
        got.request[2].blocks(),
        &[
            Block::ToolResult {
                tool_use_id: "call_1".into(),
                content: "out 1 out 1 out 1 out 1 out 1 out 1 out ".into(),
            },
            Block::Text {
                text: "also check the lexer".into()
            },
        ]
    );
    assert!(validity::check(&got.request).is_empty());
}
