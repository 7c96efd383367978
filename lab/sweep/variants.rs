//! Sweeps over a policy's constants: `lab sweep --policy claude-code --vary
//! autocompact_buffer=5000..30000:5000 --sessions DIR`.
//!
//! Each `--vary` axis is `KEY=A..B:STEP` (numbers, inclusive) or
//! `KEY=V1|V2|…`; the axes' product gives one [variant](crate::policy::variant)
//! per cell (`NAME:KEY=V:…`), each replayed on every session (real files, or
//! generated sessions from seeds without `--sessions`) through the policy
//! engine, priced on real sessions. The rows are summed per variant, and a
//! threshold is reported wherever a step along the sweep changes what the
//! design loses, breaks, does or costs.

use std::path::PathBuf;

use serde::Serialize;

use crate::error::{LabError, LabResult};
use crate::policy::spec::PolicySpec;
use crate::render::{json, table, Format};

/// One axis: a constant and its values, as they are written in a spec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Axis {
    /// The constant's upstream name.
    pub key: String,
    /// Its values, in sweep order.
    pub values: Vec<String>,
}

/// Most variants one sweep runs.
pub const MAX_VARIANTS: usize = 1_000;

fn usage(what: String) -> LabError {
    LabError::usage(
        what,
        "with --policy, write --vary KEY=A..B:STEP or KEY=V1|V2, comma separated (`lab policies --format json` lists each policy's `variant_keys`)",
    )
}

/// Parse `--vary` for a policy sweep.
pub fn parse_axes(spec: &str) -> LabResult<Vec<Axis>> {
    let mut axes: Vec<Axis> = Vec::new();
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((key, values)) = part.split_once('=') else {
            return Err(usage(format!("`{part}` in --vary has no `=`")));
        };
        let key = key.trim().to_string();
        if axes.iter().any(|a| a.key == key) {
            return Err(usage(format!("`{key}` is varied twice")));
        }
        let values = match values.split_once("..") {
            Some((a, rest)) => range(a, rest).map_err(|e| usage(format!("`{part}`: {e}")))?,
            None => values.split('|').map(|v| v.trim().to_string()).collect(),
        };
        if values.iter().any(String::is_empty) {
            return Err(usage(format!("`{part}` has an empty value")));
        }
        axes.push(Axis { key, values });
    }
    if axes.is_empty() {
        return Err(usage("--vary names no constant".into()));
    }
    let cells = axes.iter().map(|a| a.values.len()).product::<usize>();
    if cells > MAX_VARIANTS {
        return Err(usage(format!(
            "{cells} variants is past the cap of {MAX_VARIANTS}"
        )));
    }
    Ok(axes)
}

/// `A..B:STEP` (STEP 1 when absent) as the values from A to B inclusive,
/// written as integers when all three are, else with the fewest decimals
/// the step needs (so 0.7..0.95:0.05 gives 0.7, 0.75, …, 0.95, never
/// 0.7500000000000001).
fn range(a: &str, rest: &str) -> Result<Vec<String>, String> {
    let (b, step) = rest.split_once(':').unwrap_or((rest, "1"));
    let num = |s: &str| {
        s.trim()
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .ok_or_else(|| format!("`{s}` is not a number"))
    };
    let (a_n, b_n, step_n) = (num(a)?, num(b)?, num(step)?);
    if step_n <= 0.0 || b_n < a_n {
        return Err("a range runs upwards by a positive step".into());
    }
    let count = ((b_n - a_n) / step_n + 1e-9).floor() as usize + 1;
    if count > MAX_VARIANTS {
        return Err(format!("{count} values is past the cap of {MAX_VARIANTS}"));
    }
    let decimals = [a, b, step]
        .iter()
        .map(|s| s.trim().split_once('.').map_or(0, |(_, d)| d.len()))
        .max()
        .unwrap_or(0);
    Ok((0..count)
        .map(|i| format!("{:.*}", decimals, a_n + step_n * i as f64))
        .collect())
}

