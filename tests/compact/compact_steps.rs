//! Each step of the pipeline on its own, and the entry points, on real files.

use crate::common;
use common::turn;

use ctxlab::compact::config::{profile, Config};
use ctxlab::compact::probe::{self, Outcome};
use ctxlab::compact::session::{Action, Call, Script};
use ctxlab::compact::{Step, Summarizer};
use ctxlab::message::{Block, Content, Message};

fn seed() -> Config {
    profile("course-f9e8b28").unwrap().config
}

fn results(o: &Outcome) -> Vec<(String, String)> {
    o.final_messages
        .iter()
        .flat_map(|m| m.blocks().to_vec())
        .filter_map(|b| match b {
            Block::ToolResult {
                tool_use_id,
                content,
            } => Some((tool_use_id, content)),
            _ => None,
        })
        .collect()
}

fn content_of(o: &Outcome, id: &str) -> String {
    results(o).into_iter().find(|(i, _)| i == id).unwrap().1
}

#[test]
fn scenario_a_reproduces_the_seed_numbers() {
    let o = probe::run(&seed(), &probe::scenario_a(), Some(60)).unwrap();
    assert_eq!(
        o.counters.get("persisted_files").unwrap().value.to_string(),
        "[toolu_0.txt]"
    );
    assert!(content_of(&o, "toolu_0")
        .starts_with("[Earlier tool result saved at $RESULTS/toolu_0.txt]"));
    assert_eq!(content_of(&o, "toolu_1"), "[Earlier tool result omitted.]");
    assert_eq!(o.counters.count_of("lost_forever"), Some(1));
    assert_eq!(
        o.counters.get("lost_forever").unwrap().samples,
        vec!["toolu_1"]
    );
    insta::assert_json_snapshot!("scenario_a_final_messages", abbreviate(&o.final_messages));
}

#[test]
fn scenario_b_keeps_the_full_result_in_context() {
    let o = probe::run(&seed(), &probe::scenario_b(), Some(60)).unwrap();
    assert_eq!(
        o.counters.get("persisted_files").unwrap().value.to_string(),
        "[]"
    );
    assert_eq!(content_of(&o, "toolu_0").chars().count(), 150_000);
}

#[test]
fn persist_is_largest_first_and_stops_under_budget() {
    let mut cfg = seed();
    cfg.apply_override("batch_budget_chars=1000").unwrap();
    cfg.apply_override("large_result_chars=100").unwrap();
    cfg.apply_override("preview_chars=10").unwrap();
    let script = Script(vec![
        Action::User("go".into()),
        turn(vec![
            Call::sized("s", 50),
            Call::sized("m", 400),
            Call::sized("l", 900),
        ]),
        Action::Steps(vec![Step::Persist]),
    ]);
    let o = probe::run(&cfg, &script, Some(60)).unwrap();
    // 1350 > 1000: l goes first (-> ~90 chars), then 540 <= 1000 stops; m stays raw.
    assert_eq!(
        o.counters.get("persisted_files").unwrap().value.to_string(),
        "[l.txt]"
    );
    assert!(content_of(&o, "l")
        .starts_with("<persisted-output>\nFull output: $RESULTS/l.txt\nPreview:\nXXXXXXXXXX\n"));
    assert_eq!(content_of(&o, "m").len(), 400);
}

#[test]
fn micro_keeps_recent_and_short_results_and_respects_the_guard() {
    let o = probe::run(&seed(), &probe::guard_demo(), Some(60)).unwrap();
    assert!(
        results(&o).iter().all(|(_, c)| c.len() == 500),
        "unseen results must stay whole"
    );
    let mut script = probe::guard_demo();
    script.0.push(Action::AppendAssistant("seen".into()));
    script.0.push(Action::Steps(vec![Step::Micro]));
    let o = probe::run(&seed(), &script, Some(60)).unwrap();
    let r = results(&o);
    assert!(
        r[..3]
            .iter()
            .all(|(_, c)| c == "[Earlier tool result omitted.]"),
        "{r:?}"
    );
    assert!(r[3..].iter().all(|(_, c)| c.len() == 500));
    assert_eq!(o.counters.count_of("lost_forever"), Some(3));
}

