//! Replay an imported real session through a compaction profile, call by
//! call, and report what the profile lost and where it compacted.
//!
//! The main conversation of an [`ImportedSession`] is streamed through the
//! policy engine ([`engine::replay_stream`]) with the profile as a
//! [`CoursePolicy`] on a fresh [`Compactor`]: messages are appended in
//! order, and before every assistant message (= every model call) the
//! profile's `prepare` runs on the history so far. An observer puts every
//! original tool result into the course checker's [`Ledger`]; at the end the
//! course's own [`check`] says what the profile lost (the oracle the engine's
//! policy-agnostic checker is tested against), and the report adds the
//! context-size series, the bytes persisted, and where compaction first
//! fired compared with where the real session compacted.
//!
//! Notes on fidelity:
//! - Messages after a real compaction are fed on top of the replayed history
//!   (the replay does not reproduce the real harness's reset): the question a
//!   replay answers is what *this profile* would have done with the session.
//! - `scale` multiplies the profile's size constants ([`Constants::scaled`]),
//!   so a short session can be pushed over a limit it never reached;
//!   [`ReplayOptions::scale_to_real`] picks, per session and profile, the
//!   scale at which the profile's limit is the size the real session had
//!   when it compacted ([`scale_to_real`]) and scales the limit only (result
//!   sizes, previews and budgets stay), so "first fired" (the first
//!   compaction: messages archived or summarised) and "real compaction" are
//!   compared on equal terms.
//! - Two size estimates ([`SIZE_ESTIMATES`], named in every report header):
//!   the profile works on the lab's message model (`chars`: what its limit is
//!   compared with); `sent` is the course's `len(json.dumps(messages,
//!   default=str, ensure_ascii=False))` on the messages as recorded, which
//!   also counts image data, thinking signatures, `is_error` and list-shaped
//!   result contents.
//! - The result folder is padded to [`DEFAULT_PATH_LEN`] chars (for the
//!   session's first tool id) so placeholder lengths, and with them every
//!   counter, do not depend on the machine's temp dir.
//!
//! Rendering ([`render_table`], [`render_markdown`], [`render_json`],
//! [`render_svg`]) is pure: reports in, text out.
//!
//! `lab replay FILE... --profile P --scale S --format F --plot PLOT.svg --strict`
//! is one call to [`run_files`]:
//!
//! ```no_run
//! use ctxlab::import::ImportOptions;
//! use ctxlab::replay::profiles::{render, render_svg, run_files, ReplayOptions};
//!
//! let files = vec![std::path::PathBuf::from("session.jsonl")];
//! let options = ReplayOptions { scale: 0.5, ..ReplayOptions::default() };
//! let import = ImportOptions { strict: false, format: None };
//! // An empty profile list means every profile.
//! let run = run_files(&files, &["course-main"], &options, &import)?;
//! for d in &run.diagnostics {
//!     eprintln!("warning: {d}");
//! }
//! print!("{}", render(&run.reports, ctxlab::render::Format::Table));
//! let plot = std::env::temp_dir().join("out.svg");
//! std::fs::write(plot, render_svg(&run.reports)).unwrap();
//! # Ok::<(), ctxlab::error::LabError>(())
//! ```

use serde::Serialize;

use crate::compact::config::{profile, profiles, Constants};
use crate::compact::oracle::check;
use crate::compact::session::{Ledger, Request};
use crate::compact::{Compactor, LabRoot};
use crate::counters::Counters;
use crate::error::{LabError, LabResult};
use crate::import::{ImportOptions, ImportedSession, RealCompaction, TranscriptFormat};
use crate::message::{estimate_chars, message_chars, Block, Message};
use crate::policy::course::CoursePolicy;
use crate::policy::engine::{self, Env, Observer, View};
use crate::policy::PolicyEvent;

/// Embedded result-path length of replay runs (the registry's long path).
pub const DEFAULT_PATH_LEN: usize = crate::registry::LONG_PATH;

/// The two size estimates of a replay report, named in every report header.
pub const SIZE_ESTIMATES: &str = "sizes: `chars` = len(json.dumps(messages)) of the lab's message model, what the profile's limit is compared with; `sent` = the course's len(json.dumps(messages, default=str, ensure_ascii=False)) of the messages as recorded (image data, thinking signatures, is_error, list-shaped contents included)";

