//! Retention metrics on small built histories with hand-checked answers.

use crate::common;

use ctxlab::error::LabResult;
use ctxlab::message::{Block, Message};
use ctxlab::policy::engine::{replay_observed, Env, Session};
use ctxlab::policy::{
    PointerRule, Policy, PolicyCtx, PolicyEvent, PolicyInfo, Prepared, Source, Unit,
};
use ctxlab::retention::{Retention, Status};
use serde_json::json;

/// A test design: results older than the newest `keep` are replaced; with
/// `persist`, the original goes to a file first and the placeholder points to
/// it; with `delete_after`, every file is deleted from that call on.
struct Mask {
    keep: usize,
    persist: bool,
    delete_after: Option<usize>,
}

impl Policy for Mask {
    fn info(&self) -> PolicyInfo {
        PolicyInfo {
            name: "mask".into(),
            family: "test",
            summary: "test masking".into(),
            source: Source {
                upstream: "tests/replay/retention.rs".into(),
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
        vec![PointerRule::line_prefix("Saved: ")]
    }

    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        let mut events = Vec::new();
        if self.delete_after.is_some_and(|d| ctx.turn >= d) {
            for name in ctx.storage.list(ctx.root).unwrap_or_default() {
                ctx.storage.remove_file(&ctx.root.join(name)).unwrap();
            }
        }
        let total: usize = history.iter().map(|m| m.tool_result_ids().len()).sum();
        let mut seen = 0;
        for m in history.iter_mut() {
            for b in m.blocks_mut() {
                let Block::ToolResult {
                    tool_use_id,
                    content,
                } = b
                else {
                    continue;
                };
                seen += 1;
                if seen + self.keep > total || content.starts_with('[') {
                    continue;
                }
                let placeholder = if self.persist {
                    let path = ctx.root.join(format!("{tool_use_id}.txt"));
                    ctx.storage.write_new(&path, content.as_bytes()).unwrap();
                    format!("[masked]\nSaved: {}", path.display())
                } else {
                    "[masked]".to_string()
                };
                events.push(PolicyEvent::Cleared {
                    id: tool_use_id.clone(),
                    part: "result",
                    placeholder: placeholder.clone(),
                });
                *content = placeholder;
            }
        }
        Ok(Prepared {
            request: history.clone(),
            events,
        })
    }
}

fn read(id: &str, path: &str) -> Message {
    Message::assistant(vec![Block::ToolUse {
        id: id.into(),
        name: "Read".into(),
        input: json!({ "file_path": path }).into(),
    }])
}

fn result(id: &str, text: &str) -> Message {
    Message::tool_results(vec![(id.into(), text.into())])
}

fn run(policy: &mut Mask, messages: &[Message]) -> ctxlab::retention::RetentionReport {
    let mut r = Retention::default();
    replay_observed(
        policy,
        Session {
            name: "t",
            messages,
            times_ms: None,
        },
        &mut Env::default(),
        &mut [&mut r],
    )
    .unwrap();
    r.finish()
}

/// Calls: 0 before the first Read, 1 before the second, 2 before the third,
/// 3 before the answer. The error line of result `a` (seen from call 1) is
/// present at call 1, masked-with-pointer (reachable) at 2, and gone at 3
/// once the file is deleted; nothing recorded an event at 3.
#[test]
fn a_deleted_pointer_target_turns_reachable_into_gone() {
    let messages = vec![
        Message::user_text("go"),
        read("a", "/src/a.rs"),
        result("a", "error: E0425 cannot find value `x`"),
        read("b", "/src/b.rs"),
        result("b", "fn b() {}"),
        read("c", "/src/c.rs"),
        result("c", "fn c() {}"),
        Message::assistant(vec![Block::Text {
            text: "done".into(),
        }]),
    ];
    let mut keep = Mask {
        keep: 1,
        persist: true,
        delete_after: None,
    };
    let r = run(&mut keep, &messages);
    let err = r
        .series
        .iter()
        .map(|p| (p.present, p.reachable))
        .collect::<Vec<_>>();
    // Artifacts: a's path (seen after msg 1), a's error line (msg 2), b's
    // path (msg 3), c's path (msg 5). Call 1: both present. Call 2: a's
    // result masked with a pointer, so two paths present and the error line
    // reachable. Call 3: c's path joins the present ones.
    assert_eq!(err, vec![(0, 0), (2, 0), (2, 1), (3, 1)]);
    assert_eq!(r.artifact_recall, 100.0);

    let mut delete = Mask {
        keep: 1,
        persist: true,
        delete_after: Some(3),
    };
    let r = run(&mut delete, &messages);
    assert_eq!(r.series[2].reachable, 1);
    assert_eq!(r.series[3].reachable, 0);
    let gone = &r.gone_samples[0];
    assert_eq!(gone.label, "error: E0425 cannot find value `x`");
    assert_eq!((gone.status, gone.first_gone), (Status::Gone, Some(3)));
    assert_eq!(gone.mechanisms, vec!["none"]);
    assert_eq!(r.artifact_recall, 75.0);
}

/// `a.rs` is read, masked once `b.rs` is read, then read again: one re-fetch,
/// whose result (40 chars) is 10 approx tokens. Without masking, none.
#[test]
fn a_masked_read_that_is_read_again_is_a_refetch() {
    let body = "x".repeat(40);
    let messages = vec![
        Message::user_text("go"),
        read("a1", "/src/a.rs"),
        result("a1", &body),
        read("b", "/src/b.rs"),
        result("b", "fn b() {}"),
        read("a2", "/src/a.rs"),
        result("a2", &body),
        Message::assistant(vec![Block::Text {
            text: "done".into(),
        }]),
    ];
    let mut masking = Mask {
        keep: 1,
        persist: false,
        delete_after: None,
    };
    let r = run(&mut masking, &messages);
    assert_eq!((r.refetch_calls, r.refetch_tokens), (1, 10));
    assert_eq!(r.refetch_samples, vec!["file: /src/a.rs"]);

    let mut none = Mask {
        keep: usize::MAX / 2,
        persist: false,
        delete_after: None,
    };
    let r = run(&mut none, &messages);
    assert_eq!((r.refetch_calls, r.refetch_tokens), (0, 0));
}

#[test]
fn drift_table_is_stable() {
    use ctxlab::retention::drift::{run, Strategy};
    use ctxlab::retention::render::drift;
    let curves: Vec<_> = Strategy::ALL.iter().map(|s| run(*s, 10, 360)).collect();
    insta::assert_snapshot!(
        "drift_table",
        drift(&curves, ctxlab::render::Format::Markdown)
    );
}

/// A prompt, 30 reads whose results hold an error line among filler (each
/// result 4 lines repeated `repeat` times), and a closing reply.
fn reads(repeat: usize) -> Vec<Message> {
    let mut messages = vec![Message::user_text("fix it")];
    for t in 0..30 {
        let id = format!("toolu_{t:03}");
        messages.push(read(&id, &format!("/src/f{t}.rs")));
        messages.push(result(
            &id,
            &format!("line 1\nline 2\nerror: E{t:04} here\nline 4\n").repeat(repeat),
        ));
    }
    messages.push(Message::assistant(vec![Block::Text {
        text: "done".into(),
    }]));
    messages
}

/// Every policy replays a generated session with planted facts; the baseline
/// keeps every artifact and fact, and the course's f9e8b28 loses the fact
/// planted in a tool result to its micro-compaction (`cleared`).
#[test]
fn planted_facts_survive_the_baseline_and_name_the_losing_mechanism() {
    use ctxlab::replay::policies::{compare_one, Measure};
    let messages = reads(40);
    let m = Measure {
        retention: true,
        ..Measure::default()
    };
    let none = compare_one("g", &messages, "none", 160, &m).unwrap();
    let r = none.retention.unwrap();
    assert_eq!(r.artifact_recall, 100.0);
    assert_eq!(r.facts.len(), 4, "no parallel batch in this session");
    let seed = compare_one("g", &messages, "course-f9e8b28", 160, &m).unwrap();
    let r = seed.retention.unwrap();
    let fact = r.facts.iter().find(|f| f.label == "tool_result").unwrap();
    assert_eq!(fact.status, Status::Gone);
    assert_eq!(fact.mechanisms, vec!["cleared"]);
    assert!(r.artifact_recall < 100.0);
}

/// A fact in a result that course-main saves to a file and then replaces
/// with its `[Earlier tool result saved at <path>]` placeholder is
/// reachable at every request, never gone: retention follows the
/// placeholder block by block, as the checker does (a rule that matches a whole block never matches a
/// request joined into one text). The checker agrees: nothing lost, no
/// pointer lost.
#[test]
fn a_fact_behind_the_saved_at_placeholder_is_reachable() {
    use ctxlab::replay::policies::{compare_one, Measure};
    // Results of 2,800 characters: past course-main's 50,000-character
    // limit, so its micro-compaction saves old results and replaces them.
    let messages = reads(80);
    let m = Measure {
        retention: true,
        ..Measure::default()
    };
    let main = compare_one("g", &messages, "course-main", 160, &m).unwrap();
    let saved_at = main.run.events.iter().any(|(_, e)| {
        matches!(e, ctxlab::policy::PolicyEvent::Cleared { placeholder, .. } if placeholder == "saved_at")
    });
    assert!(
        saved_at,
        "course-main replaced no result with its saved-at placeholder"
    );
    assert_eq!(main.run.findings.lost_forever.count, 0);
    assert_eq!(main.run.findings.pointer_lost.count, 0);
    let r = main.retention.unwrap();
    let fact = r.facts.iter().find(|f| f.label == "tool_result").unwrap();
    // Reachable at every request: through the placeholder while it stands,
    // never "gone (cleared+persisted)" in between (a joined request found
    // it again only once the summary's transcript line pointed to it).
    assert_eq!(fact.status, Status::Reachable, "{fact:?}");
    assert_eq!(fact.first_gone, None, "{fact:?}");
    assert!(fact.mechanisms.is_empty(), "{fact:?}");
    assert_eq!(r.artifact_recall, 100.0);
}

/// Every policy has the retention metrics on the shared sessions (the three
/// smallest in debug builds; `make replay` runs them all): the baseline keeps
/// everything and every policy's recall is a fraction.
#[test]
fn every_policy_has_retention_on_real_sessions() {
    use ctxlab::replay::policies::{replay_files, Measure};
    let Some(dir) = common::transcripts() else {
        return;
    };
    let files: Vec<_> = [
        "claude_code/claude-code-viewer__fe5e1c67.jsonl",
        "claude_code/dmux__chat@eef6c28.json",
        "openai_format/swe-agent__function-calling-demo__marshmallow-1867.traj",
    ]
    .iter()
    .map(|f| dir.join(f))
    .collect();
    let out = replay_files(
        &files,
        &["all".to_string()],
        160,
        &Default::default(),
        Measure {
            retention: true,
            // The subagents of a log run the same engine; every policy on
            // them too would double this test's time.
            conversations: ctxlab::replay::subagents::Conversations {
                main_chain_only: true,
            },
            ..Measure::default()
        },
    )
    .unwrap();
    assert_eq!(out.len(), files.len() * ctxlab::zoo::list::names().len());
    for c in &out {
        let r = c.retention.as_ref().unwrap();
        assert!(r.artifacts > 0, "{} {}", c.run.session, c.run.policy);
        assert_eq!(r.series.len(), c.run.calls.len());
        if c.run.policy == "none" {
            assert_eq!(r.artifact_recall, 100.0, "{}", c.run.session);
            assert_eq!(r.refetch_calls, 0);
        } else {
            assert!((0.0..=100.0).contains(&r.artifact_recall));
        }
    }
}

/// The frontier report: every policy has a row, the baseline keeps
/// everything and re-fetches nothing, and no row marked on the frontier is
/// beaten by another (no more dollars, no less recall, better on one).
#[test]
fn the_frontier_report_marks_exactly_the_dominated_policies() {
    let rows = ctxlab::reports::frontier::frontier_rows().unwrap();
    assert_eq!(rows.len(), ctxlab::zoo::list::names().len());
    let none = rows.iter().find(|r| r.policy == "none").unwrap();
    assert_eq!(none.artifact_recall, 100.0);
    assert_eq!(none.retention.refetch_calls, 0);
    let beats = |o: &ctxlab::retention::render::Scored, m: &ctxlab::retention::render::Scored| {
        let (oc, mc) = (o.dollars.unwrap(), m.dollars.unwrap());
        oc <= mc
            && o.artifact_recall >= m.artifact_recall
            && (oc < mc || o.artifact_recall > m.artifact_recall)
    };
    for m in &rows {
        let beaten = rows.iter().any(|o| o.policy != m.policy && beats(o, m));
        assert_eq!(beaten, m.dominated, "{}", m.policy);
    }
    assert!(rows.iter().any(|r| !r.dominated));
}

/// Retention measures, never changes: under every policy, the run's calls,
/// loss counters and cost are the same with `--retention` as without (the
/// planted facts go into a run of their own).
#[test]
fn retention_changes_no_cost_and_no_loss_counter() {
    use ctxlab::replay::policies::{compare_one, Measure, Pricing};
    let messages = reads(80);
    let sheet = ctxlab::cache::prices::sheet(ctxlab::cache::prices::DEFAULT_SHEET)
        .unwrap()
        .clone();
    let plain = Measure {
        pricing: Some(Pricing {
            provider: ctxlab::cache::provider::CacheChoice::Anthropic.provider(),
            sheet,
            prices: ctxlab::cache::prices::table::PriceTable::builtin(),
            by_model: false,
        }),
        ..Measure::default()
    };
    let with = Measure {
        retention: true,
        ..plain.clone()
    };
    let mut compared = 0;
    for name in ctxlab::zoo::list::names() {
        let a = compare_one("g", &messages, name, 160, &plain).unwrap();
        let b = compare_one("g", &messages, name, 160, &with).unwrap();
        assert!(a.retention.is_none() && b.retention.is_some(), "{name}");
        assert_eq!(a.run.calls, b.run.calls, "{name}: calls");
        assert_eq!(a.run.findings, b.run.findings, "{name}: loss counters");
        assert_eq!(a.run.events.len(), b.run.events.len(), "{name}: events");
        let (ca, cb) = (a.cost.unwrap(), b.cost.unwrap());
        assert_eq!(
            (ca.input_tokens, ca.cache_read_tokens, ca.cache_write_tokens),
            (cb.input_tokens, cb.cache_read_tokens, cb.cache_write_tokens),
            "{name}: cost"
        );
        assert_eq!(ca.dollars, cb.dollars, "{name}: dollars");
        compared += 1;
    }
    assert!(compared > 20);
}

/// Four tiers and three kinds: under a mask that keeps only the newest
/// result and leaves no pointer, an error line a `Read` brought is gone
/// but re-fetchable, one a `make` brought is lost, the user's constraint
/// and the paths and commands the agent wrote stay verbatim; with files,
/// the masked ones are behind a pointer. Every artifact is in one tier.
#[test]
fn artifacts_fall_in_four_tiers_and_three_kinds() {
    let messages = vec![
        Message::user_text("never touch vendor/ ; see https://ex.am/spec"),
        read("a", "/src/a.rs"),
        result("a", "error: E0425 cannot find value `x`"),
        Message::assistant(vec![Block::ToolUse {
            id: "m".into(),
            name: "Bash".into(),
            input: json!({ "command": "make build > out.log" }).into(),
        }]),
        result("m", "error: linker failed"),
        read("c", "/src/c.rs"),
        result("c", "fn c() {}"),
        Message::assistant(vec![Block::Text {
            text: "done".into(),
        }]),
    ];
    let gone = run(
        &mut Mask {
            keep: 1,
            persist: false,
            delete_after: None,
        },
        &messages,
    );
    let t = gone.tiers;
    assert_eq!(t.total(), gone.artifacts, "each artifact in one tier");
    assert_eq!(
        t.in_request + t.behind_pointer,
        gone.present + gone.reachable
    );
    assert_eq!((t.behind_pointer, t.refetchable, t.lost), (0, 1, 1));
    use ctxlab::retention::Origin;
    let tool = gone.by_origin[&Origin::ToolOutput];
    assert_eq!((tool.refetchable, tool.lost), (1, 1), "the two error lines");
    let said = gone.by_origin[&Origin::Instruction];
    assert_eq!((said.in_request, said.total()), (1, 1), "the user's URL");
    let state = gone.by_origin[&Origin::TaskState];
    assert_eq!(state.in_request, state.total(), "paths and the command");
    let kept = run(
        &mut Mask {
            keep: 1,
            persist: true,
            delete_after: None,
        },
        &messages,
    );
    assert_eq!(
        (
            kept.tiers.behind_pointer,
            kept.tiers.refetchable,
            kept.tiers.lost
        ),
        (2, 0, 0)
    );
}

/// A run that ended by error (Inspect's "compaction insufficient") cost only
/// the calls it made: it beats no finished run on the frontier, and its cell
/// says it ended. The control: the same cheap run, finished, does beat it.
#[test]
fn a_run_that_ended_by_error_beats_no_finished_run() {
    use ctxlab::retention::render::{frontier_cell, mark_dominated, Scored};
    let messages = reads(3);
    let report = run(
        &mut Mask {
            keep: 10,
            persist: false,
            delete_after: None,
        },
        &messages,
    );
    let row = |policy: &str, dollars: f64, ended: Option<&str>| Scored {
        session: "s".into(),
        policy: policy.into(),
        tokens_sent: 0,
        artifact_recall: 100.0,
        dollars: Some(dollars),
        dominated: false,
        retention: report.clone(),
        closed: None,
        ended_by_error: ended.map(String::from),
    };
    let mut rows = vec![
        row("finished", 2.0, None),
        row("ended", 0.0, Some("compaction insufficient")),
        row("dearer", 3.0, None),
    ];
    mark_dominated(&mut rows);
    assert!(!rows[0].dominated, "an ended run beat a finished one");
    assert!(
        rows[2].dominated,
        "a finished run no longer beats a dearer one"
    );
    assert_eq!(frontier_cell(&rows[0]), "frontier");
    assert_eq!(frontier_cell(&rows[1]), "ended by error");
    rows[1].ended_by_error = None;
    mark_dominated(&mut rows);
    assert!(rows[0].dominated);
}
