//! The slice of a conversation the memory mechanisms read.
//!
//! Only the block kinds matter: recall and extraction read `text` blocks and
//! must not see `tool_result` content, even though tool results travel in
//! `user`-role messages.

pub use crate::message::{Block, Message, Role};

/// Lower-case role name as in the course's dialogue text.
pub fn role_name(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}

/// A message holding one text block (the memory half speaks in blocks throughout).
pub fn text_message(role: Role, text: impl Into<String>) -> Message {
    Message {
        role,
        content: crate::message::Content::Blocks(vec![Block::Text { text: text.into() }]),
    }
}

/// The non-empty text blocks (or the string content) joined by newlines;
/// tool blocks contribute nothing, which is what keeps tool output out of
/// recall queries and extraction input.
pub fn text_content(m: &Message) -> String {
    match &m.content {
        crate::message::Content::Text(t) => t.clone(),
        crate::message::Content::Blocks(blocks) => blocks
            .iter()
            .filter_map(|b| match b {
                Block::Text { text } if !text.is_empty() => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
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
        let t = text_content(m).trim().to_string();
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
            let t = text_content(m).trim().to_string();
            (!t.is_empty()).then(|| format!("{}: {t}", role_name(m.role)))
        })
        .collect();
    take_chars(&lines.join("\n"), char_limit).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool_result(content: &str) -> Message {
        Message::tool_results(vec![("t1".into(), content.into())])
    }

    #[test]
    fn tool_results_never_reach_query_or_dialogue() {
        let msgs = vec![
            text_message(Role::User, "use tabs"),
            tool_result("SECRET TOOL OUTPUT"),
            text_message(Role::Assistant, "ok"),
            text_message(Role::User, "and single quotes"),
        ];
        let q = recent_user_text(&msgs, 3, 4000);
        assert_eq!(q, "use tabs\nand single quotes");
        let d = dialogue_text(&msgs, 12, 8000);
        assert!(!d.contains("SECRET"), "{d}");
        assert_eq!(d, "user: use tabs\nassistant: ok\nuser: and single quotes");
    }

    #[test]
    fn caps_count_characters_not_bytes() {
        let msgs = vec![text_message(Role::User, "用户偏好用制表符")];
        assert_eq!(recent_user_text(&msgs, 3, 4), "用户偏好");
        assert_eq!(dialogue_text(&msgs, 12, 8), "user: 用户");
    }
}
