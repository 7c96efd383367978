//! The renderers of a policy replay, beside the runs they render
//! ([`super::Compared`], [`super::Sessions`]): the policy, cost and
//! recorded tables, the optimal schedules, and the JSON documents (with
//! their schema). Pure: runs in, text out.

use super::{closed_loop, variant_summaries, Compared, Sessions};
use crate::policy::engine::PolicyRun;
use crate::retention::RetentionReport;

/// Per policy × session: what was sent, on which requests, at which
/// prices, and what the cache made of it.
fn cost_table(
    out: &[Compared],
    recorded: &[crate::replay::runs::cost_arms::CostRow],
    regret: &[Option<crate::optimal::render::Regret>],
    format: crate::render::Format,
) -> String {
    let with_regret = !regret.is_empty();
    let mut rows: Vec<Vec<String>> = out
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.cost.as_ref().map(|r| (i, c, r)))
        .map(|(i, c, r)| {
            let mut row = cost_cells(&c.run.session, &c.run.policy, r, &r.sheet.name, None);
            row.insert(4, r.compaction_calls.to_string());
            if with_regret {
                row.push(regret.get(i).cloned().flatten().map_or("-".into(), |g| {
                    format!("{:.4} (r>={:.1}%)", g.dollars, g.floor)
                }));
            }
            row
        })
        .collect();
    rows.extend(recorded.iter().map(|r| {
        let prices = match r.billed {
            Some(_) => "each request's model",
            None => r.report.sheet.name.as_ref(),
        };
        let billed = r.billed.as_ref().map(|b| b.dollars);
        let mut row = cost_cells(&r.source, &r.arm, &r.report, prices, billed);
        // The recorded requests are the product's own, its compactions among them.
        row.insert(4, "-".to_string());
        if with_regret {
            row.push("-".into());
        }
        row
    }));
    let mut header = vec![
        "session",
        "policy",
        "prices",
        "requests",
        "compaction calls",
        "input tokens",
        "cache read",
        "cache write",
        "breaks/turn",
        "dollars",
        "billed with output",
    ];
    if with_regret {
        header.push("regret");
    }
    let mut s = crate::render::table(&header, rows, format == crate::render::Format::Markdown);
    s.push_str(&cost_notes(out, recorded));
    s
}

fn cost_cells(
    session: &str,
    policy: &str,
    r: &crate::cache::CostReport,
    prices: &str,
    billed: Option<f64>,
) -> Vec<String> {
    vec![
        session.to_string(),
        policy.to_string(),
        prices.to_string(),
        r.requests.len().to_string(),
        r.input_tokens.to_string(),
        r.cache_read_tokens.to_string(),
        r.cache_write_tokens.to_string(),
        format!("{:.2}", r.breaks_per_turn),
        format!("{:.4}", r.dollars),
        billed.map_or("-".to_string(), |b| format!("{b:.4}")),
    ]
}

/// The lines under the cost table: cache model, prices, tokens, what the
/// requests column covers, and what the recorded rows leave out.
fn cost_notes(out: &[Compared], recorded: &[crate::replay::runs::cost_arms::CostRow]) -> String {
    let Some(r) = out.iter().find_map(|c| c.cost.as_ref()) else {
        return String::new();
    };
    let one_sheet = out
        .iter()
        .filter_map(|c| c.cost.as_ref())
        .all(|c| c.sheet.name == r.sheet.name);
    let prices = if one_sheet {
        format!("{} ({})", r.sheet.name, r.sheet.date)
    } else {
        format!(
            "column `prices`: each session at the model that answered most of its main chain, \
             its list price and cache rules as of {}",
            r.sheet.date
        )
    };
    let mut s = format!(
        "\n\ncache: {}; prices: {prices}, prompt side only; tokens: {}\n",
        r.provider, out[0].run.tokenizer
    );
    s.push_str(
        "requests: a replayed row counts its session's model calls as replayed (a log's main chain, \
         the product's own compaction calls left out, or one subagent as a session of its own, \
         `FILE › subagent N`); a recorded row, the same conversation's recorded requests\n",
    );
    if out
        .iter()
        .any(|c| c.run.calls.iter().any(|k| k.envelope > 0))
    {
        s.push_str(
            "replayed rows include each session's envelope, cached first as the system prefix: their tokens and dollars are estimates\n",
        );
    }
    if let Some(b) = recorded.iter().find_map(|r| r.billed.as_ref()) {
        s.push_str(&format!(
            "recorded-usage: what the API billed (API tokens; a break is a collapsed read), \
             each request at its own model's price ({}): dollars = prompt side, billed = with output; \
             recorded-model: the cache model on the same requests\n",
            b.prices
        ));
    }
    if out
        .iter()
        .any(|c| c.cost.as_ref().is_some_and(|r| r.compaction_calls > 0))
    {
        s.push_str(&format!(
            "compaction calls: each summary a policy asked for, priced as a request of its own before the call it preceded, \
             as its product sends it ({}), its output tokens counted by the run's counter (an estimate) at the model's output price; \
             included in requests and dollars\n",
            crate::cache::compaction::PATH
        ));
    }
    s.push_str(&crate::replay::runs::cost_arms::charged_notes(recorded));
    s.push_str(&crate::replay::runs::cost_arms::placeholder_notes(recorded));
    for r in recorded.iter().filter(|r| r.billed.is_some()) {
        if let Some(c) = r.covers.as_ref().filter(|c| c.left_out > 0) {
            s.push_str(&crate::replay::runs::cost_arms::left_out_line(&r.source, c));
        }
    }
    s
}

