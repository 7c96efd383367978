//! Unit tests of the Realtime truncation modes: where `auto` cuts, how far
//! `retention_ratio` cuts and how rarely, pairs kept whole, the cache
//! consequence, `disabled`, and refused switches.

use serde_json::json;

use super::*;
use crate::message::Block;
use crate::policy::model::Scripted;
use crate::policy::validity;
use crate::tokens::Approx;
use ctxlab_measure::cache::{cost, prices, CacheRequest, Provider};

/// Text of exactly `n` tokens under [`Approx`] (4 characters a token).
fn text(n: usize) -> String {
    "abcd".repeat(n)
}

fn user(n: usize) -> Message {
    Message::user_text(text(n))
}

fn assistant(n: usize) -> Message {
    Message::assistant(vec![Block::Text { text: text(n) }])
}

/// Auto truncation with an input limit of `limit`.
fn auto_at(limit: usize) -> Realtime {
    Realtime::new(Truncation {
        model_input_limit: limit,
        ..Truncation::default()
    })
    .unwrap()
}

/// `retention_ratio` `r` with `token_limits.post_instructions` = `limit`.
fn retention_at(r: f64, limit: usize) -> Realtime {
    Realtime::new(Truncation {
        truncation: Mode::RetentionRatio,
        retention_ratio: r,
        post_instructions: Some(limit),
        ..Truncation::default()
    })
    .unwrap()
}

fn prepare(policy: &mut Realtime, history: &mut Vec<Message>) -> LabResult<Prepared> {
    let mut model = Scripted::default();
    PolicyCtx::with_test("/run/realtime", &mut model, |ctx| {
        policy.prepare(history, ctx)
    })
}

fn dropped(p: &Prepared) -> usize {
    p.events
        .iter()
        .map(|e| match e {
            PolicyEvent::Dropped { messages, .. } => *messages,
            _ => 0,
        })
        .sum()
}

/// Ten alternating messages of 100 tokens: exactly 1 000 tokens.
fn thousand() -> Vec<Message> {
    (0..10)
        .map(|i| {
            if i % 2 == 0 {
                user(100)
            } else {
                assistant(100)
            }
        })
        .collect()
}

#[test]
fn auto_keeps_everything_at_the_limit_and_drops_just_enough_past_it() {
    let mut p = auto_at(1_000);
    let mut h = thousand();
    let at = prepare(&mut p, &mut h).unwrap();
    assert_eq!(
        at.request.len(),
        10,
        "1 000 tokens is not over a 1 000 limit"
    );
    assert!(at.events.is_empty());

    h.push(user(1));
    let over = prepare(&mut p, &mut h).unwrap();
    assert_eq!(dropped(&over), 1, "one token over: the oldest item goes");
    assert_eq!(Approx.count_messages(&over.request), 901);
    assert_eq!(h.len(), 11, "a projecting design: the history stays whole");

    h.push(assistant(250));
    let more = prepare(&mut p, &mut h).unwrap();
    assert_eq!(
        dropped(&more),
        2,
        "1 151 tokens: two 100-token items go to fit again"
    );
    assert_eq!(Approx.count_messages(&more.request), 951);
    assert_eq!(p.truncations, 2);
}

#[test]
fn retention_cuts_to_its_ratio_then_leaves_small_additions_alone() {
    let mut p = retention_at(0.7, 1_000);
    let mut h = thousand();
    h.push(user(100));
    let cut = prepare(&mut p, &mut h).unwrap();
    assert_eq!(dropped(&cut), 4, "1 100 tokens down to 0.7 x 1 000");
    assert_eq!(Approx.count_messages(&cut.request), 700);
    for n in 0..3 {
        h.push(user(100));
        let next = prepare(&mut p, &mut h).unwrap();
        assert!(next.events.is_empty(), "addition {n} fits under the limit");
        assert!(next.request.starts_with(&cut.request));
    }
    assert_eq!(p.truncations, 1);
}

/// Requests of a session growing by one 100-token message per call.
fn grow(policy: &mut Realtime, calls: usize) -> Vec<Vec<Message>> {
    let mut h = Vec::new();
    (0..calls)
        .map(|i| {
            h.push(if i % 2 == 0 {
                user(100)
            } else {
                assistant(100)
            });
            prepare(policy, &mut h).unwrap().request
        })
        .collect()
}

