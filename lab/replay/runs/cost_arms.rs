//! `lab replay FILE... --cost`: every arm of every session priced.
//!
//! Arms: `none` (no compaction), each requested course profile, and for a
//! Claude Code log the recorded session twice: `recorded-usage` (what the
//! API billed) and `recorded-model` (what the cache model predicts for the
//! same requests). Course profiles keep characters as their own unit; their
//! requests are counted with the chosen tokenizer only for pricing. The
//! recorded arms are in the API's own tokens whatever `--tokens` says.
//!
//! Prices: replayed arms and `recorded-model` by the sheet (prompt side
//! only); `recorded-usage` by each request's own model from the price table
//! ([`crate::cache::bill`]), its prompt side in `dollars` beside the others and its
//! whole bill, output included, in its own column.

use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;

use super::profiles::{replay_with, ReplayOptions};
use crate::cache::bill::{bill, RecordedBill};
use crate::cache::observe::{CallPrice, CallPricing};
use crate::cache::prices::table::PriceTable;
use crate::cache::recorded::{validate, Validation};
use crate::cache::session::{none_requests, RequestBuilder};
use crate::cache::{prices, CostReport, PriceSheet, Provider, RequestCost};
use crate::error::{LabError, LabResult};
use crate::import::{ImportOptions, ImportedSession};
use crate::tokens::recorded::RecordedRequest;
use crate::tokens::Tokens;

/// How to price.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CostOptions {
    /// Tokenizer for replayed requests.
    pub tokens: Tokens,
    /// The cache model.
    pub provider: Provider,
    /// The price sheet.
    pub sheet: PriceSheet,
    /// Per-model prices for recorded usage (named by origin and date).
    #[serde(serialize_with = "crate::cache::prices::table::serialize_summary")]
    pub prices: Arc<PriceTable>,
    /// Price each Claude Code log's replayed arms at its session's model
    /// (with that model's minimum cacheable prefix) instead of `sheet`,
    /// which then serves sessions without a recorded model. On when the
    /// command line names no `--sheet`.
    pub by_model: bool,
    /// The fixed prefix the replayed arms carry (`--envelope`).
    #[serde(skip)]
    pub envelope: crate::replay::input::envelope::EnvelopeArg,
    /// Which conversations of a Claude Code log are priced: by default the
    /// main chain and each subagent as a session of its own.
    pub conversations: crate::replay::input::subagents::Conversations,
    /// `--anchor`: what the replayed arms read of recorded usage (the
    /// recorded rows read it all: they are the bill).
    #[serde(serialize_with = "crate::replay::input::anchor::serialize_anchor")]
    pub anchor: crate::replay::input::anchor::AnchorArg,
}

/// Default: approx tokens, Anthropic 5-minute cache, Claude Opus 4.1 prices
/// (the model most of the shared sessions ran on), the built-in price table.
impl Default for CostOptions {
    fn default() -> Self {
        CostOptions {
            tokens: Tokens::Approx,
            provider: Provider::Anthropic(Default::default()),
            sheet: prices::sheet("claude-opus-4.1-5m")
                .expect("sheet exists")
                .clone(),
            prices: PriceTable::builtin(),
            by_model: false,
            envelope: Default::default(),
            conversations: Default::default(),
            anchor: Default::default(),
        }
    }
}

impl CostOptions {
    /// Options with the sheet named `name`; a usage error lists the sheets.
    pub fn with_sheet(mut self, name: &str) -> LabResult<CostOptions> {
        self.sheet = prices::named(name).ok_or_else(|| {
            LabError::usage(
                format!("unknown price sheet `{name}`"),
                prices::named_help(),
            )
        })?;
        Ok(self)
    }
}

/// What `lab replay --cost` asked for.
#[derive(Debug, Clone)]
pub struct CostArgs {
    /// Transcript files.
    pub files: Vec<PathBuf>,
    /// Profiles (empty: all).
    pub profiles: Vec<String>,
    /// Tokenizer.
    pub tokens: Tokens,
    /// Cache model.
    pub cache: crate::cache::provider::CacheChoice,
    /// Price sheet name; `None`: each session's model.
    pub sheet: Option<String>,
    /// `--prices FILE`: per-model prices instead of the built-in table.
    pub prices: Option<PathBuf>,
    /// `--envelope`: the fixed prefix of the replayed arms.
    pub envelope: crate::replay::input::envelope::EnvelopeArg,
    /// `--main-chain-only`: leave the subagents out.
    pub conversations: crate::replay::input::subagents::Conversations,
    /// `--anchor`.
    pub anchor: crate::replay::input::anchor::AnchorArg,
}

