//! Each subagent conversation of a Claude Code log replayed as a session of
//! its own, beside the main chain.
//!
//! The provider billed a subagent's requests as it billed the main
//! chain's; a subagent has its own system prompt, tools and often its own
//! model (Haiku). So a replay that is to be compared with the bill replays
//! the main chain and every subagent apart
//! ([`crate::import::ImportedSession::subagent_sessions`]): each with its
//! own envelope from its own first recorded request, its calls paired with
//! its recorded requests by response id ([`RecordedLog::subagents`]),
//! priced at the model that answered most of them, and its recorded rows
//! on those requests. `--main-chain-only` replays the main chain alone and
//! names the subagents' requests and bill beside its recorded rows.

use std::path::Path;

use super::envelope::RecordedLog;
use crate::error::LabResult;
use crate::import::{ImportOptions, ImportedSession};

/// Which conversations of a log are replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct Conversations {
    /// `--main-chain-only`: the main chain alone, the subagents' requests
    /// named beside its recorded rows. Default off: the bill includes the
    /// subagents, so a product-true replay replays them too.
    pub main_chain_only: bool,
}

/// One session to replay, with the recorded usage of its own requests
/// (`None` for a format that records none).
#[derive(Debug, Clone)]
pub struct LoggedSession {
    /// The imported session (a subagent's has [`ImportedSession::subagent`]).
    pub session: ImportedSession,
    /// Its conversation's recorded requests.
    pub log: Option<RecordedLog>,
}

/// The sessions of `file` to replay: each session it holds, each followed
/// (unless `which` says the main chain only) by its subagents as sessions
/// of their own; a log's requests are read once and shared out among them.
pub fn sessions_of(
    file: &Path,
    import: &ImportOptions,
    which: Conversations,
) -> LabResult<Vec<LoggedSession>> {
    let mut out = Vec::new();
    // One read of the file: a Claude Code log's text comes back with its
    // session (one per log) and its recorded log is built from it.
    let (sessions, mut text) = crate::import::import_file_sessions_with_log(file, import)?;
    for session in sessions {
        let read = match text.take() {
            Some(text) => Some(RecordedLog::from_text(&session.source, text)?),
            None => RecordedLog::read(&session.source, session.format)?,
        };
        let mut log = read.map(|l| l.own_main(&session));
        let subs = match (&mut log, which.main_chain_only) {
            (Some(l), false) => {
                let sessions = session.subagent_sessions();
                let logs = l.subagents(&sessions);
                sessions
                    .into_iter()
                    .zip(logs.into_iter().map(Some))
                    .collect()
            }
            _ => Vec::new(),
        };
        out.push(LoggedSession { session, log });
        out.extend(
            subs.into_iter()
                .map(|(session, log)| LoggedSession { session, log }),
        );
    }
    Ok(out)
}

/// [`sessions_of`] as a replay sends them: with `--envelope auto`, what
/// each log leaves out is put back where its recorded usage shows it
/// (`anchor` permitting, [`super::unlogged`]), counted with `tokens`'
/// counter. A named `anchor` on a session without recorded usage is
/// refused (exit 2).
pub fn replayed_sessions(
    file: &Path,
    import: &ImportOptions,
    which: Conversations,
    envelope: super::envelope::EnvelopeArg,
    tokens: crate::tokens::Tokens,
    anchor: super::anchor::AnchorArg,
) -> LabResult<Vec<LoggedSession>> {
    let mut sessions = sessions_of(file, import, which)?;
    for s in &mut sessions {
        anchor.check(&s.session, s.log.is_some())?;
        as_sent(
            &mut s.session,
            s.log.as_ref(),
            envelope,
            tokens,
            anchor.anchor,
        );
    }
    Ok(sessions)
}

/// `session` as a replay sends it: with `--envelope auto`, what its
/// conversation's `log` leaves out put back: the background-shell
/// reminders rebuilt from the log's text, under `Anchor::Recorded` the
/// attachments its recorded usage shows ([`super::unlogged`]), under
/// `Anchor::None` the @-mentioned files its text sizes
/// ([`super::unlogged::put_back_mentions`]) and the files changed outside
/// the product's edits it shows before and after
/// ([`super::unlogged::put_back_changed_files`]), counted with
/// `tokens`' counter. Every replay path calls it: named files through
/// [`replayed_sessions`], a corpus session by session.
pub fn as_sent(
    session: &mut ImportedSession,
    log: Option<&RecordedLog>,
    envelope: super::envelope::EnvelopeArg,
    tokens: crate::tokens::Tokens,
    anchor: super::anchor::Anchor,
) {
    let Some(log) = log.filter(|_| envelope == super::envelope::EnvelopeArg::Auto) else {
        return;
    };
    let log = log.anchored(anchor);
    // Under `None` no step between two recorded requests is read.
    let recorded = |place| {
        let r = log.request_at(place).filter(|_| anchor.reads_usage())?;
        Some(r.usage.total())
    };
    let counter = tokens.counter();
    let resumes = log.resumed_before(session);
    let release = log.version.as_deref();
    super::unlogged::put_back(session, release, &recorded, &resumes, counter.as_ref());
    if !anchor.reads_usage() {
        // Predicted: the @-mentioned files the log's text sizes. Under
        // `Recorded` the steps in recorded usage already hold them.
        let first = super::envelope::first_request_mentions(session, &log, counter.as_ref());
        super::unlogged::put_back_mentions(session, first, counter.as_ref());
        // And the changed files the log shows before and after.
        let cwds = log.cwds(session);
        let resumes = super::unlogged::changed_files::Resumes {
            at: &resumes,
            rebuilds: resume_rebuilds(release),
        };
        super::unlogged::put_back_changed_files(session, &cwds, resumes, counter.as_ref());
    }
}

/// Whether a resumed process of Claude Code `release` rebuilds its
/// read-file state from the loaded messages (the port's release table,
/// read in the product's source).
pub fn resume_rebuilds(release: Option<&str>) -> bool {
    crate::zoo::claude_code::trigger::table()
        .resume_rule(release)
        .rebuilds
}

/// Whose requests a session's recorded rows cover: `main chain`, or
/// `subagent N` (`subagent N (no main chain)` for the sidechain a log of
/// subagents only replays as its main conversation).
pub fn conversation(session: &ImportedSession) -> String {
    match (session.subagent, session.main_from_sidechain) {
        (Some(n), _) => format!("subagent {n}"),
        // A log of subagents only replays its longest in place of a main chain.
        (None, Some(k)) => format!("subagent {} (no main chain)", k + 1),
        (None, None) => "main chain".to_string(),
    }
}
