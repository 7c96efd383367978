//! The policy engine and its policy-agnostic checker against the course's own
//! replay: the course profiles, run as policies, reach the same verdicts.

use crate::common;
use common::{lab, transcript_files, transcripts};

use ctxlab::import::{import_file, ImportOptions, ImportedSession};
use ctxlab::message::{Block, Message};
use ctxlab::policy::course::CoursePolicy;
use ctxlab::policy::engine::{replay, Env, PolicyRun, Session};
use ctxlab::policy::validity::{Kind, Provider};
use ctxlab::policy::Policy;
use ctxlab::replay::profiles::{replay_with, ReplayOptions, DEFAULT_PATH_LEN};
use ctxlab::zoo::list;
use rand::{Rng, SeedableRng};
use serde_json::json;

/// A coding session: a task, then `turns` tool calls with results of mixed
/// sizes (some past the persist threshold), then a closing answer.
fn synthetic(seed: u64, turns: usize) -> Vec<Message> {
    let mut rng = rand_chacha::ChaCha12Rng::seed_from_u64(seed);
    let mut out = vec![Message::user_text("fix the failing test")];
    for t in 0..turns {
        let id = format!("toolu_{t:04}");
        out.push(Message::assistant(vec![Block::ToolUse {
            id: id.clone(),
            name: "bash".into(),
            input: json!({"command": format!("step {t}")}).into(),
        }]));
        let size = match rng.gen_range(0..10) {
            0 => rng.gen_range(30_000..60_000),
            1..=3 => rng.gen_range(2_000..9_000),
            _ => rng.gen_range(10..800),
        };
        let line = format!("out {t} ");
        let text: String = line.repeat(size / line.len() + 1)[..size].to_string();
        out.push(Message::tool_results(vec![(id, text)]));
    }
    out.push(Message::assistant(vec![Block::Text {
        text: "done".into(),
    }]));
    out
}

fn ref_id(messages: &[Message]) -> usize {
    messages
        .iter()
        .flat_map(|m| m.tool_use_ids())
        .next()
        .map(|id| id.chars().count())
        .unwrap_or(7)
}

/// `messages` replayed through `policy` in a default environment.
fn replayed(policy: &mut dyn Policy, messages: &[Message]) -> PolicyRun {
    let session = Session {
        name: "s",
        messages,
        times_ms: None,
    };
    replay(policy, session, &mut Env::default()).unwrap()
}

/// The course replay and the engine, on one session, for every profile.
fn agree(session: &ImportedSession) {
    for name in CoursePolicy::names() {
        let course = replay_with(session, name, &ReplayOptions::default()).unwrap();
        let mut policy =
            CoursePolicy::with_root(name, Some(DEFAULT_PATH_LEN), ref_id(&session.main)).unwrap();
        let run = replayed(&mut policy, &session.main);
        let what = format!("{} under {name}", session.source.display());
        assert_eq!(run.calls.len(), course.model_calls, "{what}: calls");
        assert_eq!(
            run.findings.lost_forever.count, course.lost_forever,
            "{what}: lost"
        );
        assert_eq!(
            run.findings.pointer_lost.count, course.pointer_lost,
            "{what}: pointer lost"
        );
        assert_eq!(run.peak_chars() > 0, course.peak_chars > 0);
        // The course checks pairing only (a call answered in the next
        // message, a result answering the message before); so do these two kinds.
        let pairing = run
            .calls
            .iter()
            .flat_map(|c| &c.violations)
            .filter(|v| v.provider == Provider::Anthropic)
            .filter(|v| matches!(v.kind, Kind::UnansweredToolUse | Kind::OrphanToolResult))
            .count();
        assert_eq!(pairing == 0, course.pairs_intact, "{what}: pairing");
    }
}

fn imported(messages: Vec<Message>) -> ImportedSession {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.json");
    std::fs::write(&path, serde_json::to_string(&messages).unwrap()).unwrap();
    import_file(&path, &ImportOptions::default()).unwrap()
}

#[test]
fn course_policies_reach_the_course_replays_verdicts_on_generated_sessions() {
    for seed in 0..6 {
        agree(&imported(synthetic(seed, 40)));
    }
}

#[test]
fn the_intact_pipeline_loses_results_that_the_checker_names() {
    // f9e8b28 loses results forever on a long session (the batch budget and
    // the placeholder rule disagree); the checker must see it through the
    // policy interface alone.
    let mut lost = 0;
    for seed in 0..6 {
        let messages = synthetic(seed, 60);
        let run = replayed(list::make("course-f9e8b28").unwrap().as_mut(), &messages);
        lost += run.findings.lost_forever.count + run.findings.pointer_lost.count;
    }
    assert!(lost > 0, "generated sessions should show the course's loss");
}