/// `lab replay … --cost`: prices every arm and renders the rows.
pub fn cli(
    args: &CostArgs,
    replay: &ReplayOptions,
    import: &ImportOptions,
    format: crate::render::Format,
) -> LabResult<String> {
    let options = CostOptions {
        tokens: args.tokens,
        provider: args.cache.provider(),
        prices: load_prices(args.prices.as_deref())?,
        by_model: args.sheet.is_none(),
        envelope: args.envelope,
        conversations: args.conversations,
        anchor: args.anchor,
        ..CostOptions::default()
    }
    .with_sheet(args.sheet.as_deref().unwrap_or(prices::DEFAULT_SHEET))?;
    let names: Vec<&str> = args.profiles.iter().map(String::as_str).collect();
    let rows = run_cost(&args.files, &names, replay, import, &options)?;
    Ok(render_cost(&rows, &options, format))
}

/// The price table `--prices FILE` names, else the built-in one.
pub fn load_prices(file: Option<&std::path::Path>) -> LabResult<Arc<PriceTable>> {
    match file {
        Some(f) => Ok(Arc::new(crate::cache::prices::file::load(f)?)),
        None => Ok(PriceTable::builtin()),
    }
}

/// One arm of one session.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CostRow {
    /// Transcript file name.
    pub source: String,
    /// `none`, a profile name, `recorded-usage` or `recorded-model`.
    pub arm: String,
    /// Tokenizer of the sizes.
    pub tokenizer: String,
    /// Totals and per-request series.
    pub report: CostReport,
    /// For a profile arm: its savings and extra writes against `none`.
    pub tradeoff: Option<crate::cache::Tradeoff>,
    /// For `recorded-model`: recorded usage beside the prediction.
    pub recorded: Option<Validation>,
    /// For `recorded-usage`: the bill at each request's model's prices.
    pub billed: Option<RecordedBill>,
    /// For a replayed arm: tokens of the session's envelope sent before
    /// every request (an estimate, see `replay::envelope`); 0 for none.
    pub envelope_tokens: usize,
    /// For the recorded arms: which of the log's requests the row covers
    /// (the main chain, the base a replay shares) and what the rest cost.
    pub covers: Option<Coverage>,
}

/// Which recorded requests a row covers: one conversation's, the same
/// requests a replay of that conversation sends (the main chain, or one
/// subagent replayed as a session of its own).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Coverage {
    /// Whose requests: `main chain`, or `subagent N` (the log's subagent
    /// conversations numbered from 1 in file order).
    pub conversation: String,
    /// Requests in the row.
    pub requests: usize,
    /// Subagent requests of the log in no recorded row: every one with
    /// `--main-chain-only`, else those that pair with no subagent message
    /// the import kept. Named on the main chain's rows (0 on a subagent's).
    pub left_out: usize,
    /// What those were billed, output included, each at its model's price.
    pub left_out_billed: f64,
    /// Their prompt side alone (uncached input, cache writes and reads),
    /// as the rows beside them count: what adds to a replayed row's dollars.
    pub left_out_prompt: f64,
}

/// Prices every arm of every file.
pub fn run_cost(
    files: &[PathBuf],
    profiles: &[&str],
    replay: &ReplayOptions,
    import: &ImportOptions,
    options: &CostOptions,
) -> LabResult<Vec<CostRow>> {
    let names = if profiles.is_empty() {
        crate::replay::runs::profiles::profile_names()
    } else {
        profiles.to_vec()
    };
    for n in &names {
        crate::compact::config::profile(n)?;
    }
    let replay = ReplayOptions {
        cost_tokens: Some(options.tokens),
        ..replay.clone()
    };
    let mut rows = Vec::new();
    for f in files {
        for logged in crate::replay::input::subagents::replayed_sessions(
            f,
            import,
            options.conversations,
            options.envelope,
            options.tokens,
            options.anchor,
        )? {
            rows.extend(conversation_rows(&logged, &names, &replay, options)?);
        }
    }
    Ok(rows)
}

