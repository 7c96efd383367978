//! Policies compared on sessions: the driver behind `lab replay --policy`.
//!
//! Imports each transcript once, replays it under every named policy through
//! the [engine](crate::policy::engine), and optionally measures
//! [retention](crate::retention) with planted facts.

use std::path::PathBuf;

use crate::error::LabResult;
use crate::message::Message;
use crate::policy::course::CoursePolicy;
use crate::policy::engine::{replay_observed, Env, Observer, PolicyRun, Session};
use crate::policy::{list, Policy};
use crate::retention::planted::{plant, Position};
use crate::retention::{Retention, RetentionReport};

/// Every policy name `names` asks for: `all` expands to every policy.
pub fn expand_names(names: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in names {
        if n.eq_ignore_ascii_case("all") {
            out.extend(list::names().into_iter().map(str::to_string));
        } else {
            out.push(n.clone());
        }
    }
    out.dedup();
    out
}

/// Build a policy for one session: course profiles get a root whose result
/// path is `path_len` long for the session's first tool id, as `lab replay
/// --profile` does.
fn make_for(name: &str, messages: &[Message], path_len: usize) -> LabResult<Box<dyn Policy>> {
    let lower = name.to_ascii_lowercase();
    if lower == "seed" || CoursePolicy::names().contains(&lower.as_str()) {
        let ref_id = messages
            .iter()
            .flat_map(|m| m.tool_use_ids())
            .next()
            .map_or(7, |id| id.chars().count());
        return Ok(Box::new(CoursePolicy::with_root(
            &lower,
            Some(path_len),
            ref_id,
        )?));
    }
    list::make(name)
}

/// How to price requests: the cache model, the price sheet for replayed
/// requests and the per-model table for recorded ones.
#[derive(Debug, Clone)]
pub struct Pricing {
    /// The provider's cache model.
    pub provider: crate::cache::Provider,
    /// The price sheet (named and dated).
    pub sheet: crate::cache::PriceSheet,
    /// Per-model prices for recorded usage (`--prices FILE`, else built in).
    pub prices: std::sync::Arc<crate::cache::prices::table::PriceTable>,
}

/// What to measure besides the checker's verdict.
#[derive(Debug, Clone, Default)]
pub struct Measure {
    /// Artifact recall, re-fetch demand and planted facts.
    pub retention: bool,
    /// Prompt-cache cost, when priced.
    pub pricing: Option<Pricing>,
    /// The tokenizer sizes are counted with.
    pub tokens: crate::tokens::Tokens,
}

/// One session under one policy.
#[derive(Debug, Clone)]
pub struct Compared {
    /// The run.
    pub run: PolicyRun,
    /// Retention, when asked for.
    pub retention: Option<RetentionReport>,
    /// Prompt-cache cost, when priced.
    pub cost: Option<crate::cache::CostReport>,
}

/// Replay one session (already imported) under one policy.
pub fn compare_one(
    label: &str,
    messages: &[Message],
    name: &str,
    path_len: usize,
    measure: &Measure,
) -> LabResult<Compared> {
    let mut policy = make_for(name, messages, path_len)?;
    let (planted, facts) = if measure.retention {
        plant(messages, &Position::ALL)
    } else {
        (messages.to_vec(), vec![])
    };
    let session = Session {
        name: label,
        messages: &planted,
        times_ms: None,
    };
    let mut env = Env {
        tokens: measure.tokens.counter(),
        ..Env::default()
    };
    let mut retention = Retention::for_session(&planted, facts);
    let mut cost = crate::cache::observe::CostObserver::new(0, None);
    let mut observers: Vec<&mut dyn Observer> = Vec::new();
    if measure.retention {
        observers.push(&mut retention);
    }
    if measure.pricing.is_some() {
        observers.push(&mut cost);
    }
    let run = replay_observed(policy.as_mut(), session, &mut env, &mut observers)?;
    Ok(Compared {
        run,
        retention: measure.retention.then(|| retention.finish()),
        cost: measure
            .pricing
            .as_ref()
            .map(|p| cost.finish(&p.provider, &p.sheet)),
    })
}

