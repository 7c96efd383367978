//! A Claude Code log's subagent conversations as sessions of their own.
//!
//! Each Task subagent (a sidechain: its own system prompt, tools and
//! often its own model) sent requests the provider billed beside the main
//! chain's. Replayed as a session of its own, a subagent is compared with
//! the recorded requests of that subagent, not with the main chain.

use super::{store_main, times, ImportedSession};

/// The label of a log's subagent `n` (from 1): `FILE › subagent N`.
fn subagent_label(log: &str, n: usize) -> String {
    format!("{log} › subagent {n}")
}

impl ImportedSession {
    /// Each subagent conversation of this log as a session of its own, in
    /// file order, labelled `FILE › subagent N`, its `main` the sidechain
    /// (pairs repaired as the import repaired them) with its lines, times
    /// and recorded sizes. A sidechain already replayed as `main` (a log of
    /// subagents only) is not repeated; a lazily imported log keeps no
    /// sidechains and has none.
    pub fn subagent_sessions(&self) -> Vec<ImportedSession> {
        self.sidechains
            .iter()
            .zip(&self.sidechain_origins)
            .enumerate()
            .filter(|(k, _)| self.main_from_sidechain != Some(*k))
            .map(|(k, (messages, origins))| {
                let mut s = ImportedSession::new(&self.source, self.format);
                s.label = subagent_label(&self.label, k + 1);
                s.subagent = Some(k + 1);
                s.main_times_ms = times::since_start(origins.iter().map(|o| o.time_ms));
                store_main(&mut s, messages.clone(), origins.clone());
                s
            })
            .collect()
    }
}
