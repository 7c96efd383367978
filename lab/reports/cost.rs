//! What every policy costs under a prompt cache: the cost table of `lab
//! reports` (tokens sent, cache reads and writes, breaks per turn, dollars).
//!
//! A pure function of priced runs ([`PolicyCost`]); `lab reports` prices the
//! frontier's generated session ([`super::frontier::session`]); the plot of
//! cumulative dollars is [`crate::replay::dollars::dollars_svg`].

use super::{Cell, Table};
use crate::replay::dollars::{pricing_line, PolicyCost};

/// Dollars with four decimals (a fixed precision: Rust prints floats
/// exactly, so every machine writes the same digits).
fn money(x: f64) -> String {
    format!("{x:.4}")
}

/// `cost`: per policy, the prompt-cache totals of its run and its regret
/// (`regret`, in row order: dollars above the cheapest schedule at equal
/// or better recall).
pub fn cost_table(rows: &[PolicyCost], regret: &[Option<f64>]) -> Table {
    let columns = [
        "policy",
        "model calls",
        "tokens sent",
        "cache read",
        "cache write",
        "uncached",
        "breaks",
        "breaks/turn",
        "payback turns (median)",
        "dollars",
        "regret",
    ];
    let body = rows
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let r = &p.report;
            vec![
                Cell::Text(p.policy.clone()),
                Cell::Int(r.requests.len() as u64),
                Cell::Int(r.input_tokens),
                Cell::Int(r.cache_read_tokens),
                Cell::Int(r.cache_write_tokens),
                Cell::Int(r.uncached_tokens),
                Cell::Int(r.breaks as u64),
                Cell::Text(format!("{:.3}", r.breaks_per_turn)),
                Cell::Text(
                    r.payback_turns_median
                        .map_or("-".into(), |x| format!("{x:.2}")),
                ),
                Cell::Text(money(r.dollars)),
                super::frontier::regret_cell(regret.get(i).copied().flatten()),
            ]
        })
        .collect();
    let session = rows.first().map_or("", |p| p.session.as_str());
    Table {
        name: "cost".into(),
        title: format!(
            "Prompt-cache cost of every policy on the {session} session: {}",
            pricing_line(rows)
        ),
        columns: columns.iter().map(|c| c.to_string()).collect(),
        rows: body,
    }
}

#[cfg(test)]
mod tests;

/// Seeds of the spread figure by default (`lab reports --seeds N`). Five,
/// not ten: in a debug build ten seeds of every policy added about 2 min
/// 10 s of CPU to `lab reports` (about 1 min 10 s without them), five
/// half that; the figure's title and caption name the number.
pub const SEEDS: u64 = 5;

/// Tokens of each seed's generated session: the frontier session's scale
/// (about 170,000), so designs with production-size triggers act too.
pub const SEED_TOKENS: u64 = 170_000;

/// Every policy priced on the generated session of each seed `1..=seeds`
/// ([`crate::horizon::generate`], [`SEED_TOKENS`] tokens), as the cost
/// table is priced (the frontier's sheet, Anthropic's cache, approx
/// tokens), without retention. Sessions are labelled `seed K`.
pub fn seed_costs(seeds: u64) -> crate::error::LabResult<Vec<PolicyCost>> {
    use crate::replay::policies::compare_one;
    let measure = super::frontier::priced_measure(false, None);
    let names: Vec<String> = crate::zoo::list::names()
        .into_iter()
        .map(String::from)
        .collect();
    let progress = crate::progress::Progress::bar(seeds, "cost: seeds");
    let per_seed = crate::jobs::try_collect(
        crate::jobs::default_jobs(),
        |push| (1..=seeds).all(push),
        |seed| {
            let messages: Vec<crate::message::Message> =
                crate::horizon::generate::Generator::new(seed, SEED_TOKENS).collect();
            let label = format!("seed {seed}");
            let runs = names
                .iter()
                .map(|n| {
                    compare_one(
                        &label,
                        &messages,
                        n,
                        crate::replay::profiles::DEFAULT_PATH_LEN,
                        &measure,
                    )
                })
                .collect::<crate::error::LabResult<Vec<_>>>()?;
            progress.step();
            Ok(crate::replay::dollars::policy_costs(&runs))
        },
    )?;
    Ok(per_seed.into_iter().flatten().collect())
}

