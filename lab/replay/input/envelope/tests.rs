use super::*;
use crate::import::{import_file, ImportOptions};
use crate::tokens::Approx;

/// A Claude Code log of one conversation, one prompt and one reply whose
/// request recorded `total` prompt tokens, then (when `compacted`) an
/// automatic compaction and a second conversation recording `after`.
fn log(total: u64, compacted: Option<u64>) -> tempfile::NamedTempFile {
    let usage = |n: u64| serde_json::json!({"input_tokens": 10, "cache_read_input_tokens": n - 10, "output_tokens": 5});
    let mut lines = vec![
        serde_json::json!({"type": "user", "uuid": "u1", "parentUuid": null, "isSidechain": false, "version": "2.0.22",
            "message": {"role": "user", "content": "x".repeat(400)}}),
        serde_json::json!({"type": "assistant", "uuid": "a1", "parentUuid": "u1", "isSidechain": false, "version": "2.0.22",
            "message": {"id": "msg_first", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
                "content": [{"type": "text", "text": "ok"}], "usage": usage(total)}}),
    ];
    if let Some(after) = compacted {
        lines.extend([
            serde_json::json!({"type": "system", "subtype": "compact_boundary", "uuid": "b", "parentUuid": null,
                "logicalParentUuid": "a1", "isSidechain": false, "compactMetadata": {"trigger": "auto", "preTokens": total + 5}}),
            serde_json::json!({"type": "user", "uuid": "s1", "parentUuid": "b", "isSidechain": false, "isCompactSummary": true,
                "message": {"role": "user", "content": format!("{}{}", crate::zoo::claude_code::SUMMARY_OPEN, "y".repeat(800))}}),
            serde_json::json!({"type": "assistant", "uuid": "a2", "parentUuid": "s1", "isSidechain": false,
                "message": {"id": "msg_after", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
                    "content": [{"type": "text", "text": "go on"}], "usage": usage(after)}}),
        ]);
    }
    jsonl(&lines)
}

/// `lines` as a Claude Code log (JSON Lines) in a temporary file.
pub(crate) fn jsonl(lines: &[serde_json::Value]) -> tempfile::NamedTempFile {
    let mut f = tempfile::Builder::new()
        .suffix(".jsonl")
        .tempfile()
        .unwrap();
    let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    std::io::Write::write_all(&mut f, text.join("\n").as_bytes()).unwrap();
    f
}

fn envelope(f: &tempfile::NamedTempFile, arg: EnvelopeArg) -> LabResult<Envelope> {
    let session = import_file(f.path(), &ImportOptions::default()).unwrap();
    let log = RecordedLog::read(f.path(), session.format).unwrap();
    envelope_for(&session, log.as_ref(), arg, &Approx)
}

#[test]
fn the_argument_parses_and_refuses_what_is_not_a_size() {
    assert_eq!("auto".parse(), Ok(EnvelopeArg::Auto));
    assert_eq!("none".parse(), Ok(EnvelopeArg::None));
    assert_eq!("1200".parse(), Ok(EnvelopeArg::Tokens(1200)));
    assert!("-3"
        .parse::<EnvelopeArg>()
        .unwrap_err()
        .contains("token count"));
}

#[test]
fn recorded_usage_gives_the_prefix_per_conversation() {
    let f = log(5_000, Some(9_000));
    let session = import_file(f.path(), &ImportOptions::default()).unwrap();
    let l = RecordedLog::read(f.path(), session.format)
        .unwrap()
        .unwrap();
    assert_eq!(l.version.as_deref(), Some("2.0.22"));
    let first = Approx.count_messages(&l.requests[0].messages);
    let summary = Approx.count_messages(&l.requests[1].messages);
    let e = envelope_for(&session, Some(&l), EnvelopeArg::Auto, &Approx).unwrap();
    assert_eq!(e.basis, Basis::Recorded);
    assert_eq!(e.prefix.tokens, 5_000 - first);
    assert_eq!(e.prefix.after_compaction, vec![9_000 - summary]);
    assert_eq!(e.prefix.product_policy.as_deref(), Some("claude-code"));
    assert_eq!(e.prefix.after(1), 9_000 - summary);
    assert_eq!(e.prefix.after(2), 9_000 - summary, "the last one stays");
}

