//! Tests across the zoo's ports. A user message after tool results, in the lab's history and in the
//! LangChain and AI SDK message lists the conversions build: a new prompt or
//! an interrupt notice that was a message of its own stays one, and text that
//! sat beside the results in one message goes back into it. Either way the
//! request has as many messages as `none`'s.

use crate::list;
use crate::message::{Block, Content, Message};
use crate::policy::engine::{self, Env, Session};

fn call(id: &str) -> Message {
    Message::assistant(vec![Block::ToolUse {
        id: id.into(),
        name: "bash".into(),
        input: serde_json::json!({ "command": "ls" }).into(),
    }])
}

fn result(id: &str) -> Message {
    Message::tool_results(vec![(id.into(), format!("{id} output"))])
}

/// A user message of text blocks, as the importers read one.
fn user(text: &str) -> Message {
    Message::user_blocks(vec![Block::Text { text: text.into() }])
}

/// The three shapes, each ending with a model reply so that the last
/// request holds the user message after the results.
fn sessions() -> Vec<(&'static str, Vec<Message>)> {
    let mut beside = result("c1");
    if let Content::Blocks(b) = &mut beside.content {
        b.push(Block::Text {
            text: "and now the tests".into(),
        });
    }
    let reply = || Message::assistant(vec![Block::Text { text: "ok".into() }]);
    let task = || Message::user_text("task");
    vec![
        (
            "prompt in the results' message",
            vec![task(), call("c1"), beside, reply()],
        ),
        (
            "new prompt as its own message",
            vec![
                task(),
                call("c1"),
                result("c1"),
                user("and now the tests"),
                reply(),
            ],
        ),
        (
            "interrupt notice as its own message",
            vec![
                task(),
                call("c1"),
                result("c1"),
                user("[Request interrupted by user for tool use]"),
                reply(),
            ],
        ),
    ]
}

/// Message counts of every request of `policy` on `messages`.
fn request_sizes(policy: &str, messages: &[Message]) -> Vec<usize> {
    let mut p = list::make(policy).unwrap();
    let session = Session {
        name: "split",
        messages,
        times_ms: None,
    };
    let run = engine::replay(p.as_mut(), session, &mut Env::default()).unwrap();
    run.calls.iter().map(|c| c.messages).collect()
}

#[test]
fn a_user_message_after_results_keeps_its_own_place_in_the_request() {
    for (shape, messages) in sessions() {
        let want = request_sizes("none", &messages);
        for policy in [
            "langchain-clear-tool-uses",
            "langchain-summarization",
            "vercel-prune-messages",
        ] {
            assert_eq!(request_sizes(policy, &messages), want, "{policy}, {shape}");
        }
    }
}

#[test]
fn the_conversions_give_every_shape_back_unchanged() {
    use super::langchain::{from_lc, to_lc};
    use super::vercel::PruneMessages;
    for (shape, messages) in sessions() {
        assert_eq!(from_lc(&to_lc(&messages)), messages, "LangChain, {shape}");
        let pruned = PruneMessages::default()
            .apply(&messages, &mut Vec::new())
            .unwrap();
        assert_eq!(pruned, messages, "AI SDK, {shape}");
    }
}
