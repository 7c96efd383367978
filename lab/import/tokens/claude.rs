//! A Claude token estimator calibrated on recorded usage.
//!
//! Anthropic publishes no tokenizer for its current models, but every Claude
//! Code request records how many prompt tokens it sent. The estimator counts
//! each kind of block (prose, tool-call JSON, tool output, code, thinking) in
//! o200k tokens and converts each kind at its own rate, plus a fixed cost per
//! message for the role framing. [`FITTED`] holds the rates fitted by
//! [`super::fit`] on the shared Claude Code sessions.
//!
//! Why o200k tokens and not characters: a byte-pair count already knows that
//! ids, hashes, URLs, numbers and non-Latin text are dense and that runs of
//! indentation are cheap, which a per-character rate can only average per
//! kind. Held out from the fit, the cumulative error falls from 3.3 % to
//! 2.1 % median (GUIDE.md "Tokens and prompt-cache cost").

use super::openai::OpenAi;
use super::{TokenCounter, IMAGE_TOKENS};
use crate::message::{Block, Content, Message};

/// Claude tokens per o200k token for each block kind, and per message.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Coefficients {
    /// Prose: user prompts and assistant text.
    pub text: f64,
    /// A tool call's name and input JSON.
    pub tool_json: f64,
    /// Tool output that is not code.
    pub tool_result: f64,
    /// Tool output that is a numbered file listing (code read from disk).
    pub code: f64,
    /// Thinking blocks.
    pub thinking: f64,
    /// Tokens per message (role and block framing).
    pub per_message: f64,
}

/// Fitted on the five Claude Code sessions of `shared/transcripts/claude_code`
/// (798 requests, 777 consecutive pairs within a conversation): the growth
/// in recorded prompt tokens between consecutive requests of one
/// conversation, regressed on the growth in o200k tokens per kind and in
/// messages, by least squares reweighted towards absolute error (20 rounds),
/// the per-message cost then raised by the trimmed mean of the residuals
/// ([`super::fit::overhead`]). Messages are the ones the API saw
/// ([`super::recorded`]: parallel tool calls and results put back, earlier
/// turns' thinking dropped where the model drops it, including at tool
/// results that carried an unlogged reminder).
/// `cargo test --lib tokens::fit -- --ignored --nocapture` prints a refit;
/// `tokens::fit::tests::fitted_constants_are_reproduced` pins these values.
pub const FITTED: Coefficients = Coefficients {
    text: 1.1385,
    tool_json: 1.1194,
    tool_result: 1.2696,
    code: 1.0790,
    thinking: 1.2675,
    per_message: 54.945,
};

/// o200k token counts of a message list, one entry per kind, and its messages.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Features {
    /// o200k tokens per kind, in [`Coefficients`] field order (text, tool
    /// JSON, tool result, code, thinking).
    pub units: [f64; 5],
    /// Messages.
    pub messages: f64,
    /// Image blocks (fixed cost, not fitted).
    pub images: f64,
    /// Tokens of [`Block::Unlogged`] content, already in Claude tokens
    /// (sized from recorded usage; not fitted).
    pub declared: f64,
}

impl Features {
    /// Features of a list of messages.
    pub fn of(messages: &[Message]) -> Features {
        let mut f = Features::default();
        for m in messages {
            f.add_message(m);
        }
        f
    }

    fn add_message(&mut self, m: &Message) {
        self.messages += 1.0;
        match &m.content {
            Content::Text(t) => self.units[0] += units(t),
            Content::Blocks(blocks) => blocks.iter().for_each(|b| self.add_block(b)),
        }
    }

    fn add_block(&mut self, b: &Block) {
        match b {
            Block::Text { text } => self.units[0] += units(text),
            Block::ToolUse { name, input, .. } => {
                self.units[1] += units(name) + units(&input.to_string())
            }
            Block::ToolResult { content, .. } if is_code(content) => {
                self.units[3] += units(content)
            }
            Block::ToolResult { content, .. } => self.units[2] += units(content),
            Block::Thinking { thinking } => self.units[4] += units(thinking),
            Block::Image { .. } => self.images += 1.0,
            Block::Unlogged { tokens, .. } => self.declared += *tokens as f64,
        }
    }

    /// The fitted variables: the five o200k counts and the message count.
    pub fn vector(&self) -> [f64; 6] {
        let c = self.units;
        [c[0], c[1], c[2], c[3], c[4], self.messages]
    }

    /// Estimated tokens under `k`.
    pub fn tokens(&self, k: &Coefficients) -> f64 {
        let w = k.as_array();
        let v = self.vector();
        v.iter().zip(w).map(|(x, c)| x * c).sum::<f64>()
            + self.images * IMAGE_TOKENS as f64
            + self.declared
    }
}

impl Coefficients {
    /// The coefficients in [`Features::vector`] order.
    pub fn as_array(&self) -> [f64; 6] {
        [
            self.text,
            self.tool_json,
            self.tool_result,
            self.code,
            self.thinking,
            self.per_message,
        ]
    }

    /// Coefficients from [`Features::vector`] order.
    pub fn from_array(a: [f64; 6]) -> Coefficients {
        Coefficients {
            text: a[0],
            tool_json: a[1],
            tool_result: a[2],
            code: a[3],
            thinking: a[4],
            per_message: a[5],
        }
    }
}

/// The unit every kind is counted in: o200k tokens ([`OpenAi::count`] is
/// memoised, so a history counted at every request costs one count per
/// block).
pub fn units(s: &str) -> f64 {
    OpenAi::O200K.count(s) as f64
}

