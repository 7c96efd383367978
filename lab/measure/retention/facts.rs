//! Keyed facts and two retention classes beyond present / reachable / gone:
//! **mutated** and **stale**, exact, no judge.
//!
//! A *fact* is one line of prose (a user or assistant text, outside
//! fenced code blocks; never a tool result, tool input or thinking) of one
//! of two shapes, after optional indentation and a `- ` or `* ` bullet:
//! - `key = value`: `key` an identifier (`[A-Za-z_][A-Za-z0-9_.-]*`);
//! - `KEY: value`: `KEY` an upper-case identifier of two chars or more
//!   (`[A-Z][A-Z0-9_]+`: `PLAN:`, `STATUS:`, `TIMEOUT_MS:`).
//!
//! The key is at most [`MAX_KEY`] chars; the value is the rest of the line,
//! trimmed, without one trailing `.`, `,` or `;`, 1 to [`MAX_VALUE`] chars.
//! A key's **latest value** at a request is the value of the last fact line
//! with that key among the messages appended before it; every value it had
//! before that is **superseded** (unless restated later).
//!
//! The request is read with the same grammar. For each key the transcript
//! has stated so far:
//! - **mutated**: the request holds the key with a value it never had (a
//!   summary that restates a number or a path wrongly);
//! - **stale**: the request holds a superseded value and not the latest one
//!   (a plan whose revision was dropped while the old plan stayed).
//!
//! Keys the transcript never stated are not judged. On a replay that
//! changes nothing (`none`) neither class can fire: every fact line of a
//! request is a line of the transcript so far, latest lines included.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::message::{Block, Content, Message};

/// Longest key, chars.
pub const MAX_KEY: usize = 64;
/// Longest value, chars.
pub const MAX_VALUE: usize = 200;
/// Samples kept per class.
const SAMPLES: usize = 3;

/// The fact a line states, if it states one: (key, value).
pub fn fact_in_line(line: &str) -> Option<(&str, &str)> {
    let l = line.trim_start();
    let l = l
        .strip_prefix("- ")
        .or_else(|| l.strip_prefix("* "))
        .unwrap_or(l);
    let (key, value) = match l.find(['=', ':']) {
        Some(at) if l.as_bytes()[at] == b'=' => (l[..at].trim_end(), &l[at + 1..]),
        Some(at) if l[at + 1..].starts_with(' ') || at + 1 == l.len() => {
            let key = &l[..at];
            let upper = key.len() >= 2
                && key.starts_with(|c: char| c.is_ascii_uppercase())
                && key
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
            if !upper {
                return None;
            }
            (key, &l[at + 1..])
        }
        _ => return None,
    };
    let ident = key.len() <= MAX_KEY
        && key.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
    // `==`, `=>`, `!=`-style operators are code, not facts.
    if !ident || value.starts_with(['=', '>']) {
        return None;
    }
    let value = value.trim();
    let value = value
        .strip_suffix(['.', ',', ';'])
        .unwrap_or(value)
        .trim_end();
    let n = value.chars().count();
    (1..=MAX_VALUE).contains(&n).then_some((key, value))
}

/// Every fact the prose of `messages` states, in order.
pub fn facts_in(messages: &[Message]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for m in messages {
        let texts: Vec<&str> = match &m.content {
            Content::Text(t) => vec![t],
            Content::Blocks(bs) => bs
                .iter()
                .filter_map(|b| match b {
                    Block::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect(),
        };
        for t in texts {
            let mut fenced = false;
            for line in t.lines() {
                if line.trim_start().starts_with("```") {
                    fenced = !fenced;
                    continue;
                }
                if let Some((k, v)) = fact_in_line(line).filter(|_| !fenced) {
                    out.push((k.to_string(), v.to_string()));
                }
            }
        }
    }
    out
}

/// What the transcript said of one key so far.
#[derive(Debug, Default)]
struct History {
    /// Every value it had, in order of first statement.
    values: Vec<String>,
    /// The value stated last.
    latest: String,
}

/// One class's findings over a replay.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ClassFigures {
    /// Keys in this class at the last request.
    pub at_end: usize,
    /// Requests where some key was in this class.
    pub requests: usize,
    /// The first request (0-based) where some key was.
    pub first: Option<usize>,
    /// A few findings, `key: held "value" (latest "value")`.
    pub samples: Vec<String>,
}

impl ClassFigures {
    fn record(&mut self, call: usize, found: &[String]) {
        self.at_end = found.len();
        if found.is_empty() {
            return;
        }
        self.requests += 1;
        self.first.get_or_insert(call);
        for f in found {
            if self.samples.len() < SAMPLES && !self.samples.contains(f) {
                self.samples.push(f.clone());
            }
        }
    }
}

/// Keyed facts and the two classes, as a replay goes.
#[derive(Debug, Default)]
pub struct FactLedger {
    keys: HashMap<String, History>,
    mutated: ClassFigures,
    stale: ClassFigures,
}

/// What [`FactLedger`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct FactClasses {
    /// Keys the transcript stated.
    pub keys: usize,
    /// Keys whose value changed at least once.
    pub revised: usize,
    /// A key held with a value it never had.
    pub mutated: ClassFigures,
    /// A superseded value held while the latest is not.
    pub stale: ClassFigures,
}

