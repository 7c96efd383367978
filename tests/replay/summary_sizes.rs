//! The recorded summary sizes the prediction draws on
//! (`lab/replay/summary_sizes.json`) are those of the shared logs: every
//! continuation summary of every shared Claude Code log (the directory
//! walked), with the model of its conversation's first request, and
//! nothing else.

use crate::common;

use ctxlab::import::{import_file, ImportOptions};
use ctxlab::replay::envelope::{product_summaries, RecordedLog};
use ctxlab::replay::summary_sizes::recorded;

#[test]
fn the_summary_table_is_the_shared_logs_summaries() {
    let Some(dir) = common::transcripts() else {
        return;
    };
    let files = common::claude_code_files(&dir);
    let mut found = Vec::new();
    for f in &files {
        let session = import_file(f, &ImportOptions::default()).unwrap();
        let model = RecordedLog::of_session(&session)
            .unwrap()
            .and_then(|l| l.model().map(str::to_string))
            .unwrap_or_default();
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        for s in product_summaries(&session) {
            found.push((name.clone(), model.clone(), s.chars().count()));
        }
    }
    let table: Vec<(String, String, usize)> = recorded()
        .into_iter()
        .map(|s| (s.session, s.model, s.chars))
        .collect();
    assert_eq!(table, found);
}

/// Under `--anchor none` the port's summary is the predicted one, never
/// the log's own: the first request after socialaize's first compaction
/// changes by the difference between its summary (13,516 characters) and
/// the other Sonnet 4.5 logs' median (14,506).
#[test]
fn the_predicted_summary_is_from_other_sessions() {
    use ctxlab::replay::summary_sizes::predicted_chars;
    let soc = "claude-code-config-9246a0c1__socialaize.jsonl";
    let own: Vec<usize> = recorded()
        .into_iter()
        .filter(|s| s.session == soc)
        .map(|s| s.chars)
        .collect();
    let predicted = predicted_chars(soc, Some("claude-sonnet-4-5-20250929")).unwrap();
    assert!(!own.contains(&predicted), "{own:?} {predicted}");
}
