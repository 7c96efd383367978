//! The golden test against upstream's own code (fixture made by
//! `tests/golden/swe_agent/generate.py`), and the bug-report faults.

use std::path::Path;

use serde_json::{json, Value};

use super::*;
use crate::message::{Block, Content, Role};
use crate::policy::model::{ModelError, ModelRole, Scripted, SummaryRequest};
use crate::policy::PolicyEvent;
use crate::storage::MemFs;
use crate::tokens::Approx;

/// Replies `S1`, `S2`, ... and records the context each call was given.
#[derive(Default)]
struct Recorder {
    contexts: Vec<String>,
}

impl ModelRole for Recorder {
    fn name(&self) -> String {
        "recorder".into()
    }

    fn summarise(&mut self, req: &SummaryRequest<'_>) -> Result<String, ModelError> {
        assert_eq!(req.prompt, summary::SUMMARY_SYSTEM_TEMPLATE);
        self.contexts.push(req.previous.unwrap_or("").to_string());
        Ok(format!("S{}", self.contexts.len()))
    }
}

/// The scripted history of `generate.py`: task, 60 steps, a user
/// interjection after step 4, a text-only reply after step 30.
fn history() -> Vec<Message> {
    let mut h = vec![Message::user_text(
        "Fix the bug in calc.py\nIt divides by zero.",
    )];
    for i in 0..60 {
        let id = format!("call_{i}");
        h.push(Message::assistant(vec![
            Block::Text {
                text: format!("step {i}"),
            },
            Block::ToolUse {
                id: id.clone(),
                name: "bash".into(),
                input: json!({ "command": format!("cmd {i}") }).into(),
            },
        ]));
        h.push(Message::tool_results(vec![(
            id,
            format!("out {i}\n").repeat(i % 4 + 1),
        )]));
        if i == 4 {
            h.push(Message::user_text("Also keep the tests green."));
        }
        if i == 30 {
            h.push(Message::assistant(vec![Block::Text {
                text: "Halfway there.".into(),
            }]));
        }
    }
    h
}

/// One fixture request back in the lab's shape.
fn decode(items: &[Value], h: &[Message]) -> Vec<Message> {
    let mut out = Vec::new();
    for item in items {
        if let Some(span) = item.get("span") {
            let (a, b) = (span[0].as_u64().unwrap(), span[1].as_u64().unwrap());
            out.extend_from_slice(&h[a as usize..=b as usize]);
        } else if let Some(i) = item.get("ref") {
            let mut m = h[i.as_u64().unwrap() as usize].clone();
            let text = item["result"].as_str().unwrap().to_string();
            match &mut m.blocks_mut()[0] {
                Block::ToolResult { content, .. } => *content = text,
                other => panic!("ref to a non-result {other:?}"),
            }
            out.push(m);
        } else {
            out.push(serde_json::from_value(item.clone()).unwrap());
        }
    }
    out
}

/// Run `policy` before every model call of `h` (after the task and after each
/// tool result), as the agent does; the requests and the events.
fn replay(
    policy: &mut dyn Policy,
    h: &[Message],
    model: &mut dyn ModelRole,
) -> Vec<(usize, Prepared)> {
    let storage = MemFs::new();
    let mut out = Vec::new();
    for k in 1..=h.len() {
        if k > 1 && !h[k - 1].is_tool_result() {
            continue;
        }
        let mut ctx = PolicyCtx {
            storage: &storage,
            root: Path::new("/run/swe"),
            tokens: &Approx,
            turn: out.len(),
            envelope: 0,
            anchor: None,
            read_lines: None,
            now_ms: None,
            model: &mut *model,
        };
        let mut hist = h[..k].to_vec();
        let prepared = policy.prepare(&mut hist, &mut ctx).unwrap();
        assert_eq!(hist, h[..k], "a projecting policy leaves the history whole");
        out.push((k, prepared));
    }
    out
}

fn fixture() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/golden/swe_agent/expected.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn appending_3_2() -> SweAgent {
    SweAgent::new(
        "summary-3-2-appending",
        SweAgentConfig {
            summarize_every_n_turns: Some(SummarizeEveryNTurns {
                n: 3,
                keep_last_m_turns: 2,
                ..Default::default()
            }),
            last_n_observations: None,
        },
    )
}

