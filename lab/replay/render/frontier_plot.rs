//! The cost–retention frontier as a plot: every policy of one session a
//! numbered point (filled on the frontier) named in the key, the frontier a
//! step line. Drawn for `lab reports` and for the HTML report.

use crate::replay::runs::policies::Compared;
use crate::retention::render::{mark_closed_dominated, mark_dominated, ClosedPoint, Scored};

/// The runs scored for the frontier, dominance marked (runs without
/// retention, and runs that ended by error, whose low cost is that of calls
/// never made, are left out): dollars weigh cost where priced.
pub fn scored(runs: &[Compared]) -> Vec<Scored> {
    let mut rows: Vec<Scored> = runs
        .iter()
        .filter(|c| c.run.ended_by_error.is_none())
        .filter_map(|c| {
            let r = c.retention.clone()?;
            let tokens_sent = c.run.calls.iter().map(|x| x.tokens).sum();
            let closed = c.closed_loop.as_ref().map(|l| ClosedPoint {
                dollars: l.dollars.unwrap_or(tokens_sent as f64),
                in_request_recall: if r.artifacts == 0 {
                    100.0
                } else {
                    100.0 * r.tiers.in_request as f64 / r.artifacts as f64
                },
                recovery_calls: l.recovery_calls,
                refetches: l.refetches,
                lost_demands: l.lost_demands,
                dominated: false,
            });
            Some(Scored {
                session: c.run.session.clone(),
                policy: c.run.policy.clone(),
                tokens_sent,
                artifact_recall: r.artifact_recall,
                dollars: c.cost.as_ref().map(|x| x.dollars),
                dominated: false,
                retention: r,
                closed,
                ended_by_error: None,
            })
        })
        .collect();
    mark_dominated(&mut rows);
    mark_closed_dominated(&mut rows);
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
    let open_marks = rows
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
    let open = Panel {
        title: if closed_panel(rows).is_some() {
            "open loop: a pointer counts as kept, following it is free; filled points are on this frontier".into()
        } else {
            "every policy, numbered; filled points are on the frontier".into()
        },
        y_label: "artifact recall (%)".into(),
        series: vec![Series {
            label: "frontier: best recall for at most that cost".into(),
            points: line,
            step: true,
            ..Series::default()
        }],
        marks: open_marks,
        height: 420.0,
        ..Panel::default()
    };
    let panels = match closed_panel(rows) {
        Some(closed) => vec![closed, open],
        None => vec![open],
    };
    crate::plot::svg(&Figure {
        title: title.to_string(),
        x_label: if priced {
            "cost (dollars)".into()
        } else {
            "tokens sent (count, by the run's tokenizer)".into()
        },
        panels,
        caption: caption.to_string(),
    })
}

/// The closed-loop frontier, the headline panel, when the runs were closed
/// loop: in-request recall against closed-loop dollars, every policy
/// numbered as in the open panel.
fn closed_panel(rows: &[Scored]) -> Option<crate::plot::Panel> {
    use crate::plot::{Mark, Panel, Series};
    if rows.iter().all(|s| s.closed.is_none()) {
        return None;
    }
    let points: Vec<(usize, &Scored, ClosedPoint)> = rows
        .iter()
        .enumerate()
        .filter_map(|(i, s)| Some((i, s, s.closed?)))
        .collect();
    let line = staircase(
        points
            .iter()
            .map(|(_, _, c)| (c.dollars, c.in_request_recall))
            .collect(),
    );
    let marks = points
        .iter()
        .map(|(i, s, c)| Mark {
            tag: (i + 1).to_string(),
            name: format!(
                "{}{}",
                s.policy,
                if c.dominated {
                    ""
                } else {
                    " (closed-loop frontier)"
                }
            ),
            at: (c.dollars, c.in_request_recall),
            filled: !c.dominated,
            group: super::family::family(&s.policy),
        })
        .collect();
    Some(Panel {
        title: "closed loop: following a pointer or fetching again is a call, inserted and priced; filled points are on this frontier".into(),
        y_label: "in-request recall (%)".into(),
        series: vec![Series {
            label: "closed-loop frontier: best in-request recall for at most that cost".into(),
            points: line,
            step: true,
            ..Series::default()
        }],
        marks,
        height: 420.0,
        ..Panel::default()
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
