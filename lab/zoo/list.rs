//! The list of every policy (the types live in `ctxlab-policy` and the
//! modules of this crate; this is only the list, so that policy modules
//! never import it and no circle forms).

use crate as zoo;
use crate::error::{LabError, LabResult};
use crate::policy::course::CoursePolicy;
use crate::policy::none::NoCompaction;
use crate::policy::spec::{PolicySpec, Ports};
use crate::policy::Policy;

/// A constructor of a policy with its upstream defaults.
pub type Make = fn() -> Box<dyn Policy>;

/// Every production policy, in `lab policies` order.
pub fn zoo() -> Vec<(&'static str, Make)> {
    vec![
        (
            zoo::anthropic_clear_tool_uses::NAME,
            zoo::anthropic_clear_tool_uses::make,
        ),
        (zoo::anthropic_compact::NAME, zoo::anthropic_compact::make),
        (zoo::codex_cli::NAME, zoo::codex_cli::make),
        (zoo::codex_truncate::NAME, zoo::codex_truncate::make),
        (zoo::opencode::NAME, zoo::opencode::make),
        (zoo::gemini_cli::NAME, zoo::gemini_cli::make),
        (zoo::gemini_cli_mask::NAME, zoo::gemini_cli_mask::make),
        (zoo::claude_code::NAME, zoo::claude_code::make),
        (
            zoo::claude_code::time_mc::NAME,
            zoo::claude_code::time_mc::make,
        ),
        (
            zoo::claude_code::api_mc::NAME,
            zoo::claude_code::api_mc::make,
        ),
        (
            zoo::claude_code::session_memory::NAME,
            zoo::claude_code::session_memory::make,
        ),
        ("swe-agent-mask-5", zoo::swe_agent::mask_5),
        ("swe-agent-mask-10", zoo::swe_agent::mask_10),
        ("swe-agent-summary-21-10", zoo::swe_agent::summary_21_10),
        ("swe-agent-hybrid", zoo::swe_agent::hybrid),
        (
            "openhands-observation-masking",
            zoo::openhands::observation_masking,
        ),
        ("openhands-recent", zoo::openhands::recent),
        ("openhands-amortized", zoo::openhands::amortized),
        ("openhands-llm-summarizing", zoo::openhands::llm_summarizing),
        (
            "openhands-conversation-window",
            zoo::openhands::conversation_window,
        ),
        ("aider-chat-summary", zoo::aider::chat_summary),
        ("langchain-summarization", zoo::langchain::summarization),
        ("langchain-clear-tool-uses", zoo::langchain::clear_tool_uses),
        ("vercel-prune-messages", zoo::vercel::prune_messages),
        (zoo::inspect::edit::NAME, zoo::inspect::edit),
        (zoo::inspect::trim::NAME, zoo::inspect::trim),
        (zoo::inspect::summary::NAME, zoo::inspect::summary),
        ("goose-auto-compact", zoo::goose::auto_compact),
        (zoo::pi::NAME, zoo::pi::auto_compact),
        (zoo::hermes_lean::NAME, zoo::hermes_lean::make),
        (zoo::jev_drop_tools::NAME, zoo::jev_drop_tools::make),
        (zoo::amp_handoff::NAME, zoo::amp_handoff::make),
        (zoo::roo_code::NAME, zoo::roo_code::auto_condense),
        (zoo::cline_focus_chain::NAME, zoo::cline_focus_chain::make),
        (zoo::openai_realtime::NAME_AUTO, zoo::openai_realtime::auto),
        (
            zoo::openai_realtime::NAME_RETENTION,
            zoo::openai_realtime::retention,
        ),
        (
            zoo::openai_server_compaction::NAME,
            zoo::openai_server_compaction::make,
        ),
    ]
}

/// Every policy name: the baseline, the course profiles, then the zoo.
pub fn names() -> Vec<&'static str> {
    let mut out = vec!["none"];
    out.extend(CoursePolicy::names());
    out.extend(zoo().into_iter().map(|(n, _)| n));
    out
}

