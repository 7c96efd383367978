//! Where every constant and rule of the store profiles comes from: a source
//! that says it (repository @ commit : path, or a documentation page and the
//! date it was read), an assumption of the lab's (named, with whether it
//! changes a result and whether it is on by default), or a parameter of the
//! lab's own measures. `lab memory-designs` prints this list (`super::repro::listing`); a test checks
//! that every constant and switch under `lab/course/memory/profiles/` is in it.
//!
//! An assumption that changes a result is off by default: the profile's
//! `Default` runs without it, and a switch turns it on.

use serde::Serialize;

/// Why a constant or rule holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Basis {
    /// A source says it: where, as repository @ commit : path, an issue,
    /// or a documentation page and the date it was read.
    Source {
        /// The citation.
        cite: &'static str,
    },
    /// The lab assumes it: nothing read says so.
    Assumption {
        /// Why the lab assumes it, and what the source read says instead
        /// (if anything).
        why: &'static str,
        /// Whether turning it on or off moves a measured figure.
        changes_result: bool,
        /// Whether the profile's `Default` has it on (never, when it
        /// changes a result).
        on_by_default: bool,
    },
    /// The lab stands in for something upstream does with a model, a
    /// server or a clock the lab does not have; it cannot be turned off.
    StandIn {
        /// What it stands in for and what that leaves out.
        why: &'static str,
        /// Whether a different stand-in would move a measured figure.
        changes_result: bool,
    },
    /// A parameter of the lab's measures, not a claim about a design.
    Lab {
        /// What it sets.
        why: &'static str,
    },
}

/// One constant, switch or rule of a profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Rule {
    /// The profile (`add-only`, ...) or `measures`.
    pub profile: &'static str,
    /// The constant (`MAX_MEMORY_BYTES`), the switch (`GitBacked.commit_every_edit`)
    /// or the rule's short name (`ack`).
    pub name: &'static str,
    /// What it says, value included.
    pub says: &'static str,
    /// Why it holds.
    pub basis: Basis,
}

const MEM0_MIGRATION: &str = "docs.mem0.ai/migration/platform-v2-to-v3 (mem0ai/mem0 docs/migration/platform-v2-to-v3.mdx), read 2026-12-04: \"Memory mutations: ADD only\", \"both facts are preserved\"";
const MEM0_6911: &str = "mem0ai/mem0#6911 (open, 2026-08-11) and #7201 (open, 2026-09-01): a failed fallback insert stays in `records` and is returned as {\"event\": \"ADD\"}; fix PRs #6913, #7066, #7215, #7216 not merged";
const LETTA_GIT: &str =
    "letta-ai/letta-code @ f49354352014aadc347bad4a33982c4be832983c : src/agent/memory-git.ts";
const LETTA_REFLECTION: &str = "letta-ai/letta-code @ 00f074335e6d2c889026d6644aa6a11a2faf88d7 : src/agent/subagents/builtin/reflection.md";
const LETTA_DOCS: &str =
    "docs.letta.com/concepts/memfs and /letta-code/memfs, read 2026-12-04: consolidation \"when the context window is compacted\"";
const LETTA_2203: &str = "letta-ai/letta-code#2203 (closed, 2026-05-11): `+ ff33a45...5ba0de7 main -> origin/main (forced update)`, a new root chain `Initial commit` -> `Backfill ... block`, 8 files on the server for 79 local";
const MA_MEMORY: &str =
    "platform.claude.com/docs/en/managed-agents/memory, read 2026-12-07: \"Every change to a memory creates an immutable memory version\"";
