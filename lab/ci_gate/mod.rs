//! `lab check FILE`: policies over sessions against declared expectations,
//! for a harness's CI.
//!
//! A check file ([`mod@file`]) names sessions, policies and expectations
//! (`invalid_requests == 0`, `dollars <= 1.2 * none`). Every session is
//! replayed under every policy named (and every policy an expectation
//! compares with) through the policy engine, with the cost and retention
//! observers when an expectation needs them. Each expectation is judged on
//! each session × policy ([`CheckVerdict`]). All hold: the table, exit 0. A miss:
//! exit 1, one line per miss naming the session, the policy, the first call
//! concerned where the metric has one, the metric, what it was and what was
//! expected. `--junit FILE` writes the verdicts as JUnit XML ([`junit`]).

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{LabError, LabResult};
use crate::render::Format;
use crate::replay::policies::{Compared, Measure, Pricing};

pub mod file;
pub mod gate;
pub mod junit;
pub mod metrics;

pub use file::{Bound, CheckFile, Expect};

pub use metrics::METRICS;

fn needs_cost(e: &Expect) -> bool {
    matches!(e.metric.as_str(), "dollars" | "breaks")
}

fn needs_retention(e: &Expect) -> bool {
    matches!(e.metric.as_str(), "artifact_recall" | "refetch_calls")
}

/// `metric` of one run.
pub fn metric(c: &Compared, metric: &str) -> Option<f64> {
    let f = &c.run.findings;
    let n = |v: u64| Some(v as f64);
    match metric {
        "invalid_requests" => n(c.run.invalid_requests),
        "lost_forever" => n(f.lost_forever.count),
        "pointer_lost" => n(f.pointer_lost.count),
        "dangling_pointers" => n(f.dangling_pointers.count),
        "orphans" => n(f.orphans.count),
        "ended_by_error" => n(c.run.ended_by_error.is_some() as u64),
        "calls" => n(c.run.calls.len() as u64),
        "peak_chars" => n(c.run.peak_chars() as u64),
        "peak_tokens" => n(c.run.calls.iter().map(|k| k.tokens).max().unwrap_or(0) as u64),
        "events" => n(c.run.events.len() as u64),
        "dollars" => c.cost.as_ref().map(|r| r.dollars),
        "breaks" => c.cost.as_ref().map(|r| r.breaks as f64),
        // Percent, as every other output shows it.
        "artifact_recall" => c.retention.as_ref().map(|r| r.artifact_recall),
        "refetch_calls" => c.retention.as_ref().map(|r| r.refetch_calls as f64),
        _ => None,
    }
}

/// The call a metric points at, where it has one: the first invalid
/// request, the call a failed policy ended before, the largest request, or
/// for what a policy's changes cause (losses, events, cost, retention) the
/// call before which it first changed the history.
fn first_call(c: &Compared, metric: &str) -> Option<usize> {
    let calls = &c.run.calls;
    let peak = |f: fn(&crate::policy::engine::CallRecord) -> usize| {
        (0..calls.len()).max_by_key(|&i| (f(&calls[i]), std::cmp::Reverse(i)))
    };
    match metric {
        "invalid_requests" => calls.iter().position(|k| !k.violations.is_empty()),
        "ended_by_error" => c.run.ended_by_error.as_ref().map(|_| calls.len()),
        "peak_chars" => peak(|k| k.chars),
        "peak_tokens" => peak(|k| k.tokens),
        "calls" => None,
        _ => c.run.events.first().map(|(at, _)| *at),
    }
}

/// One expectation on one session × policy.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckVerdict {
    /// The expectation as written.
    pub expect: String,
    /// The metric it reads.
    pub metric: String,
    /// Session name.
    pub session: String,
    /// Policy name.
    pub policy: String,
    /// The metric's value.
    pub got: f64,
    /// The bound it was compared with.
    pub want: f64,
    /// Whether it held.
    pub holds: bool,
    /// The first model call concerned, where the metric has one.
    pub call: Option<usize>,
}

impl CheckVerdict {
    /// One line for a miss: session, policy, call, metric, what it was
    /// and the bound, in the metric's unit.
    pub fn miss_line(&self) -> String {
        let call = self
            .call
            .map_or("whole session".to_string(), |c| format!("call {c}"));
        let unit = metrics::find(&self.metric).map_or("", |m| m.unit.name());
        format!(
            "{} under {}, {call}: {}: `{}` failed: got {}, bound {} ({unit})",
            self.session,
            self.policy,
            self.metric,
            self.expect,
            num(self.got),
            num(self.want)
        )
    }
}

fn num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        format!("{x:.4}")
    }
}

/// Arguments of `lab check`.
#[derive(Debug, clap::Args)]
#[command(after_help = metrics::help_text())]
pub struct CheckArgs {
    /// The check file (TOML: sessions, policies, expect; keys and metrics below).
    pub file: PathBuf,
    /// Also write the verdicts as JUnit XML here (replaced whole).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// `lab check FILE`: the table when every expectation holds, else the
/// misses as an error (exit 1).
pub fn command(args: &CheckArgs) -> LabResult<String> {
    if let Some(path) = &args.junit {
        crate::input::output_parent_exists(path, "--junit")?;
    }
    let check = CheckFile::read(&args.file)?;
    let outcome = run(&check)?;
    let verdicts = &outcome.verdicts;
    if let Some(path) = &args.junit {
        let xml = junit::render(&check.path, verdicts);
        crate::storage::root::cleanup::write_replacing(path, xml.as_bytes())
            .map_err(|e| LabError::io("writing the JUnit report", path, e))?;
    }
    if check.allow_damage {
        for d in &outcome.damage {
            eprintln!("warning: {d}");
        }
    }
    let mut failures = outcome.gaps.clone();
    failures.extend(
        verdicts
            .iter()
            .filter(|v| !v.holds)
            .map(CheckVerdict::miss_line),
    );
    let table = render_outcome(&outcome, args.format);
    if failures.is_empty() {
        Ok(table)
    } else {
        // The table first, so a failing CI log shows what was measured.
        use std::io::Write as _;
        let _ = std::io::stdout().write_all(table.as_bytes());
        Err(LabError::Expectation { failures })
    }
}

/// What a check found: its verdicts, the sessions they rest on, the import
/// damage, and what is missing for the check to pass on data.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// Every verdict, session by session, policy by policy.
    pub verdicts: Vec<CheckVerdict>,
    /// Every session replayed, with its model calls.
    pub sessions: Vec<gate::Session>,
    /// Import damage, one line each (a failure unless `allow_damage`).
    pub damage: Vec<String>,
    /// Why the check fails besides its misses: no sessions, too few
    /// calls, damage ([`gate::Gathered::gaps`]).
    pub gaps: Vec<String>,
}

