//! The session envelope: the fixed prefix every request of a replay carries
//! (system prompt, tool definitions, first-turn context) that a transcript
//! does not record.
//!
//! Its size, in the replay's own token counter, comes from
//! 1. the log's recorded usage, where it has it (Claude Code): the first
//!    request of each conversation, input + cache read + cache write, minus
//!    the estimate of the messages logged for it; the first conversation
//!    gives the prefix, each conversation after a product compaction the
//!    prefix after that compaction (the product re-attaches files and todos
//!    there, unlogged); under `--anchor none`, which reads no request after
//!    the first, the prefix after a compaction is predicted by the
//!    product's rules instead (the first request's prefix, or the release's
//!    system prompt and tools from `envelope_table.json`);
//! 2. else the system prompt the log holds (OpenAI-format logs), counted;
//! 3. else a per-product default from `envelope_defaults.json` (source and
//!    date with each);
//! 4. or `--envelope N|auto|none`.
//!
//! Every size is an estimate: reports say so beside numbers that include it.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::{LabError, LabResult};
use crate::import::{is_product_summary, ImportedSession, TranscriptFormat};
use crate::policy::engine::{Anchor, Prefix};
use crate::tokens::recorded::RecordedRequest;
use crate::tokens::TokenCounter;

/// What `--envelope` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EnvelopeArg {
    /// Recorded usage, else the logged system prompt, else the product's default.
    #[default]
    Auto,
    /// No prefix (the replay as before the envelope existed).
    None,
    /// This many tokens at every request.
    Tokens(usize),
}

impl std::str::FromStr for EnvelopeArg {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(EnvelopeArg::Auto),
            "none" => Ok(EnvelopeArg::None),
            n => n.parse().map(EnvelopeArg::Tokens).map_err(|_| {
                format!("`{n}` is not an envelope: give a token count, `auto` or `none`")
            }),
        }
    }
}

/// Where a session's envelope size came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(tag = "basis", rename_all = "snake_case")]
pub enum Basis {
    /// The log's recorded usage.
    Recorded,
    /// The system prompt the log holds, counted.
    LoggedSystem,
    /// A product's default (`envelope_defaults.json`).
    ProductDefault {
        /// The product.
        product: String,
        /// Where the number comes from.
        source: String,
        /// When it was read.
        date: String,
    },
    /// `--envelope N`.
    Given,
    /// None: `--envelope none`, or nothing known for this format.
    None,
}

impl Basis {
    /// A short label for table notes.
    pub fn label(&self) -> String {
        match self {
            Basis::Recorded => "recorded usage".into(),
            Basis::LoggedSystem => "logged system prompt".into(),
            Basis::ProductDefault { product, date, .. } => format!("{product} default ({date})"),
            Basis::Given => "--envelope".into(),
            Basis::None => "none".into(),
        }
    }
}

/// A session's envelope: the prefix the engine sends and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    /// Sizes, in the replay's counter.
    pub prefix: Prefix,
    /// Their source.
    pub basis: Basis,
    /// Where the size after a predicted compaction (`--anchor none`) comes
    /// from, as the envelope line says it; `None` when it is recorded or
    /// there is none.
    pub after_source: Option<String>,
}

/// A session's envelope as the report states it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct EnvelopeNote {
    /// Session name.
    pub session: String,
    /// Tokens at the first request (an estimate).
    pub tokens: usize,
    /// Tokens after each product compaction (estimates).
    pub after_compaction: Vec<usize>,
    /// Where they come from when predicted (`--anchor none`): the first
    /// request's prefix, or a release's system prompt and tools from the
    /// envelope table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_compaction_source: Option<String>,
    /// At the last recorded reply of the session (logs with recorded
    /// usage): what the API counted beyond the envelope and the run
    /// counter's estimate of the logged history, and that count. The
    /// first is what the product sent that its log does not show (Claude
    /// Code's attachments and reminders, which its logs keep none of) plus
    /// the estimator's error: how far a replay of the log falls short of
    /// the request the product really sent.
    pub unlogged_at_last: Option<Unlogged>,
    /// What the replay put back of it at the messages that carried it
    /// ([`crate::replay::unlogged`]): how many attachments, how many tokens
    /// (estimates, sized from recorded usage).
    pub put_back: crate::replay::input::unlogged::PutBack,
    /// What the replay read of the log's recorded usage, for a log that
    /// records it ([`super::anchor`]); `None` for one that records none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub anchor: Option<super::anchor::Anchor>,
    /// Where they came from.
    #[serde(flatten)]
    pub basis: Basis,
}