/// Every variant spec of `policy` over `axes`, first axis slowest (the
/// order of `values_of`): `policy`'s text with each axis's `:KEY=VALUE`
/// appended, parsed once.
pub fn specs(policy: &PolicySpec, axes: &[Axis]) -> LabResult<Vec<PolicySpec>> {
    values_of(axes)
        .iter()
        .map(|values| {
            axes.iter()
                .zip(values)
                .fold(policy.to_string(), |s, (a, v)| format!("{s}:{}={v}", a.key))
                .parse()
        })
        .collect()
}

/// One variant summed over the sessions.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct VariantRow {
    /// The variant spec.
    pub policy: String,
    /// Its values, aligned with the axes.
    pub values: Vec<String>,
    /// Sessions replayed.
    pub sessions: usize,
    /// Model calls.
    pub calls: usize,
    /// Events (compactions, clearings, drops).
    pub events: usize,
    /// Results lost forever.
    pub lost_forever: u64,
    /// Pointers that no longer lead to their original, and pointers to nothing.
    pub pointer_lost: u64,
    /// Requests a provider would reject.
    pub invalid_requests: u64,
    /// Largest request in tokens (the run's counter: an estimate).
    pub peak_tokens: usize,
    /// Dollars (estimates: the cache model and the price sheet), on real sessions.
    pub dollars: Option<f64>,
}

/// Where a step along the sweep changes a result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Threshold {
    /// The variant before the step.
    pub from: String,
    /// The variant after it.
    pub to: String,
    /// What changed, `name: before -> after`.
    pub changes: Vec<String>,
}

/// A whole variant sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VariantSweep {
    /// The base policy.
    pub policy: String,
    /// The axes.
    pub axes: Vec<Axis>,
    /// What the rows were replayed on.
    pub sessions: String,
    /// One row per variant, in sweep order.
    pub rows: Vec<VariantRow>,
    /// The steps that change a result.
    pub thresholds: Vec<Threshold>,
}

/// What the variant sweep runs on.
#[derive(Debug, Clone)]
pub enum Sessions {
    /// Real session files (directories and globs expanded).
    Files(Vec<PathBuf>),
    /// Generated sessions of seeds `0..N`.
    Seeds(u64),
}

/// Run `policy` varied along `axes` on `sessions` with `jobs` threads.
pub fn run(
    policy: &PolicySpec,
    axes: Vec<Axis>,
    sessions: &Sessions,
    jobs: usize,
) -> LabResult<VariantSweep> {
    if matches!(policy, PolicySpec::Exec(_)) {
        return Err(usage(
            "an external policy has no constants ctxlab can vary".into(),
        ));
    }
    let names = specs(policy, &axes)?;
    for n in &names {
        crate::zoo::list::check_spec(n)?;
    }
    let (rows, label) = match sessions {
        Sessions::Files(files) => {
            let rows = on_files(&names, files, jobs)?;
            // A file can hold many sessions (subagents, a trajectory
            // array): count the sessions replayed, not the files.
            let n = rows.first().map_or(0, |r| r.sessions);
            let label = format!(
                "{n} real session{} from {} file{} (envelope from recorded usage; dollars priced on the default sheet: estimates)",
                if n == 1 { "" } else { "s" },
                files.len(),
                if files.len() == 1 { "" } else { "s" },
            );
            (rows, label)
        }
        Sessions::Seeds(n) => (
            on_seeds(&names, *n, jobs)?,
            format!("generated sessions of seeds 0..{n} (not priced)"),
        ),
    };
    let rows: Vec<VariantRow> = rows
        .into_iter()
        .zip(values_of(&axes))
        .map(|(r, values)| VariantRow { values, ..r })
        .collect();
    let thresholds = thresholds(&rows);
    Ok(VariantSweep {
        policy: policy.to_string(),
        axes,
        sessions: label,
        rows,
        thresholds,
    })
}

/// Each variant's values, in [`specs`] order.
fn values_of(axes: &[Axis]) -> Vec<Vec<String>> {
    let mut out = vec![Vec::new()];
    for axis in axes {
        out = out
            .iter()
            .flat_map(|vs: &Vec<String>| {
                axis.values.iter().map(move |v| {
                    let mut next = vs.clone();
                    next.push(v.clone());
                    next
                })
            })
            .collect();
    }
    out
}

