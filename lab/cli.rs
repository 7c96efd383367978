//! The `lab` command line: argument types and dispatch, no experiment logic.

use std::io::Write;

use clap::{Args, Parser, Subcommand};

use crate::compact::{config, probe};
use crate::error::{LabError, LabResult};
use crate::registry::{self, RunOptions};
use crate::report::{self, Format};

/// ctxlab: reproducible experiments on how an agent harness compacts context and keeps memory.
#[derive(Debug, Parser)]
#[command(name = "lab", version, args_conflicts_with_subcommands = true)]
pub struct Cli {
    /// Run one break experiment (same as `lab break ID`); `all` runs every row.
    #[arg(long = "break", value_name = "ID")]
    pub break_id: Option<String>,
    /// Options for `--break`.
    #[command(flatten)]
    pub run: RunArgs,
    /// The subcommand.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Options shared by experiment commands.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Exact lengths of the embedded persistence path, comma separated.
    #[arg(long, value_delimiter = ',', default_values_t = vec![registry::SHORT_PATH, registry::LONG_PATH])]
    pub path_len: Vec<usize>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

impl RunArgs {
    fn options(&self) -> RunOptions {
        RunOptions {
            path_lens: self.path_len.clone(),
            seed: 0,
        }
    }
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run break experiments by id (`all` for every row).
    Break {
        /// Experiment ids.
        #[arg(required = true)]
        ids: Vec<String>,
        /// Options.
        #[command(flatten)]
        run: RunArgs,
    },
    /// List every experiment of the registry.
    List {
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// List the named profiles.
    Profiles {
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// Run the prototype's probe under a profile with overrides.
    Probe {
        /// Profile name (see `lab profiles`).
        #[arg(long, default_value = "prototype")]
        profile: String,
        /// Switch or constant overrides, `key=value` (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// Options.
        #[command(flatten)]
        run: RunArgs,
    },
    /// Check every registry expectation; exit 1 on any failure.
    Selftest,
    /// Import transcripts and print what was found: messages, tool calls,
    /// sidechains, real compactions, skipped records and every damage diagnostic.
    Import {
        /// Transcript files.
        #[arg(required = true)]
        files: Vec<std::path::PathBuf>,
        /// Treat every damage diagnostic as an error.
        #[arg(long)]
        strict: bool,
        /// Read every file as this format instead of detecting it
        /// (claude_jsonl, chat_json, anthropic, openai, trajectories).
        #[arg(long, value_name = "FORMAT")]
        format_in: Option<String>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// Replay real agent transcripts (Claude Code .jsonl / chat.json, Anthropic
    /// Messages JSON, OpenAI chat / SWE-agent .traj) through compaction profiles.
    Replay {
        /// Transcript files.
        #[arg(required = true)]
        files: Vec<std::path::PathBuf>,
        /// Profiles to replay under (repeatable or comma separated; default: every profile).
        #[arg(long, value_delimiter = ',')]
        profile: Vec<String>,
        /// Multiply the profile's size constants (e.g. 0.1 pushes a short session over its limits).
        #[arg(long, default_value_t = 1.0)]
        scale: f64,
        /// Exact length of the embedded result path.
        #[arg(long, default_value_t = crate::replay::DEFAULT_PATH_LEN)]
        path_len: usize,
        /// Treat every damage diagnostic (cut line, dangling tool_use, unknown record) as an error.
        #[arg(long)]
        strict: bool,
        /// Also write an SVG plot of context size over model calls per profile.
        #[arg(long, value_name = "FILE")]
        plot: Option<std::path::PathBuf>,
        /// Read every file as this format instead of detecting it
        /// (claude_jsonl, chat_json, anthropic, openai, trajectories).
        #[arg(long, value_name = "FORMAT")]
        format_in: Option<String>,
        /// Replay each session at its real budget: the scale at which the
        /// profile's limit is the size the session had when it really
        /// compacted (sessions without a real compaction keep --scale).
        #[arg(long)]
        scale_to_real: bool,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// Search for a conversation the broken side fails and the intact side passes;
    /// write the shrunk minimal counterexample as a scenario file.
    Hunt {
        /// A compaction experiment id (D2, D3, D6, G1, A, B, R1).
        #[arg(long = "break", value_name = "ID", conflicts_with = "sets")]
        break_id: Option<String>,
        /// Base profile when hunting an arbitrary toggle set.
        #[arg(long, default_value = "prototype")]
        profile: String,
        /// Overrides of the broken side, `key=value` (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// Embedded path length to hunt at.
        #[arg(long, default_value_t = registry::LONG_PATH)]
        path_len: usize,
        /// Random seed of the search.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Conversations to try before giving up.
        #[arg(long, default_value_t = 2000)]
        tries: usize,
        /// Where to write the scenario (default `scenarios/hunt/<name>.json`).
        #[arg(long)]
        out: Option<std::path::PathBuf>,
    },
    /// Run scenario files and check their expectations; exit 1 with a diff on failure.
    Run {
        /// Scenario files (JSON, schema ctxlab.scenario/1 or ctxlab.memory-scenario/1).
        #[arg(required = true)]
        files: Vec<std::path::PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// Print (or `--write` into a README) the generated experiment table.
    Readme {
        /// README file whose marked block is replaced in place.
        #[arg(long)]
        write: Option<std::path::PathBuf>,
    },
    /// Factorial sweep of switches × path lengths × seeds, with thresholds.
    Sweep(crate::sweep::SweepArgs),
    /// Regenerate (`--out DIR`) or check (`--check DIR`) the generated reports.
    Reports(crate::sweep::ReportsArgs),
}

/// Markers around the generated experiment table in README.md.
pub const README_BEGIN: &str = "<!-- registry:begin (generated by `make readme`) -->";
/// End marker.
pub const README_END: &str = "<!-- registry:end -->";

/// The README block: the registry as Markdown.
pub fn readme_block() -> String {
    format!(
        "{README_BEGIN}\n{}{README_END}",
        report::list(&registry::all(), Format::Markdown)
    )
}

/// Replace the marked block of `text`; errors name the file and the missing marker.
pub fn splice_readme(path: &std::path::Path, text: &str) -> LabResult<String> {
    let missing = |marker: &str| LabError::Input {
        file: path.to_path_buf(),
        line: 0,
        column: 0,
        message: format!("marker {marker:?} not found"),
        fix: format!(
            "put {README_BEGIN:?} and {README_END:?} on their own lines where the table goes"
        ),
    };
    let start = text
        .find(README_BEGIN)
        .ok_or_else(|| missing(README_BEGIN))?;
    let end = text[start..]
        .find(README_END)
        .ok_or_else(|| missing(README_END))?
        + start
        + README_END.len();
    Ok(format!(
        "{}{}{}",
        &text[..start],
        readme_block(),
        &text[end..]
    ))
}

/// Run the command line; returns what to print on stdout.
pub fn run(cli: Cli) -> LabResult<String> {
    match cli.command {
        None => match cli.break_id {
            Some(id) => run_breaks(&[id], &cli.run),
            None => Err(LabError::usage(
                "no command given",
                "run `lab --help`, `lab list` or `lab --break D6`",
            )),
        },
        Some(Command::Break { ids, run }) => run_breaks(&ids, &run),
        Some(Command::List { format }) => Ok(report::list(&registry::all(), format)),
        Some(Command::Profiles { format }) => Ok(report::profiles(&config::profiles(), format)),
        Some(Command::Probe { profile, sets, run }) => {
            let mut cfg = config::profile(&profile)?.config;
            for s in &sets {
                cfg.apply_override(s)?;
            }
            let mut out = String::new();
            for &len in &run.path_len {
                let o = probe::run(&cfg, &probe::prototype_probe(), Some(len))?;
                out += &report::counters(
                    &format!("probe · {profile} · path_len={len}"),
                    &o.counters,
                    run.format,
                );
            }
            Ok(out)
        }
        Some(Command::Selftest) => selftest(),
        Some(Command::Import {
            files,
            strict,
            format_in,
            format,
        }) => {
            let options = crate::import::ImportOptions {
                strict,
                format: format_in
                    .as_deref()
                    .map(crate::import::TranscriptFormat::from_name)
                    .transpose()?,
            };
            crate::import::command(&files, &options, format)
        }
        Some(Command::Replay {
            files,
            profile,
            scale,
            path_len,
            strict,
            plot,
            format_in,
            scale_to_real,
            format,
        }) => crate::replay::command(&crate::replay::ReplayCommand {
            files,
            profiles: profile,
            options: crate::replay::ReplayOptions {
                scale,
                path_len: Some(path_len),
                scale_to_real,
            },
            strict,
            format_in,
            plot,
            format,
        }),
        Some(Command::Hunt {
            break_id,
            profile,
            sets,
            path_len,
            seed,
            tries,
            out,
        }) => hunt(break_id, profile, sets, path_len, seed, tries, out),
        Some(Command::Run { files, format }) => run_scenarios(&files, format),
        Some(Command::Readme { write: None }) => Ok(readme_block() + "\n"),
        Some(Command::Readme { write: Some(path) }) => {
            let text =
                std::fs::read_to_string(&path).map_err(|e| LabError::io("reading", &path, e))?;
            let new = splice_readme(&path, &text)?;
            // Temp file + rename: an interrupted write never leaves half a README.
            let tmp = path.with_extension("md.tmp");
            std::fs::write(&tmp, new).map_err(|e| LabError::io("writing", &tmp, e))?;
            std::fs::rename(&tmp, &path).map_err(|e| LabError::io("replacing", &path, e))?;
            Ok(format!("updated {}\n", path.display()))
        }
        Some(Command::Sweep(args)) => crate::sweep::command(&args),
        Some(Command::Reports(args)) => crate::sweep::reports_command(&args),
    }
}

fn run_breaks(ids: &[String], args: &RunArgs) -> LabResult<String> {
    let rows = if ids.iter().any(|i| i == "all") {
        registry::all()
    } else {
        ids.iter()
            .map(|i| registry::find(i))
            .collect::<LabResult<Vec<_>>>()?
    };
    let opts = args.options();
    let verdicts = rows
        .iter()
        .map(|e| (e.run)(&opts))
        .collect::<LabResult<Vec<_>>>()?;
    Ok(report::verdicts(&verdicts, args.format))
}

fn selftest() -> LabResult<String> {
    let opts = RunOptions::default();
    let mut out = String::new();
    let mut failures = Vec::new();
    for e in registry::all() {
        let v = (e.run)(&opts)?;
        let f = v.check(e.expect);
        out += &format!(
            "{:<16} {:<5} {}\n",
            e.id,
            if f.is_empty() { "ok" } else { "FAIL" },
            e.title
        );
        failures.extend(f);
    }
    if failures.is_empty() {
        out += "selftest: every expectation holds\n";
        Ok(out)
    } else {
        let _ = std::io::stdout().write_all(out.as_bytes());
        Err(LabError::Expectation { failures })
    }
}

/// Every scenario file is run even when an earlier one is bad: the good
/// ones' reports are printed, then every error.
fn run_scenarios(files: &[std::path::PathBuf], format: Format) -> LabResult<String> {
    let mut out = String::new();
    let mut failures = Vec::new();
    let mut errors = Vec::new();
    for f in files {
        let r = match run_scenario(f) {
            Ok(r) => r,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        out += &report::scenario_run(&r, format);
        failures.extend(r.failures.iter().map(|l| format!("{}: {l}", f.display())));
    }
    if !failures.is_empty() {
        errors.push(LabError::Expectation { failures });
    }
    match LabError::several(errors) {
        None => Ok(out),
        Some(e) => {
            let _ = std::io::stdout().write_all(out.as_bytes());
            Err(e)
        }
    }
}

fn run_scenario(f: &std::path::Path) -> LabResult<crate::scenario::RunReport> {
    let text = std::fs::read_to_string(f).map_err(|e| LabError::io("reading a scenario", f, e))?;
    if crate::memory::scenario::is_memory_scenario(&text) {
        let (counters, failures) = crate::memory::scenario::run_scenario_file(f)?;
        let name = f
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(crate::scenario::RunReport {
            file: f.to_path_buf(),
            name,
            cells: vec![("store".to_string(), counters)],
            failures,
        })
    } else {
        crate::scenario::run_file(f)
    }
}

fn hunt(
    break_id: Option<String>,
    profile: String,
    sets: Vec<String>,
    path_len: usize,
    seed: u64,
    tries: usize,
    out: Option<std::path::PathBuf>,
) -> LabResult<String> {
    use crate::compact::experiments::sides;
    use crate::scenario::{Scenario, SCHEMA};
    let (name, base_profile, base_sets, broken_sets): (String, String, Vec<String>, Vec<String>) =
        match &break_id {
            Some(id) => {
                let s = sides(id).ok_or_else(|| {
                    let mem = registry::find(id).is_ok();
                    LabError::usage(
                        format!(
                            "{id:?} has no compaction sides to hunt{}",
                            if mem { " (a memory experiment)" } else { "" }
                        ),
                        "hunt one of D2, D3, D6, G1, A, B, R1, or give --profile and --set",
                    )
                })?;
                (
                    format!("hunt-{}", id.to_ascii_uppercase()),
                    s.profile.to_string(),
                    s.baseline.iter().map(|x| x.to_string()).collect(),
                    s.broken.iter().map(|x| x.to_string()).collect(),
                )
            }
            None if sets.is_empty() => {
                return Err(LabError::usage(
                    "nothing to hunt",
                    "give --break ID or one or more --set key=value",
                ))
            }
            None => {
                let tag: Vec<String> = sets.iter().map(|s| s.replace('=', "-")).collect();
                (
                    format!("hunt-{profile}-{}", tag.join("-")),
                    profile.clone(),
                    Vec::new(),
                    sets.clone(),
                )
            }
        };
    let mut baseline = config::profile(&base_profile)?.config;
    for s in &base_sets {
        baseline.apply_override(s)?;
    }
    let mut broken = config::profile(&base_profile)?.config;
    for s in &broken_sets {
        broken.apply_override(s)?;
    }
    let Some(rounds) = crate::compact::hunt::hunt(&baseline, &broken, path_len, seed, tries)?
    else {
        return Ok(format!(
            "no counterexample in {tries} conversations (seed {seed}, path_len={path_len}): \
             the intact and broken sides agree on every invariant tried\n"
        ));
    };
    let script = rounds.script();
    let o = probe::run(&broken, &script, Some(path_len))?;
    let label = format!("path_len={path_len}");
    let mut set = std::collections::BTreeMap::new();
    for s in &broken_sets {
        let (k, v) = s.split_once('=').expect("validated above");
        set.insert(
            k.to_string(),
            serde_json::from_str(v).unwrap_or(serde_json::Value::String(v.to_string())),
        );
    }
    let sc = Scenario {
        schema: SCHEMA.to_string(),
        name: name.clone(),
        description: format!(
            "Minimal counterexample found by `lab hunt` (seed {seed}): the broken side violates an invariant, \
             the intact side ({base_profile}{}) does not.",
            if base_sets.is_empty() { String::new() } else { format!(" with {}", base_sets.join(", ")) }
        ),
        profile: base_profile,
        set,
        path_len: vec![path_len],
        summarizer: Default::default(),
        script,
        expect: Scenario::pin(&[(label, o.counters.clone())]),
    };
    let path =
        out.unwrap_or_else(|| std::path::PathBuf::from(format!("scenarios/hunt/{name}.json")));
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| LabError::io("creating the output dir", dir, e))?;
    }
    crate::scenario::write_file(&path, &sc)?;
    let sizes: Vec<String> = rounds.0.iter().map(|r| format!("{r:?}")).collect();
    Ok(format!(
        "counterexample: {} rounds, result sizes {}\n{}wrote {} (reproduce: lab run {})\n",
        rounds.0.len(),
        sizes.join(" "),
        report::counters(&name, &o.counters, Format::Table),
        path.display(),
        path.display()
    ))
}