/// How to replay. `Default`: scale 1, the registry's long path, no scale-to-real.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayOptions {
    /// Multiplier for the profile's size constants (1.0 = as the profile says).
    pub scale: f64,
    /// Embedded result-path length; `None` = unpadded temp dir (not reproducible).
    pub path_len: Option<usize>,
    /// Also record every request as a [`crate::cache::CacheRequest`] counted
    /// with this tokenizer (for `--cost`); `None` = don't.
    pub cost_tokens: Option<crate::tokens::Tokens>,
    /// Tokens of the session's envelope, cached first as the system segment
    /// of every recorded request (see `replay::envelope`); 0: none.
    pub cost_envelope: u64,
    /// Replay each session with its context limit alone at [`scale_to_real`]
    /// (its real budget) instead of every size at `scale`; sessions without
    /// a real compaction keep `scale`.
    pub scale_to_real: bool,
    /// Messages (indices in `main`) before which the product resumed from
    /// its log ([`engine::Prefix::resumes`]); none by default.
    pub resumes: Vec<usize>,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            scale: 1.0,
            path_len: Some(DEFAULT_PATH_LEN),
            cost_tokens: None,
            cost_envelope: 0,
            scale_to_real: false,
            resumes: Vec::new(),
        }
    }
}

/// The context size at one model call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Point {
    /// Index in `main` of the assistant message this call produced.
    pub at: usize,
    /// Estimated chars of everything appended so far, uncompacted (lab model).
    pub raw_chars: usize,
    /// The course's estimate of everything appended so far, as recorded.
    pub sent_chars: usize,
    /// Estimated chars of the request after `prepare`.
    pub chars: usize,
    /// Messages in the request after `prepare`.
    pub messages: usize,
}

/// What one profile did with one session.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayReport {
    /// The session's label: the file name (no directories), or
    /// `FILE#INDEX task ID` for one trajectory of a trajectory array.
    pub source: String,
    /// File name of the transcript (no directories).
    pub file: String,
    /// Its format, when it came from an importer.
    pub format: Option<TranscriptFormat>,
    /// Profile name.
    pub profile: String,
    /// Scale applied to the profile's constants.
    pub scale: f64,
    /// The scale is the session's real budget ([`scale_to_real`]).
    pub scaled_to_real: bool,
    /// The scaled context limit.
    pub context_char_limit: usize,
    /// Messages replayed.
    pub messages: usize,
    /// Model calls (assistant messages), each preceded by `prepare`.
    pub model_calls: usize,
    /// Original tool results fed.
    pub tool_results: usize,
    /// Results neither in context nor held anywhere.
    pub lost_forever: u64,
    /// Results held on disk that nothing in context leads to.
    pub pointer_lost: u64,
    /// Every request and the final context kept the tool_use / tool_result pairs.
    pub pairs_intact: bool,
    /// Requests that broke a pair rule.
    pub invalid_requests: u64,
    /// Results compacted before the model had seen them.
    pub unseen_compacted: u64,
    /// Placeholders compacted again.
    pub double_compacted: u64,
    /// Files in the result folder at the end.
    pub persisted_files: usize,
    /// Bytes of those files.
    pub bytes_persisted: u64,
    /// Summary calls (step 4).
    pub summary_calls: u64,
    /// Index in `main` of the first model call before which the profile
    /// compacted (archived messages or summarised; persisting or replacing
    /// single results does not count).
    pub first_fired_at: Option<usize>,
    /// Index in `main` of the first model call before which a summary ran.
    pub first_summary_at: Option<usize>,
    /// Indices in `main` where the real session compacted.
    pub real_compactions: Vec<usize>,
    /// The same with the recorded trigger and pre-compaction tokens.
    pub real_compaction_meta: Vec<RealCompaction>,
    /// The file starts with a compaction summary: it compacted before the file.
    pub starts_with_summary: bool,
    /// `main` is this sidechain of the file (a sub-agent log with no main conversation).
    pub main_from_sidechain: Option<usize>,
    /// `first_summary_at - real_compactions[0]` (negative: the profile summarised earlier).
    pub summary_vs_real: Option<i64>,
    /// Largest request.
    pub peak_chars: usize,
    /// Context at the end (after the last message was appended).
    pub final_chars: usize,
    /// Context if nothing had been compacted.
    pub raw_final_chars: usize,
    /// The same as the course would size the recorded messages (`sent`).
    pub sent_final_chars: usize,
    /// Every checker counter, samples removed (they would name transcript ids).
    pub counters: Counters,
    /// Context size at each model call.
    pub series: Vec<Point>,
    /// Every request sent, as the prompt cache sees it (only with
    /// [`ReplayOptions::cost_tokens`]; not serialized).
    #[serde(skip)]
    pub cache_requests: Vec<crate::cache::CacheRequest>,
}

/// The names of every profile, in `lab list` order.
pub fn profile_names() -> Vec<&'static str> {
    profiles().into_iter().map(|p| p.name).collect()
}

