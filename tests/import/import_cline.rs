//! A task folder's `ui_messages.json` beside its history: Cline's deleted
//! range as a real compaction (what it dropped, what it kept, no port of the
//! plain truncation in the zoo, `cline-focus-chain` when the model
//! summarised), and each `api_req_started` row's usage on the reply it
//! produced (Roo by time, Cline by order), `tokensIn` read per release, the
//! envelope sized from the first. Task folders built here from the Roo Code
//! fixture's history (Cline's shape derived as `import_roo_code` does); the
//! expected indices and counts are written from the rows, not the importer.

use std::path::{Path, PathBuf};

use crate::common::{LENIENT, STRICT};
use ctxlab::import::artefacts::product_artefacts;
use ctxlab::import::{import_file, DiagnosticKind, TranscriptFormat};
use ctxlab::replay::envelope::{envelope_for, session_product_policy, Basis, EnvelopeArg};
use ctxlab::tokens::{Approx, TokenCounter};
use serde_json::{json, Value};

fn roo_history() -> Vec<Value> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/import/fixtures/roo_code/api_conversation_history.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// Cline's history: the fixture's messages as bare `MessageParam`s, the
/// Roo summary left out (12 messages, user and assistant alternating).
fn cline_history() -> Vec<Value> {
    roo_history()
        .into_iter()
        .filter(|m| m.get("isSummary").is_none())
        .map(|m| json!({"role": m["role"], "content": m["content"]}))
        .collect()
}

fn request(tokens_in: u64, out: u64, writes: u64, reads: u64, index: i64) -> Value {
    let info = json!({"tokensIn": tokens_in, "tokensOut": out, "cacheWrites": writes, "cacheReads": reads});
    json!({"ts": 0, "type": "say", "say": "api_req_started", "text": info.to_string(),
           "conversationHistoryIndex": index})
}

/// Cline's rows: six requests; before the fourth's reply Cline dropped
/// history messages 2-3 (`getNextTruncationRange` "half" on 7 messages),
/// the row after the fourth request the first to carry the range.
fn cline_rows() -> Vec<Value> {
    let mut rows = vec![
        json!({"ts": 0, "type": "say", "say": "text", "text": "task", "conversationHistoryIndex": -1}),
        request(100, 50, 0, 0, -1),
        request(120, 60, 0, 0, 1),
        request(150_000, 900, 5_000, 4_000, 3),
        request(170_000, 800, 0, 0, 5),
    ];
    let range = json!([2, 3]);
    rows.push(
        json!({"ts": 0, "type": "say", "say": "text", "text": "I'll continue.",
                     "conversationHistoryIndex": 6, "conversationHistoryDeletedRange": range}),
    );
    for (k, index) in [(5u64, 7), (6, 9)] {
        let mut r = request(1_000 * k, 10, 0, 0, index);
        r["conversationHistoryDeletedRange"] = range.clone();
        rows.push(r);
    }
    rows
}

fn task(history: &[Value], rows: &[Value]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("api_conversation_history.json");
    std::fs::write(&p, Value::from(history.to_vec()).to_string()).unwrap();
    let ui = dir.path().join("ui_messages.json");
    std::fs::write(ui, Value::from(rows.to_vec()).to_string()).unwrap();
    (dir, p)
}

#[test]
fn clines_deleted_range_is_a_real_compaction_of_what_it_dropped() {
    let (_dir, p) = task(&cline_history(), &cline_rows());
    let s = import_file(&p, &STRICT).unwrap();
    // The UI rows beside it make Cline's plain history a task history.
    assert_eq!(s.format, TranscriptFormat::RooCode);
    // The row carrying the range has index 6: the reply after is 7.
    assert_eq!(s.real_compactions, [7]);
    let c = &s.real_compaction_meta[0];
    assert_eq!(c.dropped, Some([2, 3]));
    assert_eq!(c.trigger.as_deref(), Some("truncation"));
    // The request before the truncated one: 150000 + 900 + 5000 + 4000.
    assert_eq!(c.pre_tokens, Some(159_900));
    assert!(c.describe().contains("dropped 2-3"), "{}", c.describe());
    // Nothing of the product's own is in the history to drop.
    assert!(product_artefacts(&s).is_empty());
    // No port of the plain truncation in the zoo.
    assert_eq!(session_product_policy(&s), None);
    let row = crate::common::the_product_compaction(&p, "cline-focus-chain");
    // Three replies (1, 3, 5) before it.
    assert_eq!((row.call, row.policy.as_deref()), (3, None));
}

