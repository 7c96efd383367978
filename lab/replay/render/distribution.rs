//! The distribution plot of a corpus replay: the empirical cumulative
//! distribution over sessions of every policy's prompt cost (the share of
//! sessions at or below each value), as small multiples by policy group.
//! Drawn from the aggregate's per-session numbers, so a corpus of any size
//! gives the plot without holding a run.

use super::family::{group, style_index, GROUPS};
use crate::plot::{Figure, Panel, Series};
use crate::replay::observe::aggregate::Aggregate;

/// The ECDF of `values`: each sorted value against the percentage of
/// sessions at or below it.
pub fn ecdf(values: &[f64]) -> Vec<(f64, f64)> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len() as f64;
    v.iter()
        .enumerate()
        .map(|(i, x)| (*x, (i + 1) as f64 / n * 100.0))
        .collect()
}

/// Per policy group a panel: the ECDF of each session's prompt cost, the
/// group's policies in colour, every other policy in grey. `None` when no
/// run was priced.
pub fn ecdf_svg(agg: &Aggregate, command: &str) -> Option<String> {
    let names = agg.policies();
    if names.iter().all(|p| agg.values(p, "dollars").is_empty()) {
        return None;
    }
    let panels = GROUPS
        .iter()
        .filter(|g| names.iter().any(|p| group(p) == **g))
        .map(|g| Panel {
            title: g.to_string(),
            y_label: "sessions at or below (%)".into(),
            series: names
                .iter()
                .map(|p| Series {
                    label: p.to_string(),
                    points: ecdf(agg.values(p, "dollars")),
                    step: true,
                    style: Some(style_index(p, &names)),
                    context: group(p) != *g,
                })
                .collect(),
            ..Panel::default()
        })
        .collect();
    Some(crate::plot::svg(&Figure {
        title:
            "each policy's distribution of prompt cost across the corpus's sessions (empirical CDF)"
                .into(),
        x_label: "prompt cost of a session (dollars)".into(),
        panels,
        caption: command.to_string(),
    }))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_ecdf_rises_to_all_sessions() {
        let e = super::ecdf(&[3.0, 1.0, 2.0, 2.0]);
        assert_eq!(e, vec![(1.0, 25.0), (2.0, 50.0), (2.0, 75.0), (3.0, 100.0)]);
    }
}
