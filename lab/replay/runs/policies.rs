//! Policies compared on sessions: the driver behind `lab replay --policy`.
//!
//! Imports each transcript once, replays it under every named policy through
//! the [engine](crate::policy::engine), and optionally measures
//! [retention](crate::retention) with planted facts.

pub mod closed_loop;

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use crate::error::LabResult;
use crate::message::Message;
use crate::policy::course::CoursePolicy;
use crate::policy::engine::{replay_observed, Env, Observer, PolicyRun, Session};
use crate::policy::spec::{PolicySpec, Ports};
use crate::policy::Policy;
use crate::retention::planted::{plant, Position};
use crate::retention::{Prepared, Retention, RetentionReport};
use crate::zoo::list;

/// Every policy name `names` asks for: `all` expands to every policy.
pub fn expand_names(names: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in &list::split_specs(names) {
        if n.eq_ignore_ascii_case("all") {
            out.extend(list::names().into_iter().map(str::to_string));
        } else {
            out.push(n.clone());
        }
    }
    out.dedup();
    out
}

/// Every policy `names` asks for ([`expand_names`]), each parsed once and
/// checked before any work ([`list::check_spec`]): the first bad one in
/// order fails.
pub fn checked_specs(names: &[String]) -> LabResult<Vec<PolicySpec>> {
    expand_names(names)
        .iter()
        .map(|n| {
            let spec: PolicySpec = n.parse()?;
            list::check_spec(&spec)?;
            Ok(spec)
        })
        .collect()
}

/// Build a policy for one session: course profiles get a root whose result
/// path is `path_len` long for the session's first tool id, as `lab replay
/// --profile` does; `claude-code` on a Claude Code log gets the trigger of
/// the model and release that wrote it.
fn make_for(
    spec: &PolicySpec,
    messages: &[Message],
    path_len: usize,
    product: Option<&Product>,
    measure: &Measure,
) -> LabResult<Box<dyn Policy>> {
    spec.build(&ForSession {
        messages,
        path_len,
        product,
        measure,
    })
}

/// The ports as one session builds them ([`make_for`]).
struct ForSession<'a> {
    messages: &'a [Message],
    path_len: usize,
    product: Option<&'a Product>,
    measure: &'a Measure,
}

impl Ports for ForSession<'_> {
    fn named(&self, name: &str) -> LabResult<Box<dyn Policy>> {
        make_base(name, self.messages, self.path_len, self.product)
    }

    fn weights(
        &self,
        spec: &PolicySpec,
        sheet: Option<&str>,
    ) -> LabResult<crate::policy::gate::Weights> {
        gate_weights(spec, sheet, self.measure)
    }

    fn exec(&self, cmd: &str) -> LabResult<Box<dyn Policy>> {
        let timeout = self
            .measure
            .exec_timeout
            .unwrap_or(crate::policy::exec::DEFAULT_TIMEOUT);
        let tokens = self.measure.tokens.counter();
        let exec = crate::policy::exec::Exec::start(cmd, tokens.name(), timeout)?;
        Ok(Box::new(exec))
    }
}

/// What the gate of `spec` weighs with: the sheet it names, else the
/// run's (a gate without a sheet of its own weighs with the sheet that
/// prices the run), else the default.
fn gate_weights(
    spec: &PolicySpec,
    sheet: Option<&str>,
    measure: &Measure,
) -> LabResult<crate::policy::gate::Weights> {
    use crate::cache::prices;
    let sheet = match sheet {
        Some(name) => prices::named(name).ok_or_else(|| {
            crate::error::LabError::usage(
                format!("policy `{spec}`: unknown price sheet `{name}`"),
                format!("write gated@SHEET:POLICY; {}", prices::named_help()),
            )
        })?,
        None => match &measure.pricing {
            Some(p) => p.sheet.clone(),
            None => return Ok(Default::default()),
        },
    };
    Ok(crate::policy::gate::Weights {
        sheet: sheet.name.to_string(),
        read_mult: sheet.read_mult,
        write_mult: sheet.write_mult,
    })
}

