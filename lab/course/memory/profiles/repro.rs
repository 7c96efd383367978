//! Upstream issues the store profiles reproduce (or say why they cannot),
//! each a row with the command that reproduces it and a verdict computed
//! from a run, never written down.

use serde::Serialize;

use std::path::Path;
use std::sync::Arc;

use super::add_only::AddOnly;
use super::git_backed::GitBacked;
use super::git_remote::{self, Sync};
use super::measures::{fault_points, FaultKind};
use super::two_stage::{self, Claim, StartUp, TwoStage};
use super::versioned::{self, Mount, Versioned};
use super::{Ack, Fact, StoreProfile};
use crate::storage::{MemFs, Shared};

/// What a run says about an upstream report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum ReproVerdict {
    /// The run shows what the issue reports: how.
    Reproduced(String),
    /// The run does not show it although the profile models it: how.
    NotReproduced(String),
    /// The profile cannot show it: what it would need.
    NotModelled(&'static str),
}

/// One upstream issue as a row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Repro {
    /// `owner/repo#N`.
    pub issue: &'static str,
    /// What the issue reports, in one line.
    pub reports: &'static str,
    /// The command that reproduces it.
    pub command: &'static str,
    /// What the run says.
    pub verdict: ReproVerdict,
}

/// Mem0's failed inserts returned as ADD (https://github.com/mem0ai/mem0/issues/6911 ):
/// an I/O error at every storage operation of the
/// scripted sessions on the add-only profile as the SDK ships.
fn mem0_6911() -> ReproVerdict {
    let r = fault_points(&AddOnly::default(), FaultKind::IoError);
    if r.losing_at_restart > 0 {
        ReproVerdict::Reproduced(format!(
            "{}/{} I/O-error points: {} memories returned as ADD are not in the store",
            r.losing_at_restart, r.points, r.lost_at_restart
        ))
    } else {
        ReproVerdict::NotReproduced(format!("0/{} I/O-error points lose an ADD", r.points))
    }
}

/// What a run of Letta's server copy found, for the letta-ai/letta-code#2203 rows and their tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LettaRun {
    /// The agent's facts acknowledged (committed).
    pub acknowledged: usize,
    /// Of those, the ones the agent's recall misses at the end.
    pub lost_from_recall: usize,
    /// Of those, the ones the server's `main` misses at the end.
    pub lost_from_server: usize,
    /// The outcome of each sync, in order.
    pub syncs: Vec<Sync>,
}

fn missing_from(facts: &[Fact], shown: &[(String, String)]) -> usize {
    facts
        .iter()
        .filter(|f| !shown.iter().any(|(k, v)| *k == f.key && *v == f.value))
        .count()
}

/// letta-ai/letta-code#2203: an agent commits and pushes its facts after
/// each turn; the server then rewrites `main` with a backfill (`rewrite`)
/// or adds the same backfill on top; the next start-up pulls.
pub fn letta_server_backfill(rewrite: bool) -> std::io::Result<LettaRun> {
    let fs: Shared = Arc::new(MemFs::new());
    let (server, agent) = (Path::new("/server"), Path::new("/agent"));
    let p = GitBacked::default();
    git_remote::clone(&fs, server, agent)?;
    let facts = [
        Fact::new("project", "build", "make"),
        Fact::new("project", "test", "cargo test"),
        Fact::new("user", "style", "tabs"),
        Fact::new("reference", "deploy", "fly deploy"),
    ];
    let mut run = LettaRun {
        acknowledged: 0,
        lost_from_recall: 0,
        lost_from_server: 0,
        syncs: Vec::new(),
    };
    let mut acked = Vec::new();
    for (i, f) in facts.iter().enumerate() {
        if p.remember(&fs, agent, &format!("t{i}"), f)? == Ack::Stored {
            acked.push(f.clone());
        }
        run.syncs
            .push(git_remote::push_after_turn(&fs, agent, server, false)?);
    }
    // The backfilled blocks of the issue: files of their own.
    let backfill = [
        ("persona", "- name: Letta\n"),
        ("skills-quarto", "- quarto: render with quarto\n"),
    ];
    git_remote::server_backfill(&fs, server, &backfill, rewrite)?;
    run.syncs
        .push(git_remote::pull_on_start(&fs, agent, server)?);
    run.acknowledged = acked.len();
    run.lost_from_recall = missing_from(&acked, &p.recall(&fs, agent)?);
    run.lost_from_server = missing_from(&acked, &git_remote::server_recall(&fs, server)?);
    Ok(run)
}

