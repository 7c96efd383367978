//! Every memory experiment is caught by its named counter, with a clean baseline.

use ctxlab::memory::checker::render;
use ctxlab::memory::experiments::EXPERIMENTS;
use ctxlab::registry::{Mechanism, RunOptions};

#[test]
fn every_memory_experiment_meets_its_expectations() {
    let mut failures = Vec::new();
    for row in EXPERIMENTS {
        let v = (row.run)(&RunOptions::default()).unwrap_or_else(|e| panic!("{}: {e}", row.id));
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
