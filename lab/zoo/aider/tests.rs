//! The golden test against aider's own `ChatSummary` (fixture made by
//! `tests/golden/aider/generate.py`) and the policy's split of the history.

use serde_json::{json, Value};

use super::*;
use crate::message::Block;
use crate::policy::model::{ModelRole, Scripted};

/// Replies in order and records the text aider's `summarize_all` would send.
struct Recorder {
    replies: Vec<String>,
    sent: Vec<String>,
}

impl ModelRole for Recorder {
    fn name(&self) -> String {
        "recorder".into()
    }

    fn summarise(&mut self, req: &SummaryRequest<'_>) -> Result<String, ModelError> {
        assert_eq!(req.prompt, SUMMARIZE);
        // summarize_all: "# ROLE\n" + content, a newline added if missing.
        let mut content = String::new();
        for m in req.messages {
            let role = match m.role {
                Role::User => "USER",
                Role::Assistant => "ASSISTANT",
            };
            content.push_str(&format!("# {role}\n{}", m.text()));
            if !content.ends_with('\n') {
                content.push('\n');
            }
        }
        self.sent.push(content);
        Ok(self.replies.remove(0))
    }
}

fn with_ctx<T>(model: &mut dyn ModelRole, f: impl FnOnce(&mut PolicyCtx<'_>) -> T) -> T {
    PolicyCtx::with_test("/run/aider", model, f)
}

#[test]
fn golden_summaries_equal_aider() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/golden/aider/expected.json"
    );
    let fx: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    for (name, case) in fx.as_object().unwrap() {
        let messages: Vec<Message> = serde_json::from_value(case["messages"].clone()).unwrap();
        let want: Vec<Message> = serde_json::from_value(case["result"].clone()).unwrap();
        let cfg = ChatSummary {
            max_tokens: case["max_tokens"].as_u64().unwrap() as usize,
            max_input_tokens: case["max_input_tokens"].as_u64().map(|n| n as usize),
        };
        let mut model = Recorder {
            replies: serde_json::from_value(case["replies"].clone()).unwrap(),
            sent: Vec::new(),
        };
        let got = with_ctx(&mut model, |ctx| cfg.summarize(&messages, ctx)).unwrap();
        assert_eq!(got, want, "{name}");
        let sent: Vec<String> = serde_json::from_value(case["sent"].clone()).unwrap();
        assert_eq!(model.sent, sent, "{name}: summariser input");
    }
}

fn exchange(i: usize, out_len: usize) -> Vec<Message> {
    vec![
        Message::user_text(format!("request {i}")),
        Message::assistant(vec![Block::ToolUse {
            id: format!("c{i}"),
            name: "bash".into(),
            input: json!({ "command": "ls" }).into(),
        }]),
        Message::tool_results(vec![(format!("c{i}"), "o".repeat(out_len))]),
        Message::assistant(vec![Block::Text {
            text: format!("done {i}"),
        }]),
    ]
}

#[test]
fn only_finished_exchanges_are_summarised_and_pairs_stay_whole() {
    let mut history: Vec<Message> = (0..4).flat_map(|i| exchange(i, 400)).collect();
    history.extend(exchange(4, 10).into_iter().take(3));
    let current = history[16..].to_vec();
    let mut pol = Aider {
        config: ChatSummary {
            max_tokens: 300,
            max_input_tokens: None,
        },
    };
    let mut model = Scripted::replies(["older work"]);
    let got = with_ctx(&mut model, |ctx| pol.prepare(&mut history, ctx)).unwrap();
    assert_eq!(
        got.request[0].text(),
        format!("{SUMMARY_PREFIX}older work"),
        "the summary opens the history"
    );
    assert!(
        got.request.ends_with(&current),
        "the current exchange is untouched"
    );
    assert_eq!(
        got.request, history,
        "a rewriting design: request == history"
    );
    // Every result in the request still follows its call.
    for (i, m) in got.request.iter().enumerate() {
        for id in m.tool_result_ids() {
            assert!(
                i > 0 && got.request[i - 1].tool_use_ids().contains(&id),
                "{id}"
            );
        }
    }
    assert!(matches!(got.events[0], PolicyEvent::Summarised { .. }));
}

#[test]
fn a_failed_summary_keeps_the_history() {
    let mut history: Vec<Message> = (0..4).flat_map(|i| exchange(i, 400)).collect();
    history.push(Message::user_text("next"));
    let before = history.clone();
    let mut pol = Aider {
        config: ChatSummary {
            max_tokens: 300,
            max_input_tokens: None,
        },
    };
    let mut model = Scripted::default();
    let got = with_ctx(&mut model, |ctx| pol.prepare(&mut history, ctx)).unwrap();
    assert_eq!(history, before);
    assert!(matches!(got.events[0], PolicyEvent::ModelFailed { .. }));
}
