//! `lab replay --policy … --dump DIR`: every request every policy sent.
//!
//! For each session, `DIR/SESSION/messages.jsonl` holds the recorded
//! messages the replay ran on ([`ExportLine`]: index, source line, message;
//! the same lines as `lab import --export`), `DIR/SESSION/demands.json` its
//! demands (`{"session", "demands"}`, one session of `lab import --demands
//! --format json`, indices into `messages.jsonl`), and `DIR/SESSION/POLICY.jsonl`
//! one [`DumpCall`] per model call: the request in the provider's wire
//! shape ([`Wire`]), which recorded message each request message is
//! (`sources`), the policy's events, and the changes against what the
//! previous request and the messages since held ([`Change`]: results
//! dropped or rewritten, with sizes and the text written, messages dropped
//! or written). The changes are computed from the requests themselves, so
//! they hold for any policy whatever its events say.
//!
//! Both shapes are versioned ([`DUMP_VERSION`], [`EXPORT_VERSION`]) and
//! described by JSON Schemas (`lab schema dump`, `lab schema export`). A
//! file is written under a temporary name and renamed when its run ends:
//! a failed run leaves no half-written dump.

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::error::{LabError, LabResult};
use crate::message::{Block, Message};
use crate::policy::engine::{Observer, View};
use crate::policy::PolicyEvent;
use crate::replay::input::wire::{self, Wire};

/// Version tag of every dump line.
pub const DUMP_VERSION: &str = "ctxlab.dump/1";
/// Version tag of every export line.
pub const EXPORT_VERSION: &str = "ctxlab.export/1";
/// Longest rewritten text a [`Change::ResultRewritten`] carries whole (a
/// placeholder); longer rewrites (a truncation) carry only their size.
const TEXT_AFTER_MAX: usize = 400;

/// One recorded message of a session, as exported.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct ExportLine {
    /// [`EXPORT_VERSION`].
    pub version: String,
    /// The session's name.
    pub session: String,
    /// Index of the message in the session's main conversation.
    pub index: usize,
    /// 1-based line of the source file the message came from, when known.
    pub line: Option<usize>,
    /// The message, in the lab's (Anthropic Messages) shape.
    pub message: Message,
}

/// One model call of one policy on one session.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct DumpCall {
    /// [`DUMP_VERSION`].
    pub version: &'static str,
    /// Session name.
    pub session: String,
    /// Policy name.
    pub policy: String,
    /// 0-based model call.
    pub call: usize,
    /// Index of the recorded assistant message this request produced.
    pub at: usize,
    /// Its source line, when known.
    pub at_line: Option<usize>,
    /// `len(json.dumps(request, ensure_ascii=False))` of the messages.
    pub chars: usize,
    /// Tokens of the request by the run's counter (an estimate unless the
    /// counter is a provider's tokenizer).
    pub tokens: usize,
    /// The wire shape of `request`.
    pub wire: Wire,
    /// The request body: `{"messages": [...]}` in `wire`'s shape.
    pub request: Value,
    /// Per message of the request (in the lab's shape), the index of the
    /// recorded message it is byte for byte; `null` when the policy wrote
    /// or rewrote it.
    pub sources: Vec<Option<usize>>,
    /// The policy's own events before this call.
    pub events: Vec<PolicyEvent>,
    /// What changed against the previous request plus the messages since.
    pub changes: Vec<Change>,
}

/// One change a request made to the context it was built from.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum Change {
    /// A tool result that was in the context is not in the request.
    ResultDropped {
        /// The call it answered.
        tool_use_id: String,
        /// Its size in chars before.
        chars: usize,
    },
    /// A tool result's text differs from what the context held.
    ResultRewritten {
        /// The call it answers.
        tool_use_id: String,
        /// Size in chars before.
        chars_before: usize,
        /// Size in chars after.
        chars_after: usize,
        /// The text written, when short (a placeholder).
        text_after: Option<String>,
    },
    /// Recorded messages that were in the context and are not in the
    /// request, neither as they were nor through a result they carried.
    MessagesDropped {
        /// Their indices in the session.
        indices: Vec<usize>,
    },
    /// Request messages that are no recorded message (summaries, notes,
    /// rewritten messages), by position in the request.
    MessagesWritten {
        /// Positions in the request.
        positions: Vec<usize>,
    },
}