/// Every arm of one session (a log's main chain or one of its subagents),
/// and its recorded rows when its log records usage.
fn conversation_rows(
    logged: &crate::replay::input::subagents::LoggedSession,
    names: &[&str],
    replay: &ReplayOptions,
    options: &CostOptions,
) -> LabResult<Vec<CostRow>> {
    let (session, log) = (&logged.session, logged.log.as_ref());
    let trajectory = crate::tokens::recorded::trajectory::requests(session)?;
    let recorded = log.map(|l| &l.requests[..]).or(trajectory.as_deref());
    let options = session_options(options, recorded, &source_name(session))?;
    let counter = options.tokens.counter();
    let predicted = log.map(|l| l.anchored(options.anchor.anchor));
    let envelope = crate::replay::input::envelope::envelope_for(
        session,
        predicted.as_deref(),
        options.envelope,
        counter.as_ref(),
    )?;
    let replay = ReplayOptions {
        cost_envelope: envelope.prefix.tokens as u64,
        // The arms replay every message of `main`, artefacts included.
        resumes: log.map(|l| l.resumed_before(session)).unwrap_or_default(),
        ..replay.clone()
    };
    // The arms replay every message of `main`: calls keyed by its indices.
    let prices = match log {
        Some(l) => call_prices(
            l.reply_models(session),
            &options,
            recorded.and_then(crate::cache::bill::conversation_model),
            |m| {
                crate::cache::bill::located(
                    &source_name(session),
                    recorded.unwrap_or_default(),
                    Some(m),
                )
            },
        )?,
        None => Default::default(),
    };
    let mut rows = session_rows(session, names, &replay, &options, &prices)?;
    rows.extend(own_recorded_rows(
        session,
        log,
        trajectory.as_deref(),
        &options,
    )?);
    Ok(rows)
}

/// The recorded rows of a session on its own requests: its conversation's
/// in a Claude Code log (`log`), else a trajectory's (`trajectory`); none
/// for a format that records no usage.
pub fn own_recorded_rows(
    session: &ImportedSession,
    log: Option<&crate::replay::input::envelope::RecordedLog>,
    trajectory: Option<&[RecordedRequest]>,
    options: &CostOptions,
) -> LabResult<Vec<CostRow>> {
    match (log, trajectory) {
        (Some(l), _) => recorded_rows(session, &l.requests, &l.left_out, options),
        (None, Some(t)) => recorded_rows(session, t, &[], options),
        (None, None) => Ok(Vec::new()),
    }
}

/// With [`CostOptions::by_model`], the options for one log: its session
/// model's prices and minimum cacheable prefix (when the cache model is of
/// that model's provider); a log without a recorded model keeps the sheet.
fn session_options(
    options: &CostOptions,
    recorded: Option<&[RecordedRequest]>,
    source: &str,
) -> LabResult<CostOptions> {
    let model = recorded.and_then(crate::cache::bill::conversation_model);
    let mut o = options.clone();
    if options.by_model {
        let at = crate::cache::bill::located(source, recorded.unwrap_or_default(), model);
        (o.provider, o.sheet) = priced_at(options, model, &at)?;
    }
    Ok(o)
}

/// The cache model and sheet that price a replay of a session whose model
/// is `model` (read from `source`): that model's list prices and minimum
/// cacheable prefix (when the cache model is of its provider); without a
/// model, the options' own. A model the table lacks is refused (exit 2).
pub fn priced_at(
    options: &CostOptions,
    model: Option<&str>,
    source: &str,
) -> LabResult<(Provider, PriceSheet)> {
    let (mut provider, mut sheet) = (options.provider, options.sheet.clone());
    let Some(model) = model else {
        return Ok((provider, sheet));
    };
    if let crate::cache::prices::table::Lookup::Priced(m) = options.prices.require(model, source)? {
        let one_hour = options.provider.ttl_ms() >= 3_600_000;
        sheet = prices::sheet_of(m, one_hour, &options.prices.date);
        if m.provider == options.provider.family() {
            provider = options.provider.with_min_tokens(m.min_cache_tokens);
        }
    }
    Ok((provider, sheet))
}

