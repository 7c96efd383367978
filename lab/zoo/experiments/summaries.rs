//! Registry rows for faults of production policies, each from a public bug
//! report, each caught by a counter of the policy-agnostic checker or the
//! provider validity oracle with the intact policy clean.
//!
//! The projecting designs (SWE-agent) keep the history whole, so the checker
//! is run on the **last request** of the replay: what the model saw at the end
//! is what it can still use. `invalid_requests` counts requests the oracle
//! rejects over the whole replay. LangChain's summariser rewrites the history,
//! so its row reads the engine's own findings.

use std::path::PathBuf;

use crate::counters::Counters;
use crate::error::LabResult;
use crate::langchain::{Summarization, SummarizationMiddleware};
use crate::message::{Block, Message};
use crate::policy::engine::{replay, Env, Session};
use crate::policy::findings::{self, Ledger};
use crate::policy::model::{Extractive, ModelRole, Scripted};
use crate::policy::{PointerRule, Policy, PolicyCtx, PolicyInfo, Prepared};
use crate::registry::{every, Cell, Experiment, ExperimentVerdict, Kind, Mechanism, RunOptions};
use crate::swe_agent::{SummarizeEveryNTurns, SummaryFaults, SweAgent, SweAgentConfig};

/// A policy wrapper that keeps the last request it produced.
struct LastRequest<P> {
    inner: P,
    last: Vec<Message>,
}

impl<P: Policy> Policy for LastRequest<P> {
    fn info(&self) -> PolicyInfo {
        self.inner.info()
    }

    fn pointer_rules(&self) -> Vec<PointerRule> {
        self.inner.pointer_rules()
    }

    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        let prepared = self.inner.prepare(history, ctx)?;
        self.last = prepared.request.clone();
        Ok(prepared)
    }
}

/// A task, `steps` (call, result) pairs, a closing answer.
fn session(steps: usize) -> Vec<Message> {
    let mut out = vec![Message::user_text("fix the failing test")];
    for i in 0..steps {
        let id = format!("toolu_{i:02}");
        out.push(Message::assistant(vec![Block::ToolUse {
            id: id.clone(),
            name: "bash".into(),
            input: serde_json::json!({ "command": format!("step {i}") }).into(),
        }]));
        out.push(Message::tool_results(vec![(
            id,
            format!("output of step {i}"),
        )]));
    }
    out.push(Message::assistant(vec![Block::Text {
        text: "done".into(),
    }]));
    out
}

/// The study's summariser at a small scale: `n = 3`, `keep_last_m_turns = 2`,
/// static checkpointing, with `faults`.
fn swe_summary(faults: SummaryFaults) -> SweAgent {
    SweAgent::new(
        "swe-agent-summary-3-2",
        SweAgentConfig {
            summarize_every_n_turns: Some(SummarizeEveryNTurns {
                n: 3,
                keep_last_m_turns: 2,
                enable_static_checkpointing: true,
                faults,
                ..Default::default()
            }),
            last_n_observations: None,
        },
    )
}

/// Replay `steps` through `policy`: the checker's counts on the last request
/// plus the oracle's invalid requests.
fn counters(policy: SweAgent, steps: usize, model: Box<dyn ModelRole>) -> LabResult<Counters> {
    let messages = session(steps);
    let mut p = LastRequest {
        inner: policy,
        last: Vec::new(),
    };
    let mut env = Env {
        model,
        ..Env::default()
    };
    let run = replay(
        &mut p,
        Session {
            name: "scripted",
            messages: &messages,
            times_ms: None,
        },
        &mut env,
    )?;
    let mut ledger = Ledger::default();
    messages.iter().for_each(|m| ledger.record(m));
    let root: PathBuf = crate::policy::engine::run_root(&env, &run.policy);
    let f = findings::check(
        &p.last,
        &ledger,
        &p.pointer_rules(),
        env.storage.as_ref(),
        &root,
    );
    let mut c = Counters::default();
    c.count("lost_forever", f.lost_forever.count, f.lost_forever.samples);
    c.count("in_context", f.in_context, []);
    c.count("invalid_requests", run.invalid_requests, []);
    Ok(c)
}

/// One cell: the intact summariser and the one with `faults`.
fn swe_verdict(
    id: &str,
    faults: SummaryFaults,
    steps: usize,
    model: fn() -> Box<dyn ModelRole>,
) -> LabResult<ExperimentVerdict> {
    let cell = Cell {
        label: format!("swe-agent n=3 m=2, {steps} steps"),
        baseline: counters(swe_summary(SummaryFaults::default()), steps, model())?,
        broken: counters(swe_summary(faults), steps, model())?,
        ..Default::default()
    };
    ExperimentVerdict::of_row(EXPERIMENTS, id, vec![cell])
}

fn extractive() -> Box<dyn ModelRole> {
    Box::new(Extractive::default())
}

fn failing() -> Box<dyn ModelRole> {
    Box::new(Scripted::default())
}

fn run_wipe_all(_: &RunOptions) -> LabResult<ExperimentVerdict> {
    let faults = SummaryFaults {
        wipe_all: true,
        ..Default::default()
    };
    swe_verdict("P-summary-wipes-all", faults, 5, extractive)
}

fn run_keep_last_ignored(_: &RunOptions) -> LabResult<ExperimentVerdict> {
    let faults = SummaryFaults {
        ignore_keep_last: true,
        ..Default::default()
    };
    swe_verdict("P-keep-last-ignored", faults, 3, extractive)
}

