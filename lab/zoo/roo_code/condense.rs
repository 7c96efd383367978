//! Roo's stored history and its operations, line for line after
//! RooCodeInc/Roo-Code@d1e74cb `src/core/condense/index.ts` and
//! `src/core/context-management/index.ts`.

use std::collections::BTreeSet;

use crate::message::{Block, Content, Message, Role};
use crate::policy::{PolicyCtx, SummaryRequest};

use super::{
    truncation_marker, CONDENSED_RECENTLY, CONDENSE_CONTEXT_GREW, CONDENSE_FAILED,
    CONDENSE_NOT_ENOUGH_MESSAGES, CONTINUE_FROM_SUMMARY, FINAL_REQUEST, N_MESSAGES_TO_KEEP,
    SUMMARY_PROMPT,
};

/// One message of Roo's `apiConversationHistory` (`ApiMessage`) with the
/// fields that hide it. Ids are counters here (upstream: random UUIDs).
#[derive(Debug, Clone, PartialEq)]
pub struct ApiMessage {
    /// The message as sent.
    pub message: Message,
    /// `isSummary`.
    pub is_summary: bool,
    /// `condenseId` of a summary.
    pub condense_id: Option<u32>,
    /// `condenseParent`: the summary that replaced this message.
    pub condense_parent: Option<u32>,
    /// `isTruncationMarker`.
    pub is_truncation_marker: bool,
    /// `truncationId` of a marker.
    pub truncation_id: Option<u32>,
    /// `truncationParent`: the truncation that hid this message.
    pub truncation_parent: Option<u32>,
}

impl From<Message> for ApiMessage {
    fn from(message: Message) -> Self {
        ApiMessage {
            message,
            is_summary: false,
            condense_id: None,
            condense_parent: None,
            is_truncation_marker: false,
            truncation_id: None,
            truncation_parent: None,
        }
    }
}

/// `getEffectiveApiHistory`: drop messages whose summary or truncation
/// marker is still in the history.
pub fn effective_api_history(messages: &[ApiMessage]) -> Vec<&ApiMessage> {
    let summaries: BTreeSet<u32> = messages
        .iter()
        .filter(|m| m.is_summary)
        .filter_map(|m| m.condense_id)
        .collect();
    let markers: BTreeSet<u32> = messages
        .iter()
        .filter(|m| m.is_truncation_marker)
        .filter_map(|m| m.truncation_id)
        .collect();
    messages
        .iter()
        .filter(|m| !m.condense_parent.is_some_and(|p| summaries.contains(&p)))
        .filter(|m| !m.truncation_parent.is_some_and(|p| markers.contains(&p)))
        .collect()
}

/// `getMessagesSinceLastSummary`: from the last summary on, led by the
/// first message (or a generic user line) when that does not start with a
/// user message; everything when there is no summary.
pub fn messages_since_last_summary(messages: &[&ApiMessage]) -> Vec<Message> {
    let all = || messages.iter().map(|m| m.message.clone()).collect();
    let Some(last) = messages.iter().rposition(|m| m.is_summary) else {
        return all();
    };
    let since = &messages[last..];
    let mut out = Vec::with_capacity(since.len() + 1);
    if since[0].message.role != Role::User {
        match messages.first() {
            Some(first) if first.message.role == Role::User => out.push(first.message.clone()),
            _ => out.push(Message::user_text(CONTINUE_FROM_SUMMARY)),
        }
    }
    out.extend(since.iter().map(|m| m.message.clone()));
    out
}

/// `findToolUseBlockById`: the `tool_use` block `id` of an assistant message.
fn find_tool_use<'m>(m: &'m Message, id: &str) -> Option<&'m Block> {
    if m.role != Role::Assistant {
        return None;
    }
    m.blocks()
        .iter()
        .find(|b| matches!(b, Block::ToolUse { id: i, .. } if i == id))
}

/// `getKeepMessagesWithToolBlocks(messages, keepCount).toolUseBlocksToPreserve`:
/// for each `tool_result` of the last `keep_count` messages, the matching
/// `tool_use`, searched newest first among the `N_MESSAGES_TO_KEEP`
/// messages before them (the search is bounded at this commit).
pub fn keep_tool_uses(messages: &[ApiMessage], keep_count: usize) -> Vec<Block> {
    if messages.len() <= keep_count {
        return Vec::new();
    }
    let start = messages.len() - keep_count;
    let search = &messages[start.saturating_sub(N_MESSAGES_TO_KEEP)..start];
    let mut found = Vec::new();
    let mut seen = BTreeSet::new();
    for kept in &messages[start..] {
        for id in kept.message.tool_result_ids() {
            if seen.contains(id) {
                continue;
            }
            let hit = search
                .iter()
                .rev()
                .find_map(|m| find_tool_use(&m.message, id));
            if let Some(block) = hit {
                found.push(block.clone());
                seen.insert(id);
            }
        }
    }
    found
}

/// A condense that was refused or failed (`SummarizeResponse.error`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CondenseError {
    /// The text Roo shows.
    pub message: String,
    /// Whether the summary call was made (and failed or was thrown away).
    pub model_called: bool,
}

impl CondenseError {
    fn refused(message: &str) -> Self {
        CondenseError {
            message: message.into(),
            model_called: false,
        }
    }

    fn after_call(message: impl Into<String>) -> Self {
        CondenseError {
            message: message.into(),
            model_called: true,
        }
    }
}

/// A successful condense.
#[derive(Debug, Clone, PartialEq)]
pub struct Condensed {
    /// The new stored history (middle tagged, summary inserted).
    pub stored: Vec<ApiMessage>,
    /// Messages newly tagged with the summary's id.
    pub replaced: usize,
    /// Messages left visible around the summary (the first and the kept).
    pub kept: usize,
}