/// [`make_for`] of a policy name without overrides.
fn make_base(
    name: &str,
    messages: &[Message],
    path_len: usize,
    product: Option<&Product>,
) -> LabResult<Box<dyn Policy>> {
    let lower = name.to_ascii_lowercase();
    if let Some(p) = product.filter(|_| lower == crate::zoo::claude_code::NAME) {
        return Ok(Box::new(crate::zoo::claude_code::ClaudeCode::for_product(
            &p.model,
            p.version.as_deref(),
            p.reattached_in_prefix,
        )));
    }
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
    list::make_named(name)
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
    /// Price each session's replays at the model that answered most of its
    /// main chain (its list prices and cache rules), `sheet` serving
    /// sessions whose log names no model; on unless `--sheet` names one.
    pub by_model: bool,
}

impl Pricing {
    /// The same choices as the cost arms' options.
    pub fn options(&self) -> crate::replay::runs::cost_arms::CostOptions {
        crate::replay::runs::cost_arms::CostOptions {
            tokens: crate::tokens::Tokens::Approx,
            provider: self.provider,
            sheet: self.sheet.clone(),
            prices: self.prices.clone(),
            by_model: self.by_model,
            envelope: Default::default(),
            conversations: Default::default(),
            anchor: Default::default(),
        }
    }

    /// The pricing of one session whose main chain `model` answered (read
    /// from `source`): that model's with [`Pricing::by_model`], else this.
    pub fn for_session(&self, model: Option<&str>, source: &str) -> LabResult<Pricing> {
        let mut p = self.clone();
        if self.by_model {
            (p.provider, p.sheet) =
                crate::replay::runs::cost_arms::priced_at(&self.options(), model, source)?;
        }
        Ok(p)
    }
}

/// The product and release that wrote a session, where its log says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Product {
    /// The main agent's model.
    pub model: String,
    /// The product's release (`version` of Claude Code records).
    pub version: Option<String>,
    /// The recorded post-compaction prefix holds what the product sent
    /// again after compacting (its re-attached files): the product's own
    /// policy must not add them a second time.
    pub reattached_in_prefix: bool,
    /// What the product's model answered at each of its compactions (the
    /// summary inside the product's continuation message), in order: its own
    /// policy's summaries are these recorded answers, as every reply of a
    /// replay is the recorded one; past the last, the lab's model writes.
    pub summaries: Vec<String>,
    /// Under `--anchor none`: the summary of predicted length given at every
    /// compaction instead ([`crate::replay::summary_sizes`]).
    pub predicted_summary: Option<String>,
}

/// What one session is replayed with: its fixed prefix and its product.
#[derive(Debug, Clone, Default)]
pub struct SessionSetup {
    /// The envelope every request carries.
    pub prefix: crate::policy::engine::Prefix,
    /// Where its size came from (`None` for no envelope).
    pub basis: Option<crate::replay::input::envelope::Basis>,
    /// Where the size after a predicted compaction comes from
    /// ([`crate::replay::input::envelope::Envelope::after_source`]).
    pub after_source: Option<String>,
    /// The product, for its own policy's trigger.
    pub product: Option<Product>,
    /// Where every request goes with `--dump`.
    pub dump: Option<crate::replay::observe::dump::DumpTarget>,
    /// When each replayed message was written (ms since the session's
    /// start), where the log records it: time-based rules and the prompt
    /// cache's TTL read it.
    pub times_ms: Option<Vec<Option<u64>>>,
    /// How this session's runs are priced (its model's prices with
    /// [`Pricing::by_model`]); `None`: the measure's.
    pub pricing: Option<Pricing>,
    /// The calls not priced at the session's sheet, by the index of the
    /// recorded reply they precede: `<synthetic>` replies (no call) and
    /// calls another model answered ([`crate::replay::runs::cost_arms::call_prices`]).
    pub call_prices: std::collections::BTreeMap<usize, crate::cache::observe::CallPrice>,
    /// The session planted for retention, made by the first policy's
    /// retention run and shared by the others (and by clones of this set-up).
    pub planted: PlantedOnce,
}

/// A session planted with retention's facts and its observers' shared
/// preparation ([`Retention::prepare`]), made once per session: every
/// policy's retention run replays the same planted session, and each
/// used to plant it, extract its artifacts and build its automata again.
#[derive(Debug, Clone, Default)]
pub struct PlantedOnce(Arc<OnceLock<(Vec<Message>, Arc<Prepared>)>>);

