//! `lab check FILE`: policies over sessions against declared expectations,
//! for a harness's CI.
//!
//! A check file ([`mod@file`]) names sessions, policies and expectations
//! (`invalid_requests == 0`, `dollars <= 1.2 * none`). Every session is
//! replayed under every policy named (and every policy an expectation
//! compares with) through the policy engine, with the cost and retention
//! observers when an expectation needs them. Each expectation is judged on
//! each session × policy ([`Verdict`]). All hold: the table, exit 0. A miss:
//! exit 1, one line per miss naming the session, the policy, the first call
//! concerned where the metric has one, the metric, what it was and what was
//! expected. `--junit FILE` writes the verdicts as JUnit XML ([`junit`]).

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{LabError, LabResult};
use crate::render::Format;
use crate::replay::policies::{Compared, Measure, Pricing};

pub mod file;
pub mod junit;

pub use file::{Bound, CheckFile, Expect};

/// Every metric an expectation can name, with what it measures. Cost
/// metrics price with the built-in Anthropic model and prices (estimates
/// where the token counter is); retention metrics plant facts in a
/// separate run.
pub const METRICS: &[(&str, &str)] = &[
    ("invalid_requests", "requests that break a provider rule"),
    (
        "lost_forever",
        "tool results neither in context nor held anywhere",
    ),
    (
        "pointer_lost",
        "results held that nothing in context leads to",
    ),
    ("dangling_pointers", "pointers whose target does not exist"),
    ("orphans", "files nothing in context reaches"),
    (
        "ended_by_error",
        "1 when the policy failed and the run ended there",
    ),
    ("calls", "model calls"),
    ("peak_chars", "the largest request, in chars"),
    (
        "peak_tokens",
        "the largest request, in tokens (estimate unless a provider tokenizer)",
    ),
    ("events", "the policy's events"),
    ("dollars", "prompt-cache dollars of the session (estimate)"),
    ("breaks", "prompt-cache prefix breaks"),
    (
        "artifact_recall",
        "share of artifacts the model can still reach (0..1)",
    ),
    (
        "refetch_calls",
        "calls that re-fetch something compacted away",
    ),
];

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
        "artifact_recall" => c.retention.as_ref().map(|r| r.artifact_recall),
        "refetch_calls" => c.retention.as_ref().map(|r| r.refetch_calls as f64),
        _ => None,
    }
}

/// The first call a metric points at, where it has one.
fn first_call(c: &Compared, metric: &str) -> Option<usize> {
    match metric {
        "invalid_requests" => c.run.calls.iter().position(|k| !k.violations.is_empty()),
        "ended_by_error" => c.run.ended_by_error.as_ref().map(|_| c.run.calls.len()),
        _ => None,
    }
}

/// One expectation on one session × policy.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
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

impl Verdict {
    /// One line for a miss.
    pub fn miss_line(&self) -> String {
        let call = self.call.map(|c| format!(" call {c}:")).unwrap_or_default();
        format!(
            "{} under {}:{call} `{}` failed: got {}, bound {}",
            self.session,
            self.policy,
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
pub struct CheckArgs {
    /// The check file (TOML: sessions, policies, expect; see GUIDE.md "lab check").
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
    let verdicts = run(&check)?;
    if let Some(path) = &args.junit {
        let xml = junit::render(&check.path, &verdicts);
        crate::storage::root::cleanup::write_replacing(path, xml.as_bytes())
            .map_err(|e| LabError::io("writing the JUnit report", path, e))?;
    }
    let misses: Vec<String> = verdicts
        .iter()
        .filter(|v| !v.holds)
        .map(Verdict::miss_line)
        .collect();
    if misses.is_empty() {
        Ok(render(&verdicts, args.format))
    } else {
        Err(LabError::Expectation { failures: misses })
    }
}

/// Every verdict of `check`, session by session, policy by policy,
/// expectation by expectation.
pub fn run(check: &CheckFile) -> LabResult<Vec<Verdict>> {
    let files = crate::import::corpus::plain_files(&check.sessions)?;
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
    let runs = crate::replay::policies::replay_files(&files, &names, path_len, &import, measure)?;
    Ok(judge(check, &runs))
}

fn pricing() -> LabResult<Pricing> {
    let sheet = *crate::cache::prices::sheet(crate::cache::prices::DEFAULT_SHEET)
        .ok_or_else(|| LabError::usage("the default price sheet is missing", "report this"))?;
    Ok(Pricing {
        provider: crate::cache::provider::CacheChoice::Anthropic.provider(),
        sheet,
        prices: crate::cache::prices::table::PriceTable::builtin(),
        // Each session is priced at the model that answered it.
        by_model: true,
    })
}

/// Judge every checked run (not the runs only compared with).
fn judge(check: &CheckFile, runs: &[Compared]) -> Vec<Verdict> {
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
            out.push(Verdict {
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

/// The verdicts as a table (or JSON).
pub fn render(verdicts: &[Verdict], format: Format) -> String {
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