/// Item 2 of letta-ai/letta-code#2203: two agents' clones of one memory
/// repository. A commits and pushes a fact in `project.md`; B, cloned
/// before it, commits one in `b_topic` and syncs after its turn; then A
/// starts up and pulls. `force`: B's writer pushes with `--force`.
pub fn letta_two_agents(b_topic: &str, force: bool) -> std::io::Result<LettaRun> {
    let fs: Shared = Arc::new(MemFs::new());
    let server = Path::new("/server");
    let (a, b) = (Path::new("/agent-a"), Path::new("/agent-b"));
    let p = GitBacked::default();
    git_remote::clone(&fs, server, a)?;
    let seed = Fact::new("project", "build", "make");
    p.remember(&fs, a, "a0", &seed)?;
    let mut syncs = vec![git_remote::push_after_turn(&fs, a, server, false)?];
    git_remote::clone(&fs, server, b)?;
    let fa = Fact::new("project", "test", "cargo test");
    let fb = Fact::new(b_topic, "lint", "cargo clippy");
    let mut acked = vec![seed];
    for (clone, fact, forced) in [(a, &fa, false), (b, &fb, force)] {
        if p.remember(&fs, clone, "t1", fact)? == Ack::Stored {
            acked.push(fact.clone());
        }
        syncs.push(git_remote::push_after_turn(&fs, clone, server, forced)?);
    }
    syncs.push(git_remote::pull_on_start(&fs, a, server)?);
    Ok(LettaRun {
        acknowledged: acked.len(),
        lost_from_recall: missing_from(&acked, &p.recall(&fs, a)?),
        lost_from_server: missing_from(&acked, &git_remote::server_recall(&fs, server)?),
        syncs,
    })
}

fn letta_2203() -> ReproVerdict {
    let (Ok(rewritten), Ok(appended)) = (letta_server_backfill(true), letta_server_backfill(false))
    else {
        return ReproVerdict::NotReproduced(
            "the scripted run failed on the in-memory backend".into(),
        );
    };
    if rewritten.lost_from_recall > 0 && rewritten.syncs.last() == Some(&Sync::ResetToRemote) {
        ReproVerdict::Reproduced(format!(
            "after the server rewrites main, the start-up pull finds no merge base and resets to origin/main: {}/{} committed and pushed facts gone from recall, {} from the server (the old HEAD only in refs/letta-backup); the same backfill added on top of main fast-forwards and loses {}",
            rewritten.lost_from_recall,
            rewritten.acknowledged,
            rewritten.lost_from_server,
            appended.lost_from_recall
        ))
    } else {
        ReproVerdict::NotReproduced(format!(
            "after the rewrite: {:?}, {}/{} facts gone from recall",
            rewritten.syncs.last(),
            rewritten.lost_from_recall,
            rewritten.acknowledged
        ))
    }
}

fn letta_2203_two_agents() -> ReproVerdict {
    let runs = (
        letta_two_agents("project", false),
        letta_two_agents("user", false),
        letta_two_agents("project", true),
    );
    let (Ok(same), Ok(apart), Ok(forced)) = runs else {
        return ReproVerdict::NotReproduced(
            "the scripted run failed on the in-memory backend".into(),
        );
    };
    let conflicted = same.syncs.iter().any(|s| matches!(s, Sync::Conflict(_)));
    if conflicted && same.lost_from_server > 0 {
        ReproVerdict::Reproduced(format!(
            "B's push is refused (non-fast-forward) and its rebase conflicts on project.md with A's pushed commit: the post-turn sync reports a conflict, {}/{} committed facts reach no server copy and A's recall misses {}; in separate files both reach the server ({} missing); a writer that force-pushes instead erases {} of A's pushed facts from the server",
            same.lost_from_server,
            same.acknowledged,
            same.lost_from_recall,
            apart.lost_from_server,
            forced.lost_from_server
        ))
    } else {
        ReproVerdict::NotReproduced(format!("syncs {:?}", same.syncs))
    }
}