/// Replay every file under every named policy (`all` for every policy), in
/// file order then policy order. Unknown names fail before any work.
pub fn replay_files(
    files: &[PathBuf],
    names: &[String],
    path_len: usize,
    import: &crate::import::ImportOptions,
    measure: Measure,
) -> LabResult<Vec<Compared>> {
    let names = expand_names(names);
    for n in &names {
        list::make(n)?;
    }
    let mut out = Vec::new();
    for file in files {
        // A trajectory array holds one session per trajectory; each is replayed.
        for session in crate::import::import_file_sessions(file, import)? {
            for name in &names {
                let c = compare_one(&session.label, &session.main, name, path_len, &measure)?;
                out.push(c);
            }
        }
    }
    Ok(out)
}

/// `--plot` with `--policy` draws cumulative dollars, so it needs `--cost`;
/// `--cost` without `--policy` has no plot.
pub fn check_plot(plot: bool, policy: bool, cost: bool) -> LabResult<()> {
    match (plot, policy, cost) {
        (true, true, false) => Err(crate::error::LabError::usage(
            "--plot with --policy draws cumulative dollars and needs --cost",
            "add --cost, or drop --plot",
        )),
        (true, false, true) => Err(crate::error::LabError::usage(
            "--cost without --policy has no plot",
            "drop --plot, or replay with --policy NAME --cost --plot FILE",
        )),
        _ => Ok(()),
    }
}

/// For each file that records its API usage (Claude Code logs), the
/// recorded usage (`recorded-usage`) and the cache model's prediction for the
/// same requests (`recorded-model`, with the per-request comparison).
pub fn recorded_usage(
    files: &[PathBuf],
    import: &crate::import::ImportOptions,
    pricing: &Pricing,
) -> LabResult<Vec<crate::replay::cost_arms::CostRow>> {
    use crate::import::TranscriptFormat;
    let options = crate::replay::cost_arms::CostOptions {
        tokens: crate::tokens::Tokens::Approx,
        provider: pricing.provider,
        sheet: pricing.sheet,
        prices: pricing.prices.clone(),
        // The policy table prices every replay at the one sheet.
        by_model: false,
    };
    let mut rows = Vec::new();
    for file in files {
        let format = match import.format {
            Some(f) => f,
            None => crate::import::detect_format(file, &head(file)?),
        };
        if matches!(
            format,
            TranscriptFormat::ClaudeJsonl | TranscriptFormat::ChatJson
        ) {
            let name = file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let recorded = crate::tokens::recorded::read_file(file)?;
            rows.extend(crate::replay::cost_arms::recorded_rows(
                &name, &recorded, &options,
            )?);
        }
    }
    Ok(rows)
}

/// The first 64 KiB of a file, for format detection.
pub(crate) fn head(path: &std::path::Path) -> LabResult<Vec<u8>> {
    use std::io::Read;
    let mut buf = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(64 * 1024).read_to_end(&mut buf))
        .map_err(|e| crate::error::LabError::io("reading transcript", path, e))?;
    Ok(buf)
}

