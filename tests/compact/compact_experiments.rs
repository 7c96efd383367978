//! Every compaction experiment is caught by its named counter, and the intact side is clean.

use crate::common;

use ctxlab::compact::experiments::EXPERIMENTS;
use ctxlab::experiments;
use ctxlab::registry::{ExperimentVerdict, Kind, RunOptions};
use ctxlab::render::Format;
use ctxlab::report;

fn verdict(id: &str) -> ExperimentVerdict {
    let e = experiments::find(id).unwrap();
    (e.run)(&RunOptions::default()).unwrap()
}

fn cell<'a>(v: &'a ExperimentVerdict, label: &str) -> &'a ctxlab::registry::Cell {
    v.cells.iter().find(|c| c.label == label).unwrap()
}

#[test]
fn every_registry_expectation_holds() {
    for e in EXPERIMENTS {
        let v = common::verdict_holding(e);
        assert!(!e.expect.is_empty(), "{} states no expectation", e.id);
        for name in e.caught_by {
            assert!(
                v.cells[0].baseline.get(name).is_some(),
                "{}: unknown counter {name}",
                e.id
            );
        }
    }
}

#[test]
fn intact_side_of_every_break_is_clean() {
    for e in EXPERIMENTS.iter().filter(|e| e.kind == Kind::Break) {
        let v = (e.run)(&RunOptions::default()).unwrap();
        for c in &v.cells {
            for counter in [
                "lost_forever",
                "pointer_lost",
                "unseen_compacted",
                "double_compacted",
                "orphan_files",
                "invalid_requests",
            ] {
                assert_eq!(
                    c.baseline.count_of(counter),
                    Some(0),
                    "{} [{}] baseline {counter}",
                    e.id,
                    c.label
                );
            }
            assert_eq!(
                c.baseline.flag_of("pairs_intact"),
                Some(true),
                "{} [{}]",
                e.id,
                c.label
            );
        }
    }
}

#[test]
fn d2_order_swap_alone_has_no_observable_difference() {
    let v = verdict("D2");
    for c in &v.cells {
        assert!(
            c.baseline.diff(&c.broken).is_empty(),
            "[{}] {:?}",
            c.label,
            c.baseline.diff(&c.broken)
        );
    }
}

#[test]
fn d3_is_caught_by_pairs_intact_and_nothing_is_lost() {
    let v = verdict("D3");
    for c in &v.cells {
        assert_eq!(c.baseline.flag_of("pairs_intact"), Some(true));
        assert_eq!(c.broken.flag_of("pairs_intact"), Some(false));
        assert!(c.broken.count_of("invalid_requests").unwrap() > 0);
        assert_eq!(c.broken.count_of("lost_forever"), Some(0));
        let sample = &c.broken.get("pairs_intact").unwrap().samples[0];
        assert!(sample.contains("tool_use a1 unanswered"), "{sample}");
    }
}

#[test]
fn d6_loses_b1_forever_and_a1_pointer_only_at_a_long_path() {
    let v = verdict("D6");
    let short = cell(&v, "path_len=60");
    let long = cell(&v, "path_len=160");
    for c in [short, long] {
        assert_eq!(c.baseline.count_of("lost_forever"), Some(0));
        assert_eq!(c.broken.count_of("lost_forever"), Some(1));
        assert_eq!(c.broken.get("lost_forever").unwrap().samples, vec!["b1"]);
    }
    assert_eq!(short.broken.count_of("pointer_lost"), Some(0));
    assert_eq!(long.broken.count_of("pointer_lost"), Some(1));
    assert_eq!(long.broken.get("pointer_lost").unwrap().samples, vec!["a1"]);
}

#[test]
fn the_re_compaction_threshold_is_at_embedded_path_length_90() {
    // "[Earlier tool result saved at " + path + "]" is 31 + L chars; the rule skips <= 120.
    let e = experiments::find("R1").unwrap();
    let v = (e.run)(&RunOptions {
        path_lens: vec![89, 90],
        seed: 0,
    })
    .unwrap();
    assert_eq!(
        cell(&v, "path_len=89").broken.count_of("double_compacted"),
        Some(0)
    );
    assert_eq!(
        cell(&v, "path_len=90").broken.count_of("double_compacted"),
        Some(1)
    );
    assert_eq!(
        cell(&v, "path_len=90")
            .baseline
            .count_of("double_compacted"),
        Some(0)
    );
}

#[test]
fn verdicts_are_snapshotted_in_every_format() {
    for e in EXPERIMENTS {
        let v = (e.run)(&RunOptions::default()).unwrap();
        insta::assert_snapshot!(
            format!("verdict_{}", e.id),
            report::verdict(&v, Format::Table)
        );
        insta::assert_snapshot!(
            format!("verdict_{}_md", e.id),
            report::verdict(&v, Format::Markdown)
        );
    }
    let d6 = verdict("D6");
    insta::assert_snapshot!("verdict_D6_json", report::verdict(&d6, Format::Json));
}

#[test]
fn runs_are_deterministic() {
    for id in ["D6", "A", "R1"] {
        assert_eq!(verdict(id), verdict(id), "{id}");
    }
}