/// One policy's spread over seeds: `(policy, [(call, min, median, max)])`.
pub type Spread = (String, Vec<(f64, f64, f64, f64)>);

/// Per policy (in first-seen order), the median and the min–max of its
/// cumulative dollars over the seeds at each model call, up to the last
/// call every seed reached.
pub fn spread(rows: &[PolicyCost]) -> Vec<Spread> {
    let mut policies: Vec<&str> = Vec::new();
    for p in rows {
        if !policies.contains(&p.policy.as_str()) {
            policies.push(&p.policy);
        }
    }
    policies
        .into_iter()
        .map(|policy| {
            let curves: Vec<Vec<(f64, f64)>> = rows
                .iter()
                .filter(|p| p.policy == policy)
                .map(|p| crate::replay::dollars::cumulative_dollars(&p.report))
                .collect();
            let calls = curves.iter().map(Vec::len).min().unwrap_or(0);
            let points = (0..calls)
                .map(|i| {
                    let mut ys: Vec<f64> = curves.iter().map(|c| c[i].1).collect();
                    ys.sort_by(f64::total_cmp);
                    let k = ys.len();
                    let median = match k % 2 {
                        1 => ys[k / 2],
                        _ => (ys[k / 2 - 1] + ys[k / 2]) / 2.0,
                    };
                    (i as f64 + 1.0, ys[0], median, ys[k - 1])
                })
                .collect();
            (policy.to_string(), points)
        })
        .collect()
}

/// The number of seeds among `rows` (sessions labelled `seed K`).
pub fn seed_count(rows: &[PolicyCost]) -> usize {
    let mut seen: Vec<&str> = rows.iter().map(|p| p.session.as_str()).collect();
    seen.sort_unstable();
    seen.dedup();
    seen.len()
}

/// The spread figure: per policy group a panel of each policy's median
/// cumulative dollars over the seeds (its line) and their min–max (a band
/// in its colour), every other policy's median in grey; the caption names
/// the seeds, the session and the band.
pub fn seeds_svg(rows: &[PolicyCost], command: &str) -> String {
    use crate::plot::{Band, Figure, Panel, Series};
    use crate::replay::family::{group, style_index, GROUPS};
    let spread = spread(rows);
    let names: Vec<&str> = spread.iter().map(|(p, _)| p.as_str()).collect();
    let panels = GROUPS
        .iter()
        .filter(|g| names.iter().any(|p| group(p) == **g))
        .map(|g| Panel {
            title: format!("{g}: median and min–max over the seeds"),
            y_label: "cumulative cost (dollars)".into(),
            series: spread
                .iter()
                .map(|(p, points)| Series {
                    label: p.clone(),
                    points: points.iter().map(|q| (q.0, q.2)).collect(),
                    style: Some(style_index(p, &names)),
                    context: group(p) != *g,
                    ..Series::default()
                })
                .collect(),
            bands: spread
                .iter()
                .filter(|(p, _)| group(p) == *g)
                .map(|(p, points)| Band {
                    style: style_index(p, &names),
                    points: points.iter().map(|q| (q.0, q.1, q.3)).collect(),
                })
                .collect(),
            ..Panel::default()
        })
        .collect();
    let n = seed_count(rows);
    crate::plot::svg(&Figure {
        title: format!("cumulative prompt cost over model calls: median and min–max over {n} seeds"),
        x_label: "model call (count; up to the last call every seed reached)".into(),
        panels,
        caption: format!(
            "{command} · generated sessions of {SEED_TOKENS} tokens, seeds 1..{n}; line = median, band = min to max over the seeds · {}",
            pricing_line(rows)
        ),
    })
}