/// Replay `session.main` under `profile_name` with its constants scaled by `scale`.
pub fn replay(
    session: &ImportedSession,
    profile_name: &str,
    scale: f64,
) -> LabResult<ReplayReport> {
    replay_with(
        session,
        profile_name,
        &ReplayOptions {
            scale,
            ..ReplayOptions::default()
        },
    )
}

/// [`replay`] with every option.
pub fn replay_with(
    session: &ImportedSession,
    profile_name: &str,
    options: &ReplayOptions,
) -> LabResult<ReplayReport> {
    let real_scale = if options.scale_to_real {
        scale_to_real(session, profile_name)?
    } else {
        None
    };
    let options = ReplayOptions {
        scale: real_scale.unwrap_or(options.scale),
        // Only a session with a real budget scales its limit alone.
        scale_to_real: real_scale.is_some(),
        ..options.clone()
    };
    let main = MainInput {
        messages: &mut session.main_messages(),
        first_tool_use_chars: session.first_tool_use_chars(),
        sent: Some(&session.main_sent_chars),
    };
    let mut report = replay_core(
        &session.label,
        main,
        &session.real_compactions,
        profile_name,
        &options,
    )?;
    report.file = session
        .source
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    report.format = Some(session.format);
    report.scaled_to_real = real_scale.is_some();
    report.real_compaction_meta = session.real_compaction_meta.clone();
    report.starts_with_summary = session.starts_with_summary;
    report.main_from_sidechain = session.main_from_sidechain;
    Ok(report)
}

/// The replay core on bare messages (what a benchmark calls with synthetic
/// sessions); their recorded size is their lab size.
pub fn replay_messages(
    source: &str,
    main: &[Message],
    real_compactions: &[usize],
    profile_name: &str,
    options: &ReplayOptions,
) -> LabResult<ReplayReport> {
    let input = MainInput {
        messages: &mut main.iter().cloned().map(Ok),
        first_tool_use_chars: main
            .iter()
            .flat_map(|m| m.tool_use_ids())
            .next()
            .map(|id| id.chars().count()),
        sent: None,
    };
    replay_core(source, input, real_compactions, profile_name, options)
}

/// The main conversation a replay reads, one message at a time (a replay
/// keeps only its live context, so a session streamed from its file is
/// never held whole).
struct MainInput<'a> {
    messages: &'a mut dyn Iterator<Item = LabResult<Message>>,
    /// Characters of the first `tool_use` id (the lab root's paths are sized by it).
    first_tool_use_chars: Option<usize>,
    /// Each message's recorded size, parallel to the messages.
    sent: Option<&'a [usize]>,
}

/// What a course replay measures while the engine walks the main
/// conversation: the course checker's ledger and requests, the size
/// series, where the profile first fired and summarised, and (for `--cost`)
/// the requests as the prompt cache sees them.
#[derive(Default)]
struct Walk {
    /// The live history as the course checker judges it: the last request
    /// plus what arrived after it.
    messages: Vec<Message>,
    ledger: Ledger,
    requests: Vec<Request>,
    series: Vec<Point>,
    raw_sum: usize,
    sent_sum: usize,
    first_fired_at: Option<usize>,
    first_summary_at: Option<usize>,
    tool_results: usize,
    builder: Option<crate::cache::session::RequestBuilder>,
    cache_requests: Vec<crate::cache::CacheRequest>,
    turn: usize,
    len: usize,
}

/// [`Walk`] with the recorded sizes it reads beside the messages.
struct Observed<'a> {
    walk: Walk,
    sent: Option<&'a [usize]>,
}

impl Observer for Observed<'_> {
    /// A model call before message `at`: the request the profile prepared.
    fn on_request(
        &mut self,
        _call: usize,
        at: usize,
        request: &[Message],
        events: &[PolicyEvent],
        _view: &View<'_>,
    ) {
        let w = &mut self.walk;
        // "First fired" is the first compaction (messages archived or
        // summarised), not the first result persisted.
        let compacted = events.iter().any(|e| {
            matches!(
                e,
                PolicyEvent::Dropped { .. } | PolicyEvent::Summarised { .. }
            )
        });
        if w.first_fired_at.is_none() && compacted {
            w.first_fired_at = Some(at);
        }
        if w.first_summary_at.is_none()
            && events
                .iter()
                .any(|e| matches!(e, PolicyEvent::Summarised { .. }))
        {
            w.first_summary_at = Some(at);
        }
        w.messages = request.to_vec();
        let chars = estimate_chars(request);
        w.requests.push(Request {
            messages: request.len(),
            chars,
            violations: crate::compact::pairs::pair_violations(request),
        });
        w.series.push(Point {
            at,
            raw_chars: raw_total(w.raw_sum, at),
            sent_chars: raw_total(w.sent_sum, at),
            chars,
            messages: request.len(),
        });
        if let Some(b) = w.builder.as_mut() {
            w.cache_requests.push(b.request(request, w.turn));
        }
    }

    /// Message `i` arrives: its results into the ledger, its sizes into the sums.
    fn on_message(&mut self, i: usize, m: &Message) {
        let w = &mut self.walk;
        w.len += 1;
        w.turn += crate::cache::session::starts_turn(m) as usize;
        for b in m.blocks() {
            if let Block::ToolResult {
                tool_use_id,
                content,
            } = b
            {
                w.ledger.record(tool_use_id, content);
                w.tool_results += 1;
            }
        }
        let lab_size = message_chars(m);
        w.raw_sum += lab_size;
        w.sent_sum += self
            .sent
            .and_then(|s| s.get(i).copied())
            .unwrap_or(lab_size);
        w.messages.push(m.clone());
    }
}