/// What a log does not show at its last recorded request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Unlogged {
    /// Recorded count minus envelope minus the estimate of the logged
    /// history (negative when the estimate is the larger).
    pub tokens: i64,
    /// The recorded count (prompt tokens plus the reply's output).
    pub of: usize,
}

/// The unlogged remainder at the last anchored reply of `prefix`: the
/// last conversation's envelope is the one after the product's last
/// compaction, since the last reply is in that conversation.
pub fn unlogged_at_last(prefix: &Prefix) -> Option<Unlogged> {
    let (_, last) = prefix.anchors.iter().next_back()?;
    let envelope = prefix.after(prefix.after_compaction.len());
    let tokens = last.recorded as i64 - last.logged as i64 - envelope as i64;
    Some(Unlogged {
        tokens,
        of: last.recorded,
    })
}

/// One line per session with an envelope: its size and source, marked as
/// the estimate it is, and what its log does not show at its last request.
pub fn render_notes(notes: &[EnvelopeNote]) -> String {
    let mut s = String::new();
    for n in notes.iter().filter(|n| n.basis != Basis::None) {
        let predicted = n.anchor == Some(super::anchor::Anchor::None);
        let after = if n.after_compaction.is_empty() {
            String::new()
        } else if predicted {
            let sizes: Vec<String> = n.after_compaction.iter().map(usize::to_string).collect();
            let source = n
                .after_compaction_source
                .as_deref()
                .unwrap_or("the product's default envelope, envelope_defaults.json");
            format!(", after a compaction {} ({source})", sizes.join(", "))
        } else {
            let sizes: Vec<String> = n.after_compaction.iter().map(usize::to_string).collect();
            format!(", after the product's compactions {}", sizes.join(", "))
        };
        s.push_str(&format!(
            "envelope of {}: {} tokens{after} (estimate; {}), sent before every request{}{}{}\n",
            n.session,
            n.tokens,
            n.basis.label(),
            put_back_text(n.put_back, predicted),
            n.unlogged_at_last.map(unlogged_text).unwrap_or_default(),
            n.anchor
                .map(|a| format!("; {}", a.label()))
                .unwrap_or_default()
        ));
    }
    s
}

/// The clause on the attachments put back, when there are any: under the
/// predicting anchor sized by mechanism from the log's text (the
/// @-mentioned files), else from recorded usage.
fn put_back_text(p: crate::replay::input::unlogged::PutBack, predicted: bool) -> String {
    let sized = if predicted {
        "@-mentioned files, sized by mechanism from the log's text"
    } else {
        "estimate from recorded usage"
    };
    let shells = match p.shell_reminders {
        0 => String::new(),
        n => format!("; {n} background-shell reminders rebuilt from the log"),
    };
    let attachments = match p.attachments {
        0 => String::new(),
        n => format!(
            "; {n} attachment{} the log does not keep put back at the messages that carried {} ({} tokens, {sized})",
            if n == 1 { "" } else { "s" },
            if n == 1 { "it" } else { "them" },
            p.tokens
        ),
    };
    let resumes = match p.resumes {
        0 => String::new(),
        n => format!(
            "; dropped again at {n} resume{} (the product rebuilt its context from the log)",
            if n == 1 { "" } else { "s" }
        ),
    };
    shells + &attachments + &resumes
}

/// The clause on what the log does not show at its last request.
fn unlogged_text(u: Unlogged) -> String {
    let share = if u.of > 0 {
        u.tokens as f64 / u.of as f64 * 100.0
    } else {
        0.0
    };
    format!(
        "; at its last recorded request {:+} of {} tokens ({share:+.1} %) are in neither the log nor the estimate",
        u.tokens, u.of
    )
}

/// One product's default.
#[derive(Debug, Clone, Deserialize)]
struct Default_ {
    formats: Vec<String>,
    product: String,
    tokens: usize,
    source: String,
    date: String,
}

#[derive(Debug, Clone, Deserialize)]
struct Defaults {
    products: Vec<Default_>,
}

const DEFAULTS_JSON: &str = include_str!("envelope_defaults.json");

fn product_default(format: TranscriptFormat) -> Option<Default_> {
    // The file is part of the build and tested; a malformed one cannot ship.
    let d: Defaults = serde_json::from_str(DEFAULTS_JSON).expect("envelope_defaults.json parses");
    d.products
        .into_iter()
        .find(|p| p.formats.iter().any(|f| f == format.name()))
}

