//! Codex memories (openai/codex `codex-rs/core/src/memories/`): a session
//! only writes its rollout and is told nothing about memory. At a later
//! start-up, stage 1 extracts each idle rollout into a row of the state
//! database (the record); stage 2 claims the global job (a lease in the
//! same database), regenerates `rollout_summaries/` and `raw_memories.md`
//! from the newest [`MAX_RAW_MEMORIES_FOR_GLOBAL`] rows, removes
//! `MEMORY.md` (`wipe_consolidation_outputs`) and has its consolidation
//! agent write it again, "prefer newer guidance by default". Files are
//! written with `tokio::fs::write`, in place, not atomically. Codex's stage
//! 2 is a model; here it is scripted: one value per key, the newest, from
//! the retained rows. Recall reads `MEMORY.md`. Sources: [`super::sources`].
//!
//! Stage 2 also writes `memory_summary.md` (here the same lines as
//! `MEMORY.md`); a start-up injects it into the developer instructions cut
//! to [`MEMORY_TOOL_DEVELOPER_INSTRUCTIONS_SUMMARY_TOKEN_LIMIT`] tokens by
//! Codex's middle truncation ([`startup_injection`]). The global job's
//! row and its lease run on a logical clock in [`TwoStage::start_up`] (the fault
//! measures' next start-up comes after any lease lapsed). Not modelled:
//! the 12-hour idle rule before stage 1.

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
/// Stage 2's output (openai/codex `memories::storage`).
pub const MEMORY_REGISTRY_FILENAME: &str = "MEMORY.md";
/// Stage 2's summary, injected at start-up (openai/codex `memories::prompts`).
pub const MEMORY_SUMMARY_FILENAME: &str = "memory_summary.md";
/// Tokens of `memory_summary.md` a start-up injects (openai/codex
/// `memories::phase_one`, 5,000 at 1f39b57).
pub const MEMORY_TOOL_DEVELOPER_INSTRUCTIONS_SUMMARY_TOKEN_LIMIT: usize = 5_000;
/// Codex's token estimate: bytes per token (openai/codex `utils/string`).
pub const APPROX_BYTES_PER_TOKEN: usize = 4;
/// Lease on the global stage-2 job, seconds (openai/codex `memories::phase_two`):
/// a killed holder's claim lapses after it.
pub const PHASE_TWO_JOB_LEASE_SECONDS: u64 = 3_600;

/// The global stage-2 claim (a row of the state database upstream).
const LOCK: &str = ".consolidation.lock";

/// The design's switches. `Default`: as the source does it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TwoStage {
    /// Stage 2 keeps the newest value of a key; `false`: the oldest.
    pub prefer_newer: bool,
    /// Stage 2 runs under the global job claim (a second claimant leaves
    /// its input for the next run); `false`: both run.
    pub consolidation_lock: bool,
    /// `MEMORY.md` is written atomically without the removal first;
    /// `false` (upstream): removed, then rewritten in place.
    pub atomic_regeneration: bool,
    /// Stage 2 keeps every differently worded line of a learning, as
    /// openai/codex#29818 reports the consolidation model does; `false`
    /// (the scripted stage 2): one value per key.
    pub append_learnings: bool,
}

impl Default for TwoStage {
    fn default() -> Self {
        TwoStage {
            prefer_newer: true,
            consolidation_lock: true,
            atomic_regeneration: false,
            append_learnings: false,
        }
    }
}

fn summaries(root: &Path) -> PathBuf {
    root.join(ROLLOUT_SUMMARIES_SUBDIR)
}

fn rollouts(root: &Path) -> PathBuf {
    root.join("sessions")
}

/// The stage-1 rows of the state database, one file a thread.
fn rows(root: &Path) -> PathBuf {
    root.join("state").join("stage1_outputs")
}

/// What stage 2 writes.
struct Stage2 {
    summaries: Vec<(String, String)>,
    raw: String,
    memory: String,
    prune: Vec<String>,
}

fn listed(fs: &Shared, dir: &Path) -> Vec<String> {
    let mut names = fs.list(dir).unwrap_or_default();
    names.retain(|n| n.ends_with(".md") && !crate::storage::is_temp_name(n));
    names
}