/// Where a session's dumps go.
#[derive(Debug, Clone)]
pub struct DumpTarget {
    /// `DIR/SESSION`.
    pub dir: PathBuf,
    /// The session's name.
    pub session: String,
    /// Source line per message index.
    pub lines: Vec<usize>,
    /// The wire shape.
    pub wire: Wire,
    /// The lab's lines or ATIF trajectories.
    pub to: ExportTo,
    /// The session's format's name and its system prompts (ATIF's
    /// `extra.ctxlab.source_format` and leading system steps).
    pub source_format: &'static str,
    /// The session's system prompts.
    pub system: Vec<String>,
}

impl DumpTarget {
    fn meta<'a>(&'a self, agent: &'a str) -> crate::import::atif::Meta<'a> {
        crate::import::atif::Meta {
            session_id: &self.session,
            source_format: self.source_format,
            system: &self.system,
            agent,
        }
    }
}

/// `name` as one file name: the course's safe id (every char outside
/// `[A-Za-z0-9._-]` as `_`, at most 200 chars), without leading dots so it
/// is neither `.` nor `..` nor hidden; `fallback` when nothing is left.
fn file_name(name: &str, fallback: &str) -> String {
    let safe = crate::storage::root::safe_id(name, 200);
    match safe.trim_start_matches('.') {
        "" => fallback.to_string(),
        rest => rest.to_string(),
    }
}

/// Every tool result of `m` as `(tool_use_id, content)`.
fn results(m: &Message) -> impl Iterator<Item = (&String, &String)> {
    m.blocks().iter().filter_map(|b| match b {
        Block::ToolResult {
            tool_use_id,
            content,
        } => Some((tool_use_id, content)),
        _ => None,
    })
}

/// The directory of one session under `root`: its name as a file name
/// (the course's safe id without leading dots), `-2`, `-3`… when taken in this run.
pub fn session_dir(root: &Path, label: &str, taken: &mut Vec<PathBuf>) -> PathBuf {
    let safe = file_name(label, "session");
    let mut dir = root.join(&safe);
    let mut n = 2;
    while taken.contains(&dir) {
        dir = root.join(format!("{safe}-{n}"));
        n += 1;
    }
    taken.push(dir.clone());
    dir
}

/// Write `DIR/SESSION/messages.jsonl` for `messages`.
pub fn write_export(target: &DumpTarget, messages: &[Message]) -> LabResult<()> {
    create_dir(&target.dir)?;
    if target.to == ExportTo::Atif {
        let t = crate::import::atif::to_trajectory(
            &target.meta(target.source_format),
            messages,
            &|_| None,
        );
        return write_lines(&target.dir.join("messages.atif.json"), |out| {
            json_line(out, &t)
        });
    }
    // The session's demands beside its messages, in the shape of one
    // session of `lab import --demands --format json`: where a later call
    // uses earlier content, so a reader of the dump can see what each
    // policy's removals put at stake.
    let demands = crate::import::demands::SessionDemands {
        session: target.session.clone(),
        demands: crate::import::demands::extract(messages),
    };
    write_lines(&target.dir.join("demands.json"), |out| {
        json_line(out, &demands)
    })?;
    write_lines(&target.dir.join("messages.jsonl"), |out| {
        for (index, m) in messages.iter().enumerate() {
            let line = ExportLine {
                version: EXPORT_VERSION.to_string(),
                session: target.session.clone(),
                index,
                line: target.lines.get(index).copied().filter(|&l| l > 0),
                message: m.clone(),
            };
            json_line(out, &line)?;
        }
        Ok(())
    })
}

/// `lab import FILE… --export OUT`: every session's main conversation as
/// [`ExportLine`]s in OUT, replaced whole (never half-written); returns
/// what to print.
pub fn export_files(
    files: &[PathBuf],
    import: &crate::import::ImportOptions,
    out: &Path,
) -> LabResult<String> {
    crate::input::output_parent_exists(out, "--export")?;
    let files = crate::import::corpus::plain_files(files)?;
    let (mut sessions, mut messages) = (0usize, 0usize);
    let mut first_error = None;
    write_lines(out, |w| {
        for file in &files {
            let imported = match crate::import::import_file_sessions(file, import) {
                Ok(s) => s,
                Err(e) => {
                    first_error = Some(e);
                    return Err(std::io::Error::other("import failed"));
                }
            };
            for session in imported {
                sessions += 1;
                for (index, m) in session.main.iter().enumerate() {
                    messages += 1;
                    json_line(
                        w,
                        &ExportLine {
                            version: EXPORT_VERSION.to_string(),
                            session: session.label.clone(),
                            index,
                            line: session.main_lines.get(index).copied().filter(|&l| l > 0),
                            message: m.clone(),
                        },
                    )?;
                }
            }
        }
        Ok(())
    })
    .map_err(|e| first_error.take().unwrap_or(e))?;
    Ok(format!(
        "exported {} with {} to {}\n",
        crate::render::count(sessions, "session"),
        crate::render::count(messages, "message"),
        out.display()
    ))
}