/// Replay `main` through the policy engine, the profile run as a
/// [`CoursePolicy`], and judge it with the course's own checker.
fn replay_core(
    source: &str,
    main: MainInput<'_>,
    real_compactions: &[usize],
    profile_name: &str,
    options: &ReplayOptions,
) -> LabResult<ReplayReport> {
    let prof = profile(profile_name)?;
    let mut config = prof.config.clone();
    config.constants = if options.scale_to_real {
        limit_scaled(&config.constants, options.scale)?
    } else {
        scaled_constants(&config.constants, options.scale)?
    };
    let ref_id = main.first_tool_use_chars.unwrap_or(7);
    // Archives and persisted results grow with the session: their bytes go
    // to a spill file, not memory.
    let root = LabRoot::spilled(options.path_len, ref_id.min(config.constants.safe_id_max))?;
    let name = prof.name;
    let mut policy = CoursePolicy::on_root(prof, config, root)?;
    let mut observed = Observed {
        walk: Walk {
            builder: options
                .cost_tokens
                .map(|t| crate::cache::session::RequestBuilder::new(t, options.cost_envelope)),
            ..Walk::default()
        },
        sent: main.sent,
    };
    let mut env = Env::default();
    env.prefix.resumes = options.resumes.clone();
    let run = engine::replay_stream(
        &mut policy,
        source,
        main.messages,
        &mut env,
        &mut [&mut observed],
    )?;
    debug_assert!(run.ended_by_error.is_none(), "a streamed replay fails fast");
    Ok(finish(
        source,
        name,
        options.scale,
        policy.compactor(),
        observed.walk,
        real_compactions,
    ))
}

/// The report of a finished walk under `profile` at `scale`: the checker's
/// counters and the sizes.
fn finish(
    source: &str,
    profile: &str,
    scale: f64,
    compactor: &Compactor,
    w: Walk,
    real_compactions: &[usize],
) -> ReplayReport {
    let mut counters = check(compactor, &w.messages, &w.ledger, &w.requests);
    let (persisted_files, bytes_persisted) =
        folder_size(compactor.root.fs(), compactor.root.results());
    for c in &mut counters.0 {
        c.samples.clear();
    }
    // The list of persisted file names would name transcript ids.
    counters.0.retain(|c| c.name != "persisted_files");
    let count = |name: &str| counters.count_of(name).unwrap_or(0);
    let summary_vs_real = match (w.first_summary_at, real_compactions.first()) {
        (Some(a), Some(&r)) => Some(a as i64 - r as i64),
        _ => None,
    };
    ReplayReport {
        source: source.to_string(),
        file: source.to_string(),
        format: None,
        profile: profile.to_string(),
        scale,
        scaled_to_real: false,
        context_char_limit: compactor.config.constants.context_char_limit,
        messages: w.len,
        model_calls: w.series.len(),
        tool_results: w.tool_results,
        lost_forever: count("lost_forever"),
        pointer_lost: count("pointer_lost"),
        pairs_intact: counters.flag_of("pairs_intact").unwrap_or(false),
        invalid_requests: count("invalid_requests"),
        unseen_compacted: count("unseen_compacted"),
        double_compacted: count("double_compacted"),
        persisted_files,
        bytes_persisted,
        summary_calls: count("summary_calls"),
        first_fired_at: w.first_fired_at,
        first_summary_at: w.first_summary_at,
        real_compactions: real_compactions.to_vec(),
        real_compaction_meta: real_compactions
            .iter()
            .map(|&at| RealCompaction {
                dropped: None,
                first_kept: None,
                at,
                trigger: None,
                pre_tokens: None,
            })
            .collect(),
        starts_with_summary: false,
        main_from_sidechain: None,
        summary_vs_real,
        peak_chars: w.series.iter().map(|p| p.chars).max().unwrap_or(0),
        final_chars: estimate_chars(&w.messages),
        raw_final_chars: raw_total(w.raw_sum, w.len),
        sent_final_chars: raw_total(w.sent_sum, w.len),
        counters,
        series: w.series,
        cache_requests: w.cache_requests,
    }
}