/// openai/codex#23129: three sessions' rollouts; a start-up at 0 s claims
/// the global job and is killed in stage 2; the next start-up comes
/// `after` seconds later on the logical clock.
pub fn codex_lease(after: u64) -> std::io::Result<(StartUp, StartUp)> {
    let fs: Shared = Arc::new(MemFs::new());
    let root = Path::new("/codex");
    let p = TwoStage::default();
    for (i, f) in [
        Fact::new("project", "build", "make"),
        Fact::new("project", "test", "cargo test"),
        Fact::new("user", "style", "tabs"),
    ]
    .iter()
    .enumerate()
    {
        p.remember(&fs, root, &format!("t{i:06}"), f)?;
    }
    let first = p.start_up(&fs, root, 0, true)?;
    let second = p.start_up(&fs, root, after, false)?;
    Ok((first, second))
}

fn codex_23129() -> ReproVerdict {
    let lease = two_stage::PHASE_TWO_JOB_LEASE_SECONDS;
    let (Ok((first, within)), Ok((_, past))) = (codex_lease(600), codex_lease(lease)) else {
        return ReproVerdict::NotReproduced(
            "the scripted run failed on the in-memory backend".into(),
        );
    };
    if first.claim == Claim::Claimed && within.claim == Claim::SkippedRunning && !within.artifacts {
        ReproVerdict::Reproduced(format!(
            "a start-up 600 s after a holder killed in stage 2 gets SkippedRunning: 3 stage-1 rows, the job not done (its row reads {} until {} s; the issue's reads pending), no MEMORY.md or memory_summary.md; a start-up at {lease} s claims it and {}",
            serde_json::to_value(within.job.status).map_or_else(|_| "?".into(), |v| v.as_str().unwrap_or("?").to_string()),
            within.job.lease_until,
            if past.artifacts { "writes both" } else { "still writes neither" }
        ))
    } else {
        ReproVerdict::NotReproduced(format!("second start-up: {within:?}"))
    }
}

fn codex_37097() -> ReproVerdict {
    let lease = two_stage::PHASE_TWO_JOB_LEASE_SECONDS;
    match codex_lease(lease) {
        Ok((_, past)) if past.claim == Claim::Claimed => ReproVerdict::NotReproduced(format!(
            "once the dead holder's lease lapses ({lease} s) the next start-up reclaims the job and {}: a job stuck pending with no lease, no retry and no error needs another cause than the lease",
            if past.artifacts { "writes the summary" } else { "still writes no summary" }
        )),
        Ok((_, past)) => ReproVerdict::Reproduced(format!("past the lease: {past:?}")),
        Err(e) => ReproVerdict::NotReproduced(format!("the scripted run failed: {e}")),
    }
}

/// Lines and bytes of `MEMORY.md` after `sessions` sessions, each learning
/// the same principle in its own words and one fact of its own task, each
/// followed by a start-up's consolidation.
pub fn codex_bloat(append_learnings: bool, sessions: usize) -> std::io::Result<(usize, usize)> {
    let fs: Shared = Arc::new(MemFs::new());
    let root = Path::new("/codex");
    let p = TwoStage {
        append_learnings,
        ..TwoStage::default()
    };
    for i in 1..=sessions {
        let thread = format!("t{i:06}");
        let wording = format!(
            "verify current code, logs and database state instead of relying on memory (learned in task {i})"
        );
        p.remember(
            &fs,
            root,
            &thread,
            &Fact::new("principles", "verify-state", &wording),
        )?;
        p.remember(
            &fs,
            root,
            &thread,
            &Fact::new("tasks", &format!("task-{i}"), "done"),
        )?;
        p.consolidate(&fs, root)?;
    }
    let text =
        super::read_opt(&fs, &root.join(two_stage::MEMORY_REGISTRY_FILENAME))?.unwrap_or_default();
    Ok((
        text.lines()
            .filter(|l| l.starts_with("- verify-state: "))
            .count(),
        text.len(),
    ))
}

