//! [`ctxlab_policy::shape`]'s note on a policy with nothing to act on,
//! checked on real ports (they live in this crate, one floor above the
//! shape rules).

use crate::list;
use crate::message::{Block, Message};
use crate::policy::engine::{replay, Env, Session};
use crate::policy::render;
use ctxlab_core::render::Format;

fn reply(text: &str) -> Message {
    Message::assistant(vec![Block::Text { text: text.into() }])
}

/// A trajectory read as plain messages: every observation is a user
/// message, no tool call or result anywhere.
fn plain_trajectory() -> Vec<Message> {
    let mut h = vec![Message::user_text("task")];
    for i in 0..12 {
        h.push(reply(&format!("run ls {i}")));
        h.push(Message::user_text(format!("observation {i}\n").repeat(50)));
    }
    h.push(reply("done"));
    h
}

/// The same steps as tool calls and results.
fn tool_trajectory() -> Vec<Message> {
    let mut h = vec![Message::user_text("task")];
    for i in 0..12 {
        let id = format!("c{i}");
        h.push(Message::assistant(vec![Block::ToolUse {
            id: id.clone(),
            name: "bash".into(),
            input: serde_json::json!({ "command": "ls" }).into(),
        }]));
        h.push(Message::tool_results(vec![(
            id,
            format!("observation {i}\n").repeat(50),
        )]));
    }
    h.push(reply("done"));
    h
}

fn table_of(policy: &str, messages: &[Message]) -> String {
    let mut p = list::make(policy).unwrap();
    let session = Session {
        name: "s",
        messages,
        times_ms: None,
    };
    let run = replay(p.as_mut(), session, &mut Env::default()).unwrap();
    render::runs(&[run], Format::Markdown)
}

#[test]
fn a_policy_with_nothing_to_act_on_says_so_on_its_row() {
    let note = "nothing to act on: the session has no tool results";
    for policy in [
        "swe-agent-mask-5",
        "openhands-observation-masking",
        "anthropic-clear-tool-uses",
        "langchain-clear-tool-uses",
        "opencode",
    ] {
        let plain = table_of(policy, &plain_trajectory());
        assert!(plain.contains(note), "{policy}:\n{plain}");
        let tools = table_of(policy, &tool_trajectory());
        assert!(!tools.contains("nothing to act on"), "{policy}:\n{tools}");
    }
    // Designs that act on any message get no such note, nor does `none`.
    for policy in ["none", "openhands-recent", "aider-chat-summary"] {
        let plain = table_of(policy, &plain_trajectory());
        assert!(!plain.contains("nothing to act on"), "{policy}:\n{plain}");
    }
}
