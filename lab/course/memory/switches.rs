//! The memory half's switches and constants: one plain struct each.
//!
//! Every safeguard the course's `s09_memory/code.py` has is a switch whose
//! default is the course's intact behaviour; experiments flip exactly one.

use serde::{Deserialize, Serialize};

/// The four memory types of the course (`MEMORY_TYPES`).
pub const MEMORY_TYPES: [&str; 4] = ["user", "feedback", "project", "reference"];

/// The course's `TEMPORARY_MEMORY_MARKERS`: a candidate whose normalised
/// name, description or body contains one of these is not stored.
/// English, Chinese and Japanese, in the course's order.
pub const TEMPORARY_MARKERS: [&str; 19] = [
    "this session",
    "current session",
    "this turn",
    "current turn",
    "this task",
    "current task",
    "for now",
    "just this time",
    "today only",
    "本次会话",
    "当前会话",
    "这一轮",
    "当前轮次",
    "本次任务",
    "当前任务",
    "暂时",
    "今回だけ",
    "このセッション",
    "現在のタスク",
];

/// Safeguards of the memory subsystem, each individually switchable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemorySwitches {
    /// Refuse hostile memory names and paths resolving outside the store.
    pub path_guard: bool,
    /// Rebuild `MEMORY.md` from all files after every write.
    pub rebuild_index: bool,
    /// Reject candidates containing a temporary marker word (zh/en/ja).
    pub temp_word_filter: bool,
    /// Reject candidates duplicating an existing or earlier-in-batch record
    /// by slug, description or body.
    pub dedup: bool,
    /// On a consolidation failure, restore the snapshot before re-raising.
    pub rollback: bool,
    /// Fall back to keyword selection when the selector answers unparsable text.
    pub fallback_on_garbage: bool,
    /// Skip consolidation before the model call when its input exceeds the cap.
    pub reverse_gate: bool,
    /// Give the main model a memory write/delete tool (bypasses every gate).
    pub model_has_write_tool: bool,
    /// Fix for the reverse gate: consolidate an oversized store in chunks
    /// that each fit the input cap, then rewrite once.
    pub chunked_consolidation: bool,
    /// Fix for the reverse gate's silence: a skipped consolidation is reported
    /// as a warning instead of one quiet log line.
    pub warn_on_skip: bool,
    /// Make consolidation's snapshot durable on disk (a journal) before the
    /// first delete, and recover from it when the store is next opened.
    /// `false` is the course: the snapshot lives only in process memory.
    pub crash_journal: bool,
}

impl Default for MemorySwitches {
    /// The course's intact behaviour: `path_guard = true`, `rebuild_index = true`,
    /// `temp_word_filter = true`, `dedup = true`, `rollback = true`,
    /// `fallback_on_garbage = false` (garbage selector output means "no relevant
    /// memory"), `reverse_gate = true` (oversized stores are skipped),
    /// `model_has_write_tool = false` (write authority stays with the harness),
    /// both fixes off: `chunked_consolidation = false`, `warn_on_skip = false`,
    /// and `crash_journal = true` (a deliberate difference: the course's
    /// in-memory snapshot loses memories when the process dies mid-pass).
    fn default() -> Self {
        MemorySwitches {
            path_guard: true,
            rebuild_index: true,
            temp_word_filter: true,
            dedup: true,
            rollback: true,
            fallback_on_garbage: false,
            reverse_gate: true,
            model_has_write_tool: false,
            chunked_consolidation: false,
            warn_on_skip: false,
            crash_journal: true,
        }
    }
}

/// Numeric limits of the memory subsystem (all lengths in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryConstants {
    /// Total characters of recalled records per turn (`RECALL_CHAR_LIMIT`).
    pub recall_char_limit: usize,
    /// Record count at which consolidation becomes due (`CONSOLIDATE_THRESHOLD`).
    pub consolidate_threshold: usize,
    /// Largest consolidation catalog sent in one pass (`CONSOLIDATE_INPUT_CHAR_LIMIT`).
    pub consolidate_input_char_limit: usize,
    /// Cap on selected records (`select_relevant_memories(max_items=5)`).
    pub select_max_items: usize,
    /// Recent user turns forming the selection query (`recent_user_text(max_turns=3)`).
    pub query_max_turns: usize,
    /// Character cap on the selection query (`[:4000]`).
    pub query_char_limit: usize,
    /// Character cap on the catalog shown to the selector (`catalog[:12000]`).
    pub selector_catalog_char_limit: usize,
    /// Recent messages the extractor sees (`dialogue_text(max_messages=12)`).
    pub extract_max_messages: usize,
    /// Character cap on the extractor's dialogue input (`[:8000]`).
    pub extract_char_limit: usize,
    /// Character cap on the existing catalog shown to the extractor (`existing[:6000]`).
    pub existing_catalog_char_limit: usize,
    /// "Keep at most 30 records" in the consolidation prompt: a soft rule the
    /// course does not enforce; kept here for reporting only.
    pub consolidate_keep_at_most: usize,
}

impl Default for MemoryConstants {
    /// The course's values: `recall_char_limit = 20000`, `consolidate_threshold = 10`,
    /// `consolidate_input_char_limit = 20000`, `select_max_items = 5`,
    /// `query_max_turns = 3`, `query_char_limit = 4000`,
    /// `selector_catalog_char_limit = 12000`, `extract_max_messages = 12`,
    /// `extract_char_limit = 8000`, `existing_catalog_char_limit = 6000`,
    /// `consolidate_keep_at_most = 30`.
    fn default() -> Self {
        MemoryConstants {
            recall_char_limit: 20000,
            consolidate_threshold: 10,
            consolidate_input_char_limit: 20000,
            select_max_items: 5,
            query_max_turns: 3,
            query_char_limit: 4000,
            selector_catalog_char_limit: 12000,
            extract_max_messages: 12,
            extract_char_limit: 8000,
            existing_catalog_char_limit: 6000,
            consolidate_keep_at_most: 30,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_json_gives_course_defaults() {
        let s: MemorySwitches = serde_json::from_str("{}").unwrap();
        assert_eq!(s, MemorySwitches::default());
        let c: MemoryConstants = serde_json::from_str("{}").unwrap();
        assert_eq!(c.consolidate_threshold, 10);
        assert_eq!(c.consolidate_input_char_limit, 20000);
    }

    #[test]
    fn unknown_switch_is_rejected() {
        let e = serde_json::from_str::<MemorySwitches>(r#"{"path_gaurd": false}"#).unwrap_err();
        assert!(e.to_string().contains("unknown field"), "{e}");
    }
}