impl PlantedOnce {
    /// The preparation for `messages` planted: the one made before when it
    /// was made for the same session, else a new one.
    fn get(&self, messages: &[Message]) -> Arc<Prepared> {
        let make = || {
            let (planted, facts) = plant(messages, &Position::ALL);
            Retention::prepare(&planted, facts)
        };
        let (source, prepared) = self.0.get_or_init(|| (messages.to_vec(), make()));
        if source.as_slice() == messages {
            Arc::clone(prepared)
        } else {
            make()
        }
    }
}

/// What to measure besides the checker's verdict.
#[derive(Debug, Clone, Default)]
pub struct Measure {
    /// The fixed prefix of every request (`--envelope`).
    pub envelope: crate::replay::input::envelope::EnvelopeArg,
    /// Artifact recall, re-fetch demand and planted facts.
    pub retention: bool,
    /// Prompt-cache cost, when priced.
    pub pricing: Option<Pricing>,
    /// The tokenizer sizes are counted with.
    pub tokens: crate::tokens::Tokens,
    /// `--dump DIR` and its `--wire`: every request written there.
    pub dump: Option<(
        PathBuf,
        crate::replay::input::wire::WireChoice,
        crate::replay::observe::dump::ExportTo,
    )>,
    /// `--exec-timeout`: how long an external policy may take per answer
    /// (`None`: [`crate::policy::exec::DEFAULT_TIMEOUT`]).
    pub exec_timeout: Option<std::time::Duration>,
    /// Which conversations of a Claude Code log are replayed: by default
    /// the main chain and each subagent as a session of its own.
    pub conversations: crate::replay::input::subagents::Conversations,
    /// `--anchor`: what the replay reads of a log's recorded usage.
    pub anchor: crate::replay::input::anchor::AnchorArg,
    /// `--closed-loop`: each run replayed again with the calls its removals
    /// cost the agent ([`closed_loop`]); `None`: open-loop only.
    pub closed_loop: Option<closed_loop::Switches>,
}

/// One session under one policy.
#[derive(Debug, Clone)]
pub struct Compared {
    /// The spec the run ran (its name, `run.policy`, is this spec's text).
    pub spec: PolicySpec,
    /// The run.
    pub run: PolicyRun,
    /// Retention, when asked for.
    pub retention: Option<RetentionReport>,
    /// Prompt-cache cost, when priced.
    pub cost: Option<crate::cache::CostReport>,
    /// The closed-loop replay's row, with `--closed-loop`.
    pub closed_loop: Option<closed_loop::ClosedLoopRow>,
    /// What the run read of the log's recorded usage, for a log that
    /// records it; `None` for a session that records none.
    pub anchor: Option<crate::replay::input::anchor::Anchor>,
}

impl Compared {
    /// The run as the variants' summary reads it, when it was priced.
    pub fn priced(&self) -> Option<crate::replay::observe::variants::Priced<'_>> {
        Some(crate::replay::observe::variants::Priced {
            session: &self.run.session,
            spec: &self.spec,
            policy: &self.run.policy,
            cost: self.cost.as_ref()?,
            gate_skips: self.run.event_count("gated"),
            recall: self.retention.as_ref().map(|r| r.artifact_recall),
        })
    }
}

/// The wrappers' summary of `out` ([`crate::replay::observe::variants::summaries`]).
fn variant_summaries(out: &[Compared]) -> Vec<crate::replay::observe::variants::VariantSummary> {
    let priced: Vec<_> = out.iter().filter_map(Compared::priced).collect();
    crate::replay::observe::variants::summaries(&priced)
}

/// Replay one session (already imported) under one policy, with no envelope.
pub fn compare_one(
    label: &str,
    messages: &[Message],
    name: &str,
    path_len: usize,
    measure: &Measure,
) -> LabResult<Compared> {
    compare_set_up(
        label,
        messages,
        &name.parse()?,
        path_len,
        measure,
        &SessionSetup::default(),
    )
}

