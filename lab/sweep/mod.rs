//! Factorial sweeps: every combination of compaction switches × path lengths × seeds.
//!
//! A [`SweepSpec`] names a base profile, the switches to vary (each takes two
//! values, so `k` switches give `2^k` combinations), the path lengths and the
//! number of seeds. Cells are numbered in a fixed order (combination, then
//! seed, then path length), which is what makes `--shard i/n` (cells whose
//! index is `i` mod `n`) and [`merge`] exact: a merged set of shards is the
//! same [`SweepResult`] as an unsharded run, byte for byte once rendered.
//!
//! [`thresholds()`] finds the path lengths at which a counter changes within one
//! combination; rendering lives in [`render`] and is a pure function of results.
//!
//! One module per concern: [`spec`] (what to sweep), [`mod@run`] (running cells),
//! [`mod@thresholds`], [`shard`] (sharding and merging) and [`render`].

pub mod policies;
pub mod render;
pub mod run;
pub mod shard;
pub mod spec;
pub mod thresholds;
pub mod variants;

use crate::error::LabResult;
use crate::render::Format;

pub use run::{config_for, run, run_cell, run_on, session, CellResult, SweepResult};
pub use shard::{merge, Shard};
pub use spec::{levels, parse_path_lens, parse_vary, PathLens, SweepSpec};
pub use thresholds::{combo_label, thresholds, Threshold};

/// Every switch of [`crate::compact::config::Switches`], in declaration order.
/// Hard-coded (and checked against the struct by a test) so the factor order
/// does not depend on how a JSON map happens to order keys.
pub const ALL_SWITCHES: &[&str] = &[
    "order",
    "unseen_guard",
    "pair_protection",
    "idempotent_placeholders",
    "save_before_omit",
    "micro_only_over_limit",
    "fit_tool_results",
    "auto_summary",
    "skip_lone_archive_marker",
    "persist_all_large",
    "collision_safe_paths",
    "overwrite_saved_output",
    "survive_summary_failure",
];

/// The switches varied when `--vary` is not given: the seed's two safeguards
/// and the three fixes of its findings.
pub const DEFAULT_VARY: &[&str] = &[
    "order",
    "unseen_guard",
    "pair_protection",
    "idempotent_placeholders",
    "save_before_omit",
];

/// Default path lengths: 60..=200 (the thresholds of the seed's probes lie in
/// it; the memory backend reaches every length from 20, so `--path-len 30..200` works too).
pub const DEFAULT_PATH_LENS: &str = "60..200";

/// The counters a sweep records per cell, in report order.
pub const COUNTERS: &[&str] = &[
    "lost_forever",
    "pointer_lost",
    "pairs_intact",
    "double_compacted",
    "unseen_compacted",
];

/// Safety cap on cells: a typo such as `--path-len 60..200000` should fail fast, not run for hours.
pub const MAX_CELLS: usize = 1_000_000;

/// `lab sweep` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct SweepArgs {
    /// Base profile (see `lab profiles`); the varied switches override it.
    #[arg(long, conflicts_with = "merge", default_value = "prototype")]
    pub profile: String,
    /// Switches to vary, comma separated, or `all` [default: order,unseen_guard,pair_protection,idempotent_placeholders,save_before_omit].
    /// With --policy NAME: the policy's constants, `KEY=A..B:STEP` or
    /// `KEY=V1|V2`, comma separated (one variant per combination).
    #[arg(long, conflicts_with = "merge")]
    pub vary: Option<String>,
    /// Path lengths: N, A..B or A..B:STEP (inclusive), comma separated.
    #[arg(long, conflicts_with = "merge", default_value = DEFAULT_PATH_LENS)]
    pub path_len: String,
    /// Number of seeds, run as seeds 0..N: seed 0 is the prototype probe, others generated sessions.
    #[arg(long, conflicts_with = "merge", default_value_t = 1)]
    pub seeds: u64,
    /// Run only cells whose index is i mod n (`--shard i/n`; `auto/n` takes i
    /// from the job array, as `lab replay` does); merge with `--merge`.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Merge the JSON outputs of shards instead of running anything.
    #[arg(long, num_args = 1.., value_name = "FILE", conflicts_with = "shard")]
    pub merge: Vec<std::path::PathBuf>,
    /// Worker threads [default: every core; twice that with --fs disk].
    /// The output is the same bytes for every N.
    #[arg(long, value_name = "N", value_parser = crate::jobs::parse_jobs)]
    pub jobs: Option<usize>,
    /// Progress on stderr even when it is not a terminal.
    #[arg(long)]
    pub progress: bool,
    /// Output format (json is what `--merge` reads).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Sweep policies instead (`lab policies`; `all` for every one): seeds
    /// 0..N as generated sessions through the policy engine.
    /// With --vary KEY=A..B:STEP: the policy's constants are swept instead.
    // Split by `policy::list::split_specs`, not clap: see the command.
    #[arg(long, conflicts_with_all = ["merge", "shard"])]
    pub policy: Vec<String>,
    /// With --policy and --vary: real session files, directories or globs
    /// to replay each variant on (instead of generated sessions).
    #[arg(long, num_args = 1.., value_name = "PATH", requires = "vary")]
    pub sessions: Vec<std::path::PathBuf>,
}

/// Progress lines are printed every this many cells.
const PROGRESS_EVERY: usize = 200;

