//! The check file: which sessions, which policies, which expectations.
//!
//! ```toml
//! # ctxlab check file, version 1
//! sessions = ["sessions/*.jsonl"]          # files, directories, globs; relative to this file
//! policies = ["claude-code", "codex-cli"]  # built-in policies (`lab policies`)
//! tokens = "claude"                        # optional: approx (default), o200k, cl100k, claude
//! anchor = "none"                          # optional: none (default), recorded (`lab replay --anchor`)
//! expect = [
//!   "invalid_requests == 0",
//!   "lost_forever == 0",
//!   "dollars <= 1.2 * none",               # against another policy on the same session
//! ]
//! min_calls = 1                            # optional: model calls each session needs (0: none needed)
//! allow_damage = false                     # optional: import damage fails the check unless true
//! ```
//!
//! Every key and metric, with units: [`super::metrics`].

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{LabError, LabResult};
use crate::input::line_col;

/// What a check file says, as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    sessions: Vec<String>,
    policies: Vec<String>,
    #[serde(default)]
    tokens: Option<String>,
    #[serde(default)]
    anchor: Option<String>,
    expect: Vec<String>,
    #[serde(default)]
    min_calls: Option<u64>,
    #[serde(default)]
    allow_damage: bool,
}

/// A comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<=`
    Le,
    /// `<`
    Lt,
    /// `>=`
    Ge,
    /// `>`
    Gt,
}

impl Op {
    const ALL: [(&'static str, Op); 6] = [
        ("==", Op::Eq),
        ("!=", Op::Ne),
        ("<=", Op::Le),
        (">=", Op::Ge),
        ("<", Op::Lt),
        (">", Op::Gt),
    ];

    /// `a op b`.
    pub fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Eq => a == b,
            Op::Ne => a != b,
            Op::Le => a <= b,
            Op::Lt => a < b,
            Op::Ge => a >= b,
            Op::Gt => a > b,
        }
    }
}

/// The right-hand side of an expectation.
#[derive(Debug, Clone, PartialEq)]
pub enum Bound {
    /// A number.
    Number(f64),
    /// `factor * POLICY`: the same metric of another policy on the same session.
    Policy {
        /// The multiplier (1 when not written).
        factor: f64,
        /// The policy compared with.
        policy: String,
    },
}

/// One expectation: `METRIC OP BOUND`.
#[derive(Debug, Clone, PartialEq)]
pub struct Expect {
    /// As written.
    pub text: String,
    /// The metric (see [`super::metrics::METRICS`]).
    pub metric: String,
    /// The comparison.
    pub op: Op,
    /// What it is compared with.
    pub bound: Bound,
}

/// A parsed check file.
#[derive(Debug, Clone)]
pub struct CheckFile {
    /// The file.
    pub path: PathBuf,
    /// Session paths, resolved against the file's directory.
    pub sessions: Vec<PathBuf>,
    /// Policies to check.
    pub policies: Vec<String>,
    /// The token counter.
    pub tokens: crate::tokens::Tokens,
    /// What the replay reads of recorded usage (`anchor = "…"`; as
    /// `lab replay --anchor`).
    pub anchor: crate::replay::anchor::AnchorArg,
    /// The expectations.
    pub expect: Vec<Expect>,
    /// Model calls each session must have (`min_calls`, default 1). At 0
    /// a check of no sessions, or of sessions of no calls, may pass.
    pub min_calls: u64,
    /// `allow_damage = true`: import damage is a warning, not a failure.
    pub allow_damage: bool,
}

impl CheckFile {
    /// Read and validate `path`.
    pub fn read(path: &Path) -> LabResult<CheckFile> {
        let text = crate::input::read_text(path, "a check file")?;
        Self::parse(path, &text)
    }