#[test]
fn retention_truncates_fewer_times_than_auto_on_the_same_history() {
    let mut auto = auto_at(1_000);
    let mut retention = retention_at(0.7, 1_000);
    grow(&mut auto, 40);
    grow(&mut retention, 40);
    // Auto cuts on every call from the 11th; retention at calls 11, 15, …, 39.
    assert_eq!(auto.truncations, 30);
    assert_eq!(retention.truncations, 8);
}

/// One user request, then `n` tool rounds, then the answer.
fn tool_session(rounds: usize) -> Vec<Message> {
    let mut h = vec![user(60)];
    for i in 0..rounds {
        let id = format!("call_{i}");
        h.push(Message::assistant(vec![
            Block::Text { text: text(20) },
            Block::ToolUse {
                id: id.clone(),
                name: "read".into(),
                input: json!({"path": format!("f{i}")}).into(),
            },
        ]));
        h.push(Message::tool_results(vec![(id, text(90 + i % 7 * 10))]));
    }
    h.push(assistant(40));
    h
}

#[test]
fn a_call_and_its_output_are_never_split() {
    let full = tool_session(60);
    for mut p in [auto_at(700), retention_at(0.5, 700), retention_at(0.0, 300)] {
        let mut h = Vec::new();
        for m in &full {
            h.push(m.clone());
            // The engine calls the model after user messages only.
            if m.role != crate::message::Role::User {
                continue;
            }
            let req = prepare(&mut p, &mut h).unwrap().request;
            assert!(
                validity::check(&req).is_empty(),
                "{:?}",
                validity::check(&req)
            );
            assert!(!req.is_empty());
        }
        assert!(p.truncations > 0);
    }
}

#[test]
fn the_newest_group_is_kept_even_alone_over_the_limit() {
    let mut p = auto_at(500);
    let mut h = vec![user(100), assistant(100)];
    h.push(Message::assistant(vec![Block::ToolUse {
        id: "big".into(),
        name: "cat".into(),
        input: json!({}).into(),
    }]));
    h.push(Message::tool_results(vec![("big".into(), text(2_000))]));
    let out = prepare(&mut p, &mut h).unwrap();
    assert_eq!(out.request.len(), 2, "the call stays with its huge output");
    assert!(validity::check(&out.request).is_empty());
    let why = format!("{:?}", out.events);
    assert!(why.contains("alone is over the limit"), "{why}");
}

/// A long session priced on OpenAI's automatic cache: the tokens of the
/// default 32k model, 500-token messages, 300 calls.
fn priced(policy: &mut Realtime) -> (ctxlab_measure::cache::CostReport, Vec<Vec<Message>>) {
    let mut h = Vec::new();
    let mut requests = Vec::new();
    let mut cache = Vec::new();
    for i in 0..300 {
        h.push(if i % 2 == 0 {
            user(500)
        } else {
            assistant(500)
        });
        let req = prepare(policy, &mut h).unwrap().request;
        let segments = ctxlab_measure::cache::segments_of("instructions", 0, &req, &Approx);
        cache.push(CacheRequest::with_last_breakpoint(segments, None, i));
        requests.push(req);
    }
    let sheet = prices::sheet("gpt-4o").unwrap();
    let report = cost(&cache, &Provider::OpenAi(Default::default()), sheet);
    (report, requests)
}

#[test]
fn retention_breaks_the_prompt_cache_fewer_times_than_auto() {
    let mut auto = Realtime::default();
    let mut retention = Realtime::new(Truncation {
        truncation: Mode::RetentionRatio,
        ..Truncation::default()
    })
    .unwrap();
    let (a, _) = priced(&mut auto);
    let (r, requests) = priced(&mut retention);
    assert!(auto.truncations > 4 * retention.truncations.max(1));
    assert!(
        r.breaks < a.breaks,
        "retention {} vs auto {}",
        r.breaks,
        a.breaks
    );
    assert_eq!(a.breaks, auto.truncations, "every auto cut is a break");
    assert_eq!(
        r.breaks, retention.truncations,
        "every retention cut is a break"
    );
    // OpenAI bills a prefix not read from the cache as a fresh input (a
    // write): retention re-reads more of each request, so it writes less.
    assert!(r.cache_write_tokens < a.cache_write_tokens);
    let rate =
        |c: &ctxlab_measure::cache::CostReport| c.cache_read_tokens as f64 / c.input_tokens as f64;
    assert!(rate(&r) > rate(&a), "hit rate {} vs {}", rate(&r), rate(&a));
    // After a cut, each later request until the next cut extends the first
    // request after the cut: the longest possible shared prefix.
    let mut first = &requests[0];
    for pair in requests.windows(2) {
        if pair[1].starts_with(pair[0].as_slice()) {
            assert!(pair[1].starts_with(first.as_slice()));
        } else {
            first = &pair[1];
        }
    }
}

