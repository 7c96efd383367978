//! The `lab` command line: argument types and dispatch, no experiment logic.

use clap::{Args, Parser, Subcommand};

use crate::commands;
use crate::compact::{config, probe};
use crate::error::{LabError, LabResult};
use crate::experiments;
use crate::registry::{self, RunOptions};
use crate::render::Format;
use crate::report;

pub use crate::commands::readme::{
    policies_block, readme_block, splice_readme, POLICIES_BEGIN, POLICIES_END, README_BEGIN,
    README_END,
};
pub use crate::commands::schema::{SchemaFn, SCHEMAS};

/// ctxlab: reproducible experiments on how an agent harness compacts context and keeps memory.
#[derive(Debug, Parser)]
#[command(name = "lab", version)]
pub struct Cli {
    /// Run one break experiment (same as `lab break ID`); `all` runs every row.
    #[arg(long = "break", value_name = "ID")]
    pub break_id: Option<String>,
    /// Options for `--break`.
    #[command(flatten)]
    pub run: RunArgs,
    /// Storage of every run: `mem` (virtual paths, the default) or `disk` (real files under
    /// TMPDIR). Before or after the command (`lab --fs disk break D6`, `lab break D6 --fs disk`).
    #[arg(long, global = true, value_name = "mem|disk", default_value = "mem", value_parser = parse_backend)]
    pub fs: crate::storage::Backend,
    /// No progress on stderr. Long commands otherwise draw a bar on a
    /// terminal and print one line every few seconds off one (interval:
    /// CTXLAB_PROGRESS_SECS, default 5).
    #[arg(long, global = true)]
    pub quiet: bool,
    /// The subcommand.
    #[command(subcommand)]
    pub command: Option<Command>,
}

impl Cli {
    /// Parse the process arguments with [`Cli::try_parse_checked`], exiting as
    /// clap does (status 2) on an error.
    pub fn parse_checked() -> Cli {
        Self::try_parse_checked(std::env::args_os()).unwrap_or_else(|e| e.exit())
    }

    /// Parse `args`. `--fs` is global, so it may come before or after the
    /// command; the options of `--break` (`--break`, `--path-len`, `--format`
    /// before the command) are refused together with a command, which would
    /// ignore them. Checked here rather than by clap's
    /// `args_conflicts_with_subcommands`, which also refuses a global flag.
    pub fn try_parse_checked<I, T>(args: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        use clap::{CommandFactory, FromArgMatches};
        let mut cmd = Cli::command();
        let m = cmd.try_get_matches_from_mut(args)?;
        if m.subcommand().is_some() {
            for (id, flag) in [
                ("break_id", "--break"),
                ("path_len", "--path-len"),
                ("format", "--format"),
            ] {
                if m.value_source(id) == Some(clap::parser::ValueSource::CommandLine) {
                    return Err(cmd.error(
                        clap::error::ErrorKind::ArgumentConflict,
                        format!(
                            "{flag} before a command belongs to `lab --break ID` and would be \
                             ignored; give it after the command (`lab break D6 {flag} ...`)"
                        ),
                    ));
                }
            }
        }
        Cli::from_arg_matches(&m).map_err(|e| e.format(&mut cmd))
    }
}

fn parse_backend(s: &str) -> Result<crate::storage::Backend, String> {
    crate::storage::Backend::parse(s)
        .ok_or_else(|| format!("{s:?} is not a backend: use mem or disk"))
}

/// Options shared by experiment commands.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Exact lengths of the embedded persistence path: N, A..B or A..B:STEP, comma separated.
    #[arg(long, default_value_t = crate::sweep::PathLens(vec![registry::SHORT_PATH, registry::LONG_PATH]))]
    pub path_len: crate::sweep::PathLens,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

