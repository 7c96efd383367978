//! A Claude Code log's `timestamp`s reach the replay: the prompt cache
//! expires across an idle gap longer than its TTL, in a `.jsonl` log and in
//! a `chat.json` array alike, and a log without times never expires.

use crate::common;
use serde_json::{json, Value};

/// Six turns, a minute apart, with a 20-minute pause before the fifth; each
/// message long enough to be cached.
fn records(times: bool) -> Vec<Value> {
    let mut out = Vec::new();
    let mut parent: Option<String> = None;
    for i in 0..12 {
        let minute = i / 2 + if i >= 8 { 20 } else { 0 };
        let (kind, text) = if i % 2 == 0 {
            ("user", "please go on ")
        } else {
            ("assistant", "working on it ")
        };
        let uuid = format!("u{i}");
        let mut r = json!({
            "type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "s", "isSidechain": false,
            "message": {"role": kind, "content": [{"type": "text", "text": text.repeat(400)}]},
        });
        if times {
            r["timestamp"] = json!(format!(
                "2025-10-27T14:{minute:02}:{:02}.000Z",
                (i % 2) * 30
            ));
        }
        out.push(r);
        parent = Some(uuid);
    }
    out
}

fn expiries(file: &std::path::Path) -> u64 {
    let v = common::replay_none_cost_json(file, &[]);
    v["cost"][0]["expiries"].as_u64().unwrap()
}

#[test]
fn an_idle_gap_past_the_cache_ttl_expires_the_cache_in_both_log_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = common::write(dir.path(), "s.jsonl", &common::jsonl(&records(true)));
    let chat = common::write(
        dir.path(),
        "chat.json",
        &serde_json::to_string(&records(true)).unwrap(),
    );
    let untimed = common::write(dir.path(), "u.jsonl", &common::jsonl(&records(false)));
    assert_eq!(expiries(&jsonl), 1, "the one 20-minute gap");
    assert_eq!(expiries(&chat), 1, "the one 20-minute gap");
    assert_eq!(expiries(&untimed), 0, "no times, no expiry");
}
