//! External policies: `--policy exec:'CMD ARGS'` runs a process that
//! speaks `ctxlab.policy/1` (see [`protocol`]) and is replayed, checked and
//! priced like every built-in design.
//!
//! ```text
//! -> {"type":"hello","protocol":"ctxlab.policy/1","tokens":"approx"}
//! <- {"protocol":"ctxlab.policy/1","summary":"…","pointer_rules":[…],"history":"delta"}
//! -> {"type":"prepare","protocol":"ctxlab.policy/1","id":1,"call":0,"root":"/run/exec-…","keep":0,"append":[…],"tokens":{"append":[…],"history":812},"envelope":0,"now_ms":null}
//! <- {"id":1,"request":[…],"events":[{"event":"cleared","id":"toolu_1","part":"result","placeholder":"[cleared]"}]}
//! ```
//!
//! The process starts when the policy is built (one per session and run)
//! in ctxlab's working directory (so relative paths in the command work),
//! and is killed with its whole process group when the run ends. Everything it does wrong ends the
//! replay with an error naming the command, the call, the offending line of
//! its output and the fix (exit 3): exiting, staying silent past the
//! per-call timeout, a line that is not an answer, a wrong id, a request
//! that is not a continuation of the history ([`continuation`]), or a
//! write outside its root. Files it writes itself, past the protocol, are
//! not in the run's storage: the checker counts what they hold as lost.

pub mod continuation;
pub mod protocol;

use std::path::{Component, Path};
use std::time::Duration;

use serde::Serialize;

use self::protocol::{Answer, Counts, Hello, HistoryMode, PROTOCOL};
use super::{PointerRule, Policy, PolicyCtx, PolicyEvent, PolicyInfo, Prepared, Source, Unit};
use crate::error::{LabError, LabResult};
use crate::message::Message;
use crate::process::{clip, LineProcess};

/// What a policy spec starts with to name an external process.
pub const PREFIX: &str = "exec:";

/// How long one answer may take unless `--exec-timeout` says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Refuse an empty command (exit 2) before anything starts.
pub fn check_command(cmd: &str) -> LabResult<()> {
    if cmd.trim().is_empty() {
        return Err(LabError::usage(
            "`--policy exec:` names no command",
            "write --policy exec:'CMD ARGS' (see GUIDE.md, \"External policies\")",
        ));
    }
    Ok(())
}

/// A running external policy.
pub struct Exec {
    spec: String,
    hello: Hello,
    rules: Vec<PointerRule>,
    process: LineProcess,
    next_id: u64,
    /// Length of the history the process holds after its last answer.
    synced: usize,
    /// Token counts of that history, message by message.
    counts: Vec<usize>,
}

/// The first `prepare` fields, borrowed (the schema is [`protocol::Request`]).
#[derive(Serialize)]
struct PrepareLine<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    protocol: &'static str,
    id: u64,
    call: usize,
    root: String,
    keep: usize,
    append: &'a [Message],
    tokens: Counts,
    envelope: usize,
    now_ms: Option<u64>,
}

impl Exec {
    /// Start `cmd` (the spec without [`PREFIX`]) and greet it, telling it
    /// which counter's counts it will get.
    pub fn start(cmd: &str, tokens: &str, timeout: Duration) -> LabResult<Exec> {
        let spec = format!("{PREFIX}{cmd}");
        check_command(cmd)?;
        let process = LineProcess::start(cmd, Path::new("."), &[], timeout)
            .map_err(|m| refused(&spec, m, "check the command after exec:"))?;
        let mut exec = Exec {
            spec,
            hello: Hello {
                protocol: PROTOCOL.into(),
                summary: None,
                constants: serde_json::Value::Null,
                unit: None,
                pointer_rules: Vec::new(),
                history: HistoryMode::Delta,
            },
            rules: Vec::new(),
            process,
            next_id: 0,
            synced: 0,
            counts: Vec::new(),
        };
        exec.greet(tokens)?;
        Ok(exec)
    }

    fn greet(&mut self, tokens: &str) -> LabResult<()> {
        let hello = protocol::Request::Hello {
            protocol: PROTOCOL.into(),
            tokens: tokens.into(),
        };
        let line = serde_json::to_string(&hello).unwrap_or_default();
        let answer = self.exchange(&line, "hello")?;
        let hello: Hello = serde_json::from_str(&answer).map_err(|e| {
            self.fail(
                "hello",
                format!("answered `hello` with {} ({e})", clip(&answer)),
            )
        })?;
        if hello.protocol != PROTOCOL {
            return Err(self.fail("hello", format!("speaks `{}`", hello.protocol)));
        }
        self.rules = hello
            .pointer_rules
            .iter()
            .map(protocol::Rule::to_rule)
            .collect();
        self.hello = hello;
        Ok(())
    }

    /// Send one line and read the answer line; a failure names `at`.
    fn exchange(&mut self, line: &str, at: &str) -> LabResult<String> {
        let answer = self
            .process
            .send(line)
            .and_then(|()| self.process.receive());
        answer.map_err(|what| self.fail(at, what))
    }

    /// The error for what the process did at `at` (`hello`, `call 3`).
    fn fail(&mut self, at: &str, what: String) -> LabError {
        let epitaph = self.process.epitaph();
        refused(
            &self.spec,
            format!("{at}: `{}` {what}{epitaph}", self.process.command()),
            &format!(
                "answer each line with one JSON line within {} s, as protocol {PROTOCOL} says \
                 (`lab schema policy-answer`; GUIDE.md, \"External policies\")",
                self.process.timeout().as_secs_f64()
            ),
        )
    }

