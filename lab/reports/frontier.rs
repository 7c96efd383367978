//! The cost–retention frontier of every policy on one generated coding
//! session (planted facts included): what each design keeps against what it
//! costs, with the dominated designs marked. Pure functions of the rows;
//! [`frontier_rows`] runs the policies.

use super::{Cell, Table};
use crate::error::LabResult;
use crate::message::{Block, Message};
use crate::replay::policies::{compare_one, Compared, Measure, Pricing};
use crate::retention::render::{mark_dominated, Scored};
use crate::retention::Status;

/// The price sheet the frontier is priced with.
pub const SHEET: &str = "claude-opus-4.1-5m";

/// A generated coding session: a task, then 80 reads whose results carry an
/// error line (one batch of two parallel reads; every tenth read reads again
/// the file read eight calls earlier), about 170,000 approximate tokens at the
/// end, so designs with production-size triggers act too; then an answer.
pub fn session() -> Vec<Message> {
    let mut out = vec![Message::user_text(
        "Fix the failing build of the parser crate.",
    )];
    for t in 0..80 {
        let ids: Vec<String> = if t == 5 {
            vec![format!("toolu_{t:03}a"), format!("toolu_{t:03}b")]
        } else {
            vec![format!("toolu_{t:03}")]
        };
        let calls = ids
            .iter()
            .map(|id| Block::ToolUse {
                id: id.clone(),
                name: "Read".into(),
                input: serde_json::json!({ "file_path": path(t, id) }),
            })
            .collect();
        out.push(Message::assistant(calls));
        let body = |id: &str| {
            format!(
                "fn {id}() {{}}\nerror: E{t:04} in {id}\n{}",
                "// line\n".repeat(400 + 300 * (t % 4))
            )
        };
        out.push(Message::tool_results(
            ids.iter().map(|id| (id.clone(), body(id))).collect(),
        ));
    }
    out.push(Message::assistant(vec![Block::Text {
        text: "The build is fixed.".into(),
    }]));
    out
}

/// The file read by call `t`: every tenth read rereads the file of `t - 8`.
fn path(t: usize, id: &str) -> String {
    if t % 10 == 9 {
        format!("/src/toolu_{:03}.rs", t - 8)
    } else {
        format!("/src/{id}.rs")
    }
}

/// Every policy on [`session`], with retention and cost, dominance marked.
pub fn frontier_rows() -> LabResult<Vec<Scored>> {
    Ok(scored(&frontier_runs()?))
}

/// Every policy run on [`session`] with retention and priced with [`SHEET`]
/// (the runs behind both the frontier and the cost report).
pub fn frontier_runs() -> LabResult<Vec<Compared>> {
    let sheet = *crate::cache::prices::sheet(SHEET).expect("the frontier's price sheet exists");
    let measure = Measure {
        retention: true,
        pricing: Some(Pricing {
            provider: crate::cache::provider::CacheChoice::Anthropic.provider(),
            sheet,
            prices: crate::cache::prices::table::PriceTable::builtin(),
        }),
        tokens: crate::tokens::Tokens::Approx,
    };
    let messages = session();
    crate::policy::list::names()
        .into_iter()
        .map(|name| {
            compare_one(
                "generated",
                &messages,
                name,
                crate::replay::profiles::DEFAULT_PATH_LEN,
                &measure,
            )
        })
        .collect()
}

/// The runs scored for the frontier, dominance marked (runs without
/// retention are left out).
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

/// `frontier`: per policy, what it sent and cost, what it kept, and whether
/// another policy beats it on both.
pub fn frontier_table(rows: &[Scored]) -> Table {
    let columns = [
        "policy",
        "tokens sent",
        "dollars",
        "artifact recall (permille)",
        "planted facts kept",
        "re-fetches",
        "frontier",
    ];
    let body = rows
        .iter()
        .map(|s| {
            let facts = &s.retention.facts;
            let kept = facts.iter().filter(|f| f.status != Status::Gone).count();
            vec![
                Cell::Text(s.policy.clone()),
                Cell::Int(s.tokens_sent as u64),
                Cell::Text(format!("{:.4}", s.dollars.unwrap_or(0.0))),
                Cell::Int((s.artifact_recall * 1000.0).round() as u64),
                Cell::Text(format!("{kept}/{}", facts.len())),
                Cell::Int(s.retention.refetch_calls as u64),
                Cell::Text(if s.dominated { "dominated" } else { "frontier" }.into()),
            ]
        })
        .collect();
    Table {
        name: "frontier".into(),
        title: format!(
            "Cost-retention frontier: every policy on one generated session, priced with {SHEET}"
        ),
        columns: columns.iter().map(|c| c.to_string()).collect(),
        rows: body,
    }
}

/// The frontier as a plot: dollars against artifact recall, every policy a
/// numbered point (filled on the frontier) named in the key, and the
/// frontier drawn as a step line: the best recall any policy reaches for at
/// most that many dollars.
pub fn frontier_svg(rows: &[Scored]) -> String {
    use crate::plot::{Figure, Mark, Panel, Series};
    let at = |s: &Scored| (s.dollars.unwrap_or(0.0), s.artifact_recall * 100.0);
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
        })
        .collect();
    crate::plot::svg(&Figure {
        title: "cost-retention frontier (generated session)".into(),
        x_label: "cost (dollars)".into(),
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
        caption: format!(
            "lab reports --out reports/ · every policy · prices {SHEET} · tokenizer approx"
        ),
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
