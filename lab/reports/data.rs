//! What `lab reports` runs: the experiments behind every report, computed
//! once, and writing or checking the report files.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::compact::config;
use crate::compact::probe;
use crate::compact::session::Script;
use crate::error::{LabError, LabResult};
use crate::sweep::{parse_path_lens, run, SweepSpec, DEFAULT_VARY};

/// One profile on one script at one path length (the profile comparison report).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileCell {
    /// Profile name.
    pub profile: String,
    /// Script name (`probe`, `scenario_a`, `scenario_b`, `recompaction`).
    pub script: String,
    /// Embedded path length.
    pub path_len: usize,
    /// Originals neither in context nor on disk.
    pub lost_forever: u64,
    /// Originals on disk that nothing in context leads to.
    pub pointer_lost: u64,
    /// Both API pair rules held.
    pub pairs_intact: bool,
    /// Placeholders compacted again.
    pub double_compacted: u64,
    /// Results compacted before the model saw them.
    pub unseen_compacted: u64,
    /// Results over the per-item threshold left whole in context.
    pub oversized_in_context: u64,
}

/// The scripts of the profile comparison, by report name.
pub fn comparison_scripts() -> Vec<(&'static str, Script)> {
    vec![
        ("probe", probe::prototype_probe()),
        ("scenario_a", probe::scenario_a()),
        ("scenario_b", probe::scenario_b()),
        ("recompaction", probe::recompaction()),
    ]
}

/// Path lengths of the factorial and profile reports: the registry's short and long cells.
pub const REPORT_LENS: [usize; 2] = [crate::registry::SHORT_PATH, crate::registry::LONG_PATH];

/// Run everything `lab reports` needs. The 2×2 grid runs at every length of
/// 60..=200 so its thresholds are exact; its tables show every 10th.
/// Sessions simulated for the memory-growth report.
pub const MEMORY_SESSIONS: usize = 24;

/// Everything `lab reports` writes, the spread figure over
/// [`crate::reports::cost::SEEDS`] seeds.
pub fn report_data() -> LabResult<crate::reports::ReportData> {
    report_data_seeds(crate::reports::cost::SEEDS)
}

/// Everything `lab reports` writes, the spread figure over `seeds` seeds.
pub fn report_data_seeds(seeds: u64) -> LabResult<crate::reports::ReportData> {
    let grid = SweepSpec {
        profile: "prototype".into(),
        vary: vec!["order".into(), "unseen_guard".into()],
        path_lens: parse_path_lens("60..200")?,
        seeds: 1,
    };
    let factorial = SweepSpec {
        profile: "prototype".into(),
        vary: DEFAULT_VARY.iter().map(|s| s.to_string()).collect(),
        path_lens: REPORT_LENS.to_vec(),
        seeds: 1,
    };
    let profiles = profile_cells()?;
    let memory_growth = memory_growth()?;
    let runs = crate::reports::frontier::frontier_runs()?;
    Ok(crate::reports::ReportData {
        memory_growth,
        frontier: crate::reports::frontier::scored(&runs),
        cost: crate::replay::dollars::policy_costs(&runs),
        regret: crate::reports::frontier::regret(&runs),
        runs,
        verdicts: registry_verdicts()?,
        memory_tools: crate::memory::tool::rows::report_cards()?,
        memory_profiles: crate::memory::profiles::measures::measure_all(),
        memory_mutants: crate::memory::profiles::mutants::matrix(),
        grid: run(&grid, None, &mut |_, _| {})?,
        table_lens: parse_path_lens("60..200:10")?,
        factorial: run(&factorial, None, &mut |_, _| {})?,
        profiles,
        horizon: crate::reports::horizon::horizon_data()?,
        cost_seeds: crate::reports::cost::seed_costs(seeds)?,
    })
}

/// Every profile on every comparison script at every report length.
fn profile_cells() -> LabResult<Vec<ProfileCell>> {
    let mut profiles = Vec::new();
    for p in config::profiles() {
        for (name, script) in comparison_scripts() {
            for len in REPORT_LENS {
                let c = probe::run(&p.config, &script, Some(len))?.counters;
                profiles.push(ProfileCell {
                    profile: p.name.to_string(),
                    script: name.to_string(),
                    path_len: len,
                    lost_forever: c.count_of("lost_forever").unwrap_or(0),
                    pointer_lost: c.count_of("pointer_lost").unwrap_or(0),
                    pairs_intact: c.flag_of("pairs_intact").unwrap_or(true),
                    double_compacted: c.count_of("double_compacted").unwrap_or(0),
                    unseen_compacted: c.count_of("unseen_compacted").unwrap_or(0),
                    oversized_in_context: c.count_of("oversized_in_context").unwrap_or(0),
                });
            }
        }
    }
    Ok(profiles)
}

/// The memory store's growth over [`MEMORY_SESSIONS`] sessions: the course,
/// then each of the two fixes.
fn memory_growth() -> LabResult<Vec<(String, Vec<u64>)>> {
    use crate::memory::experiments::growth_curve;
    use crate::memory::switches::MemorySwitches;
    let fixes = [
        (
            "chunked_consolidation",
            MemorySwitches {
                chunked_consolidation: true,
                ..MemorySwitches::default()
            },
        ),
        (
            "warn_on_skip",
            MemorySwitches {
                warn_on_skip: true,
                ..MemorySwitches::default()
            },
        ),
    ];
    let mut out = vec![(
        "course".to_string(),
        growth_curve(MEMORY_SESSIONS, MemorySwitches::default())?,
    )];
    for (name, switches) in fixes {
        out.push((name.to_string(), growth_curve(MEMORY_SESSIONS, switches)?));
    }
    Ok(out)
}

