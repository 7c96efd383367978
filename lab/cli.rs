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
            "{:<4} {:<6} {}\n",
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
