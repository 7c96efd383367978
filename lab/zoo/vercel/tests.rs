//! The golden test against the `ai` package itself (fixture made by
//! `tests/golden/vercel/generate.mjs`).

use serde_json::Value;

use super::*;

#[test]
fn golden_prunes_equal_the_ai_sdk() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/golden/vercel/expected.json"
    );
    let fx: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    for (name, case) in fx.as_object().unwrap() {
        let cfg: PruneMessages = serde_json::from_value(case["options"].clone()).unwrap();
        let history: Vec<Message> = serde_json::from_value(case["history"].clone()).unwrap();
        let want: Vec<Message> = serde_json::from_value(case["result"].clone()).unwrap();
        let got = cfg.apply(&history, &mut Vec::new()).unwrap();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn pairs_go_together_and_bad_options_are_refused() {
    let fx: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/golden/vercel/expected.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let history: Vec<Message> = serde_json::from_value(fx["defaults"]["history"].clone()).unwrap();
    let mut events = Vec::new();
    let got = prune_messages_config()
        .apply(&history, &mut events)
        .unwrap();
    let calls: Vec<&str> = got.iter().flat_map(|m| m.tool_use_ids()).collect();
    let results: Vec<&str> = got.iter().flat_map(|m| m.tool_result_ids()).collect();
    assert_eq!(
        calls, results,
        "every kept call keeps its result and no more"
    );
    assert!(crate::policy::validity::check(&got).is_empty());
    assert!(matches!(events[0], PolicyEvent::Dropped { .. }));
    let bad = PruneMessages {
        tool_calls: vec![ToolCallsRule {
            kind: "before-last-x-messages".into(),
            tools: None,
        }],
        ..Default::default()
    };
    let err = bad.apply(&history, &mut Vec::new()).unwrap_err();
    assert!(err.to_string().contains("before-last-x-messages"), "{err}");
}

fn prune_messages_config() -> PruneMessages {
    PruneMessages {
        reasoning: "before-last-message".into(),
        tool_calls: vec![ToolCallsRule {
            kind: "before-last-2-messages".into(),
            tools: None,
        }],
        empty_messages: "remove".into(),
    }
}

/// A session with what makes the pruning not monotone: reasoning, results
/// arriving late (a user text between call and result), reused call ids,
/// text beside results, text-only turns.
fn uneven_session() -> Vec<Message> {
    let mut h = vec![Message::user_text("task")];
    for i in 0..60 {
        let id = if i % 7 == 3 {
            "c1".to_string()
        } else {
            format!("c{i}")
        };
        h.push(Message::assistant(vec![
            Block::Thinking {
                thinking: format!("think {i}"),
            },
            Block::Text {
                text: format!("step {i}"),
            },
            Block::ToolUse {
                id: id.clone(),
                name: "bash".into(),
                input: serde_json::json!({ "command": format!("ls {i}") }).into(),
            },
        ]));
        if i % 5 == 2 {
            h.push(Message::user_text(format!("meanwhile {i}")));
        }
        let mut blocks = vec![Block::ToolResult {
            tool_use_id: id,
            content: format!("out {i}"),
        }];
        if i % 4 == 1 {
            blocks.push(Block::Text {
                text: format!("beside {i}"),
            });
        }
        h.push(Message::user_blocks(blocks));
        if i % 3 == 0 {
            h.push(Message::assistant(vec![
                Block::Thinking {
                    thinking: format!("aside {i}"),
                },
                Block::Text {
                    text: format!("said {i}"),
                },
            ]));
        }
    }
    h
}

/// The pruning kept across the calls of a session equals `pruneMessages`
/// of each call's whole history, requests and events, under the options
/// it keeps and one it does not.
#[test]
fn the_kept_pruning_equals_the_whole_pruning_at_every_call() {
    let rule = |kind: &str| ToolCallsRule {
        kind: kind.into(),
        tools: None,
    };
    let configs = [
        prune_messages_config(),
        PruneMessages {
            reasoning: "all".into(),
            tool_calls: vec![rule("before-last-message")],
            empty_messages: "keep".into(),
        },
        PruneMessages {
            reasoning: "none".into(),
            tool_calls: vec![rule("all")],
            ..Default::default()
        },
        PruneMessages {
            tool_calls: vec![rule("before-last-5-messages")],
            ..Default::default()
        },
        PruneMessages::default(),
        PruneMessages {
            tool_calls: vec![ToolCallsRule {
                kind: "before-last-2-messages".into(),
                tools: Some(vec!["Read".into()]),
            }],
            ..Default::default()
        },
    ];
    let generated: Vec<Message> = ctxlab_import::generate::Generator::new(3, 40_000).collect();
    for session in [uneven_session(), generated] {
        for config in &configs {
            let mut p = Vercel {
                config: config.clone(),
                kept: None,
            };
            let mut dropped = 0;
            for (k, m) in session.iter().enumerate() {
                if m.role != Role::Assistant {
                    continue;
                }
                let mut want_events = Vec::new();
                let want = config.apply(&session[..k], &mut want_events).unwrap();
                let mut model = crate::policy::model::Scripted::default();
                let mut hist = session[..k].to_vec();
                let got =
                    PolicyCtx::with_test("/run/v", &mut model, |ctx| p.prepare(&mut hist, ctx))
                        .unwrap();
                assert!(
                    got.request == want,
                    "{config:?}: request before message {k}"
                );
                assert_eq!(got.events, want_events, "{config:?}: before message {k}");
                dropped += want_events.len();
            }
            // (The rule naming a tool runs the whole pruning: not asserted.)
            if config.tool_calls.iter().any(|r| r.tools.is_none()) {
                assert!(dropped > 10, "{config:?}: {dropped} calls pruned");
            }
        }
    }
}