/// The scale at which `profile_name`'s context limit equals the uncompacted
/// size the real session had reached when it first compacted (rounded to
/// three decimals), so that "where would this profile have compacted" is
/// asked at the real harness's budget. `None` without a real compaction.
///
/// The size is the lab model's (`chars`), the unit the profile compares its
/// limit with, so the scaled profile fires where the real harness did.
pub fn scale_to_real(session: &ImportedSession, profile_name: &str) -> LabResult<Option<f64>> {
    let Some(&at) = session.real_compactions.first() else {
        return Ok(None);
    };
    let limit = profile(profile_name)?.config.constants.context_char_limit;
    // estimate_chars of the messages before the compaction, read one at a time.
    let (mut raw, mut n) = (2usize, 0usize);
    for m in session.main_messages().take(at) {
        raw += message_chars(&m?);
        n += 1;
    }
    raw += n.saturating_sub(1) * 2;
    let scale = (raw as f64 / limit as f64 * 1000.0).round() / 1000.0;
    Ok(Some(scale.max(0.001)))
}

// The synthetic main conversation lives with the generated sessions, so
// the measures' tests below this crate can use it too.
pub use crate::import::generate::synthetic_main;

/// Replay every session under every profile (sessions outer, profiles inner).
pub fn replay_all(
    sessions: &[ImportedSession],
    profile_names: &[&str],
    options: &ReplayOptions,
) -> LabResult<Vec<ReplayReport>> {
    let mut out = Vec::new();
    for s in sessions {
        for p in profile_names {
            out.push(replay_with(s, p, options)?);
        }
    }
    Ok(out)
}

/// Everything `lab replay FILE... --profile P --scale S` needs.
#[derive(Debug)]
pub struct ReplayRun {
    /// One report per (session, profile), sessions outer; a file of several
    /// sessions (a trajectory array) is followed by one aggregate row per profile.
    pub reports: Vec<ReplayReport>,
    /// Import diagnostics of every file, `file:line:column: kind: message`
    /// (for stderr; they name ids and counts, never transcript text).
    pub diagnostics: Vec<String>,
    /// The files that could not be replayed, with why, in file order: the
    /// other files' reports are still in `reports`.
    pub errors: Vec<LabError>,
}

/// Import every file and replay it under every named profile (all profiles
/// when `profile_names` is empty). A file that fails (bad input, no
/// messages) is recorded in [`ReplayRun::errors`] and the others go on;
/// a bad profile or scale fails the whole run before any import.
pub fn run_files(
    files: &[std::path::PathBuf],
    profile_names: &[&str],
    options: &ReplayOptions,
    import: &ImportOptions,
) -> LabResult<ReplayRun> {
    let all = self::profile_names();
    let names: &[&str] = if profile_names.is_empty() {
        &all
    } else {
        profile_names
    };
    // Reject a bad profile or scale before importing anything.
    for n in names {
        profile(n)?;
    }
    scaled_constants(&profile(names[0])?.config.constants, options.scale)?;
    let mut run = ReplayRun {
        reports: Vec::new(),
        diagnostics: Vec::new(),
        errors: Vec::new(),
    };
    let progress = crate::progress::Progress::bar((files.len() * names.len()) as u64, "replay");
    // Directories, globs and archives are read one file or member at a time.
    for input in crate::import::corpus::expand(files)? {
        for item in &input.items {
            let read = crate::import::corpus::for_each_member(item, import, true, |m| {
                progress.label(&format!("replay {}", m.name));
                let replayed = m.sessions.and_then(|s| {
                    replay_sessions(&m.name, s, names, options, &mut run.diagnostics)
                });
                match replayed {
                    Ok(reports) => run.reports.extend(reports),
                    Err(e @ LabError::Usage { .. }) => return Err(e),
                    // A corpus member that is not a session does not fail the run.
                    Err(e) if input.corpus => run
                        .diagnostics
                        .push(crate::import::corpus::not_a_session(&e)),
                    Err(e) => run.errors.push(e),
                }
                Ok(())
            });
            match read {
                Ok(()) => {}
                Err(e @ LabError::Usage { .. }) => return Err(e),
                Err(e) => run.errors.push(e),
            }
            for _ in names {
                progress.step();
            }
        }
    }
    Ok(run)
}

