//! Which messages a session-memory compaction keeps after the summary:
//! `calculateMessagesToKeepIndex` and what it counts with
//! (`estimateMessageTokens`, `hasTextBlocks`,
//! `adjustIndexToPreserveAPIInvariants`), from
//! `claude-code-best/claude-code@50049c61:src/services/compact/sessionMemoryCompact.ts`
//! and `microCompact.ts` beside it.
//!
//! The lab's messages are whole API messages (upstream stores a streamed
//! reply as one record per block sharing a `message.id`), so the second step
//! of the adjustment, which pulls in earlier records of the same reply, has
//! nothing to do here. Upstream's floor is the message after the last
//! compact boundary, which is the previous summary; the lab keeps no
//! boundary record, so that summary is message 0 and the floor is 0.

use serde::{Deserialize, Serialize};

use crate::message::{Block, Content, Message, Role};

use super::super::time_mc::rough_tokens;

/// `IMAGE_MAX_TOKEN_SIZE`: what an image or document counts.
pub const IMAGE_MAX_TOKEN_SIZE: usize = 2000;

/// `SessionMemoryCompactConfig`; `Default` is `DEFAULT_SM_COMPACT_CONFIG`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[allow(non_snake_case)]
pub struct KeepConfig {
    /// Tokens the kept messages reach at least (10,000).
    pub minTokens: usize,
    /// Messages with text the kept messages hold at least (5).
    pub minTextBlockMessages: usize,
    /// Tokens past which the kept range stops growing (40,000).
    pub maxTokens: usize,
}

impl Default for KeepConfig {
    fn default() -> Self {
        KeepConfig {
            minTokens: 10_000,
            minTextBlockMessages: 5,
            maxTokens: 40_000,
        }
    }
}

/// `estimateMessageTokens`: rough tokens of the blocks, padded by 4/3 and
/// rounded up. Content held as a plain string counts nothing (upstream skips
/// non-array content), except an assistant's: the lab holds a text-only
/// reply that way, where upstream always has a block list.
pub fn estimate_message_tokens(messages: &[Message]) -> usize {
    let mut total = 0usize;
    for m in messages {
        match (&m.content, m.role) {
            (Content::Text(t), Role::Assistant) => total += rough_tokens(t),
            (Content::Text(_), Role::User) => {}
            (Content::Blocks(blocks), _) => total += blocks.iter().map(block_tokens).sum::<usize>(),
        }
    }
    // `Math.ceil(totalTokens * (4 / 3))` in doubles, as upstream computes it.
    (total as f64 * (4.0 / 3.0)).ceil() as usize
}

fn block_tokens(b: &Block) -> usize {
    match b {
        Block::Text { text } => rough_tokens(text),
        Block::ToolResult { content, .. } => rough_tokens(content),
        Block::Image { .. } => IMAGE_MAX_TOKEN_SIZE,
        Block::Unlogged { tokens, .. } => *tokens,
        Block::Thinking { thinking } => rough_tokens(thinking),
        // `name + jsonStringify(input)`: the name and the compact JSON.
        Block::ToolUse { name, input, .. } => rough_tokens(&format!("{name}{input}")),
    }
}

/// `hasTextBlocks`: a reply with a text block, a user message with a
/// non-empty string or a text block.
pub fn has_text_blocks(m: &Message) -> bool {
    match (&m.content, m.role) {
        (Content::Text(t), Role::User) => !t.is_empty(),
        (Content::Text(_), Role::Assistant) => true,
        (Content::Blocks(blocks), _) => blocks.iter().any(|b| matches!(b, Block::Text { .. })),
    }
}

/// `adjustIndexToPreserveAPIInvariants`, first step: move `start` back to
/// the earliest reply holding a call whose result is kept but whose call
/// is not.
pub fn adjust_index(messages: &[Message], start: usize) -> usize {
    if start == 0 || start >= messages.len() {
        return start;
    }
    let kept = &messages[start..];
    let calls_kept: Vec<&str> = kept
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(Message::tool_use_ids)
        .collect();
    let mut needed: Vec<&str> = kept
        .iter()
        .filter(|m| m.role == Role::User)
        .flat_map(Message::tool_result_ids)
        .filter(|id| !calls_kept.contains(id))
        .collect();
    let mut adjusted = start;
    for i in (0..start).rev() {
        if needed.is_empty() {
            break;
        }
        let m = &messages[i];
        if m.role != Role::Assistant {
            continue;
        }
        let ids = m.tool_use_ids();
        if ids.iter().any(|id| needed.contains(id)) {
            adjusted = i;
            needed.retain(|n| !ids.contains(n));
        }
    }
    adjusted
}

/// `calculateMessagesToKeepIndex`: start after the last summarised message
/// (`None`: nothing summarised, start at the end), grow backwards until the
/// kept messages reach both minimums or the maximum, then keep tool pairs whole.
pub fn messages_to_keep_index(
    messages: &[Message],
    last_summarized: Option<usize>,
    config: &KeepConfig,
) -> usize {
    if messages.is_empty() {
        return 0;
    }
    let mut start = last_summarized.map_or(messages.len(), |i| i + 1);
    let mut tokens = 0;
    let mut texts = 0;
    for m in &messages[start.min(messages.len())..] {
        tokens += estimate_message_tokens(std::slice::from_ref(m));
        texts += usize::from(has_text_blocks(m));
    }
    let enough = |tokens: usize, texts: usize| {
        tokens >= config.maxTokens
            || (tokens >= config.minTokens && texts >= config.minTextBlockMessages)
    };
    if !enough(tokens, texts) {
        for i in (0..start).rev() {
            let m = &messages[i];
            tokens += estimate_message_tokens(std::slice::from_ref(m));
            texts += usize::from(has_text_blocks(m));
            start = i;
            if enough(tokens, texts) {
                break;
            }
        }
    }
    adjust_index(messages, start)
}