/// A Claude Code log read for its usage: the requests of one conversation
/// (the main agent's, or one subagent's) and the release that wrote it.
#[derive(Debug, Clone)]
pub struct RecordedLog {
    /// The file.
    pub path: std::path::PathBuf,
    /// Its text (to locate a request for an error), shared by the logs of
    /// its conversations.
    text: Arc<str>,
    /// The conversation's requests with usage, in log order: the main
    /// agent's as read, one subagent's after [`RecordedLog::subagents`].
    pub requests: Vec<RecordedRequest>,
    /// Subagent (sidechain) requests no replayed conversation holds, in log
    /// order: every one as read; after [`RecordedLog::subagents`], those
    /// that pair with no subagent session; none in a subagent's log.
    pub left_out: Vec<RecordedRequest>,
    /// The Claude Code release of the first main-agent record that names one.
    pub version: Option<String>,
    /// The 1-based (line, column) places of the main-agent records that
    /// mark a resume of the session (the `SessionStart` hook with the
    /// `resume` matcher); none in a subagent's log.
    pub resumes: Vec<(usize, usize)>,
    /// The working directory each main-agent record names (`cwd`), by
    /// place as [`RecordedLog::reply_ids`]; log content, not usage: every
    /// anchor reads it.
    cwds: Arc<std::collections::HashMap<(usize, usize), String>>,
    /// The response id (`message.id`) of each record that carries one, by
    /// the 1-based (line, column) where the record starts, sidechain
    /// records included: a reply the importer split or merged is paired
    /// with its request by id, whichever of its records it starts on. Keyed
    /// by place, not line, so that the layout of a `chat.json` (indented,
    /// one line, one record a line) pairs the same records.
    reply_ids: Arc<std::collections::HashMap<(usize, usize), String>>,
    /// The model named by each record that names one (`message.model`), by
    /// place as [`RecordedLog::reply_ids`]: which model answered a replayed
    /// call, `<synthetic>` for a reply the product made without a call. A
    /// model is no usage: the predicting anchor reads it too.
    reply_models: Arc<std::collections::HashMap<(usize, usize), String>>,
    /// Lines in the file each Read showed, by the Read's `tool_use` id
    /// (`toolUseResult.file.totalLines`, sidechains included: ids are
    /// unique). Log content, not usage: every anchor reads it.
    read_lines: Arc<std::collections::HashMap<String, usize>>,
    /// What a replay may read of this log's usage: `Recorded` as read;
    /// [`RecordedLog::anchored`] with `None` keeps the first request alone.
    pub anchor: super::anchor::Anchor,
}

impl RecordedLog {
    /// Reads `path` when its format records usage (Claude Code logs); `None` otherwise.
    pub fn read(path: &Path, format: TranscriptFormat) -> LabResult<Option<RecordedLog>> {
        if !crate::import::recorded::records_usage(format) {
            return Ok(None);
        }
        let text = crate::import::member_source::read_text(path)
            .map_err(|e| LabError::io("reading a recorded session", path, e))?;
        Self::from_text(path, text).map(Some)
    }

    /// The log of `path` from its `text`, already read (by the importer,
    /// `import_file_sessions_with_log`, so that a replay reads a log once).
    pub fn from_text(path: &Path, text: String) -> LabResult<RecordedLog> {
        let (records, places) = crate::tokens::recorded::parse_records(path, &text)?;
        // What the records say beside their usage is read in the recorded
        // wing; the requests are counted here.
        let facts = crate::import::recorded::log_facts::read(&records, &places);
        let (left_out, requests) = crate::tokens::recorded::requests_placed(&records, &places)
            .into_iter()
            .partition(|r| r.sidechain);
        Ok(RecordedLog {
            path: path.to_path_buf(),
            text: text.into(),
            requests,
            left_out,
            version: facts.version,
            resumes: facts.resumes,
            cwds: Arc::new(facts.cwds),
            reply_ids: Arc::new(facts.reply_ids),
            reply_models: Arc::new(facts.reply_models),
            read_lines: Arc::new(facts.read_lines),
            anchor: super::anchor::Anchor::Recorded,
        })
    }

    /// The messages of `session` (indices in its `main`) before which the
    /// product resumed from this log: the first message logged after each
    /// resume record, once each.
    pub fn resumed_before(&self, session: &ImportedSession) -> Vec<usize> {
        let places: Vec<(usize, usize)> = (0..session.main_lines.len())
            .filter_map(|i| session.main_place(i))
            .collect();
        let mut out: Vec<usize> = self
            .resumes
            .iter()
            .filter_map(|&r| places.iter().position(|&p| p > r))
            .collect();
        out.dedup();
        out
    }

