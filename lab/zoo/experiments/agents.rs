//! Policy rows of the experiment registry: faults from public bug reports,
//! planted as switches on production policies, each caught by a named
//! counter of the policy checker or the provider validity oracle.
//!
//! Every row replays one small synthetic session through the policy twice:
//! the baseline with upstream's defaults (clean), the broken side with the
//! fault switch on. [`RunOptions`] are accepted for the shared signature but
//! unused (nothing here depends on a path length or a seed).

use crate::counters::Counters;
use crate::error::LabResult;
use crate::message::{Block, Message};
use crate::policy::engine::{replay, Env, PolicyRun, Session};
use crate::policy::model::{Extractive, ModelRole, Scripted};
use crate::policy::validity::Provider;
use crate::policy::Policy;
use crate::registry::{every, Cell, Experiment, ExperimentVerdict, Kind, Mechanism, RunOptions};
use crate::{anthropic_compact, codex_cli, opencode};

/// Counters of one policy run: the checker's verdicts and the oracle's
/// violations (Anthropic rules), by name.
pub fn counters(run: &PolicyRun) -> Counters {
    let mut c = Counters::default();
    let f = &run.findings;
    c.count(
        "lost_forever",
        f.lost_forever.count,
        f.lost_forever.samples.clone(),
    );
    c.count(
        "dangling_pointers",
        f.dangling_pointers.count,
        f.dangling_pointers.samples.clone(),
    );
    c.count("invalid_requests", run.invalid_requests, Vec::new());
    for kind in [
        "orphan_tool_result",
        "duplicate_tool_result",
        "unanswered_tool_use",
    ] {
        let ids: Vec<String> = run
            .calls
            .iter()
            .flat_map(|call| &call.violations)
            .filter(|v| v.provider == Provider::Anthropic && v.kind.name() == kind)
            .map(|v| v.id.clone())
            .collect();
        c.count(kind, ids.len() as u64, ids.into_iter().take(3));
    }
    c
}

fn call(id: &str) -> Message {
    Message::assistant(vec![Block::ToolUse {
        id: id.into(),
        name: "bash".into(),
        input: serde_json::json!({"command": format!("run {id}")}).into(),
    }])
}

fn result(id: &str, text: &str) -> Message {
    Message::tool_results(vec![(id.into(), text.into())])
}

fn say(text: &str) -> Message {
    Message::assistant(vec![Block::Text { text: text.into() }])
}

fn side(
    policy: &mut dyn Policy,
    messages: &[Message],
    model: Box<dyn ModelRole>,
) -> LabResult<Counters> {
    let mut env = Env {
        model,
        ..Env::default()
    };
    let run = replay(
        policy,
        Session {
            name: "synthetic",
            messages,
            times_ms: None,
        },
        &mut env,
    )?;
    Ok(counters(&run))
}

fn verdict(id: &str, baseline: Counters, broken: Counters) -> LabResult<ExperimentVerdict> {
    let cell = Cell {
        label: "synthetic".into(),
        baseline,
        broken,
        ..Default::default()
    };
    ExperimentVerdict::of_row(EXPERIMENTS, id, vec![cell])
}

/// What a truncation upstream of the harness left: a result whose call is gone.
fn orphan_session() -> Vec<Message> {
    vec![
        Message::user_text("fix the build"),
        call("a1"),
        result("a1", "ok"),
        result("cut", "output of a call the truncation dropped"),
        say("done"),
    ]
}

fn run_orphan(_: &RunOptions) -> LabResult<ExperimentVerdict> {
    let s = orphan_session();
    let mut broken = codex_cli::CodexCli::default();
    broken.switches.fault_keep_orphan_outputs = true;
    verdict(
        "P-codex-orphan",
        side(
            &mut codex_cli::CodexCli::default(),
            &s,
            Box::new(Extractive::default()),
        )?,
        side(&mut broken, &s, Box::new(Extractive::default()))?,
    )
}

fn resume_session() -> Vec<Message> {
    vec![
        Message::user_text("fix the build"),
        call("c1"),
        result("c1", "first"),
        call("c2"),
        result("c2", "second"),
        say("done"),
    ]
}