/// A tool result is code when it is a numbered listing, as file-reading
/// tools return it: at least 3 of its first 20 lines start with a line
/// number followed by `→` or a tab.
pub fn is_code(s: &str) -> bool {
    let numbered = |l: &&str| {
        let t = l.trim_start();
        let digits = t.chars().take_while(char::is_ascii_digit).count();
        digits > 0 && matches!(t[digits..].chars().next(), Some('→') | Some('\t'))
    };
    s.lines().take(20).filter(numbered).count() >= 3
}

/// The calibrated Claude counter.
#[derive(Debug, Clone, Copy)]
pub struct Claude {
    /// Its rates.
    pub coefficients: Coefficients,
}

impl Default for Claude {
    /// The [`FITTED`] rates.
    fn default() -> Self {
        Claude {
            coefficients: FITTED,
        }
    }
}

impl TokenCounter for Claude {
    fn name(&self) -> &'static str {
        "claude"
    }

    fn count(&self, text: &str) -> usize {
        (units(text) * self.coefficients.text).round() as usize
    }

    fn count_block(&self, block: &Block) -> usize {
        let mut f = Features::default();
        f.add_block(block);
        f.tokens(&self.coefficients).round() as usize
    }

    fn count_message(&self, message: &Message) -> usize {
        Features::of(std::slice::from_ref(message))
            .tokens(&self.coefficients)
            .round() as usize
    }

    /// The estimate with every piece's o200k units replaced by its byte
    /// length, which is never smaller (each o200k token stands for at
    /// least one byte) and needs no tokenizer: with every rate positive
    /// (the fitted ones are) the estimate can only grow; otherwise counted.
    fn count_message_at_most(&self, message: &Message) -> usize {
        let k = &self.coefficients;
        if k.as_array().iter().any(|&r| r < 0.0) {
            // A refitted negative rate would make the bytes a floor, not a ceiling.
            return self.count_message(message);
        }
        let bytes = |b: &Block| -> f64 {
            match b {
                Block::Text { text } => text.len() as f64 * k.text,
                Block::ToolUse { name, input, .. } => {
                    (name.len() + input.to_string().len()) as f64 * k.tool_json
                }
                Block::ToolResult { content, .. } => {
                    content.len() as f64 * k.tool_result.max(k.code)
                }
                Block::Thinking { thinking } => thinking.len() as f64 * k.thinking,
                Block::Image { .. } => IMAGE_TOKENS as f64,
                Block::Unlogged { tokens, .. } => *tokens as f64,
            }
        };
        let content = match &message.content {
            Content::Text(t) => t.len() as f64 * k.text,
            Content::Blocks(blocks) => blocks.iter().map(bytes).sum(),
        };
        (content + k.per_message).ceil() as usize + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_listings_are_code_and_prose_is_not() {
        assert!(is_code("     1→fn a() {\n     2→}\n     3→\n"));
        assert!(is_code("1\tx\n2\ty\n3\tz"));
        assert!(!is_code("1 apple\n2 pears\n3 plums"));
        assert!(!is_code("2 files changed"));
    }

    #[test]
    fn each_kind_is_counted_at_its_own_rate() {
        let k = Coefficients::from_array([0.25, 0.5, 0.3, 0.4, 0.2, 10.0]);
        let c = Claude { coefficients: k };
        let listing = "1→a\n2→b\n3→c".to_string();
        let m = Message::tool_results(vec![("t".into(), listing.clone())]);
        let listed = OpenAi::O200K.count(&listing) as f64;
        let expect = (listed * 0.4 + 10.0).round() as usize;
        assert_eq!(c.count_message(&m), expect);
        let words = "the cat sat on the mat";
        assert_eq!(c.count(words), 2, "six o200k tokens at 0.25");
        let f = Features::of(&[m.clone(), Message::user_text(words)]);
        assert_eq!(f.vector(), [6.0, 0.0, 0.0, listed, 0.0, 2.0]);
    }

    proptest::proptest! {
        /// The bound is never below the count, whatever the text (prose,
        /// code, non-ASCII, astral characters) and the kind of block.
        #[test]
        fn the_byte_bound_is_never_below_the_estimate(
            text in "[a-z0-9 \\n\\t{}()\u{e9}\u{4e2d}\u{1F600}→]{0,200}",
            kind in 0usize..5,
        ) {
            let block = match kind {
                0 => Block::Text { text: text.clone() },
                1 => Block::Thinking { thinking: text.clone() },
                2 => Block::ToolResult { tool_use_id: "t".into(), content: text.clone() },
                3 => Block::ToolResult {
                    tool_use_id: "t".into(),
                    content: format!("1→{text}\n2→a\n3→b"),
                },
                _ => Block::ToolUse {
                    id: "t".into(),
                    name: "Bash".into(),
                    input: serde_json::json!({"command": text.clone()}).into(),
                },
            };
            let m = Message::assistant(vec![block]);
            let c = Claude::default();
            proptest::prop_assert!(c.count_message_at_most(&m) >= c.count_message(&m));
        }
    }

    #[test]
    fn the_fitted_rates_are_plausible() {
        // Anthropic's tokenizer is a byte-pair encoding with a smaller
        // vocabulary than o200k: somewhat more tokens for the same text,
        // never several times as many.
        for r in &FITTED.as_array()[..5] {
            assert!((0.9..=1.6).contains(r), "{FITTED:?}");
        }
    }
}
