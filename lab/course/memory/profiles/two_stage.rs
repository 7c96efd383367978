//! Codex memories: stage 1 keeps one output per thread
//! (`rollout_summaries/<thread_id>.md`) and rebuilds `raw_memories.md`
//! from the most recent ones ("latest first"), pruning the summaries it no
//! longer retains; stage 2, under a global consolidation lock, integrates
//! them into `MEMORY.md` and must "prefer newer guidance by default"
//! (openai/codex, `codex-rs/core/src/memories/mod.rs` and `storage.rs`,
//! `codex-rs/core/templates/memories/consolidation.md`). Codex's stage 2
//! is a model; here it is scripted: one value per key, the newest.
//!
//! Stage-1 outputs are the evidence ("treat phase-1 artifacts as immutable
//! evidence"), `MEMORY.md` is derived from them, and recall reads
//! `MEMORY.md`. A fact counts as acknowledged once its thread's summary is
//! written.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{lines_of, merged, read_opt, remove_temps, render_lines, Ack, Fact, Job, StoreProfile};
use crate::storage::{atomic_write, Shared};

/// Recent raw memories stage 2 reads (openai/codex `memories::phase_two`).
pub const MAX_RAW_MEMORIES_FOR_GLOBAL: usize = 1_024;
/// Stage-1 outputs directory (openai/codex `memories::artifacts`).
pub const ROLLOUT_SUMMARIES_SUBDIR: &str = "rollout_summaries";
/// Merged stage-1 outputs (openai/codex `memories::artifacts`).
pub const RAW_MEMORIES_FILENAME: &str = "raw_memories.md";
/// Stage 2's output (openai/codex `memories::layout`).
pub const MEMORY_REGISTRY_FILENAME: &str = "MEMORY.md";

const LOCK: &str = ".consolidation.lock";

/// The design's switches. `Default`: as documented.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TwoStage {
    /// Stage 2 keeps the newest value of a key; `false`: the oldest.
    pub prefer_newer: bool,
    /// Stage 2 runs under the global consolidation lock (a second
    /// consolidator leaves its input for the next run); `false`: both run.
    pub consolidation_lock: bool,
}

impl Default for TwoStage {
    fn default() -> Self {
        TwoStage {
            prefer_newer: true,
            consolidation_lock: true,
        }
    }
}

fn summaries(root: &Path) -> PathBuf {
    root.join(ROLLOUT_SUMMARIES_SUBDIR)
}

/// What stage 2 writes: `raw_memories.md` and `MEMORY.md`, and the
/// summaries it prunes.
struct Stage2 {
    raw: String,
    memory: String,
    prune: Vec<String>,
}

impl TwoStage {
    /// Read the stage-1 outputs and the current `MEMORY.md`; decide.
    fn plan(&self, fs: &Shared, root: &Path) -> io::Result<Stage2> {
        let mut threads = fs.list(&summaries(root)).unwrap_or_default();
        threads.retain(|n| n.ends_with(".md") && !crate::storage::is_temp_name(n));
        let keep_from = threads.len().saturating_sub(MAX_RAW_MEMORIES_FOR_GLOBAL);
        let prune = threads[..keep_from].to_vec();
        let mut raw =
            String::from("# Raw Memories\n\nMerged stage-1 raw memories (latest first):\n\n");
        let mut lines =
            lines_of(&read_opt(fs, &root.join(MEMORY_REGISTRY_FILENAME))?.unwrap_or_default());
        let mut texts = Vec::new();
        for name in &threads[keep_from..] {
            let text = read_opt(fs, &summaries(root).join(name))?.unwrap_or_default();
            lines.extend(lines_of(&text));
            texts.push((name.trim_end_matches(".md").to_string(), text));
        }
        for (thread, text) in texts.iter().rev() {
            raw.push_str(&format!("## Thread `{thread}`\n\n{text}\n"));
        }
        let memory = render_lines(&merged(&lines, self.prefer_newer));
        Ok(Stage2 { raw, memory, prune })
    }