fn on_seeds(names: &[PolicySpec], seeds: u64, jobs: usize) -> LabResult<Vec<VariantRow>> {
    let rows = super::policies::sweep_specs_on(names, seeds, jobs)?;
    Ok(names
        .iter()
        .map(|n| {
            // A run is named after the text of its spec.
            let n = n.to_string();
            let mine: Vec<_> = rows.iter().filter(|r| r.policy == n).collect();
            VariantRow {
                policy: n,
                sessions: mine.len(),
                calls: mine.iter().map(|r| r.calls).sum(),
                events: mine.iter().map(|r| r.events).sum(),
                lost_forever: mine.iter().map(|r| r.lost_forever).sum(),
                pointer_lost: mine
                    .iter()
                    .map(|r| r.pointer_lost + r.dangling_pointers)
                    .sum(),
                invalid_requests: mine.iter().map(|r| r.invalid_requests).sum(),
                peak_tokens: mine.iter().map(|r| r.peak_tokens).max().unwrap_or(0),
                ..VariantRow::default()
            }
        })
        .collect())
}

fn on_files(names: &[PolicySpec], files: &[PathBuf], jobs: usize) -> LabResult<Vec<VariantRow>> {
    use crate::replay::policies::{replay_files_traced, Measure, Pricing};
    let options = crate::replay::cost_arms::CostOptions::default()
        .with_sheet(crate::cache::prices::DEFAULT_SHEET)?;
    let measure = Measure {
        pricing: Some(Pricing {
            provider: options.provider,
            sheet: options.sheet,
            prices: options.prices,
            by_model: true,
        }),
        ..Measure::default()
    };
    let files = crate::import::corpus::plain_files(files)?;
    let import = crate::import::ImportOptions::default();
    let (runs, _, _) = replay_files_traced(
        &files,
        names,
        crate::replay::profiles::DEFAULT_PATH_LEN,
        &import,
        &measure,
        jobs,
        false,
    )?;
    Ok(names
        .iter()
        .map(|n| {
            // A run is named after the text of its spec.
            let n = n.to_string();
            let mine: Vec<_> = runs.iter().filter(|c| c.run.policy == n).collect();
            let f = |g: &dyn Fn(&crate::policy::findings::Findings) -> u64| {
                mine.iter().map(|c| g(&c.run.findings)).sum::<u64>()
            };
            VariantRow {
                policy: n,
                values: Vec::new(),
                sessions: mine.len(),
                calls: mine.iter().map(|c| c.run.calls.len()).sum(),
                events: mine.iter().map(|c| c.run.events.len()).sum(),
                lost_forever: f(&|x| x.lost_forever.count),
                pointer_lost: f(&|x| x.pointer_lost.count + x.dangling_pointers.count),
                invalid_requests: mine.iter().map(|c| c.run.invalid_requests).sum(),
                peak_tokens: mine
                    .iter()
                    .flat_map(|c| c.run.calls.iter().map(|x| x.tokens))
                    .max()
                    .unwrap_or(0),
                dollars: Some(
                    mine.iter()
                        .filter_map(|c| c.cost.as_ref())
                        .map(|c| c.dollars)
                        .sum(),
                ),
            }
        })
        .collect())
}

/// Each step between neighbours whose results differ (dollars compared to the cent).
pub fn thresholds(rows: &[VariantRow]) -> Vec<Threshold> {
    rows.windows(2)
        .filter_map(|w| {
            let (a, b) = (&w[0], &w[1]);
            let mut changes = Vec::new();
            let mut differ = |name: &str, x: String, y: String| {
                if x != y {
                    changes.push(format!("{name}: {x} -> {y}"));
                }
            };
            differ("events", a.events.to_string(), b.events.to_string());
            differ(
                "lost",
                a.lost_forever.to_string(),
                b.lost_forever.to_string(),
            );
            differ(
                "pointers lost",
                a.pointer_lost.to_string(),
                b.pointer_lost.to_string(),
            );
            differ(
                "invalid",
                a.invalid_requests.to_string(),
                b.invalid_requests.to_string(),
            );
            differ("dollars", cents(a.dollars), cents(b.dollars));
            (!changes.is_empty()).then(|| Threshold {
                from: a.policy.clone(),
                to: b.policy.clone(),
                changes,
            })
        })
        .collect()
}

