//! Derived line by line from the mirrors' `sessionMemoryCompact.ts`,
//! `microCompact.ts` (`estimateMessageTokens`), `SessionMemory/prompts.ts`,
//! `compact/prompt.ts` and `SessionMemory/sessionMemory.ts` (Claude Code runs
//! only inside the closed product, so no upstream run generated these):
//! every expected value below is worked out by hand from that code.

use super::keep::{estimate_message_tokens, has_text_blocks, messages_to_keep_index, KeepConfig};
use super::memory::{
    format_compact_summary, session_memory_message, truncate_for_compact, user_summary_message,
    DEFAULT_SESSION_MEMORY_TEMPLATE,
};
use super::*;
use crate::message::Block;
use crate::policy::model::Scripted;
use crate::storage::{MemFs, Storage};
use crate::tokens::{Approx, TokenCounter};
use serde_json::json;

fn text(t: &str) -> Block {
    Block::Text { text: t.into() }
}

fn call(id: &str, name: &str, input: serde_json::Value) -> Block {
    Block::ToolUse {
        id: id.into(),
        name: name.into(),
        input: input.into(),
    }
}

fn result(id: &str, content: &str) -> Message {
    Message::tool_results(vec![(id.into(), content.into())])
}

/// Nine messages whose estimates are worked out beside each.
fn history() -> Vec<Message> {
    vec![
        // A string: 0 tokens, has text.
        Message::user_text("fix the parser"),
        // 40 chars → 10, "Bash" + {"command":"ls"} = 20 chars → 5; 15 × 4/3 → 20. Text.
        Message::assistant(vec![
            text(&"a".repeat(40)),
            call("t1", "Bash", json!({"command": "ls"})),
        ]),
        // 400 chars → 100 → 133.3 → 134.
        result("t1", &"r".repeat(400)),
        // "Read{}" = 6 chars → round(1.5) = 2 → 2.67 → 3.
        Message::assistant(vec![call("t2", "Read", json!({}))]),
        // 200 → 50 → 66.7 → 67.
        result("t2", &"s".repeat(200)),
        // 80 → 20 → 26.7 → 27. Text.
        Message::assistant(vec![text(&"b".repeat(80))]),
        // A string: 0, has text.
        Message::user_text("next: add tests"),
        // 5 → 6.67 → 7.
        Message::assistant(vec![call("t3", "Bash", json!({"command": "ls"}))]),
        // 40 → 10 → 13.3 → 14.
        result("t3", &"q".repeat(40)),
    ]
}

#[test]
fn estimate_message_tokens_counts_blocks_pads_by_four_thirds_and_skips_strings() {
    let h = history();
    let each: Vec<usize> = h
        .iter()
        .map(|m| estimate_message_tokens(std::slice::from_ref(m)))
        .collect();
    assert_eq!(each, [0, 20, 134, 3, 67, 27, 0, 7, 14]);
    // The padding is applied once to the sum: 15 + 100 = 115 → 153.3 → 154.
    assert_eq!(estimate_message_tokens(&h[1..3]), 154);
    assert_eq!(
        estimate_message_tokens(&[Message::user_blocks(vec![Block::Image {
            source: "png".into()
        }])]),
        2667,
        "2000 × 4/3, rounded up"
    );
    let texts: Vec<bool> = h.iter().map(has_text_blocks).collect();
    assert_eq!(
        texts,
        [true, true, false, false, false, true, true, false, false]
    );
    assert!(!has_text_blocks(&Message::user_text("")));
}

fn config(min_tokens: usize, min_texts: usize, max_tokens: usize) -> KeepConfig {
    KeepConfig {
        minTokens: min_tokens,
        minTextBlockMessages: min_texts,
        maxTokens: max_tokens,
    }
}