fn run_resume(_: &RunOptions) -> LabResult<ExperimentVerdict> {
    let s = resume_session();
    let mut intact = codex_cli::CodexCli::default();
    intact.switches.resume_at_turn = Some(1);
    let mut broken = intact.clone();
    broken.switches.fault_resume_duplicates_outputs = true;
    verdict(
        "P-codex-resume-dup",
        side(&mut intact, &s, Box::new(Extractive::default()))?,
        side(&mut broken, &s, Box::new(Extractive::default()))?,
    )
}

fn retention_session() -> Vec<Message> {
    vec![
        Message::user_text("run the suite"),
        call("t1"),
        result("t1", &"test ok\n".repeat(3_000)),
        say("read it"),
        Message::user_text("more"),
        say("still here"),
        Message::user_text("and more"),
        say("done"),
    ]
}

fn run_retention(_: &RunOptions) -> LabResult<ExperimentVerdict> {
    let s = retention_session();
    let mut broken = opencode::Opencode::default();
    // Three calls of 60 s: the file saved at the second call is gone at the fourth.
    broken.switches.fault_retention_ms = Some(90_000);
    verdict(
        "P-opencode-retention",
        side(
            &mut opencode::Opencode::default(),
            &s,
            Box::new(Extractive::default()),
        )?,
        side(&mut broken, &s, Box::new(Extractive::default()))?,
    )
}

fn error_summary_session() -> Vec<Message> {
    vec![
        Message::user_text("build the site; never touch prod.env"),
        call("w1"),
        result("w1", &"x".repeat(400)),
        say("done"),
    ]
}

fn failing_model() -> Box<dyn ModelRole> {
    Box::new(Scripted {
        replies: [Err("prompt is too long".to_string())].into(),
    })
}

fn run_error_summary(_: &RunOptions) -> LabResult<ExperimentVerdict> {
    let s = error_summary_session();
    let small = |fault: bool| {
        let mut p = anthropic_compact::Compact::default();
        p.switches.trigger = anthropic_compact::Trigger::InputTokens(50);
        p.switches.fault_error_as_summary = fault;
        p
    };
    verdict(
        "P-compact-error-summary",
        side(&mut small(false), &s, failing_model())?,
        side(&mut small(true), &s, failing_model())?,
    )
}

/// The policy rows, in `lab list` order.
pub static EXPERIMENTS: &[Experiment] = &[
    Experiment {
        id: "P-codex-orphan",
        mechanism: Mechanism::Compaction,
        kind: Kind::Break,
        title: "codex-cli: a result whose call a truncation dropped reaches the request",
        change: "codex_cli::Switches.fault_keep_orphan_outputs = true",
        caught_by: &["orphan_tool_result", "invalid_requests"],
        seed: "https://github.com/cline/cline/pull/7225; https://github.com/anthropics/claude-code/issues/13964",
        run: run_orphan,
        expect: &[every("orphan_tool_result", 0, 1), every("invalid_requests", 0, 1)],
    },
    Experiment {
        id: "P-codex-resume-dup",
        mechanism: Mechanism::Compaction,
        kind: Kind::Break,
        title: "codex-cli: a resume replays every tool output twice (one tool_call_id answered twice)",
        change: "codex_cli::Switches.fault_resume_duplicates_outputs = true (resume_at_turn = 1)",
        caught_by: &["duplicate_tool_result", "invalid_requests"],
        seed: "https://github.com/google-gemini/gemini-cli/pull/29366",
        run: run_resume,
        expect: &[every("duplicate_tool_result", 0, 2), every("invalid_requests", 0, 2)],
    },
    Experiment {
        id: "P-opencode-retention",
        mechanism: Mechanism::Compaction,
        kind: Kind::Break,
        title: "opencode: a saved tool output is deleted while the context still points at it",
        change: "opencode::Switches.fault_retention_ms = 90000",
        caught_by: &["dangling_pointers"],
        seed: "https://github.com/Lingtai-AI/lingtai-kernel/issues/192",
        run: run_retention,
        expect: &[every("dangling_pointers", 0, 1), every("invalid_requests", 0, 0)],
    },
    Experiment {
        id: "P-compact-error-summary",
        mechanism: Mechanism::Compaction,
        kind: Kind::Break,
        title: "anthropic-compact: a failed summary call's error text is committed as the summary",
        change: "anthropic_compact::Switches.fault_error_as_summary = true",
        caught_by: &["lost_forever"],
        seed: "https://github.com/openclaw/openclaw/issues/115413",
        run: run_error_summary,
        expect: &[every("lost_forever", 0, 1)],
    },
];
