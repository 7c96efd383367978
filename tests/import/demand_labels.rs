//! The demand extractor against the hand-labelled set
//! (`tests/import/demands/labels.tsv`: demands read off shared Claude Code
//! logs, which stay in `$CTXLAB_TRANSCRIPTS`). A demand is the pair (use
//! message, source message); only uses inside a labelled range count.
//!
//! False positives the extractor has, by class (the labelled set holds one
//! of each, commented out in the file):
//! - a path whose tail matches a different, earlier listing (`dist/…` of
//!   a search result instead of the error message that named the path);
//! - a generic tail (`hooks/hooks.json`) matched to an unrelated earlier
//!   mention of another project's file;
//! - the same path spelt another way (`~/x` against `/Users/me/x`) after
//!   the model had written it itself.

use crate::common;

use ctxlab::import::demands::{extract, parse_labels, Score};

#[test]
fn the_extractor_scores_on_the_labelled_set() {
    let Some(dir) = common::transcripts() else {
        return;
    };
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/import/demands/labels.tsv");
    let labels = parse_labels(&path, &std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut files: Vec<&str> = labels.ranges.iter().map(|r| r.0.as_str()).collect();
    files.dedup();
    assert!(files.len() >= 3, "at least three logs");
    assert!(labels.demands.len() >= 60, "at least 60 demands");
    let mut total = Score {
        true_positives: 0,
        false_positives: 0,
        false_negatives: 0,
    };
    for f in &files {
        let sessions = ctxlab::import::import_file_sessions(
            &dir.join("claude_code").join(f),
            &Default::default(),
        )
        .unwrap();
        let (s, fps) = ctxlab::import::demands::score(&labels, f, &extract(&sessions[0].main));
        for d in &fps {
            println!(
                "false positive {f}: {} {:?} from {}: {}",
                d.at, d.kind, d.source, d.span
            );
        }
        println!("{f}: {s:?}");
        total.true_positives += s.true_positives;
        total.false_positives += s.false_positives;
        total.false_negatives += s.false_negatives;
    }
    println!(
        "precision {:.3}, recall {:.3}",
        total.precision(),
        total.recall()
    );
    assert!(total.precision() >= 0.9, "{total:?}");
    assert!(total.recall() >= 0.8, "{total:?}");
    // The misses and false positives the file records are counted, not
    // assumed away: a perfect score would mean the labels are the output.
    assert!(
        total.false_positives > 0 && total.false_negatives > 0,
        "{total:?}"
    );
}

#[test]
fn a_session_without_demands_reports_none_and_the_cli_lists_them() {
    let Some(dir) = common::transcripts() else {
        return;
    };
    let file = dir.join("claude_code/dmux__chat@eef6c28.json");
    let text = common::lab_ok(&["import", file.to_str().unwrap(), "--demands"]);
    assert!(
        text.contains("| reread |") || text.contains(" reread "),
        "{text}"
    );
    assert!(
        text.contains("dmux__chat@eef6c28.json: 22 demands"),
        "{text}"
    );
}
