//! The keyed-fact retention classes, mutated and stale: each catches a case
//! planted here, and neither fires on `none` over every shared session.

use crate::common;
use common::{transcript_files, transcripts};

use ctxlab::error::LabResult;
use ctxlab::import::{import_file_sessions, ImportOptions};
use ctxlab::message::{Block, Message};
use ctxlab::policy::engine::{replay_observed, Env, Session};
use ctxlab::policy::{
    PointerRule, Policy, PolicyCtx, PolicyEvent, PolicyInfo, Prepared, Source, Unit,
};
use ctxlab::retention::facts::FactClasses;
use ctxlab::retention::Retention;
use ctxlab::zoo::list;
use serde_json::json;

/// A test design: from call `at` on, everything but the last `keep`
/// messages is replaced by one user message holding `summary`.
struct Rewrite {
    at: usize,
    keep: usize,
    summary: &'static str,
}

impl Policy for Rewrite {
    fn info(&self) -> PolicyInfo {
        PolicyInfo {
            name: "rewrite".into(),
            family: "test",
            summary: "test summary".into(),
            source: Source {
                upstream: "tests/replay/retention_classes.rs".into(),
                files: &[],
                license: "MIT",
                approximate: false,
            },
            constants: json!({}),
            unit: Unit::Messages,
            differences: vec![],
        }
    }

    fn pointer_rules(&self) -> Vec<PointerRule> {
        vec![]
    }

    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        let mut events = Vec::new();
        if ctx.turn == self.at {
            let tail = history.split_off(history.len() - self.keep);
            let replaced = history.len();
            *history = vec![Message::user_text(self.summary)];
            history.extend(tail);
            events.push(PolicyEvent::Summarised {
                replaced,
                kept: self.keep,
                archive: None,
            });
        }
        Ok(Prepared {
            request: history.clone(),
            events,
        })
    }
}

fn call(id: &str) -> Message {
    Message::assistant(vec![Block::ToolUse {
        id: id.into(),
        name: "Bash".into(),
        input: json!({ "command": format!("make {id}") }).into(),
    }])
}

fn result(id: &str) -> Message {
    Message::tool_results(vec![(id.into(), format!("ok {id}"))])
}

/// The classes of one replay of `messages` under `policy`.
fn classes(policy: &mut dyn Policy, messages: &[Message]) -> FactClasses {
    let mut r = Retention::default();
    let session = Session {
        name: "t",
        messages,
        times_ms: None,
    };
    replay_observed(policy, session, &mut Env::default(), &mut [&mut r]).unwrap();
    r.finish().classes
}

fn none() -> Box<dyn Policy> {
    list::make("none").unwrap()
}