fn codex_29818() -> ReproVerdict {
    let runs = (
        codex_bloat(true, 12),
        codex_bloat(true, 24),
        codex_bloat(false, 24),
    );
    let (Ok((l12, b12)), Ok((l24, b24)), Ok((r24, rb24))) = runs else {
        return ReproVerdict::NotReproduced(
            "the scripted run failed on the in-memory backend".into(),
        );
    };
    if l24 > l12 && l12 > 1 && r24 == 1 {
        ReproVerdict::Reproduced(format!(
            "a stage 2 keeping each rewording: the one principle takes {l12} lines of MEMORY.md ({b12} bytes) after 12 sessions, {l24} ({b24} bytes) after 24; the reference consolidation keeps {r24} ({rb24} bytes)"
        ))
    } else {
        ReproVerdict::NotReproduced(format!("{l12} -> {l24} lines; reference {r24}"))
    }
}

/// What a start-up injects of `memory_summary.md`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryCap {
    /// Facts stage 2 wrote to the summary.
    pub facts: usize,
    /// Bytes of the summary.
    pub bytes: usize,
    /// The facts (1-based, in the summary's order) the injection shows.
    pub shown: Vec<usize>,
}

/// `sessions` sessions of one fact each, one consolidation, then the
/// start-up injection of `memory_summary.md` cut to `max_tokens`.
pub fn codex_summary_cap(sessions: usize, max_tokens: usize) -> std::io::Result<SummaryCap> {
    let fs: Shared = Arc::new(MemFs::new());
    let root = Path::new("/codex");
    let p = TwoStage::default();
    let facts: Vec<Fact> = (1..=sessions)
        .map(|i| {
            Fact::new(
                "notes",
                &format!("note-{i:04}"),
                "a durable note the consolidation keeps, one line of about eighty bytes",
            )
        })
        .collect();
    for (i, f) in facts.iter().enumerate() {
        p.remember(&fs, root, &format!("t{i:06}"), f)?;
    }
    p.consolidate(&fs, root)?;
    let bytes = super::read_opt(&fs, &root.join(two_stage::MEMORY_SUMMARY_FILENAME))?
        .map_or(0, |t| t.len());
    let injected = two_stage::startup_injection(&fs, root, max_tokens)?.unwrap_or_default();
    let lines = super::lines_of(&injected);
    let shown = facts
        .iter()
        .enumerate()
        .filter(|(_, f)| lines.iter().any(|(k, v)| *k == f.key && *v == f.value))
        .map(|(i, _)| i + 1)
        .collect();
    Ok(SummaryCap {
        facts: facts.len(),
        bytes,
        shown,
    })
}

fn codex_summary_row() -> ReproVerdict {
    let cap = two_stage::MEMORY_TOOL_DEVELOPER_INSTRUCTIONS_SUMMARY_TOKEN_LIMIT;
    let (Ok(big), Ok(small)) = (codex_summary_cap(1_000, cap), codex_summary_cap(100, cap)) else {
        return ReproVerdict::NotReproduced(
            "the scripted run failed on the in-memory backend".into(),
        );
    };
    // The middle cut: the first and the last fact missing.
    let missing: Vec<usize> = (1..=big.facts).filter(|i| !big.shown.contains(i)).collect();
    match (missing.first(), missing.last()) {
        (Some(first), Some(last)) if small.shown.len() == small.facts => ReproVerdict::Reproduced(format!(
            "{} facts in memory_summary.md ({} bytes), cut to {cap} tokens ({} bytes) by the middle truncation: the start-up shows {} (the first {} and the last {}); facts {first} to {last} are not recalled at start-up (only by searching MEMORY.md); {} facts ({} bytes) fit and all show",
            big.facts,
            big.bytes,
            cap * two_stage::APPROX_BYTES_PER_TOKEN,
            big.shown.len(),
            first - 1,
            big.facts - last,
            small.facts,
            small.bytes
        )),
        _ => ReproVerdict::NotReproduced(format!(
            "{}/{} shown; {}/{} of the small summary",
            big.shown.len(),
            big.facts,
            small.shown.len(),
            small.facts
        )),
    }
}

