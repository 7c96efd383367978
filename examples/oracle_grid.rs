//! The oracle grid of `make bench` (the prototype's probe under five
//! configurations at every path length 30..=200, 855 cells) without timing or
//! the Python side: a deterministic workload for instruction counts.
//!
//! `cargo run --release --example oracle_grid -- [ROUNDS]`, then e.g.
//! `perf stat -e instructions:u target/release/examples/oracle_grid 3` or
//! `valgrind --tool=callgrind target/release/examples/oracle_grid 1`.
//! Prints the number of cells and a digest of every cell's counters, so a
//! speed change that moved a counter shows up as a different digest.

use std::hash::{Hash, Hasher};

use ctxlab::compact::config::profile;
use ctxlab::compact::probe::{prototype_probe, run_counters};

// The allocator of the `lab` binary and the bench.
#[global_allocator]
static ALLOC: ctxlab::alloc::Mimalloc = ctxlab::alloc::Mimalloc;

const SETS: [&[&str]; 5] = [
    &[],
    &["order=micro_first"],
    &["pair_protection=false"],
    &["order=micro_first", "unseen_guard=false"],
    &["unseen_guard=false"],
];

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1);
    let base = profile("prototype").expect("built-in profile").config;
    let script = prototype_probe();
    let mut digest = std::collections::hash_map::DefaultHasher::new();
    let mut cells = 0usize;
    for _ in 0..rounds {
        for sets in SETS {
            let mut cfg = base.clone();
            for s in sets {
                cfg.apply_override(s).expect("valid override");
            }
            for len in 30..=200 {
                let c = run_counters(&cfg, &script, Some(len)).expect("cell runs");
                serde_json::to_string(&c)
                    .expect("counters serialise")
                    .hash(&mut digest);
                cells += 1;
            }
        }
    }
    println!("{cells} cells, counters digest {:016x}", digest.finish());
}