/// The runs' table; with retention, the retention table and planted facts
/// after it; with pricing, the cost table. JSON: one object whatever was
/// measured (`runs`, `retention`, `cost`, `recorded`, `aggregate`; empty
/// arrays for what was not), so a script keeps working when a flag is added.
pub fn render(out: &[Compared], format: crate::render::Format) -> String {
    render_with_recorded(out, &[], format)
}

/// [`render`], with the recorded usage of Claude Code logs beside the
/// prediction: rows `recorded-usage` and `recorded-model` in the cost table,
/// and in JSON a `recorded` array (totals, per-request series, and the
/// per-request recorded usage beside the predicted reads and writes).
pub fn render_with_recorded(
    out: &[Compared],
    recorded: &[crate::replay::runs::cost_arms::CostRow],
    format: crate::render::Format,
) -> String {
    render_sessions(out, recorded, &Sessions::default(), format)
}

/// [`render_with_recorded`], with each session's envelope and its real
/// compactions: in text, a note line per envelope and the compaction table
/// after the other tables; in JSON, `envelopes` and `product_compactions`
/// (empty arrays when there are none: one shape whatever was measured).
pub fn render_sessions(
    out: &[Compared],
    recorded: &[crate::replay::runs::cost_arms::CostRow],
    info: &Sessions,
    format: crate::render::Format,
) -> String {
    render_optimal(out, recorded, info, &Default::default(), format)
}

/// [`render_sessions`], with each session's cheapest schedule (a table
/// after the others; `optimal` in JSON) and each priced run's regret (a
/// column of the cost table; `regret` of each `cost` entry in JSON).
pub fn render_optimal(
    out: &[Compared],
    recorded: &[crate::replay::runs::cost_arms::CostRow],
    info: &Sessions,
    optimal: &crate::optimal::render::OptimalPart,
    format: crate::render::Format,
) -> String {
    if format == crate::render::Format::Json {
        return render_json(out, recorded, info, optimal);
    }
    let mut s = if out.is_empty() && !optimal.optima.is_empty() {
        String::new()
    } else {
        render_tables(out, recorded, &optimal.regret, format)
    };
    if !optimal.optima.is_empty() {
        if !s.is_empty() {
            s.push('\n');
        }
        s.push_str(&crate::optimal::render::table(&optimal.optima, format));
    }
    let notes = crate::replay::input::envelope::render_notes(&info.envelopes);
    if !notes.is_empty() {
        s.push('\n');
        s.push_str(&notes);
    }
    let real = crate::replay::input::product::render(&info.compactions, format);
    if !real.is_empty() {
        s.push('\n');
        s.push_str(&real);
    }
    let counts = crate::replay::input::product_counts::render(&info.counts, format);
    if !counts.is_empty() {
        s.push('\n');
        s.push_str(&counts);
    }
    s
}

