//! The `lab` command line: argument types and dispatch, no experiment logic.

use std::io::Write;

use clap::{Args, Parser, Subcommand};

use crate::compact::{config, probe};
use crate::error::{LabError, LabResult};
use crate::experiments;
use crate::registry::{self, RunOptions};
use crate::render::{self, Format};
use crate::report;

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

/// Markers around the generated experiment table (docs/src/experiments.md).
pub const README_BEGIN: &str = "<!-- registry:begin (generated by `make readme`) -->";
/// End marker.
pub const README_END: &str = "<!-- registry:end -->";

/// The experiment-table block of the guide: the registry as Markdown.
pub fn readme_block() -> String {
    format!(
        "{README_BEGIN}\n{}{README_END}",
        report::list(&experiments::all(), Format::Markdown)
    )
}

/// Markers around the generated policy table (docs/src/policy-table.md).
pub const POLICIES_BEGIN: &str = "<!-- policies:begin (generated by `make readme`) -->";
/// End marker.
pub const POLICIES_END: &str = "<!-- policies:end -->";

/// The policy-table block of the guide: every policy with its source and deliberate differences.
pub fn policies_block() -> LabResult<String> {
    let mut infos = Vec::new();
    for name in crate::zoo::list::names() {
        infos.push(crate::zoo::list::make(name)?.info());
    }
    Ok(format!(
        "{POLICIES_BEGIN}\n{}{POLICIES_END}",
        crate::policy::render::readme_table(&infos)
    ))
}

/// Replace the marked blocks of `text` (the experiment table, and the policy
/// table when its markers are there); errors name the file and the missing marker.
pub fn splice_readme(path: &std::path::Path, text: &str) -> LabResult<String> {
    // The guide is a book of chapters (`docs/src/`): each table lives in its
    // own chapter, so either block may be absent, but a file with neither
    // is a wrong path, not a file to leave as it is.
    if !text.contains(README_BEGIN) && !text.contains(POLICIES_BEGIN) {
        return Err(LabError::Input {
            file: path.to_path_buf(),
            line: 0,
            column: 0,
            message: format!("neither {README_BEGIN:?} nor {POLICIES_BEGIN:?} is in the file"),
            fix: "write into docs/src/experiments.md or docs/src/policy-table.md (`make readme` does both)".into(),
        });
    }
    let mut text = text.to_string();
    if text.contains(README_BEGIN) {
        text = splice_block(path, &text, README_BEGIN, README_END, &readme_block())?;
    }
    if text.contains(POLICIES_BEGIN) {
        text = splice_block(
            path,
            &text,
            POLICIES_BEGIN,
            POLICIES_END,
            &policies_block()?,
        )?;
    }
    Ok(text)
}

fn splice_block(
    path: &std::path::Path,
    text: &str,
    begin: &str,
    end_marker: &str,
    block: &str,
) -> LabResult<String> {
    let missing = |marker: &str| LabError::Input {
        file: path.to_path_buf(),
        line: 0,
        column: 0,
        message: format!("marker {marker:?} not found"),
        fix: format!("put {begin:?} and {end_marker:?} on their own lines where the table goes"),
    };
    let start = text.find(begin).ok_or_else(|| missing(begin))?;
    let end = text[start..]
        .find(end_marker)
        .ok_or_else(|| missing(end_marker))?
        + start
        + end_marker.len();
    Ok(format!("{}{}{}", &text[..start], block, &text[end..]))
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
            Some(id) => run_breaks(&[id], &cli.run),
            None => Err(LabError::usage(
                "no command given",
                "run `lab --help`, `lab list` or `lab --break D6`",
            )),
        },
        Some(Command::Break { ids, run }) => run_breaks(&ids, &run),
        Some(Command::List { format }) => Ok(report::list(&experiments::all(), format)),
        Some(Command::Policies { format }) => policies(format),
        Some(Command::MemoryDesigns { format }) => {
            Ok(crate::memory::profiles::repro::listing(format))
        }
        Some(Command::Drift {
            passes,
            capacity,
            format,
        }) => drift(passes, capacity, format),
        Some(Command::Horizon(args)) => crate::horizon::command(&args),
        Some(Command::Profiles { format }) => Ok(report::profiles(&config::profiles(), format)),
        Some(Command::Probe { profile, sets, run }) => {
            let cells = probe::probe_cells(&profile, &sets, &run.path_len.0)?;
            Ok(report::probe_cells(&cells, run.format))
        }
        Some(Command::Selftest) => selftest(),
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
        }) => hunt_policy(&policy, seed, tries, out),
        Some(Command::Hunt {
            break_id,
            profile,
            sets,
            path_len,
            seed,
            tries,
            out,
            policy: None,
        }) => hunt(break_id, profile, sets, path_len, seed, tries, out),
        Some(Command::Run { files, format }) => run_scenarios(&files, format),
        Some(Command::Memcheck {
            builtins,
            execs,
            timeout,
            only,
            format,
        }) => memcheck(&builtins, &execs, timeout, &only, format),
        Some(Command::MemtoolServe { name }) => memtool_serve(&name),
        Some(Command::Readme { write: None }) => Ok(readme_block() + "\n"),
        Some(Command::Readme { write: Some(path) }) => write_readme(&path),
        Some(Command::Schema { name }) => schema(name.as_deref()),
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

