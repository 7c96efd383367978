//! Gemini CLI saved chats (`contents` histories): the fixture written to
//! upstream's shape (`tests/import/fixtures/gemini_contents/README.md`)
//! counted by hand; the compression summary a real compaction, the masked
//! response the product's masking; calls without ids paired by name; a
//! role Gemini never writes reported at its line.

use std::path::{Path, PathBuf};

use crate::common::{LENIENT, STRICT};

use ctxlab::import::artefacts::product_artefacts;
use ctxlab::import::{
    import_file, import_reader, opens_product_compaction, unpaired_ids, DiagnosticKind,
    TranscriptFormat,
};
use ctxlab::message::{Block, Role};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/import/fixtures/gemini_contents")
        .join(name)
}

#[test]
fn a_saved_chat_is_a_gemini_session_with_its_calls_paired() {
    let s = import_file(&fixture("checkpoint-demo.json"), &STRICT).unwrap();
    assert_eq!(s.format, TranscriptFormat::GeminiContents);
    let sum = s.summary();
    // Ten contents, none skipped; before this importer the file was read as
    // Anthropic messages with an "unknown role" warning for every model turn.
    assert_eq!(sum.main_messages, 10);
    assert_eq!(sum.main_assistant_messages, 5);
    assert_eq!((sum.main_tool_uses, sum.main_tool_results), (3, 3));
    assert_eq!(sum.main_thinking_blocks, 1);
    assert!(s.diagnostics.is_empty(), "{:?}", s.diagnostics);
    assert!(unpaired_ids(&s.main).is_empty());
    // The failed edit's result is its error.
    let last_result = s.main[8].blocks();
    assert!(
        matches!(last_result, [Block::ToolResult { content, .. }] if content == "old_string not found")
    );
}

#[test]
fn the_snapshot_is_the_products_compaction_and_the_mask_its_masking() {
    let s = import_file(&fixture("checkpoint-demo.json"), &LENIENT).unwrap();
    assert_eq!(s.real_compactions, vec![2]);
    assert!(opens_product_compaction(&s, 2));
    // The summary and the model's acknowledgement are the product's.
    assert_eq!(product_artefacts(&s), vec![2, 3]);
    assert_eq!(s.product_masked, vec![6]);
    assert!(s.main[6].is_tool_result());
    let masked = s.main[6].blocks().iter().any(|b| {
        matches!(b, Block::ToolResult { content, .. }
            if content.starts_with(ctxlab::import::gemini_contents::MASKED_TAG))
    });
    assert!(masked);
    assert_eq!(s.main[5].role, Role::Assistant);
}

#[test]
fn an_older_bare_history_pairs_calls_without_ids_by_name() {
    let s = import_file(&fixture("bare-history.json"), &STRICT).unwrap();
    assert_eq!(s.format, TranscriptFormat::GeminiContents);
    let calls: Vec<(String, String)> = s.main[1]
        .blocks()
        .iter()
        .filter_map(|b| match b {
            Block::ToolUse { id, name, .. } => Some((name.clone(), id.clone())),
            _ => None,
        })
        .collect();
    let results: Vec<(String, String)> = s.main[2]
        .blocks()
        .iter()
        .filter_map(|b| match b {
            Block::ToolResult {
                tool_use_id,
                content,
            } => Some((tool_use_id.clone(), content.clone())),
            _ => None,
        })
        .collect();
    // read_file answered first: its result goes to the second call.
    assert_eq!(results[0], (calls[1].1.clone(), "A".to_string()));
    assert_eq!(results[1], (calls[0].1.clone(), "a.txt".to_string()));
    assert!(unpaired_ids(&s.main).is_empty());
}

#[test]
fn a_role_gemini_never_writes_is_reported_at_its_line() {
    let text = "[\n{\"role\": \"user\", \"parts\": [{\"text\": \"hi\"}]},\n{\"role\": \"function\", \"parts\": [{\"text\": \"x\"}]},\n{\"role\": \"model\", \"parts\": [{\"text\": \"ok\"}]}\n]\n";
    let s = import_reader(
        text.as_bytes(),
        Path::new("chat.json"),
        TranscriptFormat::GeminiContents,
        &LENIENT,
    )
    .unwrap();
    assert_eq!(s.main.len(), 2);
    let d = s.diagnostics_of(DiagnosticKind::UnknownRole);
    assert_eq!((d.len(), d[0].line), (1, 3));
    let e = import_reader(
        text.as_bytes(),
        Path::new("chat.json"),
        TranscriptFormat::GeminiContents,
        &STRICT,
    )
    .unwrap_err();
    assert_eq!(e.exit_code(), 3);
    assert!(e.to_string().contains("chat.json:3:1"), "{e}");
}
