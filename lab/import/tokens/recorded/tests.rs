use super::*;
use crate::error::LabError;
use serde_json::json;

fn rec(uuid: &str, parent: Option<&str>, kind: &str, message: Value) -> Value {
    json!({"uuid": uuid, "parentUuid": parent, "type": kind, "message": message,
           "timestamp": "2025-08-07T06:20:35.956Z", "isSidechain": false})
}

fn usage(i: u64, w: u64, r: u64) -> Value {
    json!({"input_tokens": i, "cache_creation_input_tokens": w, "cache_read_input_tokens": r})
}

/// user -> assistant (2 records, one response) -> tool result -> assistant.
fn session() -> Vec<Value> {
    let a1 = |c: Value| json!({"id": "msg_1", "role": "assistant", "content": [c], "usage": usage(3, 100, 0)});
    vec![
        json!({"type": "summary", "summary": "s"}),
        rec("u1", None, "user", json!({"role": "user", "content": "hi"})),
        rec(
            "a1",
            Some("u1"),
            "assistant",
            a1(json!({"type": "text", "text": "ok"})),
        ),
        rec(
            "a2",
            Some("a1"),
            "assistant",
            a1(json!({"type": "tool_use", "id": "t1", "name": "Read", "input": {"p": 1}})),
        ),
        rec(
            "u2",
            Some("a2"),
            "user",
            json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "body"}]}]}),
        ),
        rec(
            "a3",
            Some("u2"),
            "assistant",
            json!({"id": "msg_2", "role": "assistant",
            "content": [{"type": "text", "text": "done"}], "usage": usage(2, 40, 100)}),
        ),
        rec(
            "a4",
            Some("u2"),
            "assistant",
            json!({"id": "msg_0", "role": "assistant",
            "content": [], "usage": usage(0, 0, 0)}),
        ),
    ]
}

#[test]
fn one_request_per_response_with_the_chain_above_it() {
    let reqs = requests(&session());
    assert_eq!(reqs.len(), 2, "the all-zero synthetic response is left out");
    assert_eq!(reqs[0].messages.len(), 1);
    assert_eq!(reqs[0].usage.total(), 103);
    let second = &reqs[1];
    assert_eq!(second.chain, "u1");
    assert_eq!(
        second.usage,
        Usage {
            input_tokens: 2,
            cache_creation_input_tokens: 40,
            cache_read_input_tokens: 100
        }
    );
    // user, merged assistant (text + tool_use), tool result.
    assert_eq!(second.messages.len(), 3);
    assert_eq!(second.messages[1].blocks().len(), 2);
    assert!(
        matches!(&second.messages[2].blocks()[0], Block::ToolResult { content, .. } if content == "body")
    );
    assert_eq!(second.at_ms, Some(1_754_547_635_956));
}

#[test]
fn a_parent_cycle_ends_the_chain_instead_of_looping() {
    let mut recs = session();
    recs[1]["parentUuid"] = json!("a3");
    let reqs = requests(&recs);
    assert_eq!(reqs.len(), 2);
    assert!(reqs[1].messages.len() <= 4);
}

#[test]
fn jsonl_comments_are_skipped_and_bad_lines_are_located() {
    let p = Path::new("s.jsonl");
    let ok = "// provenance\n{\"type\":\"summary\"}\n\n{\"type\":\"user\"}\n";
    // Each record knows its line (comment and blank lines skipped).
    assert_eq!(parse_records(p, ok).unwrap().1, [(2, 1), (4, 1)]);
    assert_eq!(
        parse_records(p, "{\"a\":1}\n{\"a\":").unwrap().0.len(),
        1,
        "a cut last line is dropped"
    );
    let err = parse_records(p, "{\"a\":1}\n{\"a\" 1}\n").unwrap_err();
    match err {
        LabError::Input { line, file, .. } => assert_eq!((line, file.as_path()), (2, p)),
        other => panic!("expected an input error, got {other:?}"),
    }
    let err = parse_records(p, "[\n {\"a\": 1},\n {\"a\" 2}\n]").unwrap_err();
    assert!(matches!(err, LabError::Input { line: 3, .. }), "{err:?}");
}

