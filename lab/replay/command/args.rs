//! The arguments of `lab replay` and the checks between them: which of
//! the replay's drivers runs ([`crate::replay::runs::policies`] through the engine, the
//! [`crate::replay::runs::cost_arms`], or the course [`crate::replay::runs::profiles`]), with what.

use crate::error::{LabError, LabResult};
use crate::render::Format;

use crate::replay::runs::{cost_arms, policies, profiles};

/// Arguments of `lab replay`.
#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// Transcript files or corpora (the formats: `--help`).
    #[arg(required_unless_present = "merge", long_help = crate::import::format_list::inputs_help())]
    pub files: Vec<std::path::PathBuf>,
    /// Profiles to replay under (repeatable or comma separated; default: every profile).
    #[arg(long, value_delimiter = ',')]
    pub profile: Vec<String>,
    /// Policies to replay under instead of profiles (`lab policies`; `all` for every one),
    /// through the policy engine and its policy-agnostic checker and validity oracle.
    /// A variant overrides constants by their upstream names:
    /// `codex-cli:context_window=100000`, or `NAME:FILE.toml`.
    // Split by `policy::list::split_specs`, not clap: a comma inside a
    // variant's JSON value (`P:exclude_tools=["a","b"]`) is not a separator.
    #[arg(long, conflicts_with = "profile")]
    pub policy: Vec<String>,
    /// With --policy: measure retention (artifact recall, re-fetch demand,
    /// planted facts) and mark the cost–retention frontier.
    #[arg(long, requires = "policy")]
    pub retention: bool,
    /// With --policy: close the loop. Each demand (`lab import --demands`)
    /// a policy's removal left out of the request is read back through the
    /// policy's pointer, made again or counted lost; the calls are inserted
    /// and the session replayed again (at most 3 rounds), priced with --cost.
    #[arg(long, requires = "policy")]
    pub closed_loop: bool,
    /// Multiply the profile's size constants (e.g. 0.1 pushes a short session over its limits).
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// Exact length of the embedded result path.
    #[arg(long, default_value_t = profiles::DEFAULT_PATH_LEN, value_parser = crate::storage::root::parse_path_len)]
    pub path_len: usize,
    /// Treat every damage diagnostic (cut line, dangling tool_use, unknown record) as an error.
    #[arg(long)]
    pub strict: bool,
    /// Also write an SVG plot of context size over model calls per profile;
    /// with --policy … --cost, of cumulative dollars per policy.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<std::path::PathBuf>,
    /// With --policy: also write a self-contained HTML report (timelines,
    /// call-by-call drill-down, retention, frontier, a family filter).
    #[arg(long, value_name = "FILE", requires = "policy")]
    pub html: Option<std::path::PathBuf>,
    /// With --policy: also write every run as OpenTelemetry spans in
    /// OTLP/JSON (GenAI semantic conventions; one trace per session and
    /// policy, a span per model call, an event per compaction, clearing
    /// and recovery). Named session files only.
    #[arg(long, value_name = "FILE", requires = "policy")]
    pub otel: Option<std::path::PathBuf>,
    /// Table columns, comma separated, or `all` (default: a narrow set;
    /// Markdown shows all, JSON carries every field).
    #[arg(long, value_name = "LIST")]
    pub columns: Option<String>,
    #[arg(long, value_name = "FORMAT", help = crate::import::format_list::FORMAT_IN_HELP)]
    pub format_in: Option<crate::import::TranscriptFormat>,
    /// Replay each session at its real budget: the profile's limit alone is
    /// scaled to the size the session had when it really compacted
    /// (sessions without a real compaction keep --scale).
    #[arg(long)]
    pub scale_to_real: bool,
    /// With --policy: the fixed prefix (system prompt, tools, first-turn
    /// context) every request carries, in tokens: `auto` (from the log's
    /// recorded usage, else its system prompt, else the product's default),
    /// `none`, or a number.
    #[arg(
        long,
        default_value = "auto",
        value_name = "N|auto|none",
        requires = "policy"
    )]
    pub envelope: crate::replay::input::envelope::EnvelopeArg,
    /// With --policy: write every request each policy sent, per session
    /// and policy, into DIR (`DIR/SESSION/POLICY.jsonl`, one line per model
    /// call, and `DIR/SESSION/messages.jsonl`; `lab schema dump`).
    #[arg(long, value_name = "DIR", requires = "policy")]
    pub dump: Option<std::path::PathBuf>,
    /// What the replay reads of a log's recorded usage: `none` (the
    /// default) predicts, reading nothing after the first request's size;
    /// `recorded` reproduces, reading the product's counts, the envelope
    /// after each compaction and the attachments the log leaves out from
    /// its usage. Refused (exit 2) on a log that records no usage.
    #[arg(long, value_enum, value_name = "none|recorded")]
    pub anchor: Option<crate::replay::input::anchor::Anchor>,
    /// The request shape of --dump: the session's own (`auto`), or a provider's.
    #[arg(long, value_enum, default_value_t, requires = "dump")]
    pub wire: crate::replay::input::wire::WireChoice,
    /// What --dump writes: the lab's lines (`ctxlab`), or ATIF (`atif`:
    /// `DIR/SESSION/POLICY.atif.jsonl`, one ATIF-v1.8 trajectory per model
    /// call holding its request, and `DIR/SESSION/messages.atif.json`).
    #[arg(long, value_enum, default_value_t, requires = "dump")]
    pub to: crate::replay::observe::dump::ExportTo,
    /// Output format (`jsonl`: with --policy, one record per session ×
    /// policy, streamed).
    #[arg(long, value_enum, default_value_t = crate::replay::runs::stream::ReplayFormat::Table)]
    pub format: crate::replay::runs::stream::ReplayFormat,
    /// With --policy on a corpus: each session's tables too, not only the
    /// aggregate row per policy; with --format json, one object: each
    /// session's JSON, then the corpus's (`lab schema replay-per-session`).
    #[arg(long, requires = "policy")]
    pub per_session: bool,
    /// With --policy: worker threads [default: every core; at most 256]. A corpus's
    /// sessions (a bounded window at a time) or each named session's
    /// policies run in parallel; the output is the same bytes for every N.
    #[arg(long, value_name = "N", value_parser = crate::jobs::parse_jobs, requires = "policy")]
    pub jobs: Option<usize>,
    /// With --policy exec:CMD: seconds an external policy may take to
    /// answer one line before the replay stops with exit 3 [default: 30].
    #[arg(long, value_name = "SECS", value_parser = parse_timeout, requires = "policy")]
    pub exec_timeout: Option<std::time::Duration>,
    /// With --policy on a corpus: replay only the sessions whose key (path
    /// in the corpus, archive member) hashes to shard i of n, opening no
    /// other file, as a checksummed part for --merge (needs --format json).
    /// auto/n takes i from JOB_COMPLETION_INDEX, SLURM_ARRAY_TASK_ID or
    /// PARALLEL_SEQ (from 1). The guide's "Corpus scale" chapter has the
    /// GNU parallel, Slurm and Kubernetes launchers.
    #[arg(long, value_name = "I/N", requires = "policy")]
    pub shard: Option<String>,
    /// Merge the parts written by `--shard i/n --format json` instead of
    /// replaying: prints what the whole run prints, byte for byte.
    #[arg(long, num_args = 1.., value_name = "FILE", conflicts_with_all = ["policy", "profile", "shard"])]
    pub merge: Vec<std::path::PathBuf>,
    /// With --merge: write the merged output to FILE instead of stdout,
    /// whole or not at all (through .FILE.tmp and a rename: a merge killed
    /// or refused leaves FILE as it was; run it again to start over).
    #[arg(long, value_name = "FILE", requires = "merge")]
    pub out: Option<std::path::PathBuf>,
    /// With --policy or --cost: replay a Claude Code log's main chain only.
    /// By default each of its subagent conversations is replayed too, as a
    /// session of its own (`FILE › subagent N`: its own envelope, model and
    /// recorded rows), since the recorded bill includes them; with this
    /// flag the subagents' requests are only named beside the recorded rows.
    #[arg(long)]
    pub main_chain_only: bool,
    /// Print prompt-cache cost per session × arm (none, profiles, recorded); with
    /// --policy, the cost of every policy beside its loss counters.
    #[arg(long)]
    pub cost: bool,
    /// Token counter: what every token-budgeted policy measures its limit
    /// with (so it moves where a policy fires) and, with `--cost`, what
    /// requests are sized and priced by.
    #[arg(long, value_enum, default_value_t = crate::tokens::Tokens::Approx)]
    pub tokens: crate::tokens::Tokens,
    /// Cache model for `--cost`.
    #[arg(long, requires = "cost", value_enum, default_value_t = crate::cache::provider::CacheChoice::Anthropic)]
    pub cache: crate::cache::provider::CacheChoice,
    /// Price sheet for `--cost` (see `lab::cache::prices::SHEETS`).
    /// Without it, each Claude Code log is priced at its session's model
    /// (other sessions at claude-opus-4.1-5m).
    #[arg(long, requires = "cost")]
    pub sheet: Option<String>,
    /// Per-model prices for recorded usage under `--cost`: ctxlab's price
    /// file (see lab/measure/cache/prices/2026-12-04.json, the built-in one) or
    /// LiteLLM's model_prices_and_context_window.json.
    #[arg(long, requires = "cost", value_name = "FILE")]
    pub prices: Option<std::path::PathBuf>,
    /// Also find each session's cheapest schedule (clearing the oldest tool
    /// results, compactions at any call) under the `--cost` cache model and
    /// sheet; with --policy, a regret column: each run's dollars minus the
    /// cheapest schedule's at equal or better retention.
    #[arg(long, requires = "cost")]
    pub optimal: bool,
    /// With --optimal: the retention floor of the printed schedule, artifact
    /// recall at the last request in percent, [0, 100].
    #[arg(long, value_name = "R", default_value_t = 0.0, value_parser = crate::replay::runs::optimal::parse_floor, requires = "optimal")]
    pub optimal_floor: f64,
    /// With --optimal: the most tokens one request of the printed schedule
    /// may carry, envelope included.
    #[arg(long, value_name = "TOKENS", requires = "optimal")]
    pub optimal_limit: Option<u64>,
}