    /// The log of each of `sessions` (this log's subagent sessions,
    /// [`ImportedSession::subagent_sessions`]), in order: the sidechain
    /// requests that answered its messages, paired by the response id of
    /// each message's first record. What pairs with none stays in
    /// [`RecordedLog::left_out`].
    pub fn subagents(&mut self, sessions: &[ImportedSession]) -> Vec<RecordedLog> {
        sessions
            .iter()
            .map(|s| {
                let ids: std::collections::HashSet<&str> = (0..s.main_lines.len())
                    .filter_map(|i| self.reply_ids.get(&s.main_place(i)?).map(String::as_str))
                    .collect();
                let (requests, rest) = std::mem::take(&mut self.left_out)
                    .into_iter()
                    .partition(|r| ids.contains(r.id.as_str()));
                self.left_out = rest;
                RecordedLog {
                    requests,
                    left_out: Vec::new(),
                    ..self.clone_shallow()
                }
            })
            .collect()
    }

    /// The recorded usage of `session`'s own conversation: the main
    /// agent's requests, or for a subagent session its own ([`RecordedLog::subagents`]).
    pub fn of_session(session: &ImportedSession) -> LabResult<Option<RecordedLog>> {
        let log = Self::read(&session.source, session.format)?;
        Ok(match (log, session.subagent) {
            (Some(mut l), Some(_)) => l.subagents(std::slice::from_ref(session)).pop(),
            (Some(l), None) => Some(l.own_main(session)),
            (None, _) => None,
        })
    }

    /// The log of `session`'s main conversation: as read, unless the log
    /// has no main chain and the import replays one of its sidechains in
    /// its place (`main_from_sidechain`): then that sidechain's requests,
    /// the rest still [`RecordedLog::left_out`].
    pub fn own_main(mut self, session: &ImportedSession) -> RecordedLog {
        if session.main_from_sidechain.is_none() {
            return self;
        }
        let mut own = self.subagents(std::slice::from_ref(session));
        match own.pop() {
            Some(mut main) => {
                main.left_out = self.left_out;
                main
            }
            None => self,
        }
    }

    /// This log without its requests (the text and ids shared).
    fn clone_shallow(&self) -> RecordedLog {
        RecordedLog {
            path: self.path.clone(),
            text: Arc::clone(&self.text),
            requests: Vec::new(),
            left_out: Vec::new(),
            version: self.version.clone(),
            resumes: Vec::new(),
            cwds: Arc::clone(&self.cwds),
            reply_ids: Arc::clone(&self.reply_ids),
            reply_models: Arc::clone(&self.reply_models),
            read_lines: Arc::clone(&self.read_lines),
            anchor: self.anchor,
        }
    }

    /// The working directory of each message of `session`'s `main`: the
    /// `cwd` its record names, else the last one named before it (`None`
    /// before any).
    pub fn cwds(&self, session: &ImportedSession) -> Vec<Option<String>> {
        let mut last: Option<&String> = None;
        (0..session.main.len())
            .map(|i| {
                if let Some(c) = session.main_place(i).and_then(|p| self.cwds.get(&p)) {
                    last = Some(c);
                }
                last.cloned()
            })
            .collect()
    }

    /// Lines in the file each Read of `session`'s messages showed, by the
    /// Read's `tool_use` id, where the log records them
    /// ([`crate::policy::engine::Prefix::read_lines`]).
    pub fn read_lines(&self, session: &ImportedSession) -> crate::policy::engine::ReadLines {
        let ids = session
            .main
            .iter()
            .flat_map(|m| m.blocks())
            .filter_map(|b| match b {
                crate::message::Block::ToolUse { id, name, .. } if name == "Read" => Some(id),
                _ => None,
            });
        ids.filter_map(|id| Some((id.clone(), *self.read_lines.get(id)?)))
            .collect()
    }

