//! Every memory experiment is caught by its named counter, with a clean baseline.

use ctxlab::memory::checker::render;
use ctxlab::memory::experiments::EXPERIMENTS;
use ctxlab::registry::{ExperimentVerdict, Kind, Mechanism, RunOptions};

/// Each experiment's verdict, computed once and shared by the tests below.
fn verdicts() -> &'static [ExperimentVerdict] {
    static V: std::sync::OnceLock<Vec<ExperimentVerdict>> = std::sync::OnceLock::new();
    V.get_or_init(|| {
        EXPERIMENTS
            .iter()
            .map(|row| {
                (row.run)(&RunOptions::default()).unwrap_or_else(|e| panic!("{}: {e}", row.id))
            })
            .collect()
    })
}

#[test]
fn every_memory_experiment_meets_its_expectations() {
    let mut failures = Vec::new();
    for (row, v) in EXPERIMENTS.iter().zip(verdicts()) {
        assert_eq!(v.id, row.id);
        assert_eq!(row.mechanism, Mechanism::Memory);
        let f = v.check(row.expect);
        if !f.is_empty() || std::env::var("SHOW").is_ok() {
            for c in &v.cells {
                eprintln!(
                    "== {} [{}]\n-- baseline\n{}-- broken\n{}",
                    row.id,
                    c.label,
                    render(&c.baseline),
                    render(&c.broken)
                );
            }
        }
        failures.extend(f);
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The first counter each row is "caught by" is clean in every baseline cell
/// (intact course for breaks, the fix for findings) and non-zero in every
/// broken cell.
#[test]
fn named_counter_is_clean_in_baseline_and_fires_when_broken() {
    for (row, v) in EXPERIMENTS.iter().zip(verdicts()) {
        let name = row.caught_by[0];
        assert!(
            row.expect.iter().any(|e| e.counter == name),
            "{}: {name} not in expect",
            row.id
        );
        for c in &v.cells {
            if row.id == "M-reverse-gate" && c.label.contains("warn_on_skip") {
                // The warning fix stops the silence, not the growth: checked via expect.
                assert_eq!(c.baseline.count_of(name), Some(0));
                continue;
            }
            assert_eq!(
                c.baseline.count_of(name),
                Some(0),
                "{} [{}] baseline {name}",
                row.id,
                c.label
            );
            assert!(
                c.broken.count_of(name).unwrap_or(0) > 0,
                "{} [{}] broken {name}",
                row.id,
                c.label
            );
        }
    }
}

#[test]
fn verdicts_are_byte_deterministic() {
    for (row, v) in EXPERIMENTS.iter().zip(verdicts()) {
        let a = serde_json::to_string(v).unwrap();
        let b = serde_json::to_string(&(row.run)(&RunOptions::default()).unwrap()).unwrap();
        assert_eq!(a, b, "{}", row.id);
    }
}

#[test]
fn ids_are_unique_and_memory_rows_are_registered() {
    let ids: Vec<&str> = EXPERIMENTS.iter().map(|e| e.id).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), ids.len());
    for id in ids {
        assert_eq!(ctxlab::experiments::find(id).unwrap().id, id);
        assert_eq!(
            ctxlab::experiments::find(&id.to_lowercase()).unwrap().id,
            id
        );
    }
    assert_eq!(
        EXPERIMENTS
            .iter()
            .filter(|e| e.kind == Kind::Finding)
            .count(),
        2
    );
}