#[test]
fn the_kept_range_grows_back_to_both_minimums_and_keeps_tool_pairs() {
    let h = history();
    // After message 5: 6..9 hold 21 tokens and 1 text message; back to 5
    // (48, 2 texts), to 4 (115 ≥ 100): start 4, whose result t2 needs its
    // call in 3.
    assert_eq!(messages_to_keep_index(&h, Some(5), &config(100, 2, 300)), 3);
    // Nothing summarised: from the end, 8 (14), 7 (21), 6 (21, 1 text): both
    // minimums of (20, 1) met at 6, whose range holds t3's call.
    assert_eq!(messages_to_keep_index(&h, None, &config(20, 1, 300)), 6);
    // Already enough after message 1 (252 tokens, 2 texts): no growth, but
    // t1's result at 2 pulls the start back to its call at 1.
    assert_eq!(messages_to_keep_index(&h, Some(1), &config(100, 2, 300)), 1);
}

#[test]
fn the_maximum_stops_the_growth_before_the_minimums() {
    let h = history();
    // Ten text messages never come; 6..9 = 21, +27, +67, +3 = 118, +134 =
    // 252 ≥ 200 at 2 → pulled back to t1's call at 1.
    assert_eq!(
        messages_to_keep_index(&h, Some(5), &config(100, 10, 200)),
        1
    );
    // Without the cap the growth runs to the floor (message 0).
    assert_eq!(
        messages_to_keep_index(&h, Some(5), &config(100, 10, 1000)),
        0
    );
    // Reaching the maximum with the messages after the last summarised one:
    // nothing added (252 ≥ 200 from 2) and the pair rule still applies.
    assert_eq!(
        messages_to_keep_index(&h, Some(1), &config(100, 10, 200)),
        1
    );
    assert_eq!(messages_to_keep_index(&[], None, &config(1, 1, 1)), 0);
}

#[test]
fn a_long_section_is_cut_at_a_line_boundary() {
    let x = "x".repeat(3000);
    let y = "y".repeat(3000);
    let z = "z".repeat(3000);
    let file = format!("\n# A\n_desc_\n{x}\n{y}\n{z}\n# B\nshort");
    // 7 + 3001 + 3001 = 6009 used; z's 3001 more passes 8000.
    let (cut, was) = truncate_for_compact(&file);
    assert!(was);
    assert_eq!(
        cut,
        format!("\n# A\n_desc_\n{x}\n{y}\n\n[... section truncated for length ...]\n# B\nshort")
    );
    let (same, was) = truncate_for_compact(DEFAULT_SESSION_MEMORY_TEMPLATE);
    assert!(!was);
    assert_eq!(same, DEFAULT_SESSION_MEMORY_TEMPLATE);
}

#[test]
fn format_compact_summary_drops_analysis_and_names_the_summary() {
    let raw = "<analysis>draft</analysis>\n\n<summary>\n  did A\n</summary>\n\n\n\nend ";
    assert_eq!(format_compact_summary(raw), "Summary:\ndid A\n\nend");
    assert_eq!(format_compact_summary("\n\n\nplain\n\n\n"), "plain");
}

#[test]
fn the_summary_message_byte_for_byte() {
    let file = memory::render("did A");
    let msg = session_memory_message(&file, "/r/transcript.jsonl", "/r/session-memory/summary.md");
    let body = DEFAULT_SESSION_MEMORY_TEMPLATE.trim_start();
    assert_eq!(
        msg,
        format!(
            "This session is being continued from a previous conversation that ran out of context. The summary below covers the earlier portion of the conversation.\n\n{body}did A\n\nIf you need specific details from before compaction (like exact code snippets, error messages, or content you generated), read the full transcript at: /r/transcript.jsonl\n\nRecent messages are preserved verbatim.\nContinue the conversation from where it left off without asking the user any further questions. Resume directly — do not acknowledge the summary, do not recap what was happening, do not preface with \"I'll continue\" or similar. Pick up the last task as if the break never happened."
        )
    );
    let long = memory::render(&"w\n".repeat(5000));
    let msg = session_memory_message(&long, "/r/t.jsonl", "/r/m.md");
    assert!(msg.ends_with("\n\nSome session memory sections were truncated for length. The full session memory can be viewed at: /r/m.md"));
    let legacy = user_summary_message("whole", Some("/r/t.jsonl"), false);
    assert!(!legacy.contains("preserved verbatim") && !legacy.contains("Summary"));
    assert!(memory::is_empty(&format!(
        "{DEFAULT_SESSION_MEMORY_TEMPLATE}\n\n"
    )));
    assert!(!memory::is_empty(&file));
}