    /// This log as a replay under `anchor` may read it: whole under
    /// `Recorded`; under `None` its first request alone (whose size a
    /// counterfactual of the session shares) and its resume records (hook
    /// records, not usage), so nothing later can be read by mistake.
    pub fn anchored(&self, anchor: super::anchor::Anchor) -> std::borrow::Cow<'_, RecordedLog> {
        if anchor.reads_usage() {
            return std::borrow::Cow::Borrowed(self);
        }
        std::borrow::Cow::Owned(RecordedLog {
            requests: self.requests.iter().take(1).cloned().collect(),
            resumes: self.resumes.clone(),
            anchor,
            ..self.clone_shallow()
        })
    }

    /// The model of the conversation's first request.
    pub fn model(&self) -> Option<&str> {
        self.requests.first().map(|r| r.model.as_str())
    }

    /// The recorded request that produced the reply whose first record
    /// starts at `place` (1-based line and column), by the response id of
    /// that record.
    pub fn request_at(&self, place: (usize, usize)) -> Option<&RecordedRequest> {
        let id = self.reply_ids.get(&place)?;
        self.requests.iter().find(|r| &r.id == id)
    }

    /// The model named by each reply of `session` that names one, keyed
    /// by its index in the session's `main`: the model that answered that
    /// call, `<synthetic>` where the product wrote the reply itself and
    /// sent nothing.
    pub fn reply_models(&self, session: &ImportedSession) -> BTreeMap<usize, String> {
        session
            .main
            .iter()
            .enumerate()
            .filter(|(_, m)| m.role == crate::message::Role::Assistant)
            .filter_map(|(i, _)| Some((i, self.reply_models.get(&session.main_place(i)?)?.clone())))
            .collect()
    }

    /// [`RecordedLog::reply_models`] keyed by the reply's index in the
    /// replayed messages (the session without its compaction artefacts, as
    /// [`anchors`] keys them).
    pub fn call_models(&self, session: &ImportedSession) -> BTreeMap<usize, String> {
        let dropped = crate::import::artefacts::product_artefacts(session);
        self.reply_models(session)
            .into_iter()
            .filter(|(i, _)| dropped.binary_search(i).is_err())
            .map(|(i, model)| (i - dropped.partition_point(|&d| d < i), model))
            .collect()
    }

    /// The first request of each conversation (chain), in log order.
    pub fn conversation_starts(&self) -> Vec<&RecordedRequest> {
        let mut seen = std::collections::HashSet::new();
        self.requests
            .iter()
            .filter(|r| seen.insert(r.chain.as_str()))
            .collect()
    }

    /// First requests of the conversations a product compaction opened
    /// (their first message is the product's summary), in order.
    pub fn after_compactions(&self) -> Vec<&RecordedRequest> {
        self.conversation_starts()
            .into_iter()
            .skip(1)
            .filter(|r| r.messages.first().is_some_and(is_product_summary))
            .collect()
    }

    /// 1-based line and column of request `r` in the file (where its
    /// response id first appears; 0, 0 when it cannot be found).
    pub fn position(&self, r: &RecordedRequest) -> (usize, usize) {
        let Some(at) = (!r.id.is_empty()).then(|| self.text.find(&r.id)).flatten() else {
            return (0, 0);
        };
        let before = &self.text[..at];
        let line = before.matches('\n').count() + 1;
        let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
        (line, column)
    }

    /// The prefix of the conversation `r` opens: its recorded prompt tokens
    /// minus the estimate of its logged messages. Fewer recorded tokens than
    /// the messages alone is usage inconsistent with the log (exit 3).
    fn prefix_of(&self, r: &RecordedRequest, counter: &dyn TokenCounter) -> LabResult<usize> {
        let recorded = r.usage.total();
        let logged = counter.count_messages(&r.messages) as u64;
        if logged > recorded {
            let (line, column) = self.position(r);
            return Err(LabError::Input {
                file: self.path.clone(),
                line,
                column,
                message: format!(
                    "inconsistent usage: this request recorded {recorded} prompt tokens (input + cache read + cache write), fewer than its {} logged messages alone ({logged} tokens by {}), so no envelope can be derived",
                    r.messages.len(),
                    counter.name()
                ),
                fix: "the usage does not belong to these messages (an edited or merged log); repair the record, or replay with --envelope none or --envelope N".into(),
            });
        }
        Ok((recorded - logged) as usize)
    }
}

/// A Roo Code / Cline task's envelope from its first recorded request (the
/// `api_req_started` usage the importer put on the reply it produced): its
/// prompt tokens less the messages sent with it, counted. `None` for other
/// formats, without usage, or when the messages alone count more.
fn task_prefix(session: &ImportedSession, counter: &dyn TokenCounter) -> Option<usize> {
    if !matches!(
        session.format,
        TranscriptFormat::RooCode | TranscriptFormat::Aider
    ) {
        return None;
    }
    let first = session.recorded_tokens.first()?;
    let sent_with = session.main.get(..first.after_messages.checked_sub(1)?)?;
    let logged = counter.count_messages(sent_with) as u64;
    first.sent.checked_sub(logged).map(|t| t as usize)
}

