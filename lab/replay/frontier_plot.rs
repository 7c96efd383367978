//! The cost–retention frontier as a plot: every policy of one session a
//! numbered point (filled on the frontier) named in the key, the frontier a
//! step line. Drawn for `lab reports` and for the HTML report.

use super::policies::Compared;
use crate::retention::render::{mark_dominated, Scored};

/// The runs scored for the frontier, dominance marked (runs without
/// retention are left out): dollars weigh cost where priced.
pub fn scored(runs: &[Compared]) -> Vec<Scored> {
    let mut rows: Vec<Scored> = runs
        .iter()
        .filter_map(|c| {
            let r = c.retention.clone()?;
            Some(Scored {
                session: c.run.session.clone(),
                policy: c.run.policy.clone(),
                tokens_sent: c.run.calls.iter().map(|x| x.tokens).sum(),
                artifact_recall: r.artifact_recall,
                dollars: c.cost.as_ref().map(|x| x.dollars),
                dominated: false,
                retention: r,
            })
        })
        .collect();
    mark_dominated(&mut rows);
    rows
}

/// The frontier as a plot: dollars against artifact recall, every policy a
/// numbered point (filled on the frontier) named in the key, and the
/// frontier drawn as a step line: the best recall any policy reaches for at
/// most that many dollars.
pub fn svg(rows: &[Scored], title: &str, caption: &str) -> String {
    use crate::plot::{Figure, Mark, Panel, Series};
    // Unpriced runs are weighed by tokens sent, as the dominance marking does.
    let priced = rows.iter().any(|s| s.dollars.is_some());
    let at = |s: &Scored| {
        let cost = match s.dollars {
            Some(d) => d,
            None => s.tokens_sent as f64,
        };
        (cost, s.artifact_recall)
    };
    let line = staircase(rows.iter().map(at).collect());
    let marks = rows
        .iter()
        .enumerate()
        .map(|(i, s)| Mark {
            tag: (i + 1).to_string(),
            name: format!(
                "{}{}",
                s.policy,
                if s.dominated { "" } else { " (frontier)" }
            ),
            at: at(s),
            filled: !s.dominated,
            group: super::family::family(&s.policy),
        })
        .collect();
    crate::plot::svg(&Figure {
        title: title.to_string(),
        x_label: if priced {
            "cost (dollars)".into()
        } else {
            "tokens sent (count, by the run's tokenizer)".into()
        },
        panels: vec![Panel {
            title: "every policy, numbered; filled points are on the frontier".into(),
            y_label: "artifact recall (%)".into(),
            series: vec![Series {
                label: "frontier: best recall for at most that cost".into(),
                points: line,
                step: true,
                ..Series::default()
            }],
            marks,
            height: 420.0,
            ..Panel::default()
        }],
        caption: caption.to_string(),
    })
}

/// The frontier as steps: from the cheapest point, the best recall reached
/// so far at each dearer point that raises it, then on to the dearest
/// point's cost (so the line spans every point).
fn staircase(mut points: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    points.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
    let dearest = points.last().map(|p| p.0);
    let mut out: Vec<(f64, f64)> = Vec::new();
    for (x, y) in points {
        match out.last() {
            Some(&(_, best)) if y <= best => {}
            _ => out.push((x, y)),
        }
    }
    if let (Some(&(x, best)), Some(end)) = (out.last(), dearest) {
        if end > x {
            out.push((end, best));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_staircase_rises_only_and_spans_every_cost() {
        let s = super::staircase(vec![
            (3.0, 50.0),
            (1.0, 20.0),
            (2.0, 10.0),
            (4.0, 90.0),
            (5.0, 5.0),
        ]);
        assert_eq!(s, vec![(1.0, 20.0), (3.0, 50.0), (4.0, 90.0), (5.0, 90.0)]);
    }
}