/// Every session of one file (`file` names it) under every profile, plus aggregate rows.
fn replay_sessions(
    file: &str,
    sessions: Vec<ImportedSession>,
    names: &[&str],
    options: &ReplayOptions,
    diagnostics: &mut Vec<String>,
) -> LabResult<Vec<ReplayReport>> {
    for s in &sessions {
        diagnostics.extend(s.diagnostic_lines());
    }
    let mut reports = Vec::new();
    let mut replayed = 0;
    for s in &sessions {
        // One empty trajectory among many is skipped with a note; a file
        // with nothing to replay at all is refused.
        match s.require_messages() {
            Ok(()) => {}
            Err(e) if sessions.len() > 1 => {
                diagnostics.push(e.to_string().replace("error: ", "skipped: "));
                continue;
            }
            Err(e) => return Err(e),
        }
        replayed += 1;
        for n in names {
            reports.push(replay_with(s, n, options)?);
        }
    }
    if replayed == 0 {
        let first = sessions.first().map(|s| s.require_messages());
        return Err(match first {
            Some(Err(e)) => e,
            _ => LabError::Input {
                file: file.into(),
                line: 0,
                column: 0,
                message: format!("no messages in {file}"),
                fix: "pass a transcript that holds a conversation".to_string(),
            },
        });
    }
    if sessions.len() > 1 {
        let per_profile: Vec<ReplayReport> = names
            .iter()
            .map(|n| {
                let rows: Vec<&ReplayReport> = reports.iter().filter(|r| r.profile == *n).collect();
                aggregate(&rows, replayed)
            })
            .collect();
        reports.extend(per_profile);
    }
    Ok(reports)
}

/// One row summing the reports of one profile over the sessions of a file:
/// counts add up, `pairs_intact` holds if it held everywhere, peak is the
/// largest; positions (first fired, real compactions) and series are per
/// session only and left empty.
pub fn aggregate(rows: &[&ReplayReport], sessions: usize) -> ReplayReport {
    let first = rows.first().copied();
    let sum = |f: &dyn Fn(&ReplayReport) -> u64| rows.iter().map(|r| f(r)).sum::<u64>();
    let usum = |f: &dyn Fn(&ReplayReport) -> usize| rows.iter().map(|r| f(r)).sum::<usize>();
    let file = first.map(|r| r.file.clone()).unwrap_or_default();
    ReplayReport {
        source: format!("{file} (all {sessions})"),
        file,
        format: first.and_then(|r| r.format),
        profile: first.map(|r| r.profile.clone()).unwrap_or_default(),
        scale: first.map_or(1.0, |r| r.scale),
        scaled_to_real: rows.iter().any(|r| r.scaled_to_real),
        context_char_limit: first.map_or(0, |r| r.context_char_limit),
        messages: usum(&|r| r.messages),
        model_calls: usum(&|r| r.model_calls),
        tool_results: usum(&|r| r.tool_results),
        lost_forever: sum(&|r| r.lost_forever),
        pointer_lost: sum(&|r| r.pointer_lost),
        pairs_intact: rows.iter().all(|r| r.pairs_intact),
        invalid_requests: sum(&|r| r.invalid_requests),
        unseen_compacted: sum(&|r| r.unseen_compacted),
        double_compacted: sum(&|r| r.double_compacted),
        persisted_files: usum(&|r| r.persisted_files),
        bytes_persisted: sum(&|r| r.bytes_persisted),
        summary_calls: sum(&|r| r.summary_calls),
        first_fired_at: None,
        first_summary_at: None,
        real_compactions: Vec::new(),
        real_compaction_meta: Vec::new(),
        starts_with_summary: false,
        main_from_sidechain: None,
        summary_vs_real: None,
        peak_chars: rows.iter().map(|r| r.peak_chars).max().unwrap_or(0),
        final_chars: usum(&|r| r.final_chars),
        raw_final_chars: usum(&|r| r.raw_final_chars),
        sent_final_chars: usum(&|r| r.sent_final_chars),
        counters: Counters::default(),
        series: Vec::new(),
        cache_requests: Vec::new(),
    }
}

/// The arguments of `lab replay`.
#[derive(Debug, Clone)]
pub struct ReplayCommand {
    /// Transcript files.
    pub files: Vec<std::path::PathBuf>,
    /// Profile names (empty = every profile).
    pub profiles: Vec<String>,
    /// Scale, path length, scale-to-real.
    pub options: ReplayOptions,
    /// Damage is an error.
    pub strict: bool,
    /// Forced input format (`--format-in`).
    pub format_in: Option<TranscriptFormat>,
    /// Where to write the SVG plot.
    pub plot: Option<std::path::PathBuf>,
    /// Output format.
    pub format: crate::render::Format,
    /// Table columns (indices into [`COLUMNS`]); `None` = the defaults.
    pub columns: Option<Vec<usize>>,
}