fn create_dir(dir: &Path) -> LabResult<()> {
    std::fs::create_dir_all(dir).map_err(|e| LabError::io("creating the dump directory", dir, e))
}

/// Write `path` whole through `f`, under a temporary name renamed at the end.
fn write_lines(
    path: &Path,
    f: impl FnOnce(&mut std::io::BufWriter<&std::fs::File>) -> std::io::Result<()>,
) -> LabResult<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = tempfile::NamedTempFile::new_in(dir)
        .map_err(|e| LabError::io("creating a dump file", dir, e))?;
    let mut out = std::io::BufWriter::new(tmp.as_file());
    f(&mut out)
        .and_then(|()| out.flush())
        .map_err(|e| LabError::io("writing a dump file", path, e))?;
    drop(out);
    tmp.persist(path)
        .map_err(|e| LabError::io("renaming a dump file", path, e.error))?;
    Ok(())
}

fn json_line(out: &mut impl Write, v: &impl Serialize) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, v)?;
    out.write_all(b"\n")
}

fn hash(m: &Message) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    serde_json::to_vec(m)
        .expect("messages serialise")
        .hash(&mut h);
    h.finish()
}

/// The dump of one policy's run: an engine [`Observer`] writing one line per call.
pub struct Dumper {
    target: DumpTarget,
    policy: String,
    file: Option<(tempfile::NamedTempFile, std::io::BufWriter<std::fs::File>)>,
    error: Option<std::io::Error>,
    /// Recorded message hash -> indices, in arrival order.
    by_hash: HashMap<u64, Vec<usize>>,
    /// Tool result ids of each recorded message.
    result_ids: Vec<Vec<String>>,
    /// The context the next request is built from: recorded indices it
    /// holds and every tool result's text by id.
    held: Vec<usize>,
    results: BTreeMap<String, String>,
}

impl Dumper {
    /// A dump of `policy`'s run into `target` (its file is created now).
    pub fn new(target: DumpTarget, policy: &str) -> LabResult<Self> {
        create_dir(&target.dir)?;
        let tmp = tempfile::NamedTempFile::new_in(&target.dir)
            .map_err(|e| LabError::io("creating a dump file", &target.dir, e))?;
        let writer = tmp
            .reopen()
            .map_err(|e| LabError::io("opening a dump file", tmp.path(), e))?;
        Ok(Dumper {
            target,
            policy: policy.to_string(),
            file: Some((tmp, std::io::BufWriter::new(writer))),
            error: None,
            by_hash: HashMap::new(),
            result_ids: Vec::new(),
            held: Vec::new(),
            results: BTreeMap::new(),
        })
    }

    /// The dump's final name: `DIR/SESSION/POLICY.jsonl` (`POLICY.atif.jsonl`
    /// for ATIF).
    pub fn path(&self) -> PathBuf {
        let name = file_name(&self.policy, "policy");
        let ext = match self.target.to {
            ExportTo::Ctxlab => "jsonl",
            ExportTo::Atif => "atif.jsonl",
        };
        self.target.dir.join(format!("{name}.{ext}"))
    }

    /// One call's request as an ATIF trajectory: its messages as steps,
    /// the call in `trajectory_id` and `extra.ctxlab` (policy, call, the
    /// recorded reply it produced, its size, the policy's events).
    fn atif_line(&self, line: &DumpCall, request: &[Message]) -> Value {
        let mut t =
            crate::import::atif::to_trajectory(&self.target.meta(&self.policy), request, &|_| None);
        t["trajectory_id"] = Value::String(format!(
            "{}/{}/call-{}",
            self.target.session, self.policy, line.call
        ));
        let ours = &mut t["extra"][crate::import::atif::EXTRA_KEY];
        ours["policy"] = Value::String(self.policy.clone());
        ours["call"] = line.call.into();
        ours["at"] = line.at.into();
        ours["at_line"] = serde_json::to_value(line.at_line).unwrap_or(Value::Null);
        ours["chars"] = line.chars.into();
        ours["tokens"] = line.tokens.into();
        ours["events"] = serde_json::to_value(&line.events).unwrap_or(Value::Null);
        t
    }

