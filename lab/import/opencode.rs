//! opencode sessions as `opencode export` writes them
//! (`packages/opencode/src/cli/cmd/export.ts`): one JSON document
//! `{"info": Session.Info, "messages": [{"info": Message, "parts": [Part…]}…], "todos"}`,
//! its messages and parts the types of `packages/opencode/src/session/message-v2.ts`
//! (read at anomalyco/opencode 007a9409bafea06d6b9084ff1f6d1fe9f5e3a803, the
//! repository sst/opencode moved to). The messages are streamed one at a
//! time and turned into what `toModelMessages` sends:
//!
//! * a `user` message: its `text` parts (not `ignored`), `file` parts (an
//!   image block by `mime`; `text/plain` and directories were inlined as
//!   text by opencode already), a `compaction` part as upstream's
//!   "What did we do so far?", a `subtask` part as its "The following tool
//!   was executed by the user";
//! * an `assistant` message holds one model call per step (`step-start`
//!   parts split it, as `convertToModelMessages` does): `text`, `reasoning`
//!   (a thinking block) and `tool` parts (a `tool_use` with the part's
//!   `callID`, answered in the next user message by its `output`, its
//!   `error`, or "[Tool execution was interrupted]" for a call that never
//!   ended); each `step-finish`'s `tokens` (input + cache read + cache
//!   write, as sent) is kept in `recorded_tokens`. An assistant message with
//!   an `error` is skipped as upstream skips it (unless it is an abort after
//!   output). An output opencode's pruning cleared (`time.compacted`) is
//!   kept whole: the replay's policies decide for themselves.
//!
//! **Compaction**: a user message with a `compaction` part, then the
//! assistant message with `summary: true` that answers it, is opencode's
//! compaction (`auto` or `manual` as its trigger); both stay in `main`
//! after the history they replaced, the prompt's index is the real
//! compaction, and [`super::artefacts`] drops the pair for a replay.
//!
//! Damage: a cut document is `truncated`; an element with no `info.role`
//! is `invalid_record`, an unknown role `unknown_role`, an unknown part
//! type `unknown_block_type`; a tool part with no `callID` `invalid_record`.

use std::io::BufRead;

use serde_json::Value;

use super::aider::RecordedTokens;
use super::stream::for_each_element;
use super::{finish_document, DiagnosticKind, ImportedSession, Origin, RealCompaction, Sink};
use crate::error::LabResult;
use crate::message::{Block, Content, Message, Role};

/// What a `compaction` part reaches the model as (`toModelMessages`).
pub const COMPACTION_PROMPT: &str = "What did we do so far?";

/// What a `subtask` part reaches the model as.
const SUBTASK_TEXT: &str = "The following tool was executed by the user";

/// What a call that never ended is answered with.
const INTERRUPTED: &str = "[Tool execution was interrupted]";

/// Parts that carry nothing the model is sent.
const SILENT_PARTS: &[&str] = &["agent", "snapshot", "patch", "retry", "step-finish"];

/// (line, column) of a message element.
type Pos = (usize, usize);

/// The messages read so far, in the order opencode sends them.
#[derive(Default)]
pub(crate) struct Export {
    /// The file of each part of the element being read, when its parts are
    /// files of their own (opencode's storage): part damage is reported there.
    pub(crate) part_files: Vec<std::path::PathBuf>,
    main: Vec<Message>,
    origins: Vec<Origin>,
    /// The last message may take the next turn of its role.
    open: bool,
    /// Compaction prompts: (element position, `auto`).
    compactions: Vec<(Pos, bool)>,
}

pub(crate) fn read<R: BufRead>(
    reader: R,
    session: &mut ImportedSession,
    sink: &mut Sink<'_>,
) -> LabResult<()> {
    let source = sink.source.to_path_buf();
    let mut export = Export::default();
    let end = for_each_element(reader, &source, &["messages"], &[], |v, line, column| {
        session.stats.records += 1;
        export.element(&v, (line, column), session, sink)
    })?;
    export.finish(end.truncated, session, sink)
}

impl Export {
    /// Repair the messages read into `session` and mark its compactions;
    /// `truncated`: where the document was cut.
    pub(crate) fn finish(
        self,
        truncated: Option<Pos>,
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        finish_document(session, self.main, self.origins, truncated, sink)?;
        mark_compactions(session, &self.compactions);
        Ok(())
    }

