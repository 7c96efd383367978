//! Roo Code (and Cline) task folders: `api_conversation_history.json`, the
//! JSON array of Anthropic-shaped messages the extension sends, each an
//! `ApiMessage` (`src/core/task-persistence/apiMessages.ts`: a
//! `MessageParam` with `ts`, `isSummary`, `condenseId`, `condenseParent`,
//! `truncationParent`, `isTruncationMarker`, and role-less `type:
//! "reasoning"` items), read at RooCodeInc/Roo-Code
//! cb836567180a3ff1da6d082f3178b90c3bd22a70 (`task-persistence/`,
//! `condense/index.ts`, `packages/types/src/message.ts`). Cline writes the
//! same file as bare `Anthropic.MessageParam[]` (cline/cline
//! 0162b82878a6d755b471ebaae554372ae25da419, `src/core/storage/disk.ts`),
//! which this reader takes too (without `ts` it sniffs as `anthropic`).
//!
//! **Condense**: Roo's condensing is non-destructive. `summarizeConversation`
//! tags every message with the new summary's `condenseParent` and appends
//! the summary, a `user` message with `isSummary: true` and a `condenseId`
//! whose first block is `## Conversation Summary\n…`;
//! `getEffectiveApiHistory` then sends from the last summary on. So the
//! history keeps every message, in order, and the summary's index is the
//! real compaction (by the importer's index, like Codex: its text is the
//! model's). The `condense_context` records of `ui_messages.json` beside
//! the file (`contextCondense.prevContextTokens` by `condenseId`) give the
//! context's size when it condensed, when that file is there.
//!
//! **Cline's truncation** and **per-request usage** come from the same
//! `ui_messages.json` (read by the `task_ui` module): each growth of Cline's
//! `conversationHistoryDeletedRange` is a real compaction at the first reply
//! sent without the range (`dropped` names it in `main`; no message of the
//! product's own is added, so nothing is an artefact), and each
//! `api_req_started` row's usage is put on the reply it produced: the first
//! reply Roo stamped after the row, or (Cline stamps no times in the
//! history) the k-th reply for the k-th row with usage. A Cline history is
//! read here when `ui_messages.json` lies beside it.
//!
//! Provider blocks Roo stores in a reply: `reasoning` with text (a
//! thinking block here), encrypted `reasoning` and `thoughtSignature`
//! (counted in `skipped`, as they carry nothing the model reads as text).
//! `reasoning_details` and the messages' `ts` are not kept.
//!
//! Damage: a cut array is `truncated`; an element with no role is an
//! `invalid_record` (a role-less reasoning item is counted in `skipped`), an
//! unknown role `unknown_role`; content the conversion cannot read is
//! reported by it (`unknown_block_type`, …). A `ui_messages.json` that is not
//! a JSON array is an `invalid_record` naming that file and its line:column.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;

use serde_json::Value;

use super::aider::RecordedTokens;
use super::claude_records::convert_content;
use super::stream::for_each_element;
use super::{
    repair_pairs, report_cut, store_main, task_ui, ImportedSession, Origin, RealCompaction, Sink,
};
use crate::error::LabResult;
use crate::message::{Message, Role};

/// The file beside the history that holds the task's UI messages.
pub const UI_MESSAGES: &str = "ui_messages.json";

/// The name Roo Code and Cline give a task's history.
pub const HISTORY: &str = "api_conversation_history.json";

/// `path` is a task folder's history: named so, with the UI rows beside it.
pub fn is_task_history(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == HISTORY) && path.with_file_name(UI_MESSAGES).is_file()
}

/// A summary read: its element's (line, column) and its `condenseId`.
struct Summary {
    pos: (usize, usize),
    id: Option<String>,
}

/// (line, column) of an element.
type Pos = (usize, usize);

#[derive(Default)]
struct History {
    main: Vec<Message>,
    origins: Vec<Origin>,
    summaries: Vec<Summary>,
    /// Every element's position, by its index in the history (Cline's
    /// deleted range and `conversationHistoryIndex` count elements).
    elements: Vec<Pos>,
    /// Each assistant message's position and `ts` (Roo stamps them).
    replies: Vec<(Pos, Option<u64>)>,
}

pub(crate) fn read<R: BufRead>(
    reader: R,
    session: &mut ImportedSession,
    sink: &mut Sink<'_>,
) -> LabResult<()> {
    let source = sink.source.to_path_buf();
    let mut history = History::default();
    let end = for_each_element(reader, &source, &[], &[], |v, line, column| {
        session.stats.records += 1;
        history.elements.push((line, column));
        history.element(&v, (line, column), session, sink)
    })?;
    let History {
        mut main,
        mut origins,
        summaries,
        elements,
        replies,
    } = history;
    report_cut(end.truncated, sink)?;
    repair_pairs(&mut main, &mut origins, sink)?;
    // The history is one line as Roo writes it: a message is found by its
    // column too, while the origins still hold it.
    let index = |pos: Pos| origins.iter().position(|o| (o.line, o.column) == pos);
    let at: Vec<Option<usize>> = summaries
        .iter()
        .map(|s| index(s.pos).filter(|&i| main[i].role == Role::User))
        .collect();
    let in_main: Vec<Option<usize>> = elements.iter().map(|&p| index(p)).collect();
    let replies: Vec<(usize, Option<u64>)> = replies
        .iter()
        .filter_map(|&(p, ts)| Some((index(p)?, ts)))
        .collect();
    store_main(session, main, origins);
    let ui = task_ui::read(&source.with_file_name(UI_MESSAGES), sink)?;
    mark_summaries(session, &summaries, &at, &ui.condense_tokens);
    mark_truncations(session, &ui.deleted_ranges, &in_main);
    record_usage(session, &ui.requests, &replies);
    Ok(())
}

