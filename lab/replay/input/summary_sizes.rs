//! The size of a Claude Code compaction's summary, predicted from other
//! sessions (`summary_sizes.json`): under `--anchor none` the product's
//! port does not read the summary the product's model wrote in the log it
//! replays, only how long the summaries of the other shared logs were.
//!
//! The product asks its model for a detailed summary in fixed sections and
//! caps the call's output at 20,000 tokens (`max_output_tokens`, with its
//! source in the file); within that cap the length is the model's choice,
//! so the prediction is the median length of the recorded summaries of the
//! same model in *other* sessions (leave-one-session-out: a log is never
//! its own evidence), or of every model when no other session used it.
//! Its words are unknown: the summary is neutral prose of that many
//! characters, counted by the run's counter like any text.

use serde::Deserialize;

/// One recorded summary.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedSummary {
    /// The shared log's file name.
    pub session: String,
    /// The model of its main chain.
    pub model: String,
    /// The Claude Code release that wrote it.
    pub release: String,
    /// Characters of the summary (Unicode scalar values).
    pub chars: usize,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    #[allow(dead_code)]
    read: String,
    max_output_tokens: usize,
    #[allow(dead_code)]
    max_output_source: String,
    summaries: Vec<RecordedSummary>,
}

const TABLE_JSON: &str = include_str!("summary_sizes.json");

fn table() -> Table {
    // The file is part of the build and tested; a malformed one cannot ship.
    serde_json::from_str(TABLE_JSON).expect("summary_sizes.json parses")
}

/// Every recorded summary in the table, in file order.
pub fn recorded() -> Vec<RecordedSummary> {
    table().summaries
}

/// The compaction call's output cap, in tokens.
pub fn max_output_tokens() -> usize {
    table().max_output_tokens
}

/// The predicted length in characters of a summary written by `model` in
/// the log named `session`: the median of the other sessions' summaries by
/// the same model, else of all other sessions' (the lower middle of an
/// even count); `None` when no other session has one.
pub fn predicted_chars(session: &str, model: Option<&str>) -> Option<usize> {
    let others: Vec<RecordedSummary> = recorded()
        .into_iter()
        .filter(|s| s.session != session)
        .collect();
    let same: Vec<usize> = others
        .iter()
        .filter(|s| Some(s.model.as_str()) == model)
        .map(|s| s.chars)
        .collect();
    let pool = if same.is_empty() {
        others.iter().map(|s| s.chars).collect()
    } else {
        same
    };
    median(pool)
}

fn median(mut v: Vec<usize>) -> Option<usize> {
    v.sort_unstable();
    let n = v.len();
    (n > 0).then(|| v[(n - 1) / 2])
}

/// Neutral prose of `chars` characters, no more than the output cap allows
/// by `counter`: the summary whose words are unknown.
pub fn summary_text(chars: usize, counter: &dyn crate::tokens::TokenCounter) -> String {
    const PROSE: &str = "The user asked for changes to the project; the assistant read the relevant files, edited them, ran the checks and reported what was done and what is left. ";
    let cap = max_output_tokens();
    let mut keep = chars;
    loop {
        let text: String = PROSE.chars().cycle().take(keep).collect();
        let n = counter.count(&text);
        if n <= cap || keep == 0 {
            return text;
        }
        // Shrink in proportion, and by at least one character.
        keep = (keep * cap / n).min(keep - 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::TokenCounter;

    #[test]
    fn a_log_is_never_its_own_evidence() {
        // socialaize's own two summaries are left out: the other Sonnet 4.5
        // logs' are 14,506 and 22,289 characters, the lower middle 14,506.
        let soc = "claude-code-config-9246a0c1__socialaize.jsonl";
        assert_eq!(
            predicted_chars(soc, Some("claude-sonnet-4-5-20250929")),
            Some(14_506)
        );
        // No other log of Opus 4.6: the median of every other log's.
        let caf = "claude-agentic-framework__chat@7df973d.json";
        assert_eq!(predicted_chars(caf, Some("claude-opus-4-6")), Some(14_506));
        assert!(recorded().iter().any(|s| s.session == soc));
    }

    #[test]
    fn the_summary_text_has_the_length_asked_within_the_cap() {
        let counter = crate::tokens::Approx;
        assert_eq!(summary_text(1_000, &counter).chars().count(), 1_000);
        let capped = summary_text(1_000_000, &counter);
        assert!(counter.count(&capped) <= max_output_tokens());
    }
}