/// [`compare_one`] with the session's envelope and product.
pub fn compare_set_up(
    label: &str,
    messages: &[Message],
    spec: &PolicySpec,
    path_len: usize,
    measure: &Measure,
    setup: &SessionSetup,
) -> LabResult<Compared> {
    // The run that is reported, costs included, is the session itself;
    // retention plants its facts in a second run of a fresh policy, so
    // measuring it never changes what it sits beside.
    let mut dumper = setup
        .dump
        .clone()
        .map(|t| crate::replay::observe::dump::Dumper::new(t, &spec.to_string()))
        .transpose()?;
    // Closed loop: the open-loop run is its first round, probed as it runs.
    let demands = measure
        .closed_loop
        .map(|_| closed_loop::Demands::of(messages));
    let mut probe = demands.as_ref().map(|d| d.probe());
    let mut extra: Vec<&mut dyn Observer> = Vec::new();
    if let Some(d) = dumper.as_mut() {
        extra.push(d);
    }
    if let Some(p) = probe.as_mut() {
        extra.push(p);
    }
    let (run, cost) = run_priced(label, messages, spec, path_len, measure, setup, &mut extra)?;
    drop(extra);
    let found = probe.map(closed_loop::Probe::found);
    if let Some(d) = dumper {
        // Only a run that ended well puts its dump in place.
        d.finish()?;
    }
    let retention = if measure.retention {
        let mut policy = make_for(spec, messages, path_len, setup.product.as_ref(), measure)?;
        let prepared = setup.planted.get(messages);
        let mut retention = Retention::from_prepared(&prepared);
        // Its run is not reported: only what retention saw is kept.
        let session = Session {
            name: label,
            messages: prepared.messages(),
            times_ms: setup.times_ms.as_deref(),
        };
        let mut env = env_for(policy.as_ref(), measure, setup, None);
        crate::policy::engine::replay_for_observers(
            policy.as_mut(),
            session,
            &mut env,
            &mut [&mut retention],
        )?;
        Some(retention.finish())
    } else {
        None
    };
    let mut compared = Compared {
        spec: spec.clone(),
        run,
        retention,
        cost,
        closed_loop: None,
        anchor: None,
    };
    if let (Some(switches), Some(demands), Some(found)) = (measure.closed_loop, &demands, found) {
        let row = closed_loop::closed_loop(
            label, messages, spec, path_len, measure, setup, switches, &compared, demands, found,
        )?;
        compared.closed_loop = Some(row);
    }
    Ok(compared)
}

/// One run of `spec` on `messages`, priced when `measure` prices (its
/// summary calls as requests of their own), observed by `extra` too.
pub(crate) fn run_priced(
    label: &str,
    messages: &[Message],
    spec: &PolicySpec,
    path_len: usize,
    measure: &Measure,
    setup: &SessionSetup,
    extra: &mut [&mut dyn Observer],
) -> LabResult<(PolicyRun, Option<crate::cache::CostReport>)> {
    let mut policy = make_for(spec, messages, path_len, setup.product.as_ref(), measure)?;
    // Priced, every summary the policy asks for is a request of its own.
    let side = crate::policy::side_calls::SideCalls::default();
    let mut cost = crate::cache::observe::CostObserver::new(
        setup.prefix.tokens as u64,
        setup.times_ms.as_deref(),
    )
    .with_side_calls(side.clone(), crate::cache::compaction::shape_for(spec))
    .with_call_prices(setup.call_prices.clone());
    let mut observers: Vec<&mut dyn Observer> = Vec::new();
    if measure.pricing.is_some() {
        observers.push(&mut cost);
    }
    for o in extra.iter_mut() {
        observers.push(&mut **o);
    }
    let run = run_observed(
        policy.as_mut(),
        label,
        messages,
        measure,
        setup,
        &mut observers,
        measure.pricing.is_some().then_some(&side),
    )?;
    let report = setup
        .pricing
        .as_ref()
        .or(measure.pricing.as_ref())
        .map(|p| {
            let output = crate::cache::compaction::output_per_mtok(&p.sheet, &p.prices);
            cost.finish_with_output(&p.provider, &p.sheet, output)
        });
    Ok((run, report))
}

/// One engine run of `messages` under `policy` with the session's prefix;
/// the policy's summary calls logged in `side` when given.
fn run_observed(
    policy: &mut dyn Policy,
    label: &str,
    messages: &[Message],
    measure: &Measure,
    setup: &SessionSetup,
    observers: &mut [&mut dyn Observer],
    side: Option<&crate::policy::side_calls::SideCalls>,
) -> LabResult<PolicyRun> {
    let session = Session {
        name: label,
        messages,
        times_ms: setup.times_ms.as_deref(),
    };
    let mut env = env_for(policy, measure, setup, side);
    replay_observed(policy, session, &mut env, observers)
}