    /// The `prepare` line for `history`, and the counts of its messages.
    fn prepare_line(&mut self, history: &[Message], ctx: &PolicyCtx<'_>) -> String {
        let keep = match self.hello.history {
            HistoryMode::Delta if self.synced <= history.len() => self.synced,
            _ => 0,
        };
        self.counts.truncate(keep);
        let append = &history[keep..];
        let counted: Vec<usize> = append.iter().map(|m| ctx.tokens.count_message(m)).collect();
        self.counts.extend(&counted);
        self.next_id += 1;
        let line = PrepareLine {
            kind: "prepare",
            protocol: PROTOCOL,
            id: self.next_id,
            call: ctx.turn,
            root: ctx.root.display().to_string(),
            keep,
            append,
            tokens: Counts {
                append: counted,
                history: self.counts.iter().sum(),
            },
            envelope: ctx.envelope,
            now_ms: ctx.now_ms,
        };
        serde_json::to_string(&line).unwrap_or_default()
    }

    /// Read and judge the answer to call `at`.
    fn answer(&mut self, line: &str, at: &str) -> LabResult<Answer> {
        let answer: Answer = serde_json::from_str(line).map_err(|e| {
            self.fail(
                at,
                format!(
                    "answered a line that is not a `prepare` answer ({e}): {}",
                    clip(line)
                ),
            )
        })?;
        if answer.id != self.next_id {
            return Err(self.fail(
                at,
                format!("answered id {} to request {}", answer.id, self.next_id),
            ));
        }
        Ok(answer)
    }

    /// Write the answer's files below `root`.
    fn write(
        &mut self,
        writes: &[protocol::Write],
        ctx: &PolicyCtx<'_>,
        at: &str,
    ) -> LabResult<()> {
        for w in writes {
            let Some(rel) = inside(&w.path) else {
                return Err(self.fail(
                    at,
                    format!("asked to write `{}`, outside its root: a path in `writes` is relative, without `..`", w.path),
                ));
            };
            let path = ctx.root.join(rel);
            let parent = path.parent().unwrap_or(ctx.root);
            ctx.storage
                .create_dir_all(parent)
                .and_then(|()| ctx.storage.write(&path, w.content.as_bytes()))
                .map_err(|e| LabError::io("writing an external policy's file", path.clone(), e))?;
        }
        Ok(())
    }

    /// The answer's events as the engine's; a bad one names the call.
    fn events(&mut self, events: Vec<protocol::Event>, at: &str) -> LabResult<Vec<PolicyEvent>> {
        let mut out = Vec::with_capacity(events.len());
        for e in events {
            match e.to_event() {
                Ok(e) => out.push(e),
                Err(what) => {
                    return Err(self.fail(
                        at,
                        format!("answered {what}: `result` or `input` are the parts"),
                    ))
                }
            }
        }
        Ok(out)
    }
}

/// `path` as a relative path of plain names, if it is one.
fn inside(path: &str) -> Option<&Path> {
    let p = Path::new(path);
    let plain = p.components().all(|c| matches!(c, Component::Normal(_)));
    (plain && !path.is_empty() && path.len() <= 4096).then_some(p)
}

fn refused(spec: &str, message: String, fix: &str) -> LabError {
    LabError::Refused {
        message: format!("external policy `{spec}`, {message}"),
        fix: fix.to_string(),
    }
}

impl Policy for Exec {
    fn info(&self) -> PolicyInfo {
        PolicyInfo {
            name: self.spec.clone(),
            family: "external",
            summary: self
                .hello
                .summary
                .clone()
                .unwrap_or_else(|| "an external policy (ctxlab.policy/1)".into())
                .into(),
            source: Source {
                upstream: self.process.command().to_string().into(),
                files: &[],
                license: "the user's",
                approximate: false,
            },
            constants: self.hello.constants.clone(),
            unit: self.hello.unit.unwrap_or(Unit::Tokens),
            differences: Vec::new(),
        }
    }

    fn pointer_rules(&self) -> Vec<PointerRule> {
        self.rules.clone()
    }

    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        let at = format!("call {}", ctx.turn);
        let line = self.prepare_line(history, ctx);
        let reply = self.exchange(&line, &at)?;
        let answer = self.answer(&reply, &at)?;
        let events = self.events(answer.events, &at)?;
        self.write(&answer.writes, ctx, &at)?;
        if let Some(new) = answer.history {
            continuation::check(history, &new, &events).map_err(|v| {
                self.fail(
                    &at,
                    format!("answered a history whose message {} {}", v.index, v.what),
                )
            })?;
            self.counts = new.iter().map(|m| ctx.tokens.count_message(m)).collect();
            *history = new;
        }
        let request = match answer.request {
            Some(request) => {
                continuation::check(history, &request, &events).map_err(|v| {
                    self.fail(
                        &at,
                        format!("answered a request whose message {} {}", v.index, v.what),
                    )
                })?;
                request
            }
            None => history.clone(),
        };
        self.synced = history.len();
        Ok(Prepared { request, events })
    }

    fn history_replaced(&mut self) {
        // The process's copy is stale: the next `prepare` resends it whole
        // (a resume too, by default).
        self.synced = 0;
    }

    fn errors_are_fatal(&self) -> bool {
        true
    }
}
