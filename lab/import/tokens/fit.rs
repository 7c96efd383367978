//! Fitting and scoring the Claude estimator on recorded sessions.
//!
//! A sample is the growth between two consecutive requests of one
//! conversation: the recorded prompt tokens grew by `y`, the messages grew by
//! `x` o200k tokens per kind and messages. [`fit`] solves `y ≈ x·k` by least
//! squares reweighted towards absolute error, so an occasional request that
//! carried unlogged content (a file-change reminder the log does not keep)
//! does not pull the rates; the per-message cost then takes the steady
//! share of unlogged content ([`overhead`], 8.4 tokens per message on the
//! shared sessions). [`holdout`] fits on all sessions but one and scores the
//! one left out, for every session.
//!
//! Scores are per request, relative to the recorded total:
//! - *one-step*: the previous request's recorded total plus the estimated
//!   tokens of the messages added since (how a harness that reads `usage`
//!   after each response would size its next request);
//! - *cumulative*: the conversation's first recorded total (which bounds the
//!   system prompt and tools) plus the estimated tokens of every message
//!   since; unlogged content then accumulates.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::claude::{Coefficients, Features};
use super::recorded::RecordedRequest;
use crate::error::LabResult;

/// A recorded session.
#[derive(Debug, Clone)]
pub struct Session {
    /// File name.
    pub name: String,
    /// Its requests, in log order.
    pub requests: Vec<RecordedRequest>,
}

/// Loads every Claude Code session under `dir` (file names sorted).
pub fn load_dir(dir: &Path) -> LabResult<Vec<Session>> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| crate::error::LabError::io("listing", dir, e))?;
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    paths
        .iter()
        .filter(|p| p.is_file())
        .map(|p| {
            Ok(Session {
                name: p
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned(),
                requests: super::recorded::read_file(p)?,
            })
        })
        .collect()
}

/// The shared transcripts directory: `$CTXLAB_TRANSCRIPTS`, else
/// `shared/transcripts` one or two levels above the workspace.
pub fn shared_transcripts() -> Option<PathBuf> {
    // This crate sits at `lab/import/` of the workspace.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::env::var_os("CTXLAB_TRANSCRIPTS")
        .map(PathBuf::from)
        .into_iter()
        .chain([
            root.join("../shared/transcripts"),
            root.join("../../shared/transcripts"),
        ])
        .find(|p| p.join("claude_code").is_dir())
}

/// What a recorded request sent, as scored: its logged messages, plus the
/// file contents Claude Code re-sent without logging them, counted at the
/// code rate (they come back as numbered listings). The fit itself uses the
/// logged messages only: the re-sent sizes are the contents last seen in the
/// log, not what was sent, and would bend the code rate.
pub fn request_features(r: &RecordedRequest) -> Features {
    let mut f = Features::of(&r.messages);
    f.units[3] += r.resent_units;
    f
}

/// `(growth in features, growth in recorded tokens)` per consecutive pair of
/// requests of one conversation (logged messages only, see
/// [`request_features`]).
pub fn samples(session: &Session) -> Vec<([f64; 6], f64)> {
    let mut last: HashMap<&str, ([f64; 6], f64)> = HashMap::new();
    let mut out = Vec::new();
    for r in &session.requests {
        let x = Features::of(&r.messages).vector();
        let y = r.usage.total() as f64;
        if let Some((x0, y0)) = last.get(r.chain.as_str()) {
            out.push((std::array::from_fn(|i| x[i] - x0[i]), y - y0));
        }
        last.insert(&r.chain, (x, y));
    }
    out
}

/// Least squares reweighted towards absolute error (IRLS, 20 rounds; a
/// residual under 20 tokens counts as 20 so exact fits do not dominate),
/// then the per-message cost raised by the [`overhead`] the rates leave.
pub fn fit(samples: &[([f64; 6], f64)]) -> Coefficients {
    let mut w = vec![1.0; samples.len()];
    let mut k = [0.0; 6];
    for _ in 0..20 {
        k = weighted_least_squares(samples, &w);
        for (wi, (x, y)) in w.iter_mut().zip(samples) {
            let r = (dot(x, &k) - y).abs();
            *wi = 1.0 / r.max(20.0);
        }
    }
    k[5] += overhead(samples, &k);
    Coefficients::from_array(k)
}

/// Fraction of residuals cut from each end before averaging in [`overhead`].
pub const TRIM: f64 = 0.05;

/// Tokens per message that requests carry beyond their logged content, on
/// average: the 5 %-trimmed mean of the residuals, per message added.
///
/// The reweighted fit follows the typical request, whose residual is near
/// zero; but requests often carry a little unlogged content (reminders,
/// framing), and the residuals lean positive. A one-step estimate does not
/// care; an estimate summed over a conversation drifts by their mean. The
/// trimmed mean takes that lean without the rare huge injections (a
/// changed file's contents), which no per-message rate can predict.
pub fn overhead(samples: &[([f64; 6], f64)], k: &[f64; 6]) -> f64 {
    let mut r: Vec<f64> = samples.iter().map(|(x, y)| y - dot(x, k)).collect();
    let messages: f64 = samples.iter().map(|(x, _)| x[5]).sum();
    if r.is_empty() || messages <= 0.0 {
        return 0.0;
    }
    r.sort_by(f64::total_cmp);
    let cut = (TRIM * r.len() as f64).floor() as usize;
    let kept = &r[cut..r.len() - cut];
    let mean = kept.iter().sum::<f64>() / kept.len() as f64;
    mean * samples.len() as f64 / messages
}