    /// Put the dump in place (after a run that ended well); the first
    /// write error of the run, if any, instead.
    pub fn finish(mut self) -> LabResult<PathBuf> {
        let path = self.path();
        let (tmp, mut out) = self.file.take().expect("finished once");
        if let Some(e) = self.error.take() {
            return Err(LabError::io("writing a dump file", &path, e));
        }
        out.flush()
            .map_err(|e| LabError::io("writing a dump file", &path, e))?;
        tmp.persist(&path)
            .map_err(|e| LabError::io("renaming a dump file", &path, e.error))?;
        Ok(path)
    }

    /// Per request message, the recorded index it is (indices only grow).
    fn sources(&self, request: &[Message]) -> Vec<Option<usize>> {
        let mut last = None;
        request
            .iter()
            .map(|m| {
                let found = self
                    .by_hash
                    .get(&hash(m))
                    .and_then(|ix| ix.iter().copied().find(|&i| last.is_none_or(|l| i > l)));
                if found.is_some() {
                    last = found;
                }
                found
            })
            .collect()
    }

    /// The changes from the held context to `request`.
    fn changes(&self, request: &[Message], sources: &[Option<usize>]) -> Vec<Change> {
        let now: BTreeMap<&str, &str> = request
            .iter()
            .flat_map(results)
            .map(|(id, content)| (id.as_str(), content.as_str()))
            .collect();
        let mut out = Vec::new();
        for (id, before) in &self.results {
            match now.get(id.as_str()) {
                None => out.push(Change::ResultDropped {
                    tool_use_id: id.clone(),
                    chars: before.chars().count(),
                }),
                Some(after) if *after != before => out.push(Change::ResultRewritten {
                    tool_use_id: id.clone(),
                    chars_before: before.chars().count(),
                    chars_after: after.chars().count(),
                    text_after: (after.chars().count() <= TEXT_AFTER_MAX)
                        .then(|| after.to_string()),
                }),
                Some(_) => {}
            }
        }
        let present: std::collections::HashSet<usize> = sources.iter().flatten().copied().collect();
        let dropped: Vec<usize> = self
            .held
            .iter()
            .copied()
            .filter(|i| !present.contains(i))
            .filter(|&i| {
                !self.result_ids[i]
                    .iter()
                    .any(|id| now.contains_key(id.as_str()))
            })
            .collect();
        if !dropped.is_empty() {
            out.push(Change::MessagesDropped { indices: dropped });
        }
        let written: Vec<usize> = sources
            .iter()
            .enumerate()
            .filter(|(_, s)| s.is_none())
            .map(|(p, _)| p)
            .collect();
        if !written.is_empty() {
            out.push(Change::MessagesWritten { positions: written });
        }
        out
    }

    fn write(&mut self, line: &impl Serialize) {
        if self.error.is_some() {
            return;
        }
        if let Some((_, out)) = self.file.as_mut() {
            if let Err(e) = json_line(out, line) {
                self.error = Some(e);
            }
        }
    }
}

impl Observer for Dumper {
    fn on_message(&mut self, index: usize, m: &Message) {
        self.by_hash.entry(hash(m)).or_default().push(index);
        let mut ids = Vec::new();
        for (id, content) in results(m) {
            ids.push(id.clone());
            self.results.insert(id.clone(), content.clone());
        }
        self.result_ids.push(ids);
        self.held.push(index);
    }

    fn on_request(
        &mut self,
        call: usize,
        at: usize,
        request: &[Message],
        events: &[PolicyEvent],
        view: &View<'_>,
    ) {
        let sources = self.sources(request);
        let changes = self.changes(request, &sources);
        let line = DumpCall {
            version: DUMP_VERSION,
            session: self.target.session.clone(),
            policy: self.policy.clone(),
            call,
            at,
            at_line: self.target.lines.get(at).copied().filter(|&l| l > 0),
            chars: view.request_chars(request),
            tokens: view.request_tokens(request),
            wire: self.target.wire,
            request: wire::request(request, self.target.wire),
            sources: sources.clone(),
            events: events.to_vec(),
            changes,
        };
        match self.target.to {
            ExportTo::Ctxlab => self.write(&line),
            ExportTo::Atif => {
                let t = self.atif_line(&line, request);
                self.write(&t);
            }
        }
        // The next request is built from this one plus what arrives.
        self.held = sources.iter().flatten().copied().collect();
        self.results = request
            .iter()
            .flat_map(results)
            .map(|(id, content)| (id.clone(), content.clone()))
            .collect();
    }
}