impl History {
    fn element(
        &mut self,
        v: &Value,
        pos: (usize, usize),
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        let role = match v.get("role").and_then(Value::as_str) {
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            None if v.get("type").and_then(Value::as_str) == Some("reasoning") => {
                // An OpenAI reasoning item kept for the provider; no turn of its own.
                session.skip("reasoning item");
                return Ok(());
            }
            other => return session.skip_role(other, pos, sink),
        };
        session.stats.message_records += 1;
        let content = provider_blocks(v.get("content"), session);
        let Some(content) = convert_content(content.as_ref(), pos, &mut session.stats, sink)?
        else {
            return Ok(());
        };
        if role == Role::User && v.get("isSummary").and_then(Value::as_bool) == Some(true) {
            let id = v
                .get("condenseId")
                .and_then(Value::as_str)
                .map(String::from);
            self.summaries.push(Summary { pos, id });
        }
        if role == Role::Assistant {
            let ts = v.get("ts").and_then(Value::as_u64);
            self.replies.push((pos, ts));
        }
        self.main.push(Message { role, content });
        self.origins
            .push(Origin::at(pos.0, pos.1, crate::pyjson::dumps_len(v)));
        Ok(())
    }
}

/// The content with Roo's provider blocks made Anthropic's: a `reasoning`
/// block with text is a thinking block; an encrypted one and a
/// `thoughtSignature` are only the provider's (counted in `skipped`).
fn provider_blocks(content: Option<&Value>, session: &mut ImportedSession) -> Option<Value> {
    let Some(Value::Array(blocks)) = content else {
        return content.cloned();
    };
    let mut out = Vec::with_capacity(blocks.len());
    for b in blocks {
        match b.get("type").and_then(Value::as_str) {
            Some("reasoning") => match b.get("text").and_then(Value::as_str) {
                Some(text) => out.push(serde_json::json!({"type": "thinking", "thinking": text})),
                None => session.skip("block:reasoning (encrypted)"),
            },
            Some("thoughtSignature") => session.skip("block:thoughtSignature"),
            _ => out.push(b.clone()),
        }
    }
    Some(Value::Array(out))
}

/// Each summary that survived the repair (`at`: its index) is a real compaction.
fn mark_summaries(
    session: &mut ImportedSession,
    summaries: &[Summary],
    at: &[Option<usize>],
    pre_tokens: &BTreeMap<String, u64>,
) {
    for (s, &at) in summaries.iter().zip(at) {
        let Some(at) = at else { continue };
        session.real_compactions.push(at);
        session.real_compaction_meta.push(RealCompaction {
            dropped: None,
            first_kept: None,
            at,
            trigger: None,
            pre_tokens: s.id.as_ref().and_then(|id| pre_tokens.get(id).copied()),
        });
    }
}

/// Each growth of Cline's deleted range whose first reply is in `main` is
/// a real compaction at that reply, with the range it dropped; `in_main`
/// maps history indices to `main`.
fn mark_truncations(
    session: &mut ImportedSession,
    changes: &[task_ui::RangeChange],
    in_main: &[Option<usize>],
) {
    let main_index = |i: usize| in_main.get(i).copied().flatten();
    for c in changes {
        let reply = c.history_index.and_then(|h| main_index(h + 1));
        let (Some(at), Some(first), Some(last)) =
            (reply, main_index(c.range[0]), main_index(c.range[1]))
        else {
            continue;
        };
        session.real_compactions.push(at);
        session.real_compaction_meta.push(RealCompaction {
            at,
            trigger: Some("truncation".into()),
            pre_tokens: c.before,
            dropped: Some([first, last]),
            first_kept: None,
        });
    }
}

/// Each request's usage on the reply it produced: the first reply stamped
/// after the request when the history has times (Roo), else the k-th reply
/// for the k-th request (Cline, whose history has none).
fn record_usage(
    session: &mut ImportedSession,
    requests: &[task_ui::ApiRequest],
    replies: &[(usize, Option<u64>)],
) {
    let timed =
        replies.iter().all(|(_, ts)| ts.is_some()) && requests.iter().all(|r| r.ts.is_some());
    let mut next = 0;
    for r in requests {
        let reply = if timed {
            replies[next..]
                .iter()
                .position(|(_, ts)| *ts > r.ts)
                .map(|k| next + k)
        } else {
            (next < replies.len()).then_some(next)
        };
        let Some(k) = reply else { break };
        next = k + 1;
        let at = replies[k].0;
        session.recorded_tokens.push(RecordedTokens {
            line: session.main_lines.get(at).copied().unwrap_or(0),
            after_messages: at + 1,
            sent: r.sent,
            sent_min: r.sent_min,
            sent_max: r.sent_max,
            received: r.received,
        });
    }
}

/// The `roo_code` format's registration (`format_list.rs`).
pub const FORMAT: crate::format::Format = crate::format::Format {
    name: "roo_code",
    sniff: Some((85, crate::sniff::roo_code)),
    name_endings: &[],
    extensions: &[],
    product: Some("roo-code-auto-condense"),
    compaction_by_index: true,
    read: |input| input.one(|r, s, k| read(r, s, k)),
};
