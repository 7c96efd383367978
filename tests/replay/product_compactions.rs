//! Every real automatic compaction in the shared Claude Code logs against
//! the product's own policy: `claude-code` replays the session without the
//! product's compaction artefacts, with the envelope from recorded usage and
//! the Claude estimator, and decides for itself where to compact.
//!
//! The aim: it compacts within one model call of the product, and its first
//! request after compacting is within 10 % of the one recorded. Where a case
//! misses, its test pins what it does; notes/cost.md says why.

use crate::common;

use ctxlab::replay::policies::{replay_files_product, Measure};
use ctxlab::replay::product::ProductCompaction;

/// The real compactions of one shared log, replayed under `claude-code`
/// with the Claude estimator and the envelope from recorded usage.
fn compactions(file: &str) -> Option<Vec<ProductCompaction>> {
    let dir = common::transcripts()?;
    let path = dir.join("claude_code").join(file);
    let measure = Measure {
        tokens: ctxlab::tokens::Tokens::Claude,
        ..Measure::default()
    };
    let (_, info) = replay_files_product(
        &[path],
        &["claude-code".to_string()],
        160,
        &Default::default(),
        measure,
    )
    .unwrap();
    Some(info.compactions)
}

/// The port's first request after compacting against the recorded one, as a fraction.
fn size_error(c: &ProductCompaction) -> f64 {
    let (port, recorded) = (
        c.policy_after.unwrap() as f64,
        c.recorded_after.unwrap() as f64,
    );
    (port - recorded) / recorded
}

/// Calls between the port's compaction and the product's (positive: later).
fn call_offset(c: &ProductCompaction) -> i64 {
    c.policy_call.unwrap() as i64 - c.call as i64
}

#[test]
fn socialaize_first_compaction_fires_at_the_products_call() {
    let Some(rows) = compactions("claude-code-config-9246a0c1__socialaize.jsonl") else {
        return;
    };
    let c = &rows[0];
    assert_eq!(
        (c.trigger.as_deref(), c.pre_tokens),
        (Some("auto"), Some(164_991))
    );
    assert_eq!(c.recorded_after, Some(63_308));
    // Met: within one call, within 10 %.
    assert!(call_offset(c).abs() <= 1, "{c:?}");
    assert!(size_error(c).abs() <= 0.10, "{c:?}");
}

/// Missed on the call: the port's first compaction was 13 calls after the
/// product's, because the recorded requests grow faster than the logged
/// messages after the first compaction (Claude Code 2.0.5 attaches unlogged
/// content to tool results), so the port's count is about 29k tokens short
/// at the product's call. The size after it is within 10 %.
#[test]
fn socialaize_second_compaction_is_pinned_late() {
    let Some(rows) = compactions("claude-code-config-9246a0c1__socialaize.jsonl") else {
        return;
    };
    let c = &rows[1];
    assert_eq!(
        (c.trigger.as_deref(), c.pre_tokens),
        (Some("auto"), Some(157_793))
    );
    assert_eq!(c.recorded_after, Some(63_602));
    assert_eq!((c.call, c.policy_call), (66, Some(79)));
    assert!(size_error(c).abs() <= 0.10, "{c:?}");
}

/// Missed on the call by two: the port compacted two calls before the
/// product. Near the threshold the recorded requests grow about 600 tokens
/// a call, and the estimate of the replayed request runs 1-2 % (1.5-3k
/// tokens) above the recorded one there, so the port crosses the 155,000
/// threshold (Claude Code 2.0.22, Sonnet 4.5) two calls early. The size
/// after it is within 10 %.
#[test]
fn golfgod_compaction_is_pinned_two_calls_early() {
    let Some(rows) = compactions("golfgod__chat@c2f506b.json") else {
        return;
    };
    let [c] = &rows[..] else {
        panic!("one compaction: {rows:?}")
    };
    assert_eq!(
        (c.trigger.as_deref(), c.pre_tokens),
        (Some("auto"), Some(157_932))
    );
    assert_eq!(c.recorded_after, Some(58_685));
    assert_eq!((c.call, c.policy_call), (77, Some(75)));
    assert!(size_error(c).abs() <= 0.10, "{c:?}");
}