/// A mini-swe-agent trajectory's envelope from its first recorded reply:
/// the prompt tokens its API response reports less the messages sent with
/// it (everything before the first reply), counted. The system prompt is
/// logged, so what remains is the difference between the provider's
/// tokenizer and the run's counter on those messages plus what the log
/// leaves out. `None` for other formats, a trajectory not on disk (an
/// archive member), without usage, or when the messages alone count more.
fn trajectory_prefix(
    session: &ImportedSession,
    counter: &dyn TokenCounter,
) -> LabResult<Option<usize>> {
    let Some(prompt) = crate::tokens::recorded::trajectory::first_prompt_tokens(session)? else {
        return Ok(None);
    };
    let first_reply = session
        .main
        .iter()
        .position(|m| m.role == crate::message::Role::Assistant)
        .unwrap_or(session.main.len());
    let system: usize = session.system.iter().map(|s| counter.count(s)).sum();
    let logged = (counter.count_messages(&session.main[..first_reply]) + system) as u64;
    Ok(prompt.checked_sub(logged).map(|t| t as usize + system))
}

/// The zoo policy that ports the product that wrote `session`: the format's
/// ([`product_policy`]), except for a Cline task (a Roo Code / Cline
/// history that Cline truncated): `cline-focus-chain` when the model
/// summarised with `summarize_task`, else none (the zoo has no port of
/// Cline's plain half / quarter truncation).
pub fn session_product_policy(session: &ImportedSession) -> Option<&'static str> {
    let truncated = session
        .real_compaction_meta
        .iter()
        .any(|c| c.dropped.is_some());
    if session.format != TranscriptFormat::RooCode || !truncated {
        return product_policy(session.format);
    }
    let summarised = session.main.iter().any(|m| {
        m.blocks()
            .iter()
            .any(|b| matches!(b, crate::message::Block::ToolUse { name, .. } if name == "summarize_task"))
    });
    summarised.then_some(crate::zoo::cline_focus_chain::NAME)
}

/// The zoo policy that ports the product that writes `format`: its
/// compactions are set beside the product's own in a replay.
pub fn product_policy(format: TranscriptFormat) -> Option<&'static str> {
    format.product()
}

/// The envelope of `session` under `arg`, counted with `counter`; `log` is
/// its recorded usage when the format has it.
pub fn envelope_for(
    session: &ImportedSession,
    log: Option<&RecordedLog>,
    arg: EnvelopeArg,
    counter: &dyn TokenCounter,
) -> LabResult<Envelope> {
    let product_policy = session_product_policy(session).map(str::to_string);
    let fixed = |tokens: usize, basis: Basis| Envelope {
        prefix: Prefix {
            tokens,
            after_compaction: Vec::new(),
            product_policy: product_policy.clone(),
            anchors: Default::default(),
            resumes: Vec::new(),
            read_lines: Default::default(),
        },
        basis,
        after_source: None,
    };
    let first = log.and_then(|l| l.requests.first().map(|r| (l, r)));
    match arg {
        EnvelopeArg::None => Ok(fixed(0, Basis::None)),
        EnvelopeArg::Tokens(n) => {
            if let Some((l, r)) = first.filter(|(_, r)| n as u64 > r.usage.total()) {
                let (line, column) = l.position(r);
                return Err(LabError::Input {
                    file: l.path.clone(),
                    line,
                    column,
                    message: format!(
                        "--envelope {n} is larger than the session's first request, which recorded {} prompt tokens in all",
                        r.usage.total()
                    ),
                    fix: "give an envelope no larger than the first request, or --envelope auto to derive it from the recorded usage".into(),
                });
            }
            Ok(fixed(n, Basis::Given))
        }
        EnvelopeArg::Auto => {
            if let Some((l, r)) = first {
                // What was put back into the first request's messages (the
                // @-mentioned files sized by mechanism) is no envelope.
                let mentioned = unlogged_before_first_reply(session);
                let tokens = l.prefix_of(r, counter)?.saturating_sub(mentioned);
                let mut after_source = None;
                let after = if l.anchor.reads_usage() {
                    l.after_compactions()
                        .into_iter()
                        .map(|a| l.prefix_of(a, counter))
                        .collect::<LabResult<Vec<_>>>()?
                } else {
                    // Predicted by the product's rules, nothing read past
                    // the first request. The port re-attaches files itself.
                    match predicted_after(session, l, tokens, mentioned > 0) {
                        Some((n, source)) => {
                            after_source = Some(source);
                            vec![n]
                        }
                        None => Vec::new(),
                    }
                };
                return Ok(Envelope {
                    prefix: Prefix {
                        tokens,
                        after_compaction: after,
                        product_policy,
                        anchors: anchors(session, l, counter),
                        resumes: replayed_resumes(session, l),
                        read_lines: l.read_lines(session),
                    },
                    basis: Basis::Recorded,
                    after_source,
                });
            }
            if let Some(tokens) = task_prefix(session, counter) {
                return Ok(fixed(tokens, Basis::Recorded));
            }
            if let Some(tokens) = trajectory_prefix(session, counter)? {
                return Ok(fixed(tokens, Basis::Recorded));
            }
            if !session.system.is_empty() {
                let system: usize = session.system.iter().map(|s| counter.count(s)).sum();
                return Ok(fixed(system, Basis::LoggedSystem));
            }
            Ok(match product_default(session.format) {
                Some(d) => fixed(
                    d.tokens,
                    Basis::ProductDefault {
                        product: d.product,
                        source: d.source,
                        date: d.date,
                    },
                ),
                None => fixed(0, Basis::None),
            })
        }
    }
}

