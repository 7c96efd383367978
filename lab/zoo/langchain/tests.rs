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
        "/../../tests/golden/langchain/expected.json"
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
        let mut pol = ClearToolUses::new(serde_json::from_value(case["edit"].clone()).unwrap());
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
                input: json!({}).into(),
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
            input: json!({}).into(),
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

/// A generated session, with text beside every fifth result message and
/// every seventh one answered twice (two tool messages in a row, which
/// `from_lc` merges into one lab message).
fn uneven_session() -> Vec<Message> {
    let mut out = Vec::new();
    for (i, m) in ctxlab_import::generate::Generator::new(5, 40_000).enumerate() {
        let twice = m.is_tool_result() && i % 7 == 0;
        let mut m = m;
        if m.is_tool_result() && i % 5 == 0 {
            if let crate::message::Content::Blocks(b) = &mut m.content {
                b.push(Block::Text {
                    text: format!("note {i}"),
                });
            }
        }
        out.push(m.clone());
        if twice {
            out.push(m);
        }
    }
    out
}

#[test]
fn the_kept_edit_equals_the_whole_edit_at_every_call() {
    let session = uneven_session();
    let claude = crate::tokens::claude::Claude::default();
    let counters: [&dyn crate::tokens::TokenCounter; 2] = [&crate::tokens::Approx, &claude];
    let configs = [
        ClearToolUsesEdit {
            trigger: 3_000,
            ..Default::default()
        },
        ClearToolUsesEdit {
            trigger: 3_000,
            keep: 1,
            clear_tool_inputs: true,
            exclude_tools: vec!["Bash".into()],
            ..Default::default()
        },
    ];
    for tokens in counters {
        for config in &configs {
            let mut pol = ClearToolUses::new(config.clone());
            let mut history = Vec::new();
            let (mut calls, mut cleared) = (0, 0);
            for m in &session {
                if m.role == Role::Assistant {
                    let storage = crate::storage::MemFs::new();
                    let mut model = Scripted::default();
                    let mut ctx = PolicyCtx {
                        storage: &storage,
                        root: std::path::Path::new("/run/lc"),
                        tokens,
                        turn: calls,
                        envelope: 0,
                        anchor: None,
                        read_lines: None,
                        now_ms: None,
                        model: &mut model,
                    };
                    let got = pol.prepare(&mut history, &mut ctx).unwrap();
                    let mut events = Vec::new();
                    let whole = config.apply(to_lc(&history), tokens, &mut events);
                    assert_eq!(got.request, from_lc(&whole), "call {calls}");
                    assert_eq!(got.events, events, "call {calls}");
                    cleared = events.len();
                    calls += 1;
                }
                history.push(m.clone());
            }
            assert!(cleared > 50, "the session runs well past the trigger");
        }
    }
}

#[test]
fn a_replaced_history_is_edited_whole_again() {
    let session = uneven_session();
    let config = ClearToolUsesEdit {
        trigger: 3_000,
        ..Default::default()
    };
    let mut pol = ClearToolUses::new(config.clone());
    let mut history = session[..200].to_vec();
    with_ctx(&mut Scripted::default(), |ctx| {
        pol.prepare(&mut history, ctx)
    })
    .unwrap();
    // What `frozen:` does: the request becomes the history.
    let mut replaced: Vec<Message> = session[..150].to_vec();
    replaced.extend(session[..60].iter().cloned());
    pol.history_replaced();
    let got = with_ctx(&mut Scripted::default(), |ctx| {
        pol.prepare(&mut replaced, ctx)
    })
    .unwrap();
    let whole = config.apply(to_lc(&replaced), &crate::tokens::Approx, &mut Vec::new());
    assert_eq!(got.request, from_lc(&whole));
}
