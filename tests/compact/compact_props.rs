//! Property tests over generated conversations.
//!
//! - the hardened profile never loses anything and never splits a pair;
//! - pair protection keeps every request valid under every profile;
//! - the intact seed revision's batch-budget gap is found (a finding, so the
//!   test asserts that a counterexample exists);
//! - each single safeguard removed alone, and both together, are measured on
//!   the same generated corpus and the counts are snapshotted.

use crate::common;
use common::scaled;

use ctxlab::compact::config::{profile, Config};
use ctxlab::compact::hunt::{violated, Rounds};
use ctxlab::compact::probe;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config as PtConfig, TestRunner};

fn rounds(large: usize) -> impl Strategy<Value = Rounds> {
    // Sizes cluster around the 120-char rule and the per-item threshold.
    let size = prop_oneof![
        0usize..200,
        100usize..=large * 2,
        Just(121),
        Just(large + 1)
    ];
    prop::collection::vec(prop::collection::vec(size, 1..=3), 1..=6).prop_map(Rounds)
}

fn run(cfg: &Config, r: &Rounds, len: usize) -> ctxlab::counters::Counters {
    probe::run(cfg, &r.script(), Some(len)).unwrap().counters
}

proptest! {
    #![proptest_config(PtConfig { cases: 48, ..PtConfig::default() })]

    #[test]
    fn hardened_never_loses_anything(r in rounds(300), long in any::<bool>()) {
        let len = if long { 160 } else { 60 };
        let c = run(&scaled("hardened"), &r, len);
        prop_assert_eq!(c.count_of("lost_forever"), Some(0));
        prop_assert_eq!(c.count_of("pointer_lost"), Some(0));
        prop_assert_eq!(c.count_of("double_compacted"), Some(0));
        prop_assert_eq!(c.flag_of("pairs_intact"), Some(true));
    }

    #[test]
    fn pair_protection_keeps_every_request_valid(r in rounds(300), which in 0usize..5) {
        let name = ["course-old", "course-f9e8b28", "course-main", "hardened", "prototype"][which];
        let cfg = if name == "prototype" { profile(name).unwrap().config } else { scaled(name) };
        let c = run(&cfg, &r, 60);
        prop_assert_eq!(c.flag_of("pairs_intact"), Some(true));
        prop_assert_eq!(c.count_of("invalid_requests"), Some(0));
    }
}

#[test]
fn the_intact_seed_revision_loses_results_forever() {
    // Not a safeguard failure: the batch budget and the placeholder rule disagree.
    let cfg = profile("prototype").unwrap().config;
    let mut runner = TestRunner::new(PtConfig {
        cases: 256,
        failure_persistence: None,
        ..PtConfig::default()
    });
    let result = runner.run(&rounds(300), |r| {
        prop_assert_eq!(run(&cfg, &r, 60).count_of("lost_forever"), Some(0));
        Ok(())
    });
    let err = result.expect_err("f9e8b28 semantics must lose a result on some conversation");
    let text = err.to_string();
    assert!(
        text.contains("lost_forever") || text.contains("left"),
        "{text}"
    );
}

#[test]
fn safeguards_measured_on_one_corpus() {
    let base = profile("prototype").unwrap().config;
    let cells: [(&str, &[&str]); 4] = [
        ("intact", &[]),
        ("order swapped", &["order=micro_first"]),
        ("guard off", &["unseen_guard=false"]),
        ("both off", &["order=micro_first", "unseen_guard=false"]),
    ];
    let mut runner = TestRunner::deterministic();
    let corpus: Vec<Rounds> = (0..60)
        .map(|_| rounds(300).new_tree(&mut runner).unwrap().current())
        .collect();
    let mut lines = Vec::new();
    let mut violating = Vec::new();
    for (label, sets) in cells {
        let mut cfg = base.clone();
        for s in sets {
            cfg.apply_override(s).unwrap();
        }
        let (mut lost, mut ptr, mut bad) = (0, 0, 0);
        for r in &corpus {
            let c = run(&cfg, r, 160);
            lost += c.count_of("lost_forever").unwrap();
            ptr += c.count_of("pointer_lost").unwrap();
            bad += violated(&c) as u32;
        }
        violating.push(bad);
        lines.push(format!("{label:<14} conversations violating: {bad:>2}/60  lost_forever: {lost:>3}  pointer_lost: {ptr:>3}"));
    }
    // Removing safeguards never makes things better on the same corpus.
    assert!(
        violating[3] >= violating[1] && violating[3] >= violating[2],
        "{lines:#?}"
    );
    assert!(violating[3] > violating[0], "{lines:#?}");
    insta::assert_snapshot!("safeguards_on_generated_corpus", lines.join("\n"));
}