/// The engine's environment for a run of `policy` on the session of
/// `setup`: its counter, its prefix, the product's recorded summaries for
/// the product's own policy, and the summary calls logged in `side`.
fn env_for(
    policy: &dyn Policy,
    measure: &Measure,
    setup: &SessionSetup,
    side: Option<&crate::policy::side_calls::SideCalls>,
) -> Env {
    let mut env = Env {
        tokens: measure.tokens.counter(),
        prefix: setup.prefix.clone(),
        ..Env::default()
    };
    let summaries = setup.product.as_ref().map_or(&[][..], |p| &p.summaries[..]);
    let predicted = setup
        .product
        .as_ref()
        .and_then(|p| p.predicted_summary.clone());
    if !summaries.is_empty() && setup.prefix.product_policy.as_deref() == Some(&policy.info().name)
    {
        env.model = Box::new(match predicted {
            Some(p) => crate::policy::model::Recorded::every(p),
            None => crate::policy::model::Recorded::new(summaries.to_vec()),
        });
    }
    if let Some(log) = side {
        let model = std::mem::replace(
            &mut env.model,
            Box::new(crate::policy::model::Scripted::default()),
        );
        env.model = Box::new(crate::policy::side_calls::Recording::new(
            model,
            log.clone(),
        ));
    }
    env
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
    Ok(replay_files_product(files, names, path_len, import, measure)?.0)
}

/// [`replay_files`], with every real compaction of the sessions beside the
/// product policy's counterpart ([`crate::replay::input::product`]). Each session
/// is replayed with its envelope and without the product's compaction
/// artefacts: every policy decides for itself.
pub fn replay_files_product(
    files: &[PathBuf],
    names: &[String],
    path_len: usize,
    import: &crate::import::ImportOptions,
    measure: Measure,
) -> LabResult<(Vec<Compared>, Sessions)> {
    replay_files_on(files, names, path_len, import, &measure, 1)
}

/// [`replay_files_product`] with each session's policies run on `jobs`
/// threads (`--jobs`); the runs come back in policy order, so the result is
/// the same for every `jobs`.
pub fn replay_files_on(
    files: &[PathBuf],
    names: &[String],
    path_len: usize,
    import: &crate::import::ImportOptions,
    measure: &Measure,
    jobs: usize,
) -> LabResult<(Vec<Compared>, Sessions)> {
    let specs = checked_specs(names)?;
    let (out, info, _) =
        replay_files_traced(files, &specs, path_len, import, measure, jobs, false)?;
    Ok((out, info))
}

/// [`replay_files_on`] of specs already parsed and checked
/// ([`checked_specs`]), with what `--otel` needs of each session
/// ([`crate::replay::observe::otel::TracedSession`]) when `trace` is set (empty
/// otherwise: the replies are counted only for a trace).
pub fn replay_files_traced(
    files: &[PathBuf],
    names: &[PolicySpec],
    path_len: usize,
    import: &crate::import::ImportOptions,
    measure: &Measure,
    jobs: usize,
    trace: bool,
) -> LabResult<(
    Vec<Compared>,
    Sessions,
    Vec<crate::replay::observe::otel::TracedSession>,
)> {
    let mut out = Vec::new();
    let mut info = Sessions::default();
    let mut taken = Vec::new();
    let mut traced = Vec::new();
    for file in files {
        // A trajectory array holds one session per trajectory, a Claude
        // Code log its subagents beside its main chain; each is replayed.
        let sessions = crate::replay::input::subagents::replayed_sessions(
            file,
            import,
            measure.conversations,
            measure.envelope,
            measure.tokens,
            measure.anchor,
        )?;
        for crate::replay::input::subagents::LoggedSession { session, log } in sessions {
            // Damage is never dropped silently: the import's warnings, as
            // `lab import` prints them (a subagent's are its log's).
            if session.subagent.is_none() {
                warn_damage(&session);
            }
            let dump = dump_for(&session, measure, &mut taken);
            let model = log.as_ref().and_then(|l| l.model()).map(str::to_string);
            let one = replay_logged(&session, log, names, path_len, measure, dump, jobs)?;
            if trace {
                let runs = out.len()..out.len() + one.runs.len();
                let counter = measure.tokens.counter();
                traced.push(crate::replay::observe::otel::TracedSession::of(
                    &session,
                    model.as_deref(),
                    counter.as_ref(),
                    runs,
                ));
            }
            out.extend(one.runs);
            info.compactions.extend(one.compactions);
            info.counts.extend(one.counts);
            info.envelopes.push(one.envelope);
            info.recorded.extend(one.recorded);
            if let Some(p) = crate::replay::input::envelope::session_product_policy(&session) {
                info.products.push((session.label.clone(), p));
            }
        }
    }
    Ok((out, info, traced))
}