    /// Parse `text` (named `path` in errors).
    pub fn parse(path: &Path, text: &str) -> LabResult<CheckFile> {
        let raw: Raw = toml::from_str(text).map_err(|e| {
            let (line, column) = e.span().map_or((1, 1), |s| line_col(text, s.start));
            input(
                path,
                line,
                column,
                e.message(),
                "`lab check --help` lists every key and metric",
            )
        })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let tokens = match raw.tokens.as_deref() {
            None => crate::tokens::Tokens::Approx,
            Some(t) => {
                <crate::tokens::Tokens as clap::ValueEnum>::from_str(t, true).map_err(|_| {
                    let (line, column) = find(text, t);
                    input(
                        path,
                        line,
                        column,
                        &format!("unknown token counter {t:?}"),
                        "use approx, o200k, cl100k or claude",
                    )
                })?
            }
        };
        let anchor = match raw.anchor.as_deref() {
            None => crate::replay::anchor::AnchorArg::default(),
            Some(a) => {
                let anchor = <crate::replay::anchor::Anchor as clap::ValueEnum>::from_str(a, true)
                    .map_err(|_| {
                        let (line, column) = find(text, a);
                        input(
                            path,
                            line,
                            column,
                            &format!("unknown anchor {a:?}"),
                            "use none or recorded",
                        )
                    })?;
                crate::replay::anchor::AnchorArg::from_flag(Some(anchor))
            }
        };
        let mut expect = Vec::new();
        for e in &raw.expect {
            expect.push(parse_expect(e).map_err(|(message, fix)| {
                let (line, column) = find(text, e);
                input(path, line, column, &message, &fix)
            })?);
        }
        for p in &raw.policies {
            if p.eq_ignore_ascii_case("all") {
                continue;
            }
            for one in crate::zoo::list::split_specs(std::slice::from_ref(p)) {
                crate::zoo::list::check(&one).map_err(|e| {
                    let (line, column) = find(text, &format!("\"{p}\""));
                    let (message, _) = e.parts();
                    input(
                        path,
                        line,
                        column + 1,
                        &format!("in `policies`: {message}"),
                        "name a policy of `lab policies` (a variant, or exec:CMD)",
                    )
                })?;
            }
        }
        if raw.policies.is_empty() || expect.is_empty() {
            return Err(input(
                path,
                1,
                1,
                "no policies or no expectations",
                "name at least one policy and one expectation",
            ));
        }
        Ok(CheckFile {
            path: path.to_path_buf(),
            sessions: raw.sessions.iter().map(|s| dir.join(s)).collect(),
            policies: raw.policies,
            tokens,
            anchor,
            expect,
            min_calls: raw.min_calls.unwrap_or(1),
            allow_damage: raw.allow_damage,
        })
    }
}

fn input(path: &Path, line: usize, column: usize, message: &str, fix: &str) -> LabError {
    LabError::Input {
        file: path.to_path_buf(),
        line,
        column,
        message: message.trim().to_string(),
        fix: fix.to_string(),
    }
}

/// Where `needle` first appears in `text` (1:1 when it does not).
fn find(text: &str, needle: &str) -> (usize, usize) {
    text.find(needle).map_or((1, 1), |at| line_col(text, at))
}

/// `METRIC OP BOUND`, where BOUND is a number, `POLICY` or `FACTOR * POLICY`.
pub fn parse_expect(text: &str) -> Result<Expect, (String, String)> {
    let fix =
        || "write METRIC OP BOUND, e.g. `lost_forever == 0` or `dollars <= 1.2 * none`".to_string();
    let (at, sym, op) = Op::ALL
        .iter()
        .filter_map(|(sym, op)| text.find(sym).map(|at| (at, *sym, *op)))
        .min_by_key(|(at, sym, _)| (*at, std::cmp::Reverse(sym.len())))
        .ok_or_else(|| (format!("no comparison in {text:?}"), fix()))?;
    let metric = text[..at].trim();
    let rhs = text[at + sym.len()..].trim();
    if super::metrics::find(metric).is_none() {
        let known: Vec<&str> = super::metrics::METRICS.iter().map(|m| m.name).collect();
        return Err((
            format!("unknown metric {metric:?}"),
            format!("use one of: {}", known.join(", ")),
        ));
    }
    let bound = if let Ok(n) = rhs.parse::<f64>() {
        Bound::Number(n)
    } else {
        let (factor, policy) = match rhs.split_once('*') {
            Some((f, p)) => (
                f.trim()
                    .parse::<f64>()
                    .map_err(|_| (format!("{:?} is not a number", f.trim()), fix()))?,
                p.trim(),
            ),
            None => (1.0, rhs),
        };
        crate::zoo::list::check(policy).map_err(|_| {
            (
                format!("unknown policy {policy:?} in {text:?}"),
                "name a policy of `lab policies`".to_string(),
            )
        })?;
        Bound::Policy {
            factor,
            policy: policy.to_string(),
        }
    };
    if matches!(bound, Bound::Number(n) if !n.is_finite()) {
        return Err((format!("{rhs:?} is not a finite number"), fix()));
    }
    Ok(Expect {
        text: text.to_string(),
        metric: metric.to_string(),
        op,
        bound,
    })
}
