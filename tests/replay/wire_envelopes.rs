//! The claude-trace wire captures (`../shared/wire/`) against the envelope
//! table (`lab/replay/input/envelope_table.json`, issue 47): every model call of
//! each product in the table sends the system prompt and tool definitions
//! the table gives; the captures import as sessions; the usage the streams
//! reported is read; a cut body or events out of order are exit 3 naming
//! the file and line.

use std::path::PathBuf;

use crate::common;

use ctxlab::import::claude_trace::{self, Api, StreamUsage};
use ctxlab::replay::envelope_table;

/// The shared wire captures, when present.
fn captures() -> Option<Vec<PathBuf>> {
    let dir = common::transcripts()?.parent()?.join("wire");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .ok()?
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    (!files.is_empty()).then_some(files)
}

#[test]
fn every_call_sends_the_envelope_the_table_gives() {
    let Some(files) = captures() else { return };
    let read: Vec<_> = files
        .iter()
        .map(|f| claude_trace::read(f).unwrap())
        .collect();
    let table = envelope_table::table();
    assert!(table.len() >= 2, "{table:?}");
    for row in &table {
        let mut calls = 0;
        for c in &read {
            for p in c.calls_of(&row.product) {
                let release = &p.product.as_ref().unwrap().release;
                if *release != row.release {
                    continue;
                }
                // opencode's title call is not its agent's envelope.
                if p.body.get("tools").is_none() {
                    continue;
                }
                let e = p.envelope().unwrap();
                assert_eq!(
                    (e.system_chars, e.tools, e.tool_chars),
                    (row.system_chars, row.tools, row.tool_chars),
                    "{} line {}: {row:?}",
                    c.path.display(),
                    p.line
                );
                calls += 1;
            }
        }
        assert!(
            calls > 0,
            "no call of {} {} in the captures",
            row.product,
            row.release
        );
    }
    // The two the issue names.
    let cc = envelope_table::of("claude-code", "2.1.153").unwrap();
    assert_eq!((cc.tools, cc.system_blocks), (34, 2));
    let codex = envelope_table::of("codex-cli", "0.139.0").unwrap();
    assert_eq!((codex.system_chars, codex.tools), (21_335, 15));
}

/// The tokens the table gives Claude Code's envelope are the Claude
/// estimator's count of the captured system text and tool definitions, so
/// a replay that puts them after a compaction charges what the wire sent.
#[test]
fn the_claude_code_envelope_tokens_are_the_estimators_count_of_the_capture() {
    let Some(files) = captures() else { return };
    let row = envelope_table::of("claude-code", "2.1.153").unwrap();
    let counter = ctxlab::tokens::Tokens::Claude.counter();
    let mut counted = Vec::new();
    for f in &files {
        let c = claude_trace::read(f).unwrap();
        for p in c.calls_of("claude-code") {
            let Some(tools) = p.body.get("tools") else {
                continue;
            };
            let system: usize = p.body["system"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|b| b.get("text").and_then(|t| t.as_str()))
                .map(|t| counter.count(t))
                .sum();
            counted.push(system + counter.count(&serde_json::to_string(tools).unwrap()));
        }
    }
    assert!(!counted.is_empty());
    // Every call sends the same envelope, so one count for all.
    assert!(
        counted.iter().all(|&n| Some(n) == row.claude_tokens),
        "{counted:?} against {:?}",
        row.claude_tokens
    );
}

#[test]
fn the_captures_usage_is_read_from_the_stream() {
    let Some(files) = captures() else { return };
    let cc = files
        .iter()
        .find(|f| f.to_string_lossy().contains("claude-code-2.1.153"))
        .unwrap();
    let c = claude_trace::read(cc).unwrap();
    let calls: Vec<_> = c.calls_of("claude-code").collect();
    assert_eq!(calls.len(), 5);
    // The wire README: call 1 input 30,425; call 2 cache read 30,336 + input 106.
    let u = |i: usize| calls[i].usage.unwrap();
    assert_eq!(u(0).input_tokens + u(0).cache_read_tokens, 30_425);
    assert_eq!((u(1).input_tokens, u(1).cache_read_tokens), (106, 30_336));
    assert_eq!(u(1).output_tokens, 99);
    let codex = files
        .iter()
        .find(|f| f.to_string_lossy().contains("codex-0.139"))
        .unwrap();
    let c = claude_trace::read(codex).unwrap();
    let calls: Vec<_> = c.calls_of("codex-cli").collect();
    assert_eq!(calls.len(), 2);
    assert!(calls.iter().all(|p| p.api == Api::OpenAiResponses));
    let StreamUsage {
        input_tokens,
        cache_read_tokens,
        ..
    } = calls[0].usage.unwrap();
    assert_eq!(
        (input_tokens + cache_read_tokens, cache_read_tokens),
        (11_976, 9_088)
    );
}