/// One session under every policy ([`replay_session`]).
#[derive(Debug, Clone)]
pub struct SessionRuns {
    /// Each policy's run, in `names` order.
    pub runs: Vec<Compared>,
    /// The product's real compactions, beside its own policy's.
    pub compactions: Vec<crate::replay::input::product::ProductCompaction>,
    /// The product's own per-call counts beside its port's, where the log
    /// records them and the port was replayed.
    pub counts: Option<crate::replay::input::product_counts::CountSeries>,
    /// The session's envelope and where its size came from.
    pub envelope: crate::replay::input::envelope::EnvelopeNote,
    /// Priced, for a log that records its usage: the recorded rows on the
    /// session's own requests (`recorded-usage`, `recorded-model`).
    pub recorded: Vec<crate::replay::runs::cost_arms::CostRow>,
}

/// Replay one imported session under every policy of `names` (already
/// expanded and checked): as sent ([`crate::replay::input::subagents::as_sent`]),
/// with its envelope, without the product's compaction artefacts (every
/// policy decides for itself), dumped to `dump` ([`dump_for`]). The
/// policies run on `jobs` threads, their runs in `names` order.
pub fn replay_session(
    mut session: crate::import::ImportedSession,
    names: &[PolicySpec],
    path_len: usize,
    measure: &Measure,
    dump: Option<crate::replay::observe::dump::DumpTarget>,
    jobs: usize,
) -> LabResult<SessionRuns> {
    let log = crate::replay::input::envelope::RecordedLog::of_session(&session)?;
    let (envelope, tokens) = (measure.envelope, measure.tokens);
    measure.anchor.check(&session, log.is_some())?;
    let anchor = measure.anchor.anchor;
    crate::replay::input::subagents::as_sent(&mut session, log.as_ref(), envelope, tokens, anchor);
    replay_logged(&session, log, names, path_len, measure, dump, jobs)
}

/// [`replay_session`] with the session's recorded usage already read
/// (`log`: its own conversation's requests).
pub fn replay_logged(
    session: &crate::import::ImportedSession,
    log: Option<crate::replay::input::envelope::RecordedLog>,
    names: &[PolicySpec],
    path_len: usize,
    measure: &Measure,
    dump: Option<crate::replay::observe::dump::DumpTarget>,
    jobs: usize,
) -> LabResult<SessionRuns> {
    let mut setup = set_up_logged(session, log.as_ref(), measure)?;
    let messages = crate::import::artefacts::without_product_artefacts(session);
    if let Some(target) = dump {
        crate::replay::observe::dump::write_export(&target, &messages)?;
        setup.dump = Some(target);
    }
    let mut compactions = crate::replay::input::product::compactions(session, log.as_ref());
    let mut runs = run_policies(
        &session.label,
        &messages,
        names,
        path_len,
        measure,
        &setup,
        jobs,
    )?;
    // Scored against the whole log; the anchor says what the port read.
    let anchor = log.as_ref().map(|_| measure.anchor.anchor);
    for c in &mut compactions {
        c.anchor = anchor;
    }
    for c in &mut runs {
        c.anchor = anchor;
    }
    let mut counts = None;
    for c in &runs {
        if setup.prefix.product_policy.as_deref() == Some(c.run.policy.as_str()) {
            crate::replay::input::product::match_run(&mut compactions, &c.run);
            let sized = setup.basis == Some(crate::replay::input::envelope::Basis::Recorded);
            counts = crate::replay::input::product_counts::series(session, &c.run, sized);
        }
    }
    let envelope = crate::replay::input::envelope::EnvelopeNote {
        session: session.label.clone(),
        tokens: setup.prefix.tokens,
        after_compaction: setup.prefix.after_compaction.clone(),
        after_compaction_source: setup.after_source.clone(),
        unlogged_at_last: crate::replay::input::envelope::unlogged_at_last(&setup.prefix),
        put_back: crate::replay::input::unlogged::PutBack {
            resumes: setup.prefix.resumes.len(),
            ..crate::replay::input::unlogged::PutBack::of(&session.main)
        },
        anchor,
        basis: setup
            .basis
            .clone()
            .unwrap_or(crate::replay::input::envelope::Basis::None),
    };
    let recorded = match &setup.pricing {
        Some(p) => {
            let trajectory = match log {
                Some(_) => None,
                None => crate::tokens::recorded::trajectory::requests(session)?,
            };
            crate::replay::runs::cost_arms::own_recorded_rows(
                session,
                log.as_ref(),
                trajectory.as_deref(),
                &p.options(),
            )?
        }
        None => Vec::new(),
    };
    Ok(SessionRuns {
        runs,
        compactions,
        counts,
        envelope,
        recorded,
    })
}