/// What a run of Managed Agents' mount found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountRun {
    /// Facts the file tool acknowledged.
    pub acknowledged: usize,
    /// Of those, the ones the store misses at the end.
    pub lost: usize,
    /// Uploads the store refused (409).
    pub refused: usize,
}

/// One session writes `writes` (seconds on the logical clock) through its
/// mount; `kill_at`: the sandbox dies then (no final sync), else the
/// session ends at the last write + 1 s. `api`: the same facts through the
/// API's update instead (acknowledged by its 200).
pub fn managed_mount(writes: &[u64], kill_at: Option<u64>, api: bool) -> std::io::Result<MountRun> {
    let fs: Shared = Arc::new(MemFs::new());
    let (store, dir) = (Path::new("/store"), Path::new("/mnt/memory/notes"));
    let facts: Vec<Fact> = (0..writes.len())
        .map(|i| Fact::new("project", &format!("fact-{i}"), "learned"))
        .collect();
    let mut acked = Vec::new();
    let mut refused = 0;
    if api {
        for f in &facts {
            if Versioned::default().remember(&fs, store, "s1", f)? == Ack::Stored {
                acked.push(f.clone());
            }
        }
    } else {
        let mut m = Mount::open(&fs, store, dir, 0, false)?;
        for (f, &t) in facts.iter().zip(writes) {
            if kill_at.is_some_and(|k| t >= k) {
                break;
            }
            if m.write(&fs, f, t)? == Ack::Stored {
                acked.push(f.clone());
            }
        }
        if kill_at.is_none() {
            let end = writes.last().copied().unwrap_or(0) + 1;
            refused = m.end(&fs, end)?.len();
        }
    }
    Ok(MountRun {
        acknowledged: acked.len(),
        lost: missing_from(&acked, &versioned::store_recall(&fs, store)?),
        refused,
    })
}

/// Two sessions mount one store at 0 s, each writes one fact into the
/// same memory (A at 1 s, B at 2 s), then one more each after the sync
/// interval (A at 16 s, B at 17 s), and both end.
pub fn managed_two_sessions(upload_precondition: bool) -> std::io::Result<MountRun> {
    let fs: Shared = Arc::new(MemFs::new());
    let store = Path::new("/store");
    Versioned::default().remember(&fs, store, "s0", &Fact::new("project", "build", "make"))?;
    let mut a = Mount::open(
        &fs,
        store,
        Path::new("/a/mnt/memory/notes"),
        0,
        upload_precondition,
    )?;
    let mut b = Mount::open(
        &fs,
        store,
        Path::new("/b/mnt/memory/notes"),
        0,
        upload_precondition,
    )?;
    let facts = [
        Fact::new("project", "test", "cargo test"),
        Fact::new("project", "lint", "cargo clippy"),
        Fact::new("project", "docs", "cargo doc"),
        Fact::new("project", "bench", "cargo bench"),
    ];
    let mut acked = vec![Fact::new("project", "build", "make")];
    for (i, f) in facts.iter().enumerate() {
        let (m, t) = match i {
            0 => (&mut a, 1),
            1 => (&mut b, 2),
            2 => (&mut a, 16),
            _ => (&mut b, 17),
        };
        if m.write(&fs, f, t)? == Ack::Stored {
            acked.push(f.clone());
        }
    }
    let refused = a.end(&fs, 18)?.len() + b.end(&fs, 19)?.len();
    Ok(MountRun {
        acknowledged: acked.len(),
        lost: missing_from(&acked, &versioned::store_recall(&fs, store)?),
        refused,
    })
}

fn managed_mount_row() -> ReproVerdict {
    let runs = (
        managed_mount(&[1, 5, 10], Some(12), false),
        managed_mount(&[1, 5, 10], None, false),
        managed_mount(&[1, 5, 10], None, true),
        managed_mount(&[1, 5, 10, 16], Some(20), false),
    );
    let (Ok(killed), Ok(ended), Ok(api), Ok(synced)) = runs else {
        return ReproVerdict::NotReproduced(
            "the scripted run failed on the in-memory backend".into(),
        );
    };
    if killed.lost > 0 && ended.lost == 0 && api.lost == 0 {
        ReproVerdict::Reproduced(format!(
            "writes at 1, 5 and 10 s acknowledged by the file tool, the sandbox killed at 12 s (before the {} s sync): {}/{} not in the store; a write at 16 s syncs all four before a kill at 20 s ({} lost); a session that ends runs the final sync ({} lost); the same facts through the API's update ({} lost)",
            versioned::SYNC_INTERVAL_SECONDS,
            killed.lost,
            killed.acknowledged,
            synced.lost,
            ended.lost,
            api.lost
        ))
    } else {
        ReproVerdict::NotReproduced(format!("killed {killed:?}, ended {ended:?}"))
    }
}

