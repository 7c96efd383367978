//! Stream placeholders in a Claude Code log's `output_tokens`.
//!
//! Claude Code writes a response's records as its blocks stream, each with
//! the `usage` the stream had reported so far; 2.0.x logs often keep only
//! the count of the stream's first event (`output_tokens` 1, 2 or 11) for a
//! reply whose logged content is hundreds of tokens (85 of 124 requests
//! in one held-out log). Such a count is not the reply's size: a
//! trigger that adds it, or a bill that prices it, is short by the reply.
//!
//! A recorded count is a placeholder when it is far below the size of the
//! content the log holds for the same response, counted with the run's
//! counter ([`is_placeholder`]); the estimate then stands in for it, and
//! every number that uses it says "estimated".

use std::collections::HashMap;

use serde_json::Value;

use crate::message::{Block, Message, Role};
use crate::tokens::TokenCounter;

/// A recorded count at most this share of the counted content is a
/// placeholder: a real count is the content's size within the counter's
/// error (a few per cent, at most tens of per cent for the approximate
/// counter), never a quarter of it.
pub const FAR_BELOW: f64 = 0.25;

/// Content smaller than this many tokens is never judged: a short reply's
/// real count and a placeholder are alike (a one-word answer is 1–2 tokens).
pub const MIN_CONTENT: usize = 20;

/// One response's recorded output beside its logged content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Output {
    /// The largest `output_tokens` among the response's records.
    pub recorded: u64,
    /// Its logged content (text, thinking, tool calls), counted.
    pub counted: usize,
}

impl Output {
    /// Whether `recorded` is a stream placeholder ([`is_placeholder`]).
    pub fn placeholder(&self) -> bool {
        is_placeholder(self.recorded, self.counted)
    }

    /// The output to use: the recorded count, or the estimate from the
    /// content where the count is a placeholder (with `true`: estimated).
    pub fn best(&self) -> (u64, bool) {
        if self.placeholder() {
            (self.counted as u64, true)
        } else {
            (self.recorded, false)
        }
    }
}

/// Whether a recorded `output_tokens` is a stream placeholder for a reply
/// whose logged content counts `counted` tokens: far below it
/// ([`FAR_BELOW`]), for content of at least [`MIN_CONTENT`] tokens.
pub fn is_placeholder(recorded: u64, counted: usize) -> bool {
    counted >= MIN_CONTENT && (recorded as f64) < counted as f64 * FAR_BELOW
}

/// Every assistant response of `records` by `message.id`: its recorded
/// output (the largest among its records) and its logged content counted
/// with `counter`. Responses without a recorded count are left out.
pub fn outputs(records: &[Value], counter: &dyn TokenCounter) -> HashMap<String, Output> {
    responses(records)
        .into_iter()
        .map(|(id, recorded, reply)| {
            let counted = counter.count_message(&reply);
            (id.to_string(), Output { recorded, counted })
        })
        .collect()
}

/// The responses of [`outputs`] whose recorded output is a placeholder,
/// each counted only when [`TokenCounter::count_message_at_most`] cannot
/// clear it: a count at least the bound's could not make it one
/// ([`is_placeholder`] only grows with the count), so most real counts
/// are never counted (with the Claude estimator that spares the o200k
/// table and its counting wherever no reply is a placeholder).
pub fn placeholder_outputs(
    records: &[Value],
    counter: &dyn TokenCounter,
) -> HashMap<String, Output> {
    responses(records)
        .into_iter()
        .filter(|(_, recorded, reply)| {
            is_placeholder(*recorded, counter.count_message_at_most(reply))
        })
        .map(|(id, recorded, reply)| {
            let counted = counter.count_message(&reply);
            (id.to_string(), Output { recorded, counted })
        })
        .filter(|(_, o)| o.placeholder())
        .collect()
}

/// Every assistant response with a recorded output: its id, that output
/// (the largest among its records) and its logged content as one message.
fn responses(records: &[Value]) -> Vec<(&str, u64, Message)> {
    let mut recorded: HashMap<&str, u64> = HashMap::new();
    let mut blocks: HashMap<&str, Vec<Block>> = HashMap::new();
    for r in records
        .iter()
        .filter(|r| r.get("type").and_then(Value::as_str) == Some("assistant"))
    {
        let Some(id) = r.pointer("/message/id").and_then(Value::as_str) else {
            continue;
        };
        if let Some(n) = r
            .pointer("/message/usage/output_tokens")
            .and_then(Value::as_u64)
        {
            let slot = recorded.entry(id).or_default();
            *slot = (*slot).max(n);
        }
        if let Some(items) = r.pointer("/message/content").and_then(Value::as_array) {
            let out = blocks.entry(id).or_default();
            out.extend(items.iter().flat_map(super::block_of));
        }
    }
    recorded
        .into_iter()
        .map(|(id, n)| {
            let content = blocks.remove(id).unwrap_or_default();
            let reply = Message {
                role: Role::Assistant,
                content: crate::message::Content::Blocks(content),
            };
            (id, n, reply)
        })
        .collect()
}

/// How many of a log's responses record a placeholder, of how many.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct Count {
    /// Responses whose recorded output is a placeholder.
    pub placeholders: usize,
    /// Responses with a recorded output.
    pub responses: usize,
}

/// [`Count`] over `outputs`.
pub fn count(outputs: &HashMap<String, Output>) -> Count {
    Count {
        placeholders: outputs.values().filter(|o| o.placeholder()).count(),
        responses: outputs.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reply(id: &str, output: u64, text: &str) -> Value {
        json!({"type": "assistant", "message": {"id": id, "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "usage": {"output_tokens": output}}})
    }

    #[test]
    fn placeholders_are_the_outputs_that_are_placeholders() {
        let long = "the build failed because the linker ran out of memory; ".repeat(20);
        let records = vec![
            // A stream placeholder: 2 tokens for hundreds logged.
            reply("a", 2, &long),
            // A real count: about the content's size (cleared by the bound).
            reply("b", 5_000, &long),
            // Near the line: the bound cannot clear it, the count does.
            reply("c", 80, &long),
            // A short reply counted in full (the per-message rate makes
            // its estimate about 56).
            reply("d", 40, "ok"),
        ];
        let claude = crate::tokens::Tokens::Claude.counter();
        let every = outputs(&records, claude.as_ref());
        let want: HashMap<String, Output> =
            every.into_iter().filter(|(_, o)| o.placeholder()).collect();
        let got = placeholder_outputs(&records, claude.as_ref());
        assert_eq!(got, want);
        let mut ids: Vec<&str> = got.keys().map(String::as_str).collect();
        ids.sort_unstable();
        assert_eq!(ids, ["a"], "{got:?}");
    }
}