impl FactLedger {
    /// A recorded message arrived: its facts update their keys.
    pub fn on_message(&mut self, m: &Message) {
        for (k, v) in facts_in(std::slice::from_ref(m)) {
            let h = self.keys.entry(k).or_default();
            if !h.values.contains(&v) {
                h.values.push(v.clone());
            }
            h.latest = v;
        }
    }

    /// A request was sent: judge every key it states.
    pub fn on_request(&mut self, call: usize, request: &[Message]) {
        self.on_facts(call, facts_in(request).iter());
    }

    /// A request was sent whose prose states `facts`, in order (what
    /// [`facts_in`] reads of it): judge every key it states.
    pub fn on_facts<'a>(&mut self, call: usize, facts: impl Iterator<Item = &'a (String, String)>) {
        if self.keys.is_empty() {
            return;
        }
        let mut held: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (k, v) in facts {
            if self.keys.contains_key(k) {
                held.entry(k).or_default().push(v);
            }
        }
        let (mut mutated, mut stale) = (Vec::new(), Vec::new());
        for (&k, values) in &held {
            let h = &self.keys[k];
            let stated = |v: &&str| h.values.iter().any(|x| x == v);
            if let Some(wrong) = values.iter().find(|v| !stated(v)) {
                mutated.push(format!("{k}: held {wrong:?} (latest {:?})", h.latest));
            }
            if !values.contains(&h.latest.as_str()) {
                if let Some(old) = values.iter().find(|v| stated(v)) {
                    stale.push(format!("{k}: held {old:?} (latest {:?})", h.latest));
                }
            }
        }
        self.mutated.record(call, &mutated);
        self.stale.record(call, &stale);
    }

    /// The figures after the replay.
    pub fn finish(&self) -> FactClasses {
        FactClasses {
            keys: self.keys.len(),
            revised: self.keys.values().filter(|h| h.values.len() > 1).count(),
            mutated: self.mutated.clone(),
            stale: self.stale.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grammar_takes_assignments_and_upper_case_labels_only() {
        assert_eq!(fact_in_line("retries = 3"), Some(("retries", "3")));
        assert_eq!(
            fact_in_line("  - db.host=10.0.0.2;"),
            Some(("db.host", "10.0.0.2"))
        );
        assert_eq!(
            fact_in_line("PLAN: migrate the tables first."),
            Some(("PLAN", "migrate the tables first"))
        );
        for no in [
            "Note: lower-case labels are prose",
            "if a == b",
            "x => y",
            "see https://x.org/a=b",
            "let x = 5",
            "retries =",
            "P: one letter",
            "URL:https://no-space",
        ] {
            assert_eq!(fact_in_line(no), None, "{no}");
        }
    }

    #[test]
    fn fenced_code_and_tool_results_state_no_facts() {
        let m = vec![
            Message::user_text("a = 1\n```\nb = 2\n```\nc = 3"),
            Message::tool_results(vec![("t".into(), "d = 4".into())]),
        ];
        let keys: Vec<String> = facts_in(&m).into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["a", "c"]);
    }

    /// By hand: `n` goes 1 -> 2; a request holding 7 is mutated, one
    /// holding 1 without 2 is stale, one holding both is neither.
    #[test]
    fn mutated_and_stale_by_hand() {
        let mut l = FactLedger::default();
        l.on_message(&Message::user_text("n = 1"));
        l.on_message(&Message::user_text("n = 2"));
        l.on_request(0, &[Message::user_text("n = 7")]);
        l.on_request(1, &[Message::user_text("n = 1")]);
        l.on_request(2, &[Message::user_text("n = 1\nn = 2\nm = 9")]);
        let f = l.finish();
        assert_eq!((f.keys, f.revised), (1, 1));
        assert_eq!((f.mutated.requests, f.mutated.first), (1, Some(0)));
        assert_eq!((f.stale.requests, f.stale.first), (1, Some(1)));
        assert_eq!((f.mutated.at_end, f.stale.at_end), (0, 0));
        assert_eq!(f.mutated.samples, [r#"n: held "7" (latest "2")"#]);
    }
}