#[test]
fn timestamps_parse_to_unix_milliseconds() {
    assert_eq!(parse_timestamp_ms("1970-01-01T00:00:00Z"), Some(0));
    assert_eq!(
        parse_timestamp_ms("2000-03-01T00:00:01.5Z"),
        Some(951_868_801_500)
    );
    assert_eq!(parse_timestamp_ms("2025-13-01T00:00:00Z"), None);
    assert_eq!(parse_timestamp_ms("yesterday"), None);
    assert_eq!(parse_timestamp_ms("2025-01-01T00:00:00+01:00"), None);
}

fn at(mut r: Value, stamp: &str) -> Value {
    r["timestamp"] = json!(stamp);
    r
}

/// Two parallel tool calls logged as a linear pair of assistant records,
/// their results as siblings: the chain above the next response holds one
/// of each; a text part of the same response hangs off the chain too.
fn parallel() -> Vec<Value> {
    let call = |id: &str| {
        json!({"id": "msg_1", "role": "assistant", "usage": usage(1, 50, 0),
               "content": [{"type": "tool_use", "id": id, "name": "Read", "input": {}}]})
    };
    let result = |id: &str| {
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": format!("out {id}")}]})
    };
    let text = json!({"id": "msg_1", "role": "assistant", "usage": usage(1, 50, 0),
                      "content": [{"type": "text", "text": "reading both"}]});
    let late = json!({"id": "msg_1", "role": "assistant", "usage": usage(1, 50, 0),
                      "content": [{"type": "text", "text": "logged after"}]});
    vec![
        at(
            rec("u1", None, "user", json!({"role": "user", "content": "go"})),
            "2025-01-01T00:00:00Z",
        ),
        rec("x", Some("u1"), "assistant", text),
        rec("a1", Some("u1"), "assistant", call("t1")),
        rec("a2", Some("a1"), "assistant", call("t2")),
        at(
            rec("r2", Some("a2"), "user", result("t2")),
            "2025-01-01T00:01:00Z",
        ),
        at(
            rec("r1", Some("a2"), "user", result("t1")),
            "2025-01-01T00:02:00Z",
        ),
        rec(
            "a3",
            Some("r1"),
            "assistant",
            json!({"id": "msg_2", "role": "assistant", "usage": usage(1, 10, 50),
                   "content": [{"type": "text", "text": "done"}]}),
        ),
        rec("y", Some("u1"), "assistant", late),
    ]
}

#[test]
fn parallel_calls_and_results_off_the_chain_are_put_back() {
    let reqs = requests(&parallel());
    let second = &reqs[1];
    assert_eq!(second.messages.len(), 3, "{:?}", second.messages);
    let kinds: Vec<usize> = second.messages.iter().map(|m| m.blocks().len()).collect();
    // The text part and both calls; both results (the sibling first).
    assert_eq!(kinds, vec![1, 3, 2]);
    let mut ids = second.messages[2].tool_result_ids();
    ids.sort_unstable();
    assert_eq!(ids, vec!["t1", "t2"]);
    // Sent when its last message was logged, not when the response was.
    assert_eq!(second.sent_ms, parse_timestamp_ms("2025-01-01T00:02:00Z"));
}

#[test]
fn consecutive_user_records_are_one_message() {
    let mut recs = parallel();
    // The second result chained below the first, as newer logs write it.
    recs[5]["parentUuid"] = json!("r2");
    let reqs = requests(&recs);
    assert_eq!(reqs[1].messages.len(), 3);
    assert_eq!(reqs[1].messages[2].tool_result_ids().len(), 2);
}

#[test]
fn a_stamp_shared_by_many_records_is_no_time() {
    let mut recs = parallel();
    for _ in 0..assemble::BULK_STAMP {
        recs.push(json!({"type": "summary", "timestamp": "2025-01-01T00:02:00Z"}));
    }
    let reqs = requests(&recs);
    assert_eq!(reqs[1].sent_ms, None);
    assert!(reqs[0].sent_ms.is_some());
}