    /// Read one `{info, parts}` message element found at `pos`.
    pub(crate) fn element(
        &mut self,
        v: &Value,
        pos: Pos,
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        let info = v.get("info");
        let role = info.and_then(|i| i.get("role")).and_then(Value::as_str);
        let Some(parts) = v.get("parts").and_then(Value::as_array) else {
            session.skip("(no parts)");
            let msg = "message element has no `parts` array; skipped".to_string();
            return sink.report(pos.0, pos.1, DiagnosticKind::InvalidRecord, msg);
        };
        match role {
            Some("user") => {
                session.stats.message_records += 1;
                self.user(parts, pos, session, sink)
            }
            Some("assistant") => {
                session.stats.message_records += 1;
                if skipped_for_error(info, parts) {
                    session.skip("assistant with error");
                    return Ok(());
                }
                self.assistant(parts, pos, session, sink)
            }
            other => session.skip_role(other, pos, sink),
        }
    }

    fn user(
        &mut self,
        parts: &[Value],
        pos: Pos,
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        let mut blocks = Vec::new();
        let mut compaction = None;
        for (i, p) in parts.iter().enumerate() {
            let pos = self.part_pos(i, pos, sink);
            let text = |k: &str| {
                p.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            match part_type(p) {
                "text" if p.get("ignored").and_then(Value::as_bool) != Some(true) => {
                    blocks.push(Block::Text { text: text("text") })
                }
                "file" => {
                    let mime = text("mime");
                    if mime != "text/plain" && mime != "application/x-directory" {
                        blocks.push(Block::Image { source: mime });
                    }
                }
                "compaction" => {
                    compaction = Some(p.get("auto").and_then(Value::as_bool).unwrap_or(false));
                    blocks.push(Block::Text {
                        text: COMPACTION_PROMPT.into(),
                    });
                }
                "subtask" => blocks.push(Block::Text {
                    text: SUBTASK_TEXT.into(),
                }),
                kind => self.other_part(kind, pos, session, sink)?,
            }
        }
        if blocks.is_empty() {
            session.skip("empty user message");
            return Ok(());
        }
        if let Some(auto) = compaction {
            // The prompt opens the compacted context: a message of its own.
            self.open = false;
            self.compactions.push((pos, auto));
            self.push(Role::User, blocks, pos, false);
        } else {
            self.push(Role::User, blocks, pos, true);
        }
        Ok(())
    }

    fn assistant(
        &mut self,
        parts: &[Value],
        pos: Pos,
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        let mut step = Step::default();
        for (i, p) in parts.iter().enumerate() {
            let pos = self.part_pos(i, pos, sink);
            match part_type(p) {
                "step-start" => {
                    self.close(&mut step, pos);
                }
                "text" => step.calls.push(Block::Text {
                    text: str_of(p, "text"),
                }),
                "reasoning" => step.calls.push(Block::Thinking {
                    thinking: str_of(p, "text"),
                }),
                "tool" => {
                    let Some(id) = p.get("callID").and_then(Value::as_str) else {
                        let msg = "tool part with no `callID`; skipped".to_string();
                        sink.report(pos.0, pos.1, DiagnosticKind::InvalidRecord, msg)?;
                        continue;
                    };
                    let state = p.get("state");
                    session.stats.tool_uses += 1;
                    step.calls.push(Block::ToolUse {
                        id: id.to_string(),
                        name: str_of(p, "tool"),
                        input: state
                            .and_then(|s| s.get("input"))
                            .cloned()
                            .unwrap_or(Value::Object(Default::default()))
                            .into(),
                    });
                    let content = tool_output(state);
                    session.stats.tool_results += 1;
                    let largest = &mut session.stats.largest_tool_result_chars;
                    *largest = (*largest).max(content.chars().count());
                    step.results.push(Block::ToolResult {
                        tool_use_id: id.to_string(),
                        content,
                    });
                }
                "step-finish" => {
                    let at = self.close(&mut step, pos);
                    if let (Some(at), Some(t)) = (at, p.get("tokens")) {
                        record_tokens(session, t, at, pos.0);
                    }
                }
                kind => self.other_part(kind, pos, session, sink)?,
            }
        }
        self.close(&mut step, pos);
        Ok(())
    }

    /// Where part `i` of the element at `pos` is reported: in its own file
    /// (from its start) when parts are files, else at the element.
    fn part_pos(&self, i: usize, pos: Pos, sink: &mut Sink<'_>) -> Pos {
        match self.part_files.get(i) {
            Some(file) => {
                sink.file = Some(file.clone());
                (1, 1)
            }
            None => pos,
        }
    }

    /// A part the model is not sent, or one the importer does not know.
    fn other_part(
        &mut self,
        kind: &str,
        pos: Pos,
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        session.skip(&format!("part:{kind}"));
        if SILENT_PARTS.contains(&kind) || matches!(kind, "text" | "step-start") {
            return Ok(());
        }
        sink.report(
            pos.0,
            pos.1,
            DiagnosticKind::UnknownBlockType,
            format!("unknown part type `{kind}`; counted and skipped"),
        )
    }

    /// End a step: its reply, then its results; the reply's index.
    fn close(&mut self, step: &mut Step, pos: Pos) -> Option<usize> {
        if step.calls.is_empty() {
            return None;
        }
        self.push(Role::Assistant, std::mem::take(&mut step.calls), pos, false);
        let at = self.main.len() - 1;
        if !step.results.is_empty() {
            self.push(Role::User, std::mem::take(&mut step.results), pos, true);
        }
        Some(at)
    }

    /// Add `blocks` to the last message when it is open and of `role`, else
    /// start one; `open`: whether the next turn of that role may join it.
    fn push(&mut self, role: Role, blocks: Vec<Block>, pos: Pos, open: bool) {
        if self.open {
            if let Some(Message {
                role: r,
                content: Content::Blocks(b),
            }) = self.main.last_mut()
            {
                if *r == role {
                    b.extend(blocks);
                    self.open = open;
                    return;
                }
            }
        }
        self.main.push(Message {
            role,
            content: Content::Blocks(blocks),
        });
        self.origins.push(Origin::at(pos.0, pos.1, 0));
        self.open = open;
    }
}

/// One model call of an assistant message being read.
#[derive(Default)]
struct Step {
    calls: Vec<Block>,
    results: Vec<Block>,
}

fn part_type(p: &Value) -> &str {
    p.get("type").and_then(Value::as_str).unwrap_or("(none)")
}

fn str_of(p: &Value, k: &str) -> String {
    p.get(k)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// Upstream skips an assistant message with an error, unless it was
/// aborted after producing something besides step starts and reasoning.
fn skipped_for_error(info: Option<&Value>, parts: &[Value]) -> bool {
    let Some(error) = info.and_then(|i| i.get("error")).filter(|e| !e.is_null()) else {
        return false;
    };
    let aborted = error.get("name").and_then(Value::as_str) == Some("MessageAbortedError");
    !(aborted
        && parts
            .iter()
            .any(|p| !matches!(part_type(p), "step-start" | "reasoning")))
}

/// What a tool part's state answers the call with.
fn tool_output(state: Option<&Value>) -> String {
    let get = |k: &str| state.and_then(|s| s.get(k)).and_then(Value::as_str);
    match get("status") {
        Some("completed") => get("output").unwrap_or_default().to_string(),
        Some("error") => state
            .and_then(|s| s.pointer("/metadata/output"))
            .and_then(Value::as_str)
            .filter(|_| {
                state.and_then(|s| s.pointer("/metadata/interrupted")) == Some(&Value::Bool(true))
            })
            .or(get("error"))
            .unwrap_or_default()
            .to_string(),
        _ => INTERRUPTED.to_string(),
    }
}

/// A step's recorded usage: the prompt as sent (input + cache read + cache write).
fn record_tokens(session: &mut ImportedSession, t: &Value, at: usize, line: usize) {
    let n = |p: &str| t.pointer(p).and_then(Value::as_u64);
    let (Some(input), Some(received)) = (n("/input"), n("/output")) else {
        return;
    };
    let sent = input + n("/cache/read").unwrap_or(0) + n("/cache/write").unwrap_or(0);
    session.recorded_tokens.push(RecordedTokens {
        line,
        after_messages: at + 1,
        sent,
        sent_min: sent,
        sent_max: sent,
        received,
    });
}

/// Each compaction prompt that survived the repair is a real compaction.
/// Prompts are matched in order, each after the one before (storage
/// elements all start at line 1 of their own files).
fn mark_compactions(session: &mut ImportedSession, prompts: &[(Pos, bool)]) {
    let mut from = 0;
    for &((line, _), auto) in prompts {
        let at = (from..session.main.len())
            .find(|&i| session.main_lines[i] == line && is_compaction_prompt(&session.main[i]));
        if let Some(at) = at {
            from = at + 1;
            session.real_compactions.push(at);
            let trigger = Some(if auto { "auto" } else { "manual" }.to_string());
            session.real_compaction_meta.push(RealCompaction {
                dropped: None,
                first_kept: None,
                at,
                trigger,
                pre_tokens: None,
            });
        }
    }
}

/// `m` is opencode's compaction prompt (the user turn its compaction part sends).
pub(crate) fn is_compaction_prompt(m: &Message) -> bool {
    m.role == Role::User
        && matches!(m.blocks(), [Block::Text { text }] if text == COMPACTION_PROMPT)
}

/// The `opencode` format's registration (`format_list.rs`).
pub const FORMAT: crate::format::Format = crate::format::Format {
    name: "opencode",
    sniff: Some((40, crate::sniff::opencode)),
    name_endings: &[],
    extensions: &[],
    product: Some("opencode"),
    compaction_by_index: false,
    read: |input| input.one(|r, s, k| read(r, s, k)),
};
