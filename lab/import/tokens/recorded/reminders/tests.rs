use super::*;
use serde_json::json;

/// A record chained to `parent`, on the main chain unless `side`.
fn rec(uuid: &str, parent: Option<&str>, side: bool, kind: &str, message: Value) -> Value {
    json!({"uuid": uuid, "parentUuid": parent, "type": kind, "message": message,
           "isSidechain": side})
}

fn call(uuid: &str, parent: &str, side: bool, id: &str, name: &str, input: Value) -> Value {
    rec(
        uuid,
        Some(parent),
        side,
        "assistant",
        json!({"id": format!("msg_{uuid}"), "role": "assistant",
               "content": [{"type": "tool_use", "id": id, "name": name, "input": input}]}),
    )
}

fn result(uuid: &str, parent: &str, side: bool, id: &str, text: &str) -> Value {
    rec(
        uuid,
        Some(parent),
        side,
        "user",
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": text}]}),
    )
}

/// The file's text (its size is counted in o200k tokens).
fn body() -> String {
    "let a = 1;\n".repeat(100)
}

/// Read a file, edit it, `git stash`, then `git stash` again with no new edit.
fn edit_then_stash() -> Vec<Value> {
    let body = body();
    vec![
        rec(
            "u0",
            None,
            false,
            "user",
            json!({"role": "user", "content": "go"}),
        ),
        call(
            "a1",
            "u0",
            false,
            "r1",
            "Read",
            json!({"file_path": "/a.rs"}),
        ),
        result("u1", "a1", false, "r1", &body),
        call(
            "a2",
            "u1",
            false,
            "e1",
            "Edit",
            json!({"file_path": "/a.rs"}),
        ),
        result("u2", "a2", false, "e1", "ok"),
        call(
            "a3",
            "u2",
            false,
            "s1",
            "Bash",
            json!({"command": "git status"}),
        ),
        result("u3", "a3", false, "s1", "M a.rs"),
        call(
            "a4",
            "u3",
            false,
            "b1",
            "Bash",
            json!({"command": "git stash"}),
        ),
        result("u4", "a4", false, "b1", "Saved"),
        call(
            "a5",
            "u4",
            false,
            "b2",
            "Bash",
            json!({"command": "git stash pop"}),
        ),
        result("u5", "a5", false, "b2", "Applied"),
    ]
}

fn results(ids: &[&str]) -> Message {
    Message::tool_results(ids.iter().map(|i| (i.to_string(), "r".into())).collect())
}

#[test]
fn a_worktree_rewrite_after_an_edit_resends_the_file_once() {
    let r = Reminders::of(&edit_then_stash());
    let size = crate::tokens::claude::units(&body());
    assert!(size > 100.0, "{size}");
    assert_eq!(r.resent_units(&[results(&["b1"])]), size);
    assert_eq!(
        r.resent_units(&[results(&["s1", "b2"])]),
        0.0,
        "nothing new to re-send"
    );
    assert!(r.starts_turn(&results(&["b1"])));
    assert!(!r.starts_turn(&results(&["s1"])));
    // A conversation keeps what was re-sent.
    let later = [results(&["b1"]), results(&["s1"]), results(&["b2"])];
    assert_eq!(r.resent_units(&later), size);
}

#[test]
fn a_write_is_known_by_the_content_it_sent() {
    let records = vec![
        call(
            "a1",
            "u0",
            false,
            "w1",
            "Write",
            json!({"file_path": "/n.rs", "content": "fn main() {}"}),
        ),
        result("u1", "a1", false, "w1", "ok"),
        call(
            "a2",
            "u1",
            false,
            "b1",
            "Bash",
            json!({"command": "cd x && git checkout main"}),
        ),
        result("u2", "a2", false, "b1", "Switched"),
    ];
    assert_eq!(
        Reminders::of(&records).resent_units(&[results(&["b1"])]),
        crate::tokens::claude::units("fn main() {}")
    );
}

/// A Task call whose subagent edits a file (or only reads one when `edits` is false).
fn subagent(edits: bool) -> Vec<Value> {
    let tool = if edits { "Edit" } else { "Read" };
    vec![
        call("a1", "a0", false, "t1", "Task", json!({"prompt": "fix it"})),
        rec(
            "s0",
            None,
            true,
            "user",
            json!({"role": "user", "content": "fix it"}),
        ),
        call("s1", "s0", true, "x1", tool, json!({"file_path": "/a.rs"})),
        result("s2", "s1", true, "x1", "ok"),
        result("u1", "a1", false, "t1", "fixed"),
    ]
}

#[test]
fn a_subagent_that_edited_files_leaves_its_parent_a_reminder() {
    let r = Reminders::of(&subagent(true));
    assert!(r.starts_turn(&results(&["t1"])));
    assert_eq!(
        r.resent_units(&[results(&["t1"])]),
        0.0,
        "its size is unknown"
    );
    assert!(!Reminders::of(&subagent(false)).starts_turn(&results(&["t1"])));
}

#[test]
fn commands_that_rewrite_the_worktree() {
    for yes in [
        "git checkout main",
        "git stash",
        "git stash -u",
        "git stash pop",
        "git -C repo pull origin main",
        "npm test && git reset --hard HEAD~1",
        "git restore src/a.rs",
        "git switch feature",
        "git rebase main",
    ] {
        assert!(rewrites_worktree(yes), "{yes}");
    }
    for no in [
        "git status",
        "git checkout -b feature",
        "git switch -c feature",
        "git stash list",
        "git restore --staged a.rs",
        "git reset",
        "git commit -m 'checkout the stash'",
        "echo git",
        "",
    ] {
        assert!(!rewrites_worktree(no), "{no}");
    }
}

/// The parent's thinking before a Task whose subagent edited files is
/// dropped in its next request on a model that drops earlier turns' thinking.
#[test]
fn a_reminder_after_a_subagent_drops_the_turns_thinking() {
    let usage =
        json!({"input_tokens": 5, "cache_creation_input_tokens": 10, "cache_read_input_tokens": 0});
    let answer = |uuid: &str, parent: &str, model: &str| {
        rec(
            uuid,
            Some(parent),
            false,
            "assistant",
            json!({"id": format!("msg_{uuid}"), "role": "assistant", "model": model,
                   "content": [{"type": "text", "text": "done"}], "usage": usage}),
        )
    };
    let thinking = rec(
        "a0",
        Some("u0"),
        false,
        "assistant",
        json!({"id": "msg_a1", "role": "assistant", "model": "claude-opus-4-1",
               "content": [{"type": "thinking", "thinking": "plan"}], "usage": usage}),
    );
    let thinking_blocks = |edits: bool, model: &str| {
        let mut records = vec![
            rec(
                "u0",
                None,
                false,
                "user",
                json!({"role": "user", "content": "go"}),
            ),
            thinking.clone(),
        ];
        records.extend(subagent(edits));
        records.push(answer("a9", "u1", model));
        let reqs = crate::tokens::recorded::requests(&records);
        let last = reqs.last().expect("the answer is a request");
        last.messages
            .iter()
            .flat_map(|m| m.blocks())
            .filter(|b| matches!(b, Block::Thinking { .. }))
            .count()
    };
    assert_eq!(thinking_blocks(false, "claude-opus-4-1"), 1);
    assert_eq!(thinking_blocks(true, "claude-opus-4-1"), 0);
    assert_eq!(
        thinking_blocks(true, "claude-opus-4-5"),
        1,
        "Opus 4.5 keeps it"
    );
}