/// Per policy × session: what was sent and what the cache made of it.
fn cost_table(
    out: &[Compared],
    recorded: &[crate::replay::cost_arms::CostRow],
    format: crate::render::Format,
) -> String {
    let mut rows: Vec<Vec<String>> = out
        .iter()
        .filter_map(|c| c.cost.as_ref().map(|r| (c, r)))
        .map(|(c, r)| {
            vec![
                c.run.session.clone(),
                c.run.policy.clone(),
                r.input_tokens.to_string(),
                r.cache_read_tokens.to_string(),
                r.cache_write_tokens.to_string(),
                format!("{:.2}", r.breaks_per_turn),
                format!("{:.4}", r.dollars),
            ]
        })
        .collect();
    rows.extend(recorded.iter().map(|r| {
        let c = &r.report;
        vec![
            r.source.clone(),
            r.arm.clone(),
            c.input_tokens.to_string(),
            c.cache_read_tokens.to_string(),
            c.cache_write_tokens.to_string(),
            format!("{:.2}", c.breaks_per_turn),
            format!("{:.4}", c.dollars),
            r.billed
                .as_ref()
                .map_or("-".to_string(), |b| format!("{:.4}", b.dollars)),
        ]
    }));
    let mut s = crate::render::table(
        &[
            "session",
            "policy",
            "input tokens",
            "cache read",
            "cache write",
            "breaks/turn",
            "dollars",
            "billed with output",
        ],
        rows,
        format == crate::render::Format::Markdown,
    );
    if let Some(r) = out.iter().find_map(|c| c.cost.as_ref()) {
        s.push_str(&format!(
            "\n\ncache: {}; prices: {} ({}), prompt side only; tokens: {}\n",
            r.provider, r.sheet.name, r.sheet.date, out[0].run.tokenizer
        ));
        if let Some(b) = recorded.iter().find_map(|r| r.billed.as_ref()) {
            s.push_str(&format!(
                "recorded-usage: what the API billed (API tokens; a break is a collapsed read), \
                 each request at its own model's price ({}): dollars = prompt side, billed = with output; \
                 recorded-model: the cache model on the same requests\n",
                b.prices
            ));
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
    recorded: &[crate::replay::cost_arms::CostRow],
    format: crate::render::Format,
) -> String {
    use crate::render::Format;
    let runs: Vec<PolicyRun> = out.iter().map(|c| c.run.clone()).collect();
    let with: Vec<(PolicyRun, RetentionReport)> = out
        .iter()
        .filter_map(|c| c.retention.clone().map(|r| (c.run.clone(), r)))
        .collect();
    let priced = out.iter().any(|c| c.cost.is_some());
    if with.is_empty() && !priced && format != Format::Json {
        return crate::policy::render::runs(&runs, format);
    }
    let mut scored = crate::retention::render::score(&with);
    for (s, c) in scored
        .iter_mut()
        .zip(out.iter().filter(|c| c.retention.is_some()))
    {
        s.dollars = c.cost.as_ref().map(|r| r.dollars);
    }
    crate::retention::render::mark_dominated(&mut scored);
    if format == Format::Json {
        return render_json(out, &runs, &scored, recorded);
    }
    let mut s = crate::policy::render::runs(&runs, format);
    if priced {
        s.push('\n');
        s.push_str(&cost_table(out, recorded, format));
    }
    if !scored.is_empty() {
        s.push('\n');
        s.push_str(&crate::retention::render::retention(&scored, format));
        s.push('\n');
        s.push_str(&crate::retention::render::facts(&scored, format));
    }
    s
}

/// [`render_with_recorded`] as JSON: the runs, the scored retention, each
/// priced run's cost and the recorded usage.
fn render_json(
    out: &[Compared],
    runs: &[PolicyRun],
    scored: &[crate::retention::render::Scored],
    recorded: &[crate::replay::cost_arms::CostRow],
) -> String {
    #[derive(serde::Serialize)]
    struct Cost<'a> {
        session: &'a str,
        policy: &'a str,
        #[serde(flatten)]
        report: &'a crate::cache::CostReport,
    }
    #[derive(serde::Serialize)]
    struct All<'a> {
        runs: &'a [PolicyRun],
        retention: &'a [crate::retention::render::Scored],
        cost: Vec<Cost<'a>>,
        recorded: &'a [crate::replay::cost_arms::CostRow],
        aggregate: Vec<super::aggregate::PolicyAggregate>,
    }
    let cost = out
        .iter()
        .filter_map(|c| {
            c.cost.as_ref().map(|r| Cost {
                session: &c.run.session,
                policy: &c.run.policy,
                report: r,
            })
        })
        .collect();
    crate::render::json(&All {
        runs,
        retention: scored,
        cost,
        recorded,
        aggregate: super::aggregate::of_records(out.iter().map(|c| {
            super::aggregate::SessionRecord::of(&c.run, c.cost.as_ref(), c.retention.as_ref())
        })),
    })
}
