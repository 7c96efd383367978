//! Whether a session has anything of the kind a policy acts on. A policy
//! that finds nothing (SWE-agent masking on a trajectory whose observations
//! are plain user messages) sends exactly `none`'s requests; the replay says
//! so in a note on that row instead of leaving the reader to guess.

use crate::message::{Block, Message};

/// What a policy's mechanism works on. A design that can act on any message
/// (summarising, windowing, token budgets) always has something; one that
/// works only on tool output or reasoning may find none in a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActsOn {
    /// Any message: every session has some.
    Messages,
    /// Tool results (`tool_result` blocks): clearing, masking, truncating
    /// or pruning outputs.
    ToolResults,
    /// Tool calls with their results, or reasoning (`thinking` blocks).
    ToolCallsOrReasoning,
    /// Reasoning (`thinking` blocks) only.
    Reasoning,
}

impl ActsOn {
    /// What a session lacks when it has nothing of this kind, in words;
    /// `None` when it has some (or when anything will do).
    pub fn missing(self, messages: &[Message]) -> Option<&'static str> {
        let any = |f: fn(&Block) -> bool| messages.iter().flat_map(Message::blocks).any(f);
        let results = |b: &Block| matches!(b, Block::ToolResult { .. });
        let calls = |b: &Block| matches!(b, Block::ToolUse { .. } | Block::ToolResult { .. });
        let thinking = |b: &Block| matches!(b, Block::Thinking { .. });
        match self {
            ActsOn::Messages => None,
            ActsOn::ToolResults => (!any(results)).then_some("tool results"),
            ActsOn::ToolCallsOrReasoning => {
                (!any(calls) && !any(thinking)).then_some("tool calls, tool results or reasoning")
            }
            ActsOn::Reasoning => (!any(thinking)).then_some("reasoning blocks"),
        }
    }

    /// The note on a run's row when the session has nothing of this kind.
    pub fn note(self, messages: &[Message]) -> Option<String> {
        self.missing(messages).map(|what| {
            format!("nothing to act on: the session has no {what}, so every request is none's")
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::message::{Block, Message};
    use crate::policy::engine::{replay, Env, Session};
    use crate::policy::{list, render};
    use crate::render::Format;

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
                input: serde_json::json!({ "command": "ls" }),
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
}