#[test]
fn usage_below_the_logged_messages_is_refused_at_its_line() {
    let err = envelope(&log(50, None), EnvelopeArg::Auto).unwrap_err();
    assert_eq!(err.exit_code(), 3);
    let text = err.to_string();
    assert!(text.contains(":2:"), "{text}");
    assert!(
        text.contains("inconsistent usage") && text.contains("--envelope none"),
        "{text}"
    );
}

#[test]
fn an_envelope_larger_than_the_first_request_is_refused_at_its_line() {
    let f = log(5_000, None);
    let err = envelope(&f, EnvelopeArg::Tokens(5_001)).unwrap_err();
    assert_eq!(err.exit_code(), 3);
    let text = err.to_string();
    assert!(
        text.contains(":2:") && text.contains("--envelope 5001"),
        "{text}"
    );
    let ok = envelope(&f, EnvelopeArg::Tokens(5_000)).unwrap();
    assert_eq!((ok.prefix.tokens, ok.basis), (5_000, Basis::Given));
    assert_eq!(envelope(&f, EnvelopeArg::None).unwrap().prefix.tokens, 0);
}

#[test]
fn without_usage_the_logged_system_prompt_or_the_product_default_is_used() {
    // A Claude Code log without usage: the dated default.
    let mut f = tempfile::Builder::new()
        .suffix(".jsonl")
        .tempfile()
        .unwrap();
    let line = serde_json::json!({"type": "user", "uuid": "u1", "parentUuid": null, "isSidechain": false,
        "message": {"role": "user", "content": "hi"}});
    std::io::Write::write_all(&mut f, line.to_string().as_bytes()).unwrap();
    let e = envelope(&f, EnvelopeArg::Auto).unwrap();
    assert_eq!(e.prefix.tokens, 20_858);
    assert!(
        matches!(&e.basis, Basis::ProductDefault { date, source, .. } if date == "2026-12-04" && source.contains("dmux"))
    );
    // An OpenAI-format log with its system prompt: that prompt, counted.
    let mut f = tempfile::Builder::new().suffix(".json").tempfile().unwrap();
    let msgs = serde_json::json!([
        {"role": "system", "content": "s".repeat(4_000)},
        {"role": "user", "content": "fix it"},
        {"role": "assistant", "content": "done"}
    ]);
    std::io::Write::write_all(&mut f, msgs.to_string().as_bytes()).unwrap();
    let e = envelope(&f, EnvelopeArg::Auto).unwrap();
    assert_eq!((e.prefix.tokens, e.basis), (1_000, Basis::LoggedSystem));
    assert_eq!(e.prefix.product_policy, None);
}

#[test]
fn notes_mark_the_size_as_an_estimate() {
    let note = EnvelopeNote {
        anchor: None,
        session: "s.jsonl".into(),
        tokens: 21_000,
        after_compaction: vec![44_000],
        after_compaction_source: None,
        unlogged_at_last: None,
        put_back: Default::default(),
        basis: Basis::Recorded,
    };
    assert_eq!(
        render_notes(std::slice::from_ref(&note)),
        "envelope of s.jsonl: 21000 tokens, after the product's compactions 44000 (estimate; recorded usage), sent before every request\n"
    );
    let note = EnvelopeNote {
        anchor: None,
        unlogged_at_last: Some(Unlogged {
            tokens: 8_000,
            of: 160_000,
        }),
        ..note
    };
    assert!(render_notes(std::slice::from_ref(&note)).ends_with(
        "sent before every request; at its last recorded request +8000 of 160000 tokens (+5.0 %) are in neither the log nor the estimate\n"
    ));
    let note = EnvelopeNote {
        anchor: None,
        put_back: crate::replay::input::unlogged::PutBack {
            attachments: 2,
            tokens: 9_500,
            shell_reminders: 0,
            resumes: 0,
        },
        ..note
    };
    assert!(render_notes(std::slice::from_ref(&note)).contains(
        "sent before every request; 2 attachments the log does not keep put back at the messages that carried them (9500 tokens, estimate from recorded usage); at its last"
    ));
    let note = EnvelopeNote {
        anchor: None,
        put_back: crate::replay::input::unlogged::PutBack {
            resumes: 3,
            ..note.put_back
        },
        ..note
    };
    assert!(render_notes(std::slice::from_ref(&note)).contains(
        "(9500 tokens, estimate from recorded usage); dropped again at 3 resumes (the product rebuilt its context from the log); at its last"
    ));
    // Predicted: what is put back is sized from the log's text, never
    // from recorded usage.
    let note = EnvelopeNote {
        anchor: Some(crate::replay::anchor::Anchor::None),
        ..note
    };
    let text = render_notes(&[note]);
    assert!(
        text.contains("(9500 tokens, @-mentioned files, sized by mechanism from the log's text)"),
        "{text}"
    );
    assert!(!text.contains("estimate from recorded usage"), "{text}");
}

