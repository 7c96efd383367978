//! Pair repair, one message at a time: every `tool_use` answered in the next
//! message, every `tool_result` answering a `tool_use` of the message before
//! it (the damage policy of [`super`]).
//!
//! [`Repair`] reads messages in order with at most a few messages of
//! lookahead, so a long session streamed from its file is repaired without
//! holding it whole; [`repair_pairs`] runs the same repair over a vector.

use std::collections::{HashSet, VecDeque};

use super::{DiagnosticKind, Origin, Sink, MISSING_RESULT};
use crate::error::LabResult;
use crate::message::{message_chars, Block, Content, Message, Role};

/// A message and where it came from.
pub(crate) type Sourced = (Message, Origin);

/// Repairs the messages of `input` as they are read.
pub(crate) struct Repair<I> {
    input: I,
    /// Messages read (or synthesized) but not yet repaired, next first.
    queue: VecDeque<Sourced>,
    /// `tool_use` ids of the last message handed out.
    asked: HashSet<String>,
}

impl<I: Iterator<Item = LabResult<Sourced>>> Repair<I> {
    pub(crate) fn new(input: I) -> Self {
        Repair {
            input,
            queue: VecDeque::new(),
            asked: HashSet::new(),
        }
    }

    /// The next input message, its `extra` (recorded minus lab size) fixed
    /// before any repair changes it, so a repaired message keeps what the
    /// lab model leaves out of it.
    fn read(&mut self) -> Option<LabResult<Sourced>> {
        self.input.next().map(|r| {
            r.map(|(m, mut o)| {
                if o.recorded > 0 {
                    o.extra = o.recorded as i64 - message_chars(&m) as i64;
                }
                (m, o)
            })
        })
    }

    /// The next repaired message; diagnostics go to `sink`.
    pub(crate) fn next_with(&mut self, sink: &mut Sink<'_>) -> Option<LabResult<Sourced>> {
        loop {
            let (mut m, o) = match self.queue.pop_front() {
                Some(x) => x,
                None => match self.read()? {
                    Ok(x) => x,
                    Err(e) => return Some(Err(e)),
                },
            };
            if m.is_tool_result() {
                match remove_orphans(&mut m, &self.asked, o, sink) {
                    Ok(true) => continue,
                    Ok(false) => {}
                    Err(e) => return Some(Err(e)),
                }
            }
            if m.has_tool_use() {
                if let Err(e) = self.answer_dangling(&m, o, sink) {
                    return Some(Err(e));
                }
            }
            self.asked = m.tool_use_ids().into_iter().map(str::to_string).collect();
            return Some(Ok((m, o)));
        }
    }

    /// Synthesize a [`MISSING_RESULT`] for every call of `m` that the next
    /// message does not answer: into the next message when it is a user
    /// message, else as a new message after `m`.
    fn answer_dangling(&mut self, m: &Message, o: Origin, sink: &mut Sink<'_>) -> LabResult<()> {
        if self.queue.is_empty() {
            if let Some(next) = self.read() {
                self.queue.push_back(next?);
            }
        }
        let answered: HashSet<&str> = self
            .queue
            .front()
            .map(|(n, _)| n.tool_result_ids().into_iter().collect())
            .unwrap_or_default();
        let missing: Vec<String> = m
            .tool_use_ids()
            .into_iter()
            .filter(|id| !answered.contains(id))
            .map(str::to_string)
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        for id in &missing {
            sink.report(
                o.line,
                o.column,
                DiagnosticKind::DanglingToolUse,
                format!("tool_use `{id}` has no tool_result; synthesized \"{MISSING_RESULT}\""),
            )?;
        }
        let results: Vec<Block> = missing
            .into_iter()
            .map(|tool_use_id| Block::ToolResult {
                tool_use_id,
                content: MISSING_RESULT.to_string(),
            })
            .collect();
        match self.queue.front_mut() {
            Some((next, _)) if next.role == Role::User => {
                let mut blocks =
                    match std::mem::replace(&mut next.content, Content::Blocks(Vec::new())) {
                        Content::Blocks(b) => b,
                        Content::Text(t) => vec![Block::Text { text: t }],
                    };
                // Results first, as the API requires.
                let mut merged = results;
                merged.append(&mut blocks);
                next.content = Content::Blocks(merged);
            }
            _ => {
                let answer = Message::user_blocks(results);
                self.queue.push_front((answer, Origin::default()));
            }
        }
        Ok(())
    }
}

/// Remove the results of `m` that answer nothing in `asked` (the calls of
/// the message before it); true when nothing is left of the message.
fn remove_orphans(
    m: &mut Message,
    asked: &HashSet<String>,
    origin: Origin,
    sink: &mut Sink<'_>,
) -> LabResult<bool> {
    let mut orphans = Vec::new();
    if let Content::Blocks(blocks) = &mut m.content {
        blocks.retain(|b| match b {
            Block::ToolResult { tool_use_id, .. } if !asked.contains(tool_use_id) => {
                orphans.push(tool_use_id.clone());
                false
            }
            _ => true,
        });
    }
    for id in orphans {
        sink.report(
            origin.line,
            origin.column,
            DiagnosticKind::OrphanToolResult,
            format!("tool_result for `{id}` answers no tool_use of the message before it; removed"),
        )?;
    }
    Ok(m.blocks().is_empty() && matches!(m.content, Content::Blocks(_)))
}

/// Make every `tool_use` answered in the next message and every `tool_result`
/// answer a `tool_use` of the message before it.
///
/// `origins` runs parallel to `messages` and is kept parallel; each origin's
/// `extra` (recorded minus lab size) is fixed here, before any repair.
pub(crate) fn repair_pairs(
    messages: &mut Vec<Message>,
    origins: &mut Vec<Origin>,
    sink: &mut Sink<'_>,
) -> LabResult<()> {
    debug_assert_eq!(messages.len(), origins.len());
    let input: Vec<Sourced> = std::mem::take(messages)
        .into_iter()
        .zip(std::mem::take(origins))
        .collect();
    let mut repair = Repair::new(input.into_iter().map(Ok));
    while let Some(item) = repair.next_with(sink) {
        let (m, o) = item?;
        messages.push(m);
        origins.push(o);
    }
    Ok(())
}
