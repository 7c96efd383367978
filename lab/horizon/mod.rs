//! Long horizons: every policy over one generated session of millions of
//! tokens, streamed through the engine, measuring what repeated compaction
//! does over time.
//!
//! The session comes from [`generate`] (seeded, calibrated on the shared
//! sessions' shapes); its length is the **tokens of transcript appended**:
//! every message counted once by the `approx` counter when it arrives, so a
//! 10 M-token horizon is a session whose messages sum to 10,000,000 tokens
//! or just past (the turn that crosses it, then a closing answer).
//! [`replay_stream_lean`] keeps only the live history (no events, no
//! ledger of originals), so memory is the context plus a few numbers per
//! call and per compaction.
//!
//! Per model call the [`Gauge`] compares the request with what it would
//! have been had the policy done nothing this call: the previous request
//! plus the tokens appended since (`before`), against the request sent
//! (`after`). Definitions:
//! - a **compaction** is a call at which the policy recorded an event that
//!   removes content (`summarised`, `dropped`, `cleared`, `truncated`) and
//!   the request is smaller than `before`; its **freed fraction** is
//!   `(before - after) / before`;
//! - a **stall** is a compaction that frees under [`STALL_FREED`] (5 %);
//! - a request is **over the limit** when its tokens plus the fixed prefix
//!   pass the context window `limit` (200,000 by default); the run is
//!   **stalled for good** once [`STUCK_CALLS`] requests in a row are over
//!   it (every one of them would be refused; a harness that compacts and
//!   retries never gets under), and the horizon ends there for that policy;
//! - **re-fetch growth** is retention's re-fetch demand
//!   ([`RefetchDemand`]: later calls that fetch again what the policy had
//!   removed from the request) sampled every [`SAMPLE_TOKENS`] appended.

// The seeded session generator lives with the other session sources
// (`ctxlab-import`), so the zoo's tests can use it too.
pub use crate::import::generate;
pub mod render;

use std::cell::Cell;
use std::rc::Rc;

use serde::Serialize;

use crate::error::{LabError, LabResult};
use crate::message::Message;
use crate::policy::engine::{event_kind, replay_stream_lean, Env, Observer, View};
use crate::policy::spec::PolicySpec;
use crate::policy::PolicyEvent;
use crate::retention::RefetchDemand;
use crate::tokens::{Approx, TokenCounter};

/// A compaction that frees less than this share of the context is a stall.
pub const STALL_FREED: f64 = 0.05;
/// Requests in a row over the limit after which a run is stalled for good.
pub const STUCK_CALLS: usize = 20;
/// Re-fetch demand is sampled each time this many more tokens were appended.
pub const SAMPLE_TOKENS: u64 = 100_000;
/// The default context window, tokens (Claude's 200k).
pub const DEFAULT_LIMIT: usize = 200_000;
/// The default seed of the generated session.
pub const DEFAULT_SEED: u64 = 7;
/// The longest horizon `lab horizon` accepts, tokens.
pub const MAX_TOKENS: u64 = 100_000_000;

/// One compaction.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Compaction {
    /// 0-based model call.
    pub call: usize,
    /// Tokens of transcript appended when it ran.
    pub appended: u64,
    /// Tokens the request would have had without it (previous request plus
    /// what arrived since).
    pub before: usize,
    /// Tokens of the request sent.
    pub after: usize,
}

impl Compaction {
    /// `(before - after) / before`.
    pub fn freed(&self) -> f64 {
        if self.before == 0 {
            0.0
        } else {
            (self.before - self.after) as f64 / self.before as f64
        }
    }
}

/// Re-fetch demand at one point of the horizon.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct RefetchPoint {
    /// Tokens of transcript appended.
    pub appended: u64,
    /// Re-fetch calls so far.
    pub calls: usize,
    /// Tokens of their results so far.
    pub tokens: usize,
}

/// One policy over the horizon.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct PolicyHorizon {
    /// Policy name.
    pub policy: String,
    /// Tokens of transcript appended before the run ended (the whole
    /// horizon unless it stalled for good or failed).
    pub appended: u64,
    /// Model calls made.
    pub calls: usize,
    /// The largest request, tokens.
    pub peak_tokens: usize,
    /// Compactions, in order.
    pub compactions: Vec<Compaction>,
    /// Compactions that freed under 5 %.
    pub stalls: usize,
    /// Requests over the limit.
    pub over_limit: usize,
    /// Tokens appended when the run was found stalled for good, if it was.
    pub stalled_for_good_at: Option<u64>,
    /// Re-fetch demand over the horizon (the last point is the end).
    pub refetch: Vec<RefetchPoint>,
    /// The policy's error, when it failed and the run ended there.
    pub error: Option<String>,
}