impl RunArgs {
    fn options(&self) -> RunOptions {
        RunOptions {
            path_lens: self.path_len.0.clone(),
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
    /// List every context-management policy with its upstream source and constants.
    Policies {
        /// Output format (JSON: an array of objects with `name`, `source`, `constants`).
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// List every constant and rule of the memory designs (store profiles)
    /// with its source, or marked as an assumption, a stand-in or a lab parameter.
    MemoryDesigns {
        /// Output format (JSON: an array of objects with `profile`, `name`, `says`, `basis`).
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// Multi-pass drift: what survives k successive compactions under
    /// regenerated summaries, anchored summaries and masking.
    Drift {
        /// Compaction passes.
        #[arg(long, default_value_t = 10)]
        passes: usize,
        /// Summariser capacity in chars.
        #[arg(long, default_value_t = 360)]
        capacity: usize,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// Long horizons: every policy over one generated session of millions
    /// of tokens: compactions, freed fraction per compaction, stalls, re-fetch growth.
    Horizon(crate::horizon::HorizonArgs),
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
        /// Transcript files, or corpora of them: a directory (read
        /// recursively; an opencode storage directory, its session files),
        /// a quoted glob, a tar archive (.tar, .tar.xz, .tar.gz) or a Parquet
        /// dataset file (one session per row), each summarised in one row.
        #[arg(required = true)]
        files: Vec<std::path::PathBuf>,
        /// Treat every damage diagnostic as an error.
        #[arg(long)]
        strict: bool,
        #[arg(long, value_name = "FORMAT", help = crate::import::format_list::FORMAT_IN_HELP)]
        format_in: Option<crate::import::TranscriptFormat>,
        /// Also write every session's normalised messages to OUT (JSON
        /// Lines, one message per line with its session, index and source
        /// line; `lab schema export`).
        #[arg(long, value_name = "OUT")]
        export: Option<std::path::PathBuf>,
        /// The shape --export writes: the lab's lines (`ctxlab`), or ATIF
        /// trajectories (`atif`: ATIF-v1.8, one session to OUT, several to
        /// OUT as a directory, recorded usage on each agent step).
        #[arg(long, value_enum, default_value_t, requires = "export")]
        to: crate::replay::dump::ExportTo,
        /// Print every session's demands instead: each point where a later
        /// model call uses earlier content, with its source message.
        #[arg(long, conflicts_with = "export")]
        demands: bool,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// Replay real agent transcripts (Claude Code .jsonl / chat.json, Anthropic
    /// Messages JSON, OpenAI chat / SWE-agent .traj) through compaction profiles.
    Replay(Box<crate::replay::ReplayArgs>),
    /// Calibrate the closed loop: at every real compaction of the transcripts
    /// under DIR, the re-fetches the product's port predicts (closed-loop)
    /// against the demands the recorded agent used in the 10 calls after it.
    Calibrate {
        /// A directory of transcripts, walked recursively (archives are not
        /// walked; files that are not transcripts are listed as not read).
        dir: std::path::PathBuf,
        /// Output format (JSON: `lab schema calibration`).
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
        #[arg(long, default_value_t = registry::LONG_PATH, value_parser = crate::storage::root::parse_path_len)]
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
        /// Hunt a generated session this policy damages (lost, pointer lost,
        /// dangling pointer, invalid request); the shrunk session is written
        /// to --out as a message file for `lab replay FILE --policy NAME`.
        #[arg(long, conflicts_with_all = ["break_id", "sets"], requires = "out")]
        policy: Option<String>,
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
    /// Run the memory-tool rows (traversal, symlinks, edits, full disk)
    /// against ctxlab's reference and any implementation you bring; exit 1
    /// when a row does not hold.
    Memcheck {
        /// Built-in implementations: `reference` (ctxlab's), `naive`,
        /// `cached`, `prefix`, `unresolved` and `follow` (deliberately broken
        /// ones). Default: `reference` unless
        /// `--exec` is given.
        #[arg(long = "builtin", value_name = "NAME")]
        builtins: Vec<String>,
        /// An implementation as a command speaking ctxlab.memtool/1 on stdin
        /// and stdout (`sh -c CMD`, started fresh in each row's sandbox).
        #[arg(long = "exec", value_name = "CMD")]
        execs: Vec<String>,
        /// Seconds an external implementation may take per command.
        #[arg(long, default_value_t = 10)]
        timeout: u64,
        /// Only these rows (ids as `lab memcheck` prints them).
        #[arg(long = "row", value_name = "ID")]
        only: Vec<String>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// Serve a built-in memory-tool implementation over ctxlab.memtool/1 on
    /// stdin and stdout (`lab memcheck --exec "lab memtool-serve reference"`).
    MemtoolServe {
        /// `reference`, `naive`, `cached`, `prefix`, `unresolved` or `follow`.
        name: String,
    },
    /// Print (or `--write` into a guide chapter) the generated experiment and policy tables.
    Readme {
        /// Markdown file (docs/src/experiments.md, docs/src/policy-table.md) whose marked blocks are replaced in place.
        #[arg(long)]
        write: Option<std::path::PathBuf>,
    },
    /// Run policies over sessions against the expectations of a check file
    /// (exit 1 on a miss, naming session, policy, call and metric): for a
    /// harness's CI.
    Check(crate::ci_gate::CheckArgs),
    /// Print the JSON Schema of a command's JSON output (`lab schema` lists them).
    Schema {
        /// Schema name (e.g. replay-policies); none lists the names.
        name: Option<String>,
    },
    /// Factorial sweep of switches × path lengths × seeds, with thresholds.
    Sweep(crate::sweep::SweepArgs),
    /// Regenerate (`--out DIR`) or check (`--check DIR`) the generated reports.
    Reports(crate::reports::ReportsArgs),
}

/// Run the command line; returns what to print on stdout.
pub fn run(cli: Cli) -> LabResult<String> {
    // `--fs` is an option of this run: every root the command opens on
    // this thread, and every worker it spawns, takes it from this scope.
    crate::progress::set_quiet(cli.quiet);
    crate::storage::root::with_backend(cli.fs, || dispatch(cli))
}

fn dispatch(cli: Cli) -> LabResult<String> {
    match cli.command {
        None => match cli.break_id {
            Some(id) => commands::rows::run_breaks(&[id], &cli.run.options(), cli.run.format),
            None => Err(LabError::usage(
                "no command given",
                "run `lab --help`, `lab list` or `lab --break D6`",
            )),
        },
        Some(Command::Break { ids, run }) => {
            commands::rows::run_breaks(&ids, &run.options(), run.format)
        }
        Some(Command::List { format }) => Ok(report::list(&experiments::all(), format)),
        Some(Command::Policies { format }) => commands::rows::policies(format),
        Some(Command::MemoryDesigns { format }) => {
            Ok(crate::memory::profiles::repro::listing(format))
        }
        Some(Command::Drift {
            passes,
            capacity,
            format,
        }) => commands::rows::drift(passes, capacity, format),
        Some(Command::Horizon(args)) => crate::horizon::command(&args),
        Some(Command::Profiles { format }) => Ok(report::profiles(&config::profiles(), format)),
        Some(Command::Probe { profile, sets, run }) => {
            let cells = probe::probe_cells(&profile, &sets, &run.path_len.0)?;
            Ok(report::probe_cells(&cells, run.format))
        }
        Some(Command::Selftest) => commands::rows::selftest(),
        Some(Command::Import {
            files,
            strict,
            format_in,
            demands: true,
            format,
            ..
        }) => crate::import::demands::command(
            &files,
            &crate::import::ImportOptions::from_flags(strict, format_in),
            format,
        ),
        Some(Command::Import {
            files,
            strict,
            format_in,
            export: Some(out),
            to,
            ..
        }) => {
            let options = crate::import::ImportOptions::from_flags(strict, format_in);
            match to {
                crate::replay::dump::ExportTo::Ctxlab => {
                    crate::replay::dump::export_files(&files, &options, &out)
                }
                crate::replay::dump::ExportTo::Atif => {
                    crate::replay::dump::export_atif(&files, &options, &out)
                }
            }
        }
        Some(Command::Import {
            files,
            strict,
            format_in,
            export: None,
            format,
            ..
        }) => crate::import::command(
            &files,
            &crate::import::ImportOptions::from_flags(strict, format_in),
            format,
        ),
        Some(Command::Replay(args)) => crate::replay::run(*args),
        Some(Command::Calibrate { dir, format }) => crate::replay::calibrate::command(&dir, format),
        Some(Command::Hunt {
            seed,
            tries,
            out,
            policy: Some(policy),
            ..
        }) => commands::hunt::hunt_policy(&policy, seed, tries, out),
        Some(Command::Hunt {
            break_id,
            profile,
            sets,
            path_len,
            seed,
            tries,
            out,
            policy: None,
        }) => commands::hunt::hunt(break_id, profile, sets, path_len, seed, tries, out),
        Some(Command::Run { files, format }) => commands::scenarios::run_scenarios(&files, format),
        Some(Command::Memcheck {
            builtins,
            execs,
            timeout,
            only,
            format,
        }) => commands::memcheck::memcheck(&builtins, &execs, timeout, &only, format),
        Some(Command::MemtoolServe { name }) => commands::memcheck::memtool_serve(&name),
        Some(Command::Readme { write: None }) => Ok(readme_block() + "\n"),
        Some(Command::Readme { write: Some(path) }) => commands::readme::write_readme(&path),
        Some(Command::Schema { name }) => commands::schema::schema(name.as_deref()),
        Some(Command::Check(args)) => crate::ci_gate::command(&args),
        Some(Command::Sweep(args)) => crate::sweep::command(&args),
        Some(Command::Reports(args)) => {
            if let Some(dir) = &args.out {
                crate::input::output_parent_exists(dir, "--out")?;
            }
            let _busy = crate::progress::Progress::spinner("reports: running the sweeps");
            crate::reports::reports_command(&args)
        }
    }
}