#[test]
fn a_cline_summary_sets_the_focus_chain_port_beside_it() {
    let mut history = cline_history();
    history[5]["content"].as_array_mut().unwrap().push(
        json!({"type": "tool_use", "id": "toolu_sum", "name": "summarize_task", "input": {}}),
    );
    history[6]["content"].as_array_mut().unwrap().insert(
        0,
        json!({"type": "tool_result", "tool_use_id": "toolu_sum", "content": "[summarize_task] Result: ..."}),
    );
    let (_dir, p) = task(&history, &cline_rows());
    let s = import_file(&p, &STRICT).unwrap();
    assert_eq!(session_product_policy(&s), Some("cline-focus-chain"));
}

#[test]
fn each_request_is_sized_on_the_reply_it_produced() {
    // Cline: no times in the history, the k-th request is the k-th reply.
    let (_dir, p) = task(&cline_history(), &cline_rows());
    let s = import_file(&p, &STRICT).unwrap();
    let after: Vec<usize> = s.recorded_tokens.iter().map(|t| t.after_messages).collect();
    assert_eq!(after, [2, 4, 6, 8, 10, 12]);
    // tokensIn 150000 is above the cache (9000): either reading holds.
    let t = &s.recorded_tokens[2];
    assert_eq!(
        (t.sent, t.sent_min, t.sent_max),
        (150_000, 150_000, 159_000)
    );
    assert_eq!(t.received, 900);
}

#[test]
fn roo_rows_are_matched_by_time_and_read_per_release() {
    let history = roo_history();
    // A request row just before each reply the history stamps.
    let replies: Vec<u64> = history
        .iter()
        .filter(|m| m["role"] == "assistant")
        .map(|m| m["ts"].as_u64().unwrap())
        .collect();
    let infos = [
        // Older Roo, Anthropic: tokensIn leaves the 12000 cached out.
        json!({"apiProtocol": "anthropic", "tokensIn": 500, "tokensOut": 40, "cacheWrites": 2000, "cacheReads": 10000}),
        // OpenAI: prompt_tokens hold the cache.
        json!({"apiProtocol": "openai", "tokensIn": 14000, "tokensOut": 50, "cacheWrites": 0, "cacheReads": 9000}),
        // Still loading: no usage, no reply taken.
        json!({"apiProtocol": "anthropic", "request": "Loading..."}),
        json!({"apiProtocol": "anthropic", "tokensIn": 16000, "tokensOut": 60, "cacheWrites": 0, "cacheReads": 15000}),
    ];
    let mut rows = Vec::new();
    for (info, ts) in infos
        .iter()
        .zip([replies[0], replies[1], replies[2], replies[2]])
    {
        rows.push(json!({"ts": ts - 500, "type": "say", "say": "api_req_started", "text": info.to_string()}));
    }
    let (_dir, p) = task(&history, &rows);
    let s = import_file(&p, &STRICT).unwrap();
    let got: Vec<(usize, u64, u64, u64)> = s
        .recorded_tokens
        .iter()
        .map(|t| (t.after_messages, t.sent, t.sent_min, t.sent_max))
        .collect();
    assert_eq!(
        got,
        [
            (2, 12_500, 12_500, 12_500),
            (4, 14_000, 14_000, 14_000),
            (6, 16_000, 16_000, 31_000),
        ]
    );
    // The envelope: the first request less the task message it sent.
    let counter = Approx;
    let e = envelope_for(&s, None, EnvelopeArg::Auto, &counter).unwrap();
    assert_eq!(e.basis, Basis::Recorded);
    let logged = counter.count_messages(&s.main[..1]);
    assert_eq!(e.prefix.tokens, 12_500 - logged);
}

#[test]
fn damaged_rows_are_named_at_their_place_and_the_rest_is_read() {
    let mut rows = cline_rows();
    // Wrong types: a range that is not two indices, a usage text not JSON.
    rows[2]["conversationHistoryDeletedRange"] = json!("2-3");
    rows[3]["text"] = json!("{oops");
    // A missing id: the range's first row without its history index.
    rows[5]
        .as_object_mut()
        .unwrap()
        .remove("conversationHistoryIndex");
    let (_dir, p) = task(&cline_history(), &rows);
    let s = import_file(&p, &LENIENT).unwrap();
    let bad = s.diagnostics_of(DiagnosticKind::InvalidRecord);
    assert_eq!(bad.len(), 3, "{:?}", s.diagnostics);
    let lines = s.diagnostic_lines();
    assert!(
        lines.iter().all(|l| l.contains("ui_messages.json:1:")),
        "{lines:?}"
    );
    assert!(s.real_compactions.is_empty());
    assert_eq!(import_file(&p, &STRICT).unwrap_err().exit_code(), 3);
    // A cut file: named, the history read without it.
    let text = Value::from(cline_rows()).to_string();
    std::fs::write(
        p.with_file_name("ui_messages.json"),
        &text[..text.len() / 2],
    )
    .unwrap();
    let s = import_file(&p, &LENIENT).unwrap();
    assert_eq!(s.diagnostics_of(DiagnosticKind::InvalidRecord).len(), 1);
    assert_eq!(s.main.len(), 12);
}