/// Every policy over one horizon: the one JSON shape of `lab horizon`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct HorizonReport {
    /// Seed of the generated session.
    pub seed: u64,
    /// Horizon length: tokens of transcript appended (`approx` counter).
    pub tokens: u64,
    /// Context window, tokens.
    pub limit: usize,
    /// Tokenizer of every count.
    pub tokenizer: String,
    /// Per policy, in the order asked.
    pub policies: Vec<PolicyHorizon>,
}

/// The JSON Schema of [`HorizonReport`] (`lab schema horizon`).
pub fn schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(HorizonReport)).expect("a schema serialises")
}

/// The observer behind [`PolicyHorizon`].
#[derive(Debug)]
pub struct Gauge {
    limit: usize,
    appended: u64,
    since_request: usize,
    last_request: usize,
    peak: usize,
    calls: usize,
    over_streak: usize,
    out: PolicyHorizon,
    refetch: RefetchDemand,
    next_sample: u64,
    /// Set once the run is stalled for good: the message stream stops.
    stop: Rc<Cell<bool>>,
}

impl Gauge {
    /// A gauge for `policy` under context window `limit`.
    pub fn new(policy: &str, limit: usize) -> Gauge {
        Gauge {
            limit,
            appended: 0,
            since_request: 0,
            last_request: 0,
            peak: 0,
            calls: 0,
            over_streak: 0,
            out: PolicyHorizon {
                policy: policy.to_string(),
                appended: 0,
                calls: 0,
                peak_tokens: 0,
                compactions: Vec::new(),
                stalls: 0,
                over_limit: 0,
                stalled_for_good_at: None,
                refetch: Vec::new(),
                error: None,
            },
            refetch: RefetchDemand::default(),
            next_sample: SAMPLE_TOKENS,
            stop: Rc::new(Cell::new(false)),
        }
    }

    fn sample(&mut self) {
        self.out.refetch.push(RefetchPoint {
            appended: self.appended,
            calls: self.refetch.calls(),
            tokens: self.refetch.tokens(),
        });
    }

    /// The policy's figures.
    pub fn finish(mut self) -> PolicyHorizon {
        if self.out.refetch.last().map(|p| p.appended) != Some(self.appended) {
            self.sample();
        }
        self.out.appended = self.appended;
        self.out.calls = self.calls;
        self.out.peak_tokens = self.peak;
        self.out
    }
}

/// Whether an event removes content from the context.
fn removes(e: &PolicyEvent) -> bool {
    matches!(
        event_kind(e),
        "summarised" | "dropped" | "cleared" | "truncated"
    )
}

impl Observer for Gauge {
    fn on_message(&mut self, index: usize, m: &Message) {
        let n = Approx.count_message(m);
        self.appended += n as u64;
        self.since_request += n;
        self.refetch.on_message(index, m);
        if self.appended >= self.next_sample {
            self.next_sample = (self.appended / SAMPLE_TOKENS + 1) * SAMPLE_TOKENS;
            self.sample();
        }
    }

    fn on_request(
        &mut self,
        call: usize,
        at: usize,
        request: &[Message],
        events: &[PolicyEvent],
        view: &View<'_>,
    ) {
        self.refetch.on_request(call, at, request, events, view);
        let after = view.request_tokens(request);
        let before = self.last_request + self.since_request;
        if after < before && events.iter().any(removes) {
            let c = Compaction {
                call,
                appended: self.appended,
                before,
                after,
            };
            self.out.stalls += usize::from(c.freed() < STALL_FREED);
            self.out.compactions.push(c);
        }
        self.last_request = after;
        self.since_request = 0;
        self.calls += 1;
        self.peak = self.peak.max(after);
        if after + view.envelope > self.limit {
            self.out.over_limit += 1;
            self.over_streak += 1;
            if self.over_streak >= STUCK_CALLS && self.out.stalled_for_good_at.is_none() {
                self.out.stalled_for_good_at = Some(self.appended);
                self.stop.set(true);
            }
        } else {
            self.over_streak = 0;
        }
    }
}

/// One policy over a horizon of `tokens` from `seed`.
pub fn run_policy(
    spec: &PolicySpec,
    seed: u64,
    tokens: u64,
    limit: usize,
) -> LabResult<PolicyHorizon> {
    run_policy_until(spec, seed, tokens, limit, None)
}

/// [`run_policy`], stopped at the first message after `deadline` when one
/// is given (a benchmark's time cap): the run then ends with fewer tokens
/// appended than asked, neither stalled for good nor failed.
pub fn run_policy_until(
    spec: &PolicySpec,
    seed: u64,
    tokens: u64,
    limit: usize,
    deadline: Option<std::time::Instant>,
) -> LabResult<PolicyHorizon> {
    // Designs archive their context at every compaction: over millions of
    // tokens, gigabytes a memory store would hold (the same bytes and
    // paths, spilled to a temp file).
    crate::storage::root::with_spill(|| run_spilled(spec, seed, tokens, limit, deadline))
}