/// Build the policy `spec` names: a policy name (case-insensitive; `seed`
/// is the course revision the seed analyses), a [`crate::policy::variant`] of
/// one (`NAME:KEY=VALUE…`, `NAME:FILE.toml`), an external process
/// (`exec:CMD`, see [`crate::policy::exec`]) told that counts come from `tokens`
/// and given `timeout` per answer, or any of these wrapped as
/// `frozen:P` ([`crate::policy::freeze`]) or `gated[@SHEET]:P` ([`crate::policy::gate`]).
pub fn make_with(
    spec: &str,
    tokens: &str,
    timeout: std::time::Duration,
) -> LabResult<Box<dyn Policy>> {
    make_spec(&spec.parse()?, tokens, timeout)
}

/// [`make_with`] of a spec already parsed.
pub fn make_spec(
    spec: &PolicySpec,
    tokens: &str,
    timeout: std::time::Duration,
) -> LabResult<Box<dyn Policy>> {
    spec.build(&Defaults { tokens, timeout })
}

/// The ports with their upstream defaults; a gate weighs with the default
/// sheet, and one naming its own is refused (`lab replay` resolves it).
struct Defaults<'a> {
    tokens: &'a str,
    timeout: std::time::Duration,
}

impl Ports for Defaults<'_> {
    fn named(&self, name: &str) -> LabResult<Box<dyn Policy>> {
        make_named(name)
    }

    fn weights(
        &self,
        spec: &PolicySpec,
        sheet: Option<&str>,
    ) -> LabResult<crate::policy::gate::Weights> {
        match (sheet, spec) {
            (Some(sheet), PolicySpec::Gated { inner, .. }) => Err(LabError::usage(
                format!("policy `{spec}`: a gate's own sheet `{sheet}` is resolved by `lab replay` only"),
                format!("replay with --policy {spec}, or write gated:{inner} here (the default sheet)"),
            )),
            _ => Ok(crate::policy::gate::Weights::default()),
        }
    }

    fn exec(&self, cmd: &str) -> LabResult<Box<dyn Policy>> {
        Ok(Box::new(crate::policy::exec::Exec::start(
            cmd,
            self.tokens,
            self.timeout,
        )?))
    }
}

/// Check that `spec` names a policy before any work, without starting an
/// external one (that happens once per run, where it is used).
pub fn check(spec: &str) -> LabResult<()> {
    check_spec(&spec.parse()?)
}

/// [`check`] of a spec already parsed.
pub fn check_spec(spec: &PolicySpec) -> LabResult<()> {
    match spec.innermost() {
        PolicySpec::Exec(cmd) => crate::policy::exec::check_command(cmd),
        named => make_spec(named, "approx", crate::policy::exec::DEFAULT_TIMEOUT).map(drop),
    }
}

/// Build a built-in policy or a variant of one (see [`make_with`]).
pub fn make(spec: &str) -> LabResult<Box<dyn Policy>> {
    make_with(spec, "approx", crate::policy::exec::DEFAULT_TIMEOUT)
}

/// Policy specs given as a list (`--policy a,b --policy c`): each value
/// split at commas outside a variant's JSON values (`P:exclude_tools=["a","b"]`
/// is one spec), trimmed, empty ones dropped.
pub fn split_specs(values: &[String]) -> Vec<String> {
    values
        .iter()
        .flat_map(|v| crate::policy::variant::split_outside_json(v, ','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// The policy called `name`, with its upstream defaults.
pub fn make_named(name: &str) -> LabResult<Box<dyn Policy>> {
    let want = name.to_ascii_lowercase();
    if want == "none" {
        return Ok(Box::new(NoCompaction));
    }
    if want == "seed" || CoursePolicy::names().contains(&want.as_str()) {
        return Ok(Box::new(CoursePolicy::new(&want)?));
    }
    zoo()
        .into_iter()
        .find(|(n, _)| *n == want)
        .map(|(_, f)| f())
        .ok_or_else(|| {
            LabError::usage(
                format!("unknown policy `{name}`"),
                format!("use one of: {} (or `all`)", names().join(", ")),
            )
        })
}
