//! The evidence for each way Claude Code attaches content its log does not
//! keep (`replay::unlogged::mechanisms`), counted on every shared Claude
//! Code log (the directory walked, main chains): where a message shows
//! that the product would have attached something, and for @-mentioned
//! files how many the log's text sizes (a whole Read of the same path
//! elsewhere in the log). notes/cost.md carries the table.

use crate::common;

use ctxlab::import::{import_file, ImportOptions};
use ctxlab::replay::unlogged::mechanisms::{evidence, Mechanism, Sizing};

/// Per log: the count of each mechanism (in [`Mechanism::ALL`] order), and
/// the @-mentioned files sized from a Read.
fn counts(path: &std::path::Path) -> (Vec<usize>, usize) {
    let session = import_file(path, &ImportOptions::default()).unwrap();
    let counter = ctxlab::tokens::Tokens::Claude.counter();
    let found = evidence(&session.main, counter.as_ref());
    let per = Mechanism::ALL
        .iter()
        .map(|m| found.iter().filter(|e| e.mechanism == *m).count())
        .collect();
    let sized = found
        .iter()
        .filter(|e| matches!(e.sized, Some((_, Sizing::Read))))
        .count();
    (per, sized)
}

#[test]
fn every_mechanism_is_counted_on_the_shared_logs() {
    let Some(dir) = common::transcripts() else {
        return;
    };
    let files = common::claude_code_files(&dir);
    let mut table = String::from("| log |");
    for m in Mechanism::ALL {
        table.push_str(&format!(" {} |", m.name()));
    }
    table.push_str(" @-files sized by a Read |\n|---|");
    table.push_str(&"---:|".repeat(Mechanism::ALL.len() + 1));
    table.push('\n');
    let mut totals = vec![0; Mechanism::ALL.len()];
    let mut sized_total = 0;
    for f in &files {
        let (per, sized) = counts(f);
        let name = f.file_name().unwrap().to_string_lossy();
        let name = name.split(['@', '.']).next().unwrap_or(&name).to_string();
        table.push_str(&format!("| {name} |"));
        for (t, n) in totals.iter_mut().zip(&per) {
            *t += n;
            table.push_str(&format!(" {n} |"));
        }
        table.push_str(&format!(" {sized} |\n"));
        sized_total += sized;
    }
    table.push_str("| all |");
    for t in &totals {
        table.push_str(&format!(" {t} |"));
    }
    table.push_str(&format!(" {sized_total} |\n"));
    eprintln!("{table}");
    // Most mechanisms are seen: the table is evidence, not a list of guesses.
    let seen = totals.iter().filter(|&&t| t > 0).count();
    assert!(seen >= 6, "{totals:?}");
    assert!(sized_total <= totals[0], "{sized_total} of {}", totals[0]);
    insta::assert_snapshot!("unlogged_mechanisms_on_the_shared_logs", table);
}

/// Every mechanism names where in the product it was read.
#[test]
fn every_mechanism_names_its_source() {
    for m in Mechanism::ALL {
        let s = m.source();
        assert!(s.release.starts_with("2."), "{m:?}");
        assert!(!s.label.is_empty() && !s.function.is_empty(), "{m:?}");
    }
}
