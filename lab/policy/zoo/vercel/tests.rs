//! The golden test against the `ai` package itself (fixture made by
//! `tests/golden/vercel/generate.mjs`).

use serde_json::Value;

use super::*;

#[test]
fn golden_prunes_equal_the_ai_sdk() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/golden/vercel/expected.json"
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
            "/tests/golden/vercel/expected.json"
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