const MA_SELF_HOSTED: &str = "platform.claude.com/docs/en/managed-agents/self-hosted-sandboxes-memory, read 2026-12-07: \"A session accepts up to 8 memory stores\"; the worker downloads each store and syncs the agent's changes back, uploading before the sandbox ends";
const MA_SYNC: &str = "platform.claude.com/docs/en/managed-agents/self-hosted-sandboxes-memory (read through its zh-CN rendering), read 2026-12-07: the worker downloads each store to its mount_path, reconciles changes after tool calls at most once per sync interval (15 seconds by default), and at session end runs a final sync that flushes pending uploads for up to 30 seconds, then removes the directories; a change in one session reaches another only after both have synced";
const MA_VERSIONS: &str = "platform.claude.com/docs/en/api/beta/memory_stores/memory_versions, read 2026-12-07: \"Every change to a memory adds one version. Only redaction can change a version after that. Versions belong to the memory store and stay after the memory is deleted. Each version is retained for at least the version retention period\" (the period's value not in the text read)";
const MEM0_ASYNC: &str = "docs.mem0.ai/platform/features/async-mode-default-change, read 2026-12-07: `async_mode` defaults to true; the API returns immediately with {\"message\": \"Memory processing has been queued for background execution\", \"status\": \"PENDING\", \"event_id\": ...}";
const MA_AWS: &str = "docs.aws.amazon.com, Bedrock Claude Managed Agents, memory stores, read 2026-12-04: \"A memory store can hold up to 2,000 memories and 250,000 versions\"";
const MA_BYTES: &str = "docs.rs claude-api 0.5.3 `managed_agents::memory_stores` (\"individual memories capped at 100KB\") and help.aliyun.com/en/model-studio/managed-agents-memory-store (\"102400 UTF-8 bytes\"), read 2026-12-07";
const MA_PRECONDITION: &str = "platform.claude.com API reference, `BetaManagedAgentsContentSha256Precondition`, read 2026-12-04: a mismatch fails with `memory_precondition_failed_error` (409)";
const CODEX_MOD: &str =
    "openai/codex @ 1f39b57c131ad473805c69719acf74ce491b9dd1 : codex-rs/core/src/memories/mod.rs";
const CODEX_README: &str =
    "openai/codex @ 4a3c3ca1768324d23c2696e5fc689d1634ef4968 : codex-rs/core/src/memories/README.md";
const CODEX_STORAGE: &str = "openai/codex @ eb3ced59050a6e5afd44e3133df1e5a48381d29a : codex-rs/core/src/memories/storage.rs (files rewritten with `tokio::fs::write`, MEMORY.md removed when no input is retained)";
const CODEX_WIPE: &str = "openai/codex codex-rs/core/src/memories/storage.rs `wipe_consolidation_outputs` (a later stored version; its commit is not resolved by the index): removes MEMORY.md before stage 2 regenerates it";
const CODEX_PROMPTS: &str = "openai/codex @ 03626f40bc138b1807fd8317be2817e3b5cb1bcd : codex-rs/core/src/memories/prompts.rs `build_memory_tool_developer_instructions` (memory_summary.md read, trimmed, `truncate_text(.., TruncationPolicy::Tokens(MEMORY_TOOL_DEVELOPER_INSTRUCTIONS_SUMMARY_TOKEN_LIMIT))`)";
const CODEX_TRUNCATE: &str = "openai/codex @ b24d7f3c9a1acadc145019747224f7312bc9b3b4 : codex-rs/utils/string/src/truncate.rs `truncate_middle_with_token_budget` (APPROX_BYTES_PER_TOKEN = 4; first and last halves of the byte budget kept, `…N tokens truncated…` between)";
const CODEX_JOBS: &str = "openai/codex @ f9cf89d17d99c6c09d64523c9f136c6562e8f64d : codex-rs/state/src/runtime/memories.rs (`try_claim_global_phase2_job`: SkippedNotDirty when input_watermark <= last_success_watermark, SkippedRunning while status = 'running' and lease_until > now, else claim with lease_until = now + lease; `enqueue_global_consolidation` keeps a running job running; success sets done and advances last_success_watermark)";
const CODEX_23129: &str = "openai/codex#23129 (open, 2026-05-17): stage1_outputs 24 rows, memory_consolidate_global `pending`, no MEMORY.md or memory_summary.md; #37097 (open, 2026-08-05): pending with no active lease, no retry, no error";
const CODEX_29818: &str = "openai/codex#29818 (closed, 2026-06-24): MEMORY.md of 2,450 lines, 325 KB, 24 task groups, the same principles repeated under separate tasks";
const CODEX_TEMPLATE: &str =
    "openai/codex codex-rs/core/templates/memories/consolidation.md: \"prefer newer guidance by default\"";