/// Calls 0..=3 come before messages 1, 3, 5, 7. From call 2 the summary
/// replaces messages 0..=2 and restates `retries` wrongly (5, never said)
/// and `TIMEOUT_MS` rightly: mutated at calls 2 and 3, never stale.
#[test]
fn a_summary_that_restates_a_number_wrongly_is_mutated() {
    let messages = vec![
        Message::user_text("Settings for the run:\nretries = 3\nTIMEOUT_MS: 500"),
        call("a"),
        result("a"),
        call("b"),
        result("b"),
        call("c"),
        result("c"),
        Message::assistant(vec![Block::Text {
            text: "done".into(),
        }]),
    ];
    let mut wrong = Rewrite {
        at: 2,
        keep: 2,
        summary: "Summary of the run.\nretries = 5\nTIMEOUT_MS: 500",
    };
    let c = classes(&mut wrong, &messages);
    assert_eq!((c.keys, c.revised), (2, 0));
    assert_eq!(
        (c.mutated.requests, c.mutated.first, c.mutated.at_end),
        (2, Some(2), 1)
    );
    assert_eq!(c.mutated.samples, [r#"retries: held "5" (latest "3")"#]);
    assert_eq!(c.stale.requests, 0);
    let mut right = Rewrite {
        at: 2,
        keep: 2,
        summary: "Summary of the run.\nretries = 3\nTIMEOUT_MS: 500",
    };
    let c = classes(&mut right, &messages);
    assert_eq!((c.mutated.requests, c.stale.requests), (0, 0));
    let c = classes(none().as_mut(), &messages);
    assert_eq!((c.mutated.requests, c.stale.requests), (0, 0));
}

/// The plan is revised at message 3. A summary at call 3 that keeps the
/// first plan and drops the revision holds a superseded value while the
/// latest is lost: stale at call 3 (the last), never mutated. Before the
/// revision arrives the old plan is the latest, so nothing is stale.
#[test]
fn a_revised_plan_whose_revision_is_dropped_is_stale() {
    let messages = vec![
        Message::user_text("PLAN: migrate the tables first"),
        call("a"),
        result("a"),
        Message::user_text("Change of course.\nPLAN: migrate the API first"),
        call("b"),
        result("b"),
        call("c"),
        result("c"),
        Message::assistant(vec![Block::Text {
            text: "done".into(),
        }]),
    ];
    let mut anchored = Rewrite {
        at: 3,
        keep: 2,
        summary: "- PLAN: migrate the tables first",
    };
    let c = classes(&mut anchored, &messages);
    assert_eq!((c.keys, c.revised), (1, 1));
    assert_eq!(
        (c.stale.requests, c.stale.first, c.stale.at_end),
        (1, Some(3), 1)
    );
    assert_eq!(
        c.stale.samples,
        [r#"PLAN: held "migrate the tables first" (latest "migrate the API first")"#]
    );
    assert_eq!(c.mutated.requests, 0);
    let mut revised = Rewrite {
        at: 3,
        keep: 2,
        summary: "PLAN: migrate the tables first\nPLAN: migrate the API first",
    };
    let c = classes(&mut revised, &messages);
    assert_eq!((c.mutated.requests, c.stale.requests), (0, 0));
    let c = classes(none().as_mut(), &messages);
    assert_eq!((c.mutated.requests, c.stale.requests), (0, 0));
}

/// `none` changes nothing, so no request can hold a fact the transcript
/// did not state or lose a latest value: neither class fires on any shared
/// session, while the sessions do state keyed facts (the test would
/// otherwise prove nothing).
#[test]
fn neither_class_fires_on_none_over_every_shared_session() {
    let Some(dir) = transcripts() else { return };
    let mut keys = 0;
    for file in transcript_files(&dir) {
        for s in import_file_sessions(&file, &ImportOptions::default()).unwrap() {
            let c = classes(none().as_mut(), &s.main);
            let what = file.display();
            assert_eq!(c.mutated.requests, 0, "{what}: {:?}", c.mutated.samples);
            assert_eq!(c.stale.requests, 0, "{what}: {:?}", c.stale.samples);
            keys += c.keys;
        }
    }
    assert!(keys > 0, "no shared session states a keyed fact");
}

/// The retention table shows both classes: the wrong summary's row has
/// mutated requests and keys, `none`'s has none.
#[test]
fn the_retention_table_shows_both_classes() {
    use ctxlab::retention::render::{retention, score};
    let messages = vec![
        Message::user_text("retries = 3\nPLAN: migrate the tables first"),
        call("a"),
        result("a"),
        Message::user_text("PLAN: migrate the API first"),
        call("b"),
        result("b"),
        Message::assistant(vec![Block::Text {
            text: "done".into(),
        }]),
    ];
    let mut runs = Vec::new();
    let mut wrong = Rewrite {
        at: 2,
        keep: 2,
        summary: "retries = 5\nPLAN: migrate the tables first",
    };
    for policy in [&mut wrong as &mut dyn Policy, none().as_mut()] {
        let mut r = Retention::default();
        let session = Session {
            name: "t",
            messages: &messages,
            times_ms: None,
        };
        let run = replay_observed(policy, session, &mut Env::default(), &mut [&mut r]).unwrap();
        runs.push((run, r.finish()));
    }
    insta::assert_snapshot!(
        "retention_table_classes",
        retention(&score(&runs), ctxlab::render::Format::Markdown)
    );
}