#[test]
fn save_before_omit_and_idempotence_close_the_gaps() {
    let main = profile("course-main").unwrap().config;
    let mut cfg = main.clone();
    cfg.apply_override("micro_only_over_limit=false").unwrap();
    let o = probe::run(&cfg, &probe::scenario_a(), Some(160)).unwrap();
    assert_eq!(o.counters.count_of("lost_forever"), Some(0));
    assert!(content_of(&o, "toolu_1")
        .starts_with("[Earlier tool result saved at $RESULTS/toolu_1.txt]"));
    let o = probe::run(&cfg, &probe::recompaction(), Some(300)).unwrap();
    assert_eq!(o.counters.count_of("double_compacted"), Some(0));
    assert_eq!(o.counters.count_of("pointer_lost"), Some(0));
}

fn long_session(n: usize, chars: usize) -> Script {
    let mut a = vec![Action::User("long task".into())];
    for i in 0..n {
        a.push(turn(vec![Call::sized(&format!("t{i}"), chars)]));
    }
    a.push(Action::Prepare);
    Script(a)
}

#[test]
fn snip_archives_the_middle_with_pairs_protected() {
    let mut cfg = seed();
    cfg.apply_override("auto_summary=false").unwrap();
    let o = probe::run(&cfg, &long_session(40, 2_000), Some(60)).unwrap();
    assert_eq!(o.counters.flag_of("pairs_intact"), Some(true));
    let marker = o
        .final_messages
        .iter()
        .find_map(|m| match &m.content {
            Content::Text(t) if t.contains("messages archived at") => Some(t.clone()),
            _ => None,
        })
        .expect("a marker");
    assert!(
        marker.starts_with('[') && marker.contains("$TRANSCRIPTS/transcript_"),
        "{marker}"
    );
    // head 3 + marker + tail 47 (+1 when the tail backs up to keep a pair).
    assert!(o.final_messages.len() <= 52, "{}", o.final_messages.len());
    // f9e8b28 omits old 2 000-char results without saving them: replayable,
    // not archived (seed section 3). The hardened profile saves them first.
    assert!(o.counters.count_of("lost_forever").unwrap() > 0);
    let mut hardened = profile("hardened").unwrap().config;
    hardened.apply_override("auto_summary=false").unwrap();
    let o = probe::run(&hardened, &long_session(40, 2_000), Some(60)).unwrap();
    assert_eq!(o.counters.count_of("lost_forever"), Some(0));
    assert_eq!(o.counters.count_of("pointer_lost"), Some(0));
    assert_eq!(o.counters.flag_of("pairs_intact"), Some(true));
}

#[test]
fn auto_summary_replaces_history_with_one_reference_only_message() {
    let o = probe::run(&seed(), &long_session(12, 20_000), Some(60)).unwrap();
    assert!(o.counters.count_of("summary_calls").unwrap() >= 1);
    let first = o.final_messages[0].text();
    assert!(first.starts_with("[Compacted]\n\nCurrent user request:\nlong task\n\nConversation summary (reference only):\n\""), "{first}");
    assert!(first.contains("\n\nFull transcript: $TRANSCRIPTS/transcript_"));
    assert_eq!(o.counters.flag_of("pairs_intact"), Some(true));
    // The summary fires while the three results are still whole, and its
    // transcript holds them: nothing is lost on this path.
    assert_eq!(o.counters.count_of("lost_forever"), Some(0));
    let main = profile("course-main").unwrap().config;
    let o = probe::run(&main, &long_session(12, 20_000), Some(60)).unwrap();
    // Course main saves and shortens old results first and never needs the summary here.
    assert_eq!(o.counters.count_of("summary_calls"), Some(0));
    assert_eq!(o.counters.count_of("lost_forever"), Some(0));
    assert_eq!(o.counters.count_of("pointer_lost"), Some(0));
}

#[test]
fn summary_failure_leaves_history_and_an_orphan_transcript() {
    let o = probe::run_with(
        &seed(),
        &long_session(12, 20_000),
        Some(60),
        Summarizer::Fail,
    )
    .unwrap();
    assert_eq!(o.counters.count_of("summary_calls"), Some(0));
    assert!(o.counters.count_of("summary_failures").unwrap() >= 1);
    assert!(!o.final_messages[0].text().starts_with("[Compacted]"));
}