#[test]
fn the_baseline_loses_nothing_and_every_request_is_valid() {
    let messages = synthetic(7, 30);
    let run = replayed(list::make("none").unwrap().as_mut(), &messages);
    assert_eq!(run.calls.len(), 31);
    assert_eq!(run.findings.in_context, 30);
    assert_eq!(
        run.findings.lost_forever.count + run.findings.pointer_lost.count,
        0
    );
    assert_eq!(run.invalid_requests, 0);
    // Sizes grow monotonically when nothing is compacted.
    assert!(run.calls.windows(2).all(|w| w[0].chars <= w[1].chars));
}

#[test]
fn unknown_policy_names_the_known_ones() {
    let err = list::make("nope").err().unwrap().to_string();
    assert!(
        err.contains("course-f9e8b28") && err.contains("none"),
        "{err}"
    );
}

#[test]
fn course_policies_reach_the_course_replays_verdicts_on_real_sessions() {
    let Some(dir) = transcripts() else { return };
    for f in transcript_files(&dir) {
        let session = import_file(&f, &ImportOptions::default()).unwrap();
        agree(&session);
    }
}

#[test]
fn lab_policies_lists_every_policy_with_source_and_constants() {
    let (code, out, err) = lab(&["policies", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let arr = v.as_array().unwrap();
    let names: Vec<&str> = arr.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, list::names());
    for p in arr {
        assert!(
            p["source"]["upstream"]
                .as_str()
                .is_some_and(|s| !s.is_empty()),
            "{p}"
        );
        assert!(p["constants"].is_object(), "{p}");
    }
    let (code, table, _) = lab(&["policies"]);
    assert_eq!(code, 0);
    insta::assert_snapshot!("policies_table", table);
}

#[test]
fn lab_replay_policy_runs_every_policy_and_refuses_unknown_names() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.json");
    std::fs::write(&path, serde_json::to_string(&synthetic(3, 25)).unwrap()).unwrap();
    let p = path.to_str().unwrap();
    let (code, out, err) = lab(&["replay", p, "--policy", "all", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let policies: Vec<&str> = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["policy"].as_str().unwrap())
        .collect();
    assert_eq!(policies, list::names());
    for r in v["runs"].as_array().unwrap() {
        assert_eq!(r["calls"].as_array().unwrap().len(), 26, "{}", r["policy"]);
    }
    let (code, _, err) = lab(&["replay", p, "--policy", "nope"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown policy `nope`"), "{err}");
}

/// Everything an observer is shown, in order: each message as it arrives
/// and each request with its call number, position, events and the
/// memo's reuse map.
#[derive(Default, PartialEq, Debug)]
struct Shown(Vec<String>);

impl ctxlab::policy::engine::Observer for Shown {
    fn on_message(&mut self, index: usize, m: &Message) {
        self.0.push(format!(
            "message {index} {}",
            serde_json::to_string(m).unwrap()
        ));
    }

    fn on_request(
        &mut self,
        call: usize,
        at: usize,
        request: &[Message],
        events: &[ctxlab::policy::PolicyEvent],
        view: &ctxlab::policy::engine::View<'_>,
    ) {
        self.0.push(format!(
            "request {call} {at} {} {} {:?} {:?}",
            serde_json::to_string(request).unwrap(),
            serde_json::to_string(events).unwrap(),
            view.same,
            view.sizes.iter().map(|s| s.tokens).collect::<Vec<_>>(),
        ));
    }
}

/// The lean run retention's planted copy uses (no checker, no validity
/// oracle, no events kept) shows its observers exactly what the full
/// run shows them, under every policy: what retention reports cannot
/// depend on which of the two ran.
#[test]
fn a_run_for_observers_shows_them_what_a_full_run_does() {
    let messages = synthetic(7, 40);
    for name in list::names() {
        let shown = |lean: bool| {
            let mut policy = list::make(name).unwrap();
            let session = Session {
                name: "s",
                messages: &messages,
                times_ms: None,
            };
            let mut env = Env::default();
            let mut seen = Shown::default();
            if lean {
                ctxlab::policy::engine::replay_for_observers(
                    policy.as_mut(),
                    session,
                    &mut env,
                    &mut [&mut seen],
                )
                .unwrap();
            } else {
                ctxlab::policy::engine::replay_observed(
                    policy.as_mut(),
                    session,
                    &mut env,
                    &mut [&mut seen],
                )
                .unwrap();
            }
            seen
        };
        let full = shown(false);
        assert!(
            full.0.iter().any(|l| l.starts_with("request")),
            "{name}: no request"
        );
        assert_eq!(shown(true), full, "{name}");
    }
}

/// Checks, at every request, that each tool input's kept counts equal the
/// counts of its value taken afresh, and that the request's `approx`
/// tokens and Python-JSON size equal those of a copy read back from its
/// JSON text (inputs that never counted anything).
#[derive(Default)]
struct InputCounts {
    requests: usize,
    inputs: usize,
}

impl ctxlab::policy::engine::Observer for InputCounts {
    fn on_request(
        &mut self,
        call: usize,
        _at: usize,
        request: &[Message],
        _events: &[ctxlab::policy::PolicyEvent],
        _view: &ctxlab::policy::engine::View<'_>,
    ) {
        use ctxlab::message::{estimate_chars, python_json_chars};
        use ctxlab::tokens::{Approx, TokenCounter};
        for b in request.iter().flat_map(|m| m.blocks()) {
            if let Block::ToolUse { input, .. } = b {
                let value = input.value();
                assert_eq!(
                    input.compact_chars(),
                    value.to_string().chars().count(),
                    "call {call}: {value}"
                );
                assert_eq!(
                    input.python_chars(),
                    python_json_chars(value),
                    "call {call}: {value}"
                );
                self.inputs += 1;
            }
        }
        let fresh: Vec<Message> =
            serde_json::from_str(&serde_json::to_string(request).unwrap()).unwrap();
        assert_eq!(
            Approx.count_messages(request),
            Approx.count_messages(&fresh),
            "call {call}"
        );
        assert_eq!(
            estimate_chars(request),
            estimate_chars(&fresh),
            "call {call}"
        );
        self.requests += 1;
    }
}

/// A session whose tool inputs carry what counting must get right
/// (non-ASCII text, escapes, floats, nesting) and what policies edit or
/// drop: `memory` calls with content arguments (Inspect clears those) and
/// many calls (the tool-use clearing policies empty old inputs).
fn rich_inputs(seed: u64, turns: usize) -> Vec<Message> {
    let mut messages = synthetic(seed, turns);
    for (t, m) in messages.iter_mut().enumerate() {
        for b in m.blocks_mut() {
            if let Block::ToolUse { name, input, .. } = b {
                if t % 4 == 1 {
                    *name = "memory".into();
                    *input = json!({"command": "create", "path": format!("/memories/n{t}.md"),
                        "file_text": "é\u{1F600} \"q\"\n".repeat(t % 7 + 1)})
                    .into();
                } else {
                    input.make_mut()["x"] = json!([t as f64 / 7.0, 1e-7, null, {"ü": "\t"}]);
                }
            }
        }
    }
    messages
}

/// Tool inputs keep their character counts (shared by every copy of a
/// history, forgotten on every edit): under every policy, at every call,
/// the kept counts equal counts taken afresh, on a generated session and
/// on the smallest shared Claude Code log.
#[test]
fn kept_tool_input_counts_equal_fresh_counts_at_every_call() {
    let mut sessions = vec![("rich".to_string(), rich_inputs(3, 60))];
    match transcripts() {
        Some(dir) => {
            let mut files = common::claude_code_files(&dir);
            files.sort_by_key(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(u64::MAX));
            if let Some(f) = files.first() {
                let s = import_file(f, &ImportOptions::default()).unwrap();
                sessions.push((f.display().to_string(), s.main));
            }
        }
        None => eprintln!("shared log skipped: no CTXLAB_TRANSCRIPTS"),
    }
    for (label, messages) in &sessions {
        for name in list::names() {
            let mut policy = list::make(name).unwrap();
            let session = Session {
                name: "s",
                messages,
                times_ms: None,
            };
            let mut seen = InputCounts::default();
            ctxlab::policy::engine::replay_observed(
                policy.as_mut(),
                session,
                &mut Env::default(),
                &mut [&mut seen],
            )
            .unwrap();
            assert!(
                seen.requests > 10,
                "{label} {name}: {} requests",
                seen.requests
            );
            assert!(seen.inputs > 0, "{label} {name}: no tool input seen");
        }
    }
}