/// Run `lab sweep`; returns what to print.
pub fn command(args: &SweepArgs) -> LabResult<String> {
    use std::io::IsTerminal;
    // A comma inside a variant's JSON value does not separate policies.
    let args = &SweepArgs {
        policy: crate::zoo::list::split_specs(&args.policy),
        ..args.clone()
    };
    if let (false, Some(vary)) = (args.policy.is_empty(), &args.vary) {
        return variant_sweep(args, vary);
    }
    if !args.policy.is_empty() {
        let jobs = args.jobs.unwrap_or_else(crate::jobs::default_jobs);
        let rows = crate::sweep::policies::sweep_on(&args.policy, args.seeds, jobs)?;
        return Ok(crate::sweep::policies::render(&rows, args.format));
    }
    let result = if args.merge.is_empty() {
        let vary = match &args.vary {
            Some(v) => parse_vary(v)?,
            None => DEFAULT_VARY.iter().map(|s| s.to_string()).collect(),
        };
        let spec = SweepSpec {
            profile: args.profile.clone(),
            vary,
            path_lens: parse_path_lens(&args.path_len)?,
            seeds: args.seeds,
        };
        let shard = args.shard.as_deref().map(Shard::parse).transpose()?;
        let terminal = std::io::stderr().is_terminal();
        // The shared progress (a bar on a terminal, a line every few seconds
        // off one, nothing with --quiet); a log asked for with --progress
        // also gets one line every PROGRESS_EVERY cells.
        let total = spec.total_cells();
        let mine = shard.map_or(total, |s| s.cells_of(total));
        let bar = crate::progress::Progress::bar(mine as u64, "sweep: cells");
        let mut progress = |done: usize, total: usize| {
            bar.step();
            if !terminal && args.progress && (done.is_multiple_of(PROGRESS_EVERY) || done == total)
            {
                eprintln!("sweep: {done}/{total} cells");
            }
        };
        run_on(&spec, shard, args.jobs, &mut progress)?
    } else {
        merge(
            args.merge
                .iter()
                .map(|p| shard::read_shard(p))
                .collect::<LabResult<Vec<_>>>()?,
        )?
    };
    Ok(render::sweep(&result, args.format))
}

/// `lab sweep --policy NAME --vary KEY=…`: one policy's constants swept.
fn variant_sweep(args: &SweepArgs, vary: &str) -> LabResult<String> {
    let [policy] = args.policy.as_slice() else {
        return Err(crate::error::LabError::usage(
            "--vary sweeps the constants of one policy",
            "name one policy: --policy NAME --vary KEY=A..B:STEP",
        ));
    };
    let axes = variants::parse_axes(vary)?;
    // Parsed once here, at the command's edge.
    let policy: crate::policy::spec::PolicySpec = policy.parse()?;
    let sessions = if args.sessions.is_empty() {
        variants::Sessions::Seeds(args.seeds)
    } else {
        variants::Sessions::Files(args.sessions.clone())
    };
    let jobs = args.jobs.unwrap_or_else(crate::jobs::default_jobs);
    let sweep = variants::run(&policy, axes, &sessions, jobs)?;
    Ok(variants::render(&sweep, args.format))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::session::Action;
    use crate::compact::{config, probe};

    /// The result sizes of a generated session, round by round.
    fn sizes(script: &crate::compact::session::Script) -> Vec<Vec<usize>> {
        script
            .0
            .iter()
            .filter_map(|a| match a {
                Action::Assistant(t) => Some(t.calls.iter().filter_map(|c| c.chars).collect()),
                _ => None,
            })
            .collect()
    }

    /// Seeded artefacts (sweeps, hunts, the policy search) must not move
    /// when a dependency is updated: the generator is ChaCha12 from
    /// `rand_chacha`, whose stream is fixed, and these are its first draws.
    #[test]
    fn a_seed_gives_the_same_session_on_every_version() {
        let want = vec![
            vec![490, 723, 897],
            vec![492, 377, 221],
            vec![738, 359],
            vec![808],
            vec![312, 330],
        ];
        assert_eq!(sizes(&run::session(1)), want);
        let first = &policies::rounds(1)[0];
        assert_eq!((first.sizes.clone(), first.reread), (vec![4545], None));
    }

    #[test]
    fn all_switches_matches_the_struct() {
        let v = serde_json::to_value(config::Switches::default()).unwrap();
        let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        let mut ours = ALL_SWITCHES.to_vec();
        keys.sort_unstable();
        ours.sort_unstable();
        assert_eq!(keys, ours);
    }

    #[test]
    fn cell_indexing_round_trips() {
        let spec = SweepSpec {
            profile: "prototype".into(),
            vary: vec!["order".into(), "unseen_guard".into()],
            path_lens: vec![60, 70, 80],
            seeds: 2,
        };
        assert_eq!(spec.total_cells(), 24);
        assert_eq!(spec.cell(0), (0, 0, 60));
        assert_eq!(spec.cell(4), (0, 1, 70));
        assert_eq!(spec.cell(23), (3, 1, 80));
        assert_eq!(spec.values(2), vec!["micro_first", "false"]);
        assert_eq!(spec.values(1), vec!["persist_first", "true"]);
    }

    #[test]
    fn generated_sessions_are_deterministic_and_small() {
        assert_eq!(session(7), session(7));
        assert_ne!(session(7), session(8));
        assert_eq!(session(0), probe::prototype_probe());
        let calls: usize = session(3)
            .0
            .iter()
            .map(|a| match a {
                Action::Assistant(t) => t.calls.len(),
                _ => 0,
            })
            .sum();
        assert!((3..=15).contains(&calls), "{calls}");
    }
}