/// Under `--anchor none`, the envelope after a whole-history compaction of
/// a Claude Code session, by the product's rules, and where it comes from.
///
/// Claude Code sends the system prompt, the tools and the user context
/// (CLAUDE.md and the date, one `<system-reminder>` message that
/// `prependUserContext` puts before the history at every call, never
/// logged) with every request, so all three survive a compaction: the first
/// request's prefix (its size less its logged messages) is that envelope.
/// Unless the first message @-mentions files: the product attaches them to
/// that message alone, they are history and are summarised with it (in
/// socialaize they are 128k of a 164k first request), and the first request
/// no longer separates the envelope from them. Then the release's system
/// prompt and tools from the envelope table (the nearest release to the
/// log's), which leaves out the user context, an unknown the log does not
/// show. Without a table row, the product's default.
///
/// When the @-mentioned files were put back by mechanism
/// (`put_back_mentions`), the first request's prefix already leaves them
/// out: it is the envelope.
fn predicted_after(
    session: &ImportedSession,
    log: &RecordedLog,
    first_prefix: usize,
    mentions_put_back: bool,
) -> Option<(usize, String)> {
    if mentions_put_back {
        return Some((
            first_prefix,
            "the first request's prefix less the @-mentioned files put back by mechanism: system prompt, tools and user context".into(),
        ));
    }
    let mentions = log
        .requests
        .first()
        .is_some_and(|r| r.messages.iter().any(mentions_a_file));
    if !mentions {
        return Some((
            first_prefix,
            "the first request's prefix: system prompt, tools and the user context Claude Code sends with every request".into(),
        ));
    }
    let release = log.version.as_deref();
    if let Some(e) = crate::replay::input::envelope_table::nearest("claude-code", release)
        .filter(|_| product_policy(session.format) == Some(crate::zoo::claude_code::NAME))
    {
        if let Some(t) = e.claude_tokens {
            if t >= first_prefix {
                // A release's bare envelope cannot exceed what the first
                // request sent with it.
                return Some((
                    first_prefix,
                    format!(
                        "the first request's prefix, no larger than Claude Code {}'s system prompt and {} tools (envelope_table.json, {t} tokens, Claude estimator) though the first message @-mentions files",
                        e.release, e.tools
                    ),
                ));
            }
            return Some((
                t,
                format!(
                    "Claude Code {}'s system prompt and {} tools, envelope_table.json, the nearest release to the log's {}, Claude estimator; the first message @-mentions files, so the first request's prefix holds them and the user context is left out",
                    e.release,
                    e.tools,
                    release.unwrap_or("unnamed release")
                ),
            ));
        }
    }
    product_default(session.format).map(|d| {
        (
            d.tokens.min(first_prefix),
            "the product's default envelope, envelope_defaults.json".into(),
        )
    })
}

/// The tokens put back into the messages before the session's first reply
/// (what its first request carried beyond its logged text).
fn unlogged_before_first_reply(session: &ImportedSession) -> usize {
    session
        .main
        .iter()
        .take_while(|m| m.role != crate::message::Role::Assistant)
        .map(crate::replay::unlogged::unlogged_tokens)
        .sum()
}

/// What the first request of a Claude Code log holds beyond the release's
/// system prompt and tools (the envelope table's nearest release) and its
/// logged messages, when its first message @-mentions files: their size,
/// which `put_back_mentions` shares among the mentions no Read sizes. The
/// first request's size is read under every anchor.
pub fn first_request_mentions(
    session: &ImportedSession,
    log: &RecordedLog,
    counter: &dyn TokenCounter,
) -> Option<usize> {
    let first = log.requests.first()?;
    if !first.messages.iter().any(mentions_a_file)
        || product_policy(session.format) != Some(crate::zoo::claude_code::NAME)
    {
        return None;
    }
    let prefix = log.prefix_of(first, counter).ok()?;
    let e = crate::replay::envelope_table::nearest("claude-code", log.version.as_deref())?;
    Some(prefix.saturating_sub(e.claude_tokens?))
}

