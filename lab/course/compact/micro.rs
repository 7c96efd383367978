//! Step 3: micro-compaction of old, already-seen tool results.
//!
//! The step never asks whether a result was saved. It scans the text: a line
//! starting with `Full output: ` becomes `[Earlier tool result saved at <path>]`,
//! anything else `[Earlier tool result omitted.]`. Its input must therefore
//! already have been rewritten by step 1 (the order safeguard). The unseen
//! guard (the second safeguard) skips results added since the last assistant
//! message. Without an idempotence marker a long saved-at placeholder is itself
//! over the 120-char rule and is compacted again — to "omitted", losing its pointer.

use super::persist::{chars, full_output_line, is_placeholder, OMITTED, SAVED_PREFIX};
use super::{Compactor, Event, Step};
use crate::error::LabResult;
use crate::message::{estimate_chars, json_str_chars, tool_result_positions, Block, Message, Role};

/// The first message after the last assistant message: the results at or
/// after it were added since, and the model has not seen them yet (course
/// `unseen_tool_result_positions`).
fn unseen_start(messages: &[Message]) -> usize {
    messages
        .iter()
        .rposition(|m| m.role == Role::Assistant)
        .map_or(0, |i| i + 1)
}

/// `[Earlier tool result saved at <path>]`, pushed into one allocation
/// (`format!` cost as much as the rest of the step).
fn saved_at(path: &str) -> String {
    let mut out = String::with_capacity(SAVED_PREFIX.len() + path.len() + 1);
    out.push_str(SAVED_PREFIX);
    out.push_str(path);
    out.push(']');
    out
}

impl Compactor {
    /// Step 3 (course `micro_compact`); with `target`, stop once the estimate is under it.
    pub fn micro_compact(
        &mut self,
        messages: &mut [Message],
        target: Option<usize>,
    ) -> LabResult<()> {
        let sw = self.config.switches.clone();
        let keep = self.config.constants.keep_recent_results;
        let min = self.config.constants.placeholder_min_chars;
        // Unseen = at or after `start` (every candidate is a result position).
        let start = unseen_start(messages);
        let unseen = |mi: usize| mi >= start;
        let candidates: Vec<(usize, usize)> = tool_result_positions(messages)
            .map(|(mi, bi, _)| (mi, bi))
            .filter(|&(mi, _)| !(sw.unseen_guard && unseen(mi)))
            .collect();
        let cut = candidates.len().saturating_sub(keep);
        let mut estimate = target.map(|_| estimate_chars(messages));
        for &(mi, bi) in &candidates[..cut] {
            if let (Some(t), Some(e)) = (target, estimate) {
                if e <= t {
                    break;
                }
            }
            let Block::ToolResult {
                tool_use_id,
                content,
            } = &mut messages[mi].blocks_mut()[bi]
            else {
                continue;
            };
            if chars(content) <= min {
                continue;
            }
            // The content is taken out for the step rather than copied, and
            // put back if it fails or leaves the text as it was.
            let old = std::mem::take(content);
            let new = match self.placeholder_for(tool_use_id, &old) {
                Ok(Some((new, with_pointer))) => {
                    self.events.push(Event::Placeholder {
                        id: tool_use_id.clone(),
                        with_pointer,
                        was_placeholder: is_placeholder(&old),
                        unseen: unseen(mi),
                    });
                    if let Some(e) = estimate.as_mut() {
                        *e = *e + json_str_chars(&new) - json_str_chars(&old);
                    }
                    new
                }
                Ok(None) => old,
                Err(e) => {
                    *content = old;
                    return Err(e);
                }
            };
            *content = new;
        }
        Ok(())
    }

    /// The placeholder for result `id` with text `old`, and whether it keeps
    /// a pointer; `None` when it would be `old` itself (an idempotent
    /// placeholder maps to itself: nothing is compacted).
    fn placeholder_for(&mut self, id: &str, old: &str) -> LabResult<Option<(String, bool)>> {
        let sw = &self.config.switches;
        let mut saved = if sw.idempotent_placeholders {
            self.recognised_path(old)
        } else {
            full_output_line(old).map(str::to_string)
        };
        if saved.is_none() && sw.save_before_omit {
            saved = Some(self.save_output(Step::Micro, id, old, str::to_string)?);
        }
        let new = match &saved {
            Some(p) => saved_at(p),
            None => OMITTED.to_string(),
        };
        Ok((new != old).then_some((new, saved.is_some())))
    }
}
