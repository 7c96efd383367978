//! Why each prefix broke: per policy × session, the priced run's requests,
//! the prefix breaks, the share of input read from cache, the expiries and
//! the gate's skips, and the breaks counted by cause (the
//! [`crate::cache::BreakCause`] of each [`crate::cache::BreakAt`], in
//! Anthropic's cache-miss vocabulary with the policy event that changed the
//! message).

use std::collections::BTreeMap;

use super::policies::Compared;
use crate::cache::CostReport;

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

/// The break table of the priced runs in `out`.
pub fn table(out: &[Compared], format: crate::render::Format) -> String {
    let rows: Vec<Vec<String>> = out
        .iter()
        .filter_map(|c| c.cost.as_ref().map(|r| (c, r)))
        .map(|(c, r)| {
            let causes: Vec<String> = causes(r)
                .into_iter()
                .map(|(k, n)| format!("{k} ×{n}"))
                .collect();
            vec![
                c.run.session.clone(),
                c.run.policy.clone(),
                r.requests.len().to_string(),
                r.breaks.to_string(),
                format!("{:.1}", read_share(r)),
                r.expiries.to_string(),
                c.run.event_count("gated").to_string(),
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
