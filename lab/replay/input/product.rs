//! A real compaction is the product's decision: where the product compacted
//! in a recorded session, beside where its own policy (`claude-code` for a
//! Claude Code log, `gemini-cli` for a Gemini CLI recording,
//! [`crate::replay::input::envelope::product_policy`]) compacts when the session is replayed without the
//! product's artefacts ([`crate::import::artefacts`]) and decides for itself.

use serde::Serialize;

use super::envelope::RecordedLog;
use crate::import::{opens_product_compaction, ImportedSession};
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
    /// That request's recorded prompt tokens (Claude Code: input + cache
    /// read + cache write; Gemini CLI: the reply's `tokens.input`).
    pub recorded_after: Option<u64>,
    /// The zoo's port of the product (`claude-code`, `gemini-cli`), when it has one.
    pub policy: Option<String>,
    /// The product's policy in the replay: the call it compacted before.
    pub policy_call: Option<usize>,
    /// Its request at that call: messages plus envelope (an estimate).
    pub policy_after: Option<usize>,
    /// What the port's replay read of the recorded usage (a log that
    /// records it): under `none` the port predicts, under `recorded` it
    /// reads the product's counts and sizes, and the difference beside the
    /// recorded request is then partly an identity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub anchor: Option<super::anchor::Anchor>,
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
            // A truncation has no summary: its first reply stands for it.
            (c.dropped.is_some() || opens_product_compaction(session, c.at))
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
            recorded_after: after
                .get(k)
                .map(|r| r.usage.total())
                .or_else(|| recorded_after(session, c.at)),
            policy: super::envelope::session_product_policy(session).map(str::to_string),
            policy_call: None,
            policy_after: None,
            anchor: None,
        })
        .collect()
}

/// The prompt tokens the log records for the first reply after message
/// `at` that is not the product's own (a log that counts per reply: Gemini
/// CLI's `tokens`, opencode's steps; not opencode's summary call).
fn recorded_after(session: &ImportedSession, at: usize) -> Option<u64> {
    let artefacts = crate::import::artefacts::product_artefacts(session);
    session
        .recorded_tokens
        .iter()
        .map(|t| (t.after_messages.saturating_sub(1), t.sent))
        .find(|(reply, _)| *reply > at && artefacts.binary_search(reply).is_err())
        .map(|(_, sent)| sent)
}

/// Calls at which `run` replaced its history with a summary: all of it
/// (Claude Code), or all but the turns it keeps (Gemini CLI).
pub(crate) fn fires(run: &PolicyRun) -> Vec<usize> {
    let mut out: Vec<usize> = run
        .events
        .iter()
        .filter(|(_, e)| matches!(e, PolicyEvent::Summarised { .. }))
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

/// The table of real compactions (empty when there are none). The port's
/// column is named after it when every row has the same; else each cell
/// names its port.
pub fn render(rows: &[ProductCompaction], format: Format) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut ports: Vec<&str> = rows.iter().filter_map(|r| r.policy.as_deref()).collect();
    ports.sort_unstable();
    ports.dedup();
    let mixed = ports.len() > 1 || rows.iter().any(|r| r.policy.is_none());
    let policy = match ports.as_slice() {
        [one] if !mixed => one.to_string(),
        _ => "the product's port".to_string(),
    };
    let body = rows
        .iter()
        .map(|r| {
            let diff = match (r.policy_after, r.recorded_after) {
                (Some(p), Some(rec)) if rec > 0 => {
                    format!("{:+.1} %", (p as f64 - rec as f64) / rec as f64 * 100.0)
                }
                _ => "-".into(),
            };
            let fired = match (&r.policy, mixed) {
                (Some(port), true) => format!("{} ({port})", cell(r.policy_call)),
                _ => cell(r.policy_call),
            };
            vec![
                r.session.clone(),
                cell(r.trigger.clone()),
                cell(r.pre_tokens),
                r.call.to_string(),
                cell(r.recorded_after),
                fired,
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
    s.push_str(&anchors_note(rows));
    s
}

/// The line saying what each row's replay read of recorded usage: one
/// clause when every anchored row used the same anchor, else per session.
fn anchors_note(rows: &[ProductCompaction]) -> String {
    let mut used: Vec<(&str, super::anchor::Anchor)> = rows
        .iter()
        .filter_map(|r| Some((r.session.as_str(), r.anchor?)))
        .collect();
    used.dedup();
    let mut kinds: Vec<super::anchor::Anchor> = used.iter().map(|(_, a)| *a).collect();
    kinds.sort_by_key(|a| a.name());
    kinds.dedup();
    match kinds.as_slice() {
        [] => String::new(),
        [one] => format!("replayed under {}\n", one.label()),
        _ => used
            .iter()
            .map(|(s, a)| format!("{s} replayed under {}\n", a.label()))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::engine::CallRecord;

    fn row() -> ProductCompaction {
        ProductCompaction {
            session: "s".into(),
            trigger: None,
            pre_tokens: None,
            call: 3,
            recorded_after: Some(1000),
            policy: Some("gemini-cli".into()),
            policy_call: None,
            policy_after: None,
            anchor: None,
        }
    }

    fn run(events: Vec<(usize, PolicyEvent)>) -> PolicyRun {
        let call = |at| CallRecord {
            at,
            messages: 4,
            chars: 400,
            tokens: 100 + at,
            envelope: 10,
            events: 0,
            violations: Vec::new(),
        };
        PolicyRun {
            policy: "gemini-cli".into(),
            session: "s".into(),
            tokenizer: "approx".into(),
            calls: (0..6).map(call).collect(),
            events,
            findings: Default::default(),
            invalid_requests: 0,
            ended_by_error: None,
            note: None,
        }
    }

    #[test]
    fn a_summary_that_keeps_recent_turns_is_the_ports_compaction() {
        let summarised = |kept| PolicyEvent::Summarised {
            replaced: 8,
            kept,
            archive: None,
        };
        // Gemini CLI keeps the newest turns beside its summary.
        let mut rows = [row()];
        match_run(&mut rows, &run(vec![(4, summarised(3))]));
        assert_eq!(
            (rows[0].policy_call, rows[0].policy_after),
            (Some(4), Some(114))
        );
        // Claude Code keeps none.
        let mut rows = [row()];
        match_run(
            &mut rows,
            &run(vec![(2, summarised(0)), (2, summarised(0))]),
        );
        assert_eq!(rows[0].policy_call, Some(2));
        let table = render(&rows, Format::Table);
        assert!(table.contains("gemini-cli fired @call"), "{table}");
        // Rows of two products name their port in the cell.
        let mut other = row();
        other.policy = Some("claude-code".into());
        other.policy_call = Some(7);
        let table = render(&[rows[0].clone(), other], Format::Table);
        assert!(table.contains("the product's port fired @call"), "{table}");
        assert!(table.contains("7 (claude-code)"), "{table}");
    }
}