/// The JSON Schema of a dump line.
pub fn dump_schema() -> Value {
    crate::render::schema_of::<DumpCall>()
}

/// The JSON Schema of an export line.
pub fn export_schema() -> Value {
    crate::render::schema_of::<ExportLine>()
}

/// The shape `lab import --export` and `lab replay --dump` write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportTo {
    /// The lab's own JSON Lines ([`ExportLine`], [`DumpCall`]).
    #[default]
    Ctxlab,
    /// ATIF trajectories (`ATIF-v1.8`, `lab/schemas/atif-v1.8.schema.json`).
    Atif,
}

/// An agent step's ATIF `metrics` from the usage the log recorded for the
/// reply at `main` index `i`: the prompt (cache reads and writes included),
/// the cache reads as `cached_tokens`, the output, and the cache writes in
/// `extra.cache_creation_input_tokens` (ATIF has no field for them).
fn recorded_metrics(
    session: &crate::import::ImportedSession,
    log: Option<&crate::replay::input::envelope::RecordedLog>,
) -> impl Fn(usize) -> Option<Value> {
    let by_line: HashMap<usize, Value> = log
        .map(|log| {
            log.requests
                .iter()
                .filter_map(|r| {
                    let line = r.line?;
                    Some((
                        line,
                        serde_json::json!({
                            "prompt_tokens": r.usage.total(),
                            "completion_tokens": r.billing.output_tokens,
                            "cached_tokens": r.usage.cache_read_input_tokens,
                            "extra": {
                                "cache_creation_input_tokens": r.usage.cache_creation_input_tokens,
                                "input_tokens": r.usage.input_tokens,
                            },
                        }),
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    let lines = session.main_lines.clone();
    move |i| lines.get(i).and_then(|l| by_line.get(l)).cloned()
}

/// `lab import FILE… --export OUT --to atif`: every session as an ATIF
/// trajectory, with the usage its log recorded on each agent step; one
/// session is written to OUT, several to OUT as a directory
/// (`OUT/SESSION.json`). Files are replaced whole; returns what to print.
pub fn export_atif(
    files: &[PathBuf],
    import: &crate::import::ImportOptions,
    out: &Path,
) -> LabResult<String> {
    crate::input::output_parent_exists(out, "--export")?;
    let files = crate::import::corpus::plain_files(files)?;
    let mut trajectories = Vec::new();
    let mut messages = 0usize;
    for file in &files {
        // One read of the file, as a replay does (`subagents::sessions_of`).
        let (sessions, mut text) = crate::import::import_file_sessions_with_log(file, import)?;
        for session in sessions {
            use crate::replay::input::envelope::RecordedLog;
            let log = match text.take() {
                Some(text) => Some(RecordedLog::from_text(&session.source, text)?),
                None => RecordedLog::read(&session.source, session.format)?,
            };
            let metrics = recorded_metrics(&session, log.as_ref());
            messages += session.main.len();
            let meta = crate::import::atif::Meta {
                session_id: &session.label,
                source_format: session.format.name(),
                system: &session.system,
                agent: session.format.name(),
            };
            let t = crate::import::atif::to_trajectory(&meta, &session.main, &metrics);
            trajectories.push((session.label.clone(), t));
        }
    }
    let write = |path: &Path, t: &Value| {
        write_lines(path, |w| {
            serde_json::to_writer(&mut *w, t)?;
            w.write_all(b"\n")
        })
    };
    if let [(_, t)] = &trajectories[..] {
        write(out, t)?;
    } else {
        create_dir(out)?;
        let mut taken = Vec::new();
        for (label, t) in &trajectories {
            let dir = session_dir(out, label, &mut taken);
            write(&dir.with_extension("json"), t)?;
        }
    }
    Ok(format!(
        "exported {} with {} to {} as {}\n",
        crate::render::count(trajectories.len(), "session"),
        crate::render::count(messages, "message"),
        out.display(),
        crate::import::atif::VERSION
    ))
}
