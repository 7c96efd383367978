//! Why each prefix broke: per policy × session, the priced run's requests,
//! the prefix breaks, the share of input read from cache, the expiries and
//! the gate's skips, and the breaks counted by cause (the
//! [`crate::cache::BreakCause`] of each [`crate::cache::BreakAt`], in
//! Anthropic's cache-miss vocabulary with the policy event that changed the
//! message).

use std::collections::BTreeMap;

use crate::cache::CostReport;
use crate::policy::engine::PolicyRun;

/// The breaks of one report, counted by cause (`messages_changed: cleared 3`).
pub fn causes(r: &CostReport) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for b in r.requests.iter().filter_map(|q| q.break_at.as_ref()) {
        *out.entry(b.cause.to_string()).or_insert(0) += 1;
    }
    out
}

/// Cache reads over input tokens, in percent.
pub fn read_share(r: &CostReport) -> f64 {
    100.0 * r.cache_read_tokens as f64 / r.input_tokens.max(1) as f64
}

/// The break table of priced runs.
pub fn table(runs: &[(&PolicyRun, &CostReport)], format: crate::render::Format) -> String {
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|(run, r)| {
            let causes: Vec<String> = causes(r)
                .into_iter()
                .map(|(k, n)| format!("{k} ×{n}"))
                .collect();
            vec![
                run.session.clone(),
                run.policy.clone(),
                r.requests.len().to_string(),
                r.breaks.to_string(),
                format!("{:.1}", read_share(r)),
                r.expiries.to_string(),
                run.event_count("gated").to_string(),
                causes.join("; "),
            ]
        })
        .collect();
    let mut s = crate::render::table(
        &[
            "session",
            "policy",
            "requests",
            "prefix breaks",
            "read share %",
            "expiries",
            "gate skips",
            "break causes",
        ],
        rows,
        format == crate::render::Format::Markdown,
    );
    s.push_str(
        "\n\nbreak causes: the first changed segment's reason in Anthropic's cache-diagnostics vocabulary (system_changed, messages_changed), with the kind of the policy event that changed the message; an expiry (TTL) is counted apart, it changes no content\n",
    );
    s
}
