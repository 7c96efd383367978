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

use super::claude_records::convert_content;
use super::stream::for_each_element;
use super::{
    repair_pairs, report_cut, store_main, DiagnosticKind, ImportedSession, Origin, RealCompaction,
    Sink,
};
use crate::error::LabResult;
use crate::message::{Message, Role};

/// The file beside the history that holds the task's UI messages.
pub const UI_MESSAGES: &str = "ui_messages.json";

/// A summary read: its element's (line, column) and its `condenseId`.
struct Summary {
    pos: (usize, usize),
    id: Option<String>,
}

#[derive(Default)]
struct History {
    main: Vec<Message>,
    origins: Vec<Origin>,
    summaries: Vec<Summary>,
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
        history.element(&v, (line, column), session, sink)
    })?;
    let History {
        mut main,
        mut origins,
        summaries,
    } = history;
    report_cut(end.truncated, sink)?;
    repair_pairs(&mut main, &mut origins, sink)?;
    // The history is one line as Roo writes it: a summary is found by its
    // column too, while the origins still hold it.
    let at: Vec<Option<usize>> = summaries
        .iter()
        .map(|s| {
            origins
                .iter()
                .position(|o| (o.line, o.column) == s.pos)
                .filter(|&i| main[i].role == Role::User)
        })
        .collect();
    store_main(session, main, origins);
    let pre_tokens = if summaries.is_empty() {
        BTreeMap::new()
    } else {
        condense_tokens(&source.with_file_name(UI_MESSAGES), sink)?
    };
    mark_summaries(session, &summaries, &at, &pre_tokens);
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
            at,
            trigger: None,
            pre_tokens: s.id.as_ref().and_then(|id| pre_tokens.get(id).copied()),
        });
    }
}

/// `prevContextTokens` of each `condense_context` record in `ui` by its
/// `condenseId`; empty when there is no such file. A file that is not a
/// JSON array is a diagnostic naming it (the history is read without it).
fn condense_tokens(ui: &Path, sink: &mut Sink<'_>) -> LabResult<BTreeMap<String, u64>> {
    let mut out = BTreeMap::new();
    let Ok(text) = std::fs::read_to_string(ui) else {
        return Ok(out);
    };
    let records = match serde_json::from_str::<Vec<Value>>(&text) {
        Ok(r) => r,
        Err(e) => {
            let msg = format!(
                "{} at {}:{}: {e}; its condense records are not read (fix or remove it)",
                ui.display(),
                e.line(),
                e.column()
            );
            sink.report(0, 0, DiagnosticKind::InvalidRecord, msg)?;
            return Ok(out);
        }
    };
    for r in &records {
        if r.get("say").and_then(Value::as_str) != Some("condense_context") {
            continue;
        }
        let c = r.get("contextCondense");
        let id = c.and_then(|c| c.get("condenseId")).and_then(Value::as_str);
        let prev = c
            .and_then(|c| c.get("prevContextTokens"))
            .and_then(Value::as_u64);
        if let (Some(id), Some(prev)) = (id, prev) {
            out.insert(id.to_string(), prev);
        }
    }
    Ok(out)
}
