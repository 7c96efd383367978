//! Pi coding agent sessions: the shared real session (version 1, an entry
//! list) counted a second way in this file, its two compactions at their
//! recorded entries; a tree session (version 3, entry ids, an abandoned
//! branch) written here to `session-manager.ts`'s types; detection under
//! another extension; an unknown entry type refused at its line (exit 3).

use std::path::{Path, PathBuf};

use crate::common;
use crate::common::{LENIENT, STRICT};

use ctxlab::import::artefacts::product_artefacts;
use ctxlab::import::{
    import_file, import_reader, opens_product_compaction, unpaired_ids, DiagnosticKind,
    ImportedSession, TranscriptFormat,
};
use ctxlab::message::{Block, Role};
use serde_json::Value;

const SHARED: &str = "pi/pi-mono__before-compaction@83378aa.jsonl";

fn shared() -> Option<PathBuf> {
    Some(common::transcripts()?.join(SHARED))
}

fn import_text(text: &str) -> ctxlab::error::LabResult<ImportedSession> {
    import_reader(
        text.as_bytes(),
        Path::new("session.jsonl"),
        TranscriptFormat::Pi,
        &LENIENT,
    )
}

/// What `convertToLlm` sends for the file's entries, counted without the
/// importer: one message per user, reply with content, bash execution and
/// compaction; consecutive tool results one message. (messages, replies,
/// tool calls, tool results).
fn second_count(text: &str) -> (usize, usize, usize, usize) {
    let (mut messages, mut replies, mut calls, mut results) = (0, 0, 0, 0);
    let mut in_results = false;
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        // Setting changes send nothing and leave a run of results whole.
        if !matches!(v["type"].as_str(), Some("message" | "compaction")) {
            continue;
        }
        let role = v["message"]["role"].as_str();
        let is_result = role == Some("toolResult");
        if is_result {
            results += 1;
            if !in_results {
                messages += 1;
            }
        }
        in_results = is_result;
        match (v["type"].as_str().unwrap(), role) {
            ("message", Some("assistant")) => {
                let content = v["message"]["content"].as_array().unwrap();
                if !content.is_empty() {
                    messages += 1;
                    replies += 1;
                }
                calls += content.iter().filter(|b| b["type"] == "toolCall").count();
            }
            ("message", Some("user" | "bashExecution")) | ("compaction", _) => messages += 1,
            _ => {}
        }
    }
    (messages, replies, calls, results)
}

