//! Which content a recorded request sent, including what the log keeps off
//! its `parentUuid` chain.
//!
//! The chain above a response is one path through a tree. When a response
//! makes parallel tool calls, Claude Code logs each `tool_use` block and each
//! `tool_result` as its own record; the chain then runs through one of them
//! and the siblings hang off it. The API request carried them all: one
//! assistant message with every tool call and one user message with every
//! result (consecutive user records are one API message). This module puts
//! them back, using only records logged before the response.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::message::Role;

/// A timestamp shared by this many records or more is a bulk stamp (an
/// export or resume rewrote it), not when the record was written.
pub const BULK_STAMP: usize = 10;

/// Lookups over all records of a log.
pub struct Index<'a> {
    /// File position of each record, by uuid.
    at: HashMap<&'a str, usize>,
    /// Positions of the assistant records of each response, by message id.
    by_id: HashMap<&'a str, Vec<usize>>,
    /// Position of the first user record holding each tool use's result.
    result_at: HashMap<&'a str, usize>,
    /// Records per timestamp string.
    stamps: HashMap<&'a str, usize>,
    records: &'a [Value],
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn content(r: &Value) -> Option<&Value> {
    r.pointer("/message/content")
}

/// Content items of a record: each block, or the string content itself.
fn items(r: &Value) -> Vec<&Value> {
    match content(r) {
        Some(Value::Array(a)) => a.iter().collect(),
        Some(s @ Value::String(_)) => vec![s],
        _ => Vec::new(),
    }
}

fn is_kind(item: &Value, kind: &str) -> bool {
    str_of(item, "type") == Some(kind)
}

impl<'a> Index<'a> {
    /// Indexes `records`.
    pub fn new(records: &'a [Value]) -> Index<'a> {
        let mut ix = Index {
            at: HashMap::new(),
            by_id: HashMap::new(),
            result_at: HashMap::new(),
            stamps: HashMap::new(),
            records,
        };
        for (i, r) in records.iter().enumerate() {
            ix.add(i, r);
        }
        ix
    }

    fn add(&mut self, i: usize, r: &'a Value) {
        if let Some(u) = str_of(r, "uuid") {
            self.at.insert(u, i);
        }
        if let Some(t) = str_of(r, "timestamp") {
            *self.stamps.entry(t).or_default() += 1;
        }
        match str_of(r, "type") {
            Some("assistant") => {
                if let Some(id) = r.pointer("/message/id").and_then(Value::as_str) {
                    self.by_id.entry(id).or_default().push(i);
                }
            }
            Some("user") => {
                for item in items(r).into_iter().filter(|b| is_kind(b, "tool_result")) {
                    if let Some(t) = str_of(item, "tool_use_id") {
                        self.result_at.entry(t).or_insert(i);
                    }
                }
            }
            _ => {}
        }
    }

    /// A record's file position.
    pub fn position(&self, r: &Value) -> Option<usize> {
        self.at.get(str_of(r, "uuid")?).copied()
    }

    /// The record's time in Unix milliseconds, unless missing, unreadable or
    /// a bulk stamp.
    pub fn time(&self, r: &Value) -> Option<i64> {
        let t = str_of(r, "timestamp")?;
        if self.stamps.get(t).copied().unwrap_or(0) >= BULK_STAMP {
            return None;
        }
        super::parse_timestamp_ms(t)
    }

    /// The API messages of a chain (root first) as sent by a request logged
    /// at position `before`: role and content items per message.
    pub fn messages(&self, chain: &[&'a Value], before: usize) -> Vec<(Role, Vec<&'a Value>)> {
        let mut out = self.group(chain, before);
        self.add_missing_results(&mut out, before);
        out
    }

    /// Chain records grouped per API message; an assistant message gets
    /// every block its response logged before `before`, on the chain or not.
    fn group(&self, chain: &[&'a Value], before: usize) -> Vec<(Role, Vec<&'a Value>)> {
        let mut out: Vec<(Role, Vec<&'a Value>)> = Vec::new();
        let mut last_id: Option<&str> = None;
        for rec in chain {
            let id = rec.pointer("/message/id").and_then(Value::as_str);
            match (str_of(rec, "type"), out.last_mut()) {
                (Some("user"), Some((Role::User, prev))) => prev.extend(items(rec)),
                (Some("user"), _) => out.push((Role::User, items(rec))),
                (Some("assistant"), Some((Role::Assistant, _)))
                    if id.is_some() && id == last_id => {}
                (Some("assistant"), _) => out.push((Role::Assistant, self.response(rec, before))),
                _ => {}
            }
            last_id = id;
        }
        out
    }

    /// Every content item of the response `rec` belongs to, in log order,
    /// from records logged before `before` (plus `rec`'s own), without
    /// repeats (a resumed log may write a record twice).
    fn response(&self, rec: &'a Value, before: usize) -> Vec<&'a Value> {
        let id = rec.pointer("/message/id").and_then(Value::as_str);
        let mut positions: Vec<usize> = id
            .and_then(|id| self.by_id.get(id))
            .map(|v| v.iter().copied().filter(|&p| p < before).collect())
            .unwrap_or_default();
        let own = self.position(rec);
        if let Some(p) = own.filter(|p| !positions.contains(p)) {
            positions.push(p);
            positions.sort_unstable();
        }
        let mut records: Vec<&'a Value> = positions.iter().map(|&p| &self.records[p]).collect();
        if own.is_none() {
            records.push(rec);
        }
        let mut out: Vec<&'a Value> = Vec::new();
        for item in records.into_iter().flat_map(items) {
            if !out.contains(&item) {
                out.push(item);
            }
        }
        out
    }

    /// A tool call whose result is not in the messages gets it (logged off
    /// the chain, before `before`) in the user message that follows.
    fn add_missing_results(&self, msgs: &mut [(Role, Vec<&'a Value>)], before: usize) {
        let mut present: HashSet<&str> = msgs
            .iter()
            .filter(|(role, _)| *role == Role::User)
            .flat_map(|(_, items)| items.iter())
            .filter(|b| is_kind(b, "tool_result"))
            .filter_map(|b| str_of(b, "tool_use_id"))
            .collect();
        for i in 1..msgs.len() {
            if msgs[i].0 != Role::User || msgs[i - 1].0 != Role::Assistant {
                continue;
            }
            let calls: Vec<&str> = msgs[i - 1]
                .1
                .iter()
                .filter(|b| is_kind(b, "tool_use"))
                .filter_map(|b| str_of(b, "id"))
                .collect();
            for call in calls {
                if present.contains(call) {
                    continue;
                }
                if let Some(result) = self.result_block(call, before) {
                    msgs[i].1.insert(0, result);
                    present.insert(call);
                }
            }
        }
    }

    fn result_block(&self, call: &str, before: usize) -> Option<&'a Value> {
        let at = *self.result_at.get(call)?;
        if at >= before {
            return None;
        }
        items(&self.records[at])
            .into_iter()
            .find(|b| is_kind(b, "tool_result") && str_of(b, "tool_use_id") == Some(call))
    }
}
