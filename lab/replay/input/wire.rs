//! A request in a provider's wire shape, for dumps: Anthropic Messages (the
//! lab's own message model, serialised as it is) or OpenAI Chat
//! Completions (each tool call a `tool_calls` entry with its arguments as a
//! JSON string, each tool result a `tool` message).

use serde_json::{json, Value};

use crate::message::{Block, Content, Message, Role};

/// Which provider's request shape a dump writes.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    clap::ValueEnum,
    serde::Serialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Wire {
    /// Anthropic Messages: `{"messages": [{"role", "content": [blocks]}]}`.
    #[default]
    Anthropic,
    /// OpenAI Chat Completions: `{"messages": [{"role", "content", "tool_calls"}]}`.
    Openai,
}

/// `--wire`: a provider's shape, or the session's own (`auto`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum WireChoice {
    /// OpenAI Chat for sessions recorded in an OpenAI shape (OpenAI
    /// messages, SWE-agent trajectories, mini-swe-agent), else Anthropic.
    #[default]
    Auto,
    /// Always Anthropic Messages.
    Anthropic,
    /// Always OpenAI Chat Completions.
    Openai,
}

impl WireChoice {
    /// The shape for a session of `format`.
    pub fn for_format(self, format: crate::import::TranscriptFormat) -> Wire {
        use crate::import::TranscriptFormat as F;
        match self {
            WireChoice::Anthropic => Wire::Anthropic,
            WireChoice::Openai => Wire::Openai,
            WireChoice::Auto => match format {
                F::OpenAi | F::Trajectories | F::MiniSweAgent => Wire::Openai,
                _ => Wire::Anthropic,
            },
        }
    }
}

/// The request body's `messages` in `wire`'s shape.
pub fn request(messages: &[Message], wire: Wire) -> Value {
    let messages: Vec<Value> = match wire {
        Wire::Anthropic => messages
            .iter()
            .map(|m| serde_json::to_value(m).expect("messages serialise"))
            .collect(),
        Wire::Openai => messages.iter().flat_map(openai).collect(),
    };
    json!({ "messages": messages })
}

/// One lab message as OpenAI Chat messages: a user message's tool results
/// become `tool` messages (in order, before its remaining text); an
/// assistant message's calls become `tool_calls`. Reasoning has no input
/// field in Chat Completions and is left out; an image is named in text.
fn openai(m: &Message) -> Vec<Value> {
    let blocks: Vec<Block> = match &m.content {
        Content::Text(t) => vec![Block::Text { text: t.clone() }],
        Content::Blocks(b) => b.clone(),
    };
    let mut out = Vec::new();
    let mut text = Vec::new();
    let mut calls = Vec::new();
    for b in blocks {
        match b {
            Block::Text { text: t } => text.push(t),
            Block::Image { source } => text.push(format!("[image: {source}]")),
            Block::Unlogged { what, tokens } => {
                text.push(crate::message::unlogged_text(&what, tokens))
            }
            Block::Thinking { .. } => {}
            Block::ToolUse { id, name, input } => calls.push(json!({
                "id": id,
                "type": "function",
                "function": {"name": name, "arguments": input.to_string()},
            })),
            Block::ToolResult {
                tool_use_id,
                content,
            } => out.push(json!({"role": "tool", "tool_call_id": tool_use_id, "content": content})),
        }
    }
    match m.role {
        Role::Assistant => {
            let mut msg = json!({"role": "assistant", "content": (!text.is_empty()).then(|| text.join("\n"))});
            if !calls.is_empty() {
                msg["tool_calls"] = Value::Array(calls);
            }
            out.push(msg);
        }
        Role::User if !text.is_empty() => {
            out.push(json!({"role": "user", "content": text.join("\n")}))
        }
        Role::User => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_shape_splits_results_and_carries_calls() {
        let msgs = vec![
            Message::user_text("go"),
            Message::assistant(vec![Block::ToolUse {
                id: "c1".into(),
                name: "bash".into(),
                input: json!({"command": "ls"}).into(),
            }]),
            Message::tool_results(vec![("c1".into(), "a\nb".into())]),
        ];
        let v = request(&msgs, Wire::Openai);
        let m = v["messages"].as_array().unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(
            m[1]["tool_calls"][0]["function"]["arguments"],
            "{\"command\":\"ls\"}"
        );
        assert_eq!(m[1]["content"], Value::Null);
        assert_eq!(
            (m[2]["role"].as_str(), m[2]["tool_call_id"].as_str()),
            (Some("tool"), Some("c1"))
        );
        let a = request(&msgs, Wire::Anthropic);
        assert_eq!(a["messages"][2]["content"][0]["type"], "tool_result");
    }
}