#[test]
fn the_shared_session_is_counted_as_pi_sends_it() {
    let Some(path) = shared() else { return };
    let s = import_file(&path, &LENIENT).unwrap();
    assert_eq!(s.format, TranscriptFormat::Pi);
    let text = std::fs::read_to_string(&path).unwrap();
    let (messages, replies, calls, results) = second_count(&text);
    let sum = s.summary();
    // One more: the calls the second compaction cut off are answered in a
    // message of their own before its summary.
    assert_eq!(sum.main_messages, messages + 1);
    assert_eq!(sum.main_assistant_messages, replies);
    // Six calls have no result in the file (five in replies the user
    // aborted, one in the reply the second compaction cut off): the repair
    // answers each with `[missing result]`.
    assert_eq!((sum.main_tool_uses, sum.main_tool_results), (calls, calls));
    assert_eq!(sum.diagnostics["dangling_tool_use"], calls - results);
    assert_eq!((calls, results), (454, 448));
    assert!(unpaired_ids(&s.main).is_empty());
    assert_eq!(sum.main_thinking_blocks, 49);
    assert_eq!(s.skipped["thinking_level_change"], 5);
    assert_eq!(s.skipped["model_change"], 5);
    let empty = text
        .lines()
        .filter(|l| l.contains(r#""role":"assistant","content":[]"#))
        .count();
    // Replies aborted (12) or failed (1: the API refused Pi's request, a
    // `tool_use` of an aborted reply left without its result) before any
    // content.
    assert_eq!(empty, 13);
    assert_eq!(s.skipped["assistant with no content (aborted)"], 12);
    assert_eq!(s.skipped["assistant with no content (error)"], 1);
    assert_eq!(replies + empty, 484);
    // Every reply's usage but those of aborted or failed replies, which Pi
    // does not count (`getAssistantUsage`).
    let counted = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| {
            let m = &v["message"];
            m["role"] == "assistant"
                && !m["content"].as_array().unwrap().is_empty()
                && !matches!(m["stopReason"].as_str(), Some("aborted" | "error"))
        })
        .count();
    assert_eq!(s.recorded_tokens.len(), counted);
    assert_eq!(replies - counted, 6);
    let bash = s
        .main
        .iter()
        .filter(|m| m.text().starts_with("Ran `"))
        .count();
    assert_eq!(bash, 3);
}

#[test]
fn the_two_compactions_are_real_with_their_kept_entries() {
    let Some(path) = shared() else { return };
    let s = import_file(&path, &STRICT).err();
    // Under --strict the cut-off tool call is damage.
    assert!(s.is_some_and(|e| e.exit_code() == 3));
    let s = import_file(&path, &LENIENT).unwrap();
    let meta = &s.real_compaction_meta;
    assert_eq!(meta.len(), 2);
    // Entries (the header is entry 0) 359 and 628: lines 360 and 629; first
    // kept entries 293 and 551: lines 294 and 552.
    let lines: Vec<(usize, usize, Option<u64>)> = meta
        .iter()
        .map(|c| {
            (
                s.main_lines[c.at],
                s.main_lines[c.first_kept.unwrap()],
                c.pre_tokens,
            )
        })
        .collect();
    assert_eq!(
        lines,
        vec![(360, 294, Some(175_004)), (629, 552, Some(185_014))]
    );
    // The cut-off call (entry 627) is answered before the second summary,
    // so dropping the summary for a policy replay leaves the pairs whole.
    let answer = &s.main[meta[1].at - 1];
    assert!(answer.is_tool_result() && s.main_lines[meta[1].at - 1] == 0);
    let replayed = ctxlab::import::artefacts::without_product_artefacts(&s);
    assert!(unpaired_ids(&replayed).is_empty());
    for c in meta {
        assert!(opens_product_compaction(&s, c.at));
        assert!(ctxlab::import::pi::is_summary(&s.main[c.at]));
        assert_eq!(s.main[c.first_kept.unwrap()].role, Role::User);
        assert_eq!(c.trigger, None, "the log does not say which were automatic");
    }
    assert_eq!(product_artefacts(&s), s.real_compactions);
    // Each summary as Pi sends it, byte for byte.
    let text = std::fs::read_to_string(&path).unwrap();
    let entry: Value = serde_json::from_str(text.lines().nth(359).unwrap()).unwrap();
    assert_eq!(
        s.main[meta[0].at].text(),
        format!(
            "The conversation history before this point was compacted into the following summary:\n\n<summary>\n{}\n</summary>",
            entry["summary"].as_str().unwrap()
        )
    );
}

#[test]
fn a_pi_session_saved_under_another_name_is_still_pi() {
    let Some(path) = shared() else { return };
    let dir = std::env::temp_dir().join(format!("ctxlab-pi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join("session.json");
    std::fs::copy(&path, &copy).unwrap();
    let s = import_file(&copy, &LENIENT);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(s.unwrap().format, TranscriptFormat::Pi);
}

/// A version 3 session as `SessionManager` writes it: a header, entries
/// with `id` / `parentId`; the reply `d` was abandoned (the user went back
/// to `c` and asked again), then a compaction kept from `e`.
const TREE: &str = r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}
{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":[{"type":"text","text":"fix it"}],"timestamp":1}}
{"type":"message","id":"b","parentId":"a","timestamp":"t","message":{"role":"assistant","content":[{"type":"thinking","thinking":"look"},{"type":"toolCall","id":"t1","name":"read","arguments":{"path":"a.rs"}}],"usage":{"input":10,"output":5,"cacheRead":100,"cacheWrite":7,"totalTokens":122},"stopReason":"toolUse","timestamp":2}}
{"type":"message","id":"c","parentId":"b","timestamp":"t","message":{"role":"toolResult","toolCallId":"t1","toolName":"read","content":[{"type":"text","text":"fn main() {}"}],"isError":false,"timestamp":3}}
{"type":"message","id":"d","parentId":"c","timestamp":"t","message":{"role":"assistant","content":[{"type":"text","text":"abandoned"}],"stopReason":"stop","timestamp":4}}
{"type":"message","id":"e","parentId":"c","timestamp":"t","message":{"role":"user","content":"try again","timestamp":5}}
{"type":"compaction","id":"f","parentId":"e","timestamp":"t","summary":"S","firstKeptEntryId":"e","tokensBefore":1234}
{"type":"message","id":"g","parentId":"f","timestamp":"t","message":{"role":"bashExecution","command":"ls","output":"","exitCode":2,"cancelled":false,"truncated":false,"timestamp":6}}
{"type":"message","id":"h","parentId":"g","timestamp":"t","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"stopReason":"stop","timestamp":7}}
{"type":"label","id":"i","parentId":"h","timestamp":"t","targetId":"h","label":"done"}
"#;

#[test]
fn a_tree_session_follows_the_last_entrys_path() {
    let s = import_text(TREE).unwrap();
    let texts: Vec<String> = s.main.iter().map(|m| m.text()).collect();
    assert_eq!(s.main.len(), 7, "{texts:?}");
    assert!(!texts.iter().any(|t| t == "abandoned"));
    assert_eq!(s.skipped["off_path"], 1);
    assert_eq!(s.skipped["label"], 1);
    assert_eq!(s.diagnostics_of(DiagnosticKind::DetachedChain).len(), 1);
    let c = &s.real_compaction_meta[0];
    assert_eq!((c.at, c.first_kept, c.pre_tokens), (4, Some(3), Some(1234)));
    assert_eq!(
        s.main[5].text(),
        "Ran `ls`\n(no output)\n\nCommand exited with code 2"
    );
    assert!(matches!(
        s.main[1].blocks()[..],
        [Block::Thinking { .. }, Block::ToolUse { .. }]
    ));
    // Usage: input + cacheRead + cacheWrite sent, output received, after message 2.
    let r = &s.recorded_tokens[0];
    assert_eq!((r.after_messages, r.sent, r.received), (2, 117, 5));
    assert!(unpaired_ids(&s.main).is_empty());
}

#[test]
fn an_unknown_entry_type_is_refused_at_its_line() {
    let text = TREE.replace(r#"{"type":"label""#, r#"{"type":"hologram""#);
    let e = import_text(&text).unwrap_err();
    assert_eq!(e.exit_code(), 3);
    let shown = e.to_string();
    assert!(shown.contains("session.jsonl:10:1"), "{shown}");
    assert!(
        shown.contains("unknown Pi entry type `hologram`"),
        "{shown}"
    );
    assert!(shown.contains("remove or convert the line"), "{shown}");
    // The command line says the same and exits 3.
    let dir = std::env::temp_dir().join(format!("ctxlab-pi-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.jsonl");
    std::fs::write(&file, &text).unwrap();
    let (code, _, err) = common::lab(&["import", file.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("bad.jsonl:10:1"), "{err}");
}