/// Missed on the call: the port compacted 16 calls after the product
/// (Claude Code 2.1.38, Opus 4.6, threshold 167,000). From the results of
/// four parallel Task subagents (dense directory trees) on, the estimate
/// of the replayed requests runs 8-10 % below the recorded ones, so the
/// port reaches the threshold late. Its first request after compacting is
/// within 10 % of the recorded one, but only just (the lab's extractive
/// summary is ~2,000 characters, the product's ~19,000).
#[test]
fn claude_agentic_framework_compaction_is_pinned_late() {
    let Some(rows) = compactions("claude-agentic-framework__chat@7df973d.json") else {
        return;
    };
    let [c] = &rows[..] else {
        panic!("one compaction: {rows:?}")
    };
    assert_eq!(
        (c.trigger.as_deref(), c.pre_tokens),
        (Some("auto"), Some(167_623))
    );
    assert_eq!(c.recorded_after, Some(49_297));
    assert_eq!((c.call, c.policy_call), (126, Some(142)));
    assert!(size_error(c).abs() <= 0.10, "{c:?}");
}

/// The envelope moves the trigger: with no envelope, the port replaying the
/// same session never reaches Claude Code 2.0.22's threshold before the
/// product's compaction point plus twenty calls.
#[test]
fn without_the_envelope_the_port_fires_far_later_or_never() {
    let Some(dir) = common::transcripts() else {
        return;
    };
    let path = dir.join("claude_code/golfgod__chat@c2f506b.json");
    let measure = Measure {
        tokens: ctxlab::tokens::Tokens::Claude,
        envelope: ctxlab::replay::envelope::EnvelopeArg::None,
        ..Measure::default()
    };
    let (_, info) = replay_files_product(
        &[path],
        &["claude-code".to_string()],
        160,
        &Default::default(),
        measure,
    )
    .unwrap();
    let c = &info.compactions[0];
    assert!(c.policy_call.is_none_or(|p| p > c.call + 20), "{c:?}");
}

/// The port's compactions of one shared log under `envelope`: the restored
/// items of each, in order.
fn restored(
    file: &str,
    envelope: ctxlab::replay::envelope::EnvelopeArg,
) -> Option<Vec<Vec<String>>> {
    let dir = common::transcripts()?;
    let measure = Measure {
        tokens: ctxlab::tokens::Tokens::Claude,
        envelope,
        ..Measure::default()
    };
    let (runs, _) = replay_files_product(
        &[dir.join("claude_code").join(file)],
        &["claude-code".to_string()],
        160,
        &Default::default(),
        measure,
    )
    .unwrap();
    let compactions = runs[0]
        .run
        .events
        .iter()
        .filter(|(_, e)| matches!(e, ctxlab::policy::PolicyEvent::Summarised { kept: 0, .. }))
        .count();
    let items: Vec<Vec<String>> = runs[0]
        .run
        .events
        .iter()
        .filter_map(|(_, e)| match e {
            ctxlab::policy::PolicyEvent::Restored { items, .. } => Some(items.clone()),
            _ => None,
        })
        .collect();
    assert!(compactions > 0, "the port compacts {file}");
    Some(items)
}

/// Where the recorded post-compaction prefix already holds the files the
/// product re-attached, the port adds none; with a given envelope (no
/// recorded prefix after compacting) it re-attaches the newest files the
/// log read or wrote.
#[test]
fn reattachment_is_counted_once() {
    use ctxlab::replay::envelope::EnvelopeArg;
    let file = "claude-code-config-9246a0c1__socialaize.jsonl";
    let Some(with_prefix) = restored(file, EnvelopeArg::Auto) else {
        return;
    };
    assert!(with_prefix.is_empty(), "{with_prefix:?}");
    let without = restored(file, EnvelopeArg::Tokens(50_000)).unwrap();
    assert!(!without.is_empty());
    for items in &without {
        assert!((1..=6).contains(&items.len()), "{items:?}");
        assert!(
            items.iter().all(|i| i == "plan" || i.starts_with('/')),
            "{items:?}"
        );
    }
}