/// The calls a replay prices apart from its sheet, from the model of each
/// reply (`models`, keyed as the caller keys its calls), as the recorded
/// bill prices each request at the model that answered it (`bill::bill`):
/// a reply no model wrote (`<synthetic>`) is no call, and with per-model
/// pricing a call another model than the session's `model` answered is
/// priced at that model's sheet (a model without a price refused, named
/// at `located(model)`). A reply's model is no usage, so every anchor
/// reads it.
pub fn call_prices(
    models: std::collections::BTreeMap<usize, String>,
    options: &CostOptions,
    model: Option<&str>,
    located: impl Fn(&str) -> String,
) -> LabResult<std::collections::BTreeMap<usize, CallPrice>> {
    let mut out = std::collections::BTreeMap::new();
    for (at, answered) in models {
        let price = match options.prices.lookup(&answered) {
            Some(crate::cache::prices::table::Lookup::NotAModel) => CallPrice::NotSent,
            _ if !options.by_model || Some(answered.as_str()) == model => continue,
            _ => {
                let (_, sheet) = priced_at(options, Some(&answered), &located(&answered))?;
                CallPrice::At {
                    model: answered,
                    sheet,
                }
            }
        };
        out.insert(at, price);
    }
    Ok(out)
}

/// `requests`, answering the calls at `calls` (indices the keys of
/// `prices` use), priced call by call ([`CallPricing`]).
fn cost_calls(
    mut requests: Vec<crate::cache::CacheRequest>,
    calls: impl Iterator<Item = usize>,
    prices: &std::collections::BTreeMap<usize, CallPrice>,
    options: &CostOptions,
) -> CostReport {
    let mut per_call = CallPricing::default();
    let mut kept = Vec::with_capacity(requests.len());
    for (mut r, at) in requests.drain(..).zip(calls) {
        if per_call.admit(&mut r, prices.get(&at)) {
            kept.push(r);
        }
    }
    per_call.cost(&kept, &options.provider, &options.sheet)
}

