//! `frozen:P`: a projecting design re-derives its edits from the whole
//! history every call, so its cleared set moves and the cached prefix
//! breaks on every call over its trigger; frozen it breaks only when the
//! trigger is crossed again. A rewriting design keeps its own edits, so
//! frozen it sends the very same requests. Either way the checker and the
//! validity oracle stay clean.

use crate::common;
use ctxlab::cache::observe::CostObserver;
use ctxlab::cache::{prices, CostReport, Provider};
use ctxlab::message::Message;
use ctxlab::policy::engine::{replay_observed, Env, PolicyRun, Session};
use ctxlab::zoo::list::make;

/// `spec` replayed on `messages`, priced on Anthropic's 5-minute sheet.
pub fn priced(spec: &str, messages: &[Message]) -> (PolicyRun, CostReport) {
    let mut policy = make(spec).unwrap();
    let mut cost = CostObserver::new(2_000, None);
    let session = Session {
        name: "planted",
        messages,
        times_ms: None,
    };
    let run = replay_observed(
        policy.as_mut(),
        session,
        &mut Env::default(),
        &mut [&mut cost],
    )
    .unwrap();
    let sheet = prices::sheet("claude-sonnet-4.5-5m").unwrap();
    (
        run,
        cost.finish(&Provider::Anthropic(Default::default()), sheet),
    )
}

/// No dangling pointer, no orphan, no request breaking a provider rule.
pub fn assert_clean(run: &PolicyRun) {
    assert_eq!(run.ended_by_error, None, "{}", run.policy);
    assert_eq!(run.invalid_requests, 0, "{}: {:?}", run.policy, run.calls);
    let f = &run.findings;
    assert_eq!(f.dangling_pointers.count, 0, "{}: {f:?}", run.policy);
    assert_eq!(f.orphans.count, 0, "{}: {f:?}", run.policy);
}

#[test]
fn a_projecting_design_frozen_breaks_its_prefix_less_often() {
    let session = common::tool_session(60, usize::MAX);
    let spec = "langchain-clear-tool-uses:trigger=2000";
    let (p, pc) = priced(spec, &session);
    let (f, fc) = priced(&format!("frozen:{spec}"), &session);
    assert_clean(&p);
    assert_clean(&f);
    assert!(
        pc.breaks > 10,
        "the plain design breaks often: {}",
        pc.breaks
    );
    assert!(fc.breaks >= 1, "frozen still compacts");
    assert!(
        fc.breaks * 3 < pc.breaks,
        "frozen {} vs plain {}",
        fc.breaks,
        pc.breaks
    );
    assert!(fc.cache_read_tokens * pc.input_tokens > pc.cache_read_tokens * fc.input_tokens);
    // Every break frozen makes is a decision of the design, named by its event.
    for b in fc.requests.iter().filter_map(|r| r.break_at.as_ref()) {
        assert_eq!(b.cause.to_string(), "messages_changed: cleared", "{b:?}");
    }
    // It still keeps the context bounded: never above the trigger by more
    // than what arrives between two calls.
    let peak = f.calls.iter().map(|c| c.tokens).max().unwrap();
    assert!(peak < 2_000 + 500, "peak {peak}");
}

#[test]
fn a_rewriting_design_is_frozen_by_nature() {
    let session = common::tool_session(60, usize::MAX);
    let spec = "langchain-summarization";
    let (p, pc) = priced(spec, &session);
    let (f, fc) = priced(&format!("frozen:{spec}"), &session);
    assert_clean(&p);
    assert_clean(&f);
    assert!(p.event_count("summarised") > 0, "the design compacts");
    assert_eq!(fc.breaks, pc.breaks);
    assert_eq!(fc.requests, pc.requests);
    assert_eq!(f.policy, "frozen:langchain-summarization");
}

#[test]
fn frozen_wraps_variants_gates_and_refuses_unknown_policies() {
    let p = make("frozen:gated:codex-cli:context_window=100000").unwrap();
    assert_eq!(
        p.info().name,
        "frozen:gated:codex-cli:context_window=100000"
    );
    let e = make("frozen:nonesuch").err().unwrap().to_string();
    assert!(e.contains("unknown policy `nonesuch`"), "{e}");
    let e = make("gated@gpt-5:none").err().unwrap().to_string();
    assert!(e.contains("resolved by `lab replay` only"), "{e}");
}
