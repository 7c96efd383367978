//! OpenHands trajectories: the event stream as `save_trajectory_path` (a
//! JSON array) or the server's trajectory route (`{"trajectory": [...]}`)
//! writes it, each element `event_to_trajectory` of one event
//! (`openhands/events/serialization/event.py`, read in openhands-ai 0.59.0,
//! whose serializer writes the fixture): `id`, `source`, then `action` +
//! `args` or `observation` + `content` + `extras`, with
//! `tool_call_metadata` (`tool_call_id`, `function_name`, the
//! `model_response`) on what the model called and on the observations
//! answering it, and `llm_metrics` on the model's actions.
//!
//! Turned into what `ConversationMemory.process_events` sends: the actions
//! of one model response (one `model_response.id`) are one assistant message
//! (the response's text, then a `tool_use` per action with its
//! `tool_call_id` and the response's arguments); each observation carrying
//! the call's metadata is its `tool_result`; user `message` actions are user
//! text, agent ones assistant text; `finish` is the reply's text (upstream
//! drops its call, which nothing answers); the `system` action goes to
//! `system`. Actions the model did not make and observations that answer no
//! call (agent state changes, recalls) are counted in `skipped`. The token
//! usage of each response (`llm_metrics.token_usages`, by `response_id`) is
//! kept in `recorded_tokens`.
//!
//! **Condensation**: a `condensation` action with a `summary` is the
//! product's compaction: the summary becomes a user message where the
//! action stands (the history it forgot stays before it in `main`), its
//! index a real compaction; one without a summary only forgot events and
//! is counted in `skipped`.
//!
//! Damage: a cut document is `truncated`; an element that is no object is
//! `invalid_record`, one with neither `action` nor `observation`
//! `unknown_record_type`; an observation answering no call is repaired like
//! any other.

use std::io::BufRead;

use serde_json::Value;

use super::aider::RecordedTokens;
use super::stream::for_each_element;
use super::{finish_document, DiagnosticKind, ImportedSession, Origin, RealCompaction, Sink};
use crate::error::LabResult;
use crate::message::{Block, Content, Message, Role};

/// (line, column) of an event.
pub(crate) type Pos = (usize, usize);

/// The conversation read so far from a stream of events.
#[derive(Default)]
pub(crate) struct Stream {
    main: Vec<Message>,
    origins: Vec<Origin>,
    /// The model response the last assistant message holds.
    response: Option<String>,
    /// The last message is a user message that may take more.
    user_open: bool,
    /// Each condensation summary and its position.
    condensations: Vec<(Pos, String)>,
}

pub(crate) fn read<R: BufRead>(
    reader: R,
    session: &mut ImportedSession,
    sink: &mut Sink<'_>,
) -> LabResult<()> {
    let source = sink.source.to_path_buf();
    let mut stream = Stream::default();
    let end = for_each_element(reader, &source, &["trajectory"], &[], |v, line, column| {
        session.stats.records += 1;
        stream.event(&v, (line, column), session, sink)
    })?;
    stream.finish(end.truncated, session, sink)
}

impl Stream {
    /// Repair the pairs, store the conversation and mark each condensation
    /// summary that survived as a real compaction; `truncated` is where a
    /// cut document ends.
    pub(crate) fn finish(
        self,
        truncated: Option<(usize, usize)>,
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        finish_document(session, self.main, self.origins, truncated, sink)?;
        mark_compactions(session, &self.condensations);
        Ok(())
    }

    /// One event as `event_to_trajectory` writes it, at `pos`.
    pub(crate) fn event(
        &mut self,
        v: &Value,
        pos: Pos,
        session: &mut ImportedSession,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        if !v.is_object() {
            session.skip("(not an object)");
            return sink.report(
                pos.0,
                pos.1,
                DiagnosticKind::InvalidRecord,
                "event is no JSON object; skipped".into(),
            );
        }
        let call = v.get("tool_call_metadata").filter(|m| m.is_object());
        if let Some(action) = v.get("action").and_then(Value::as_str) {
            return self.action(action, v, call, pos, session);
        }
        if let Some(kind) = v.get("observation").and_then(Value::as_str) {
            self.observation(kind, v, call, pos, session);
            return Ok(());
        }
        session.skip("(neither action nor observation)");
        sink.report(
            pos.0,
            pos.1,
            DiagnosticKind::UnknownRecordType,
            "event has neither `action` nor `observation`; counted and skipped".into(),
        )
    }