fn cents(d: Option<f64>) -> String {
    d.map_or_else(|| "-".into(), |d| format!("{d:.2}"))
}

/// The sweep as a table with its thresholds, or JSON (one shape).
pub fn render(sweep: &VariantSweep, format: Format) -> String {
    if format == Format::Json {
        return json(sweep);
    }
    let mut head: Vec<&str> = sweep.axes.iter().map(|a| a.key.as_str()).collect();
    head.extend([
        "sessions",
        "calls",
        "events",
        "lost",
        "ptr lost",
        "invalid",
        "peak tokens",
        "dollars",
    ]);
    let body = sweep
        .rows
        .iter()
        .map(|r| {
            let mut row = r.values.clone();
            row.extend([
                r.sessions.to_string(),
                r.calls.to_string(),
                r.events.to_string(),
                r.lost_forever.to_string(),
                r.pointer_lost.to_string(),
                r.invalid_requests.to_string(),
                r.peak_tokens.to_string(),
                cents(r.dollars),
            ]);
            row
        })
        .collect();
    let mut s = format!("policy {} varied on {}\n\n", sweep.policy, sweep.sessions);
    s.push_str(&table(&head, body, format == Format::Markdown));
    s.push_str("\n\nthresholds (where a step changes a result):\n");
    if sweep.thresholds.is_empty() {
        s.push_str("  none: every variant gives the same results\n");
    }
    for t in &sweep.thresholds {
        s.push_str(&format!(
            "  {} -> {}: {}\n",
            t.from,
            t.to,
            t.changes.join(", ")
        ));
    }
    s.push_str("peak tokens by the run's counter (an estimate)\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_inclusive_and_printed_without_float_noise() {
        let axes = parse_axes("autocompact_pct=0.70..0.95:0.05").unwrap();
        assert_eq!(
            axes[0].values,
            ["0.70", "0.75", "0.80", "0.85", "0.90", "0.95"]
        );
        let axes = parse_axes("a=5000..20000:5000, b=x|y").unwrap();
        assert_eq!(axes[0].values, ["5000", "10000", "15000", "20000"]);
        let base: PolicySpec = "p".parse().unwrap();
        let texts: Vec<String> = specs(&base, &axes)
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            texts,
            [
                "p:a=5000:b=x",
                "p:a=5000:b=y",
                "p:a=10000:b=x",
                "p:a=10000:b=y",
                "p:a=15000:b=x",
                "p:a=15000:b=y",
                "p:a=20000:b=x",
                "p:a=20000:b=y"
            ]
        );
        assert_eq!(values_of(&axes)[3], ["10000", "y"]);
    }

    #[test]
    fn bad_axes_are_usage_errors() {
        for bad in [
            "",
            "a",
            "a=",
            "a=3..1",
            "a=1..2:0",
            "a=1..x",
            "a=1|2,a=3",
            "a=0..1000000",
        ] {
            let e = parse_axes(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}: {e}");
        }
    }

    #[test]
    fn a_threshold_is_each_step_that_changes_a_result() {
        let row = |p: &str, lost: u64, dollars: f64| VariantRow {
            policy: p.into(),
            lost_forever: lost,
            dollars: Some(dollars),
            ..VariantRow::default()
        };
        let rows = [row("a", 3, 1.0), row("b", 3, 1.001), row("c", 0, 1.4)];
        let t = thresholds(&rows);
        assert_eq!(t.len(), 1, "{t:?}");
        assert_eq!((t[0].from.as_str(), t[0].to.as_str()), ("b", "c"));
        assert_eq!(t[0].changes, ["lost: 3 -> 0", "dollars: 1.00 -> 1.40"]);
    }
}
