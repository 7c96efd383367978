//! The cost–retention frontier of every policy on one generated coding
//! session (planted facts included): what each design keeps against what it
//! costs, with the dominated designs marked. Pure functions of the rows;
//! [`frontier_rows`] runs the policies.

use super::{Cell, Table};
use crate::error::LabResult;
use crate::message::{Block, Message};
use crate::replay::policies::{compare_one, Compared, Measure, Pricing};
use crate::retention::render::Scored;
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
                input: serde_json::json!({ "file_path": path(t, id) }).into(),
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

/// How the generated-session reports price a run: [`SHEET`] on Anthropic's
/// cache, the built-in price table, approximate tokens, no envelope; with
/// or without retention and the closed loop.
pub fn priced_measure(
    retention: bool,
    closed_loop: Option<crate::replay::policies::closed_loop::Switches>,
) -> Measure {
    let sheet = crate::cache::prices::sheet(SHEET)
        .expect("the frontier's price sheet exists")
        .clone();
    Measure {
        envelope: crate::replay::envelope::EnvelopeArg::None,
        retention,
        pricing: Some(Pricing {
            provider: crate::cache::provider::CacheChoice::Anthropic.provider(),
            sheet,
            prices: crate::cache::prices::table::PriceTable::builtin(),
            by_model: false,
        }),
        tokens: crate::tokens::Tokens::Approx,
        dump: None,
        exec_timeout: None,
        conversations: Default::default(),
        anchor: Default::default(),
        closed_loop,
    }
}

/// Every policy run on [`session`] with retention and priced with [`SHEET`]
/// (the runs behind both the frontier and the cost report).
pub fn frontier_runs() -> LabResult<Vec<Compared>> {
    // The closed loop prices what a removal costs the agent later: the
    // headline frontier is on its dollars.
    let measure = priced_measure(true, Some(Default::default()));
    let messages = session();
    crate::zoo::list::names()
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

/// Each run's regret on [`session`]: its dollars minus the cheapest
/// schedule's at its own recall ([`crate::replay::optimal`]), priced as the
/// runs are (no envelope, no times); `None` for a run without cost.
pub fn regret(runs: &[Compared]) -> Vec<Option<f64>> {
    let Some(cost) = runs.iter().find_map(|c| c.cost.as_ref()) else {
        return vec![None; runs.len()];
    };
    let messages = session();
    let (planted, facts) =
        crate::retention::planted::plant(&messages, &crate::retention::planted::Position::ALL);
    let p = crate::optimal::Problem {
        messages: &messages,
        times_ms: None,
        envelope: 0,
        provider: crate::cache::provider::CacheChoice::Anthropic.provider(),
        sheet: cost.sheet.clone(),
        limit: None,
    };
    let planted = crate::optimal::render::Planted {
        messages: &planted,
        facts: &facts,
    };
    let label = runs.first().map_or("", |c| c.run.session.as_str());
    crate::replay::optimal::regret_of(&p, &crate::tokens::Approx, planted, runs, label, &|_| true)
        .into_iter()
        .map(|r| r.map(|r| r.dollars))
        .collect()
}

/// Dollars of a regret, `-` without one.
pub fn regret_cell(r: Option<f64>) -> Cell {
    Cell::Text(r.map_or("-".into(), |r| format!("{r:.4}")))
}

/// The runs scored for the frontier, dominance marked (runs without
/// retention are left out).
pub fn scored(runs: &[Compared]) -> Vec<Scored> {
    crate::replay::frontier_plot::scored(runs)
}

/// `frontier`: per policy, what it sent and cost, its regret (`regret`,
/// in row order), what it kept, and whether another policy beats it on both.
pub fn frontier_table(rows: &[Scored], regret: &[Option<f64>]) -> Table {
    let columns = [
        "policy",
        "tokens sent",
        "dollars",
        "regret",
        "artifact recall (%)",
        "planted facts kept",
        "re-fetches",
        "frontier",
        "in-request recall (%)",
        "closed-loop dollars",
        "recovery calls",
        "closed-loop re-fetches",
        "lost demands",
        "closed-loop frontier",
    ];
    let body = rows
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let facts = &s.retention.facts;
            let kept = facts.iter().filter(|f| f.status != Status::Gone).count();
            vec![
                Cell::Text(s.policy.clone()),
                Cell::Int(s.tokens_sent as u64),
                Cell::Text(format!("{:.4}", s.dollars.unwrap_or(0.0))),
                regret_cell(regret.get(i).copied().flatten()),
                // Percent, as every other output shows recall.
                Cell::Text(format!("{:.1}", s.artifact_recall)),
                Cell::Text(format!("{kept}/{}", facts.len())),
                Cell::Int(s.retention.refetch_calls as u64),
                Cell::Text(crate::retention::render::frontier_cell(s).into()),
            ]
            .into_iter()
            .chain(closed_cells(s))
            .collect()
        })
        .collect();
    Table {
        name: "frontier".into(),
        title: format!(
            "Cost-retention frontier: every policy on one generated session, priced with {SHEET}; regret: dollars above the cheapest schedule at equal or better recall ({}); closed loop: the calls a removal costs the agent later inserted and priced (lab replay --closed-loop), in-request recall counting only what is verbatim in the last request",
            crate::optimal::render::FAMILY
        ),
        columns: columns.iter().map(|c| c.to_string()).collect(),
        rows: body,
    }
}

/// The closed-loop columns of a row (`-` for a run not closed).
fn closed_cells(s: &Scored) -> Vec<Cell> {
    match s.closed {
        Some(c) => vec![
            Cell::Text(format!("{:.1}", c.in_request_recall)),
            Cell::Text(format!("{:.4}", c.dollars)),
            Cell::Int(c.recovery_calls as u64),
            Cell::Int(c.refetches as u64),
            Cell::Int(c.lost_demands as u64),
            Cell::Text(if c.dominated { "dominated" } else { "frontier" }.into()),
        ],
        None => (0..6).map(|_| Cell::Text("-".into())).collect(),
    }
}

/// The frontier as a plot ([`crate::replay::frontier_plot`]): dollars
/// against artifact recall, every policy numbered and keyed.
pub fn frontier_svg(rows: &[Scored]) -> String {
    crate::replay::frontier_plot::svg(
        rows,
        "cost-retention frontier (generated session): closed loop, then open loop",
        &format!("lab reports --out reports/ · every policy · prices {SHEET} · tokenizer approx"),
    )
}
