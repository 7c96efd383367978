//! The slice of a conversation the memory mechanisms read.
//!
//! Only the block kinds matter: recall and extraction read `text` blocks and
//! must not see `tool_result` content, even though tool results travel in
//! `user`-role messages.

use serde::{Deserialize, Serialize};

/// Who sent a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user, or the harness returning tool results.
    User,
    /// The main model.
    Assistant,
}

impl Role {
    /// Lower-case role name as in the course's dialogue text.
    pub fn name(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One content block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Block {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// A tool call by the model.
    ToolUse {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Arguments.
        input: serde_json::Value,
    },
    /// A tool result returned by the harness.
    ToolResult {
        /// The call it answers.
        tool_use_id: String,
        /// Output text.
        content: String,
    },
}

/// One message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Sender.
    pub role: Role,
    /// Content blocks.
    pub blocks: Vec<Block>,
}

impl Message {
    /// A text-only message.
    pub fn text(role: Role, text: impl Into<String>) -> Message {
        Message {
            role,
            blocks: vec![Block::Text { text: text.into() }],
        }
    }

    /// The text blocks joined by newlines; tool blocks contribute nothing.
    pub fn text_content(&self) -> String {
        self.blocks
            .iter()
            .filter_map(|b| match b {
                Block::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Does this message contain a tool call?
    pub fn has_tool_use(&self) -> bool {
        self.blocks
            .iter()
            .any(|b| matches!(b, Block::ToolUse { .. }))
    }
}

/// First `n` characters of `s` (the course slices Python strings by code point).
pub fn take_chars(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// The selection query: the text of the last `max_turns` user messages that
/// have any text, oldest first, newline-joined, capped at `char_limit`.
/// Tool-result-only messages are skipped (they have no text blocks).
pub fn recent_user_text(messages: &[Message], max_turns: usize, char_limit: usize) -> String {
    let mut turns: Vec<String> = Vec::new();
    for m in messages.iter().rev() {
        if m.role != Role::User {
            continue;
        }
        let t = m.text_content().trim().to_string();
        if !t.is_empty() {
            turns.push(t);
        }
        if turns.len() == max_turns {
            break;
        }
    }
    turns.reverse();
    take_chars(&turns.join("\n"), char_limit).to_string()
}

/// The extractor's input: `role: text` lines of the last `max_messages`
/// messages that have text, capped at `char_limit` in total.
pub fn dialogue_text(messages: &[Message], max_messages: usize, char_limit: usize) -> String {
    let start = messages.len().saturating_sub(max_messages);
    let lines: Vec<String> = messages[start..]
        .iter()
        .filter_map(|m| {
            let t = m.text_content().trim().to_string();
            (!t.is_empty()).then(|| format!("{}: {t}", m.role.name()))
        })
        .collect();
    take_chars(&lines.join("\n"), char_limit).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool_result(content: &str) -> Message {
        Message {
            role: Role::User,
            blocks: vec![Block::ToolResult {
                tool_use_id: "t1".into(),
                content: content.into(),
            }],
        }
    }

    #[test]
    fn tool_results_never_reach_query_or_dialogue() {
        let msgs = vec![
            Message::text(Role::User, "use tabs"),
            tool_result("SECRET TOOL OUTPUT"),
            Message::text(Role::Assistant, "ok"),
            Message::text(Role::User, "and single quotes"),
        ];
        let q = recent_user_text(&msgs, 3, 4000);
        assert_eq!(q, "use tabs\nand single quotes");
        let d = dialogue_text(&msgs, 12, 8000);
        assert!(!d.contains("SECRET"), "{d}");
        assert_eq!(d, "user: use tabs\nassistant: ok\nuser: and single quotes");
    }

    #[test]
    fn caps_count_characters_not_bytes() {
        let msgs = vec![Message::text(Role::User, "用户偏好用制表符")];
        assert_eq!(recent_user_text(&msgs, 3, 4), "用户偏好");
        assert_eq!(dialogue_text(&msgs, 12, 8), "user: 用户");
    }
}