    fn action(
        &mut self,
        action: &str,
        v: &Value,
        call: Option<&Value>,
        pos: Pos,
        session: &mut ImportedSession,
    ) -> LabResult<()> {
        let args = v.get("args");
        let arg = |k: &str| {
            args.and_then(|a| a.get(k))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let source = v.get("source").and_then(Value::as_str).unwrap_or_default();
        match action {
            "system" => {
                session.stats.message_records += 1;
                session.system.push(arg("content"));
            }
            "message" if source == "user" => {
                session.stats.message_records += 1;
                self.push_user(
                    Block::Text {
                        text: arg("content"),
                    },
                    pos,
                );
            }
            "message" => {
                session.stats.message_records += 1;
                self.push_reply(
                    None,
                    Block::Text {
                        text: arg("content"),
                    },
                    pos,
                );
            }
            "condensation" => self.condensation(args, pos, session),
            "finish" => {
                session.stats.message_records += 1;
                let text = response_text(call).unwrap_or_else(|| arg("final_thought"));
                self.push_reply(None, Block::Text { text }, pos);
                let rid = call.and_then(|c| c.pointer("/model_response/id"));
                if let Some(rid) = rid.and_then(Value::as_str) {
                    record_tokens(session, v, rid, pos.0, self.main.len());
                }
            }
            _ => match call {
                Some(c) => {
                    session.stats.message_records += 1;
                    self.tool_action(c, args, v, pos, session);
                }
                None => session.skip(&format!("action:{action}")),
            },
        }
        Ok(())
    }

    /// An observation: the result of the call its metadata names, or (none
    /// named) something the model was not answered with.
    fn observation(
        &mut self,
        kind: &str,
        v: &Value,
        call: Option<&Value>,
        pos: Pos,
        session: &mut ImportedSession,
    ) {
        let Some(id) = call
            .and_then(|c| c.get("tool_call_id"))
            .and_then(Value::as_str)
        else {
            session.skip(&format!("observation:{kind}"));
            return;
        };
        let content = v.get("content").and_then(Value::as_str).unwrap_or_default();
        session.stats.message_records += 1;
        session.stats.tool_results += 1;
        let largest = &mut session.stats.largest_tool_result_chars;
        *largest = (*largest).max(content.chars().count());
        let tool_use_id = id.to_string();
        let content = content.to_string();
        self.push_user(
            Block::ToolResult {
                tool_use_id,
                content,
            },
            pos,
        );
    }

    /// A condensation with a summary: the summary as a user message of its
    /// own where the action stands.
    fn condensation(&mut self, args: Option<&Value>, pos: Pos, session: &mut ImportedSession) {
        let Some(summary) = args.and_then(|a| a.get("summary")).and_then(Value::as_str) else {
            session.skip("condensation without summary");
            return;
        };
        session.stats.message_records += 1;
        self.user_open = false;
        self.condensations.push((pos, summary.to_string()));
        self.push_user(
            Block::Text {
                text: summary.to_string(),
            },
            pos,
        );
        self.user_open = false;
    }

    /// An action the model called: one `tool_use` of its response's message.
    fn tool_action(
        &mut self,
        call: &Value,
        args: Option<&Value>,
        v: &Value,
        pos: Pos,
        session: &mut ImportedSession,
    ) {
        let str_of = |k: &str| {
            call.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let id = str_of("tool_call_id");
        let response = call
            .pointer("/model_response/id")
            .and_then(Value::as_str)
            .map(str::to_string);
        let input = call_arguments(call, &id)
            .or_else(|| args.cloned())
            .unwrap_or_default();
        session.stats.tool_uses += 1;
        let block = Block::ToolUse {
            id,
            name: str_of("function_name"),
            input: input.into(),
        };
        if response.is_some() && response == self.response && !self.user_open {
            self.push_reply(response, block, pos);
            return;
        }
        if let Some(text) = response_text(Some(call)).filter(|t| !t.is_empty()) {
            self.push_reply(response.clone(), Block::Text { text }, pos);
        }
        self.push_reply(response.clone(), block, pos);
        if let Some(rid) = &response {
            record_tokens(session, v, rid, pos.0, self.main.len());
        }
    }

    /// Add a block to the reply of `response` (a new message when another
    /// response, or none, made the last one).
    fn push_reply(&mut self, response: Option<String>, block: Block, pos: Pos) {
        let same = response.is_some() && response == self.response && !self.user_open;
        if let (
            true,
            Some(Message {
                content: Content::Blocks(b),
                ..
            }),
        ) = (same, self.main.last_mut())
        {
            b.push(block);
            return;
        }
        self.main.push(Message {
            role: Role::Assistant,
            content: Content::Blocks(vec![block]),
        });
        self.origins.push(Origin::at(pos.0, pos.1, 0));
        self.response = response;
        self.user_open = false;
    }

    /// Add a block to the open user message, or start one.
    fn push_user(&mut self, block: Block, pos: Pos) {
        if self.user_open {
            if let Some(Message {
                content: Content::Blocks(b),
                ..
            }) = self.main.last_mut()
            {
                b.push(block);
                return;
            }
        }
        self.main.push(Message {
            role: Role::User,
            content: Content::Blocks(vec![block]),
        });
        self.origins.push(Origin::at(pos.0, pos.1, 0));
        self.user_open = true;
        self.response = None;
    }
}

/// The text of a call's model response.
fn response_text(call: Option<&Value>) -> Option<String> {
    call?
        .pointer("/model_response/choices/0/message/content")
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// The arguments the model gave call `id`, parsed when they are JSON.
fn call_arguments(call: &Value, id: &str) -> Option<Value> {
    let calls = call
        .pointer("/model_response/choices/0/message/tool_calls")?
        .as_array()?;
    let raw = calls
        .iter()
        .find(|c| c.get("id").and_then(Value::as_str) == Some(id))?
        .pointer("/function/arguments")?;
    Some(match raw {
        Value::String(s) => serde_json::from_str(s).unwrap_or_else(|_| raw.clone()),
        other => other.clone(),
    })
}

/// The usage `llm_metrics` records for response `rid`.
fn record_tokens(session: &mut ImportedSession, v: &Value, rid: &str, line: usize, after: usize) {
    let usages = v
        .pointer("/llm_metrics/token_usages")
        .and_then(Value::as_array);
    let Some(u) = usages
        .into_iter()
        .flatten()
        .find(|u| u.get("response_id").and_then(Value::as_str) == Some(rid))
    else {
        return;
    };
    let n = |k: &str| u.get(k).and_then(Value::as_u64);
    if let (Some(sent), Some(received)) = (n("prompt_tokens"), n("completion_tokens")) {
        session.recorded_tokens.push(RecordedTokens {
            line,
            after_messages: after,
            sent,
            sent_min: sent,
            sent_max: sent,
            received,
        });
    }
}

/// Each condensation summary that survived the repair is a real compaction.
fn mark_compactions(session: &mut ImportedSession, condensations: &[(Pos, String)]) {
    for ((line, _), summary) in condensations {
        let at = (0..session.main.len()).find(|&i| {
            let m = &session.main[i];
            session.main_lines[i] == *line && m.role == Role::User && m.text() == *summary
        });
        if let Some(at) = at {
            session.real_compactions.push(at);
            session.real_compaction_meta.push(RealCompaction {
                dropped: None,
                first_kept: None,
                at,
                trigger: None,
                pre_tokens: None,
            });
        }
    }
}

/// The `openhands` format's registration (`format_list.rs`).
pub const FORMAT: crate::format::Format = crate::format::Format {
    name: "openhands",
    sniff: Some((50, crate::sniff::openhands)),
    name_endings: &[],
    extensions: &[],
    product: Some("openhands-llm-summarizing"),
    compaction_by_index: true,
    read: |input| input.one(|r, s, k| read(r, s, k)),
};