/// The runs, cost and retention tables; the cost table with a regret
/// column when `regret` is not empty.
fn render_tables(
    out: &[Compared],
    recorded: &[crate::replay::runs::cost_arms::CostRow],
    regret: &[Option<crate::optimal::render::Regret>],
    format: crate::render::Format,
) -> String {
    let runs: Vec<PolicyRun> = out.iter().map(|c| c.run.clone()).collect();
    let with: Vec<(PolicyRun, RetentionReport)> = out
        .iter()
        .filter_map(|c| c.retention.clone().map(|r| (c.run.clone(), r)))
        .collect();
    let priced = out.iter().any(|c| c.cost.is_some());
    let closed: Vec<_> = out.iter().filter_map(|c| c.closed_loop.as_ref()).collect();
    if with.is_empty() && !priced && closed.is_empty() {
        return crate::policy::render::runs(&runs, format);
    }
    let scored = scored_retention(out, &with);
    let mut s = crate::policy::render::runs(&runs, format);
    if !closed.is_empty() {
        s.push('\n');
        s.push_str(&closed_loop::table(&closed, format));
        s.push('\n');
        s.push_str(&closed_loop::thrash_table(&closed, format));
    }
    if priced {
        s.push('\n');
        s.push_str(&cost_table(out, recorded, regret, format));
        s.push('\n');
        let priced: Vec<_> = out
            .iter()
            .filter_map(|c| c.cost.as_ref().map(|r| (&c.run, r)))
            .collect();
        s.push_str(&crate::replay::observe::breaks::table(&priced, format));
    }
    if !scored.is_empty() {
        s.push('\n');
        s.push_str(&crate::retention::render::retention(&scored, format));
        s.push('\n');
        s.push_str(&crate::retention::render::facts(&scored, format));
    }
    // Last, where a reader of a long report finds it: each wrapper's sum.
    let variants = crate::replay::observe::variants::table(&variant_summaries(out), format);
    if !variants.is_empty() {
        s.push('\n');
        s.push_str(&variants);
    }
    s
}

/// `lab replay --policy … --format json`: one shape whatever the flags (a
/// part that was not measured is an empty list), described by the JSON
/// Schema [`schema`] generates (checked in as `lab/schemas/replay-policies.schema.json`).
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct PoliciesJson<'a> {
    /// Every policy on every session: calls, events, the checker's
    /// findings, and the anchor it was replayed under.
    pub runs: &'a [RunJson<'a>],
    /// `--closed-loop`: every run's closed-loop row (empty without).
    pub closed_loop: Vec<&'a closed_loop::ClosedLoopRow>,
    /// With `--retention`: what each run kept and sent, and the frontier.
    pub retention: &'a [crate::retention::render::Scored],
    /// With `--cost`: each run priced by the cache model.
    pub cost: Vec<PolicyCostJson<'a>>,
    /// With `--cost`: the recorded usage of sessions that record it.
    pub recorded: &'a [crate::replay::runs::cost_arms::CostRow],
    /// Each session's envelope (the fixed prefix every request carries) and where its size came from.
    pub envelopes: &'a [crate::replay::input::envelope::EnvelopeNote],
    /// Each real compaction of the product, beside where its own policy fired.
    pub product_compactions: &'a [crate::replay::input::product::ProductCompaction],
    /// Each session whose log records the product's own per-call count
    /// (aider's `> Tokens: N sent`), beside its port's requests.
    pub product_counts: &'a [crate::replay::input::product_counts::CountSeries],
    /// Per policy: the sessions and the mean, median and p95 of every
    /// counter over them (for a corpus, the only part filled).
    pub aggregate: Vec<crate::replay::observe::aggregate::PolicyAggregate>,
    /// A corpus replay: what was replayed, which shard, and each session's
    /// records (`null` for named session files).
    pub corpus: Option<&'a crate::replay::runs::shard::CorpusJson>,
    /// With `--optimal`: each session's cheapest schedule.
    pub optimal: &'a [crate::optimal::render::Optimum],
    /// With `--cost`: each wrapper (`frozen:P`, `gated:P`) against the
    /// design it wraps, over the sessions where both ran.
    pub variants: Vec<crate::replay::observe::variants::VariantSummary>,
}

/// One priced run of [`PoliciesJson`].
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct PolicyCostJson<'a> {
    /// Session name.
    pub session: &'a str,
    /// Policy name.
    pub policy: &'a str,
    /// What the run read of the log's recorded usage (`null`: the session
    /// records none): under `none` these dollars are predicted, under
    /// `recorded` they reproduce the log.
    pub anchor: Option<crate::replay::input::anchor::Anchor>,
    /// With `--optimal`: the run's dollars against the cheapest schedule
    /// at its retention (`null` without).
    pub regret: Option<crate::optimal::render::Regret>,
    /// The cache model's verdict on every request.
    #[serde(flatten)]
    pub report: &'a crate::cache::CostReport,
}