fn managed_two_sessions_row() -> ReproVerdict {
    let (Ok(replace), Ok(guarded)) = (managed_two_sessions(false), managed_two_sessions(true))
    else {
        return ReproVerdict::NotReproduced(
            "the scripted run failed on the in-memory backend".into(),
        );
    };
    if replace.lost > 0 {
        ReproVerdict::Reproduced(format!(
            "two sessions write one memory between syncs: uploads that replace the memory lose {}/{} acknowledged facts (the other session's, kept only in the versions); uploads carrying the synced SHA-256 are refused {} times (409) and lose {} (the refused session's, when its mount is removed)",
            replace.lost, replace.acknowledged, guarded.refused, guarded.lost
        ))
    } else {
        ReproVerdict::NotReproduced(format!("{replace:?}"))
    }
}

/// Mem0 platform's asynchronous add: `adds` facts added, each answered
/// PENDING; recall read before and after the queue is processed.
pub fn mem0_pending(adds: usize) -> std::io::Result<(Vec<Ack>, usize, usize)> {
    let fs: Shared = Arc::new(MemFs::new());
    let root = Path::new("/mem0");
    let p = AddOnly::default();
    let facts: Vec<Fact> = (0..adds)
        .map(|i| Fact::new("user", &format!("pref-{i}"), "likes hiking"))
        .collect();
    let mut acks = Vec::new();
    for f in &facts {
        acks.push(p.platform_add(&fs, root, f)?);
    }
    let before = adds - missing_from(&facts, &p.recall(&fs, root)?);
    p.platform_process(&fs, root)?;
    let after = adds - missing_from(&facts, &p.recall(&fs, root)?);
    Ok((acks, before, after))
}

fn mem0_pending_row() -> ReproVerdict {
    match mem0_pending(3) {
        Ok((acks, before, after)) if acks.iter().all(|a| *a == Ack::Pending) && before < after => {
            ReproVerdict::Reproduced(format!(
                "3 adds answered PENDING (no ADD event, no memory id): recall right after shows {before}/3, after the queue is processed {after}/3"
            ))
        }
        Ok(r) => ReproVerdict::NotReproduced(format!("{r:?}")),
        Err(e) => ReproVerdict::NotReproduced(format!("the scripted run failed: {e}")),
    }
}