fn dot(a: &[f64; 6], b: &[f64; 6]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Solves the weighted normal equations; a tiny ridge keeps a kind absent
/// from every sample (no thinking in a session) at zero instead of singular.
fn weighted_least_squares(samples: &[([f64; 6], f64)], w: &[f64]) -> [f64; 6] {
    let mut a = [[0.0; 7]; 6];
    for ((x, y), wi) in samples.iter().zip(w) {
        for i in 0..6 {
            for j in 0..6 {
                a[i][j] += wi * x[i] * x[j];
            }
            a[i][6] += wi * x[i] * y;
        }
    }
    for (i, row) in a.iter_mut().enumerate() {
        row[i] += 1e-9 * (1.0 + row[i]);
    }
    solve(a)
}

/// Gaussian elimination with partial pivoting on an augmented 6×7 matrix.
fn solve(mut a: [[f64; 7]; 6]) -> [f64; 6] {
    for c in 0..6 {
        let p = (c..6)
            .max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))
            .unwrap_or(c);
        a.swap(c, p);
        if a[c][c].abs() < 1e-300 {
            continue;
        }
        let pivot = a[c];
        for (r, row) in a.iter_mut().enumerate() {
            if r != c {
                let f = row[c] / pivot[c];
                for (x, p) in row.iter_mut().zip(pivot).skip(c) {
                    *x -= f * p;
                }
            }
        }
    }
    std::array::from_fn(|i| {
        if a[i][i].abs() < 1e-300 {
            0.0
        } else {
            a[i][6] / a[i][i]
        }
    })
}

/// Per-request relative errors of a session under `k`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Errors {
    /// One-step errors (see the module doc).
    pub one_step: Vec<f64>,
    /// Cumulative errors.
    pub cumulative: Vec<f64>,
}

/// Scores `k` on one session; a conversation's first request is the anchor
/// and is not scored.
pub fn score(session: &Session, k: &Coefficients) -> Errors {
    let mut prev: HashMap<&str, (f64, f64)> = HashMap::new();
    let mut base: HashMap<&str, f64> = HashMap::new();
    let mut out = Errors::default();
    for r in &session.requests {
        let est = request_features(r).tokens(k);
        let y = r.usage.total() as f64;
        if let (Some((e0, y0)), Some(b)) = (prev.get(r.chain.as_str()), base.get(r.chain.as_str()))
        {
            out.one_step.push(((y0 + est - e0) - y).abs() / y);
            out.cumulative.push(((b + est) - y).abs() / y);
        } else {
            base.insert(&r.chain, y - est);
        }
        prev.insert(&r.chain, (est, y));
    }
    out
}

/// Median and 95th percentile of a list of errors.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct Spread {
    /// Requests scored.
    pub n: usize,
    /// Median relative error.
    pub median: f64,
    /// 95th-percentile relative error (nearest rank).
    pub p95: f64,
}

impl Spread {
    /// The spread of `errors`.
    pub fn of(errors: &[f64]) -> Spread {
        let mut v = errors.to_vec();
        v.sort_by(f64::total_cmp);
        let at = |q: f64| {
            if v.is_empty() {
                return 0.0;
            }
            v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1]
        };
        Spread {
            n: v.len(),
            median: at(0.5),
            p95: at(0.95),
        }
    }
}

/// Leave-one-session-out result.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Holdout {
    /// Per held-out session: its name, the rates fitted without it, its one-step and cumulative spread.
    pub sessions: Vec<(String, Coefficients, Spread, Spread)>,
    /// All held-out one-step errors together.
    pub one_step: Spread,
    /// All held-out cumulative errors together.
    pub cumulative: Spread,
}

/// The rates fitted on every session but the `i`-th.
pub fn fit_without(sessions: &[Session], i: usize) -> Coefficients {
    let train: Vec<_> = sessions
        .iter()
        .enumerate()
        .filter(|(j, _)| *j != i)
        .flat_map(|(_, s)| samples(s))
        .collect();
    fit(&train)
}

/// Fits on all sessions but one and scores the one left out, for each.
pub fn holdout(sessions: &[Session]) -> Holdout {
    let mut all = Errors::default();
    let mut rows = Vec::new();
    for (i, held) in sessions.iter().enumerate() {
        let k = fit_without(sessions, i);
        let e = score(held, &k);
        rows.push((
            held.name.clone(),
            k,
            Spread::of(&e.one_step),
            Spread::of(&e.cumulative),
        ));
        all.one_step.extend(e.one_step);
        all.cumulative.extend(e.cumulative);
    }
    Holdout {
        sessions: rows,
        one_step: Spread::of(&all.one_step),
        cumulative: Spread::of(&all.cumulative),
    }
}

#[cfg(test)]
mod tests;