/// Every request of every configuration equals, message for message and
/// byte for byte, what upstream's processors produced on the same history.
#[test]
fn golden_requests_equal_upstream() {
    let fx = fixture();
    let h = history();
    let cases: Vec<(&str, SweAgent)> = vec![
        ("swe-agent-mask-10", SweAgent::mask("swe-agent-mask-10", 10)),
        (
            "polling-3-n-4",
            SweAgent::new(
                "polling-3-n-4",
                SweAgentConfig {
                    last_n_observations: Some(LastNObservations {
                        n: 4,
                        polling: 3,
                        ..Default::default()
                    }),
                    summarize_every_n_turns: None,
                },
            ),
        ),
        (
            "swe-agent-summary-21-10",
            SweAgent::summary("swe-agent-summary-21-10", 21, None),
        ),
        (
            "swe-agent-hybrid",
            SweAgent::summary("swe-agent-hybrid", 43, Some(10)),
        ),
        ("summary-3-2-appending", appending_3_2()),
    ];
    for (name, mut policy) in cases {
        let mut model = Recorder::default();
        let got = replay(&mut policy, &h, &mut model);
        let want = fx[name]["requests"].as_array().unwrap();
        assert_eq!(got.len(), want.len(), "{name}: number of calls");
        for ((k, prepared), w) in got.iter().zip(want) {
            assert_eq!(*k as u64, w["calls"].as_u64().unwrap());
            let expect = decode(w["request"].as_array().unwrap(), &h);
            assert_eq!(
                prepared.request, expect,
                "{name}: request after {k} messages"
            );
        }
        let contexts: Vec<String> = fx[name]
            .get("contexts")
            .map(|c| serde_json::from_value(c.clone()).unwrap())
            .unwrap_or_default();
        assert_eq!(model.contexts, contexts, "{name}: summariser contexts");
    }
}

fn summariser(faults: SummaryFaults) -> SweAgent {
    let mut p = appending_3_2();
    p.config_mut()
        .summarize_every_n_turns
        .as_mut()
        .unwrap()
        .faults = faults;
    p
}

/// Five steps: 3 + 2 turns, exactly enough for one summary of 3 kept 2.
fn five_steps() -> Vec<Message> {
    let mut h = history();
    h.truncate(12); // task, 5 steps, the interjection
    h.pop();
    h
}

fn run_once(policy: &mut SweAgent, h: &[Message], model: &mut dyn ModelRole) -> Prepared {
    replay(policy, h, model).pop().unwrap().1
}

fn result_ids(request: &[Message]) -> Vec<String> {
    request
        .iter()
        .flat_map(|m| m.tool_result_ids())
        .map(String::from)
        .collect()
}

#[test]
fn intact_summary_keeps_the_last_m_turns_paired() {
    let h = five_steps();
    let got = run_once(
        &mut summariser(SummaryFaults::default()),
        &h,
        &mut Recorder::default(),
    );
    assert_eq!(result_ids(&got.request), vec!["call_3", "call_4"]);
    assert_eq!(
        got.request[1].text(),
        "Checkpoint for the last 3 turns:\nS1"
    );
    assert!(
        got.request[2].has_tool_use(),
        "a kept turn starts with its call"
    );
}

#[test]
fn fault_wipe_all_drops_the_kept_turns() {
    let faults = SummaryFaults {
        wipe_all: true,
        ..Default::default()
    };
    let got = run_once(
        &mut summariser(faults),
        &five_steps(),
        &mut Recorder::default(),
    );
    assert_eq!(got.request.len(), 2, "prefix and summary only");
    assert!(result_ids(&got.request).is_empty());
}

