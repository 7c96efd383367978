//! aider's `.aider.chat.history.md`: sessions, messages and the product's
//! own `> Tokens:` series, pinned against a count written here; each damage
//! class with its position.

use crate::common;
use common::transcripts;

use std::path::Path;

use crate::common::{LENIENT, STRICT};
use ctxlab::import::{
    import_file_sessions, import_reader_sessions, DiagnosticKind, ImportOptions, ImportedSession,
    TranscriptFormat,
};
use ctxlab::message::Role;

/// Per session: (user messages, assistant messages, `> Tokens:` lines),
/// counted with a line classifier of its own: `#### ` user, `> ` tool,
/// `# ` skipped, else reply text; a message is a run of one class holding
/// a non-blank line.
fn count(text: &str) -> Vec<(usize, usize, usize)> {
    let mut out = Vec::new();
    for chunk in text.split("# aider chat started at ").skip(1) {
        let (mut users, mut replies, mut tokens) = (0, 0, 0);
        let mut run = ' ';
        let mut run_has_text = false;
        let close = |run: char, has: bool, users: &mut usize, replies: &mut usize| {
            if has && run == 'U' {
                *users += 1;
            }
            if has && run == 'A' {
                *replies += 1;
            }
        };
        for line in chunk.split_inclusive('\n').skip(1) {
            let class = if line.starts_with("# ") {
                continue;
            } else if line.starts_with("#### ") {
                'U'
            } else if line.starts_with("> ") {
                tokens += usize::from(line.starts_with("> Tokens: "));
                'T'
            } else {
                'A'
            };
            // A tool line ends both kinds of run; a new class ends the old run.
            if class != run || class == 'T' {
                close(run, run_has_text, &mut users, &mut replies);
                run = class;
                run_has_text = false;
            }
            let body = if class == 'U' { &line[5..] } else { line };
            run_has_text |= !body.trim().is_empty();
        }
        close(run, run_has_text, &mut users, &mut replies);
        out.push((users, replies, tokens));
    }
    out
}

fn counted(sessions: &[ImportedSession]) -> Vec<(usize, usize, usize)> {
    sessions
        .iter()
        .map(|s| {
            let by = |r: Role| s.main.iter().filter(|m| m.role == r).count();
            (by(Role::User), by(Role::Assistant), s.recorded_tokens.len())
        })
        .collect()
}

/// A log as aider's `InputOutput` writes it: two sessions.
fn log() -> String {
    [
        "\n# aider chat started at 2025-01-02 03:04:05\n\n",
        "> Aider v0.85.1  \n",
        "> Main model: gpt-4o with diff edit format  \n",
        "\n#### fix the bug  \n#### in calc.py  \n",
        "\nI will edit calc.py:\n\n```python\n# a comment inside code\nx = 1\n```\n\n",
        "> Applied edit to calc.py  \n",
        "> Tokens: 3.2k sent, 2.0k cache write, 21 received. Cost: $0.01 message, $0.01 session.  \n",
        "\n#### Add file to the chat? (Y)es/(N)o/(A)ll/(S)kip all/(D)on't ask again [Yes]: skip  \n",
        "\n#### and the tests  \n",
        "\nDone.\n\n",
        "> Tokens: 16k sent, 203 received. Cost: $0.03 message, $0.04 session.  \n",
        "\n# aider chat started at 2025-01-03 00:00:00\n\n",
        "> Tokens: 850 sent, 9 received.  \n",
        "\n#### /exit  \n",
    ]
    .concat()
}

fn import(text: &str, options: &ImportOptions) -> ctxlab::error::LabResult<Vec<ImportedSession>> {
    import_reader_sessions(
        text.as_bytes(),
        Path::new("h.md"),
        TranscriptFormat::Aider,
        options,
    )
}

#[test]
fn a_generated_log_reads_as_aiders_own_reader_reads_it() {
    let text = log();
    let sessions = import(&text, &STRICT).unwrap();
    assert_eq!(counted(&sessions), count(&text));
    assert_eq!(count(&text), vec![(3, 2, 2), (1, 0, 1)]);
    let s = &sessions[0];
    assert_eq!(s.label, "h.md#0 started 2025-01-02 03:04:05");
    // Upstream keeps each line as written after its `#### ` prefix.
    assert_eq!(s.main[0].text(), "fix the bug  \nin calc.py  \n");
    // A `# ` line inside a reply is dropped, as upstream drops it.
    assert!(!s.main[1].text().contains("a comment inside code"));
    assert!(s.main[1].text().contains("x = 1"));
    let t = &s.recorded_tokens;
    assert_eq!(
        (t[0].sent, t[0].sent_min, t[0].sent_max, t[0].received),
        (3200, 3150, 3249, 21)
    );
    assert_eq!(
        (t[1].sent, t[1].sent_min, t[1].sent_max),
        (16_000, 15_500, 16_499)
    );
    // The call's reply is the last message before its Tokens line.
    assert_eq!(t[0].after_messages, 2);
    assert_eq!(s.main[t[0].after_messages - 1].role, Role::Assistant);
    assert_eq!(t[0].line, 18);
    assert_eq!(sessions[1].recorded_tokens[0].sent, 850);
    assert!(sessions.iter().all(|s| s.diagnostics.is_empty()));
}

