//! The SWE-agent, OpenHands, Aider, LangChain, Vercel, goose, Roo Code,
//! OpenAI Realtime, Claude Code microcompact and session memory, Gemini CLI
//! masking, Amp handoff and Cline focus-chain policies on whole sessions: every request each one sends is one a
//! provider accepts, on a synthetic session
//! with the awkward shapes (parallel calls, interjections, thinking, a final
//! answer) and on every real transcript when the directory is there.

use crate::common;
use common::{transcript_files, transcripts};

use std::collections::BTreeSet;

use ctxlab::import::{import_file, ImportOptions};
use ctxlab::message::{Block, Message};
use ctxlab::policy::engine::{replay, Env, PolicyRun, Session};
use ctxlab::policy::validity::Violation;
use ctxlab::policy::{responses, Policy};
use ctxlab::zoo::list;
use serde_json::json;

const POLICIES: &[&str] = &[
    "swe-agent-mask-5",
    "swe-agent-mask-10",
    "swe-agent-summary-21-10",
    "swe-agent-hybrid",
    "openhands-observation-masking",
    "openhands-recent",
    "openhands-amortized",
    "openhands-llm-summarizing",
    "openhands-conversation-window",
    "aider-chat-summary",
    "langchain-summarization",
    "langchain-clear-tool-uses",
    "vercel-prune-messages",
    "goose-auto-compact",
    "roo-code-auto-condense",
    "openai-realtime-auto",
    "openai-realtime-retention",
];

/// `steps` steps; every fifth is two parallel calls, every seventh is
/// followed by a user interjection, every eleventh has a thinking block and
/// a text-only reply after it.
fn synthetic(steps: usize) -> Vec<Message> {
    let mut out = vec![Message::user_text("fix the failing test in calc.py")];
    for s in 0..steps {
        let ids: Vec<String> = (0..if s % 5 == 4 { 2 } else { 1 })
            .map(|k| format!("toolu_{s:03}_{k}"))
            .collect();
        let mut blocks = Vec::new();
        if s % 11 == 3 {
            blocks.push(Block::Thinking {
                thinking: format!("think {s}"),
            });
        }
        blocks.extend(ids.iter().map(|id| Block::ToolUse {
            id: id.clone(),
            name: "bash".into(),
            input: json!({ "command": format!("step {s}") }).into(),
        }));
        out.push(Message::assistant(blocks));
        out.push(Message::tool_results(
            ids.iter()
                .map(|id| (id.clone(), format!("{id} says\n").repeat(s % 40 + 1)))
                .collect(),
        ));
        if s % 11 == 3 {
            out.push(Message::assistant(vec![Block::Text {
                text: format!("progress at {s}"),
            }]));
            out.push(Message::user_text(format!("go on after {s}")));
        } else if s % 7 == 6 {
            out.push(Message::user_text(format!("also check case {s}")));
        }
    }
    out.push(Message::assistant(vec![Block::Text {
        text: "done".into(),
    }]));
    out
}

fn run(policy: &str, name: &str, messages: &[Message]) -> PolicyRun {
    replay_with(list::make(policy).unwrap().as_mut(), name, messages)
}

/// Replays `messages` through a policy built with its own switches.
fn replay_with(policy: &mut dyn Policy, name: &str, messages: &[Message]) -> PolicyRun {
    replay_timed(policy, name, messages, None)
}

/// Replays `messages` with recorded times (`times_ms`, one per message).
fn replay_timed(
    policy: &mut dyn Policy,
    name: &str,
    messages: &[Message],
    times_ms: Option<&[Option<u64>]>,
) -> PolicyRun {
    let session = Session {
        name,
        messages,
        times_ms,
    };
    replay(policy, session, &mut Env::default()).unwrap()
}

fn rule(v: &Violation) -> String {
    format!("{:?} {:?} {}", v.provider, v.kind, v.id)
}

/// Every (provider, rule, id) a run's requests break.
fn broken_rules(run: &PolicyRun) -> BTreeSet<String> {
    run.calls
        .iter()
        .flat_map(|c| &c.violations)
        .map(rule)
        .collect()
}