impl TwoStage {
    /// Stage 1 at start-up: every rollout whose row differs becomes a row.
    fn stage1(&self, fs: &Shared, root: &Path) -> io::Result<()> {
        for name in listed(fs, &rollouts(root)) {
            let Some(text) = read_opt(fs, &rollouts(root).join(&name))? else {
                continue;
            };
            let row = rows(root).join(&name);
            if read_opt(fs, &row)?.as_deref() != Some(text.as_str()) {
                fs.create_dir_all(&rows(root))?;
                atomic_write(fs.as_ref(), &row, text.as_bytes())?;
            }
        }
        Ok(())
    }

    /// Read the newest rows; decide what stage 2 writes.
    fn plan(&self, fs: &Shared, root: &Path) -> io::Result<Stage2> {
        let threads = listed(fs, &rows(root));
        let keep_from = threads.len().saturating_sub(MAX_RAW_MEMORIES_FOR_GLOBAL);
        let retained = &threads[keep_from..];
        let prune = listed(fs, &summaries(root))
            .into_iter()
            .filter(|n| !retained.contains(n))
            .collect();
        let mut raw =
            String::from("# Raw Memories\n\nMerged stage-1 raw memories (latest first):\n\n");
        let mut lines = Vec::new();
        let mut texts = Vec::new();
        for name in retained {
            let text = read_opt(fs, &rows(root).join(name))?.unwrap_or_default();
            lines.extend(lines_of(&text));
            texts.push((name.clone(), text));
        }
        for (thread, text) in texts.iter().rev() {
            let thread = thread.trim_end_matches(".md");
            raw.push_str(&format!("## Thread `{thread}`\n\n{text}\n"));
        }
        let memory = if self.append_learnings {
            // A reworded learning is a new line; only the same words merge.
            let mut kept: Vec<(String, String)> = Vec::new();
            for l in lines {
                if !kept.contains(&l) {
                    kept.push(l);
                }
            }
            render_lines(&kept)
        } else {
            render_lines(&merged(&lines, self.prefer_newer))
        };
        Ok(Stage2 {
            summaries: texts,
            raw,
            memory,
            prune,
        })
    }

    fn write(&self, fs: &Shared, root: &Path, s: &Stage2) -> io::Result<()> {
        fs.create_dir_all(&summaries(root))?;
        for name in &s.prune {
            fs.remove_file(&summaries(root).join(name))?;
        }
        let memory = root.join(MEMORY_REGISTRY_FILENAME);
        if self.atomic_regeneration {
            for (name, text) in &s.summaries {
                let path = summaries(root).join(name);
                if read_opt(fs, &path)?.as_deref() != Some(text.as_str()) {
                    atomic_write(fs.as_ref(), &path, text.as_bytes())?;
                }
            }
            atomic_write(
                fs.as_ref(),
                &root.join(RAW_MEMORIES_FILENAME),
                s.raw.as_bytes(),
            )?;
            atomic_write(fs.as_ref(), &memory, s.memory.as_bytes())?;
            return atomic_write(
                fs.as_ref(),
                &root.join(MEMORY_SUMMARY_FILENAME),
                s.memory.as_bytes(),
            );
        }
        for (name, text) in &s.summaries {
            // Upstream rewrites every retained summary; an unchanged one is
            // skipped here (same bytes, fewer operations over 1,000 sessions).
            let path = summaries(root).join(name);
            if read_opt(fs, &path)?.as_deref() != Some(text.as_str()) {
                fs.write(&path, text.as_bytes())?;
            }
        }
        fs.write(&root.join(RAW_MEMORIES_FILENAME), s.raw.as_bytes())?;
        // `wipe_consolidation_outputs`, then the agent writes it again.
        match fs.remove_file(&memory) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        fs.write(&memory, s.memory.as_bytes())?;
        fs.write(&root.join(MEMORY_SUMMARY_FILENAME), s.memory.as_bytes())
    }

    /// The session's rollout gains its facts.
    fn rollout(&self, fs: &Shared, root: &Path, thread: &str, facts: &[Fact]) -> io::Result<()> {
        fs.create_dir_all(&rollouts(root))?;
        let path = rollouts(root).join(format!("{thread}.md"));
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
        "Codex memories: no acknowledgement; at a later start-up stage 1 turns rollouts into state-database rows, stage 2 under a lease regenerates the files and removes then rewrites MEMORY.md, preferring newer guidance, 1,024 rows kept [src openai/codex@1f39b57 codex-rs/core/src/memories]"
    }

    fn remember(&self, fs: &Shared, root: &Path, thread: &str, fact: &Fact) -> io::Result<Ack> {
        self.rollout(fs, root, thread, std::slice::from_ref(fact))?;
        Ok(Ack::NotAcknowledged)
    }