/// A user message that @-mentions a path, which Claude Code reads and
/// attaches to that message (`extractAtMentionedFiles`: an `@` at the start
/// or after white space, followed by a path).
fn mentions_a_file(m: &crate::message::Message) -> bool {
    if m.role != crate::message::Role::User {
        return false;
    }
    let text = m.text();
    let bytes = text.as_bytes();
    text.match_indices('@').any(|(i, _)| {
        let starts = i == 0 || bytes[i - 1].is_ascii_whitespace();
        let next = bytes.get(i + 1).copied();
        starts
            && next.is_some_and(|c| {
                c.is_ascii_alphanumeric() || matches!(c, b'.' | b'/' | b'~' | b'_' | b'"')
            })
    })
}

/// What the product's model answered at each of its compactions: the text
/// of each continuation message the product wrote, without the frame
/// Claude Code puts around a summary (the port puts the same frame back).
/// Only Claude Code logs: other products' summaries are framed otherwise.
pub fn product_summaries(session: &ImportedSession) -> Vec<String> {
    use crate::zoo::claude_code::{SUMMARY_CLOSE, SUMMARY_OPEN};
    if !matches!(
        session.format,
        TranscriptFormat::ClaudeJsonl | TranscriptFormat::ChatJson
    ) {
        return Vec::new();
    }
    let at = crate::import::artefacts::product_artefacts(session);
    at.iter()
        .filter_map(|&i| session.main.get(i))
        .filter(|m| is_product_summary(m))
        .map(|m| {
            let text = m.text();
            let inner = text.strip_prefix(SUMMARY_OPEN).unwrap_or(&text);
            let inner = match inner.find(SUMMARY_CLOSE) {
                Some(end) => &inner[..end],
                None => inner,
            };
            inner.to_string()
        })
        .collect()
}

/// The resumes of `session`'s `log` by index in the replayed messages
/// (the session without its compaction artefacts), as the engine reads
/// them ([`Prefix::resumes`]).
fn replayed_resumes(session: &ImportedSession, log: &RecordedLog) -> Vec<usize> {
    let dropped = crate::import::artefacts::product_artefacts(session);
    log.resumed_before(session)
        .into_iter()
        .map(|i| i - dropped.iter().filter(|&&d| d < i).count())
        .collect()
}

/// What the product itself counted after each recorded reply of the main
/// chain, keyed by the reply's index in the replayed messages (the session
/// without its compaction artefacts). A reply is paired with the recorded
/// request that produced it by the response id of the record it starts on,
/// so a request on an abandoned branch pairs with nothing. `logged` counts the
/// product's history as the log shows it: from its last compaction's summary
/// on (artefacts included), else from the start; content the log does not
/// keep counts until a resume.
pub fn anchors(
    session: &ImportedSession,
    log: &RecordedLog,
    counter: &dyn TokenCounter,
) -> std::collections::BTreeMap<usize, Anchor> {
    if !log.anchor.reads_usage() {
        // The product's own count at a reply is recorded usage.
        return Default::default();
    }
    let by_id: std::collections::HashMap<&str, &RecordedRequest> =
        log.requests.iter().map(|r| (r.id.as_str(), r)).collect();
    let dropped = crate::import::artefacts::product_artefacts(session);
    let starts: Vec<usize> = session.real_compaction_meta.iter().map(|c| c.at).collect();
    let resumes = log.resumed_before(session);
    let mut out = std::collections::BTreeMap::new();
    let (mut replayed, mut logged, mut unlogged) = (0, 0usize, 0);
    for (i, m) in session.main.iter().enumerate() {
        if starts.contains(&i) {
            (logged, unlogged) = (0, 0);
        }
        if resumes.contains(&i) {
            logged = logged.saturating_sub(unlogged);
            unlogged = 0;
        }
        logged += counter.count_message(m);
        unlogged += crate::replay::input::unlogged::unlogged_tokens(m);
        if dropped.binary_search(&i).is_ok() {
            continue;
        }
        let request = session
            .main_place(i)
            .and_then(|p| log.reply_ids.get(&p))
            .and_then(|id| by_id.get(id.as_str()));
        if let (crate::message::Role::Assistant, Some(r)) = (m.role, request) {
            let recorded = r.usage.total().saturating_add(r.billing.output_tokens);
            let recorded = usize::try_from(recorded).unwrap_or(usize::MAX);
            out.insert(replayed, Anchor { recorded, logged });
        }
        replayed += 1;
    }
    out
}

#[cfg(test)]
pub(crate) mod tests;