/// The Responses rules the `none` baseline's requests (each the history
/// before its call) break: the engine checks them only for the policies
/// that send `/responses` requests, so the baseline is computed here.
fn responses_baseline(base: &PolicyRun, messages: &[Message]) -> BTreeSet<String> {
    base.calls
        .iter()
        .flat_map(|c| responses::check(&messages[..c.at]))
        .map(|v| rule(&v))
        .collect()
}

/// The rules `run` breaks that the `none` baseline does not.
fn new_breaks(run: &PolicyRun, baseline: &BTreeSet<String>) -> Vec<String> {
    broken_rules(run).difference(baseline).cloned().collect()
}

/// The synthetic session, then every real transcript's main thread when the
/// directory is there.
fn synthetic_and_real() -> Vec<(String, Vec<Message>)> {
    let mut sessions = vec![("synthetic".to_string(), synthetic(260))];
    if let Some(dir) = transcripts() {
        for f in transcript_files(&dir) {
            let session = import_file(&f, &ImportOptions::default()).unwrap();
            sessions.push((f.display().to_string(), session.main));
        }
    }
    sessions
}

/// Every production design of the registry: not a hand-kept list, so a new
/// policy cannot be left out of the validity tests.
fn zoo() -> Vec<&'static str> {
    let course = ctxlab::policy::course::CoursePolicy::names();
    list::names()
        .into_iter()
        .filter(|n| *n != "none" && !course.contains(n))
        .collect()
}

/// Replay `messages` through every policy of the zoo: each makes a request
/// at every model call, no request breaks a provider rule that the
/// uncompacted history (the `none` baseline) does not already break
/// (recorded sessions can reuse a call id; a policy is not to blame for
/// that), and no pointer the model sees dangles.
pub(crate) fn all_valid(name: &str, messages: &[Message]) {
    let base = run("none", name, messages);
    let baseline = broken_rules(&base);
    let mut with_responses = None;
    for policy in zoo() {
        let sends_responses = list::make(policy).unwrap().sends_responses();
        let baseline = if sends_responses {
            with_responses.get_or_insert_with(|| {
                let mut b = baseline.clone();
                b.extend(responses_baseline(&base, messages));
                b
            })
        } else {
            &baseline
        };
        // Inspect's strategies take their threshold as a share of the
        // model's window, which upstream reads from its model database
        // (200,000 for the Claude models of these sessions); the port's
        // default is upstream's 128,000 for a model it knows nothing of,
        // under which a 185k-token Pi session ends in upstream's own
        // "compaction insufficient".
        let r = if policy.starts_with("inspect-") {
            run(&format!("{policy}:context_window=200000"), name, messages)
        } else {
            run(policy, name, messages)
        };
        assert_eq!(r.ended_by_error, None, "{policy} on {name}");
        assert_eq!(r.calls.len(), base.calls.len(), "{policy} on {name}: calls");
        let new = new_breaks(&r, baseline);
        assert!(new.is_empty(), "{policy} on {name}: {new:?}");
        let dangling = &r.findings.dangling_pointers;
        assert_eq!(dangling.count, 0, "{policy} on {name}: {dangling:?}");
    }
}

#[test]
fn the_zoo_is_every_registered_design() {
    let zoo = zoo();
    assert!(zoo.len() >= 23, "{zoo:?}");
    for p in POLICIES {
        assert!(zoo.contains(p), "{p} is not registered");
    }
    assert!(zoo.contains(&"claude-code") && !zoo.contains(&"course-main"));
}

#[test]
fn every_request_is_valid_on_a_synthetic_session() {
    // 260 steps: past the hybrid's 53 turns and OpenHands' 100 events, several times.
    let messages = synthetic(260);
    assert!(broken_rules(&run("none", "synthetic", &messages)).is_empty());
    all_valid("synthetic", &messages);
}

#[test]
fn the_policies_condense_the_synthetic_session() {
    let messages = synthetic(260);
    // The conversation window acts only past a 200 000-token request,
    // LangChain's clearing past 100 000 tokens, goose past 80% of 128 000
    // and Roo Code past 171 808 tokens, far above this session; their own
    // tests force them.
    let quiet = [
        "openhands-conversation-window",
        "langchain-clear-tool-uses",
        "goose-auto-compact",
        "roo-code-auto-condense",
    ];
    for policy in POLICIES.iter().filter(|p| !quiet.contains(*p)) {
        let run = run(policy, "synthetic", &messages);
        let last = run.calls.last().unwrap();
        let full = ctxlab::pyjson::dumps_len(&messages[..messages.len() - 1]);
        assert!(
            last.chars < full,
            "{policy}: last request {} chars, full history {full}",
            last.chars
        );
        assert!(!run.events.is_empty(), "{policy} recorded no event");
    }
}