    /// The next start-up: stage 1, then stage 2.
    fn consolidate(&self, fs: &Shared, root: &Path) -> io::Result<()> {
        self.stage1(fs, root)?;
        let s = self.plan(fs, root)?;
        self.write(fs, root, &s)
    }

    /// The next start: temp files go, and a claim a killed consolidator
    /// held is released (its lease has lapsed: an assumption, the lab has
    /// no clock).
    fn recover(&self, fs: &Shared, root: &Path) -> io::Result<()> {
        for dir in [
            root.to_path_buf(),
            summaries(root),
            rollouts(root),
            rows(root),
        ] {
            remove_temps(fs, &dir)?;
        }
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

    fn not_applicable(&self, measure: super::Measure) -> Option<&'static str> {
        match measure {
            super::Measure::LostUpdates => {
                Some("nothing is acknowledged; MEMORY.md is regenerated from the rows")
            }
            super::Measure::Limits => Some("no documented limit on the rows or files"),
            _ => None,
        }
    }

    fn consolidator(&self, thread: &str, facts: Vec<Fact>) -> Box<dyn Job> {
        Box::new(Consolidator {
            profile: *self,
            thread: thread.to_string(),
            facts,
            phase: Phase::Rollout,
        })
    }
}

enum Phase {
    Rollout,
    Stage1,
    Lock,
    Read,
    Write(Stage2),
    Unlock,
}

/// A session's rollout, then the next start-up's stage 1 and stage 2.
struct Consolidator {
    profile: TwoStage,
    thread: String,
    facts: Vec<Fact>,
    phase: Phase,
}

impl Job for Consolidator {
    fn step(&mut self, fs: &Shared, root: &Path) -> io::Result<bool> {
        let p = &self.profile;
        match std::mem::replace(&mut self.phase, Phase::Unlock) {
            Phase::Rollout => {
                p.rollout(fs, root, &self.thread, &self.facts)?;
                self.phase = Phase::Stage1;
            }
            Phase::Stage1 => {
                p.stage1(fs, root)?;
                self.phase = Phase::Lock;
            }
            Phase::Lock if !p.consolidation_lock => self.phase = Phase::Read,
            Phase::Lock => match fs.write_new(&root.join(LOCK), self.thread.as_bytes()) {
                Ok(()) => self.phase = Phase::Read,
                // Another consolidation holds the claim: this input waits.
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

    /// Codex tells the session nothing.
    fn acknowledged(&self) -> Vec<Fact> {
        Vec::new()
    }
}

/// Codex's `truncate_middle_with_token_budget`: a text over `max_tokens`
/// (at [`APPROX_BYTES_PER_TOKEN`]) keeps its first and last halves of the
/// byte budget on character boundaries, the middle replaced by
/// `…N tokens truncated…`.
pub fn truncate_middle(text: &str, max_tokens: usize) -> String {
    let budget = max_tokens.saturating_mul(APPROX_BYTES_PER_TOKEN);
    if text.is_empty() || (max_tokens > 0 && text.len() <= budget) {
        return text.to_string();
    }
    let left = budget / 2;
    let tail_start = text.len().saturating_sub(budget - left);
    let mut prefix_end = 0;
    let mut suffix_start = text.len();
    for (i, ch) in text.char_indices() {
        if i + ch.len_utf8() <= left {
            prefix_end = i + ch.len_utf8();
        } else if i >= tail_start {
            suffix_start = i;
            break;
        }
    }
    let removed = text
        .len()
        .saturating_sub(budget)
        .div_ceil(APPROX_BYTES_PER_TOKEN);
    format!(
        "{}…{removed} tokens truncated…{}",
        &text[..prefix_end],
        &text[suffix_start.max(prefix_end)..]
    )
}

/// What a start-up puts into the developer instructions from
/// `memory_summary.md` (`build_memory_tool_developer_instructions`): the
/// file trimmed and cut to `max_tokens`; `None` when there is none.
pub fn startup_injection(
    fs: &Shared,
    root: &Path,
    max_tokens: usize,
) -> io::Result<Option<String>> {
    let Some(text) = read_opt(fs, &root.join(MEMORY_SUMMARY_FILENAME))? else {
        return Ok(None);
    };
    let cut = truncate_middle(text.trim(), max_tokens);
    Ok((!cut.is_empty()).then_some(cut))
}

/// Status of the global stage-2 job's row (openai/codex `state` `jobs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    /// Work enqueued, nobody holds it.
    Pending,
    /// Claimed; the holder's lease runs until `lease_until`.
    Running,
    /// The last claim succeeded.
    Done,
}

/// The global stage-2 job's row: status, lease, watermarks (seconds and
/// counts on the lab's logical clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct JobRow {
    /// Where the job stands.
    pub status: JobStatus,
    /// When a running holder's claim lapses.
    pub lease_until: u64,
    /// The newest stage-1 output enqueued.
    pub input_watermark: u64,
    /// The input watermark of the last successful stage 2.
    pub last_success_watermark: u64,
}

/// What `try_claim_global_phase2_job` answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Claim {
    /// This start-up holds the job until `lease_until`.
    Claimed,
    /// Nothing new since the last success.
    SkippedNotDirty,
    /// A running holder's lease has not lapsed.
    SkippedRunning,
}

