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
        // Today's reproduction: the port reads the product's counts.
        anchor: ctxlab::replay::anchor::AnchorArg::from_flag(Some(
            ctxlab::replay::anchor::Anchor::Recorded,
        )),
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
    // Met: at the product's call, within 10 %.
    assert_eq!(c.policy_call, Some(1), "{c:?}");
    assert!(size_error(c).abs() <= 0.10, "{c:?}");
}

/// Each shared automatic compaction, pinned: (file, index among the file's
/// real compactions, `preTokens`, the product's call, the recorded size of
/// the first request after it). The port must fire at the product's call.
const PINNED: &[(&str, usize, u64, usize, u64)] = &[
    (
        "claude-code-config-9246a0c1__socialaize.jsonl",
        1,
        157_793,
        66,
        63_602,
    ),
    ("golfgod__chat@c2f506b.json", 0, 157_932, 77, 58_685),
    (
        "claude-agentic-framework__chat@7df973d.json",
        0,
        167_623,
        126,
        49_297,
    ),
];

/// The port counts as Claude Code does: from the usage the API reported
/// for the last reply (recorded in the log), moved by how much its history
/// differs from the product's, so it reaches the threshold at the call the
/// product did; after compacting, its summary is the product's recorded one
/// (the model's recorded answer), so its next request is the product's.
/// Before counting from recorded usage the port missed all three: socialaize
/// 13 calls late (unlogged content after the first compaction), golfgod 2
/// early (estimate 1-2 % above the recorded requests), claude-agentic-framework
/// 16 late (dense directory trees under-estimated).
#[test]
fn pinned_automatic_compactions_fire_at_the_products_call() {
    for &(file, i, pre, call, after) in PINNED {
        let Some(rows) = compactions(file) else {
            return;
        };
        let c = &rows[i];
        assert_eq!(
            (c.trigger.as_deref(), c.pre_tokens, c.call, c.recorded_after),
            (Some("auto"), Some(pre), call, Some(after)),
            "{file}"
        );
        assert_eq!(c.policy_call, Some(call), "{file}: {c:?}");
        assert!(size_error(c).abs() <= 0.10, "{file}: {c:?}");
    }
}

