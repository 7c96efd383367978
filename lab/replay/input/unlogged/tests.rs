use super::*;
use crate::import::{import_file, ImportOptions};
use crate::replay::input::envelope::RecordedLog;
use crate::tokens::Approx;
use serde_json::json;

/// A Claude Code log: a prompt, a first reply (calling `call` when given,
/// answered by a result), a second user message `second` (a prompt when
/// there is no call), and a second reply whose request recorded `grew`
/// tokens more than the first one's beyond what the log added.
fn log(call: Option<serde_json::Value>, second: &str, grew: u64) -> tempfile::NamedTempFile {
    let usage =
        |n: u64| json!({"input_tokens": 10, "cache_read_input_tokens": n - 10, "output_tokens": 5});
    let mut first = vec![json!({"type": "text", "text": "looking"})];
    let second_content = match &call {
        Some(c) => {
            first.push(
                json!({"type": "tool_use", "id": "t1", "name": c["name"], "input": c["input"]}),
            );
            json!([{"type": "tool_result", "tool_use_id": "t1", "content": second}])
        }
        None => json!(second),
    };
    let first_reply = crate::message::Message::assistant(vec![Block::Text {
        text: "looking".into(),
    }]);
    // What the log adds between the two requests, as the rule counts it.
    let session_probe = |content: serde_json::Value| {
        let mut m: Vec<Message> = vec![first_reply.clone()];
        if let Some(c) = &call {
            m[0] = Message::assistant(vec![
                Block::Text {
                    text: "looking".into(),
                },
                Block::ToolUse {
                    id: "t1".into(),
                    name: c["name"].as_str().unwrap().into(),
                    input: c["input"].clone().into(),
                },
            ]);
        }
        let user: Message =
            serde_json::from_value(json!({"role": "user", "content": content})).unwrap();
        m.push(match user.content {
            Content::Blocks(_) => Message::tool_results(vec![("t1".into(), second.into())]),
            Content::Text(t) => Message::user_text(t),
        });
        Approx.count_messages(&m) as u64
    };
    let prompt = "p".repeat(400);
    let t1 = 3_000 + Approx.count(&prompt) as u64;
    let t2 = t1 + session_probe(second_content.clone()) + grew;
    let lines = [
        json!({"type": "user", "uuid": "u1", "parentUuid": null, "isSidechain": false, "version": "2.0.21",
            "message": {"role": "user", "content": prompt}}),
        json!({"type": "assistant", "uuid": "a1", "parentUuid": "u1", "isSidechain": false,
            "message": {"id": "msg_1", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
                "content": first, "usage": usage(t1)}}),
        json!({"type": "user", "uuid": "u2", "parentUuid": "a1", "isSidechain": false,
            "message": {"role": "user", "content": second_content}}),
        json!({"type": "assistant", "uuid": "a2", "parentUuid": "u2", "isSidechain": false,
            "message": {"id": "msg_2", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
                "content": [{"type": "text", "text": "done"}], "usage": usage(t2)}}),
    ];
    crate::replay::input::envelope::tests::jsonl(&lines)
}

fn found(f: &tempfile::NamedTempFile) -> (ImportedSession, Vec<Attachment>) {
    let session = import_file(f.path(), &ImportOptions::default()).unwrap();
    let l = RecordedLog::read(f.path(), session.format)
        .unwrap()
        .unwrap();
    let recorded = |place| Some(l.request_at(place)?.usage.total());
    let a = attachments(&session, &recorded, &[], &Approx);
    (session, a)
}

#[test]
fn a_step_at_a_prompt_that_mentions_a_path_is_the_mentioned_file() {
    let f = log(None, "now fix @agents/plan.md please", 6_000);
    let (mut session, a) = found(&f);
    assert_eq!(
        a,
        vec![Attachment {
            at: 2,
            tokens: 6_000,
            cause: Cause::AtMention
        }]
    );
    // Joined to the prompt, after its text; counted as its size.
    let before = Approx.count_message(&session.main[2]);
    attach(&mut session.main, &a);
    assert_eq!(Approx.count_message(&session.main[2]), before + 6_000);
    assert_eq!(session.main[2].text(), "now fix @agents/plan.md please");
    assert_eq!(
        PutBack::of(&session.main),
        PutBack {
            attachments: 1,
            tokens: 6_000,
            shell_reminders: 0,
            resumes: 0
        }
    );
}