#[test]
fn every_request_is_valid_on_every_real_transcript() {
    let Some(dir) = transcripts() else { return };
    for f in transcript_files(&dir) {
        let session = import_file(&f, &ImportOptions::default()).unwrap();
        all_valid(&f.display().to_string(), &session.main);
    }
}

/// Roo Code with a window small enough to condense, refuse and truncate on
/// the synthetic session (and every real transcript when there): every
/// request stays valid.
#[test]
fn roo_code_with_a_small_window_stays_valid() {
    use ctxlab::zoo::roo_code::{AutoCondense, RooCode};
    // 0 % turns condensing off: the sliding window alone.
    let small = |percent: f64| {
        RooCode::new(AutoCondense {
            context_window: 6_000,
            max_tokens: 600,
            auto_condense_context: percent > 0.0,
            auto_condense_context_percent: percent,
            ..AutoCondense::default()
        })
    };
    for (name, messages) in &synthetic_and_real() {
        let baseline = broken_rules(&run("none", name, messages));
        for percent in [100.0, 40.0, 0.0] {
            let r = replay_with(&mut small(percent), name, messages);
            let new = new_breaks(&r, &baseline);
            assert!(new.is_empty(), "roo-code at {percent}% on {name}: {new:?}");
            assert!(
                !r.events.is_empty(),
                "roo-code at {percent}% on {name}: no event"
            );
        }
    }
}

/// OpenAI Realtime truncation with a 3 000-token limit on the synthetic
/// session (and every real transcript when there): both modes cut, every
/// request stays valid, and retention cuts fewer times than auto.
#[test]
fn openai_realtime_with_a_small_limit_stays_valid() {
    use ctxlab::zoo::openai_realtime::{Mode, Realtime, Truncation};
    let small = |truncation: Mode| {
        Realtime::new(Truncation {
            truncation,
            model_input_limit: 3_000,
            ..Truncation::default()
        })
        .unwrap()
    };
    for (name, messages) in &synthetic_and_real() {
        let baseline = broken_rules(&run("none", name, messages));
        let mut cuts = Vec::new();
        for mode in [Mode::Auto, Mode::RetentionRatio] {
            let mut p = small(mode);
            let r = replay_with(&mut p, name, messages);
            let new = new_breaks(&r, &baseline);
            assert!(new.is_empty(), "realtime {mode:?} on {name}: {new:?}");
            cuts.push(p.truncations);
        }
        assert!(
            cuts[1] <= cuts[0],
            "{name}: retention {} vs auto {}",
            cuts[1],
            cuts[0]
        );
    }
}

/// OpenAI's server-side compaction with a 3 000-token threshold on the
/// synthetic session (and every real transcript when there): it compacts
/// the synthetic session more than once, and no request breaks a rule (the Responses rules included) that `none`'s do
/// not.
#[test]
fn openai_server_compaction_with_a_low_threshold_stays_valid() {
    let spec = "openai-server-compaction:compact_threshold=3000";
    for (name, messages) in &synthetic_and_real() {
        let base = run("none", name, messages);
        let mut baseline = broken_rules(&base);
        baseline.extend(responses_baseline(&base, messages));
        let r = run(spec, name, messages);
        assert_eq!(r.ended_by_error, None, "{spec} on {name}");
        assert_eq!(r.calls.len(), base.calls.len(), "{spec} on {name}: calls");
        let new = new_breaks(&r, &baseline);
        assert!(new.is_empty(), "{spec} on {name}: {new:?}");
        if name == "synthetic" {
            let compactions = r.event_count("summarised");
            assert!(compactions >= 2, "{compactions} compactions");
        }
    }
}

