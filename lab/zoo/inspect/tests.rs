//! The handler's conversion and counting, and each strategy's cut on small
//! histories (the golden test against inspect_ai itself is
//! `tests/policy/policy_inspect.rs`).

use serde_json::json;

use super::*;
use crate::policy::model::Scripted;
use crate::policy::Policy;
use crate::tokens::Approx;

fn call(id: &str, name: &str) -> Block {
    Block::ToolUse {
        id: id.into(),
        name: name.into(),
        input: json!({"command": id}).into(),
    }
}

/// Task, then `steps` calls each answered by a result of `chars` chars.
fn steps(steps: usize, chars: usize) -> Vec<Message> {
    let mut h = vec![Message::user_text("fix the bug")];
    for s in 0..steps {
        let id = format!("c{s}");
        h.push(Message::assistant(vec![
            Block::Thinking {
                thinking: format!("think {s}"),
            },
            Block::Text {
                text: format!("step {s}"),
            },
            call(&id, "bash"),
        ]));
        h.push(Message::tool_results(vec![(id, "x".repeat(chars))]));
    }
    h
}

#[test]
fn conversion_round_trips_results_and_text_beside_them() {
    let mut m = Message::tool_results(vec![("a".into(), "1".into()), ("b".into(), "2".into())]);
    if let Content::Blocks(b) = &mut m.content {
        b.push(Block::Text {
            text: "note".into(),
        });
    }
    let ims = to_inspect(4, &m);
    let ids: Vec<&str> = ims.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["m4.0", "m4.1", "m4.b"]);
    assert_eq!(from_inspect(&ims), vec![m]);
    let h = steps(2, 3);
    let all: Vec<Im> = h
        .iter()
        .enumerate()
        .flat_map(|(i, m)| to_inspect(i, m))
        .collect();
    assert_eq!(from_inspect(&all), h);
}

#[test]
fn count_joins_every_part_with_newlines_and_adds_ten_percent() {
    // "ab" + "\n" + "bash" + "\n" + {"command": "c0"} = 2+1+4+1+17 = 25 chars
    // -> 7 approx tokens -> int(7 * 1.1) = 7.
    let ims = vec![
        Im::user("m0".into(), ImContent::Str("ab".into())),
        Im {
            tool_calls: vec![Call {
                id: "c0".into(),
                function: "bash".into(),
                arguments: json!({"command": "c0"}).into(),
            }],
            role: ImRole::Assistant,
            ..Im::user("m1".into(), ImContent::List(Vec::new()))
        },
    ];
    assert_eq!(count(&Approx, &ims), 7);
    assert_eq!(count_text(&Approx, &"y".repeat(40)), 11, "int(10 * 1.1)");
    assert_eq!(count(&Approx, &[]), 1, "never below 1");
    assert_eq!(dumps_ascii(&json!({"k": "é"})), r#"{"k": "\u00e9"}"#);
}

#[test]
fn threshold_is_a_fraction_of_the_window_up_to_one() {
    assert_eq!(resolve_threshold(0.9, 128_000), 115_200);
    assert_eq!(resolve_threshold(2500.0, 128_000), 2500);
}

fn run(policy: &mut dyn Policy, history: &[Message], summaries: &[&str]) -> Vec<Prepared> {
    let mut model = Scripted::replies(summaries.iter().copied());
    let mut out = Vec::new();
    PolicyCtx::with_test("/run/inspect", &mut model, |ctx| {
        for at in 0..history.len() {
            if history[at].role == Role::Assistant {
                let mut h = history[..at].to_vec();
                out.push(policy.prepare(&mut h, ctx).unwrap());
            }
        }
    });
    out
}

#[test]
fn edit_keeps_the_newest_three_results_and_the_last_thinking() {
    let h = steps(8, 400);
    let mut p = edit::Edit::new(CompactionEdit {
        threshold: 500.0,
        ..Default::default()
    });
    let calls = run(&mut p, &h, &[]);
    let last = &calls.last().unwrap().request;
    let results: Vec<&str> = last
        .iter()
        .flat_map(|m| m.blocks())
        .filter_map(|b| match b {
            Block::ToolResult { content, .. } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    let removed = results
        .iter()
        .filter(|c| **c == edit::TOOL_RESULT_REMOVED)
        .count();
    assert_eq!(removed, results.len() - 3);
    let thinking = last
        .iter()
        .flat_map(|m| m.blocks())
        .filter(|b| matches!(b, Block::Thinking { .. }))
        .count();
    assert_eq!(
        thinking, 1,
        "reasoning kept in the newest assistant turn only"
    );
    assert!(crate::policy::validity::check(last).is_empty());
}

#[test]
fn trim_keeps_the_task_and_the_newest_share_without_breaking_pairs() {
    let h = steps(10, 400);
    let mut p = trim::Trim::new(CompactionTrim {
        threshold: 900.0,
        ..Default::default()
    });
    let calls = run(&mut p, &h, &[]);
    assert!(calls.iter().any(|c| c
        .events
        .iter()
        .any(|e| matches!(e, PolicyEvent::Dropped { .. }))));
    for c in &calls {
        assert_eq!(c.request[0], h[0], "the task stays first");
        assert!(crate::policy::validity::check(&c.request).is_empty());
    }
}

#[test]
fn summary_replaces_the_conversation_with_one_user_message() {
    let h = steps(10, 400);
    let mut p = summary::Summary::new(CompactionSummary {
        threshold: 600.0,
        ..Default::default()
    });
    let calls = run(
        &mut p,
        &h,
        &["<analysis>a</analysis>\n<summary>S1</summary>", "S2"],
    );
    let first = calls
        .iter()
        .find(|c| !c.events.is_empty())
        .expect("a summary");
    assert_eq!(first.request.len(), 2);
    assert_eq!(
        first.request[1],
        Message::user_text(summary::summary_message("<summary>S1</summary>"))
    );
}

#[test]
fn summary_text_keeps_a_quoted_pair_and_a_lone_analysis() {
    assert_eq!(summary::summary_text("no tags"), "no tags");
    assert_eq!(
        summary::summary_text("<analysis>x</analysis>  <summary>y</summary>"),
        "<summary>y</summary>"
    );
    let quoted = "<summary>s <analysis>q</analysis><summary>t</summary>";
    assert_eq!(summary::summary_text(quoted), quoted);
    assert_eq!(
        summary::summary_text("<analysis>only</analysis>"),
        "<analysis>only</analysis>"
    );
}

#[test]
fn prompt_is_upstreams_with_the_addendums_filled() {
    let s = CompactionSummary {
        instructions: Some("Keep paths.".into()),
        ..Default::default()
    };
    let p = s.prompt(&[]);
    assert!(p.ends_with("follow below.\n\nKeep paths.\n"));
    assert!(!p.contains("{addendums}"));
    assert!(
        p.starts_with("\nYou are a helpful AI assistant tasked with summarizing conversations.")
    );
}
