//! Token counting: one interface, several counters.
//!
//! Products size their context in tokens, the course in characters; a policy
//! asks a [`TokenCounter`] in its native unit. [`Approx`] is the
//! dependency-free fallback (4 chars per token, rounded up, as the common rule
//! of thumb many harnesses use); exact and calibrated counters implement the
//! same trait.

use crate::message::{Block, Content, Message, ToolInput};

pub mod bpe;
pub mod claude;
pub mod fit;
pub mod openai;
pub mod pieces;
pub mod recorded;
pub mod sizes;

/// Counts tokens of text and of whole requests.
pub trait TokenCounter: Send + Sync + std::fmt::Debug {
    /// The name shown in report headers (`approx`, `o200k`, `cl100k`, `claude`).
    fn name(&self) -> &'static str;

    /// Tokens of a piece of text.
    fn count(&self, text: &str) -> usize;

    /// Tokens of one message: its text, tool inputs as JSON, tool results,
    /// thinking; images at a fixed cost.
    fn count_message(&self, message: &Message) -> usize {
        match &message.content {
            Content::Text(t) => self.count(t),
            Content::Blocks(blocks) => blocks.iter().map(|b| self.count_block(b)).sum(),
        }
    }

    /// Tokens of one block.
    fn count_block(&self, block: &Block) -> usize {
        match block {
            Block::Text { text } => self.count(text),
            Block::ToolUse { name, input, .. } => self.count(name) + self.count_input(input),
            Block::ToolResult { content, .. } => self.count(content),
            Block::Thinking { thinking } => self.count(thinking),
            Block::Image { .. } => IMAGE_TOKENS,
            Block::Unlogged { tokens, .. } => *tokens,
        }
    }

    /// Tokens of a tool input: its compact JSON text (`Value::to_string`),
    /// as the API receives it. Counters that need only the text's length
    /// override this to count without building the string.
    fn count_json(&self, value: &serde_json::Value) -> usize {
        self.count(&value.to_string())
    }

    /// Tokens of a tool call's input: [`TokenCounter::count_json`] of its
    /// value, unless the counter can use the counts the input keeps.
    fn count_input(&self, input: &ToolInput) -> usize {
        self.count_json(input.value())
    }

    /// A number no smaller than [`TokenCounter::count_message`] of
    /// `message`, for a caller that needs only to know the count is below
    /// something: a counter that can bound it without counting (the Claude
    /// estimator, from byte lengths) overrides this; by default it counts.
    fn count_message_at_most(&self, message: &Message) -> usize {
        self.count_message(message)
    }

    /// Tokens of a whole request.
    fn count_messages(&self, messages: &[Message]) -> usize {
        messages.iter().map(|m| self.count_message(m)).sum()
    }
}

/// The counters a command line can name (`--tokens`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Tokens {
    /// [`Approx`]: 4 characters per token.
    #[default]
    Approx,
    /// [`openai::OpenAi::O200K`].
    O200k,
    /// [`openai::OpenAi::CL100K`].
    Cl100k,
    /// [`claude::Claude`] with the fitted rates.
    Claude,
}

impl Tokens {
    /// The counter.
    pub fn counter(self) -> Box<dyn TokenCounter> {
        match self {
            Tokens::Approx => Box::new(Approx),
            Tokens::O200k => Box::new(openai::OpenAi::O200K),
            Tokens::Cl100k => Box::new(openai::OpenAi::CL100K),
            Tokens::Claude => Box::new(claude::Claude::default()),
        }
    }
}

/// Flat cost of an image block when its bytes are not known (a ~1 megapixel
/// screenshot costs about this much under Anthropic's `w*h/750` rule).
pub const IMAGE_TOKENS: usize = 1_600;

/// `ceil(chars / 4)`: the rule of thumb, no data needed.
#[derive(Debug, Default, Clone, Copy)]
pub struct Approx;

impl TokenCounter for Approx {
    fn name(&self) -> &'static str {
        "approx"
    }

    fn count(&self, text: &str) -> usize {
        text.chars().count().div_ceil(4)
    }

    /// The compact JSON text's characters counted as it is written, with
    /// no string built: every policy counts every tool input of its
    /// history at every call, so the strings were most of the counting.
    fn count_json(&self, value: &serde_json::Value) -> usize {
        json_chars(value).div_ceil(4)
    }

    /// The input's characters are counted once per value and kept with
    /// it: policies count their whole history at every call, and the
    /// inputs of the unchanged history were most of that count.
    fn count_input(&self, input: &ToolInput) -> usize {
        input.compact_chars().div_ceil(4)
    }
}

/// Characters of `value.to_string()`, counted as serde_json writes them
/// (the UTF-8 bytes that start a character).
pub fn json_chars(value: &serde_json::Value) -> usize {
    crate::message::compact_json_chars(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approx_rounds_up_per_text() {
        assert_eq!(Approx.count(""), 0);
        assert_eq!(Approx.count("abcd"), 1);
        assert_eq!(Approx.count("abcde"), 2);
        let m = Message::tool_results(vec![("t".into(), "x".repeat(9))]);
        assert_eq!(Approx.count_messages(&[m]), 3);
    }

    #[test]
    fn json_characters_are_counted_as_the_text_has_them() {
        let inputs = [
            serde_json::json!({}),
            serde_json::json!({"command": "ls -la", "n": 1.5, "ok": true, "none": null}),
            serde_json::json!({"path": "/src/é\u{1F600}\"q\"\n\u{1}", "list": [1, -2, "ü"]}),
            serde_json::json!("plain"),
        ];
        for v in inputs {
            assert_eq!(json_chars(&v), v.to_string().chars().count(), "{v}");
            assert_eq!(Approx.count_json(&v), Approx.count(&v.to_string()), "{v}");
        }
    }

    #[test]
    fn every_choice_names_its_counter() {
        use clap::ValueEnum;
        for t in Tokens::value_variants() {
            let name = t.to_possible_value().unwrap().get_name().to_string();
            assert_eq!(t.counter().name(), name);
        }
    }
}
