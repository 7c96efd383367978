//! mini-swe-agent trajectories: text actions become tool calls, observations
//! their results; counts against an independent scan of the JSON; every
//! damage class with its position; and the tool-result policies act on them.

use crate::common;

use std::path::Path;

use crate::common::{LENIENT, STRICT};
use ctxlab::import::{
    import_file, import_str, unpaired_ids, ActionShape, DiagnosticKind, ImportOptions,
    ImportedSession, TranscriptFormat,
};
use ctxlab::message::{Block, Message, Role};
use ctxlab::policy::engine::{replay, Env, PolicyRun, Session};
use ctxlab::zoo::list;
use serde_json::{json, Value};

fn reply(thought: &str, command: &str) -> Value {
    json!({"role": "assistant", "content": format!("THOUGHT: {thought}\n\n```bash\n{command}\n```"),
           "extra": {"response": {"id": "r"}}})
}

fn observation(code: u8, output: &str) -> Value {
    json!({"role": "user", "content": format!("<returncode>{code}</returncode>\n<output>\n{output}</output>")})
}

/// A trajectory as mini-swe-agent 1.x saves it: `steps` actions with
/// observations (`step i` prints i lines), then one reply with two blocks
/// (format error), a timeout, and the submission.
fn trajectory(steps: usize) -> Value {
    let mut messages = vec![
        json!({"role": "system", "content": "You are a helpful assistant."}),
        json!({"role": "user", "content": [{"type": "text", "text": "<pr_description>fix it</pr_description>"}]}),
    ];
    for i in 0..steps {
        messages.push(reply(&format!("step {i}"), &format!("seq {i}")));
        messages.push(observation(0, &format!("{i}\n").repeat(i + 1)));
    }
    messages.push(
        json!({"role": "assistant", "content": "two:\n```bash\nls\n```\nand\n```bash\npwd\n```"}),
    );
    messages.push(json!({"role": "user", "content": "Please always provide EXACTLY ONE action in triple backticks, found 2 actions."}));
    messages.push(reply("slow", "sleep 1000"));
    messages.push(json!({"role": "user", "content": "The last command <command>sleep 1000</command> timed out and has been killed.\nThe output of the command was:\n <output>\n\n</output>"}));
    messages.push(reply(
        "done",
        "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff",
    ));
    messages.push(json!({"role": "user", "content": "diff --git a/x b/x"}));
    json!({
        "info": {"exit_status": "Submitted", "submission": "diff --git a/x b/x",
                 "model_stats": {"instance_cost": 0.1, "api_calls": steps + 3}, "mini_version": "1.15.0"},
        "messages": messages,
        "trajectory_format": "mini-swe-agent-1",
    })
}

/// Actions and observations counted without the importer: a reply holds an
/// action when "```bash\n" occurs in it exactly once and a closing "\n```"
/// follows; the user message right after such a reply is its observation.
fn count_independently(doc: &Value) -> (usize, usize, usize) {
    let messages = doc["messages"].as_array().unwrap();
    let mut actions = 0;
    let mut observations = 0;
    for (i, m) in messages.iter().enumerate() {
        let text = m["content"].as_str().unwrap_or_default();
        if m["role"] == "assistant"
            && text.matches("```bash\n").count() == 1
            && text.split("```bash\n").nth(1).unwrap().contains("\n```")
        {
            actions += 1;
            if messages.get(i + 1).is_some_and(|n| n["role"] == "user") {
                observations += 1;
            }
        }
    }
    let non_system = messages.iter().filter(|m| m["role"] != "system").count();
    (non_system, actions, observations)
}

fn import(text: &str, options: &ImportOptions) -> ImportedSession {
    import_str(
        text,
        Path::new("t.traj.json"),
        TranscriptFormat::MiniSweAgent,
        options,
    )
    .unwrap()
}