/// One run of [`PoliciesJson`]: the engine's record and the anchor it was
/// replayed under (the engine's crate knows no anchor: it is the replay's
/// reading of a log).
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct RunJson<'a> {
    /// The run.
    #[serde(flatten)]
    pub run: &'a PolicyRun,
    /// What the run read of the log's recorded usage (`none`: nothing
    /// after the first request; `recorded`: sizes read from the log);
    /// `null` for a session that records no usage.
    pub anchor: Option<crate::replay::input::anchor::Anchor>,
}

/// The JSON Schema (draft 2020-12) of [`PoliciesJson`], as serialised.
pub fn schema() -> serde_json::Value {
    crate::render::schema_of::<PoliciesJson<'static>>()
}

/// The retention of the runs that measured it, scored, with their dollars
/// and the dominated ones marked.
fn scored_retention(
    out: &[Compared],
    with: &[(PolicyRun, RetentionReport)],
) -> Vec<crate::retention::render::Scored> {
    let mut scored = crate::retention::render::score(with);
    for (s, c) in scored
        .iter_mut()
        .zip(out.iter().filter(|c| c.retention.is_some()))
    {
        s.dollars = c.cost.as_ref().map(|r| r.dollars);
    }
    crate::retention::render::mark_dominated(&mut scored);
    scored
}

/// [`render_sessions`] as JSON ([`PoliciesJson`]).
fn render_json(
    out: &[Compared],
    recorded: &[crate::replay::runs::cost_arms::CostRow],
    info: &Sessions,
    optimal: &crate::optimal::render::OptimalPart,
) -> String {
    let runs: Vec<RunJson<'_>> = out
        .iter()
        .map(|c| RunJson {
            run: &c.run,
            anchor: c.anchor,
        })
        .collect();
    let with: Vec<(PolicyRun, RetentionReport)> = out
        .iter()
        .filter_map(|c| c.retention.clone().map(|r| (c.run.clone(), r)))
        .collect();
    let scored = scored_retention(out, &with);
    let cost = out
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            c.cost.as_ref().map(|r| PolicyCostJson {
                session: &c.run.session,
                policy: &c.run.policy,
                anchor: c.anchor,
                regret: optimal.regret.get(i).cloned().flatten(),
                report: r,
            })
        })
        .collect();
    crate::render::json(&PoliciesJson {
        runs: &runs,
        closed_loop: out.iter().filter_map(|c| c.closed_loop.as_ref()).collect(),
        retention: &scored,
        cost,
        recorded,
        envelopes: &info.envelopes,
        product_compactions: &info.compactions,
        product_counts: &info.counts,
        aggregate: crate::replay::observe::aggregate::of_records(out.iter().map(|c| {
            crate::replay::observe::aggregate::SessionRecord::of(
                &c.run,
                c.cost.as_ref(),
                c.retention.as_ref(),
                c.anchor,
            )
        })),
        corpus: None,
        optimal: &optimal.optima,
        variants: variant_summaries(out),
    })
}

/// A corpus replay as JSON ([`PoliciesJson`]): the per-run arrays empty (a
/// corpus is streamed, never held), the aggregate of the corpus's records.
pub fn render_corpus_json(corpus: &crate::replay::runs::shard::CorpusJson) -> String {
    render_corpus_json_with(corpus, corpus.aggregate().rows())
}

/// [`render_corpus_json`] with the aggregate given (a merge computes it
/// before it streams the records, which `corpus` then leaves out).
pub fn render_corpus_json_with(
    corpus: &crate::replay::runs::shard::CorpusJson,
    aggregate: Vec<crate::replay::observe::aggregate::PolicyAggregate>,
) -> String {
    crate::render::json(&PoliciesJson {
        runs: &[],
        closed_loop: Vec::new(),
        retention: &[],
        cost: Vec::new(),
        recorded: &[],
        envelopes: &[],
        product_compactions: &[],
        product_counts: &[],
        aggregate,
        corpus: Some(corpus),
        optimal: &[],
        variants: Vec::new(),
    })
}
