//! The golden test against the `langchain` package itself (fixture made by
//! `tests/golden/langchain/generate.py`), the pair-safe cut and its fault.

use serde_json::{json, Value};

use super::*;
use crate::policy::model::{ModelRole, Scripted};
use crate::policy::{Policy, PolicyCtx, PolicyEvent};

fn with_ctx<T>(model: &mut dyn ModelRole, f: impl FnOnce(&mut PolicyCtx<'_>) -> T) -> T {
    PolicyCtx::with_test("/run/lc", model, f)
}

fn fixture() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/golden/langchain/expected.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn messages(v: &Value) -> Vec<Message> {
    serde_json::from_value(v.clone()).unwrap()
}

#[test]
fn golden_summaries_equal_langchain() {
    let fx = fixture();
    let cases = fx.as_object().unwrap();
    let mut seen = 0;
    for (name, case) in cases
        .iter()
        .filter(|(n, _)| n.starts_with("summarization/"))
    {
        let mut history = messages(&case["history"]);
        let mut pol = Summarization {
            config: SummarizationMiddleware {
                trigger_tokens: case["trigger"].as_u64().unwrap() as usize,
                keep_messages: case["keep"].as_u64().unwrap() as usize,
                fault_search_range: None,
            },
        };
        let mut model = Scripted::replies(["S1"]);
        let got = with_ctx(&mut model, |ctx| pol.prepare(&mut history, ctx)).unwrap();
        assert_eq!(got.request, messages(&case["result"]), "{name}");
        let cuts: Vec<usize> = got
            .events
            .iter()
            .filter_map(|e| match e {
                PolicyEvent::Summarised { replaced, .. } => Some(*replaced),
                _ => None,
            })
            .collect();
        let want: Vec<usize> = serde_json::from_value(case["summarised"].clone()).unwrap();
        assert_eq!(cuts, want, "{name}: LangChain messages summarised");
        seen += 1;
    }
    assert_eq!(seen, 4);
}

#[test]
fn golden_clears_equal_langchain() {
    let fx = fixture();
    let mut seen = 0;
    for (name, case) in fx
        .as_object()
        .unwrap()
        .iter()
        .filter(|(n, _)| n.starts_with("clear/"))
    {
        let mut history = messages(&case["history"]);
        let before = history.clone();
        let mut pol = ClearToolUses {
            config: serde_json::from_value(case["edit"].clone()).unwrap(),
        };
        let got = with_ctx(&mut Scripted::default(), |ctx| {
            pol.prepare(&mut history, ctx)
        })
        .unwrap();
        assert_eq!(got.request, messages(&case["result"]), "{name}");
        assert_eq!(
            history, before,
            "{name}: projecting, the history stays whole"
        );
        seen += 1;
    }
    assert_eq!(seen, 4);
}

/// Task, one call answered by `fan` parallel results, then `after` single steps.
fn fan_out(fan: usize, after: usize) -> Vec<Message> {
    let mut h = vec![Message::user_text("read every file")];
    let ids: Vec<String> = (0..fan).map(|k| format!("r{k}")).collect();
    h.push(Message::assistant(
        ids.iter()
            .map(|id| Block::ToolUse {
                id: id.clone(),
                name: "read".into(),
                input: json!({}),
            })
            .collect(),
    ));
    h.push(Message::tool_results(
        ids.iter()
            .map(|id| (id.clone(), format!("{id} text")))
            .collect(),
    ));
    for s in 0..after {
        let id = format!("s{s}");
        h.push(Message::assistant(vec![Block::ToolUse {
            id: id.clone(),
            name: "bash".into(),
            input: json!({}),
        }]));
        h.push(Message::tool_results(vec![(id, "ok".into())]));
    }
    h
}

#[test]
fn a_cut_among_many_results_moves_back_to_their_call_unless_the_search_is_bounded() {
    // 1 + 1 + 10 tool messages + 2: keep 10 puts the cut on the 3rd result.
    let lc = to_lc(&fan_out(10, 1));
    let intact = SummarizationMiddleware {
        keep_messages: 10,
        ..Default::default()
    };
    assert_eq!(
        intact.cutoff(&lc),
        1,
        "back to the AI message with the calls"
    );
    let bounded = SummarizationMiddleware {
        fault_search_range: Some(1),
        ..intact.clone()
    };
    let cut = bounded.cutoff(&lc);
    assert!(
        matches!(lc[cut], Lc::Tool { .. }),
        "the kept part opens with a result"
    );
    let mut history = fan_out(10, 1);
    let mut pol = Summarization {
        config: SummarizationMiddleware {
            trigger_tokens: 1,
            ..bounded
        },
    };
    let got = with_ctx(&mut Scripted::replies(["S"]), |ctx| {
        pol.prepare(&mut history, ctx)
    })
    .unwrap();
    assert!(
        got.request[1].is_tool_result(),
        "orphan results right after the summary"
    );
    assert!(!crate::policy::validity::check(&got.request).is_empty());
}

#[test]
fn conversion_round_trips_a_history() {
    let mut h = fan_out(3, 2);
    if let crate::message::Content::Blocks(b) = &mut h[2].content {
        b.push(Block::Text {
            text: "note beside results".into(),
        });
    }
    assert_eq!(from_lc(&to_lc(&h)), h);
}