/// Every automatic compaction of every shared Claude Code log (logs added
/// later included): the port fires within one model call of the product and
/// its first request after is within 10 % of the recorded one.
#[test]
fn every_shared_automatic_compaction_is_met() {
    let Some(dir) = common::transcripts() else {
        return;
    };
    let files: Vec<String> = common::claude_code_files(&dir)
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    let mut checked = 0;
    for file in files {
        for c in compactions(&file).unwrap() {
            if c.trigger.as_deref() != Some("auto") {
                continue;
            }
            checked += 1;
            assert!(
                c.policy_call.is_some() && call_offset(&c).abs() <= 1,
                "{file}: {c:?}"
            );
            assert!(size_error(&c).abs() <= 0.10, "{file}: {c:?}");
        }
    }
    assert!(
        checked >= 4,
        "the shared logs hold four automatic compactions"
    );
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
        // Today's reproduction: the port reads the product's counts.
        anchor: ctxlab::replay::anchor::AnchorArg::from_flag(Some(
            ctxlab::replay::anchor::Anchor::Recorded,
        )),
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
        // Today's reproduction: the port reads the product's counts.
        anchor: ctxlab::replay::anchor::AnchorArg::from_flag(Some(
            ctxlab::replay::anchor::Anchor::Recorded,
        )),
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

/// The done-when (within one call, within 10 %), measured under `--anchor
/// none` (nothing read from recorded usage after the first request) on
/// every automatic compaction of every shared Claude Code log (the
/// directory walked): the port's call beside the product's, and its first
/// request after compacting beside the recorded one. Within 10 % after
/// compacting on all four; within one call on one. This pins what the
/// prediction does (notes/cost.md, "anchor"): socialaize's first
/// compaction at the product's call, its second 10 calls late (it was
/// never reached before the @-mentioned files were put back by mechanism;
/// the files its checkouts changed are still not); golfgod 2 calls early;
/// claude-agentic-framework 16 late. After compacting, the envelope is the
/// first request's prefix (system, tools, user context), less the
/// @-mentioned files put back by mechanism where the first message names
/// them (socialaize: the port re-attaches five of them as the product
/// re-reads them, +6 % and +5 %, was −51 % with the envelope table and no
/// files); golfgod within 5 % of the recorded request;
/// claude-agentic-framework 6 % short (was 45 % short: four of the five
/// files it re-attaches were last Read with a limit, and the product
/// re-reads them whole; the port sizes each from the shown lines and the
/// file's recorded line count). The summary is no longer the log's own:
/// its length is the median of the other logs' summaries by the same model
/// (`replay::summary_sizes`; golfgod and socialaize 14,506 characters,
/// claude-agentic-framework, the only Opus 4.6 log, the median of all
/// others, 14,506 against its own 18,629).
#[test]
fn under_anchor_none_the_port_predicts_from_the_log_alone() {
    let Some(dir) = common::transcripts() else {
        return;
    };
    let files = common::claude_code_files(&dir);
    let measure = Measure {
        tokens: ctxlab::tokens::Tokens::Claude,
        conversations: ctxlab::replay::subagents::Conversations {
            main_chain_only: true,
        },
        ..Measure::default()
    };
    let (_, info) = replay_files_product(
        &files,
        &["claude-code".to_string()],
        160,
        &Default::default(),
        measure,
    )
    .unwrap();
    let auto: Vec<&ProductCompaction> = info
        .compactions
        .iter()
        .filter(|c| c.trigger.as_deref() == Some("auto"))
        .collect();
    for c in &auto {
        eprintln!(
            "{} @{}: port @{:?}, next recorded {:?}, port {:?}",
            c.session, c.call, c.policy_call, c.recorded_after, c.policy_after
        );
    }
    let calls: Vec<(&str, usize, Option<usize>)> = auto
        .iter()
        .map(|c| (c.session.as_str(), c.call, c.policy_call))
        .collect();
    assert_eq!(
        calls,
        [
            (
                "claude-agentic-framework__chat@7df973d.json",
                126,
                Some(142)
            ),
            ("claude-code-config-9246a0c1__socialaize.jsonl", 1, Some(1)),
            (
                "claude-code-config-9246a0c1__socialaize.jsonl",
                66,
                Some(76)
            ),
            ("golfgod__chat@c2f506b.json", 77, Some(75)),
        ]
    );
    for c in &auto {
        assert_eq!(c.anchor, Some(ctxlab::replay::anchor::Anchor::None));
    }
    // The offset per compaction (port call − product call; `None`: never).
    // The target, every one within ±1, is met on 1 of the 4.
    let offsets: Vec<Option<i64>> = auto
        .iter()
        .map(|c| c.policy_call.map(|_| call_offset(c)))
        .collect();
    eprintln!("offsets under --anchor none: {offsets:?}");
    assert_eq!(offsets, [Some(16), Some(0), Some(10), Some(-2)]);
    let within = offsets
        .iter()
        .filter(|o| o.is_some_and(|o| o.abs() <= 1))
        .count();
    assert_eq!(within, 1, "{offsets:?}");
    let errors: Vec<(&str, usize, i64)> = auto
        .iter()
        .filter(|c| c.policy_call.is_some())
        .map(|c| {
            (
                c.session.as_str(),
                c.call,
                (size_error(c) * 100.0).round() as i64,
            )
        })
        .collect();
    assert_eq!(
        errors,
        [
            ("claude-agentic-framework__chat@7df973d.json", 126, -6),
            ("claude-code-config-9246a0c1__socialaize.jsonl", 1, 6),
            ("claude-code-config-9246a0c1__socialaize.jsonl", 66, 5),
            ("golfgod__chat@c2f506b.json", 77, -2),
        ]
    );
    // The done-when's second half: every first request after compacting
    // within 10 % of the recorded one.
    assert!(errors.iter().all(|e| e.2.abs() <= 10), "{errors:?}");
    let sources: Vec<(&str, bool)> = info
        .envelopes
        .iter()
        .filter(|e| !e.after_compaction.is_empty())
        .filter_map(|e| {
            let s = e.after_compaction_source.as_deref()?;
            Some((e.session.as_str(), s.contains("envelope_table.json")))
        })
        .filter(|(s, _)| auto.iter().any(|c| c.session == *s))
        .collect();
    assert_eq!(
        sources,
        [
            ("claude-agentic-framework__chat@7df973d.json", false),
            ("claude-code-config-9246a0c1__socialaize.jsonl", false),
            ("golfgod__chat@c2f506b.json", false),
        ]
    );
}