#[test]
fn a_step_without_a_cause_is_taken_only_past_all_the_log_added() {
    // No cause, but 6,000 tokens more than a short prompt: no counting
    // error of the prompt makes that, so it is content.
    let a = found(&log(None, "now fix the plan please", 6_000)).1;
    let unattributed = Attachment {
        at: 2,
        tokens: 6_000,
        cause: Cause::Unattributed,
    };
    assert_eq!(a, vec![unattributed]);
    // An e-mail address is not a mention: the same step is unattributed.
    assert_eq!(
        found(&log(None, "mail me@example.com", 6_000)).1[0].cause,
        Cause::Unattributed
    );
    // A step smaller than what the log added may be the estimator's.
    let long = "fix it ".repeat(2_000);
    assert!(found(&log(None, &long, 1_500)).1.is_empty());
    // The same step at a cause is an attachment.
    let mentioned = format!("{long} @plan.md");
    assert_eq!(
        found(&log(None, &mentioned, 1_500)).1[0].cause,
        Cause::AtMention
    );
}

#[test]
fn a_step_below_the_floor_or_past_any_window_is_left_alone() {
    // A corrupt log's step, past any context window, is not content.
    assert!(found(&log(None, "look at @plan.md", u64::MAX / 4))
        .1
        .is_empty());
    // A mention, but a step of one call's drift.
    assert!(found(&log(None, "look at @plan.md", MIN_STEP as u64 - 1))
        .1
        .is_empty());
}

#[test]
fn tool_calls_that_bring_files_back_have_their_causes() {
    let cases = [
        (
            json!({"name": "Read", "input": {"file_path": "/a.rs", "limit": 40}}),
            Cause::PartialRead,
        ),
        (
            json!({"name": "Read", "input": {"file_path": "/a.rs"}}),
            Cause::Unattributed,
        ),
        (
            json!({"name": "Bash", "input": {"command": "git checkout main"}}),
            Cause::TreeRewrite,
        ),
        (
            json!({"name": "Bash", "input": {"command": "git checkout -b new"}}),
            Cause::Unattributed,
        ),
        (
            json!({"name": "Task", "input": {"prompt": "edit"}}),
            Cause::SubagentReturn,
        ),
    ];
    for (call, cause) in cases {
        let (_, a) = found(&log(Some(call.clone()), "ok", 4_000));
        // A call with no cause of its own leaves the step unattributed.
        let got: Vec<(usize, usize, Cause)> = a.iter().map(|a| (a.at, a.tokens, a.cause)).collect();
        assert_eq!(got, vec![(2, 4_000, cause)], "{call}");
    }
}

#[test]
fn mentions_are_read_as_claude_code_reads_them() {
    assert!(mentions_a_path("@README.md"));
    assert!(mentions_a_path("see @\"files 3/\" now"));
    assert!(mentions_a_path("in @scripts I want"));
    assert!(!mentions_a_path("a @ sign"));
    assert!(!mentions_a_path("user@host"));
    assert!(!mentions_a_path("<command-name>@x</command-name>"));
}