/// `lab replay`: every good file's reports on stdout, diagnostics on
/// stderr, then the errors of the files that failed (the command then fails
/// with the gravest error's exit code).
pub fn command(cmd: &ReplayCommand) -> LabResult<String> {
    let names: Vec<&str> = cmd.profiles.iter().map(String::as_str).collect();
    let import = ImportOptions {
        strict: cmd.strict,
        format: cmd.format_in,
    };
    let run = run_files(&cmd.files, &names, &cmd.options, &import)?;
    for d in &run.diagnostics {
        eprintln!("warning: {d}");
    }
    if let Some(path) = &cmd.plot {
        let svg = render_svg(&run.reports);
        crate::storage::root::cleanup::write_replacing(path, svg.as_bytes())
            .map_err(|e| LabError::io("writing the plot", path, e))?;
    }
    let out = if run.reports.is_empty() {
        String::new()
    } else {
        render_with(&run.reports, cmd.format, cmd.columns.as_deref())
    };
    match LabError::several(run.errors) {
        None => Ok(out),
        Some(e) => {
            use std::io::Write as _;
            let _ = std::io::stdout().write_all(out.as_bytes());
            Err(e)
        }
    }
}

/// `estimate_chars` of `n` messages whose `message_chars` sum to `sum`.
fn raw_total(sum: usize, n: usize) -> usize {
    2 + n.saturating_sub(1) * 2 + sum
}

/// A scale must be a finite positive factor: `Constants::scaled` would turn
/// zero, a negative or NaN into sizes of 1 and replay nonsense without an error.
pub fn check_scale(scale: f64) -> LabResult<()> {
    if scale.is_finite() && scale > 0.0 {
        return Ok(());
    }
    Err(LabError::usage(
        format!("--scale {scale} is not a positive number"),
        "use e.g. --scale 0.1",
    ))
}

/// Every replay scales its profile here, so library callers get the same
/// scale check as `lab replay` (which checks first, before any other argument).
/// `c` with only its context limit scaled: the session's real budget moves
/// the limit, never the result sizes, previews or batch budget.
fn limit_scaled(c: &Constants, scale: f64) -> LabResult<Constants> {
    check_scale(scale)?;
    let scaled = Constants {
        context_char_limit: ((c.context_char_limit as f64) * scale).round().max(1.0) as usize,
        ..c.clone()
    };
    scaled.validate()?;
    Ok(scaled)
}

fn scaled_constants(c: &Constants, scale: f64) -> LabResult<Constants> {
    check_scale(scale)?;
    let scaled = if scale == 1.0 {
        c.clone()
    } else {
        c.scaled(scale)
    };
    scaled.validate()?;
    Ok(scaled)
}

fn folder_size(fs: &dyn crate::storage::Storage, dir: &std::path::Path) -> (usize, u64) {
    let mut files = 0;
    let mut bytes = 0;
    for name in fs.list(dir).unwrap_or_default() {
        let path = dir.join(name);
        if fs.kind(&path) == Some(crate::storage::FileKind::File) {
            files += 1;
            bytes += fs.read(&path).map_or(0, |b| b.len() as u64);
        }
    }
    (files, bytes)
}

