//! What a check file can say: every metric with its unit, every key with
//! its meaning. One table each, read by the parser, `lab check --help` and
//! the test that holds GUIDE.md's tables to them.

/// The unit a metric is measured in. One unit per metric, the same in the
/// table, the miss lines, the JSON and the docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A whole number of things.
    Count,
    /// Characters of a request (`len(json.dumps(request))`).
    Chars,
    /// Tokens by the check's token counter.
    Tokens,
    /// US dollars.
    Dollars,
    /// Percent, 0 to 100 (as every other ctxlab output shows shares).
    Percent,
    /// 0 or 1.
    Flag,
}

impl Unit {
    /// The unit as the docs and `--help` name it.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Count => "count",
            Unit::Chars => "chars",
            Unit::Tokens => "tokens",
            Unit::Dollars => "dollars",
            Unit::Percent => "percent (0-100)",
            Unit::Flag => "0 or 1",
        }
    }
}

/// One metric an expectation can name.
#[derive(Debug, Clone, Copy)]
pub struct Metric {
    /// Its name in an expectation.
    pub name: &'static str,
    /// Its unit.
    pub unit: Unit,
    /// What it measures.
    pub meaning: &'static str,
}

const fn m(name: &'static str, unit: Unit, meaning: &'static str) -> Metric {
    Metric {
        name,
        unit,
        meaning,
    }
}

/// Every metric an expectation can name. Cost metrics price with the
/// built-in Anthropic model and prices (estimates where the token counter
/// is); retention metrics plant facts in a separate run.
pub const METRICS: &[Metric] = &[
    m(
        "invalid_requests",
        Unit::Count,
        "requests that break a provider rule",
    ),
    m(
        "lost_forever",
        Unit::Count,
        "tool results neither in context nor held anywhere",
    ),
    m(
        "pointer_lost",
        Unit::Count,
        "results held that nothing in context leads to",
    ),
    m(
        "dangling_pointers",
        Unit::Count,
        "pointers whose target does not exist",
    ),
    m("orphans", Unit::Count, "files nothing in context reaches"),
    m(
        "ended_by_error",
        Unit::Flag,
        "1 when the policy failed and the run ended there",
    ),
    m("calls", Unit::Count, "model calls"),
    m("peak_chars", Unit::Chars, "the largest request"),
    m(
        "peak_tokens",
        Unit::Tokens,
        "the largest request (an estimate unless a provider tokenizer)",
    ),
    m("events", Unit::Count, "the policy's events"),
    m(
        "dollars",
        Unit::Dollars,
        "prompt-cache dollars of the session (estimate)",
    ),
    m("breaks", Unit::Count, "prompt-cache prefix breaks"),
    m(
        "artifact_recall",
        Unit::Percent,
        "share of artifacts the model can still reach",
    ),
    m(
        "refetch_calls",
        Unit::Count,
        "calls that re-fetch something compacted away",
    ),
];

/// The metric named `name`.
pub fn find(name: &str) -> Option<&'static Metric> {
    METRICS.iter().find(|m| m.name == name)
}

/// Every key of a check file: name, value, meaning.
pub const KEYS: &[(&str, &str, &str)] = &[
    (
        "sessions",
        "list of strings",
        "files, directories, globs or tar archives, relative to the check file",
    ),
    (
        "policies",
        "list of strings",
        "built-in policies (`lab policies`), variants, or exec:CMD",
    ),
    (
        "expect",
        "list of strings",
        "expectations METRIC OP BOUND; OP one of == != <= < >= >; BOUND a number, POLICY or FACTOR * POLICY",
    ),
    (
        "tokens",
        "string, optional",
        "token counter: approx (default), o200k, cl100k, claude",
    ),
    (
        "min_calls",
        "whole number, optional",
        "model calls each session must have (default 1); 0 also lets a check of no sessions pass",
    ),
    (
        "allow_damage",
        "true or false, optional",
        "false (default): import damage (a cut or malformed record, a file that is not a session) fails the check; true: it is a warning",
    ),
];

/// The text after `lab check --help`'s options: every key and metric.
pub fn help_text() -> String {
    let mut s = String::from("Check file keys (TOML):\n");
    for (key, value, meaning) in KEYS {
        s.push_str(&format!("  {key:<18} {value}: {meaning}\n"));
    }
    s.push_str("\nMetrics (unit: meaning):\n");
    for m in METRICS {
        s.push_str(&format!(
            "  {:<18} {}: {}\n",
            m.name,
            m.unit.name(),
            m.meaning
        ));
    }
    s.push_str(
        "\nA check fails (exit 1) on a miss, on no sessions or a session of no model calls \
         (unless min_calls = 0), and on import damage (unless allow_damage = true).\n\
         More: GUIDE.md, \"lab check\".",
    );
    s
}