#[test]
fn each_recorded_reply_anchors_the_products_count() {
    let f = log(5_000, Some(9_000));
    let session = import_file(f.path(), &ImportOptions::default()).unwrap();
    let l = RecordedLog::read(f.path(), session.format)
        .unwrap()
        .unwrap();
    let anchors = anchors(&session, &l, &Approx);
    // Replayed without the summary: prompt (0), reply (1), reply (2).
    let count = |r: std::ops::RangeInclusive<usize>| Approx.count_messages(&session.main[r]);
    assert_eq!(
        anchors.get(&1),
        Some(&Anchor {
            recorded: 5_005,
            logged: count(0..=1)
        })
    );
    // After the compaction the product's logged history starts at its summary.
    assert_eq!(session.main.len(), 4);
    assert_eq!(
        anchors.get(&2),
        Some(&Anchor {
            recorded: 9_005,
            logged: count(2..=3)
        })
    );
    assert_eq!(anchors.len(), 2);
    // Its summary, unframed, is the recorded answer the product's policy gets.
    assert_eq!(product_summaries(&session), vec!["y".repeat(800)]);
}

/// A mini-swe-agent trajectory whose first reply recorded `prompt` tokens.
fn trajectory(prompt: u64) -> tempfile::NamedTempFile {
    let doc = serde_json::json!({
        "trajectory_format": "mini-swe-agent-1", "info": {},
        "messages": [
            {"role": "system", "content": "s".repeat(400)},
            {"role": "user", "content": "t".repeat(800)},
            {"role": "assistant", "content": "THOUGHT: go.\n\n```bash\nls\n```",
             "extra": {"response": {"id": "gen-1", "model": "google/gemini-3-pro-preview",
                "usage": {"prompt_tokens": prompt, "completion_tokens": 9}}}},
            {"role": "user", "content": "<returncode>0</returncode>\n<output>\na\n</output>"}
        ]
    });
    let mut f = tempfile::Builder::new()
        .suffix(".traj.json")
        .tempfile()
        .unwrap();
    std::io::Write::write_all(&mut f, doc.to_string().as_bytes()).unwrap();
    f
}

#[test]
fn a_trajectorys_first_recorded_reply_sizes_its_envelope() {
    let f = trajectory(1_000);
    let session = import_file(f.path(), &ImportOptions::default()).unwrap();
    let e = envelope_for(&session, None, EnvelopeArg::Auto, &Approx).unwrap();
    assert_eq!(e.basis, Basis::Recorded);
    // Recorded prompt less the task, counted: the system prompt and the rest.
    let task = Approx.count_messages(&session.main[..1]);
    assert_eq!(e.prefix.tokens, 1_000 - task);
    // Fewer recorded tokens than the logged messages: the logged system prompt.
    let f = trajectory(10);
    let session = import_file(f.path(), &ImportOptions::default()).unwrap();
    let e = envelope_for(&session, None, EnvelopeArg::Auto, &Approx).unwrap();
    assert_eq!(e.basis, Basis::LoggedSystem);
}

/// At the last recorded reply, what the log does not show is the recorded
/// count less the conversation's envelope and the logged history: here
/// only the reply's output, which the estimate of its text undercounts.
#[test]
fn the_unlogged_remainder_is_measured_at_the_last_recorded_reply() {
    let f = log(5_000, Some(9_000));
    let e = envelope(&f, EnvelopeArg::Auto).unwrap();
    let session = import_file(f.path(), &ImportOptions::default()).unwrap();
    let last = Approx.count_message(&session.main[3]) as i64;
    let u = unlogged_at_last(&e.prefix).unwrap();
    assert_eq!(u.of, 9_005);
    // 9,005 - (summary + reply) - (9,000 - summary) = 5 - reply.
    assert_eq!(u.tokens, 5 - last);
    // No recorded usage, no measure.
    let plain = Prefix {
        tokens: 100,
        ..Prefix::default()
    };
    assert_eq!(unlogged_at_last(&plain), None);
}

