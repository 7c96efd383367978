//! Both storage backends give identical results: every registry row, every
//! scenario file and a generated corpus of conversations run once in memory
//! and once on real files, and verdicts, counters, request sizes and the
//! (redacted) final messages are compared.

use crate::common;
use common::scaled;

use std::path::{Path, PathBuf};

use ctxlab::compact::config::profile;
use ctxlab::compact::hunt::Rounds;
use ctxlab::compact::probe;
use ctxlab::experiments;
use ctxlab::registry::RunOptions;
use ctxlab::storage::root::with_backend;
use ctxlab::storage::Backend;
use proptest::prelude::*;
use proptest::test_runner::Config as PtConfig;

/// Path lengths the disk backend reaches under any reasonable TMPDIR (60 chars included).
const LENS: [usize; 2] = [120, 200];

fn both<T>(f: impl Fn() -> T) -> (T, T) {
    (
        with_backend(Backend::Mem, &f),
        with_backend(Backend::Disk, &f),
    )
}

#[test]
fn every_registry_row_gives_the_same_verdict_on_both_backends() {
    let opts = RunOptions {
        path_lens: LENS.to_vec(),
        ..RunOptions::default()
    };
    for e in experiments::all() {
        let (mem, disk) = both(|| (e.run)(&opts).unwrap());
        assert_eq!(mem, disk, "{}", e.id);
    }
}

fn scenario_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            scenario_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "json") {
            out.push(p);
        }
    }
}

#[test]
fn every_compaction_scenario_file_gives_the_same_counters_on_both_backends() {
    let mut files = Vec::new();
    scenario_files(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenarios")
            .as_path(),
        &mut files,
    );
    let mut ran = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        if ctxlab::memory::scenario::is_memory_scenario(&text) {
            continue;
        }
        let (mem, disk) = both(|| ctxlab::scenario::run_file(f).unwrap());
        assert_eq!(mem.cells, disk.cells, "{}", f.display());
        assert_eq!(mem.failures, disk.failures, "{}", f.display());
        assert!(
            mem.failures.is_empty(),
            "{}: {:?}",
            f.display(),
            mem.failures
        );
        ran += 1;
    }
    assert!(ran >= 10, "only {ran} compaction scenarios found");
}

fn rounds() -> impl Strategy<Value = Rounds> {
    let size = prop_oneof![0usize..200, 100usize..=600, Just(121), Just(301)];
    prop::collection::vec(prop::collection::vec(size, 1..=3), 1..=6).prop_map(Rounds)
}

proptest! {
    #![proptest_config(PtConfig { cases: 32, ..PtConfig::default() })]

    #[test]
    fn generated_conversations_agree_on_both_backends(
        r in rounds(),
        which in 0usize..5,
        long in any::<bool>(),
    ) {
        let name = ["course-old", "course-f9e8b28", "course-main", "hardened", "prototype"][which];
        let cfg = if name == "prototype" { profile(name).unwrap().config } else { scaled(name) };
        let len = LENS[usize::from(long)];
        let script = r.script();
        let (mem, disk) = both(|| probe::run(&cfg, &script, Some(len)).unwrap());
        prop_assert_eq!(&mem.counters, &disk.counters);
        prop_assert_eq!(&mem.request_chars, &disk.request_chars);
        prop_assert_eq!(&mem.final_messages, &disk.final_messages);
    }
}

#[test]
fn memory_runs_the_seed_range_below_any_temp_dir() {
    let cfg = profile("prototype").unwrap().config;
    for len in 30..=51 {
        let o = with_backend(Backend::Mem, || {
            probe::run(&cfg, &probe::prototype_probe(), Some(len))
        });
        assert!(o.is_ok(), "path_len {len}: {:?}", o.err());
    }
}