/// `lab policies`: every policy's card.
fn policies(format: Format) -> LabResult<String> {
    let mut listed = Vec::new();
    for name in crate::zoo::list::names() {
        let p = crate::zoo::list::make(name)?;
        listed.push(crate::policy::render::Listed::new(
            p.info(),
            &p.variant_keys(),
        ));
    }
    Ok(crate::policy::render::policies(&listed, format))
}

/// `lab memcheck`: every memory-tool row against each implementation.
fn memcheck(
    builtins: &[String],
    execs: &[String],
    timeout: u64,
    only: &[String],
    format: Format,
) -> LabResult<String> {
    use crate::memory::tool::{external::External, rows, MemoryTool};
    let chosen = rows::chosen(only)?;
    let mut names: Vec<String> = builtins.to_vec();
    if names.is_empty() && execs.is_empty() {
        names.push("reference".into());
    }
    let mut cards = Vec::new();
    for name in &names {
        let make = rows::builtin(name).ok_or_else(|| {
            LabError::usage(
                format!("unknown memory-tool implementation {name:?}"),
                "use --builtin reference, naive, cached, prefix, unresolved or follow, or --exec CMD",
            )
        })?;
        let select = format!("--builtin {name}");
        cards.push(rows::card(name, &select, &chosen, make.as_ref(), true)?);
    }
    let wait = std::time::Duration::from_secs(timeout.max(1));
    for cmd in execs {
        crate::memory::tool::external::preflight(cmd, wait)?;
        let make = |_: crate::storage::Shared, root: &std::path::Path| {
            External::start(cmd, root, wait).map(|t| Box::new(t) as Box<dyn MemoryTool>)
        };
        let select = format!("--exec '{}'", cmd.replace('\'', "'\\''"));
        cards.push(rows::card(cmd, &select, &chosen, &make, false)?);
    }
    let out = rows::render(&cards, format);
    if rows::all_held(&cards) {
        return Ok(out);
    }
    let _ = std::io::stdout().write_all(out.as_bytes());
    Err(LabError::Expectation {
        failures: vec!["a memory-tool row did not hold (see the lines under the table)".into()],
    })
}

/// `lab memtool-serve NAME`: a built-in implementation over the protocol.
fn memtool_serve(name: &str) -> LabResult<String> {
    let make = crate::memory::tool::rows::builtin(name).ok_or_else(|| {
        LabError::usage(
            format!("unknown memory-tool implementation {name:?}"),
            "use reference, naive, cached, prefix, unresolved or follow",
        )
    })?;
    let stdin = std::io::stdin().lock();
    crate::memory::tool::external::serve(make.as_ref(), stdin, std::io::stdout().lock())
        .map_err(|e| LabError::io("serving the memory tool", "<stdout>", e))?;
    Ok(String::new())
}

/// `lab drift`: every summarising strategy over repeated passes.
fn drift(passes: usize, capacity: usize, format: Format) -> LabResult<String> {
    if !(1..=1000).contains(&passes) || !(1..=10_000_000).contains(&capacity) {
        return Err(LabError::usage(
            format!("--passes {passes} / --capacity {capacity} out of range"),
            "use --passes 1..=1000 and --capacity 1..=10000000",
        ));
    }
    let curves: Vec<_> = crate::retention::drift::Strategy::ALL
        .iter()
        .map(|s| crate::retention::drift::run(*s, passes, capacity))
        .collect();
    Ok(crate::retention::render::drift(&curves, format))
}

/// A schema generator.
pub type SchemaFn = fn() -> serde_json::Value;