/// Claude Code's time-based and API microcompact, Gemini CLI's masking,
/// Hermes' lean compaction, Jev-style drop-tools and Codex's truncation with
/// thresholds low enough to act, on a session whose messages are 61 minutes
/// apart (every gap a cold cache; the importers keep no times, so the lab
/// gives them): each acts on the synthetic session, and on it and every real
/// transcript no request breaks a rule `none`'s does not and no pointer
/// dangles.
#[test]
fn the_microcompact_and_masking_ports_act_and_stay_valid() {
    let acting = [
        // The synthetic session's tool is `bash`, which Claude Code's list spells `Bash`.
        r#"claude-code-time-mc:keepRecent=2:COMPACTABLE_TOOLS=["bash","Bash","Read"]"#,
        "claude-code-api-mc:API_MAX_INPUT_TOKENS=3000:API_TARGET_INPUT_TOKENS=2500",
        "gemini-cli-mask:DEFAULT_TOOL_PROTECTION_THRESHOLD=1000:DEFAULT_MIN_PRUNABLE_TOKENS_THRESHOLD=500",
        // A 20k window (threshold raised to 75 %) and a 2k tail.
        "hermes-lean:context_length=20000:LEAN_TAIL_FLOOR_TOKENS=2000:LEAN_TAIL_CAP_TOKENS=2000",
        "jev-drop-tools:context_length=20000",
        // Results over 384 bytes (1.2 × 80 tokens) are cut; with its
        // defaults it cuts outputs over 48,000 bytes.
        "codex-truncate:limit=80",
    ];
    for (name, messages) in &synthetic_and_real() {
        let times: Vec<Option<u64>> = (0..messages.len() as u64)
            .map(|i| Some(i * 61 * 60_000))
            .collect();
        let base = run("none", name, messages);
        let baseline = broken_rules(&base);
        for spec in acting {
            let mut p = list::make(spec).unwrap();
            let r = replay_timed(p.as_mut(), name, messages, Some(&times));
            assert_eq!(r.ended_by_error, None, "{spec} on {name}");
            assert_eq!(r.calls.len(), base.calls.len(), "{spec} on {name}: calls");
            let new = new_breaks(&r, &baseline);
            assert!(new.is_empty(), "{spec} on {name}: {new:?}");
            let dangling = &r.findings.dangling_pointers;
            assert_eq!(dangling.count, 0, "{spec} on {name}: {dangling:?}");
            if name == "synthetic" {
                assert!(!r.events.is_empty(), "{spec} on {name}: no event");
            }
        }
    }
}

/// Claude Code's session memory, Amp's handoff and Cline's focus chain with
/// windows small enough to act on the synthetic session: each acts there,
/// and on it and every real transcript no request breaks a rule `none`'s
/// does not and no pointer dangles (session memory points at its
/// transcript and notes files).
#[test]
fn the_session_memory_handoff_and_focus_chain_ports_act_and_stay_valid() {
    let acting = [
        // An 8k window with no reserve; extraction from 2k tokens, every 1k.
        "claude-code-session-memory:context_window=8000:output_reserve=0:autocompact_buffer=0:minimumMessageTokensToInit=2000:minimumTokensBetweenUpdate=1000:minTokens=1000:maxTokens=3000",
        // Hands off at 0.8 of 10,000 input tokens.
        "amp-handoff:contextWindow=10000:maxOutputTokens=0",
        // 10,000 is neither 64k, 128k nor 200k: 80 % of it, 8,000.
        "cline-focus-chain:contextWindow=10000",
    ];
    for (name, messages) in &synthetic_and_real() {
        let base = run("none", name, messages);
        let baseline = broken_rules(&base);
        for spec in acting {
            let mut p = list::make(spec).unwrap();
            let r = replay_with(p.as_mut(), name, messages);
            assert_eq!(r.ended_by_error, None, "{spec} on {name}");
            assert_eq!(r.calls.len(), base.calls.len(), "{spec} on {name}: calls");
            let new = new_breaks(&r, &baseline);
            assert!(new.is_empty(), "{spec} on {name}: {new:?}");
            let dangling = &r.findings.dangling_pointers;
            assert_eq!(dangling.count, 0, "{spec} on {name}: {dangling:?}");
            if name == "synthetic" {
                assert!(
                    r.event_count("summarised") > 0,
                    "{spec} on {name}: no summary"
                );
            }
        }
    }
}