#[test]
fn fault_ignore_keep_last_summarises_the_newest_turn() {
    let faults = SummaryFaults {
        ignore_keep_last: true,
        ..Default::default()
    };
    let h = five_steps();
    let broken = replay(&mut summariser(faults), &h, &mut Recorder::default());
    let (k, first) = broken
        .iter()
        .find(|(_, p)| !p.events.is_empty())
        .expect("the fault summarises");
    // After the third result: every turn, the newest included, is summarised.
    assert_eq!(*k, 7);
    assert!(result_ids(&first.request).is_empty(), "{:?}", first.request);
    assert!(matches!(
        first.events[0],
        PolicyEvent::Summarised { replaced: 6, .. }
    ));
    let intact = replay(
        &mut summariser(SummaryFaults::default()),
        &h,
        &mut Recorder::default(),
    );
    let same_call = &intact.iter().find(|(c, _)| c == k).unwrap().1;
    assert_eq!(
        same_call.request,
        h[..*k],
        "intact: 3 < n + m, nothing summarised"
    );
}

#[test]
fn failed_summary_keeps_the_turns_unless_the_fault_drops_them() {
    let failing = || Scripted {
        replies: [Err("HTTP 529 overloaded".to_string())].into(),
    };
    let intact = run_once(
        &mut summariser(SummaryFaults::default()),
        &five_steps(),
        &mut failing(),
    );
    assert_eq!(intact.request, five_steps());
    assert!(matches!(intact.events[0], PolicyEvent::ModelFailed { .. }));
    let faults = SummaryFaults {
        drop_on_error: true,
        ..Default::default()
    };
    let dropped = run_once(&mut summariser(faults), &five_steps(), &mut failing());
    assert_eq!(result_ids(&dropped.request), vec!["call_3", "call_4"]);
    assert!(
        !dropped
            .request
            .iter()
            .any(|m| m.text().contains("Checkpoint")),
        "no summary stands for call_0..call_2"
    );
}

#[test]
fn fault_tool_result_first_orphans_a_result() {
    let faults = SummaryFaults {
        tool_result_first: true,
        ..Default::default()
    };
    let got = run_once(
        &mut summariser(faults),
        &five_steps(),
        &mut Recorder::default(),
    );
    assert_eq!(got.request[1].role, Role::Assistant);
    assert!(
        got.request[2].is_tool_result(),
        "the message after the summary answers a call the request no longer has"
    );
    let calls: Vec<&str> = got.request.iter().flat_map(|m| m.tool_use_ids()).collect();
    assert!(!calls.contains(&"call_3"));
}

#[test]
fn rebuilt_requests_record_the_messages_they_leave_out() {
    let h = history();
    let got = replay(&mut appending_3_2(), &h, &mut Recorder::default());
    let last = &got.last().unwrap().1;
    assert!(last
        .events
        .iter()
        .any(|e| matches!(e, PolicyEvent::Dropped { messages: 2, .. })));
    assert!(!last
        .request
        .iter()
        .any(|m| matches!(&m.content, Content::Text(t) if t.contains("tests green"))));
}

#[test]
fn info_names_the_upstream_and_its_constants() {
    let p = hybrid();
    let info = p.info();
    assert_eq!(info.name, "swe-agent-hybrid");
    assert!(info
        .source
        .upstream
        .ends_with("1b07decf4ca4b5d722d25a57810fe18a2d8b60fb"));
    assert_eq!(info.constants["summarize_every_n_turns"]["n"], 43);
    assert_eq!(info.constants["last_n_observations"]["n"], 10);
    assert!(p.pointer_rules().is_empty());
}

#[test]
fn the_kept_masking_equals_the_whole_processor_at_every_call() {
    let session: Vec<Message> = ctxlab_import::generate::Generator::new(11, 60_000).collect();
    for (n, polling) in [(5, 1), (3, 2)] {
        let mask = LastNObservations {
            n,
            polling,
            ..Default::default()
        };
        let mut policy = SweAgent::new(
            "kept",
            SweAgentConfig {
                summarize_every_n_turns: None,
                last_n_observations: Some(mask.clone()),
            },
        );
        let runs = replay(&mut policy, &session, &mut Scripted::default());
        for (k, got) in &runs {
            let mut want = session[..*k].to_vec();
            let mut events = Vec::new();
            mask.apply(&mut want, &mut events).unwrap();
            assert_eq!(got.request, want, "({n}, {polling}) after {k} messages");
            assert_eq!(got.events, events, "({n}, {polling}) after {k} messages");
        }
        let masked = runs.last().map_or(0, |(_, p)| p.events.len());
        assert!(masked > 30, "({n}, {polling}): {masked} masked");
    }
}
