//! A retention observer prepared with its session (one automaton built up
//! front) reports exactly what the incremental one reports (an automaton
//! rebuilt at each request that brings new artifacts), under every policy,
//! on a generated session and on the shared real sessions.

use crate::common;
use common::{transcript_files, transcripts};

use ctxlab::import::{import_file_sessions, ImportOptions};
use ctxlab::message::{Block, Message};
use ctxlab::policy::engine::{replay_observed, Env, Session};
use ctxlab::retention::planted::{plant, Position};
use ctxlab::retention::{Retention, RetentionReport};
use ctxlab::zoo::list;
use serde_json::json;

/// Both observers on one replay of `messages` under `policy`.
fn both(messages: &[Message], policy: &str) -> (RetentionReport, RetentionReport) {
    let (planted, facts) = plant(messages, &Position::ALL);
    let mut prepared = Retention::for_session(&planted, facts.clone());
    let mut incremental = Retention::with_facts(facts);
    let mut p = list::make(policy).unwrap();
    let session = Session {
        name: "t",
        messages: &planted,
        times_ms: None,
    };
    replay_observed(
        p.as_mut(),
        session,
        &mut Env::default(),
        &mut [&mut prepared, &mut incremental],
    )
    .unwrap_or_else(|e| panic!("{policy}: {e}"));
    (prepared.finish(), incremental.finish())
}

fn assert_same(messages: &[Message], what: &str) -> Vec<RetentionReport> {
    let mut out = Vec::new();
    for policy in list::names() {
        let (a, b) = both(messages, policy);
        assert_eq!(
            serde_json::to_value(&a).unwrap(),
            serde_json::to_value(&b).unwrap(),
            "{what} under {policy}"
        );
        out.push(a);
    }
    out
}

/// Forty rounds of reads, commands, searches and fetches whose results hold
/// error lines, URLs and enough filler that every policy compacts; later
/// rounds fetch earlier files again and repeat earlier strings.
fn generated() -> Vec<Message> {
    let mut m = vec![Message::user_text(
        "fix the build; see https://example.org/task",
    )];
    for t in 0..40 {
        let id = format!("toolu_gen_{t:04}");
        let input = match t % 4 {
            0 => json!({ "file_path": format!("/src/mod_{}.rs", t % 12) }),
            1 => json!({ "command": format!("cargo test -p crate_{t}\necho done") }),
            2 => json!({ "pattern": format!("ident_{}", t % 7) }),
            _ => json!({ "url": format!("https://example.org/doc/{t}") }),
        };
        m.push(Message::assistant(vec![
            Block::Text {
                text: format!("round {t}"),
            },
            Block::ToolUse {
                id: id.clone(),
                name: ["Read", "Bash", "Grep", "WebFetch"][t % 4].into(),
                input: input.into(),
            },
        ]));
        let result = format!(
            "error[E{:04}]: cannot find `ident_{}` in /src/mod_{}.rs\nsee https://example.org/e/{}\n{}",
            t % 9,
            t % 7,
            t % 12,
            t % 5,
            "filler line of a long tool result\n".repeat(200 + 40 * (t % 3))
        );
        m.push(Message::tool_results(vec![(id, result)]));
    }
    m.push(Message::assistant(vec![Block::Text {
        text: "done".into(),
    }]));
    m
}

#[test]
fn a_prepared_observer_reports_what_the_incremental_one_does_on_a_generated_session() {
    let reports = assert_same(&generated(), "generated session");
    // The comparison means something: artifacts of several kinds were seen,
    // and some policy lost or moved some of them.
    let first = &reports[0];
    assert!(
        first.artifacts >= 30 && first.by_kind.len() >= 4,
        "{first:?}"
    );
    assert!(
        reports.iter().any(|r| r.present < r.artifacts),
        "no policy removed anything"
    );
}

/// Every policy on one shared session and every shared session under
/// several policies: policy k of the registry on session k mod n. Each pair
/// replays twice with both observers; all pairs (every policy on every
/// session, two observers) took over ten minutes of a test run.
#[test]
fn a_prepared_observer_reports_what_the_incremental_one_does_on_the_shared_sessions() {
    let Some(dir) = transcripts() else { return };
    let mut sessions = Vec::new();
    for file in transcript_files(&dir) {
        for s in import_file_sessions(&file, &ImportOptions::default()).unwrap() {
            sessions.push((file.display().to_string(), s.main));
        }
    }
    let mut covered = vec![false; sessions.len()];
    for (k, policy) in list::names().into_iter().enumerate() {
        let i = k % sessions.len();
        let (what, messages) = &sessions[i];
        let (a, b) = both(messages, policy);
        assert_eq!(
            serde_json::to_value(&a).unwrap(),
            serde_json::to_value(&b).unwrap(),
            "{what} under {policy}"
        );
        covered[i] = true;
    }
    assert!(covered.iter().all(|c| *c), "a shared session was left out");
}