/// Every reproduction row.
pub fn reproductions() -> Vec<Repro> {
    vec![
        Repro {
            issue: "mem0ai/mem0#6911, #7201",
            reports: "add() returns event ADD for memories the vector store never persisted",
            command: "cargo test --test memory memory_profiles::mem0_6911",
            verdict: mem0_6911(),
        },
        Repro {
            issue: "letta-ai/letta-code#2203",
            reports: "the server force-pushes a backfilled history to the agent's memory repository, wiping the locally committed memory files",
            command: "cargo test --test memory memory_profiles::letta_2203",
            verdict: letta_2203(),
        },
        Repro {
            issue: "letta-ai/letta-code#2203 (two agents)",
            reports: "two agents share one memory repository: what one commits does not reach the other",
            command: "cargo test --test memory memory_profiles::letta_2203_two_agents",
            verdict: letta_2203_two_agents(),
        },
        Repro {
            issue: "openai/codex#23129",
            reports: "stage 1 succeeds but global consolidation stays pending, no summary artifact",
            command: "cargo test --test memory memory_profiles::codex_23129",
            verdict: codex_23129(),
        },
        Repro {
            issue: "openai/codex#37097",
            reports: "the global job stays pending with no active lease, no retry and no error, and fresh sessions never reclaim it",
            command: "cargo test --test memory memory_profiles::codex_23129",
            verdict: codex_37097(),
        },
        Repro {
            issue: "openai/codex#29818",
            reports: "MEMORY.md grows into a task ledger (2,450 lines, 325 KB) of near-identical learnings",
            command: "cargo test --test memory memory_profiles::codex_29818",
            verdict: codex_29818(),
        },
        Repro {
            issue: "openai/codex memory_summary.md (no issue)",
            reports: "the summary a start-up injects is cut to 5,000 tokens",
            command: "cargo test --test memory memory_profiles::codex_summary_cap",
            verdict: codex_summary_row(),
        },
        Repro {
            issue: "Managed Agents mount (docs, no issue)",
            reports: "a file written under /mnt/memory returns before the worker syncs it (at most every 15 s, a final sync at session end)",
            command: "cargo test --test memory memory_profiles::managed_mount",
            verdict: managed_mount_row(),
        },
        Repro {
            issue: "Managed Agents, two sessions (docs, no issue)",
            reports: "a change in one session reaches another only after both have synced",
            command: "cargo test --test memory memory_profiles::managed_two_sessions",
            verdict: managed_two_sessions_row(),
        },
        Repro {
            issue: "Mem0 platform async add (docs, no issue)",
            reports: "add() answers PENDING with an event id and processes the memory in the background",
            command: "cargo test --test memory memory_profiles::mem0_pending",
            verdict: mem0_pending_row(),
        },
    ]
}

/// The rows as a table (`lab memory-designs`).
pub fn render(rows: &[Repro], markdown: bool) -> String {
    let body = rows
        .iter()
        .map(|r| {
            let verdict = match &r.verdict {
                ReproVerdict::Reproduced(how) => format!("reproduced: {how}"),
                ReproVerdict::NotReproduced(how) => format!("not reproduced: {how}"),
                ReproVerdict::NotModelled(what) => format!("not modelled: needs {what}"),
            };
            vec![
                r.issue.to_string(),
                r.reports.to_string(),
                verdict,
                r.command.to_string(),
            ]
        })
        .collect();
    crate::render::table(&["issue", "reports", "verdict", "command"], body, markdown)
}

/// What `lab memory-designs --format json` prints.
#[derive(Debug, Serialize)]
pub struct Listing {
    /// Every constant, switch and rule.
    pub rules: &'static [super::sources::Rule],
    /// The upstream issues as rows, with computed verdicts.
    pub reproductions: Vec<super::repro::Repro>,
}

/// `lab memory-designs`: every rule with its basis, then the upstream
/// issues the profiles reproduce.
pub fn listing(format: crate::render::Format) -> String {
    use crate::render::{json, table, Format};
    let reproductions = reproductions();
    if format == Format::Json {
        return json(&Listing {
            rules: super::sources::RULES,
            reproductions,
        });
    }
    let rows = super::sources::RULES
        .iter()
        .map(|r| {
            let (kind, basis) = match r.basis {
                super::sources::Basis::Source { cite } => ("source".to_string(), cite.to_string()),
                super::sources::Basis::Assumption {
                    why,
                    changes_result,
                    on_by_default,
                } => (
                    format!(
                        "assumption ({}, {})",
                        if on_by_default { "on" } else { "off" },
                        if changes_result {
                            "changes a result"
                        } else {
                            "changes no result"
                        }
                    ),
                    why.to_string(),
                ),
                super::sources::Basis::StandIn {
                    why,
                    changes_result,
                } => (
                    format!(
                        "stand-in ({})",
                        if changes_result {
                            "changes a result"
                        } else {
                            "changes no result"
                        }
                    ),
                    why.to_string(),
                ),
                super::sources::Basis::Lab { why } => {
                    ("lab parameter".to_string(), why.to_string())
                }
            };
            vec![
                r.profile.to_string(),
                r.name.to_string(),
                r.says.to_string(),
                kind,
                basis,
            ]
        })
        .collect();
    let mut s = table(
        &["profile", "rule", "says", "basis", "source or reason"],
        rows,
        format == Format::Markdown,
    );
    s.push_str("\nUpstream issues as rows:\n\n");
    s.push_str(&render(&reproductions, format == Format::Markdown));
    s.push('\n');
    s
}