/// Every policy of `names` on one session, on `jobs` threads; the runs in
/// `names` order, and the first error in that order (as one thread would
/// meet it).
fn run_policies(
    label: &str,
    messages: &[Message],
    names: &[PolicySpec],
    path_len: usize,
    measure: &Measure,
    setup: &SessionSetup,
    jobs: usize,
) -> LabResult<Vec<Compared>> {
    // Course policies build their roots on the backend of the starting thread.
    let backend = crate::storage::root::current_backend();
    crate::jobs::try_collect(
        jobs.min(names.len()),
        |push| names.iter().all(push),
        |spec: &PolicySpec| {
            crate::storage::root::with_backend(backend, || {
                compare_set_up(label, messages, spec, path_len, measure, setup)
            })
        },
    )
}

/// Where `session`'s dumps go with `--dump` (`None` without). Called in
/// session order: `taken`, the directories used so far, makes a repeated
/// label's directory `NAME-2`, `NAME-3`, … by that order.
pub fn dump_for(
    session: &crate::import::ImportedSession,
    measure: &Measure,
    taken: &mut Vec<PathBuf>,
) -> Option<crate::replay::observe::dump::DumpTarget> {
    let (dir, wire, to) = measure.dump.as_ref()?;
    Some(crate::replay::observe::dump::DumpTarget {
        dir: crate::replay::observe::dump::session_dir(dir, &session.label, taken),
        session: session.label.clone(),
        lines: crate::import::artefacts::lines_without_product_artefacts(session),
        wire: wire.for_format(session.format),
        to: *to,
        source_format: session.format.name(),
        system: session.system.clone(),
    })
}