fn job_path(root: &Path) -> PathBuf {
    root.join("state")
        .join("jobs")
        .join("memory_consolidate_global")
}

fn read_job(fs: &Shared, root: &Path) -> io::Result<Option<JobRow>> {
    let Some(text) = read_opt(fs, &job_path(root))? else {
        return Ok(None);
    };
    let f: Vec<&str> = text.split_whitespace().collect();
    let n = |i: usize| f.get(i).and_then(|v| v.parse().ok()).unwrap_or(0);
    let status = match f.first().copied() {
        Some("running") => JobStatus::Running,
        Some("done") => JobStatus::Done,
        _ => JobStatus::Pending,
    };
    Ok(Some(JobRow {
        status,
        lease_until: n(1),
        input_watermark: n(2),
        last_success_watermark: n(3),
    }))
}

fn write_job(fs: &Shared, root: &Path, j: &JobRow) -> io::Result<()> {
    let status = match j.status {
        JobStatus::Pending => "pending",
        JobStatus::Running => "running",
        JobStatus::Done => "done",
    };
    fs.create_dir_all(&root.join("state").join("jobs"))?;
    let text = format!(
        "{status} {} {} {}\n",
        j.lease_until, j.input_watermark, j.last_success_watermark
    );
    atomic_write(fs.as_ref(), &job_path(root), text.as_bytes())
}

/// What one start-up did to the global job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StartUp {
    /// The claim's answer.
    pub claim: Claim,
    /// The job's row afterwards.
    pub job: JobRow,
    /// Whether `MEMORY.md` and `memory_summary.md` exist afterwards.
    pub artifacts: bool,
}

impl TwoStage {
    /// A start-up at `now` on the logical clock: stage 1, the enqueue
    /// (`enqueue_global_consolidation`: a running job stays running), the
    /// claim, and stage 2 unless the process is killed right after the
    /// claim (`killed`; its heartbeat stops, so its lease lapses
    /// [`PHASE_TWO_JOB_LEASE_SECONDS`] after the claim).
    pub fn start_up(
        &self,
        fs: &Shared,
        root: &Path,
        now: u64,
        killed: bool,
    ) -> io::Result<StartUp> {
        self.stage1(fs, root)?;
        let watermark = listed(fs, &rows(root)).len() as u64;
        let mut job = read_job(fs, root)?.unwrap_or(JobRow {
            status: JobStatus::Pending,
            lease_until: 0,
            input_watermark: 0,
            last_success_watermark: 0,
        });
        if job.status != JobStatus::Running {
            job.status = JobStatus::Pending;
        }
        job.input_watermark = job.input_watermark.max(watermark);
        let claim = if job.input_watermark <= job.last_success_watermark {
            Claim::SkippedNotDirty
        } else if job.status == JobStatus::Running && job.lease_until > now {
            Claim::SkippedRunning
        } else {
            job.status = JobStatus::Running;
            job.lease_until = now + PHASE_TWO_JOB_LEASE_SECONDS;
            Claim::Claimed
        };
        write_job(fs, root, &job)?;
        if claim == Claim::Claimed && !killed {
            let s = self.plan(fs, root)?;
            self.write(fs, root, &s)?;
            job.status = JobStatus::Done;
            job.lease_until = 0;
            job.last_success_watermark = job.last_success_watermark.max(job.input_watermark);
            write_job(fs, root, &job)?;
        }
        let artifacts = fs.exists(&root.join(MEMORY_REGISTRY_FILENAME))
            && fs.exists(&root.join(MEMORY_SUMMARY_FILENAME));
        Ok(StartUp {
            claim,
            job,
            artifacts,
        })
    }
}
