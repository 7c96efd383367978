//! Derived line by line from `cline/cline@9ee61811` (`getContextWindowInfo`,
//! `shouldCompactContextWindow`, the auto-condense branch of
//! `src/core/task/index.ts`, `getNextTruncationRange` with keep `none`,
//! `ensureToolResultsFollowToolUse`, `SummarizeTaskHandler`, the focus-chain
//! manager): Cline's task loop runs only inside the extension, so every
//! expected value is worked out from that code.

use super::prompts::{continuation, counts, reminder_for, SUMMARIZE_TASK};
use super::*;
use crate::policy::model::Scripted;
use crate::tokens::{Approx, TokenCounter};
use serde_json::json;

#[test]
fn the_threshold_is_the_window_less_cline_buffer() {
    let at = |w| {
        Switches {
            contextWindow: w,
            ..Switches::default()
        }
        .max_allowed_size()
    };
    assert_eq!(at(200_000), 160_000);
    assert_eq!(at(128_000), 98_000);
    assert_eq!(at(64_000), 37_000);
    assert_eq!(at(1_000_000), 960_000, "max(window − 40k, 80 %)");
    assert_eq!(at(100_000), 80_000, "80 % beats window − 40k");
    assert_eq!(at(283), 227, "226.4 is reached at 227");
}

#[test]
fn the_prompts_byte_for_byte() {
    assert!(SUMMARIZE_TASK.starts_with("<explicit_instructions type=\"summarize_task\">\nThe current conversation is rapidly running out of context. Now, your urgent task is"));
    assert!(SUMMARIZE_TASK.contains("The file paths must be relative to the current working directory .\n10. You should pay special attention"));
    assert!(SUMMARIZE_TASK
        .contains("\n\nUpdating task progress:\nThere is an optional task_progress parameter"));
    assert!(SUMMARIZE_TASK.contains("<context>Your detailed summary</context>\n<task_progress>task_progress list here</task_progress>\n</summarize_task>"));
    assert!(SUMMARIZE_TASK.ends_with("- [ ] Remaining task example\n</task_progress>\n</summarize_task>\n</example>\n\n</explicit_instructions>\n\n"));
    assert_eq!(
        continuation("did A"),
        "\nThis session is being continued from a previous conversation that ran out of context. The conversation is summarized below:\ndid A.\n\nPlease continue the conversation from where we left it off without asking the user any further questions. Continue with the last task that you were asked to work on. Pay special attention to the most recent user message when responding rather than the initial task message, if applicable.\nIf the most recent user's message starts with \"/newtask\", \"/smol\", \"/compact\", \"/newrule\", or \"/reportbug\", you should indicate to the user that they will need to run this command again.\n"
    );
}

#[test]
fn the_reminder_counts_the_list_and_never_reaches_its_completed_note() {
    let list = "- [x] parse\n- [ ] lex\n  - [ ] test\n- [ ] docs\nnot an item";
    assert_eq!(counts(list), (4, 1));
    let r = reminder_for(list);
    let t = "\t\t\t\t";
    assert_eq!(
        r,
        format!("\n\n{t}# TODO LIST UPDATE REQUIRED - You MUST include the task_progress parameter in your NEXT tool call.\n\n{t}**Current Progress: 1/4 items completed (25%)**\n\n{t}{list}\n\n{t}\n\n{t}{}\n\n{t}\n\n**Note:** 25% of items are complete.\n\n{t}", prompts::REMINDER)
    );
    // Math.round(12.5) = 13: below 25 %, no note.
    let eighth = "- [x] a\n".to_string() + &"- [ ] b\n".repeat(7);
    assert!(
        reminder_for(&eighth).contains("(13%)**") && !reminder_for(&eighth).contains("**Note:**")
    );
    assert!(reminder_for("- [x] a\n- [x] b\n- [ ] c").contains("(67%)**\n\n"));
    assert!(reminder_for("- [ ] a").contains("No items are marked complete yet."));
    // A finished list takes the `>= 75` branch first.
    let done = reminder_for("- [x] a\n- [X] b");
    assert!(done
        .contains("**Note:** 100% of items are complete! Focus on finishing the remaining items."));
    assert!(!done.contains("have been completed!"));
}