fn source_name(s: &ImportedSession) -> String {
    s.source
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn session_rows(
    session: &ImportedSession,
    names: &[&str],
    replay: &ReplayOptions,
    options: &CostOptions,
    prices: &std::collections::BTreeMap<usize, CallPrice>,
) -> LabResult<Vec<CostRow>> {
    let source = session.label.clone();
    let mut builder = RequestBuilder::new(options.tokens, replay.cost_envelope);
    let row = |arm: &str, report| CostRow {
        source: source.clone(),
        arm: arm.to_string(),
        tokenizer: builder_name(options.tokens),
        tradeoff: None,
        report,
        recorded: None,
        billed: None,
        envelope_tokens: replay.cost_envelope as usize,
        covers: None,
    };
    let answers: Vec<usize> = session
        .main
        .iter()
        .enumerate()
        .filter_map(|(i, m)| (m.role == crate::message::Role::Assistant).then_some(i))
        .collect();
    let none = stamped(
        none_requests(&session.main, &replay.resumes, &mut builder),
        answers.iter().copied(),
        session,
    );
    let none = cost_calls(none, answers.into_iter(), prices, options);
    let mut rows = vec![row("none", none)];
    for n in names {
        let r = replay_with(session, n, replay)?;
        let calls: Vec<usize> = r.series.iter().map(|p| p.at).collect();
        let requests = stamped(r.cache_requests, calls.iter().copied(), session);
        let mut arm = row(n, cost_calls(requests, calls.into_iter(), prices, options));
        arm.tradeoff = Some(crate::cache::tradeoff(&arm.report, &rows[0].report));
        rows.push(arm);
    }
    Ok(rows)
}

/// Each request stamped with the recorded time of the message it answers
/// (`calls`: its index in `session.main`), so that the cache's TTL expires
/// across an idle gap as it does in a policy replay.
fn stamped(
    mut requests: Vec<crate::cache::CacheRequest>,
    calls: impl Iterator<Item = usize>,
    session: &ImportedSession,
) -> Vec<crate::cache::CacheRequest> {
    for (r, at) in requests.iter_mut().zip(calls) {
        let time = session.main_times_ms.get(at).copied().flatten();
        r.at_ms = time.and_then(|t| i64::try_from(t).ok());
    }
    requests
}

fn builder_name(t: Tokens) -> String {
    t.counter().name().to_string()
}

/// The two recorded arms of `session`, one conversation of a Claude Code
/// log (its main chain, or a subagent replayed as a session of its own),
/// over `requests`, that conversation's recorded requests; `left_out`, the
/// log's subagent requests in no conversation's rows, named beside. A
/// request whose model has no price refuses the log (the error names the
/// file and line).
pub fn recorded_rows(
    session: &ImportedSession,
    requests: &[RecordedRequest],
    left_out: &[RecordedRequest],
    options: &CostOptions,
) -> LabResult<Vec<CostRow>> {
    let (file, source) = (source_name(session), session.label.as_str());
    let left_bill = bill(&file, left_out, &options.prices)?;
    let covers = Coverage {
        conversation: crate::replay::input::subagents::conversation(session),
        requests: requests.len(),
        left_out: left_out.len(),
        // `+ 0.0`: an empty sum is -0.0, printed as such.
        left_out_billed: left_bill.dollars + 0.0,
        left_out_prompt: left_bill.input_dollars + 0.0,
    };
    let billed = bill(&file, requests, &options.prices)?;
    let (model, validation) = validate(requests, &options.provider, &options.sheet);
    let usage = usage_report(requests, &model, &validation, &billed);
    // Both recorded rows count a break as a collapsed read, the only break
    // the recorded usage can show.
    let mut model = model;
    for (r, c) in model.requests.iter_mut().zip(&validation.series) {
        r.broke = c.predicted_rewrite;
    }
    let model = crate::cache::summarize(model.provider.clone(), model.sheet, model.requests);
    let row = |arm: &str, report, recorded| CostRow {
        source: source.to_string(),
        arm: arm.to_string(),
        tokenizer: "api".to_string(),
        report,
        tradeoff: None,
        recorded,
        billed: None,
        envelope_tokens: 0,
        covers: Some(covers.clone()),
    };
    let mut usage = row("recorded-usage", usage, None);
    usage.billed = Some(billed);
    Ok(vec![usage, row("recorded-model", model, Some(validation))])
}

/// The recorded usage as a report: the model's series with the billed
/// figures put in, dollars the prompt side at each request's model's price;
/// a break is a collapsed read (as [`Validation`] counts it).
fn usage_report(
    recorded: &[RecordedRequest],
    model: &CostReport,
    validation: &Validation,
    billed: &RecordedBill,
) -> CostReport {
    let requests: Vec<RequestCost> = recorded
        .iter()
        .zip(&model.requests)
        .zip(&validation.series)
        .zip(&billed.per_request)
        .map(|(((r, m), c), b)| {
            let u = r.usage;
            RequestCost {
                input_tokens: u.total(),
                lcp_tokens: u.cache_read_input_tokens,
                cache_read_tokens: u.cache_read_input_tokens,
                cache_write_tokens: u.cache_creation_input_tokens,
                uncached_tokens: u.input_tokens,
                dollars: b.input_side,
                broke: c.recorded_rewrite,
                break_at: None,
                expired: false,
                payback_turns: None,
                ..m.clone()
            }
        })
        .collect();
    crate::cache::summarize(model.provider.clone(), model.sheet.clone(), requests)
}

/// The header line naming the tokenizer, cache model and dated prices.
pub fn header(options: &CostOptions) -> String {
    let sheet = format!("{} as of {}", options.sheet.name, options.sheet.date);
    let replayed = if options.by_model {
        format!("each log's session model (column `prices`; a session without a recorded model: {sheet})")
    } else {
        sheet
    };
    format!(
        "tokens: {} (recorded arms: API tokens; their breaks are collapsed reads) · cache: {} · prices: {replayed}, prompt side only; recorded-usage: each request at its own model's price ({}), dollars = prompt side, billed = with output · requests: a replayed arm, its session's model calls (a log's main chain, or one subagent as a session of its own, `FILE › subagent N`); a recorded arm, the same conversation's recorded requests",
        options.tokens.counter().name(),
        options.provider.name(),
        options.prices.label()
    )
}

fn cells(r: &CostRow) -> Vec<String> {
    let c = &r.report;
    vec![
        r.source.clone(),
        r.arm.clone(),
        match r.billed {
            Some(_) => "each request's model".to_string(),
            None => c.sheet.name.to_string(),
        },
        c.requests.len().to_string(),
        c.input_tokens.to_string(),
        c.cache_read_tokens.to_string(),
        c.cache_write_tokens.to_string(),
        c.breaks.to_string(),
        format!("{:.3}", c.breaks_per_turn),
        opt(r.tradeoff.as_ref().and_then(|t| t.write_per_saved)),
        opt(c.payback_turns_median),
        format!("{:.4}", c.dollars),
        r.billed
            .as_ref()
            .map_or("-".to_string(), |b| format!("{:.4}", b.dollars)),
    ]
}

fn opt(v: Option<f64>) -> String {
    v.map_or("-".to_string(), |x| format!("{x:.2}"))
}

const COLUMNS: [&str; 13] = [
    "source",
    "arm",
    "prices",
    "requests",
    "tokens sent",
    "cache read",
    "cache write",
    "breaks",
    "breaks/turn",
    "write/saved",
    "payback turns",
    "dollars",
    "billed with output",
];

/// The cost rows in one of the lab's formats: a table or Markdown (header
/// line, then one row per session × arm), or JSON (options, then rows with
/// totals and per-request series).
pub fn render_cost(
    rows: &[CostRow],
    options: &CostOptions,
    format: crate::render::Format,
) -> String {
    use crate::render::Format;
    let body: Vec<Vec<String>> = rows.iter().map(cells).collect();
    match format {
        Format::Json => {
            let doc =
                serde_json::json!({ "options": options, "header": header(options), "rows": rows });
            let mut s = serde_json::to_string_pretty(&doc).expect("cost rows serialise");
            s.push('\n');
            s
        }
        // The shared table escapes `|` and control bytes: a session file
        // named `a|b.jsonl` can neither split a Markdown row nor reach the
        // terminal raw.
        Format::Markdown => format!(
            "{}\n\n{}\n{}",
            header(options),
            crate::render::table(&COLUMNS, body, true),
            left_out(rows) + &charged_notes(rows) + &placeholder_notes(rows)
        ),
        Format::Table => format!(
            "{}\n{}\n{}",
            header(options),
            crate::render::table(&COLUMNS, body, false),
            left_out(rows) + &charged_notes(rows) + &placeholder_notes(rows)
        ),
    }
}

/// One line per session whose replayed arms carry an envelope, then one
/// per log whose recorded rows leave subagent requests out.
fn left_out(rows: &[CostRow]) -> String {
    let mut seen = std::collections::HashSet::new();
    let envelopes = rows
        .iter()
        .filter(|r| r.envelope_tokens > 0 && seen.insert(&r.source))
        .map(|r| {
            format!(
                "envelope of {}: {} tokens (estimate), cached first before every replayed request\n",
                crate::render::cell_text(&r.source, false),
                r.envelope_tokens
            )
        });
    let left_out = rows
        .iter()
        .filter(|r| r.billed.is_some())
        .filter_map(|r| Some((r, r.covers.as_ref().filter(|c| c.left_out > 0)?)))
        .map(|(r, c)| left_out_line(&r.source, c));
    envelopes.chain(left_out).collect()
}

/// The note under a table for a log whose recorded rows leave subagent
/// requests out.
pub fn left_out_line(source: &str, c: &Coverage) -> String {
    format!(
        "{}: {} subagent requests in no recorded row ({:.4} prompt side, as the rows beside; billed {:.4} with output): left out by --main-chain-only, or paired with no subagent message the import kept\n",
        crate::render::cell_text(source, false),
        c.left_out,
        c.left_out_prompt,
        c.left_out_billed
    )
}

/// One line per recorded row whose requests record stream placeholders
/// for their output: the billed figure is then a lower bound, and the bill
/// with their output estimated from the replies' content is given beside
/// it, marked estimated.
pub fn placeholder_notes(rows: &[CostRow]) -> String {
    rows.iter()
        .filter_map(|r| Some((r, r.billed.as_ref()?)))
        .filter_map(|(r, b)| Some((r, b, b.estimated_output?)))
        .map(|(r, b, e)| {
            format!(
                "{}: {} of {} requests record a stream placeholder for output_tokens (far below the reply's logged content), so billed with output {:.4} is a lower bound; with their output estimated from the content (Claude estimator): {:.4} (estimated)\n",
                crate::render::cell_text(&r.source, false),
                e.placeholders,
                b.requests,
                b.dollars,
                e.dollars
            )
        })
        .collect()
}

/// One line per log that records what its provider charged: the charge
/// beside the list-price recomputation of the same requests, so a reader
/// sees whether the price data holds for that log.
pub fn charged_notes(rows: &[CostRow]) -> String {
    rows.iter()
        .filter_map(|r| Some((r, r.billed.as_ref()?)))
        .filter_map(|(r, b)| Some((r, b, b.charged?)))
        .map(|(r, b, charged)| {
            let off = if charged > 0.0 {
                format!("{:+.2} %", (b.dollars - charged) / charged * 100.0)
            } else {
                "-".to_string()
            };
            format!(
                "{}: the provider charged {charged:.4} for these {} requests (the log's `usage.cost`); list prices give {:.4} ({off})\n",
                crate::render::cell_text(&r.source, false),
                b.requests,
                b.dollars
            )
        })
        .collect()
}

#[cfg(test)]
mod tests;