#[test]
fn disabled_refuses_past_the_limit_and_passes_under_it() {
    let mut p = Realtime::new(Truncation {
        truncation: Mode::Disabled,
        model_input_limit: 1_000,
        ..Truncation::default()
    })
    .unwrap();
    let mut h = thousand();
    assert_eq!(prepare(&mut p, &mut h).unwrap().request.len(), 10);
    h.push(user(1));
    let err = prepare(&mut p, &mut h).unwrap_err().to_string();
    assert!(err.contains("truncation disabled"), "{err}");
    assert!(err.contains("1001 tokens"), "{err}");
}

#[test]
fn bad_switches_are_refused_with_the_switch_named() {
    let cases = [
        (
            Truncation {
                truncation: Mode::RetentionRatio,
                retention_ratio: 1.5,
                ..Truncation::default()
            },
            "retention_ratio 1.5",
        ),
        (
            Truncation {
                retention_ratio: -0.1,
                ..Truncation::default()
            },
            "retention_ratio -0.1",
        ),
        (
            Truncation {
                retention_ratio: f64::NAN,
                ..Truncation::default()
            },
            "retention_ratio NaN",
        ),
        (
            Truncation {
                truncation: Mode::RetentionRatio,
                post_instructions: Some(0),
                ..Truncation::default()
            },
            "post_instructions 0",
        ),
        (
            Truncation {
                truncation: Mode::RetentionRatio,
                post_instructions: Some(30_000),
                ..Truncation::default()
            },
            "post_instructions 30000",
        ),
        (
            Truncation {
                post_instructions: Some(1_000),
                ..Truncation::default()
            },
            "not retention_ratio",
        ),
        (
            Truncation {
                model_input_limit: 0,
                ..Truncation::default()
            },
            "model_input_limit 0",
        ),
        (
            Truncation {
                max_output_tokens: CONTEXT_WINDOW,
                ..Truncation::default()
            },
            "no input room",
        ),
    ];
    for (cfg, want) in cases {
        let err = Realtime::new(cfg.clone()).unwrap_err().to_string();
        assert!(err.contains(want), "{want}: {err}");
        // A policy built around the check refuses at prepare, without a panic.
        let mut p = Realtime {
            config: cfg,
            ..Realtime::default()
        };
        assert!(prepare(&mut p, &mut thousand()).is_err());
    }
}

#[test]
fn switches_read_from_json_and_defaults_are_the_documented_ones() {
    let cfg: Truncation = serde_json::from_value(json!({
        "truncation": "retention_ratio",
        "retention_ratio": 0.8,
        "post_instructions": 5000
    }))
    .unwrap();
    assert_eq!(cfg.limit(), 5_000);
    assert_eq!(cfg.target(), 4_000);
    let d = Truncation::default();
    assert_eq!(
        (d.truncation, d.limit(), d.target()),
        (Mode::Auto, 28_224, 28_224)
    );
    assert!(serde_json::from_value::<Truncation>(json!({"ratio": 1})).is_err());
}

#[test]
fn info_is_approximate_in_tokens_without_pointers() {
    for (make, name) in [(auto as fn() -> _, NAME_AUTO), (retention, NAME_RETENTION)] {
        let p = make();
        let info = p.info();
        assert_eq!(info.name, name);
        assert!(info.source.approximate);
        assert_eq!(info.unit, Unit::Tokens);
        assert!(p.pointer_rules().is_empty());
    }
    assert_eq!(retention().info().constants["retention_ratio"], 0.7);
}

#[test]
fn an_empty_or_shrunk_history_does_not_panic() {
    let mut p = auto_at(100);
    assert!(prepare(&mut p, &mut Vec::new()).unwrap().request.is_empty());
    let mut h = thousand();
    prepare(&mut p, &mut h).unwrap();
    assert!(p.start > 0);
    let mut short = vec![user(1)];
    assert_eq!(prepare(&mut p, &mut short).unwrap().request.len(), 0);
}
