//! `lab replay … --optimal`: each session's cheapest schedule
//! ([`crate::optimal`]) and, beside every priced policy run, its regret:
//! the run's dollars minus the cheapest schedule's at equal or better
//! retention.
//!
//! The regret's floor is the run's own artifact recall at its last request
//! when `--retention` measured it, else 0 (then the bound is the cheapest
//! schedule at any retention: still a lower bound, a looser one). The
//! bound ranges over one family ([`crate::optimal::render::FAMILY`]) and
//! is named beside every regret. The bound of the product's own policy
//! (`claude-code` on a Claude Code log) sends the smallest of the
//! session's prefixes (the first, or one recorded after a compaction)
//! throughout, since that policy switches to the recorded post-compaction
//! prefix when it compacts.

use std::collections::HashMap;
use std::path::PathBuf;

use super::policies::{set_up_logged, Compared, Measure};
use crate::error::{LabError, LabResult};
use crate::optimal::render::{optimum, OptimalPart, Optimum, Planted, Regret};
use crate::optimal::Problem;

/// `--optimal`'s options.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OptimalArgs {
    /// `--optimal-floor`: artifact recall at the last request at least
    /// this, percent.
    pub floor: f64,
    /// `--optimal-limit`: tokens one request may carry, envelope included.
    pub limit: Option<u64>,
}

/// A floor in percent, [0, 100] (recall is percent in every output), or
/// a usage error naming the flag.
pub fn parse_floor(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(f) if (0.0..=100.0).contains(&f) => Ok(f),
        _ => Err(format!(
            "`{s}` is not a recall percent in [0, 100] (e.g. 90)"
        )),
    }
}

/// The optimum of every session of `files` and the regret of every run of `out`.
pub fn compute(
    files: &[PathBuf],
    import: &crate::import::ImportOptions,
    measure: &Measure,
    args: OptimalArgs,
    out: &[Compared],
) -> LabResult<OptimalPart> {
    let pricing = measure.pricing.as_ref().ok_or_else(|| {
        LabError::usage("--optimal prices schedules and needs --cost", "add --cost")
    })?;
    let counter = measure.tokens.counter();
    let mut part = OptimalPart {
        regret: vec![None; out.len()],
        ..OptimalPart::default()
    };
    for file in files {
        // The same sessions as the runs: a log's subagents too.
        for logged in crate::replay::input::subagents::replayed_sessions(
            file,
            import,
            measure.conversations,
            measure.envelope,
            measure.tokens,
            measure.anchor,
        )? {
            let session = logged.session;
            let setup = set_up_logged(&session, logged.log.as_ref(), measure)?;
            let mut messages = crate::import::artefacts::without_product_artefacts(&session);
            // A resume drops what was put back before it, and a run sends it
            // only until then: the bound never sends it, so it stays below
            // every run (less tight on a resumed log, never above).
            if let Some(&last) = setup.prefix.resumes.last() {
                let before = last.min(messages.len());
                for m in &mut messages[..before] {
                    m.drop_unlogged();
                }
            }
            let (planted, facts) = crate::retention::planted::plant(
                &messages,
                &crate::retention::planted::Position::ALL,
            );
            // Priced as the session's runs are (its model's prices, when
            // the replay prices each session at its own).
            let pricing = setup.pricing.as_ref().unwrap_or(pricing);
            let problem = Problem {
                messages: &messages,
                times_ms: setup.times_ms.as_deref(),
                envelope: setup.prefix.tokens as u64,
                provider: pricing.provider,
                sheet: pricing.sheet.clone(),
                limit: args.limit,
            };
            let planted = Planted {
                messages: &planted,
                facts: &facts,
            };
            let label = &session.label;
            part.optima.push(optimum(
                label,
                &problem,
                counter.as_ref(),
                planted,
                args.floor,
            ));
            // The product's own policy sends the recorded post-compaction
            // prefix after it compacts, which may be smaller than the first:
            // its bound sends the smallest prefix throughout.
            let product = setup.prefix.product_policy.as_deref();
            let smallest = setup
                .prefix
                .after_compaction
                .iter()
                .fold(setup.prefix.tokens, |a, &b| a.min(b)) as u64;
            let small = Problem {
                envelope: smallest,
                ..unlimited_of(&problem)
            };
            for (p, own) in [(unlimited_of(&problem), false), (small, true)] {
                let select = |c: &Compared| (product == Some(c.run.policy.as_str())) == own;
                let regret = regret_of(&p, counter.as_ref(), planted, out, label, &select);
                for (slot, r) in part.regret.iter_mut().zip(regret) {
                    if r.is_some() {
                        *slot = r;
                    }
                }
            }
        }
    }
    Ok(part)
}

/// `p` without its request limit: a regret is against every schedule of
/// the family, since the runs were held to no limit.
fn unlimited_of<'a>(p: &Problem<'a>) -> Problem<'a> {
    Problem {
        limit: None,
        ..p.clone()
    }
}

/// The regret of every priced run of `out` on session `label` that
/// `select` picks (`None` for the others): its dollars minus the cheapest schedule's of `p` at the
/// run's own recall (0 when retention was not measured). One program per
/// distinct floor.
pub fn regret_of(
    p: &Problem<'_>,
    counter: &dyn crate::tokens::TokenCounter,
    planted: Planted<'_>,
    out: &[Compared],
    label: &str,
    select: &dyn Fn(&Compared) -> bool,
) -> Vec<Option<Regret>> {
    let mut bounds: HashMap<u64, Optimum> = HashMap::new();
    out.iter()
        .map(|c| {
            let cost = c
                .cost
                .as_ref()
                .filter(|_| c.run.session == label && select(c))?;
            let floor = c.retention.as_ref().map_or(0.0, |r| r.artifact_recall);
            let bound = bounds
                .entry(floor.to_bits())
                .or_insert_with(|| optimum(label, p, counter, planted, floor));
            bound.schedule.as_ref().map(|s| Regret {
                dollars: cost.dollars - s.dollars,
                bound: s.dollars,
                floor,
                family: bound.family.clone(),
            })
        })
        .collect()
}
