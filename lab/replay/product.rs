//! A real compaction is the product's decision: where the product compacted
//! in a recorded session, beside where its own policy (`claude-code` for a
//! Claude Code log) compacts when the session is replayed without the
//! product's artefacts ([`crate::import::artefacts`]) and decides for itself.

use serde::Serialize;

use super::envelope::RecordedLog;
use crate::import::{is_product_summary, ImportedSession};
use crate::message::Role;
use crate::policy::engine::PolicyRun;
use crate::policy::PolicyEvent;
use crate::render::Format;

/// One real compaction and the product policy's counterpart.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ProductCompaction {
    /// Session name.
    pub session: String,
    /// `auto` or `manual`, when recorded.
    pub trigger: Option<String>,
    /// The product's count when it compacted, when recorded.
    pub pre_tokens: Option<u64>,
    /// The model call (0-based) the product compacted before: the first
    /// request of the continued conversation.
    pub call: usize,
    /// That request's recorded prompt tokens (input + cache read + cache write).
    pub recorded_after: Option<u64>,
    /// The product's policy in the replay: the call it compacted before.
    pub policy_call: Option<usize>,
    /// Its request at that call: messages plus envelope (an estimate).
    pub policy_after: Option<usize>,
}

/// The real compactions of `session` whose summary is in the log (a session
/// that opens compacted has nothing to compare), with the recorded size of
/// the first request after each.
pub fn compactions(session: &ImportedSession, log: Option<&RecordedLog>) -> Vec<ProductCompaction> {
    let after = log.map(RecordedLog::after_compactions).unwrap_or_default();
    session
        .real_compaction_meta
        .iter()
        .filter(|c| {
            session.main.get(c.at).is_some_and(is_product_summary)
                && !(c.at == 0 && session.starts_with_summary)
        })
        .enumerate()
        .map(|(k, c)| ProductCompaction {
            session: session.label.clone(),
            trigger: c.trigger.clone(),
            pre_tokens: c.pre_tokens,
            call: session.main[..c.at]
                .iter()
                .filter(|m| m.role == Role::Assistant)
                .count(),
            recorded_after: after.get(k).map(|r| r.usage.total()),
            policy_call: None,
            policy_after: None,
        })
        .collect()
}

/// Calls at which `run` replaced its whole history with a summary.
fn fires(run: &PolicyRun) -> Vec<usize> {
    let mut out: Vec<usize> = run
        .events
        .iter()
        .filter(|(_, e)| matches!(e, PolicyEvent::Summarised { kept: 0, .. }))
        .map(|(call, _)| *call)
        .collect();
    out.dedup();
    out
}

/// Fill in the product policy's counterparts from its run on the same
/// session: its k-th compaction beside the product's k-th.
pub fn match_run(rows: &mut [ProductCompaction], run: &PolicyRun) {
    for (row, call) in rows.iter_mut().zip(fires(run)) {
        row.policy_call = Some(call);
        row.policy_after = run.calls.get(call).map(|c| c.tokens + c.envelope);
    }
}

fn cell<T: ToString>(v: Option<T>) -> String {
    v.map_or("-".into(), |x| x.to_string())
}

/// The table of real compactions (empty when there are none).
pub fn render(rows: &[ProductCompaction], policy: &str, format: Format) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let body = rows
        .iter()
        .map(|r| {
            let diff = match (r.policy_after, r.recorded_after) {
                (Some(p), Some(rec)) if rec > 0 => {
                    format!("{:+.1} %", (p as f64 - rec as f64) / rec as f64 * 100.0)
                }
                _ => "-".into(),
            };
            vec![
                r.session.clone(),
                cell(r.trigger.clone()),
                cell(r.pre_tokens),
                r.call.to_string(),
                cell(r.recorded_after),
                cell(r.policy_call),
                cell(r.policy_after),
                diff,
            ]
        })
        .collect();
    let mut s = crate::render::table(
        &[
            "session",
            "trigger",
            "preTokens",
            "product fired @call",
            "next request (recorded)",
            &format!("{policy} fired @call"),
            "next request (estimate)",
            "difference",
        ],
        body,
        format == Format::Markdown,
    );
    s.push_str(&format!(
        "\nreal compactions: the product's own (recorded; the recorded arm keeps them), beside {policy} replaying the session without them; \
         its next request = messages + envelope, an estimate\n"
    ));
    s
}
