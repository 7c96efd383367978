//! `swe-agent-mask-10` on the real mini-swe-agent corpus against upstream
//! SWE-agent's own `LastNObservations(n=10)`, run by
//! `scripts/swe_mask_upstream.py` (its output, derived counts and indices
//! only, is `tests/golden/swe_agent/corpus_mask10.json`). Every session of
//! the corpus imports with a tool call for every action and a tool result
//! for every observation the script counted; on the sessions whose
//! elisions the script wrote, every request elides the same observations
//! with the same placeholders. Skipped without the shared transcripts.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common;

use ctxlab::import::corpus::{for_each_member, Compression, Item};
use ctxlab::import::{ImportOptions, ImportedSession};
use ctxlab::message::{Block, Message};
use ctxlab::policy::engine::{replay_observed, Env, Observer, Session, View};
use ctxlab::policy::PolicyEvent;
use ctxlab::zoo::list;
use serde_json::Value;

const CORPUS: &str = "corpus/mini-swe-agent__gemini-3-pro-swebench-verified-500.tar.xz";

fn expected() -> Value {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/swe_agent/corpus_mask10.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The member's name inside the archive (`ARCHIVE[MEMBER]`).
fn member_name(name: &str) -> &str {
    let start = name.rfind('[').map_or(0, |i| i + 1);
    name[start..].trim_end_matches(']')
}

/// What each request elided: (index of the assistant message, elided indices),
/// and each elided message's placeholder.
#[derive(Default)]
struct Elisions {
    main: Vec<Message>,
    requests: Vec<(usize, Vec<usize>)>,
    placeholders: BTreeMap<usize, String>,
}

impl Observer for Elisions {
    fn on_request(
        &mut self,
        _: usize,
        at: usize,
        request: &[Message],
        _: &[PolicyEvent],
        _: &View<'_>,
    ) {
        let mut elided = Vec::new();
        for (i, (sent, recorded)) in request.iter().zip(&self.main).enumerate() {
            if sent != recorded {
                let [Block::ToolResult { content, .. }] = sent.blocks() else {
                    panic!("message {i} changed but is no single tool result: {sent:?}")
                };
                elided.push(i);
                self.placeholders.insert(i, content.clone());
            }
        }
        if !elided.is_empty() {
            self.requests.push((at, elided));
        }
    }
}

fn elisions(s: &ImportedSession) -> Elisions {
    let mut policy = list::make("swe-agent-mask-10").unwrap();
    let mut seen = Elisions {
        main: s.main.clone(),
        ..Default::default()
    };
    let session = Session {
        name: &s.label,
        messages: &s.main,
        times_ms: None,
    };
    replay_observed(
        policy.as_mut(),
        session,
        &mut Env::default(),
        &mut [&mut seen],
    )
    .unwrap();
    seen
}

fn check(name: &str, s: &ImportedSession, want: &Value) -> bool {
    let sum = s.summary();
    let n = |k: &str| want[k].as_u64().unwrap() as usize;
    assert_eq!(sum.main_messages, n("messages"), "{name}: messages");
    assert_eq!(
        sum.main_tool_uses,
        n("actions"),
        "{name}: a tool call per action"
    );
    assert_eq!(
        s.stats.tool_results,
        n("observations"),
        "{name}: a result per observation"
    );
    let Some(requests) = want.get("requests") else {
        return false;
    };
    let got = elisions(s);
    let want_requests: Vec<(usize, Vec<usize>)> = serde_json::from_value(requests.clone()).unwrap();
    assert_eq!(
        got.requests, want_requests,
        "{name}: elided observations per request"
    );
    let want_placeholders: BTreeMap<usize, String> = want["placeholders"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.parse().unwrap(), v.as_str().unwrap().to_string()))
        .collect();
    assert_eq!(got.placeholders, want_placeholders, "{name}: placeholders");
    true
}

#[test]
fn mask_10_elides_what_upstream_elides_on_the_corpus() {
    let Some(dir) = common::transcripts() else {
        return;
    };
    let want = expected();
    let sessions = want["sessions"].as_object().unwrap();
    let item = Item::Archive(dir.join(CORPUS), Compression::Xz);
    let (mut seen, mut compared) = (0, 0);
    let options = ImportOptions::default();
    for_each_member(&item, &options, false, |m| {
        let name = member_name(&m.name).to_string();
        let Some(w) = sessions.get(&name) else {
            assert!(
                !name.ends_with(".traj.json"),
                "{name} is not in the expected file"
            );
            return Ok(());
        };
        let [s] = m.sessions?.try_into().unwrap();
        seen += 1;
        compared += usize::from(check(&name, &s, w));
        Ok(())
    })
    .unwrap();
    assert_eq!(seen, sessions.len());
    assert_eq!(compared, 5);
}