#[test]
fn the_format_is_detected_from_content_and_name() {
    let dir = tempfile::tempdir().unwrap();
    let p = common::write(dir.path(), "notes.md", &log());
    let sessions = import_file_sessions(&p, &LENIENT).unwrap();
    assert_eq!(sessions[0].format, TranscriptFormat::Aider);
    assert_eq!(
        TranscriptFormat::from_name("aider").unwrap(),
        TranscriptFormat::Aider
    );
    // Content that opens with something else: the name decides.
    let text = format!("#### hello  \n{}", log());
    let p = common::write(dir.path(), "x.aider.chat.history.md", &text);
    assert_eq!(
        import_file_sessions(&p, &LENIENT).unwrap()[0].format,
        TranscriptFormat::Aider
    );
}

#[test]
fn a_cut_last_line_is_kept_and_reported() {
    let text = log();
    let cut = &text[..text.len() - 3];
    let sessions = import(cut, &LENIENT).unwrap();
    let d = sessions[1].diagnostics_of(DiagnosticKind::Truncated);
    assert_eq!(d.len(), 1);
    let lines = cut.lines().count();
    assert_eq!(
        (d[0].line, d[0].column),
        (lines, cut.lines().last().unwrap().len() + 1)
    );
    let e = import(cut, &STRICT).unwrap_err().to_string();
    assert!(
        e.contains(&format!("h.md:{lines}:")) && e.contains("truncated"),
        "{e}"
    );
}

#[test]
fn an_unreadable_tokens_line_is_reported_not_recorded() {
    let text = log().replace("16k sent", "lots sent");
    let sessions = import(&text, &LENIENT).unwrap();
    assert_eq!(sessions[0].recorded_tokens.len(), 1);
    let d = sessions[0].diagnostics_of(DiagnosticKind::InvalidRecord);
    assert_eq!(d.len(), 1);
    let line = text.lines().position(|l| l.contains("lots sent")).unwrap() + 1;
    assert_eq!((d[0].line, d[0].column), (line, 3));
    assert!(import(&text, &STRICT).is_err());
}

#[test]
fn lines_outside_any_session_are_reported_and_kept() {
    let text = format!("#### hello  \n\nhi\n{}", log());
    let sessions = import(&text, &LENIENT).unwrap();
    assert_eq!(sessions.len(), 3);
    assert!(sessions[0].label.ends_with("(before the first header)"));
    assert_eq!(sessions[0].main.len(), 2);
    let d = sessions[0].diagnostics_of(DiagnosticKind::InvalidRecord);
    assert_eq!((d[0].line, d[0].column), (1, 1));
    let e = import(&text, &STRICT).unwrap_err().to_string();
    assert!(e.contains("h.md:1:1"), "{e}");
    // Not UTF-8: an input error at its line and column.
    let mut bytes = log().into_bytes();
    bytes.splice(60..60, [b'a', 0xff]);
    let e = import_reader_sessions(
        &bytes[..],
        Path::new("h.md"),
        TranscriptFormat::Aider,
        &LENIENT,
    )
    .unwrap_err();
    assert_eq!(e.exit_code(), 3);
    assert!(e.to_string().contains("not UTF-8"), "{e}");
}

#[test]
fn the_shared_aider_log_is_pinned() {
    let Some(dir) = transcripts() else { return };
    let path = dir.join("aider/afi-core__aider.chat.history@59f2649.md");
    if !path.is_file() {
        eprintln!("SKIP: {} not found", path.display());
        return;
    }
    let text = std::fs::read_to_string(&path).unwrap();
    let sessions = import_file_sessions(&path, &ImportOptions::default()).unwrap();
    let expected = count(&text);
    assert_eq!(counted(&sessions), expected);
    // The transcripts README: 9 sessions, 39 Tokens lines, up to 18k sent.
    assert_eq!(expected.len(), 9);
    assert_eq!(expected.iter().map(|c| c.2).sum::<usize>(), 39);
    let sent: Vec<u64> = sessions
        .iter()
        .flat_map(|s| s.recorded_tokens.iter().map(|t| t.sent))
        .collect();
    assert_eq!(sent.iter().max(), Some(&18_000));
    assert_eq!(sent[0], 3_200);
    assert!(sessions.iter().all(|s| s.diagnostics.is_empty()));
    let messages: usize = sessions.iter().map(|s| s.main.len()).sum();
    assert_eq!(messages, expected.iter().map(|c| c.0 + c.1).sum::<usize>());
    assert_eq!(messages, 91);
}