/// JavaScript's `String.prototype.trim` (whitespace, line ends and BOM).
fn js_trim(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}')
}

/// The summary message as sent: `buildCleanConversationHistory` strips the
/// leading synthetic reasoning block and sends a lone text as a string.
fn summary_message(summary: &str, tool_uses: Vec<Block>) -> Message {
    if tool_uses.is_empty() {
        return Message {
            role: Role::Assistant,
            content: Content::Text(summary.into()),
        };
    }
    let mut blocks = vec![Block::Text {
        text: summary.into(),
    }];
    blocks.extend(tool_uses);
    Message::assistant(blocks)
}

/// `summarizeConversation(messages, …, prevContextTokens, true)` with the
/// summary's `condenseId` = `id`.
pub fn summarize(
    messages: &[ApiMessage],
    prev_tokens: usize,
    id: u32,
    ctx: &mut PolicyCtx<'_>,
) -> Result<Condensed, CondenseError> {
    let tool_uses = keep_tool_uses(messages, N_MESSAGES_TO_KEEP);
    let keep_start = messages.len().saturating_sub(N_MESSAGES_TO_KEEP);
    let request = summary_input(messages, keep_start, !tool_uses.is_empty())?;
    let req = SummaryRequest {
        prompt: SUMMARY_PROMPT,
        messages: &request,
        previous: None,
    };
    let reply = ctx
        .model
        .summarise(&req)
        .map_err(|e| CondenseError::after_call(e.0))?;
    let summary = js_trim(&reply);
    if summary.is_empty() {
        return Err(CondenseError::after_call(CONDENSE_FAILED));
    }
    let summary = summary_message(summary, tool_uses);
    // Without output tokens from the call, upstream counts the summary
    // message and the kept messages (plus the system prompt, not modelled).
    let kept = &messages[keep_start..];
    let new_tokens = ctx.tokens.count_message(&summary)
        + kept
            .iter()
            .map(|m| ctx.tokens.count_message(&m.message))
            .sum::<usize>();
    if new_tokens >= prev_tokens {
        return Err(CondenseError::after_call(CONDENSE_CONTEXT_GREW));
    }
    Ok(tag_and_insert(messages, keep_start, summary, id))
}

/// The summary call's messages: those since the last summary before the
/// kept ones (the first kept one too when calls are preserved for it), then
/// the final request line; or the refusal when there is nothing to summarise
/// or a summary is among the kept messages.
fn summary_input(
    messages: &[ApiMessage],
    keep_start: usize,
    include_first_kept: bool,
) -> Result<Vec<Message>, CondenseError> {
    let n = messages.len();
    let slice_end = (keep_start + usize::from(include_first_kept)).min(n);
    let before: Vec<&ApiMessage> = messages[..slice_end].iter().collect();
    let mut request = messages_since_last_summary(&before);
    if request.len() <= 1 {
        let why = if n <= N_MESSAGES_TO_KEEP + 1 {
            CONDENSE_NOT_ENOUGH_MESSAGES
        } else {
            CONDENSED_RECENTLY
        };
        return Err(CondenseError::refused(why));
    }
    if messages[keep_start..].iter().any(|m| m.is_summary) {
        return Err(CondenseError::refused(CONDENSED_RECENTLY));
    }
    request.push(Message::user_text(FINAL_REQUEST));
    Ok(request)
}

/// Tag the middle (not the first, not the kept) with `condenseParent = id`
/// unless already tagged, and insert the summary before the kept messages.
fn tag_and_insert(
    messages: &[ApiMessage],
    keep_start: usize,
    summary: Message,
    id: u32,
) -> Condensed {
    let mut stored = messages.to_vec();
    let mut replaced = 0;
    for m in stored.iter_mut().take(keep_start).skip(1) {
        if m.condense_parent.is_none() {
            m.condense_parent = Some(id);
            replaced += 1;
        }
    }
    let kept = messages.len() - keep_start + usize::from(keep_start > 0);
    stored.insert(
        keep_start,
        ApiMessage {
            is_summary: true,
            condense_id: Some(id),
            ..ApiMessage::from(summary)
        },
    );
    Condensed {
        stored,
        replaced,
        kept,
    }
}

/// `truncateConversation(messages, fracToRemove)`: of the messages not yet
/// hidden by a truncation, keep the first and hide the next
/// `floor((visible - 1) * frac)` rounded down to even, then insert the marker
/// before the first one kept. Returns how many were hidden.
pub fn truncate_conversation(messages: &mut Vec<ApiMessage>, frac: f64, id: u32) -> usize {
    let visible: Vec<usize> = (0..messages.len())
        .filter(|&i| messages[i].truncation_parent.is_none() && !messages[i].is_truncation_marker)
        .collect();
    let raw = (visible.len().saturating_sub(1) as f64 * frac).floor();
    let raw = if raw.is_finite() && raw > 0.0 {
        raw as usize
    } else {
        0
    };
    let remove = (raw - raw % 2).min(visible.len().saturating_sub(1));
    if remove == 0 {
        return 0;
    }
    for &i in &visible[1..=remove] {
        messages[i].truncation_parent = Some(id);
    }
    let at = visible.get(remove + 1).copied().unwrap_or(messages.len());
    messages.insert(
        at,
        ApiMessage {
            is_truncation_marker: true,
            truncation_id: Some(id),
            ..ApiMessage::from(Message::user_text(truncation_marker(remove)))
        },
    );
    remove
}