/// One call of the policy, as the engine makes it before a reply.
fn prepare(
    p: &mut SessionMemory,
    h: &mut Vec<Message>,
    fs: &MemFs,
    model: &mut Scripted,
) -> Prepared {
    let mut ctx = PolicyCtx {
        storage: fs,
        root: Path::new("/run/sm"),
        tokens: &Approx,
        turn: 0,
        envelope: 0,
        anchor: None,
        read_lines: None,
        now_ms: None,
        model,
    };
    p.prepare(h, &mut ctx).unwrap()
}

/// Small thresholds: extraction from 50 tokens, every 20 tokens of growth,
/// every 3 calls; keep at least 1 token and 1 text message.
fn small() -> SessionMemory {
    let mut p = SessionMemory::default();
    p.switches.minimumMessageTokensToInit = 50;
    p.switches.minimumTokensBetweenUpdate = 20;
    p.switches.minTokens = 1;
    p.switches.minTextBlockMessages = 1;
    p.cc.switches.output_reserve = 0;
    p.cc.switches.autocompact_buffer = 0;
    p.cc.switches.context_window = 1_000_000;
    p
}

fn events_of(out: &Prepared) -> Vec<&'static str> {
    out.events
        .iter()
        .map(crate::policy::engine::event_kind)
        .collect()
}

#[test]
fn the_notes_become_the_summary_and_the_messages_after_them_stay() {
    let fs = MemFs::new();
    let mut p = small();
    let mut model = Scripted::replies(["notes-1"]);
    let mut h = vec![Message::user_text("t".repeat(200))];
    assert!(prepare(&mut p, &mut h, &fs, &mut model).events.is_empty());
    // A reply with a call: 50 + ... ≥ 50 initialises; 1 call < 3 and the
    // reply made one: no extraction (the script would be spent).
    h.push(Message::assistant(vec![
        text("looking"),
        call("t1", "Bash", json!({"command": "ls"})),
    ]));
    h.push(result("t1", &"o".repeat(120)));
    prepare(&mut p, &mut h, &fs, &mut model);
    assert!(p.notes.is_none() && p.initialized);
    // A reply without calls: grown by ≥ 20, so the notes are written and
    // the reply (message 3) is the last summarised one.
    h.push(Message::assistant(vec![text("found it")]));
    h.push(Message::user_text("now fix it"));
    prepare(&mut p, &mut h, &fs, &mut model);
    assert_eq!(p.notes.as_deref(), Some("notes-1"));
    assert_eq!(p.last_summarized, Some(3));
    // The next call reaches the threshold: keep from message 4.
    h.push(Message::assistant(vec![call(
        "t2",
        "Bash",
        json!({"command": "make"}),
    )]));
    h.push(result("t2", &"e".repeat(400)));
    let before = h.clone();
    p.cc.switches.context_window = Approx.count_messages(&h);
    let out = prepare(&mut p, &mut h, &fs, &mut model);
    let transcript = "/run/sm/transcript.jsonl";
    assert_eq!(
        out.events,
        [PolicyEvent::Summarised {
            replaced: 4,
            kept: 3,
            archive: None
        }]
    );
    let summary = session_memory_message(
        &memory::render("notes-1"),
        transcript,
        "/run/sm/session-memory/summary.md",
    );
    let mut want = vec![Message::user_text(summary)];
    want.extend_from_slice(&before[4..]);
    assert_eq!(out.request, want);
    assert_eq!(h, want, "the history is rewritten");
    // The transcript is named, not written, and not a pointer the checker follows.
    assert!(fs.read(Path::new(transcript)).is_err());
    let first = want[0].text();
    assert!(first.contains(transcript));
    assert!(crate::policy::pointers_in(&p.pointer_rules(), &first).is_empty());
    assert_eq!(p.last_summarized, None, "reset after a compaction");
    assert_eq!(
        p.last_memory_message,
        Mark::Gone,
        "message 3 was summarised away"
    );
}