/// What a replay found about its sessions besides the runs.
#[derive(Debug, Clone, Default)]
pub struct Sessions {
    /// Each session's envelope.
    pub envelopes: Vec<crate::replay::input::envelope::EnvelopeNote>,
    /// Every real compaction, beside the product policy's counterpart.
    pub compactions: Vec<crate::replay::input::product::ProductCompaction>,
    /// Each session's own per-call counts beside its port's.
    pub counts: Vec<crate::replay::input::product_counts::CountSeries>,
    /// Priced: each session's recorded rows on its own requests.
    pub recorded: Vec<crate::replay::runs::cost_arms::CostRow>,
    /// Each session's product port (`claude-code` for a Claude Code log),
    /// for the sessions whose product the zoo ports.
    pub products: Vec<(String, &'static str)>,
}

/// A session's envelope and product, from its log's recorded usage where it has it.
pub fn set_up(
    session: &crate::import::ImportedSession,
    measure: &Measure,
) -> LabResult<(
    SessionSetup,
    Option<crate::replay::input::envelope::RecordedLog>,
)> {
    let log = crate::replay::input::envelope::RecordedLog::of_session(session)?;
    Ok((set_up_logged(session, log.as_ref(), measure)?, log))
}

/// Under `--anchor none`, the summary the product's port gives at each
/// compaction of a log whose product compacted: its length predicted from
/// the other shared logs' summaries ([`crate::replay::summary_sizes`]), not
/// read from this log's.
fn predicted_summary(
    session: &crate::import::ImportedSession,
    log: &crate::replay::envelope::RecordedLog,
    measure: &Measure,
    counter: &dyn crate::tokens::TokenCounter,
) -> Option<String> {
    if measure.anchor.anchor.reads_usage() {
        return None;
    }
    let name = session.source.file_name()?.to_string_lossy();
    let chars = crate::replay::summary_sizes::predicted_chars(&name, log.model())?;
    Some(crate::replay::summary_sizes::summary_text(chars, counter))
}

/// [`set_up`] from the recorded usage of the session's own conversation
/// (`log`): a subagent's envelope, product model and prices are its own.
pub fn set_up_logged(
    session: &crate::import::ImportedSession,
    log: Option<&crate::replay::input::envelope::RecordedLog>,
    measure: &Measure,
) -> LabResult<SessionSetup> {
    let counter = measure.tokens.counter();
    // The prediction reads the log as the anchor allows; the recorded
    // rows and the scores beside it read the whole log (`replay_logged`).
    let predicted = log.map(|l| l.anchored(measure.anchor.anchor));
    let envelope = crate::replay::input::envelope::envelope_for(
        session,
        predicted.as_deref(),
        measure.envelope,
        counter.as_ref(),
    )?;
    let product = log.and_then(|l| {
        Some(Product {
            model: l.model()?.to_string(),
            version: l.version.clone(),
            // Only a recorded prefix after a compaction holds what the
            // product re-attached; a predicted one is its fixed envelope.
            reattached_in_prefix: measure.anchor.anchor.reads_usage()
                && !envelope.prefix.after_compaction.is_empty(),
            summaries: crate::replay::input::envelope::product_summaries(session),
            predicted_summary: predicted_summary(session, l, measure, counter.as_ref()),
        })
    });
    let recorded = log.map_or(&[][..], |l| &l.requests[..]);
    let traj_model = crate::tokens::recorded::trajectory::first_model(session)?;
    let model = crate::cache::bill::conversation_model(recorded).or(traj_model.as_deref());
    let at = crate::cache::bill::located(&session_file(session), recorded, model);
    let pricing = measure
        .pricing
        .as_ref()
        .map(|p| p.for_session(model, &at))
        .transpose()?;
    let call_prices = match (log, &pricing) {
        (Some(log), Some(p)) => crate::replay::runs::cost_arms::call_prices(
            log.call_models(session),
            &p.options(),
            model,
            |m| crate::cache::bill::located(&session_file(session), recorded, Some(m)),
        )?,
        _ => Default::default(),
    };
    Ok(SessionSetup {
        prefix: envelope.prefix,
        basis: Some(envelope.basis),
        after_source: envelope.after_source,
        product,
        dump: None,
        times_ms: crate::import::artefacts::times_without_product_artefacts(session),
        pricing,
        call_prices,
        planted: PlantedOnce::default(),
    })
}

/// The session's file name, as error messages and tables name it.
fn session_file(session: &crate::import::ImportedSession) -> String {
    session
        .source
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
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

/// The first 64 KiB of a file, for format detection.
/// The import's diagnostics of `session` on stderr, one `warning:` line
/// each, as `lab import` prints them.
pub fn warn_damage(session: &crate::import::ImportedSession) {
    for d in session.diagnostic_lines() {
        eprintln!("warning: {d}");
    }
}

pub(crate) fn head(path: &std::path::Path) -> LabResult<Vec<u8>> {
    use std::io::Read;
    let mut buf = Vec::new();
    // Opening a FIFO blocks until a writer comes: refuse it (and devices)
    // here as the importer does.
    crate::input::check_regular(path, "a transcript", crate::input::MAX_TRANSCRIPT_BYTES)?;
    std::fs::File::open(path)
        .and_then(|f| f.take(64 * 1024).read_to_end(&mut buf))
        .map_err(|e| crate::error::LabError::io("reading transcript", path, e))?;
    Ok(buf)
}

// The renderers (pure: runs in, text out) sit in `tables.rs`, beside the
// runs they render; their paths stay `replay::policies::*`. Not in the
// render room: `stream` and `merge`, drivers of this room, print with them.
mod tables;
pub use tables::*;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_planted_session_is_shared_only_with_the_same_session() {
        let a = vec![
            Message::user_text("fix https://ex.am/a"),
            Message::assistant(vec![crate::message::Block::Text {
                text: "done".into(),
            }]),
        ];
        let once = PlantedOnce::default();
        let first = once.get(&a);
        assert!(Arc::ptr_eq(&first, &once.clone().get(&a)));
        assert_eq!(first.messages(), plant(&a, &Position::ALL).0);
        let b = vec![Message::user_text("fix https://ex.am/b")];
        let other = once.get(&b);
        assert!(!Arc::ptr_eq(&first, &other));
        assert_eq!(other.messages(), plant(&b, &Position::ALL).0);
    }
}