#[test]
fn the_captures_import_as_sessions() {
    let Some(files) = captures() else { return };
    let cc = files
        .iter()
        .find(|f| f.to_string_lossy().contains("claude-code-2.1.153"))
        .unwrap();
    // Detected, not named.
    let sessions = ctxlab::import::import_file_sessions(cc, &Default::default()).unwrap();
    // Two Claude Code sessions and opencode's (its agent and title calls).
    assert!(sessions.len() >= 3, "{}", sessions.len());
    for s in &sessions {
        assert_eq!(s.format.name(), "claude_trace");
        assert!(!s.main.is_empty(), "{}", s.label);
        assert!(!s.system.is_empty(), "{}", s.label);
    }
    let claude: Vec<_> = sessions
        .iter()
        .filter(|s| s.label.contains("claude-code 2.1.153"))
        .collect();
    assert_eq!(
        claude.len(),
        2,
        "{:?}",
        sessions.iter().map(|s| &s.label).collect::<Vec<_>>()
    );
    // The system prompt as sent: the table's characters.
    let chars: usize = claude[0].system.iter().map(|s| s.chars().count()).sum();
    let cc_row = envelope_table::of("claude-code", "2.1.153").unwrap();
    assert!(chars >= cc_row.system_chars, "{chars}");
    // A replay of a capture runs, with the logged system prompt as envelope.
    let out = common::lab_ok(&["replay", cc.to_str().unwrap(), "--policy", "none"]);
    assert!(out.contains("logged system prompt"), "{out}");
}

#[test]
fn a_cut_body_or_events_out_of_order_is_bad_input_with_its_line() {
    let Some(files) = captures() else { return };
    let cc = files
        .iter()
        .find(|f| f.to_string_lossy().contains("claude-code-2.1.153"))
        .unwrap();
    let text = std::fs::read_to_string(cc).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let dir = tempfile::tempdir().unwrap();
    // Line 2 cut in the middle of its body.
    let cut = format!("{}\n{}\n", lines[0], &lines[1][..lines[1].len() / 2]);
    let cut_file = common::write(dir.path(), "cut.jsonl", &cut);
    let (code, out, err) = common::lab(&["replay", cut_file.to_str().unwrap(), "--policy", "none"]);
    assert_eq!(code, 3, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("cut.jsonl:2:"), "{err}");
    assert!(
        err.contains("cut off") && err.contains("delete the line"),
        "{err}"
    );
    // Line 2's events with the stop moved first.
    let mut pair: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
    let events = pair["response"]["events"].as_array_mut().unwrap();
    let last = events.pop().unwrap();
    events.insert(1, last);
    let swapped = format!("{}\n{pair}\n", lines[0]);
    let swapped_file = common::write(dir.path(), "swapped.jsonl", &swapped);
    let err = claude_trace::read(&swapped_file).unwrap_err();
    assert_eq!(err.exit_code(), 3);
    let shown = err.to_string();
    assert!(shown.contains("swapped.jsonl:2:"), "{shown}");
    assert!(shown.contains("out of order"), "{shown}");
    let (code, out, _) =
        common::lab(&["replay", swapped_file.to_str().unwrap(), "--policy", "none"]);
    assert_eq!((code, out.as_str()), (3, ""));
    // The intact lines read clean.
    let intact = format!("{}\n{}\n", lines[0], lines[1]);
    let intact_file = common::write(dir.path(), "intact.jsonl", &intact);
    assert!(claude_trace::read(&intact_file).is_ok());
}