/// `lab replay`: the argument checks, then policies, cost arms or profiles;
/// returns what to print.
pub fn run(a: ReplayArgs) -> LabResult<String> {
    if !a.merge.is_empty() {
        return merge(&a);
    }
    let columns = a
        .columns
        .as_deref()
        .map(profiles::parse_columns)
        .transpose()?;
    // Before any other check, for the profile, cost and policy paths alike.
    profiles::check_scale(a.scale)?;
    let import = crate::import::ImportOptions::from_flags(a.strict, a.format_in);
    for (path, flag) in [
        (&a.plot, "--plot"),
        (&a.html, "--html"),
        (&a.otel, "--otel"),
    ] {
        if let Some(path) = path {
            crate::input::output_parent_exists(path, flag)?;
        }
    }
    policies::check_plot(a.plot.is_some(), !a.policy.is_empty(), a.cost)?;
    let (format, jsonl) =
        crate::replay::runs::stream::check_format(a.format, !a.policy.is_empty())?;
    let mut a = a;
    if a.policy.is_empty() && a.cost {
        // The cost arms take files: a directory or glob is expanded to them.
        // (Policy replays stream a corpus themselves.)
        a.files = crate::import::corpus::plain_files(&a.files)?;
    }
    if !a.policy.is_empty() || a.optimal {
        return replay_policies(a, &import, format, jsonl);
    }
    if a.tokens != crate::tokens::Tokens::Approx && !a.cost {
        return Err(LabError::usage(
            "--tokens sets the counter of --policy budgets and of --cost sizes; profiles size in characters",
            "add --cost to size and price with it, or replay with --policy NAME",
        ));
    }
    if a.anchor.is_some() && !a.cost {
        // A profile replay reads no recorded usage: the flag would do nothing.
        return Err(LabError::usage(
            "--anchor chooses what a --policy or --cost replay reads of recorded usage; a --profile replay reads none",
            "add --cost, or replay with --policy NAME --anchor …",
        ));
    }
    if a.retention {
        // Retention is an observer of the policy engine; a profile replay
        // would otherwise drop the flag without a word.
        return Err(LabError::usage(
            "--retention measures policies; this replay has --profile only",
            "course profiles are policies too: use --policy NAME (e.g. --policy course-main --retention)",
        ));
    }
    let options = profiles::ReplayOptions {
        scale: a.scale,
        path_len: Some(a.path_len),
        cost_tokens: None,
        cost_envelope: 0,
        scale_to_real: a.scale_to_real,
        // Each session's own, set where its log is read (`cost_arms`).
        resumes: Vec::new(),
    };
    if a.cost {
        let args = cost_arms::CostArgs {
            files: a.files,
            profiles: a.profile,
            tokens: a.tokens,
            cache: a.cache,
            sheet: a.sheet,
            prices: a.prices,
            envelope: a.envelope,
            conversations: conversations(a.main_chain_only),
            anchor: crate::replay::input::anchor::AnchorArg::from_flag(a.anchor),
        };
        return cost_arms::cli(&args, &options, &import, format);
    }
    profiles::command(&profiles::ReplayCommand {
        files: a.files,
        profiles: a.profile,
        options,
        strict: a.strict,
        format_in: a.format_in,
        plot: a.plot,
        format,
        columns,
    })
}