#[test]
fn each_background_shell_is_reminded_of_before_every_later_call() {
    let call = |id: &str, command: &str, background: bool| {
        Message::assistant(vec![Block::ToolUse {
            id: id.into(),
            name: "Bash".into(),
            input: json!({"command": command, "run_in_background": background}).into(),
        }])
    };
    let main = vec![
        Message::user_text("start the server"),
        call("t1", "npm run dev", true),
        Message::tool_results(vec![(
            "t1".into(),
            "Command running in background with ID: 56ffa1".into(),
        )]),
        call("t2", "ls", false),
        Message::tool_results(vec![("t2".into(), "a b".into())]),
        Message::assistant(vec![Block::Text { text: "up".into() }]),
        Message::user_text("thanks"),
    ];
    let r = shell_reminders(&main, Buffer::Kept, &[]);
    // Not with the result that started it (its output was empty then).
    assert_eq!(r.iter().map(|(k, _)| *k).collect::<Vec<_>>(), vec![4, 6]);
    assert_eq!(
        r[0].1,
        "<system-reminder>\nBackground Bash 56ffa1 (command: npm run dev) (status: running) Has new output available. You can check its output using the BashOutput tool.\n</system-reminder>"
    );
    let mut put = main.clone();
    for (k, text) in &r {
        push_block(&mut put[*k], Block::Text { text: text.clone() });
    }
    assert_eq!(PutBack::of(&put).shell_reminders, 2);
    // A command run in the foreground is never reminded of.
    let mut fg = main.clone();
    fg[1] = call("t1", "npm run dev", false);
    assert!(shell_reminders(&fg, Buffer::Kept, &[]).is_empty());
    // Where a read empties the buffer, the reminders stop at the first read.
    let mut read = main.clone();
    read[3] = Message::assistant(vec![Block::ToolUse {
        id: "t2".into(),
        name: "BashOutput".into(),
        input: json!({"bash_id": "56ffa1"}).into(),
    }]);
    assert!(shell_reminders(&read, Buffer::Emptied, &[]).is_empty());
    assert_eq!(shell_reminders(&read, Buffer::Kept, &[]).len(), 2);
    assert_eq!(Buffer::of(Some("1.0.98")), Buffer::Emptied);
    assert_eq!(Buffer::of(Some("2.0.22")), Buffer::Kept);
    assert_eq!(Buffer::of(None), Buffer::Kept);
}

#[test]
fn a_log_of_thousands_of_shells_gets_a_bounded_number_of_reminders() {
    let mut main = Vec::new();
    for k in 0..400 {
        let id = format!("t{k}");
        main.push(Message::assistant(vec![Block::ToolUse {
            id: id.clone(),
            name: "Bash".into(),
            input: json!({"command": "yes", "run_in_background": true}).into(),
        }]));
        main.push(Message::tool_results(vec![(
            id,
            format!("Command running in background with ID: s{k}"),
        )]));
    }
    // 400 shells over 400 result messages: 79,800 reminders unbounded.
    assert_eq!(shell_reminders(&main, Buffer::Kept, &[]).len(), 79_800);
    main.extend(main.clone());
    assert_eq!(
        shell_reminders(&main, Buffer::Kept, &[]).len(),
        MAX_REMINDERS
    );
}

/// A Claude Code log of three prompts and replies, with a `SessionStart`
/// resume hook record before the third prompt.
fn resumed_log() -> tempfile::NamedTempFile {
    let usage = json!({"input_tokens": 10, "cache_read_input_tokens": 90, "output_tokens": 5});
    let mut lines = Vec::new();
    let mut parent = serde_json::Value::Null;
    for (k, prompt) in ["start", "look at @a.md", "and at @b.md"]
        .iter()
        .enumerate()
    {
        if k == 2 {
            lines.push(json!({"type": "progress", "isSidechain": false,
                "data": {"type": "hook_progress", "hookName": "SessionStart:resume"}}));
        }
        let (u, a) = (format!("u{k}"), format!("a{k}"));
        lines.push(
            json!({"type": "user", "uuid": u, "parentUuid": parent, "isSidechain": false,
            "version": "2.1.14", "message": {"role": "user", "content": prompt}}),
        );
        lines.push(json!({"type": "assistant", "uuid": a, "parentUuid": u, "isSidechain": false,
            "message": {"id": format!("msg_{k}"), "role": "assistant", "model": "claude-opus-4-5-20251101",
                "content": [{"type": "text", "text": "ok"}], "usage": usage}}));
        parent = json!(a);
    }
    crate::replay::input::envelope::tests::jsonl(&lines)
}