/// Every verdict of `check`, session by session, policy by policy,
/// expectation by expectation, with what they rest on.
pub fn run(check: &CheckFile) -> LabResult<Outcome> {
    let mut names = check.policies.clone();
    for e in &check.expect {
        if let Bound::Policy { policy, .. } = &e.bound {
            if !names.contains(policy) {
                names.push(policy.clone());
            }
        }
    }
    let measure = Measure {
        retention: check.expect.iter().any(needs_retention),
        pricing: check
            .expect
            .iter()
            .any(needs_cost)
            .then(pricing)
            .transpose()?,
        tokens: check.tokens,
        anchor: check.anchor,
        ..Measure::default()
    };
    let path_len = crate::replay::profiles::DEFAULT_PATH_LEN;
    let import = crate::import::ImportOptions::default();
    let got = gate::gather(&check.sessions, &names, path_len, &import, &measure)?;
    Ok(Outcome {
        verdicts: judge(check, &got.runs),
        gaps: got.gaps(check.min_calls, check.allow_damage, &check.path),
        sessions: got.sessions,
        damage: got.damage,
    })
}

fn pricing() -> LabResult<Pricing> {
    let sheet = crate::cache::prices::sheet(crate::cache::prices::DEFAULT_SHEET)
        .ok_or_else(|| LabError::usage("the default price sheet is missing", "report this"))?
        .clone();
    Ok(Pricing {
        provider: crate::cache::provider::CacheChoice::Anthropic.provider(),
        sheet,
        prices: crate::cache::prices::table::PriceTable::builtin(),
        // Each session is priced at the model that answered it.
        by_model: true,
    })
}

/// Judge every checked run (not the runs only compared with).
fn judge(check: &CheckFile, runs: &[Compared]) -> Vec<CheckVerdict> {
    let mut out = Vec::new();
    let checked = runs.iter().filter(|c| {
        check
            .policies
            .iter()
            .any(|p| p.eq_ignore_ascii_case(&c.run.policy))
    });
    for c in checked {
        for e in &check.expect {
            let got = metric(c, &e.metric).unwrap_or(f64::NAN);
            let want = match &e.bound {
                Bound::Number(n) => *n,
                Bound::Policy { factor, policy } => runs
                    .iter()
                    .find(|o| {
                        o.run.session == c.run.session && o.run.policy.eq_ignore_ascii_case(policy)
                    })
                    .and_then(|o| metric(o, &e.metric))
                    .map_or(f64::NAN, |v| factor * v),
            };
            out.push(CheckVerdict {
                expect: e.text.clone(),
                metric: e.metric.clone(),
                session: c.run.session.clone(),
                policy: c.run.policy.clone(),
                got,
                want,
                holds: e.op.holds(got, want),
                call: first_call(c, &e.metric),
            });
        }
    }
    out
}

/// A check's outcome as a table (or JSON: the whole [`Outcome`]).
pub fn render_outcome(outcome: &Outcome, format: Format) -> String {
    if format == Format::Json {
        return crate::render::json(outcome);
    }
    let mut s = render(&outcome.verdicts, format);
    let calls: usize = outcome.sessions.iter().map(|x| x.calls).sum();
    let n = outcome.sessions.len();
    s.push_str(&format!(
        "{n} session{} ({calls} model calls), {} import damage line{}\n",
        if n == 1 { "" } else { "s" },
        outcome.damage.len(),
        if outcome.damage.len() == 1 { "" } else { "s" },
    ));
    s
}

/// The verdicts as a table (or JSON).
pub fn render(verdicts: &[CheckVerdict], format: Format) -> String {
    if format == Format::Json {
        return crate::render::json(&verdicts);
    }
    let rows = verdicts
        .iter()
        .map(|v| {
            vec![
                v.session.clone(),
                v.policy.clone(),
                v.expect.clone(),
                num(v.got),
                num(v.want),
                if v.holds { "holds" } else { "MISS" }.to_string(),
            ]
        })
        .collect();
    let header = [
        "session",
        "policy",
        "expectation",
        "got",
        "bound",
        "verdict",
    ];
    let mut s = crate::render::table(&header, rows, format == Format::Markdown);
    s.push('\n');
    if verdicts
        .iter()
        .any(|v| matches!(v.metric.as_str(), "dollars" | "breaks"))
    {
        s.push_str(COST_NOTE);
        s.push('\n');
    }
    s
}

/// What the cost metrics rest on, printed beside them.
const COST_NOTE: &str = "dollars and breaks are estimates: the built-in Anthropic prompt-cache \
model and price sheet, request sizes by the check's token counter, the session's envelope \
from its recorded usage where the log has it";

/// A path shown relative to nothing in particular: its file name.
pub fn short(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}