/// `lab replay --merge FILE…`: only `--format` applies; anything else
/// would be silently ignored, so it is refused.
fn merge(a: &ReplayArgs) -> LabResult<String> {
    if !a.files.is_empty() {
        return Err(LabError::usage(
            "--merge reads the parts of a sharded replay, not session files",
            "drop the session files: lab replay --merge part0.json part1.json …",
        ));
    }
    let (format, jsonl) = match a.format {
        crate::replay::runs::stream::ReplayFormat::Jsonl => (Format::Json, true),
        f => crate::replay::runs::stream::check_format(f, true)?,
    };
    super::drive::merge_command(&a.merge, format, jsonl, a.out.as_deref())
}

/// `lab replay --policy …`: through the policy engine, priced with `--cost`.
fn replay_policies(
    a: ReplayArgs,
    import: &crate::import::ImportOptions,
    format: Format,
    jsonl: bool,
) -> LabResult<String> {
    if a.scale != 1.0 {
        return Err(LabError::usage(
            "--scale applies to --profile replays only",
            "drop --scale, or replay with --profile",
        ));
    }
    let pricing = if a.cost {
        let o = cost_arms::CostOptions {
            tokens: a.tokens,
            provider: a.cache.provider(),
            prices: cost_arms::load_prices(a.prices.as_deref())?,
            ..Default::default()
        }
        .with_sheet(
            a.sheet
                .as_deref()
                .unwrap_or(crate::cache::prices::DEFAULT_SHEET),
        )?;
        Some(policies::Pricing {
            provider: o.provider,
            sheet: o.sheet,
            prices: o.prices,
            by_model: a.sheet.is_none(),
        })
    } else {
        None
    };
    let measure = policies::Measure {
        retention: a.retention,
        pricing,
        tokens: a.tokens,
        envelope: a.envelope,
        dump: a.dump.map(|d| (d, a.wire, a.to)),
        exec_timeout: a.exec_timeout,
        conversations: conversations(a.main_chain_only),
        anchor: crate::replay::input::anchor::AnchorArg::from_flag(a.anchor),
        closed_loop: a
            .closed_loop
            .then(crate::replay::runs::policies::closed_loop::Switches::default),
    };
    let outputs = super::drive::Outputs {
        plot: a.plot,
        html: a.html,
        otel: a.otel,
        jsonl,
        per_session: a.per_session,
        jobs: a.jobs.unwrap_or_else(crate::jobs::default_jobs),
        shard: a
            .shard
            .as_deref()
            .map(crate::shard::Shard::parse)
            .transpose()?,
        optimal: a
            .optimal
            .then_some(crate::replay::runs::optimal::OptimalArgs {
                floor: a.optimal_floor,
                limit: a.optimal_limit,
            }),
    };
    let policies = crate::zoo::list::split_specs(&a.policy);
    super::drive::replay_command(
        &a.files, &policies, a.path_len, import, measure, outputs, format,
    )
}

/// Which conversations of a Claude Code log `--main-chain-only` leaves.
fn conversations(main_chain_only: bool) -> crate::replay::input::subagents::Conversations {
    crate::replay::input::subagents::Conversations { main_chain_only }
}

/// `--exec-timeout`: a positive number of seconds, at most a day.
pub fn parse_timeout(s: &str) -> Result<std::time::Duration, String> {
    match s.trim().parse::<f64>() {
        Ok(secs) if secs > 0.0 && secs <= 86_400.0 => Ok(std::time::Duration::from_secs_f64(secs)),
        _ => Err(format!("`{s}` is not a number of seconds in (0, 86400]")),
    }
}
