//! Importers against the real transcripts in `../shared/transcripts/`.
//!
//! The files hold real usernames and paths, so they are read in place and only
//! counts are asserted or snapshotted. Without the directory every test prints
//! a skip message and passes.

use crate::common;
use common::{snapshot_name, transcripts};

use std::path::Path;

use ctxlab::import::{
    import_file, unpaired_ids, DiagnosticKind, ImportOptions, ImportedSession, TranscriptFormat,
};

/// (file, format, message records, tool calls, largest tool_result) from the README table.
const TABLE: &[(&str, TranscriptFormat, usize, usize, usize)] = &[
    (
        "claude_code/session-share__general-tool-calls.jsonl",
        TranscriptFormat::ClaudeJsonl,
        404,
        110,
        6_950,
    ),
    (
        "claude_code/claude-code-viewer__fe5e1c67.jsonl",
        TranscriptFormat::ClaudeJsonl,
        437,
        167,
        26_746,
    ),
    (
        "claude_code/dmux__chat@eef6c28.json",
        TranscriptFormat::ChatJson,
        144,
        50,
        11_766,
    ),
    (
        "claude_code/templar__chat@a46211b.json",
        TranscriptFormat::ChatJson,
        583,
        206,
        51_383,
    ),
    (
        "claude_code/attio-mcp-server__chat@816b68a.json",
        TranscriptFormat::ChatJson,
        887,
        312,
        40_463,
    ),
    (
        "openai_format/swe-agent__function-calling-demo__marshmallow-1867.traj",
        TranscriptFormat::OpenAi,
        28,
        13,
        6_277,
    ),
];

fn import(dir: &Path, file: &str) -> ImportedSession {
    import_file(&dir.join(file), &ImportOptions::default())
        .unwrap_or_else(|e| panic!("{file}: {e}"))
}

#[test]
fn every_file_imports_with_the_readme_counts() {
    let Some(dir) = transcripts() else { return };
    for &(file, format, messages, tool_calls, largest) in TABLE {
        let s = import(&dir, file);
        let sum = s.summary();
        eprintln!("{file}: {}", serde_json::to_string(&sum).unwrap());
        assert_eq!(s.format, format, "{file}");
        assert_eq!(s.stats.message_records, messages, "{file}: message records");
        assert_eq!(s.stats.tool_uses, tool_calls, "{file}: tool calls");
        // The README measures array-shaped results as their JSON; the lab
        // measures flattened text, which is never longer.
        if file.contains("attio") {
            assert!(
                s.stats.largest_tool_result_chars <= largest,
                "{file}: largest result"
            );
        } else {
            assert_eq!(
                s.stats.largest_tool_result_chars, largest,
                "{file}: largest result"
            );
        }
        assert!(!s.main.is_empty(), "{file}: main is empty");
        assert!(sum.main_assistant_messages > 0, "{file}");
        assert_eq!(s.main.len(), s.main_lines.len(), "{file}");
    }
}

#[test]
fn every_tool_use_is_answered_after_repair() {
    let Some(dir) = transcripts() else { return };
    for &(file, ..) in TABLE {
        let s = import(&dir, file);
        assert_eq!(unpaired_ids(&s.main), Vec::<String>::new(), "{file}: main");
        for (k, side) in s.sidechains.iter().chain(&s.detached).enumerate() {
            assert_eq!(
                unpaired_ids(side),
                Vec::<String>::new(),
                "{file}: chain {k}"
            );
        }
    }
}

#[test]
fn the_one_missing_result_is_repaired_and_reported() {
    let Some(dir) = transcripts() else { return };
    let s = import(&dir, TABLE[0].0);
    assert_eq!(s.stats.tool_uses - s.stats.tool_results, 1);
    let dangling = s.diagnostics_of(DiagnosticKind::DanglingToolUse);
    assert_eq!(dangling.len(), 1, "{:?}", s.diagnostics);
    assert!(
        dangling[0].line > 2,
        "a real line number: {:?}",
        dangling[0]
    );
    assert_eq!(s.stats.comment_lines, 2);
}

#[test]
fn templar_has_its_real_compaction_detected() {
    let Some(dir) = transcripts() else { return };
    let s = import(&dir, TABLE[3].0);
    assert_eq!(s.real_compactions.len(), 1, "{:?}", s.real_compactions);
    let at = s.real_compactions[0];
    assert!(at > 0 && at < s.main.len(), "compaction inside main: {at}");
    // Pre-compaction history is part of main: the summary is not its first message.
    assert_eq!(s.main[at].role, ctxlab::message::Role::User);
    for &(file, ..) in TABLE.iter().filter(|t| t.0 != TABLE[3].0) {
        assert!(import(&dir, file).real_compactions.is_empty(), "{file}");
    }
}

#[test]
fn strict_mode_refuses_the_damaged_file_only() {
    let Some(dir) = transcripts() else { return };
    let strict = ImportOptions {
        strict: true,
        format: None,
    };
    for &(file, ..) in TABLE {
        let r = import_file(&dir.join(file), &strict);
        if file == TABLE[0].0 {
            let e = r.expect_err("the missing result is damage");
            assert!(e.to_string().contains("dangling_tool_use"), "{e}");
            assert!(
                !e.to_string().contains("synthesized \"["),
                "nothing was repaired: {e}"
            );
        } else {
            r.unwrap_or_else(|e| panic!("{file}: {e}"));
        }
    }
}

#[test]
fn import_summaries_snapshot() {
    let Some(dir) = transcripts() else { return };
    for &(file, ..) in TABLE {
        let s = import(&dir, file);
        insta::assert_json_snapshot!(snapshot_name("import", file), s.summary());
    }
}

/// Snapshots must hold counts only: every string in a summary is a format
/// name, a record type or a diagnostic kind, never transcript text.
#[test]
fn summaries_hold_no_transcript_strings() {
    let Some(dir) = transcripts() else { return };
    fn strings(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::String(s) => out.push(s.clone()),
            serde_json::Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
            serde_json::Value::Object(m) => m.iter().for_each(|(k, x)| {
                out.push(k.clone());
                strings(x, out)
            }),
            _ => {}
        }
    }
    for &(file, ..) in TABLE {
        let v = serde_json::to_value(import(&dir, file).summary()).unwrap();
        let mut all = Vec::new();
        strings(&v, &mut all);
        for s in all {
            assert!(
                s.len() <= 32
                    && s.chars()
                        .all(|c| c.is_ascii_lowercase() || "_-:()".contains(c)),
                "{file}: unexpected string {s:?} in a summary"
            );
        }
    }
}