/// [`run_policy_until`] inside its spill scope.
fn run_spilled(
    spec: &PolicySpec,
    seed: u64,
    tokens: u64,
    limit: usize,
    deadline: Option<std::time::Instant>,
) -> LabResult<PolicyHorizon> {
    let mut policy =
        crate::zoo::list::make_spec(spec, "approx", crate::policy::exec::DEFAULT_TIMEOUT)?;
    let name = policy.info().name;
    let mut gauge = Gauge::new(&name, limit);
    let stop = gauge.stop.clone();
    let in_time = move || deadline.is_none_or(|d| std::time::Instant::now() < d);
    let messages = generate::Generator::new(seed, tokens)
        .take_while(move |_| !stop.get() && in_time())
        .map(Ok::<Message, LabError>);
    let dir = std::env::temp_dir();
    let spill =
        crate::storage::Spill::new().map_err(|e| LabError::io("creating a spill file", dir, e))?;
    let mut env = Env {
        storage: std::sync::Arc::new(spill),
        ..Env::default()
    };
    let result = replay_stream_lean(
        policy.as_mut(),
        &name,
        messages,
        &mut env,
        &mut [&mut gauge],
    );
    let mut out = gauge.finish();
    if let Err(e) = result {
        out.error = Some(e.to_string());
    }
    Ok(out)
}

/// Every policy of `specs` over one horizon, on `jobs` threads.
pub fn run(
    specs: &[PolicySpec],
    seed: u64,
    tokens: u64,
    limit: usize,
    jobs: usize,
) -> LabResult<HorizonReport> {
    let progress = crate::progress::Progress::bar(specs.len() as u64, "horizon: policies");
    let policies = crate::jobs::try_collect(
        jobs,
        |push| specs.iter().all(|s| push(s.clone())),
        |s| {
            let one = run_policy(&s, seed, tokens, limit);
            progress.step();
            one
        },
    )?;
    drop(progress);
    Ok(HorizonReport {
        seed,
        tokens,
        limit,
        tokenizer: Approx.name().into(),
        policies,
    })
}

/// `lab horizon` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct HorizonArgs {
    /// Horizon length: tokens of transcript appended (`approx` counter); 1..=100000000.
    #[arg(long, default_value_t = 10_000_000)]
    pub tokens: u64,
    /// Seed of the generated session.
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub seed: u64,
    /// Policies, comma separated, or `all`.
    #[arg(long, default_value = "all")]
    pub policy: String,
    /// Context window in tokens: requests past it are over the limit.
    #[arg(long, default_value_t = DEFAULT_LIMIT)]
    pub limit: usize,
    /// Worker threads (default: every core).
    #[arg(long, value_parser = crate::jobs::parse_jobs)]
    pub jobs: Option<usize>,
    /// Also write the plot of freed fraction against cycle to this SVG file.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<std::path::PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = crate::render::Format::Table)]
    pub format: crate::render::Format,
}

/// The policies `list` names (`all` for every one), each parsed once and
/// checked.
pub fn policy_specs(list: &str) -> LabResult<Vec<PolicySpec>> {
    if list.trim() == "all" {
        return Ok(every_policy());
    }
    let specs = crate::zoo::list::split_specs(&[list.to_string()]);
    if specs.is_empty() {
        return Err(LabError::usage(
            "--policy names no policy",
            "give policy names, comma separated, or `all` (see `lab policies`)",
        ));
    }
    specs
        .iter()
        .map(|s| {
            if s.starts_with(crate::policy::exec::PREFIX) {
                return Err(LabError::usage(
                    format!("`{s}`: lab horizon runs built-in policies only"),
                    "name a built-in policy or a variant of one (see `lab policies`)",
                ));
            }
            let spec: PolicySpec = s.parse()?;
            crate::zoo::list::check_spec(&spec)?;
            Ok(spec)
        })
        .collect()
}

/// Every policy of the list, by its plain name.
pub fn every_policy() -> Vec<PolicySpec> {
    crate::zoo::list::names()
        .into_iter()
        .map(|name| PolicySpec::Named {
            name: name.to_string(),
            variant: None,
            overrides: Default::default(),
        })
        .collect()
}

/// Run `lab horizon`; returns what to print.
pub fn command(args: &HorizonArgs) -> LabResult<String> {
    if !(1..=MAX_TOKENS).contains(&args.tokens) || args.limit == 0 {
        return Err(LabError::usage(
            format!(
                "--tokens {} / --limit {} out of range",
                args.tokens, args.limit
            ),
            format!("use --tokens 1..={MAX_TOKENS} and a --limit of 1 or more"),
        ));
    }
    let specs = policy_specs(&args.policy)?;
    let jobs = args.jobs.unwrap_or_else(crate::jobs::default_jobs);
    let report = run(&specs, args.seed, args.tokens, args.limit, jobs)?;
    if let Some(path) = &args.plot {
        crate::storage::root::cleanup::write_replacing(
            path,
            render::svg(&report, "lab horizon").as_bytes(),
        )
        .map_err(|e| LabError::io("writing the plot", path, e))?;
    }
    Ok(render::render(&report, args.format))
}
