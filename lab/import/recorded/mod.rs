//! The recorded wing: what is read from a product's own log beyond its
//! messages: a Claude Code log read whole (`log_records`), by the
//! importer's own readers and damage rules, and what its records say beside
//! their usage (`log_facts`). A replay reads such a log once
//! (`import_file_sessions_with_log`): the importer keeps the text the
//! recorded log is then built from.
//!
//! The rest stays where the crates' layering allows it. The recorded usage
//! is `tokens::recorded`: it counts with the Claude estimator and the
//! estimator's fit reads it, so under this module it would close a circle
//! between `import` and `tokens`; the content a log leaves out
//! (`replay::input::unlogged`) counts with a token counter too, the same
//! circle. What else a replay reads of a log (the envelope, subagents as
//! sent, the product's compactions and counts) needs the policy engine's
//! types and the zoo's ports, crates above this one.

pub mod log_facts;
pub mod log_records;

use crate::format_list::TranscriptFormat;

/// Whether a log of `format` records what a replay reads beside its
/// messages (usage, resumes, reply ids and models): Claude Code's, as
/// JSON Lines or a `chat.json` array.
pub fn records_usage(format: TranscriptFormat) -> bool {
    matches!(
        format,
        TranscriptFormat::ClaudeJsonl | TranscriptFormat::ChatJson
    )
}