/// Every JSON output with a schema: its name and generator. The checked-in
/// copies live in `lab/schemas/NAME.schema.json` (`make schemas`).
pub const SCHEMAS: &[(&str, SchemaFn)] = &[
    ("replay-policies", crate::replay::policies::schema),
    (
        "replay-per-session",
        crate::replay::stream::per_session_schema,
    ),
    ("dump", crate::replay::dump::dump_schema),
    ("horizon", crate::horizon::schema),
    ("calibration", crate::replay::calibrate::schema),
    ("export", crate::replay::dump::export_schema),
    ("demands", crate::import::demands::schema),
    (
        "memtool-request",
        crate::memory::tool::external::request_schema,
    ),
    (
        "memtool-answer",
        crate::memory::tool::external::answer_schema,
    ),
    (
        "policy-request",
        crate::policy::exec::protocol::request_schema,
    ),
    ("policy-hello", crate::policy::exec::protocol::hello_schema),
    (
        "policy-answer",
        crate::policy::exec::protocol::answer_schema,
    ),
];

/// `lab schema [NAME]`: the schema, pretty-printed, or the list of names.
fn schema(name: Option<&str>) -> LabResult<String> {
    let names = || {
        SCHEMAS
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Some(name) = name else {
        return Ok(names() + "\n");
    };
    match SCHEMAS.iter().find(|(n, _)| *n == name) {
        Some((_, make)) => Ok(render::json(&make())),
        None => Err(LabError::usage(
            format!("no schema named {name:?}"),
            format!("use one of: {}", names()),
        )),
    }
}

/// `lab readme --write PATH`: splice the generated tables into the file (a chapter of docs/src/).
fn write_readme(path: &std::path::Path) -> LabResult<String> {
    let text = std::fs::read_to_string(path).map_err(|e| LabError::io("reading", path, e))?;
    let new = splice_readme(path, &text)?;
    if new == text {
        return Ok(format!("unchanged {}\n", path.display()));
    }
    // Temp file + rename: an interrupted write never leaves half a file.
    crate::storage::root::cleanup::write_replacing(path, new.as_bytes())
        .map_err(|e| LabError::io("replacing", path, e))?;
    Ok(format!("updated {}\n", path.display()))
}

fn run_breaks(ids: &[String], args: &RunArgs) -> LabResult<String> {
    let rows = if ids.iter().any(|i| i == "all") {
        experiments::all()
    } else {
        ids.iter()
            .map(|i| experiments::find(i))
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
    for e in experiments::all() {
        let v = (e.run)(&opts)?;
        let mut f = v.check(e.expect);
        // A row whose run reports another row's id would check the wrong expectations.
        if v.id != e.id {
            f.push(format!("{}: the verdict names row {}", e.id, v.id));
        }
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
    // JSON is one document: an array of every file's report.
    let mut reports = Vec::new();
    let mut errors = Vec::new();
    for f in files {
        let r = match run_scenario(f) {
            Ok(r) => r,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        failures.extend(r.failures.iter().map(|l| format!("{}: {l}", f.display())));
        if format == Format::Json {
            reports.push(r);
        } else {
            out += &report::scenario_run(&r, format);
        }
    }
    if format == Format::Json {
        out = serde_json::to_string_pretty(&reports).expect("reports serialise") + "\n";
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
    let text = crate::input::read_text(f, "a scenario")?;
    if crate::memory::scenario::is_memory_scenario(&text) {
        let backend = crate::storage::root::current_backend();
        let (counters, failures) = crate::memory::scenario::run_scenario_text(f, &text, backend)?;
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
        let (sc, config) = crate::scenario::Scenario::parse(f, &text)?;
        sc.run(f, &config)
    }
}

/// `lab hunt --policy NAME --out FILE`: the shrunk damaging session, written
/// as a JSON message list.
fn hunt_policy(
    policy: &str,
    seed: u64,
    tries: usize,
    out: Option<std::path::PathBuf>,
) -> LabResult<String> {
    let out =
        out.ok_or_else(|| LabError::usage("--policy needs --out FILE", "add --out hunt.json"))?;
    crate::input::output_parent_exists(&out, "--out")?;
    let Some((rounds, row)) = crate::sweep::policies::hunt(policy, seed, tries)? else {
        return Ok(format!(
            "hunt: no damaging session for {policy} in seeds {seed}..{}\n",
            seed.saturating_add(tries as u64)
        ));
    };
    let messages = crate::sweep::policies::session(&rounds);
    let text = serde_json::to_string_pretty(&messages).expect("messages serialise") + "\n";
    crate::storage::root::cleanup::write_replacing(&out, text.as_bytes())
        .map_err(|e| LabError::io("writing the session", &out, e))?;
    Ok(format!(
        "hunt: {policy} damages seed {} shrunk to {} rounds: lost {}, pointer lost {}, dangling {}, invalid requests {}\nwrote {} (replay: lab replay {} --policy {policy})\n",
        row.seed,
        row.rounds,
        row.lost_forever,
        row.pointer_lost,
        row.dangling_pointers,
        row.invalid_requests,
        out.display(),
        out.display()
    ))
}

/// What `lab hunt` searches: a name, the intact side's profile and
/// overrides, and the broken side's overrides on the same profile.
struct HuntTarget {
    name: String,
    profile: String,
    baseline_sets: Vec<String>,
    broken_sets: Vec<String>,
}

/// The sides of a registry row (`--break ID`), or the profile with `--set`s.
fn hunt_target(
    break_id: Option<String>,
    profile: String,
    sets: Vec<String>,
) -> LabResult<HuntTarget> {
    match &break_id {
        Some(id) => {
            let s = crate::compact::experiments::sides(id).ok_or_else(|| {
                let mem = experiments::find(id).is_ok();
                LabError::usage(
                    format!(
                        "{id:?} has no compaction sides to hunt{}",
                        if mem { " (a memory experiment)" } else { "" }
                    ),
                    "hunt one of D2, D3, D6, G1, A, B, R1, or give --profile and --set",
                )
            })?;
            Ok(HuntTarget {
                name: format!("hunt-{}", id.to_ascii_uppercase()),
                profile: s.profile.to_string(),
                baseline_sets: s.baseline.iter().map(|x| x.to_string()).collect(),
                broken_sets: s.broken.iter().map(|x| x.to_string()).collect(),
            })
        }
        None if sets.is_empty() => Err(LabError::usage(
            "nothing to hunt",
            "give --break ID or one or more --set key=value",
        )),
        None => {
            let tag: Vec<String> = sets.iter().map(|s| s.replace('=', "-")).collect();
            Ok(HuntTarget {
                name: format!("hunt-{profile}-{}", tag.join("-")),
                profile,
                baseline_sets: Vec::new(),
                broken_sets: sets,
            })
        }
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
    let t = hunt_target(break_id, profile, sets)?;
    let mut baseline = config::profile(&t.profile)?.config;
    baseline.apply_overrides(&t.baseline_sets)?;
    let mut broken = config::profile(&t.profile)?.config;
    broken.apply_overrides(&t.broken_sets)?;
    let Some(rounds) = crate::compact::hunt::hunt(&baseline, &broken, path_len, seed, tries)?
    else {
        return Ok(format!(
            "no counterexample in {tries} conversations (seed {seed}, path_len={path_len}): \
             the intact and broken sides agree on every invariant tried\n"
        ));
    };
    let script = rounds.script();
    let o = probe::run(&broken, &script, Some(path_len))?;
    if let Some(path) = &out {
        crate::input::output_parent_exists(path, "--out")?;
    }
    let path =
        out.unwrap_or_else(|| std::path::PathBuf::from(format!("scenarios/hunt/{}.json", t.name)));
    // Only the default location's directory is created.
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| LabError::io("creating the output dir", dir, e))?;
    }
    let name = t.name.clone();
    crate::scenario::write_file(
        &path,
        &hunt_scenario(t, seed, path_len, script, &o.counters),
    )?;
    let sizes: Vec<String> = rounds.0.iter().map(|r| format!("{r:?}")).collect();
    Ok(format!(
        "counterexample: {}, result sizes {}\n{}wrote {} (reproduce: lab run {})\n",
        render::count(rounds.0.len(), "round"),
        sizes.join(" "),
        report::counters(&name, &o.counters, Format::Table),
        path.display(),
        path.display()
    ))
}

/// The scenario file of a hunted counterexample, pinned to what the broken
/// side showed.
fn hunt_scenario(
    t: HuntTarget,
    seed: u64,
    path_len: usize,
    script: crate::compact::session::Script,
    counters: &crate::counters::Counters,
) -> crate::scenario::Scenario {
    use crate::scenario::{Scenario, SCHEMA};
    let mut set = std::collections::BTreeMap::new();
    for s in &t.broken_sets {
        // Overrides were validated by apply_overrides: each has a `=`.
        let (k, v) = s.split_once('=').unwrap_or((s, ""));
        set.insert(
            k.to_string(),
            serde_json::from_str(v).unwrap_or(serde_json::Value::String(v.to_string())),
        );
    }
    let with = if t.baseline_sets.is_empty() {
        String::new()
    } else {
        format!(" with {}", t.baseline_sets.join(", "))
    };
    Scenario {
        schema: SCHEMA.to_string(),
        description: format!(
            "Minimal counterexample found by `lab hunt` (seed {seed}): the broken side violates an invariant, \
             the intact side ({}{with}) does not.",
            t.profile
        ),
        name: t.name,
        profile: t.profile,
        set,
        path_len: vec![path_len],
        summarizer: Default::default(),
        script,
        expect: Scenario::pin(&[(format!("path_len={path_len}"), counters.clone())]),
    }
}
