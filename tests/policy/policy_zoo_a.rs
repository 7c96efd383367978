//! The zoo's fault rows: each caught by its counter, its intact run clean.
//! (Every registered policy replays every real transcript with validity
//! held in `policy_zoo_b.rs`.)

use crate::common;

use ctxlab::zoo::experiments::agents::EXPERIMENTS;

#[test]
fn every_fault_row_is_caught_and_its_baseline_is_clean() {
    for row in EXPERIMENTS {
        let v = common::verdict_holding(row);
        for c in &v.cells {
            // The codex baseline drops the planted orphan by design, so
            // lost_forever is not part of "clean" here; validity and pointers are.
            for name in ["dangling_pointers", "invalid_requests"] {
                assert_eq!(
                    c.baseline.count_of(name),
                    Some(0),
                    "{} baseline {name}",
                    row.id
                );
            }
        }
    }
}
