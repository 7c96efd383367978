//! Thinking blocks of earlier turns, as the API counts and caches them.
//!
//! Anthropic's extended-thinking documentation: before Claude Opus 4.5 the
//! API drops the thinking blocks of earlier assistant turns from the
//! model's context (they neither count as input nor stay in the cached
//! prefix); within the current turn (a tool-use loop) they stay. From Opus
//! 4.5 on they are kept. So on the older models the content of the previous
//! turn changes when a new user prompt starts a turn: its token count
//! drops, and the cached prefix breaks at the first of its thinking blocks.

use crate::message::{Block, Message, Role};

/// Model name prefixes that keep earlier turns' thinking in context.
pub const KEEPS_THINKING: &[&str] = &["claude-opus-4-5"];

/// Whether `model` keeps the thinking of earlier turns.
pub fn keeps_thinking(model: &str) -> bool {
    KEEPS_THINKING.iter().any(|p| model.starts_with(p))
}

/// A user prompt, as opposed to a message that only returns tool results.
fn is_prompt(m: &Message) -> bool {
    m.role == Role::User
        && (!m.is_tool_result() || m.blocks().iter().any(|b| matches!(b, Block::Text { .. })))
}

/// Removes the thinking blocks of every assistant message before the last
/// user message that starts a turn: a prompt, or tool results that carried
/// an unlogged reminder (`carries_reminder`, see [`super::reminders`]).
pub fn strip_earlier_turns(messages: &mut [Message], carries_reminder: impl Fn(&Message) -> bool) {
    let Some(last) = messages
        .iter()
        .rposition(|m| is_prompt(m) || carries_reminder(m))
    else {
        return;
    };
    for m in messages[..last]
        .iter_mut()
        .filter(|m| m.role == Role::Assistant)
    {
        if let crate::message::Content::Blocks(b) = &mut m.content {
            b.retain(|b| !matches!(b, Block::Thinking { .. }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thinking(text: &str) -> Message {
        Message::assistant(vec![
            Block::Thinking {
                thinking: "hmm".into(),
            },
            Block::Text { text: text.into() },
        ])
    }

    #[test]
    fn only_turns_before_the_last_prompt_lose_their_thinking() {
        let mut m = vec![
            Message::user_text("first"),
            thinking("a"),
            Message::tool_results(vec![("t".into(), "out".into())]),
            thinking("b"),
            Message::user_text("second"),
            thinking("c"),
            Message::tool_results(vec![("u".into(), "out".into())]),
        ];
        let mut reminded = m.clone();
        strip_earlier_turns(&mut m, |_| false);
        let kept: Vec<usize> = m.iter().map(|m| m.blocks().len()).collect();
        assert_eq!(kept, vec![0, 1, 1, 1, 0, 2, 1]);
        // Results that carried a reminder start a turn as a prompt does.
        strip_earlier_turns(&mut reminded, |m| m.tool_result_ids().contains(&"u"));
        let kept: Vec<usize> = reminded.iter().map(|m| m.blocks().len()).collect();
        assert_eq!(kept, vec![0, 1, 1, 1, 0, 1, 1]);
    }

    #[test]
    fn opus_4_5_keeps_thinking_and_older_models_do_not() {
        assert!(keeps_thinking("claude-opus-4-5-20251101"));
        assert!(!keeps_thinking("claude-opus-4-1-20250805"));
        assert!(!keeps_thinking("claude-sonnet-4-5-20250929"));
    }
}