/// A thinking turn, then a new prompt, answered by `model`.
fn two_turns(model: &str) -> Vec<Value> {
    let answer = |id: &str, content: Value| {
        json!({"id": id, "role": "assistant", "model": model, "usage": usage(1, 50, 0),
               "content": content})
    };
    vec![
        rec(
            "u1",
            None,
            "user",
            json!({"role": "user", "content": "think"}),
        ),
        rec(
            "a1",
            Some("u1"),
            "assistant",
            answer(
                "m1",
                json!([
            {"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "ok"}]),
            ),
        ),
        rec(
            "u2",
            Some("a1"),
            "user",
            json!({"role": "user", "content": "next"}),
        ),
        rec(
            "a2",
            Some("u2"),
            "assistant",
            answer("m2", json!([{"type": "text", "text": "fine"}])),
        ),
    ]
}

#[test]
fn older_models_lose_earlier_turns_thinking() {
    let blocks = |model: &str| requests(&two_turns(model))[1].messages[1].blocks().len();
    assert_eq!(blocks("claude-sonnet-4-5-20250929"), 1);
    assert_eq!(blocks("claude-opus-4-5-20251101"), 2);
}

/// A streamed response's first record carries a partial output count: the
/// request keeps the largest; the 1-hour share of the writes is read from
/// `cache_creation` where the log has it.
#[test]
fn output_is_the_responses_largest_count_and_1h_writes_are_split_out() {
    let a = |uuid: &str, parent: &str, out: u64| {
        let mut u = usage(3, 100, 0);
        u["output_tokens"] = json!(out);
        u["cache_creation"] =
            json!({"ephemeral_5m_input_tokens": 40, "ephemeral_1h_input_tokens": 60});
        rec(
            uuid,
            Some(parent),
            "assistant",
            json!({"id": "msg_9", "role": "assistant",
                   "content": [{"type": "text", "text": "x"}], "usage": u}),
        )
    };
    let records = vec![
        rec("u1", None, "user", json!({"role": "user", "content": "hi"})),
        a("a1", "u1", 2),
        a("a2", "a1", 180),
        a("a3", "a2", 180),
    ];
    let reqs = requests(&records);
    assert_eq!(reqs.len(), 1);
    assert_eq!(
        reqs[0].billing,
        Billing {
            output_tokens: 180,
            cache_write_1h_tokens: 60,
            output_estimate: None,
        }
    );
    // Without the split, every write is a 5-minute one.
    assert_eq!(requests(&session())[0].billing.cache_write_1h_tokens, 0);
}

#[test]
fn the_requests_of_one_conversation_share_one_copy_of_its_messages() {
    // A chain of 40 rounds: each request resends every message before it.
    let mut recs = vec![rec(
        "u0",
        None,
        "user",
        json!({"role": "user", "content": "go"}),
    )];
    let mut parent = "u0".to_string();
    for k in 0..40 {
        let (a, u) = (format!("a{k}"), format!("r{k}"));
        recs.push(rec(
            &a,
            Some(&parent),
            "assistant",
            json!({"id": format!("msg_{k}"), "role": "assistant",
                "content": [{"type": "text", "text": format!("step {k}")}], "usage": usage(1, 0, 100 + k)}),
        ));
        recs.push(rec(
            &u,
            Some(&a),
            "user",
            json!({"role": "user", "content": format!("next {k}")}),
        ));
        parent = u;
    }
    let reqs = requests(&recs);
    assert_eq!(reqs.len(), 40);
    for (k, r) in reqs.iter().enumerate() {
        assert_eq!(
            r.messages.len(),
            1 + 2 * k,
            "request {k} sends what came before"
        );
        assert!(
            r.messages.shares_with(&reqs[39].messages),
            "request {k} holds its own copy"
        );
    }
    // Still the same messages as a copy of the longest list's prefix.
    assert_eq!(&reqs[39].messages[..3], &reqs[1].messages[..]);
}