/// Under `--anchor none`, what survives a compaction: the first request's
/// prefix (system, tools, the user context sent with every call), unless
/// the first message @-mentions a file, whose content that request also
/// carried; then Claude Code's system and tools from the envelope table,
/// at the release nearest the log's, never more than the first prefix.
#[test]
fn a_predicted_compaction_keeps_the_first_prefix_unless_files_were_mentioned() {
    let predicted = |f: &tempfile::NamedTempFile| {
        let session = import_file(f.path(), &ImportOptions::default()).unwrap();
        let l = RecordedLog::read(f.path(), session.format)
            .unwrap()
            .unwrap();
        let first = Approx.count_messages(&l.requests[0].messages);
        let anchored = l.anchored(crate::replay::input::anchor::Anchor::None);
        let e = envelope_for(&session, Some(&anchored), EnvelopeArg::Auto, &Approx).unwrap();
        (e, first)
    };
    let (e, first) = predicted(&log(60_000, Some(9_000)));
    assert_eq!(e.prefix.after_compaction, vec![60_000 - first]);
    assert!(
        e.after_source
            .as_deref()
            .unwrap()
            .contains("first request's prefix"),
        "{e:?}"
    );
    let with_mention = |total: u64| {
        let usage = serde_json::json!({"input_tokens": 10, "cache_read_input_tokens": total - 10, "output_tokens": 5});
        jsonl(&[
            serde_json::json!({"type": "user", "uuid": "u1", "parentUuid": null, "isSidechain": false, "version": "2.0.5",
                "message": {"role": "user", "content": "split this\n@src/a.rs and @src/b/ please"}}),
            serde_json::json!({"type": "assistant", "uuid": "a1", "parentUuid": "u1", "isSidechain": false, "version": "2.0.5",
                "message": {"id": "msg_first", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
                    "content": [{"type": "text", "text": "ok"}], "usage": usage}}),
        ])
    };
    let table = crate::replay::input::envelope_table::nearest("claude-code", Some("2.0.5"))
        .unwrap()
        .claude_tokens
        .unwrap();
    let (e, _) = predicted(&with_mention(160_000));
    assert_eq!(e.prefix.after_compaction, vec![table]);
    let source = e.after_source.unwrap();
    assert!(
        source.contains("envelope_table.json")
            && source.contains("2.0.5")
            && source.contains("@-mentions"),
        "{source}"
    );
    // Never more than the first request's own prefix.
    let (e, first) = predicted(&with_mention(20_000));
    assert_eq!(e.prefix.after_compaction, vec![20_000 - first]);
    assert!(
        e.after_source
            .as_deref()
            .unwrap()
            .contains("no larger than"),
        "{e:?}"
    );
    // An address or a decorator is not a mention: `a@b` has no space before.
    let m = |t: &str| crate::message::Message::user_text(t.to_string());
    assert!(!mentions_a_file(&m("mail me at a@b.org")));
    assert!(mentions_a_file(&m("@README.md first")));
    assert!(!mentions_a_file(&m("an @ alone")));
}

#[test]
fn every_registered_product_port_is_a_policy_of_the_zoo() {
    let names = crate::zoo::list::names();
    let mut named = 0;
    for &f in crate::import::format_list::ALL {
        if let Some(p) = product_policy(f) {
            assert!(names.contains(&p), "{}: no policy {p}", f.name());
            named += 1;
        }
    }
    // The products whose logs compact and whose port the zoo has.
    assert!(named >= 9, "{named}");
    assert_eq!(
        product_policy(TranscriptFormat::ClaudeJsonl),
        Some(crate::zoo::claude_code::NAME)
    );
    assert_eq!(
        product_policy(TranscriptFormat::Pi),
        Some(crate::zoo::pi::NAME)
    );
}
