//! Deterministic model roles: summaries and choices without a network.
//!
//! A design that asks a model to summarise gets its reply from one of:
//! - [`Extractive`]: a rule-based summariser with a stated capacity (keeps
//!   the first line of each user message, every path-like token, every error
//!   line, newest first, up to `capacity` chars): the same input always gives
//!   the same summary, so what survives is a property of the design;
//! - [`Scripted`]: replies given in order (a test or scenario decides);
//! - [`Cassette`]: recorded prompt → reply pairs, so an arm run once against
//!   a real model replays exactly.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::message::{Block, Content, Message, Role};

/// What a summary call is asked.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryRequest<'a> {
    /// The policy's instruction prompt, byte for byte as upstream sends it.
    pub prompt: &'a str,
    /// The messages to summarise.
    pub messages: &'a [Message],
    /// A previous summary the design asks the model to extend, if any.
    pub previous: Option<&'a str>,
}

/// Why a model role failed (the policy decides what happens then).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelError(pub String);

impl std::fmt::Display for ModelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The model behind a policy's side calls.
pub trait ModelRole: Send {
    /// Name for reports (`extractive(2000)`, `scripted`, `cassette:FILE`).
    fn name(&self) -> String;
    /// A summary of `req.messages`.
    fn summarise(&mut self, req: &SummaryRequest<'_>) -> Result<String, ModelError>;
}

/// Recorded answers first, then the [`Extractive`] model: a replay of a
/// product's log gives the product's own policy the summaries the product's
/// model wrote, in order, as it gives every call its recorded reply.
#[derive(Debug, Clone, Default)]
pub struct Recorded {
    answers: std::collections::VecDeque<String>,
    /// Given to every call once `answers` run out, before the fallback.
    every: Option<String>,
    fallback: Extractive,
}

impl Recorded {
    /// `answers` in the order they were given.
    pub fn new(answers: Vec<String>) -> Recorded {
        Recorded {
            answers: answers.into(),
            every: None,
            fallback: Extractive::default(),
        }
    }

    /// `answer` at every call: an answer known only by its predicted size
    /// (a summary whose length comes from other sessions).
    pub fn every(answer: String) -> Recorded {
        Recorded {
            every: Some(answer),
            ..Recorded::new(Vec::new())
        }
    }
}

impl ModelRole for Recorded {
    fn name(&self) -> String {
        format!("recorded, then {}", self.fallback.name())
    }

    fn summarise(&mut self, req: &SummaryRequest<'_>) -> Result<String, ModelError> {
        match (self.answers.pop_front(), &self.every) {
            (Some(a), _) => Ok(a),
            (None, Some(a)) => Ok(a.clone()),
            (None, None) => self.fallback.summarise(req),
        }
    }
}

/// Rule-based summariser with a capacity in chars.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Extractive {
    /// Most chars a summary may have.
    pub capacity: usize,
}

impl Default for Extractive {
    fn default() -> Self {
        Extractive { capacity: 2_000 }
    }
}

/// The lines an extractive summary is built from, oldest first.
pub fn salient_lines(messages: &[Message]) -> Vec<String> {
    let mut out = Vec::new();
    for m in messages {
        match (&m.content, m.role) {
            (Content::Text(t), Role::User) => {
                out.extend(t.lines().next().map(|l| format!("user: {l}")))
            }
            (Content::Text(_), Role::Assistant) => {}
            (Content::Blocks(blocks), _) => {
                for b in blocks {
                    match b {
                        Block::Text { text } if m.role == Role::User => {
                            out.extend(text.lines().next().map(|l| format!("user: {l}")))
                        }
                        Block::ToolUse { name, input, .. } => {
                            out.push(format!("called {name} {}", compact_input(input)))
                        }
                        Block::ToolResult { content, .. } => out.extend(
                            content
                                .lines()
                                .filter(|l| {
                                    let l = l.to_ascii_lowercase();
                                    l.contains("error") || l.contains("failed")
                                })
                                .take(2)
                                .map(|l| format!("error: {l}")),
                        ),
                        _ => {}
                    }
                }
            }
        }
    }
    out
}

fn compact_input(input: &serde_json::Value) -> String {
    let s = input.to_string();
    s.chars().take(120).collect()
}

impl ModelRole for Extractive {
    fn name(&self) -> String {
        format!("extractive({})", self.capacity)
    }