    fn write(&self, fs: &Shared, root: &Path, s: &Stage2) -> io::Result<()> {
        atomic_write(
            fs.as_ref(),
            &root.join(RAW_MEMORIES_FILENAME),
            s.raw.as_bytes(),
        )?;
        atomic_write(
            fs.as_ref(),
            &root.join(MEMORY_REGISTRY_FILENAME),
            s.memory.as_bytes(),
        )?;
        for name in &s.prune {
            fs.remove_file(&summaries(root).join(name))?;
        }
        Ok(())
    }

    fn stage1(&self, fs: &Shared, root: &Path, thread: &str, facts: &[Fact]) -> io::Result<()> {
        fs.create_dir_all(&summaries(root))?;
        let path = summaries(root).join(format!("{thread}.md"));
        let mut text = read_opt(fs, &path)?.unwrap_or_default();
        for f in facts {
            text.push_str(&format!("{}\n", f.line()));
        }
        atomic_write(fs.as_ref(), &path, text.as_bytes())
    }
}

impl StoreProfile for TwoStage {
    fn name(&self) -> &'static str {
        "two-stage"
    }

    fn design(&self) -> &'static str {
        "Codex memories: stage-1 summary per thread, stage 2 under a global lock merges into MEMORY.md preferring newer guidance, 1,024 raw memories kept [src openai/codex codex-rs/core/src/memories]"
    }

    fn remember(&self, fs: &Shared, root: &Path, thread: &str, fact: &Fact) -> io::Result<Ack> {
        self.stage1(fs, root, thread, std::slice::from_ref(fact))?;
        Ok(Ack::Stored)
    }

    fn consolidate(&self, fs: &Shared, root: &Path) -> io::Result<()> {
        let s = self.plan(fs, root)?;
        self.write(fs, root, &s)
    }

    /// The next start: temp files go, and a lock a killed consolidator
    /// held is released (Codex's lease expires after an hour).
    fn recover(&self, fs: &Shared, root: &Path) -> io::Result<()> {
        remove_temps(fs, root)?;
        remove_temps(fs, &summaries(root))?;
        if fs.exists(&root.join(LOCK)) {
            fs.remove_file(&root.join(LOCK))?;
        }
        Ok(())
    }

    fn recall(&self, fs: &Shared, root: &Path) -> io::Result<Vec<(String, String)>> {
        Ok(lines_of(
            &read_opt(fs, &root.join(MEMORY_REGISTRY_FILENAME))?.unwrap_or_default(),
        ))
    }

    fn versions(&self, _: &Shared, _: &Path) -> Option<u64> {
        None
    }

    fn consolidator(&self, thread: &str, facts: Vec<Fact>) -> Box<dyn Job> {
        Box::new(Consolidator {
            profile: *self,
            thread: thread.to_string(),
            facts,
            phase: Phase::Stage1,
            stored: false,
        })
    }
}

enum Phase {
    Stage1,
    Lock,
    Read,
    Write(Stage2),
    Unlock,
}

/// A session's end: its stage-1 output, then stage 2 (under the lock).
struct Consolidator {
    profile: TwoStage,
    thread: String,
    facts: Vec<Fact>,
    phase: Phase,
    stored: bool,
}

impl Job for Consolidator {
    fn step(&mut self, fs: &Shared, root: &Path) -> io::Result<bool> {
        let p = &self.profile;
        match std::mem::replace(&mut self.phase, Phase::Unlock) {
            Phase::Stage1 => {
                p.stage1(fs, root, &self.thread, &self.facts)?;
                self.stored = true;
                self.phase = Phase::Lock;
            }
            Phase::Lock if !p.consolidation_lock => self.phase = Phase::Read,
            Phase::Lock => match fs.write_new(&root.join(LOCK), self.thread.as_bytes()) {
                Ok(()) => self.phase = Phase::Read,
                // Another consolidation runs: this input waits for the next.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(true),
                Err(e) => return Err(e),
            },
            Phase::Read => self.phase = Phase::Write(p.plan(fs, root)?),
            Phase::Write(s) => p.write(fs, root, &s)?,
            Phase::Unlock => {
                if p.consolidation_lock {
                    fs.remove_file(&root.join(LOCK))?;
                }
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn acknowledged(&self) -> Vec<Fact> {
        if self.stored {
            self.facts.clone()
        } else {
            Vec::new()
        }
    }
}