#[test]
fn a_resume_drops_what_was_put_back_before_it() {
    let f = resumed_log();
    let session = import_file(f.path(), &ImportOptions::default()).unwrap();
    let l = RecordedLog::read(f.path(), session.format)
        .unwrap()
        .unwrap();
    let resumes = l.resumed_before(&session);
    assert_eq!(resumes, vec![4], "the third prompt follows the resume");
    // Recorded: an envelope, the logged messages, 6,000 tokens attached at
    // the second prompt, gone after the resume, and 3,000 at the third.
    let before = |i: usize| Approx.count_messages(&session.main[..i]) as u64;
    let sizes: std::collections::HashMap<(usize, usize), u64> = [
        (1, 2_000 + before(1)),
        (3, 2_000 + before(3) + 6_000),
        (5, 2_000 + before(5) + 3_000),
    ]
    .into_iter()
    .map(|(i, n)| (session.main_place(i).unwrap(), n))
    .collect();
    let recorded = |place| sizes.get(&place).copied();
    let with = attachments(&session, &recorded, &resumes, &Approx);
    let tokens: Vec<(usize, usize)> = with.iter().map(|a| (a.at, a.tokens)).collect();
    assert_eq!(tokens, vec![(2, 6_000), (4, 3_000)]);
    // Not knowing of the resume, the third step reads as 3,000 fewer.
    let without = attachments(&session, &recorded, &[], &Approx);
    assert_eq!(without.len(), 1);

    // The engine drops the put-back block at the resume: the third
    // request is the logged messages and the new attachment only.
    let mut main = session.main.clone();
    attach(&mut main, &with);
    let mut env = crate::policy::engine::Env {
        tokens: Box::new(Approx),
        prefix: crate::policy::engine::Prefix {
            resumes: resumes.clone(),
            ..Default::default()
        },
        ..Default::default()
    };
    // Designs that keep a copy of the history (an edited copy, a wrapped
    // policy's own) drop it there too: none of them acts on this session.
    let keeping = [
        "none",
        "langchain-clear-tool-uses",
        "anthropic-clear-tool-uses",
        "vercel-prune-messages",
        "openhands-observation-masking",
        "frozen:langchain-clear-tool-uses",
        "gated:vercel-prune-messages",
    ];
    for name in keeping {
        let mut policy = crate::zoo::list::make(name).unwrap();
        let s = crate::policy::engine::Session {
            name: "resumed",
            messages: &main,
            times_ms: None,
        };
        let run = crate::policy::engine::replay(policy.as_mut(), s, &mut env).unwrap();
        let sent: Vec<u64> = run.calls.iter().map(|c| c.tokens as u64).collect();
        let expected = vec![before(1), before(3) + 6_000, before(5) + 3_000];
        assert_eq!(sent, expected, "{name}");
    }
}

#[test]
fn a_resumed_process_reminds_of_no_shell_started_before() {
    let main = vec![
        Message::user_text("start the server"),
        Message::assistant(vec![Block::ToolUse {
            id: "t1".into(),
            name: "Bash".into(),
            input: json!({"command": "npm run dev", "run_in_background": true}).into(),
        }]),
        Message::tool_results(vec![(
            "t1".into(),
            "Command running in background with ID: 56ffa1".into(),
        )]),
        Message::assistant(vec![Block::Text { text: "up".into() }]),
        Message::user_text("thanks"),
        Message::assistant(vec![Block::Text { text: "ok".into() }]),
        Message::user_text("again"),
    ];
    assert_eq!(shell_reminders(&main, Buffer::Kept, &[]).len(), 2);
    let after: Vec<usize> = shell_reminders(&main, Buffer::Kept, &[6])
        .iter()
        .map(|(k, _)| *k)
        .collect();
    assert_eq!(after, vec![4]);
}