#[test]
fn reactive_compact_keeps_a_pair_safe_tail() {
    let mut cfg = seed();
    cfg.apply_override("auto_summary=false").unwrap();
    let mut script = long_session(8, 2_000);
    script.0.insert(script.0.len() - 1, Action::PromptTooLong);
    script
        .0
        .insert(script.0.len() - 1, turn(vec![Call::sized("last", 10)]));
    let o = probe::run(&cfg, &script, Some(60)).unwrap();
    assert!(o.final_messages[0].text().starts_with("[Reactive compact]"));
    assert_eq!(o.counters.flag_of("pairs_intact"), Some(true));
    assert_eq!(o.counters.count_of("summary_calls"), Some(1));
    // Tail of 5 backed up by one to keep the leading result's call.
    assert!(
        o.final_messages[1].has_tool_use(),
        "{:?}",
        o.final_messages[1]
    );

    cfg.apply_override("pair_protection=false").unwrap();
    let o = probe::run(&cfg, &script, Some(60)).unwrap();
    assert_eq!(o.counters.flag_of("pairs_intact"), Some(false));
}

#[test]
fn compact_tool_summarises_after_the_batch() {
    let script = Script(vec![
        Action::User("tidy up".into()),
        turn(vec![Call::sized("x", 10)]),
        Action::CompactTool,
        Action::Prepare,
    ]);
    let o = probe::run(&seed(), &script, Some(60)).unwrap();
    assert_eq!(o.final_messages.len(), 1);
    assert!(o.final_messages[0].text().starts_with("[Compacted]"));
    assert_eq!(o.counters.count_of("lost_forever"), Some(0));
}

#[test]
fn probe_final_messages_snapshot() {
    let o = probe::run(
        &profile("prototype").unwrap().config,
        &probe::prototype_probe(),
        Some(60),
    )
    .unwrap();
    insta::assert_json_snapshot!("probe_intact_final_messages", abbreviate(&o.final_messages));
}

/// Long fills shortened so snapshots stay readable; lengths are kept in the text.
fn abbreviate(messages: &[Message]) -> Vec<Message> {
    let short = |s: &str| {
        if s.len() > 200 {
            format!(
                "{}…({} chars)",
                &s[..s.char_indices().nth(120).map_or(s.len(), |(i, _)| i)],
                s.chars().count()
            )
        } else {
            s.to_string()
        }
    };
    messages
        .iter()
        .map(|m| {
            let mut m = m.clone();
            match &mut m.content {
                Content::Text(t) => *t = short(t),
                Content::Blocks(bs) => {
                    for b in bs {
                        if let Block::ToolResult { content, .. } = b {
                            *content = short(content);
                        }
                    }
                }
            }
            m
        })
        .collect()
}

#[test]
fn broken_final_messages_snapshots() {
    use ctxlab::compact::experiments::sides;
    for (id, script, len) in [
        ("D6", probe::prototype_probe(), 160),
        ("D3", probe::prototype_probe(), 60),
        ("R1", probe::recompaction(), 163),
    ] {
        let (_, broken) = sides(id).unwrap().configs().unwrap();
        let o = probe::run(&broken, &script, Some(len)).unwrap();
        insta::assert_json_snapshot!(
            format!("final_messages_{id}_broken_{len}"),
            abbreviate(&o.final_messages)
        );
    }
}

#[test]
fn oversized_in_context_counts_raw_results_not_pointers() {
    // At long paths every placeholder is longer than the prototype's per-item
    // threshold; the intact probe still has no raw oversized result in context.
    let proto = profile("prototype").unwrap().config;
    for len in [160, 199, 250, 400] {
        let c = probe::run(&proto, &probe::prototype_probe(), Some(len))
            .unwrap()
            .counters;
        assert_eq!(
            c.count_of("oversized_in_context"),
            Some(0),
            "path_len {len}"
        );
    }
    // A raw result over the threshold left whole in context is counted.
    let course = profile("course-f9e8b28").unwrap().config;
    let c = probe::run(&course, &probe::scenario_b(), Some(160))
        .unwrap()
        .counters;
    assert_eq!(c.count_of("oversized_in_context"), Some(1));
}