#[test]
fn after_a_compaction_extraction_waits_for_the_old_size() {
    let fs = MemFs::new();
    let mut p = small();
    p.switches.minimumMessageTokensToInit = 1;
    let mut model = Scripted::replies(["n1"]);
    let mut h = vec![Message::user_text("t".repeat(2000))];
    prepare(&mut p, &mut h, &fs, &mut model);
    h.push(Message::assistant(vec![text("ok")]));
    h.push(Message::user_text("go on"));
    p.cc.switches.context_window = Approx.count_messages(&h);
    let out = prepare(&mut p, &mut h, &fs, &mut model);
    assert_eq!(events_of(&out), ["summarised"]);
    // Counted up to the reply: 500 for the task, 1 for "ok".
    assert_eq!(p.tokens_at_last_extraction, 501);
    // Small replies afterwards: the context is far below 501 + 20 (never reset), so no
    // extraction runs (the empty script would report a failure if it did).
    p.cc.switches.context_window = 1_000_000;
    for i in 0..5 {
        h.push(Message::assistant(vec![text(&format!("reply {i}"))]));
        h.push(Message::user_text("more"));
        assert!(prepare(&mut p, &mut h, &fs, &mut model).events.is_empty());
    }
    assert_eq!(p.notes.as_deref(), Some("n1"), "the notes are stale");
}

#[test]
fn without_notes_or_when_the_kept_part_is_too_big_the_legacy_compaction_runs() {
    let fs = MemFs::new();
    // No notes yet (the init threshold is never reached): legacy.
    let mut p = small();
    p.switches.minimumMessageTokensToInit = usize::MAX;
    let mut h = vec![
        Message::user_text("go"),
        Message::assistant(vec![text("ok")]),
        Message::user_text("x".repeat(100)),
    ];
    p.cc.switches.context_window = Approx.count_messages(&h);
    let out = prepare(&mut p, &mut h, &fs, &mut Scripted::replies(["whole"]));
    let legacy = user_summary_message("whole", Some("/run/sm/transcript.jsonl"), false);
    assert_eq!(out.request, [Message::user_text(legacy)]);
    // Notes, but the kept messages alone reach the threshold: legacy too.
    let mut p = small();
    p.switches.minimumMessageTokensToInit = 1;
    p.switches.minTokens = 1_000_000;
    let mut model = Scripted::replies(["notes", "whole"]);
    let mut h = vec![Message::user_text("go")];
    prepare(&mut p, &mut h, &fs, &mut model);
    h.push(Message::assistant(vec![text(&"z".repeat(400))]));
    h.push(Message::user_text("again"));
    // 1 + 100 + 2 = 103 tokens reach 100; the kept part grows back to
    // message 0 and estimates 134 ≥ 100 by itself.
    p.cc.switches.context_window = 100;
    let out = prepare(&mut p, &mut h, &fs, &mut model);
    assert_eq!(p.notes.as_deref(), Some("notes"));
    assert_eq!(out.request.len(), 1);
    let only = out.request[0].text();
    assert!(only.contains("whole") && !only.contains("preserved verbatim"));
}

#[test]
fn variants_set_both_parts_by_their_upstream_names() {
    use crate::policy::variant::parse;
    let (_, set) = parse("claude-code-session-memory:minTokens=500:context_window=90000").unwrap();
    let mut p = SessionMemory::default();
    p.configure(&set).unwrap();
    assert_eq!(p.switches.minTokens, 500);
    assert_eq!(p.cc.switches.context_window, 90_000);
    let (_, bad) = parse("claude-code-session-memory:min_tokens=5").unwrap();
    let err = p.configure(&bad).unwrap_err();
    assert!(
        err.contains("minTokens") && err.contains("context_window"),
        "{err}"
    );
    assert_eq!(p.switches.minTokens, 500, "unchanged on an error");
}