fn call(id: &str, input: serde_json::Value) -> Message {
    Message::assistant(vec![Block::ToolUse {
        id: id.into(),
        name: "execute_command".into(),
        input: input.into(),
    }])
}

fn result(id: &str, text: &str) -> Message {
    Message::tool_results(vec![(id.into(), text.into())])
}

fn prepare(p: &mut ClineFocusChain, h: &mut Vec<Message>, model: &mut Scripted) -> Prepared {
    PolicyCtx::with_test("/run/cline", model, |ctx| p.prepare(h, ctx).unwrap())
}

/// A task whose first reply calls a tool with a checklist.
fn task() -> Vec<Message> {
    vec![
        Message::user_text("port the parser"),
        call(
            "c1",
            json!({"command": "ls", "task_progress": "- [ ] read\n- [ ] port"}),
        ),
        result("c1", &"x".repeat(400)),
        call("c2", json!({"command": "cat a"})),
        result("c2", &"y".repeat(400)),
    ]
}

#[test]
fn a_compaction_keeps_the_first_pair_and_answers_its_calls() {
    let mut p = ClineFocusChain::default();
    let mut h = task();
    // The request before this one: everything up to the last reply.
    let previous = Approx.count_messages(&h[..4]);
    p.switches.contextWindow = ((previous + 1) * 5).div_ceil(4);
    assert!(p.switches.max_allowed_size() > previous, "just below");
    let quiet = prepare(&mut p, &mut h, &mut Scripted::default());
    assert!(quiet.events.is_empty());
    p.switches.contextWindow = previous * 5 / 4;
    assert!(p.switches.max_allowed_size() <= previous);
    let out = prepare(&mut p, &mut h, &mut Scripted::replies(["did A"]));
    let kinds: Vec<&str> = out
        .events
        .iter()
        .map(crate::policy::engine::event_kind)
        .collect();
    assert_eq!(kinds, ["summarised", "repaired"]);
    let want = vec![
        Message::user_text("port the parser"),
        task()[1].clone(),
        Message::user_blocks(vec![
            Block::ToolResult {
                tool_use_id: "c1".into(),
                content: "result missing".into(),
            },
            Block::Text {
                text: format!("[summarize_task] Result:\n{}", continuation("did A")),
            },
        ]),
    ];
    assert_eq!(out.request, want);
    assert_eq!(h, want);
    // The reply to the continuation: the guard holds (two active messages).
    h.push(Message::assistant(vec![Block::Text { text: "ok".into() }]));
    h.push(Message::user_text("go on"));
    assert!(prepare(&mut p, &mut h, &mut Scripted::default())
        .events
        .is_empty());
}

#[test]
fn the_checklist_survives_the_summary_and_comes_back_in_the_reminder() {
    let mut p = ClineFocusChain::default();
    let mut h = task();
    p.switches.contextWindow = 10;
    prepare(&mut p, &mut h, &mut Scripted::replies(["did A"]));
    assert_eq!(p.checklist.as_deref(), Some("- [ ] read\n- [ ] port"));
    // Small replies after the summary; the list is reminded at the sixth
    // request since the summary returned it, appended to the user message.
    p.switches.contextWindow = 1_000_000;
    let mut reminded = Vec::new();
    for i in 0..7 {
        h.push(Message::assistant(vec![Block::Text {
            text: format!("step {i}"),
        }]));
        h.push(Message::user_text(format!("next {i}")));
        prepare(&mut p, &mut h, &mut Scripted::default());
        if h.last()
            .unwrap()
            .text()
            .contains("TODO LIST UPDATE REQUIRED")
        {
            reminded.push(i);
        }
    }
    assert_eq!(reminded, [5]);
    let last_reminded = &h[h.len() - 3];
    assert_eq!(
        last_reminded.blocks()[1],
        Block::Text {
            text: reminder_for("- [ ] read\n- [ ] port")
        },
        "kept in the history"
    );
}

#[test]
fn a_failed_summary_leaves_the_history() {
    let mut p = ClineFocusChain::default();
    p.switches.contextWindow = 10;
    let mut h = task();
    let out = prepare(&mut p, &mut h, &mut Scripted::default());
    let kinds: Vec<&str> = out
        .events
        .iter()
        .map(crate::policy::engine::event_kind)
        .collect();
    assert_eq!(kinds, ["model_failed"]);
    assert_eq!(h, task());
}