fn tool_uses(s: &ImportedSession) -> Vec<(String, Value)> {
    s.main
        .iter()
        .flat_map(|m| m.blocks())
        .filter_map(|b| match b {
            Block::ToolUse { id, input, .. } => Some((id.clone(), input.value().clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn actions_become_calls_and_observations_their_results() {
    let doc = trajectory(4);
    let text = serde_json::to_string_pretty(&doc).unwrap();
    let s = import(&text, &STRICT);
    let (messages, actions, observations) = count_independently(&doc);
    assert_eq!((messages, actions, observations), (15, 6, 6));
    let sum = s.summary();
    assert_eq!(sum.main_messages, messages);
    assert_eq!(sum.main_tool_uses, actions);
    assert_eq!(sum.main_tool_results, observations);
    assert_eq!(sum.stats.tool_uses, actions);
    assert_eq!(sum.system_prompts, 1);
    assert!(s.diagnostics.is_empty(), "{:?}", s.diagnostics);
    assert!(unpaired_ids(&s.main).is_empty());
    assert_eq!(s.action_shape, ActionShape::TextActions);
    // Ids from the message's index in `messages` (system = 0, task = 1).
    let calls = tool_uses(&s);
    assert_eq!(
        calls[0],
        ("text-action-2".into(), json!({"command": "seq 0"}))
    );
    assert_eq!(
        calls[5].1,
        json!({"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff"})
    );
    // The reply keeps its whole text before the call; the two-block reply
    // and its format error stay text.
    let first = &s.main[1];
    assert!(
        matches!(&first.blocks()[0], Block::Text { text } if text.contains("```bash\nseq 0\n```"))
    );
    let error = s
        .main
        .iter()
        .find(|m| m.text().starts_with("Please always"))
        .unwrap();
    assert_eq!(error.role, Role::User);
    assert!(error.blocks().is_empty());
    // The timeout answers its action.
    let timeout = s
        .main
        .iter()
        .flat_map(|m| m.blocks())
        .find_map(|b| match b {
            Block::ToolResult {
                tool_use_id,
                content,
            } if content.contains("timed out") => Some(tool_use_id.as_str()),
            _ => None,
        });
    assert_eq!(timeout, Some(calls[4].0.as_str()));
}

#[test]
fn the_format_is_detected_from_content_and_name() {
    let dir = tempfile::tempdir().unwrap();
    let text = serde_json::to_string_pretty(&trajectory(2)).unwrap();
    let p = common::write(dir.path(), "x.json", &text);
    assert_eq!(
        import_file(&p, &LENIENT).unwrap().format,
        TranscriptFormat::MiniSweAgent
    );
    // Only messages, no info: the `.traj.json` name decides.
    let bare = serde_json::to_string(&json!({"messages": trajectory(1)["messages"]})).unwrap();
    let p = common::write(dir.path(), "y.traj.json", &bare);
    let s = import_file(&p, &LENIENT).unwrap();
    assert_eq!(
        s.format,
        TranscriptFormat::Anthropic,
        "content decides first"
    );
    let forced = ImportOptions {
        strict: false,
        format: Some(TranscriptFormat::from_name("mini_swe_agent").unwrap()),
    };
    assert_eq!(
        import_file(&p, &forced).unwrap().summary().main_tool_uses,
        3
    );
}

#[test]
fn a_cut_file_keeps_what_precedes_the_cut() {
    let text = serde_json::to_string_pretty(&trajectory(3)).unwrap();
    let cut = &text[..text.find("seq 2").unwrap()];
    let s = import(cut, &LENIENT);
    let d = s.diagnostics_of(DiagnosticKind::Truncated);
    assert_eq!(d.len(), 1);
    assert!(d[0].line > 1 && d[0].column > 0, "{d:?}");
    // task, 2 steps; the cut reply is lost.
    assert_eq!(s.summary().main_tool_uses, 2);
    assert!(unpaired_ids(&s.main).is_empty());
    let e = import_str(
        cut,
        Path::new("t.traj.json"),
        TranscriptFormat::MiniSweAgent,
        &STRICT,
    )
    .unwrap_err();
    assert_eq!(e.exit_code(), 3);
    assert!(e.to_string().contains("t.traj.json:"), "{e}");
}

#[test]
fn content_of_the_wrong_type_is_reported_with_its_position() {
    let mut doc = trajectory(2);
    doc["messages"][4]["content"] = json!(42);
    let text = serde_json::to_string_pretty(&doc).unwrap();
    let s = import(&text, &LENIENT);
    let d = s.diagnostics_of(DiagnosticKind::InvalidRecord);
    assert_eq!(d.len(), 1, "{:?}", s.diagnostics);
    assert!(d[0].message.contains("a number"), "{}", d[0].message);
    let line = text.lines().position(|l| l.contains("42")).unwrap() + 1;
    assert!(d[0].line > 0 && d[0].line < line, "{d:?} vs {line}");
    let e = import_str(
        &text,
        Path::new("t.traj.json"),
        TranscriptFormat::MiniSweAgent,
        &STRICT,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("invalid_record") && e.contains("fix"), "{e}");
}

#[test]
fn an_observation_with_no_action_before_it_is_reported() {
    let mut doc = trajectory(3);
    // The second reply loses its block: its observation answers nothing.
    doc["messages"][4]["content"] = json!("THOUGHT: no block");
    let text = serde_json::to_string_pretty(&doc).unwrap();
    let s = import(&text, &LENIENT);
    let d = s.diagnostics_of(DiagnosticKind::ObservationWithoutAction);
    assert_eq!(d.len(), 1, "{:?}", s.diagnostics);
    assert!(d[0].line > 0 && d[0].column > 0);
    assert_eq!(s.summary().main_tool_results, 4);
    assert!(unpaired_ids(&s.main).is_empty());
    let e = import_str(
        &text,
        Path::new("t.traj.json"),
        TranscriptFormat::MiniSweAgent,
        &STRICT,
    )
    .unwrap_err();
    assert_eq!(e.exit_code(), 3);
    assert!(e.to_string().contains("observation_without_action"), "{e}");
}

#[test]
fn a_last_action_with_no_observation_is_answered_and_reported() {
    let mut doc = trajectory(2);
    doc["messages"].as_array_mut().unwrap().pop();
    let s = import(&serde_json::to_string(&doc).unwrap(), &LENIENT);
    assert_eq!(s.diagnostics_of(DiagnosticKind::DanglingToolUse).len(), 1);
    assert!(unpaired_ids(&s.main).is_empty());
}

fn run(policy: &str, messages: &[Message]) -> PolicyRun {
    let session = Session {
        name: "mini",
        messages,
        times_ms: None,
    };
    replay(
        list::make(policy).unwrap().as_mut(),
        session,
        &mut Env::default(),
    )
    .unwrap()
}

/// Before this importer a mini-swe-agent session had no tool result, so
/// every tool-result policy sent what `none` sends.
#[test]
fn tool_result_policies_act_on_a_text_action_session() {
    let s = import(&serde_json::to_string(&trajectory(30)).unwrap(), &LENIENT);
    let none = run("none", &s.main);
    let mask = run("swe-agent-mask-10", &s.main);
    let last = |r: &PolicyRun| r.calls.last().unwrap().chars;
    assert!(
        last(&mask) < last(&none),
        "{} vs {}",
        last(&mask),
        last(&none)
    );
    assert!(!mask.events.is_empty());
    for policy in ["swe-agent-mask-5", "swe-agent-hybrid"] {
        let r = run(policy, &s.main);
        assert!(last(&r) < last(&none), "{policy}");
    }
}

/// A SWE-agent 0.x `thought_action` trajectory: replies record `thought`
/// and `action`, the action is the last fenced block of the text, and the
/// next user message is its observation.
fn swe_agent_text_traj(steps: usize) -> Value {
    let mut history = vec![
        json!({"role": "system", "content": "SETTING: ...", "agent": "primary"}),
        json!({"role": "user", "content": "We're currently solving the following issue", "agent": "primary"}),
    ];
    for i in 0..steps {
        history.push(json!({"role": "assistant", "agent": "primary",
            "content": format!("Let us look.\n```\nopen f{i}.py\n```\n"),
            "thought": "Let us look.", "action": format!("open f{i}.py\n")}));
        history.push(json!({"role": "user", "agent": "primary",
            "content": format!("[File: f{i}.py (3 lines total)]\n1:a\n2:b\n3:c\n(Open file: f{i}.py)\nbash-$")}));
    }
    history.push(
        json!({"role": "assistant", "agent": "primary", "content": "Done, no block.",
        "thought": "Done, no block.", "action": ""}),
    );
    json!({"environment": "swe_main", "trajectory": [], "history": history, "info": {}})
}

#[test]
fn swe_agent_text_trajectories_read_their_actions() {
    let doc = swe_agent_text_traj(12);
    let history = doc["history"].as_array().unwrap();
    // Independent count: replies holding a "```" line pair, each followed by a user message.
    let actions = history
        .iter()
        .filter(|m| m["role"] == "assistant")
        .filter(|m| m["content"].as_str().unwrap().matches("\n```").count() >= 2)
        .count();
    assert_eq!(actions, 12);
    let text = serde_json::to_string_pretty(&doc).unwrap();
    let s = import_str(
        &text,
        Path::new("x.traj"),
        TranscriptFormat::OpenAi,
        &STRICT,
    )
    .unwrap();
    let sum = s.summary();
    assert_eq!(sum.main_tool_uses, actions);
    assert_eq!(sum.main_tool_results, actions);
    assert_eq!(sum.main_messages, history.len() - 1);
    assert_eq!(s.action_shape, ActionShape::TextActions);
    assert!(unpaired_ids(&s.main).is_empty());
    assert_eq!(
        tool_uses(&s)[0],
        ("text-action-2".into(), json!({"command": "open f0.py\n"}))
    );
    let none = run("none", &s.main);
    let mask = run("swe-agent-mask-5", &s.main);
    assert!(mask.calls.last().unwrap().chars < none.calls.last().unwrap().chars);
    // A plain OpenAI chat reply with a code block is not an action.
    let chat = json!([{"role": "user", "content": "how?"},
                      {"role": "assistant", "content": "Like this:\n```\nls\n```\n"},
                      {"role": "user", "content": "thanks"}]);
    let s = import_str(
        &chat.to_string(),
        Path::new("c.json"),
        TranscriptFormat::OpenAi,
        &STRICT,
    )
    .unwrap();
    assert_eq!(s.summary().main_tool_uses, 0);
    assert_eq!(s.action_shape, ActionShape::ToolCalls);
}