const MEMORY_TOOL: &str =
    "platform.claude.com/docs/en/agents-and-tools/tool-use/memory-tool (memory_20250818), read 2026-12-04";

/// Every constant, switch and rule of every profile and of the measures.
pub const RULES: &[Rule] = &[
    // ---- add-only (Mem0 v3) ----
    Rule {
        profile: "add-only",
        name: "add-only",
        says: "extraction only adds: no update, no delete, no consolidation; recall shows every fact ever added (\"current\" is settled by retrieval ranking, not by a rewrite)",
        basis: Basis::Source { cite: MEM0_MIGRATION },
    },
    Rule {
        profile: "add-only",
        name: "ack",
        says: "acknowledged = the ADD events `Memory.add()` returns, one per extracted memory, even for a record whose insert failed (the open-source SDK; the hosted platform answers PENDING instead, see platform_async)",
        basis: Basis::Source { cite: MEM0_6911 },
    },
    Rule {
        profile: "add-only",
        name: "AddOnly.ack_failed_inserts",
        says: "true: a failed insert is still returned as ADD (the open-source SDK as reported); false: the fix proposed in the PRs",
        basis: Basis::Source { cite: MEM0_6911 },
    },
    Rule {
        profile: "add-only",
        name: "AddOnly.dedup",
        says: "true: a memory whose hash equals one of the DEDUP_SEARCH_LIMIT most similar stored memories is skipped",
        basis: Basis::Assumption {
            why: "an audit of the profile reports hashes compared against the top-10 search results only; the v3 `Memory.add()` source was not found in the stored sources read",
            changes_result: true,
            on_by_default: false,
        },
    },
    Rule {
        profile: "add-only",
        name: "DEDUP_SEARCH_LIMIT",
        says: "10 search results a new memory's hash is compared against (ranked here: same key first, newest first)",
        basis: Basis::Assumption {
            why: "as `AddOnly.dedup`; the ranking stands in for embedding similarity",
            changes_result: true,
            on_by_default: false,
        },
    },
    Rule {
        profile: "add-only",
        name: "record",
        says: "one vector-store record = one file named by a hash of its line, written atomically",
        basis: Basis::Assumption {
            why: "a vector store inserts a record whole; a file per record is the lab's stand-in",
            changes_result: false,
            on_by_default: true,
        },
    },
    Rule {
        profile: "add-only",
        name: "platform_async",
        says: "the hosted platform's add (async_mode, its default) answers PENDING with an event id before anything is stored; recall shows the memory only after the background processing",
        basis: Basis::Source { cite: MEM0_ASYNC },
    },
    Rule {
        profile: "add-only",
        name: "platform_queue",
        says: "the platform's queue is a directory beside the store, processed oldest first by `platform_process`, each queued add inserted as `add` does",
        basis: Basis::StandIn {
            why: "the platform's queue and workers are a server the lab does not have; when it runs and whether a queued add can fail (a FAILED event) are not modelled",
            changes_result: false,
        },
    },
    // ---- git-backed (Letta MemFS) ----
    Rule {
        profile: "git-backed",
        name: "ack",
        says: "acknowledged = the memory write committed (`commitMemoryWrite`); the push to the server follows after the turn (`syncPendingMemoryCommitsAfterTurn`, modelled in git_remote: a committed fact can still be lost when the server rewrites history, letta-ai/letta-code#2203)",
        basis: Basis::Source { cite: LETTA_GIT },
    },
    Rule {
        profile: "git-backed",
        name: "GitBacked.commit_every_edit",
        says: "true: every memory write is committed before it returns; false: edits are committed only at the next consolidation",
        basis: Basis::Source { cite: LETTA_GIT },
    },
    Rule {
        profile: "git-backed",
        name: "refuse_dirty",
        says: "a memory write is refused while the repository has uncommitted changes (\"Memory repo has uncommitted changes. Commit, discard, or sync them before using memory tools.\")",
        basis: Basis::Source { cite: LETTA_GIT },
    },
    Rule {
        profile: "git-backed",
        name: "recover",
        says: "on start-up `git pull --ff-only`: uncommitted edits stay in the working tree; the reset to the remote runs only on unrelated history and refuses a dirty repository",
        basis: Basis::Source { cite: LETTA_GIT },
    },
    Rule {
        profile: "git-backed",
        name: "GitBacked.reset_on_start",
        says: "false: recovery keeps uncommitted edits (upstream); true: the working tree is reset to HEAD (the broken variant)",
        basis: Basis::Source { cite: LETTA_GIT },
    },
    Rule {
        profile: "git-backed",
        name: "consolidate",
        says: "consolidation (reflection) when the context is compacted",
        basis: Basis::Source { cite: LETTA_DOCS },
    },
    Rule {
        profile: "git-backed",
        name: "reflection",
        says: "a reflection edits a worktree on its own branch, commits there, then merges into main; on an unresolved conflict it runs `git merge --abort` and reports failure (nothing acknowledged)",
        basis: Basis::Source { cite: LETTA_REFLECTION },
    },
    Rule {
        profile: "git-backed",
        name: "GitBacked.parent_check",
        says: "true: the merge notices main moved since the worktree's base; false: the worktree's files are copied over main (a forced push)",
        basis: Basis::Source { cite: LETTA_REFLECTION },
    },
    Rule {
        profile: "git-backed",
        name: "conflict",
        says: "a merge conflicts when main and the worktree both changed the same file since the base",
        basis: Basis::Assumption {
            why: "git conflicts by hunk; every concurrent edit of one file in the measured scripts touches adjacent lines (appends), which git also reports as a conflict",
            changes_result: false,
            on_by_default: true,
        },
    },
    Rule {
        profile: "git-backed",
        name: "repository",
        says: "an in-process commit log: whole-file blobs, neither compressed nor packed; a commit's id is the SHA-256 of its parent's id and its tree",
        basis: Basis::StandIn {
            why: "bytes overstate real git, which compresses and deltas; the ids only need to agree between a clone and the server",
            changes_result: true,
        },
    },
    Rule {
        profile: "git-backed",
        name: "push_after_turn",
        says: "after a turn: nothing when dirty or nothing ahead of origin/main; else `git push`; a non-fast-forward refusal runs `git pull --rebase` and pushes again; a conflicting rebase reports `conflict` and pushes nothing",
        basis: Basis::Source { cite: LETTA_GIT },
    },
    Rule {
        profile: "git-backed",
        name: "pull_on_start",
        says: "at start-up `git pull --ff-only`; on failure with no merge base, reset to origin/main (refused while dirty; old HEAD kept under refs/letta-backup/); otherwise `git pull --rebase`",
        basis: Basis::Source { cite: LETTA_GIT },
    },
    Rule {
        profile: "git-backed",
        name: "rebase_conflict",
        says: "a rebase conflicts when a replayed commit changes a file the server changed since the merge base; the conflicting rebase is aborted (the clone is left as it was)",
        basis: Basis::Assumption {
            why: "git conflicts by hunk and upstream leaves the rebase in progress (reported as `conflict`, memory writes then refused as dirty); in the measured scripts both sides append to the same file, which git also reports as a conflict, and nothing is acknowledged either way",
            changes_result: false,
            on_by_default: true,
        },
    },
    Rule {
        profile: "git-backed",
        name: "server_backfill",
        says: "the server replaces main with a new root chain (an empty initial commit, one commit per backfilled block), or adds the same blocks on top of main",
        basis: Basis::Source { cite: LETTA_2203 },
    },
    Rule {
        profile: "git-backed",
        name: "force",
        says: "a writer that pushes with --force (the server's behaviour in #2203, never the client's own rule): the mutant of the two-agents row",
        basis: Basis::Lab { why: "the broken writer the two-agents row compares against" },
    },
    // ---- versioned (Managed Agents memory stores) ----
    Rule {
        profile: "versioned",
        name: "ack",
        says: "acknowledged = the API's 200 to an update; on the agent's own path, the mount (/mnt/memory), the file tool returns before the worker's sync (at most every 15 s, a final sync at session end: `Mount`)",
        basis: Basis::Source { cite: MA_SYNC },
    },
    Rule {
        profile: "versioned",
        name: "SYNC_INTERVAL_SECONDS",
        says: "15 s: a mount syncs after a tool call at most once per interval (uploads the agent's changed files, downloads the store's changes)",
        basis: Basis::Source { cite: MA_SYNC },
    },
    Rule {
        profile: "versioned",
        name: "FINAL_SYNC_SECONDS",
        says: "30 s: the final sync at session end flushes pending uploads for up to this long, then the mount is removed (here the final sync always completes)",
        basis: Basis::Source { cite: MA_SYNC },
    },
    Rule {
        profile: "versioned",
        name: "mount_upload",
        says: "a mount's upload is an update of the whole memory; the store's changes are downloaded only into files the agent has not changed since the last sync",
        basis: Basis::StandIn {
            why: "the page says the worker uploads changed files and writes the store's changes to disk; how it uploads (a whole-file update) and which side wins for a file changed on both are in its conflicts section, not read",
            changes_result: true,
        },
    },
    Rule {
        profile: "versioned",
        name: "upload_precondition",
        says: "true: a mount's upload carries the SHA-256 it last synced, so a stale upload is refused (409) and that session's change is lost when its mount is removed; false: the upload replaces the memory (the other session's change is lost, kept in the versions)",
        basis: Basis::Assumption {
            why: "not stated in the text read; the two-sessions row prints both",
            changes_result: true,
            on_by_default: false,
        },
    },
    Rule {
        profile: "versioned",
        name: "version_retention",
        says: "every version is kept (they count toward 250,000 a store and stay after the memory is deleted); none is pruned",
        basis: Basis::Assumption {
            why: "the API reference says each version is retained for at least the version retention period; the period was not in the text read, and within 1,000 sessions no version would be pruned by any period of a day or more",
            changes_result: false,
            on_by_default: true,
        },
    },
    Rule {
        profile: "versioned",
        name: "versions",
        says: "every change creates an immutable memory version",
        basis: Basis::Source { cite: MA_MEMORY },
    },
    Rule {
        profile: "versioned",
        name: "versions_stay",
        says: "a version changes only by redaction and stays after its memory is deleted",
        basis: Basis::Source { cite: MA_VERSIONS },
    },
    Rule {
        profile: "versioned",
        name: "MAX_STORES_PER_SESSION",
        says: "8 memory stores a session",
        basis: Basis::Source { cite: MA_SELF_HOSTED },
    },
    Rule {
        profile: "versioned",
        name: "MAX_MEMORIES_PER_STORE",
        says: "2,000 memories a store",
        basis: Basis::Source { cite: MA_AWS },
    },
    Rule {
        profile: "versioned",
        name: "MAX_VERSIONS_PER_STORE",
        says: "250,000 versions a store",
        basis: Basis::Source { cite: MA_AWS },
    },
    Rule {
        profile: "versioned",
        name: "MAX_MEMORY_BYTES",
        says: "102,400 bytes a memory",
        basis: Basis::Source { cite: MA_BYTES },
    },
    Rule {
        profile: "versioned",
        name: "Versioned.enforce_limits",
        says: "true: a write past a limit is refused before anything is written; false: stored anyway",
        basis: Basis::Assumption {
            why: "the limits are documented; the refusal's wording and that it comes before any write are the lab's",
            changes_result: false,
            on_by_default: true,
        },
    },
    Rule {
        profile: "versioned",
        name: "Versioned.precondition",
        says: "true: an update carries the content_sha256 of what the writer read, a mismatch is refused (409) unless the memory already is the requested text; false: the last writer wins",
        basis: Basis::Source { cite: MA_PRECONDITION },
    },
    Rule {
        profile: "versioned",
        name: "refused_update",
        says: "a writer refused with 409 reports the fact as not kept; it does not retry",
        basis: Basis::Assumption {
            why: "no source read gives a retry count; retrying would need one, so none is invented",
            changes_result: false,
            on_by_default: true,
        },
    },
    // ---- two-stage (Codex memories) ----
    Rule {
        profile: "two-stage",
        name: "ack",
        says: "nothing is acknowledged: a session only writes its rollout; stage 1 extracts it at a later start-up, stage 2 consolidates",
        basis: Basis::Source { cite: CODEX_README },
    },
    Rule {
        profile: "two-stage",
        name: "record",
        says: "the record is the stage-1 rows of the state database; the files are regenerated from them",
        basis: Basis::Source { cite: CODEX_README },
    },
    Rule {
        profile: "two-stage",
        name: "state_db",
        says: "a state-database row is one file written atomically (a SQLite transaction)",
        basis: Basis::Assumption {
            why: "the lab has no SQLite; a row lands whole or not at all, as a transaction does",
            changes_result: false,
            on_by_default: true,
        },
    },
    Rule {
        profile: "two-stage",
        name: "regenerate",
        says: "stage 2 removes MEMORY.md, then rewrites it in place (not atomically)",
        basis: Basis::Source { cite: CODEX_WIPE },
    },
    Rule {
        profile: "two-stage",
        name: "TwoStage.atomic_regeneration",
        says: "false (upstream): MEMORY.md is removed then written in place; true: written atomically without the removal",
        basis: Basis::Source { cite: CODEX_STORAGE },
    },
    Rule {
        profile: "two-stage",
        name: "MAX_RAW_MEMORIES_FOR_GLOBAL",
        says: "1,024 most recent stage-1 outputs retained for consolidation",
        basis: Basis::Source { cite: CODEX_MOD },
    },
    Rule {
        profile: "two-stage",
        name: "ROLLOUT_SUMMARIES_SUBDIR",
        says: "rollout_summaries/",
        basis: Basis::Source { cite: CODEX_MOD },
    },
    Rule {
        profile: "two-stage",
        name: "RAW_MEMORIES_FILENAME",
        says: "raw_memories.md (merged stage-1 outputs, latest first)",
        basis: Basis::Source { cite: CODEX_MOD },
    },
    Rule {
        profile: "two-stage",
        name: "MEMORY_REGISTRY_FILENAME",
        says: "MEMORY.md, stage 2's output, what recall reads",
        basis: Basis::Source { cite: CODEX_STORAGE },
    },
    Rule {
        profile: "two-stage",
        name: "PHASE_TWO_JOB_LEASE_SECONDS",
        says: "3,600 s lease on the global stage-2 job (heartbeat every 90 s while it runs)",
        basis: Basis::Source { cite: CODEX_MOD },
    },
    Rule {
        profile: "two-stage",
        name: "lease_expired",
        says: "in the fault measures the next start-up after a kill comes after the killed holder's lease expired (the exclusive-create claim is released on recovery)",
        basis: Basis::StandIn {
            why: "the measures have no clock; the lease itself runs on a logical clock in `TwoStage::start_up` (openai/codex#23129's row)",
            changes_result: true,
        },
    },
    Rule {
        profile: "two-stage",
        name: "start_up",
        says: "a start-up: stage 1, the enqueue (a running job stays running, input watermark raised), the claim (skipped when nothing is new or while a running holder's lease has not lapsed), stage 2, success (done, last success watermark raised)",
        basis: Basis::Source { cite: CODEX_JOBS },
    },
    Rule {
        profile: "two-stage",
        name: "killed_holder",
        says: "a holder killed right after its claim stops heartbeating, so its lease lapses PHASE_TWO_JOB_LEASE_SECONDS after the claim; the watermark is the count of stage-1 rows",
        basis: Basis::StandIn {
            why: "the logical clock stands in for wall time and the row count for `source_updated_at`; a holder killed later lapses one lease after its last 90 s heartbeat",
            changes_result: false,
        },
    },
    Rule {
        profile: "two-stage",
        name: "MEMORY_SUMMARY_FILENAME",
        says: "memory_summary.md: stage 2's summary, injected into the developer instructions at start-up",
        basis: Basis::Source { cite: CODEX_PROMPTS },
    },
    Rule {
        profile: "two-stage",
        name: "summary_content",
        says: "stage 2 writes memory_summary.md with the same lines as MEMORY.md, after it",
        basis: Basis::StandIn {
            why: "upstream's consolidation agent writes a shorter summary of its own choosing; the scripted stage 2 writes one line per fact, so the cap binds at about 240 facts here",
            changes_result: true,
        },
    },
    Rule {
        profile: "two-stage",
        name: "MEMORY_TOOL_DEVELOPER_INSTRUCTIONS_SUMMARY_TOKEN_LIMIT",
        says: "5,000 tokens of memory_summary.md injected at start-up (2,500 in later versions, per the note read before; not checked here)",
        basis: Basis::Source { cite: CODEX_MOD },
    },
    Rule {
        profile: "two-stage",
        name: "APPROX_BYTES_PER_TOKEN",
        says: "4 bytes a token; a text over the budget keeps its first and last halves, the middle replaced by a marker",
        basis: Basis::Source { cite: CODEX_TRUNCATE },
    },
    Rule {
        profile: "two-stage",
        name: "TwoStage.append_learnings",
        says: "false: stage 2 keeps one value per key; true: every differently worded line of a learning is kept (exact repeats merge)",
        basis: Basis::StandIn {
            why: "what openai/codex#29818 reports the consolidation model does with a principle learned again in other words; the reference (scripted) stage 2 keeps one",
            changes_result: true,
        },
    },
    Rule {
        profile: "two-stage",
        name: "reports_29818",
        says: "the issue's MEMORY.md: 2,450 lines, 325 KB, 24 task groups repeating the same principles",
        basis: Basis::Source { cite: CODEX_29818 },
    },
    Rule {
        profile: "two-stage",
        name: "reports_23129",
        says: "the issues' state: stage-1 rows present, the global job pending, no MEMORY.md or memory_summary.md",
        basis: Basis::Source { cite: CODEX_23129 },
    },
    Rule {
        profile: "two-stage",
        name: "TwoStage.prefer_newer",
        says: "true: stage 2 keeps the newest value of a key; false: the oldest",
        basis: Basis::Source { cite: CODEX_TEMPLATE },
    },
    Rule {
        profile: "two-stage",
        name: "TwoStage.consolidation_lock",
        says: "true: stage 2 runs under the global job claim (a second claimant leaves its input for the next run); false: both run",
        basis: Basis::Source { cite: CODEX_README },
    },
    Rule {
        profile: "two-stage",
        name: "LOCK",
        says: ".consolidation.lock: the global stage-2 claim as a file created exclusively",
        basis: Basis::Assumption {
            why: "Codex claims a row of the state database; an exclusive create is the same test-and-set",
            changes_result: false,
            on_by_default: true,
        },
    },
    // ---- memory-tool ----
    Rule {
        profile: "memory-tool",
        name: "ack",
        says: "acknowledged = a tool result without `is_error` to create / insert / str_replace",
        basis: Basis::Source { cite: MEMORY_TOOL },
    },
    Rule {
        profile: "memory-tool",
        name: "MemoryToolStore.edit_in_place",
        says: "true: the scripted model replaces a superseded fact with str_replace; false: it only inserts",
        basis: Basis::StandIn {
            why: "what the model sends is its own choice; the scripted model is the lab's stand-in",
            changes_result: true,
        },
    },
    // ---- every profile ----
    Rule {
        profile: "all",
        name: "scripted_consolidation",
        says: "a consolidation keeps one value per key, the newest (a model does this upstream)",
        basis: Basis::StandIn {
            why: "the lab's model roles are scripted so runs are deterministic",
            changes_result: true,
        },
    },
    // ---- the measures ----
    Rule {
        profile: "measures",
        name: "ALL",
        says: "the measures: kill, I/O error, full disk, stale, limits, lost updates",
        basis: Basis::Lab { why: "which measures every profile runs through" },
    },
    Rule {
        profile: "mutants",
        name: "MUTANTS",
        says: "for every profile and measure a design can fail, the broken variant the measure catches",
        basis: Basis::Lab { why: "proves each measure can fail on each design" },
    },
    Rule {
        profile: "mutants",
        name: "ACK_UNWRITTEN",
        says: "the wrapper acknowledging a write that failed or was cut by a kill",
        basis: Basis::Lab { why: "a broken variant for the fault measures (mem0ai/mem0#6911's class)" },
    },
    Rule {
        profile: "mutants",
        name: "UPDATE_AS_DUPLICATE",
        says: "the wrapper refusing a fact whose key is remembered, as a duplicate",
        basis: Basis::Lab { why: "a broken variant for the stale measure" },
    },
    Rule {
        profile: "measures",
        name: "PROFILES",
        says: "the registry: every profile at its defaults, one line each",
        basis: Basis::Lab { why: "which designs the measures run" },
    },
    Rule {
        profile: "measures",
        name: "ROOT",
        says: "/store, the store's directory on the in-memory backend",
        basis: Basis::Lab { why: "where the measures put a store" },
    },
    Rule {
        profile: "measures",
        name: "STALE_CONSOLIDATIONS",
        says: "3 consolidations before a superseded fact is said to survive",
        basis: Basis::Lab { why: "bounds the stale measure" },
    },
    Rule {
        profile: "measures",
        name: "GROWTH_SESSIONS",
        says: "1,000 generated sessions",
        basis: Basis::Lab { why: "the growth measure's length" },
    },
    Rule {
        profile: "measures",
        name: "MAX_KILL_POINTS",
        says: "400 fault points at most, far more operations than the script makes",
        basis: Basis::Lab { why: "a bound that is never reached" },
    },
    Rule {
        profile: "measures",
        name: "MAX_SCHEDULES",
        says: "20,000 interleavings at most, far more than two consolidators make",
        basis: Basis::Lab { why: "a bound that is never reached" },
    },
    Rule {
        profile: "measures",
        name: "JOURNAL",
        says: "a journal line of about 120 bytes, so 1,000 sessions pass 100 KB in one memory",
        basis: Basis::Lab { why: "makes the growth measure reach the per-memory limit" },
    },
];

/// The rules of one profile (or `measures`, `all`).
pub fn of(profile: &str) -> Vec<Rule> {
    RULES
        .iter()
        .filter(|r| r.profile == profile)
        .copied()
        .collect()
}

/// What "acknowledged" means for `profile`, with its source.
pub fn acknowledgement(profile: &str) -> String {
    RULES
        .iter()
        .find(|r| r.profile == profile && r.name == "ack")
        .map(|r| match r.basis {
            Basis::Source { cite } => format!("{} [{cite}]", r.says),
            _ => r.says.to_string(),
        })
        .unwrap_or_else(|| "not stated".into())
}