    fn summarise(&mut self, req: &SummaryRequest<'_>) -> Result<String, ModelError> {
        // Newest lines win when the capacity is short: later context is what
        // the next turn most likely needs; the previous summary comes first.
        let mut lines: Vec<String> = req
            .previous
            .map(|p| p.lines().map(String::from).collect())
            .unwrap_or_default();
        lines.extend(salient_lines(req.messages));
        let mut kept: Vec<&str> = Vec::new();
        let mut used = 0;
        for l in lines.iter().rev() {
            let n = l.chars().count() + 1;
            if used + n > self.capacity {
                break;
            }
            used += n;
            kept.push(l);
        }
        kept.reverse();
        Ok(kept.join("\n"))
    }
}

/// Replies in order; an `Err` entry makes that call fail. Past the end every
/// call fails (a script that is too short is a visible failure, not a guess).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scripted {
    /// Replies still to give.
    pub replies: std::collections::VecDeque<Result<String, String>>,
}

impl Scripted {
    /// A script of successful replies.
    pub fn replies<I: IntoIterator<Item = S>, S: Into<String>>(items: I) -> Self {
        Scripted {
            replies: items.into_iter().map(|s| Ok(s.into())).collect(),
        }
    }
}

impl ModelRole for Scripted {
    fn name(&self) -> String {
        "scripted".into()
    }

    fn summarise(&mut self, _req: &SummaryRequest<'_>) -> Result<String, ModelError> {
        match self.replies.pop_front() {
            Some(Ok(s)) => Ok(s),
            Some(Err(e)) => Err(ModelError(e)),
            None => Err(ModelError("scripted model has no reply left".into())),
        }
    }
}

/// Recorded replies keyed by a hash of the exact prompt and messages.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cassette {
    /// Key (see [`Cassette::key`]) → reply.
    pub replies: BTreeMap<String, String>,
}

impl Cassette {
    /// The key of a request: FNV-1a 64 of the prompt, the previous summary and
    /// the messages as JSON, in hex (stable across platforms and Rust versions).
    pub fn key(req: &SummaryRequest<'_>) -> String {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut eat = |bytes: &[u8]| {
            for b in bytes {
                h ^= u64::from(*b);
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
        };
        eat(req.prompt.as_bytes());
        eat(&[0]);
        eat(req.previous.unwrap_or("").as_bytes());
        eat(&[0]);
        eat(serde_json::to_string(req.messages)
            .unwrap_or_default()
            .as_bytes());
        format!("{h:016x}")
    }
}

impl ModelRole for Cassette {
    fn name(&self) -> String {
        format!("cassette({} replies)", self.replies.len())
    }

    fn summarise(&mut self, req: &SummaryRequest<'_>) -> Result<String, ModelError> {
        let key = Self::key(req);
        self.replies
            .get(&key)
            .cloned()
            .ok_or_else(|| ModelError(format!("cassette has no reply for request {key}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extractive_keeps_newest_within_capacity() {
        let msgs = vec![
            Message::user_text("first constraint: use tabs"),
            Message::user_text("second: run make test"),
        ];
        let mut m = Extractive { capacity: 30 };
        let req = SummaryRequest {
            prompt: "p",
            messages: &msgs,
            previous: None,
        };
        assert_eq!(m.summarise(&req).unwrap(), "user: second: run make test");
        let mut big = Extractive::default();
        assert_eq!(big.summarise(&req).unwrap().lines().count(), 2);
    }

    #[test]
    fn recorded_answers_in_order_then_every_or_the_fallback() {
        let req = SummaryRequest {
            prompt: "p",
            messages: &[],
            previous: None,
        };
        let mut r = Recorded::new(vec!["a".into()]);
        assert_eq!(r.summarise(&req).unwrap(), "a");
        assert_eq!(r.summarise(&req).unwrap(), "");
        let mut e = Recorded::every("sized".into());
        assert_eq!(e.summarise(&req).unwrap(), "sized");
        assert_eq!(e.summarise(&req).unwrap(), "sized");
    }

    #[test]
    fn scripted_fails_past_its_end_and_cassette_misses_loudly() {
        let mut s = Scripted::replies(["one"]);
        let req = SummaryRequest {
            prompt: "p",
            messages: &[],
            previous: None,
        };
        assert_eq!(s.summarise(&req).unwrap(), "one");
        assert!(s.summarise(&req).is_err());
        let mut c = Cassette::default();
        assert!(c
            .summarise(&req)
            .unwrap_err()
            .0
            .contains(&Cassette::key(&req)));
        c.replies.insert(Cassette::key(&req), "r".into());
        assert_eq!(c.summarise(&req).unwrap(), "r");
    }
}
