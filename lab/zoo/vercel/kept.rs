//! `pruneMessages` kept between calls: the pruned form of every message
//! that left the newest messages is made once, not again at every call.
//!
//! Upstream prunes a fresh conversion of the whole history at every step;
//! done so here, a long run converted and pruned the whole history at
//! every call. What `pruneMessages` makes of one converted message depends
//! on the others only through two things: whether it is the last message
//! (reasoning before the last message), and, before the newest messages,
//! whether one of its tool parts' ids is among the ids of the newest
//! messages (such a part is kept). A message older than the newest ones and
//! than the last, none of whose ids is among the newest ids, is pruned the
//! same way at every later call until an id of its comes back among the
//! newest (a reused id, a result arriving late): so its pruned form is kept,
//! and the kept forms from the first such message on are made again when
//! that happens. The pruning is not monotone, hence the check. Only a single
//! rule naming no tools is kept this way (a rule naming tools looks up each
//! id's name in the whole history, whose last call with an id can change);
//! other options run the whole pruning.

use std::collections::{HashMap, HashSet};

use super::{drop_orphan_reasoning, from_am, keep_last, to_am, tool_part_id, Am, PruneMessages};
use crate::error::LabResult;
use crate::message::{Block, Content, Message, Role};
use crate::policy::PolicyEvent;

/// The pruning as of the last call.
#[derive(Debug, Clone)]
pub struct Kept {
    /// The options it was made with (a change starts it again).
    config: PruneMessages,
    /// History messages converted.
    converted: usize,
    /// The converted history.
    ams: Vec<Am>,
    /// Converted messages holding each tool part id, by index.
    holders: HashMap<String, Vec<usize>>,
    /// The pruned forms of `ams[..fixed]` left non-empty, with their index.
    pruned: Vec<(usize, Am)>,
    /// `removed[i]`: tool results removed from `ams[..i]` (`i <= fixed`).
    removed: Vec<usize>,
}

impl Kept {
    /// Whether `config` can be kept this way.
    pub fn applies(config: &PruneMessages) -> bool {
        match config.tool_calls.as_slice() {
            [] => true,
            [rule] => rule.tools.is_none(),
            _ => false,
        }
    }

    /// Nothing seen yet.
    pub fn new(config: &PruneMessages) -> Kept {
        Kept {
            config: config.clone(),
            converted: 0,
            ams: Vec::new(),
            holders: HashMap::new(),
            pruned: Vec::new(),
            removed: vec![0],
        }
    }

    /// Whether this state can go on for a history of `len` messages: made
    /// with the same options, from a history that only grew.
    pub fn fits(&self, config: &PruneMessages, len: usize) -> bool {
        self.config == *config && self.converted <= len
    }

    fn fixed(&self) -> usize {
        self.removed.len() - 1
    }

    /// `config.apply(history)`, with this call's events.
    pub fn advance(
        &mut self,
        history: &[Message],
        events: &mut Vec<PolicyEvent>,
    ) -> LabResult<Vec<Message>> {
        self.convert(history);
        let len = self.ams.len();
        // The rule's boundary and the ids kept before it (none without a rule).
        let keep = match self.config.tool_calls.first() {
            Some(rule) => Some(keep_last(&rule.kind)?.filter(|&n| n > 0)),
            None => None,
        };
        let tail = keep.flatten().map_or(len, |n| len.saturating_sub(n));
        let newest: HashSet<String> = match keep {
            Some(Some(_)) => self.ams[tail..]
                .iter()
                .flat_map(ids)
                .map(String::from)
                .collect(),
            _ => HashSet::new(),
        };
        let back = newest
            .iter()
            .filter_map(|id| self.holders.get(id))
            .flatten()
            .copied()
            .filter(|&i| i < self.fixed())
            .min();
        if let Some(i) = back {
            self.unfix(i);
        }
        let rule = keep.is_some();
        // Fix what no newest id touches, older than the newest and the last.
        while self.fixed() < tail.min(len.saturating_sub(1)) {
            let i = self.fixed();
            let am = &self.ams[i];
            if ids(am).any(|id| newest.contains(id)) {
                break;
            }
            let (pruned, removed) = self.prune(am, false, rule.then_some(&newest));
            if let Some(p) = pruned {
                self.pruned.push((i, p));
            }
            self.removed.push(self.removed[i] + removed);
        }
        let mut results = self.removed[self.fixed()];
        let mut out: Vec<Am> = self.pruned.iter().map(|(_, a)| a.clone()).collect();
        for i in self.fixed()..len {
            let kept = (rule && i < tail).then_some(&newest);
            let (pruned, removed) = self.prune(&self.ams[i], i + 1 == len, kept);
            results += removed;
            out.extend(pruned);
        }
        if results > 0 || out.len() < len {
            events.push(PolicyEvent::Dropped {
                messages: len - out.len(),
                why: format!("pruneMessages removed {results} tool results with their calls"),
            });
        }
        Ok(from_am(out))
    }

    /// Convert the messages appended since the last call.
    fn convert(&mut self, history: &[Message]) {
        let from = self.ams.len();
        self.ams.extend(to_am(&history[self.converted..]));
        self.converted = history.len();
        for (i, am) in self.ams.iter().enumerate().skip(from) {
            for id in ids(am) {
                self.holders.entry(id.to_string()).or_default().push(i);
            }
        }
    }

    /// Forget the kept forms from `ams[i]` on.
    fn unfix(&mut self, i: usize) {
        self.removed.truncate(i + 1);
        while self.pruned.last().is_some_and(|(j, _)| *j >= i) {
            self.pruned.pop();
        }
    }

    /// What `pruneMessages` makes of one converted message: the reasoning
    /// step (unless it is the last message), then, before the newest
    /// messages (`kept` is the newest ids), the tool step; `None` when
    /// empty messages are removed and it is left empty. With the tool
    /// results it removed.
    fn prune(&self, am: &Am, last: bool, kept: Option<&HashSet<String>>) -> (Option<Am>, usize) {
        let c = &self.config;
        let mut am = am.clone();
        let reasoning = c.reasoning == "all" || (c.reasoning == "before-last-message" && !last);
        if reasoning && am.message.role == Role::Assistant {
            if let Content::Blocks(b) = &mut am.message.content {
                b.retain(|p| !matches!(p, Block::Thinking { .. }));
            }
        }
        let mut removed = 0;
        if let (Some(kept), Content::Blocks(blocks)) = (kept, &mut am.message.content) {
            if am.message.role == Role::Assistant || am.tool {
                let keep_parts: Vec<bool> = blocks
                    .iter()
                    .map(|b| tool_part_id(b).is_none_or(|id| kept.contains(id)))
                    .collect();
                let keep_parts = drop_orphan_reasoning(blocks, keep_parts);
                let mut k = keep_parts.into_iter();
                blocks.retain(|b| {
                    let keep = k.next().unwrap_or(true);
                    removed += usize::from(!keep && matches!(b, Block::ToolResult { .. }));
                    keep
                });
            }
        }
        let empty = match &am.message.content {
            Content::Text(t) => t.is_empty(),
            Content::Blocks(b) => b.is_empty(),
        };
        let dropped = empty && c.empty_messages == "remove";
        ((!dropped).then_some(am), removed)
    }
}

/// The tool part ids of a converted message.
fn ids(am: &Am) -> impl Iterator<Item = &str> {
    am.message.blocks().iter().filter_map(tool_part_id)
}
