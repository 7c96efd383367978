//! A CI gate never passes on no data. The sessions of a check are read
//! through the one corpus reader every command uses
//! ([`crate::import::corpus`]: files, directories, globs, tar archives, the
//! same refusals), each replayed as soon as it is read, and what the check
//! rests on is counted beside the runs: sessions, each session's model
//! calls, and every piece of import damage (a damaged record, a file or
//! archive member that is not a session). [`Gathered::gaps`] turns what is
//! missing into failures: no sessions, a session under `min_calls`, damage
//! unless `allow_damage`.

use serde::Serialize;

use crate::error::{LabError, LabResult};
use crate::import::corpus::{expand, for_each_member, not_a_session};
use crate::import::{ImportOptions, ImportedSession};
use crate::replay::policies::{checked_specs, replay_session, Compared, Measure};

/// Damage lines listed in a failure; the rest are counted in one line.
pub const MAX_DAMAGE_LINES: usize = 50;

/// One session the check replayed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Session {
    /// Its name in the table.
    pub name: String,
    /// Model calls it replays (the most over the policies: a policy that
    /// failed ends its run early).
    pub calls: usize,
}

/// What a check read and replayed.
#[derive(Debug, Default)]
pub struct Gathered {
    /// Every run, session by session, policy by policy.
    pub runs: Vec<Compared>,
    /// Every session replayed, in corpus order.
    pub sessions: Vec<Session>,
    /// One line per piece of import damage, naming its file (and line and
    /// column where there is one).
    pub damage: Vec<String>,
}

/// Read and replay every session `sessions` names under `names`.
pub fn gather(
    sessions: &[std::path::PathBuf],
    names: &[String],
    path_len: usize,
    import: &ImportOptions,
    measure: &Measure,
) -> LabResult<Gathered> {
    let names = checked_specs(names)?;
    let mut out = Gathered::default();
    for item in expand(sessions)?.iter().flat_map(|i| &i.items) {
        for_each_member(item, import, false, |member| {
            let imported = match member.sessions {
                Ok(s) => s,
                // A file that cannot be read at all (missing, unreadable)
                // is the file system's error, not damage to weigh.
                Err(e @ (LabError::Io { .. } | LabError::Usage { .. })) => return Err(e),
                Err(e) => {
                    // One line: the error's fix joined on.
                    out.damage
                        .push(not_a_session(&e).trim_end().replace("\n  fix:", "; fix:"));
                    return Ok(());
                }
            };
            for s in imported {
                out.damage.extend(damage_lines(&s));
                let subs = match measure.conversations.main_chain_only {
                    true => Vec::new(),
                    false => s.subagent_sessions(),
                };
                for one in std::iter::once(s).chain(subs) {
                    let name = one.label.clone();
                    let runs = replay_session(one, &names, path_len, measure, None, 1)?.runs;
                    let calls = runs.iter().map(|c| c.run.calls.len()).max().unwrap_or(0);
                    out.sessions.push(Session { name, calls });
                    out.runs.extend(runs);
                }
            }
            Ok(())
        })?;
    }
    Ok(out)
}

/// The session's damage: its diagnostic lines when any is damage (not
/// only information such as a detached chain).
fn damage_lines(s: &ImportedSession) -> Vec<String> {
    if s.diagnostics.iter().any(|d| d.kind.is_damage()) {
        s.diagnostic_lines()
    } else {
        Vec::new()
    }
}

impl Gathered {
    /// What the check lacks to pass, one line each: no sessions, a session
    /// of fewer than `min_calls` model calls, import damage unless
    /// `allow_damage`. Empty when the data is there.
    pub fn gaps(&self, min_calls: u64, allow_damage: bool, file: &std::path::Path) -> Vec<String> {
        let mut out = Vec::new();
        if self.sessions.is_empty() && min_calls > 0 {
            out.push(format!(
                "{}: `min_calls = {min_calls}` failed: no session to check (its `sessions` name no \
                 file that imports as a session; set min_calls = 0 to let no data pass)",
                file.display()
            ));
        }
        for s in &self.sessions {
            if (s.calls as u64) < min_calls {
                out.push(format!(
                    "{}: `min_calls = {min_calls}` failed: got {} model call{}, nothing to check \
                     (set min_calls = 0 to allow it)",
                    s.name,
                    s.calls,
                    if s.calls == 1 { "" } else { "s" }
                ));
            }
        }
        if !allow_damage {
            let shown = self.damage.iter().take(MAX_DAMAGE_LINES);
            out.extend(shown.map(|d| format!("`allow_damage = false` failed: {d}")));
            if self.damage.len() > MAX_DAMAGE_LINES {
                out.push(format!(
                    "`allow_damage = false` failed: {} more import damage lines, not shown \
                     (`lab import` on the sessions lists every one)",
                    self.damage.len() - MAX_DAMAGE_LINES
                ));
            }
        }
        out
    }
}