/// Every registry row run once at its default cells.
fn registry_verdicts() -> LabResult<Vec<crate::reports::verdicts::RowVerdict>> {
    let opts = crate::registry::RunOptions::default();
    crate::experiments::all()
        .into_iter()
        .map(|e| {
            Ok(crate::reports::verdicts::RowVerdict {
                verdict: (e.run)(&opts)?,
                caught_by: e.caught_by.iter().map(|s| s.to_string()).collect(),
            })
        })
        .collect()
}

/// Write `files` into `dir` (created if missing), each through a temp file and
/// a rename so a reader never sees half a file. Returns one line per file.
pub fn write_files(dir: &Path, files: &[(String, String)]) -> LabResult<String> {
    std::fs::create_dir_all(dir).map_err(|e| LabError::io("creating the reports dir", dir, e))?;
    // All or none: a directory that refuses one file keeps every old one.
    let all: Vec<(std::path::PathBuf, Vec<u8>)> = files
        .iter()
        .map(|(name, text)| (dir.join(name), text.clone().into_bytes()))
        .collect();
    crate::input::outputs::write_all_or_none(&all, "a report")?;
    let mut out = String::new();
    for (path, _) in &all {
        out += &format!("wrote {}\n", path.display());
    }
    Ok(out)
}

/// Subdirectory of `reports/` owned by `make replay`, skipped by the drift check.
pub const REPLAY_DIR: &str = "replay";

/// Files of `reports/` written by `make calibration` from the shared
/// transcripts (a checkout need not have them), skipped by the drift
/// check; `tests/replay/calibration.rs` pins them instead.
pub const FROM_SHARED: &[&str] = &["closed_loop_calibration.md", "closed_loop_calibration.json"];

/// Compare `dir` with `files`: one diff-like entry per missing, changed or
/// unexpected file (empty = no drift).
pub fn drift(dir: &Path, files: &[(String, String)]) -> LabResult<Vec<String>> {
    let mut out = Vec::new();
    for (name, want) in files {
        let path = dir.join(name);
        match std::fs::read(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => out.push(format!(
                "{}: missing (generated, not checked in)",
                path.display()
            )),
            Err(e) => return Err(LabError::io("reading a checked-in report", &path, e)),
            Ok(have) if have == want.as_bytes() => {}
            Ok(have) => {
                let have = String::from_utf8_lossy(&have);
                out.push(first_difference(&path.display().to_string(), &have, want));
            }
        }
    }
    let entries =
        std::fs::read_dir(dir).map_err(|e| LabError::io("listing the reports dir", dir, e))?;
    let mut extra = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| LabError::io("listing the reports dir", dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        // reports/replay/ is written by `make replay` from ../shared/transcripts,
        // which a checkout need not have: it is not part of this generator's output.
        if (name == REPLAY_DIR && entry.path().is_dir()) || FROM_SHARED.contains(&name.as_str()) {
            continue;
        }
        if !files.iter().any(|(n, _)| *n == name) {
            extra.push(format!(
                "{}: unexpected (checked in, no longer generated: delete it)",
                dir.join(&name).display()
            ));
        }
    }
    extra.sort();
    out.extend(extra);
    Ok(out)
}

/// A unified-diff-style excerpt of the first differing line.
pub fn first_difference(label: &str, have: &str, want: &str) -> String {
    let (h, w): (Vec<&str>, Vec<&str>) = (have.lines().collect(), want.lines().collect());
    let n = h
        .iter()
        .zip(&w)
        .position(|(a, b)| a != b)
        .unwrap_or(h.len().min(w.len()));
    let show = |v: &[&str]| {
        v.get(n)
            .map(|l| l.to_string())
            .unwrap_or_else(|| "(end of file)".into())
    };
    format!(
        "--- {label} (checked in)\n    +++ {label} (generated)\n    @@ line {} @@ ({} vs {} lines)\n    -{}\n    +{}",
        n + 1,
        h.len(),
        w.len(),
        show(&h),
        show(&w)
    )
}

/// `lab reports` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct ReportsArgs {
    /// Regenerate every report file into this directory.
    #[arg(
        long,
        value_name = "DIR",
        required_unless_present = "check",
        conflicts_with = "check"
    )]
    pub out: Option<std::path::PathBuf>,
    /// Compare this directory with what the code produces; exit 1 on drift.
    #[arg(long, value_name = "DIR")]
    pub check: Option<std::path::PathBuf>,
    /// Seeds of the spread figure (`cost_seeds.svg`), 1..=100; the
    /// checked-in reports use the default.
    #[arg(long, default_value_t = crate::reports::cost::SEEDS, value_parser = clap::value_parser!(u64).range(1..=100))]
    pub seeds: u64,
}

/// Run `lab reports`; returns what to print, or an expectation error listing drifted files.
pub fn reports_command(args: &ReportsArgs) -> LabResult<String> {
    let files = crate::reports::files(&report_data_seeds(args.seeds)?);
    match (&args.out, &args.check) {
        (Some(dir), _) => write_files(dir, &files),
        (None, Some(dir)) => {
            let drifted = drift(dir, &files)?;
            if drifted.is_empty() {
                Ok(format!(
                    "reports: {} files match {}\n",
                    files.len(),
                    dir.display()
                ))
            } else {
                // The header goes straight to stderr so the error's count is the number of files.
                eprintln!(
                    "reports: {} file(s) in {} differ from what the code produces; run `make reports` and commit",
                    drifted.len(),
                    dir.display()
                );
                Err(LabError::Drift { files: drifted })
            }
        }
        (None, None) => Err(LabError::usage(
            "lab reports needs --out DIR or --check DIR",
            "e.g. lab reports --out reports/",
        )),
    }
}