fn run_error_drops(_: &RunOptions) -> LabResult<ExperimentVerdict> {
    let faults = SummaryFaults {
        drop_on_error: true,
        ..Default::default()
    };
    swe_verdict("P-summary-error-drops", faults, 5, failing)
}

/// A task, one call answered by ten parallel results, one more step, an answer.
fn fan_out_session() -> Vec<Message> {
    let ids: Vec<String> = (0..10).map(|k| format!("toolu_r{k}")).collect();
    let mut out = vec![
        Message::user_text("read every file"),
        Message::assistant(
            ids.iter()
                .map(|id| Block::ToolUse {
                    id: id.clone(),
                    name: "read".into(),
                    input: serde_json::json!({}).into(),
                })
                .collect(),
        ),
        Message::tool_results(
            ids.iter()
                .map(|id| (id.clone(), format!("{id} text")))
                .collect(),
        ),
    ];
    out.extend(session(1).into_iter().skip(1));
    out
}

/// LangChain's summariser keeping 4 messages, summarising from the first token.
fn lc_counters(fault_search_range: Option<usize>) -> LabResult<Counters> {
    let mut p = Summarization {
        config: SummarizationMiddleware {
            trigger_tokens: 1,
            keep_messages: 4,
            fault_search_range,
        },
    };
    let messages = fan_out_session();
    let run = replay(
        &mut p,
        Session {
            name: "fan-out",
            messages: &messages,
            times_ms: None,
        },
        &mut Env::default(),
    )?;
    let mut c = Counters::default();
    c.count("invalid_requests", run.invalid_requests, []);
    c.count("lost_forever", run.findings.lost_forever.count, []);
    Ok(c)
}

fn run_bounded_search(_: &RunOptions) -> LabResult<ExperimentVerdict> {
    let cell = Cell {
        label: "langchain keep=4, ten parallel results".into(),
        baseline: lc_counters(None)?,
        broken: lc_counters(Some(5))?,
        ..Default::default()
    };
    ExperimentVerdict::of_row(EXPERIMENTS, "P-bounded-tool-search", vec![cell])
}

fn run_result_first(_: &RunOptions) -> LabResult<ExperimentVerdict> {
    let faults = SummaryFaults {
        tool_result_first: true,
        ..Default::default()
    };
    swe_verdict("P-summary-result-first", faults, 5, extractive)
}

/// The policy-fault rows, in `lab list` order.
pub static EXPERIMENTS: &[Experiment] = &[
    Experiment {
        id: "P-summary-wipes-all",
        mechanism: Mechanism::Compaction,
        kind: Kind::Break,
        title: "summarisation wipes every message instead of the summarised prefix",
        change: "SummaryFaults.wipe_all = true (swe-agent summarize_every_n_turns)",
        caught_by: &["in_context", "lost_forever"],
        seed: "https://github.com/letta-ai/letta/issues/2601",
        run: run_wipe_all,
        expect: &[
            every("in_context", 2, 0),
            every("lost_forever", 3, 5),
            every("invalid_requests", 0, 0),
        ],
    },
    Experiment {
        id: "P-keep-last-ignored",
        mechanism: Mechanism::Compaction,
        kind: Kind::Break,
        title: "keep_last_m_turns ignored: the newest turns are summarised too",
        change: "SummaryFaults.ignore_keep_last = true (swe-agent summarize_every_n_turns)",
        caught_by: &["lost_forever"],
        seed: "https://github.com/letta-ai/letta/issues/2512",
        run: run_keep_last_ignored,
        expect: &[
            every("lost_forever", 0, 3),
            every("in_context", 3, 0),
            every("invalid_requests", 0, 0),
        ],
    },
    Experiment {
        id: "P-summary-error-drops",
        mechanism: Mechanism::Compaction,
        kind: Kind::Break,
        title: "a failed summary call drops the turns it should have summarised",
        change: "SummaryFaults.drop_on_error = true (swe-agent summarize_every_n_turns)",
        caught_by: &["lost_forever"],
        seed: "https://github.com/SynapseKit/SynapseKit/issues/551",
        run: run_error_drops,
        expect: &[every("lost_forever", 0, 3), every("invalid_requests", 0, 0)],
    },
    Experiment {
        id: "P-summary-result-first",
        mechanism: Mechanism::Compaction,
        kind: Kind::Break,
        title: "the summary cut leaves a tool result first, without its call",
        change: "SummaryFaults.tool_result_first = true (swe-agent summarize_every_n_turns)",
        caught_by: &["invalid_requests"],
        seed: "https://github.com/letta-ai/letta/pull/935",
        run: run_result_first,
        expect: &[every("invalid_requests", 0, 1)],
    },
    Experiment {
        id: "P-bounded-tool-search",
        mechanism: Mechanism::Compaction,
        kind: Kind::Break,
        title: "the search for the call of the results at the cut looks only 5 messages back and leaves them orphaned",
        change: "SummarizationMiddleware.fault_search_range = Some(5) (langchain-summarization)",
        caught_by: &["invalid_requests"],
        seed: "https://github.com/langchain-ai/langchain/issues/34282 (bound removed by PR 34184)",
        run: run_bounded_search,
        expect: &[every("invalid_requests", 0, 2)],
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fault_is_caught_and_the_intact_runs_are_clean() {
        for exp in EXPERIMENTS {
            let verdict = (exp.run)(&RunOptions::default()).unwrap();
            assert_eq!(verdict.id, exp.id, "the verdict names another row");
            let failures = verdict.check(exp.expect);
            assert!(failures.is_empty(), "{}: {failures:?}", exp.id);
        }
    }
}