// The renderers (pure: a report in, text out) sit in `table.rs`, beside
// the report they render; their paths stay `replay::profiles::*`.
mod table;
pub use table::*;

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str) -> Message {
        Message::assistant(vec![Block::ToolUse {
            id: id.into(),
            name: "bash".into(),
            input: serde_json::json!({}).into(),
        }])
    }

    fn synthetic(turns: usize, result_chars: usize) -> Vec<Message> {
        let mut m = vec![Message::user_text("do the thing")];
        for t in 0..turns {
            let id = format!("toolu_{t:04}");
            m.push(call(&id));
            m.push(Message::tool_results(vec![(id, "r".repeat(result_chars))]));
        }
        m.push(Message::assistant(vec![Block::Text {
            text: "done".into(),
        }]));
        m
    }

    #[test]
    fn a_call_per_assistant_message_and_a_point_per_call() {
        let msgs = synthetic(5, 100);
        let r = replay_messages("s", &msgs, &[], "hardened", &ReplayOptions::default()).unwrap();
        assert_eq!(r.model_calls, 6);
        assert_eq!(r.series.len(), 6);
        assert_eq!(r.tool_results, 5);
        assert!(r.pairs_intact);
        assert_eq!(r.raw_final_chars, estimate_chars(&msgs));
        // Nothing to compact at 100-char results under a 50 000 limit.
        assert_eq!(r.lost_forever, 0);
        assert_eq!(r.first_summary_at, None);
        for p in &r.series {
            assert_eq!(
                p.raw_chars,
                estimate_chars(&msgs[..p.at]),
                "raw size before call at {}",
                p.at
            );
        }
    }

    #[test]
    fn a_small_scale_makes_compaction_fire_and_is_compared_with_the_real_one() {
        let msgs = synthetic(40, 2_000);
        let r = replay_messages(
            "s",
            &msgs,
            &[30],
            "course-f9e8b28",
            &ReplayOptions {
                scale: 0.2,
                ..ReplayOptions::default()
            },
        )
        .unwrap();
        assert_eq!(r.context_char_limit, 10_000);
        assert!(r.first_fired_at.is_some());
        assert!(r.summary_calls > 0, "{r:?}");
        let at = r.first_summary_at.unwrap();
        assert_eq!(r.summary_vs_real, Some(at as i64 - 30));
        assert!(r.peak_chars < r.raw_final_chars);
    }

    #[test]
    fn scale_to_real_scales_the_limit_alone() {
        let c = profile("course-f9e8b28").unwrap().config.constants;
        let scaled = limit_scaled(&c, 0.2).unwrap();
        assert_eq!(
            scaled,
            Constants {
                context_char_limit: 10_000,
                ..c.clone()
            }
        );
        // `--scale` still scales every size.
        assert_ne!(
            scaled_constants(&c, 0.2).unwrap().large_result_chars,
            c.large_result_chars
        );
        let msgs = synthetic(40, 2_000);
        let options = ReplayOptions {
            scale: 0.2,
            scale_to_real: true,
            ..ReplayOptions::default()
        };
        let r = replay_messages("s", &msgs, &[30], "course-f9e8b28", &options).unwrap();
        assert_eq!(r.context_char_limit, 10_000);
    }

    #[test]
    fn first_fired_counts_compactions_only() {
        // One result over the persistence threshold, the whole session under
        // the limit: the result is saved, nothing is compacted.
        let msgs = synthetic(1, 40_000);
        let r = replay_messages("s", &msgs, &[], "hardened", &ReplayOptions::default()).unwrap();
        assert_eq!(r.persisted_files, 1, "{r:?}");
        assert_eq!(r.first_fired_at, None);
        // A small scale makes it archive or summarise: that fires.
        let msgs = synthetic(40, 2_000);
        let small = ReplayOptions {
            scale: 0.2,
            ..ReplayOptions::default()
        };
        let r = replay_messages("s", &msgs, &[], "course-f9e8b28", &small).unwrap();
        let fired = r.first_fired_at.expect("compacted at a fifth of the limit");
        assert!(r.first_summary_at.is_none_or(|s| fired <= s), "{r:?}");
    }

    #[test]
    fn bad_scale_and_profile_are_usage_errors() {
        let msgs = synthetic(1, 10);
        for s in [0.0, -1.0, f64::NAN] {
            let e = replay_messages(
                "s",
                &msgs,
                &[],
                "hardened",
                &ReplayOptions {
                    scale: s,
                    ..ReplayOptions::default()
                },
            )
            .unwrap_err();
            assert_eq!(e.exit_code(), 2, "{e}");
        }
        let e = replay_messages("s", &msgs, &[], "nope", &ReplayOptions::default()).unwrap_err();
        assert_eq!(e.exit_code(), 2);
    }

    #[test]
    fn svg_is_deterministic_and_escaped() {
        let msgs = synthetic(3, 50);
        let mut r =
            replay_messages("a&b__x", &msgs, &[2], "hardened", &ReplayOptions::default()).unwrap();
        r.source = "a&b__x".into();
        let one = render_svg(std::slice::from_ref(&r));
        let two = render_svg(std::slice::from_ref(&r));
        assert_eq!(one, two);
        assert!(one.starts_with("<svg"));
        assert!(one.contains("a&amp;b"));
        assert!(one.contains("real compaction"));
        assert!(render_svg(&[]).ends_with("</svg>\n"));
    }

    #[test]
    fn synthetic_main_is_paired_and_sized() {
        let m = synthetic_main(4, 10);
        assert_eq!(m.len(), 10);
        assert!(crate::compact::pairs::pair_violations(&m).is_empty());
        let r = replay_messages("syn", &m, &[], "course-main", &ReplayOptions::default()).unwrap();
        assert_eq!((r.model_calls, r.tool_results), (5, 4));
    }
}
