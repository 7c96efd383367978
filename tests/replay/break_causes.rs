//! Why each prefix broke: every break of every registered policy (and of
//! the frozen and gated wrappers of a projecting and a rewriting design)
//! on the shared sessions names its cause, in Anthropic's cache-miss
//! vocabulary, and the cause is the right one: a `messages_changed` naming
//! a tool call names one of the changed message's, `system_changed` comes
//! with the envelope's switch, and only the designs known to re-derive
//! their view change a sent message without an event.
//!
//! Each policy replays one session, round the sessions (all of them on
//! every policy take ten minutes at the tests' opt-level).

use crate::common;
use common::{transcript_files, transcripts};

use ctxlab::cache::observe::CostObserver;
use ctxlab::cache::{prices, BreakCause, Provider};
use ctxlab::import::{import_file, ImportOptions};
use ctxlab::message::Message;
use ctxlab::policy::engine::{replay_observed, Env, Observer, Prefix, Session, View};
use ctxlab::policy::PolicyEvent;
use ctxlab::zoo::list;

/// Designs whose view is rebuilt from the history each call and can change
/// a message they sent without recording an event (found by this test).
const REDERIVING: [&str; 3] = [
    "openhands-recent",
    "swe-agent-summary-21-10",
    "anthropic-compact",
];

/// Keeps every request's messages and envelope, to check the causes against.
#[derive(Default)]
struct Requests(Vec<(Vec<Message>, usize)>);

impl Observer for Requests {
    fn on_request(&mut self, _: usize, _: usize, r: &[Message], _: &[PolicyEvent], v: &View<'_>) {
        self.0.push((r.to_vec(), v.envelope));
    }
}

/// The wrong or missing causes of `spec`'s breaks on `messages`, and the
/// number of breaks.
fn wrong_causes(spec: &str, name: &str, messages: &[Message]) -> (Vec<String>, usize) {
    let mut policy = list::make(spec).unwrap();
    let mut cost = CostObserver::new(0, None);
    let mut seen = Requests::default();
    // An envelope that switches after the product's own compaction, as a
    // replay of a Claude Code log has: those breaks are `system_changed`.
    let mut env = Env {
        prefix: Prefix {
            tokens: 4_000,
            after_compaction: vec![3_000],
            product_policy: Some("claude-code".into()),
            ..Prefix::default()
        },
        ..Env::default()
    };
    let session = Session {
        name,
        messages,
        times_ms: None,
    };
    replay_observed(
        policy.as_mut(),
        session,
        &mut env,
        &mut [&mut cost, &mut seen],
    )
    .unwrap();
    let sheet = prices::sheet("claude-sonnet-4.5-5m").unwrap();
    let report = cost.finish(&Provider::Anthropic(Default::default()), sheet);
    let mut wrong = Vec::new();
    for r in &report.requests {
        let Some(b) = &r.break_at else { continue };
        let (request, envelope) = &seen.0[r.index];
        let previous_envelope = seen.0[r.index - 1].1;
        let ok = match &b.cause {
            BreakCause::SystemChanged => b.segment == 0 && *envelope != previous_envelope,
            BreakCause::MessagesChanged { event: None, .. } => false,
            BreakCause::MessagesChanged { id: Some(id), .. } => {
                request.get(b.segment - 1).is_some_and(|m| {
                    m.tool_use_ids().contains(&id.as_str())
                        || m.tool_result_ids().contains(&id.as_str())
                })
            }
            BreakCause::MessagesChanged { .. } => b.segment > 0,
            BreakCause::Rederived => REDERIVING.iter().any(|d| spec.ends_with(d)),
        };
        if !ok {
            wrong.push(format!("request {}: {} ({})", r.index, b.label, b.cause));
        }
    }
    (wrong, report.breaks)
}

#[test]
fn every_prefix_break_on_the_shared_sessions_has_its_cause() {
    let Some(dir) = transcripts() else { return };
    let mut specs: Vec<String> = list::names().into_iter().map(str::to_string).collect();
    for p in ["swe-agent-mask-5", "langchain-summarization", "codex-cli"] {
        specs.push(format!("frozen:{p}"));
        specs.push(format!("gated:{p}"));
    }
    let files = transcript_files(&dir);
    let sessions: Vec<(String, Vec<Message>)> = files
        .iter()
        .map(|f| {
            let s = import_file(f, &ImportOptions::default()).unwrap();
            (f.file_name().unwrap().to_string_lossy().to_string(), s.main)
        })
        .collect();
    let (mut breaks, mut wrong) = (0, Vec::new());
    for (k, spec) in specs.iter().enumerate() {
        let (name, messages) = &sessions[k % sessions.len()];
        let (bad, n) = wrong_causes(spec, name, messages);
        if !bad.is_empty() {
            wrong.push(format!("{spec} on {name}: {bad:?}"));
        }
        breaks += n;
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    assert!(breaks > 50, "the replays break prefixes: {breaks}");
}
