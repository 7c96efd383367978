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
//!
//! Standing instructions (kind `instruction`, scored apart as well), false
//! positives by class:
//! - the rule's subject taken for its act: a rule names what to change
//!   (`frontend-analyze`) and what to do; a to-do naming the subject is
//!   counted as acting on it (dotclaude 41);
//! - each token's first use: a rule with several tokens gives a demand at
//!   the first use of each (dotclaude 47, 59), the labels one per act;
//! - output pasted into a rule's paragraph lends the rule its tokens
//!   (golfgod 146's terminal output: `golfgod_x_convex`, used at 147).
//!
//! Misses: a rule without a rule word ("shouldn't be called …, it should be
//! called feat-onboarding-flow"), commands in a code block under an
//! "Execute" line, a token spelt otherwise in the call (`@agents/code-scout.md`
//! against `code-scout`), and a pair already demanded as another kind (the
//! viewer's Glob, an identifier of the same message).

use crate::common;

use ctxlab::import::demands::{extract, parse_labels, DemandKind, Labels, Score};

#[test]
fn the_extractor_scores_on_the_labelled_set() {
    let Some(dir) = common::transcripts() else {
        return;
    };
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/import/demands/labels.tsv");
    let labels = parse_labels(&path, &std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut files: Vec<&str> = labels.ranges.iter().map(|r| r.0.as_str()).collect();
    files.sort();
    files.dedup();
    assert!(files.len() >= 3, "at least three logs");
    assert!(labels.demands.len() >= 60, "at least 60 demands");
    // The instruction kind alone: its labels, and the extractor's
    // instruction demands, in the same ranges.
    let instruction = DemandKind::Instruction;
    let only = Labels {
        ranges: labels.ranges.clone(),
        range_kinds: labels.range_kinds.clone(),
        demands: labels
            .demands
            .iter()
            .filter(|d| d.2 == instruction)
            .cloned()
            .collect(),
    };
    assert!(only.demands.len() >= 10, "at least 10 instruction demands");
    let mut instructions = Score {
        true_positives: 0,
        false_positives: 0,
        false_negatives: 0,
    };
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
        let predicted = extract(&sessions[0].main);
        let (s, fps) = ctxlab::import::demands::score(&labels, f, &predicted);
        let kind: Vec<_> = predicted
            .iter()
            .filter(|d| d.kind == instruction)
            .cloned()
            .collect();
        let (i, _) = ctxlab::import::demands::score(&only, f, &kind);
        instructions.true_positives += i.true_positives;
        instructions.false_positives += i.false_positives;
        instructions.false_negatives += i.false_negatives;
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
    println!(
        "instruction: {instructions:?}, precision {:.3}, recall {:.3}",
        instructions.precision(),
        instructions.recall()
    );
    // Instructions are scored, not assumed: some are found.
    assert!(instructions.true_positives > 0, "{instructions:?}");
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
