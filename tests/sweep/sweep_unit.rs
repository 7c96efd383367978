//! `lab sweep` as a library: parsing, thresholds, sharding and merging, rendering.

use ctxlab::render::Format;
use ctxlab::sweep::{
    self, merge, parse_path_lens, parse_vary, render, thresholds, CellResult, Shard, SweepSpec,
};

fn spec(vary: &[&str], lens: &str, seeds: u64) -> SweepSpec {
    SweepSpec {
        profile: "prototype".into(),
        vary: vary.iter().map(|s| s.to_string()).collect(),
        path_lens: parse_path_lens(lens).unwrap(),
        seeds,
    }
}

fn no_progress() -> impl FnMut(usize, usize) {
    |_, _| {}
}

#[test]
fn path_lengths_parse_ranges_steps_and_lists() {
    assert_eq!(parse_path_lens("60").unwrap(), vec![60]);
    assert_eq!(parse_path_lens("60..63").unwrap(), vec![60, 61, 62, 63]);
    assert_eq!(
        parse_path_lens("60..100:20").unwrap(),
        vec![60, 80, 100],
        "ranges are inclusive"
    );
    assert_eq!(parse_path_lens("60..95:20").unwrap(), vec![60, 80]);
    assert_eq!(
        parse_path_lens("160, 60..62,61").unwrap(),
        vec![60, 61, 62, 160],
        "lists are sorted and deduplicated"
    );
    assert_eq!(parse_path_lens("90..90").unwrap(), vec![90]);
    for bad in [
        "", "x", "60..", "..60", "60..50", "60..70:0", "60..70:x", "-1", "6 0",
    ] {
        let e = parse_path_lens(bad).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{bad}");
        assert!(e.to_string().contains("A..B:STEP"), "{bad}: {e}");
    }
}

#[test]
fn vary_and_shard_parse() {
    assert_eq!(
        parse_vary("order, unseen_guard").unwrap(),
        vec!["order", "unseen_guard"]
    );
    assert!(parse_vary("order,order").is_err());
    let e = parse_vary("unseen_gaurd").unwrap_err().to_string();
    assert!(e.contains("unseen_guard"), "{e}");
    assert_eq!(Shard::parse("1/3").unwrap(), Shard { index: 1, count: 3 });
    for bad in ["3/3", "0/0", "1", "a/b", "-1/2"] {
        assert!(Shard::parse(bad).is_err(), "{bad}");
    }
}

fn cell(values: &[&str], len: usize, lost: u64, ptr: u64, pairs: bool) -> CellResult {
    CellResult {
        index: 0,
        values: values.iter().map(|s| s.to_string()).collect(),
        path_len: len,
        seed: 0,
        lost_forever: lost,
        pointer_lost: ptr,
        pairs_intact: pairs,
        double_compacted: 0,
        unseen_compacted: 0,
    }
}

#[test]
fn thresholds_on_synthetic_data() {
    let vary = vec!["order".to_string(), "unseen_guard".to_string()];
    let a = ["micro_first", "false"];
    let b = ["persist_first", "true"];
    let cells = vec![
        cell(&a, 88, 1, 0, true),
        cell(&a, 89, 1, 0, true),
        cell(&a, 90, 1, 1, true),
        cell(&a, 91, 1, 1, false),
        // Out of order and with a gap: the change is between 100 and 120, not exact.
        cell(&b, 120, 2, 0, true),
        cell(&b, 60, 0, 0, true),
        cell(&b, 100, 0, 0, true),
    ];
    let ts = thresholds(&vary, &cells);
    let lines: Vec<String> = ts
        .iter()
        .map(|t| render::threshold_line(t, false))
        .collect();
    assert_eq!(
        lines,
        vec![
            "order=micro_first,unseen_guard=false: pointer_lost 0→1 at path_len=90",
            "order=micro_first,unseen_guard=false: pairs_intact true→false at path_len=91",
            "order=persist_first,unseen_guard=true: lost_forever 0→2 between path_len=100 and 120",
        ]
    );
    assert!(ts[0].exact() && !ts[2].exact());
    assert!(thresholds(&vary, &[cell(&a, 60, 5, 5, false)]).is_empty());
    // A counter that changes back is two thresholds.
    let back = vec![
        cell(&a, 60, 0, 0, true),
        cell(&a, 61, 1, 0, true),
        cell(&a, 62, 0, 0, true),
    ];
    assert_eq!(thresholds(&vary, &back).len(), 2);
}

#[test]
fn the_probe_loses_its_pointer_at_90_without_the_guard() {
    let r = sweep::run(
        &spec(&["order", "unseen_guard"], "85..95", 1),
        None,
        &mut no_progress(),
    )
    .unwrap();
    let text = render::thresholds_text(&r);
    assert!(
        text.contains("order=micro_first,unseen_guard=false: pointer_lost 0→1 at path_len=90"),
        "{text}"
    );
    assert!(
        text.contains("order=persist_first,unseen_guard=false: pointer_lost 0→1 at path_len=90")
    );
}

#[test]
fn shards_merge_into_the_unsharded_result() {
    let s = spec(
        &["order", "unseen_guard", "save_before_omit"],
        "60,89..91,160",
        3,
    );
    assert_eq!(s.total_cells(), 8 * 3 * 5);
    let whole = sweep::run(&s, None, &mut no_progress()).unwrap();
    assert_eq!(whole.cells.len(), s.total_cells());
    for n in [1, 2, 3, 7] {
        let mut parts: Vec<_> = (0..n)
            .map(|i| {
                sweep::run(&s, Some(Shard { index: i, count: n }), &mut no_progress()).unwrap()
            })
            .collect();
        // Order of the inputs must not matter, and a shard round-trips through its JSON.
        parts.reverse();
        let parts = parts
            .into_iter()
            .map(|p| {
                let text = render::sweep(&p, Format::Json);
                serde_json::from_str(&text).unwrap()
            })
            .collect();
        let merged = merge(parts).unwrap();
        assert_eq!(merged, whole, "n={n}");
        for f in [Format::Table, Format::Markdown, Format::Json] {
            assert_eq!(render::sweep(&merged, f), render::sweep(&whole, f));
        }
    }
}

#[test]
fn merge_refuses_incomplete_or_mixed_shards() {
    let s = spec(&["order"], "60,160", 1);
    let shard =
        |i, n| sweep::run(&s, Some(Shard { index: i, count: n }), &mut no_progress()).unwrap();
    let e = merge(vec![shard(0, 2)]).unwrap_err().to_string();
    assert!(e.contains("cover 2 of 4 cells"), "{e}");
    let other = sweep::run(
        &spec(&["unseen_guard"], "60,160", 1),
        Some(Shard { index: 1, count: 2 }),
        &mut no_progress(),
    )
    .unwrap();
    let e = merge(vec![shard(0, 2), other]).unwrap_err().to_string();
    assert!(e.contains("different sweeps"), "{e}");
    assert!(merge(vec![]).is_err());
    // Overlapping shards of one sweep are fine when they agree.
    assert_eq!(
        merge(vec![shard(0, 2), shard(1, 2), shard(0, 1)])
            .unwrap()
            .cells
            .len(),
        4
    );
}

#[test]
fn seeds_run_generated_sessions_deterministically() {
    let s = spec(&["unseen_guard"], "60,120", 4);
    let a = sweep::run(&s, None, &mut no_progress()).unwrap();
    let b = sweep::run(&s, None, &mut no_progress()).unwrap();
    assert_eq!(a, b);
    assert_eq!(a.cells.iter().filter(|c| c.seed == 3).count(), 4);
}

#[test]
fn a_length_below_the_bounds_is_refused_by_the_parser_and_the_root() {
    let e = parse_path_lens("10,60").unwrap_err();
    assert!(e.to_string().contains("10 is outside 20..=4096"), "{e}");
    let e = parse_path_lens("60..5000").unwrap_err();
    assert!(e.to_string().contains("5000 is outside 20..=4096"), "{e}");
    // A spec built without the parser (e.g. by a program) meets the root's check.
    let mut s = spec(&["order"], "60", 1);
    s.path_lens = vec![10, 60];
    let e = sweep::run(&s, None, &mut no_progress()).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(
        e.to_string().contains("--path-len 10 is outside 20..=4096"),
        "{e}"
    );
}

#[test]
fn progress_counts_every_cell() {
    let s = spec(&["order"], "60..64", 1);
    let mut seen = Vec::new();
    sweep::run(&s, None, &mut |d, t| seen.push((d, t))).unwrap();
    assert_eq!(seen, (1..=10).map(|d| (d, 10)).collect::<Vec<_>>());
}

#[test]
fn snapshot_small_sweep_table() {
    let r = sweep::run(
        &spec(&["order", "unseen_guard"], "60,80..100:10,160", 1),
        None,
        &mut no_progress(),
    )
    .unwrap();
    insta::assert_snapshot!("sweep_small_table", render::sweep(&r, Format::Table));
    insta::assert_snapshot!("sweep_small_markdown", render::sweep(&r, Format::Markdown));
    insta::assert_snapshot!("sweep_small_thresholds", render::thresholds_text(&r));
}

#[test]
fn snapshot_shard_table_and_seeded_sweep() {
    let s = spec(&["order", "unseen_guard"], "60,160", 2);
    let shard = sweep::run(&s, Some(Shard { index: 1, count: 3 }), &mut no_progress()).unwrap();
    insta::assert_snapshot!("sweep_shard_table", render::sweep(&shard, Format::Table));
    let whole = sweep::run(&s, None, &mut no_progress()).unwrap();
    insta::assert_snapshot!("sweep_seeds_table", render::sweep(&whole, Format::Table));
}

#[test]
fn snapshot_sweep_json() {
    let r = sweep::run(&spec(&["order"], "60,160", 1), None, &mut no_progress()).unwrap();
    insta::assert_snapshot!("sweep_tiny_json", render::sweep(&r, Format::Json));
}

#[test]
fn a_shard_edited_by_seven_is_refused_by_its_checksum() {
    let s = spec(&["order", "unseen_guard"], "60,89..91,160", 1);
    let parts: Vec<_> = (0..2)
        .map(|i| sweep::run(&s, Some(Shard { index: i, count: 2 }), &mut no_progress()).unwrap())
        .collect();
    assert!(parts
        .iter()
        .all(|p| p.checksum.as_deref().is_some_and(|c| c.len() == 64)));
    assert!(merge(parts.clone()).is_ok(), "the intact shards merge");
    let mut tampered = parts.clone();
    tampered[1].cells[0].pointer_lost += 7;
    let e = merge(tampered).unwrap_err().to_string();
    assert!(e.contains("shard 1/2: the checksum does not match"), "{e}");
    let mut stripped = parts;
    stripped[0].checksum = None;
    let e = merge(stripped).unwrap_err().to_string();
    assert!(e.contains("carries no checksum"), "{e}");
}

#[test]
fn vary_all_is_every_switch_and_merge_checks_cells_against_the_spec() {
    assert_eq!(parse_vary("all").unwrap().len(), sweep::ALL_SWITCHES.len());
    let s = spec(&["order"], "60,160", 1);
    let mut r = sweep::run(&s, None, &mut no_progress()).unwrap();
    r.cells[1].path_len = 61;
    let e = merge(vec![r]).unwrap_err().to_string();
    assert!(e.contains("cell 1 does not belong"), "{e}");
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    fn synthetic(s: &SweepSpec, counts: &[u8]) -> ctxlab::sweep::SweepResult {
        let cells = (0..s.total_cells())
            .map(|i| {
                let (combo, seed, len) = s.cell(i);
                let v = u64::from(counts[i % counts.len()]);
                CellResult {
                    index: i,
                    values: s.values(combo),
                    path_len: len,
                    seed,
                    lost_forever: v % 3,
                    pointer_lost: v % 2,
                    pairs_intact: v % 5 != 0,
                    double_compacted: v % 4,
                    unseen_compacted: 0,
                }
            })
            .collect();
        ctxlab::sweep::SweepResult::sealed(s.clone(), None, cells)
    }

    proptest! {
        #[test]
        fn ranges_parse_like_step_by(a in 20usize..500, len in 0usize..300, step in 1usize..40) {
            let b = a + len;
            let want: Vec<usize> = (a..=b).step_by(step).collect();
            prop_assert_eq!(parse_path_lens(&format!("{a}..{b}:{step}")).unwrap(), want);
        }

        #[test]
        fn any_sharding_merges_back(n in 1usize..9, k in 1usize..4, seeds in 1u64..3, counts in proptest::collection::vec(any::<u8>(), 1..20)) {
            let vary: Vec<&str> = sweep::DEFAULT_VARY[..k].to_vec();
            let s = spec(&vary, "60,70,90", seeds);
            let whole = synthetic(&s, &counts);
            let parts = (0..n)
                .map(|i| {
                    let shard = Shard { index: i, count: n };
                    ctxlab::sweep::SweepResult::sealed(
                        s.clone(),
                        Some(shard),
                        whole.cells.iter().filter(|c| shard.owns(c.index)).cloned().collect(),
                    )
                })
                .collect();
            prop_assert_eq!(merge(parts).unwrap(), whole);
        }

        #[test]
        fn thresholds_are_exactly_the_neighbour_changes(counts in proptest::collection::vec(0u64..3, 2..30)) {
            let vary = vec!["order".to_string()];
            let cells: Vec<CellResult> = counts
                .iter()
                .enumerate()
                .map(|(i, &v)| cell(&["micro_first"], 60 + i, v, 0, true))
                .collect();
            let changes = counts.windows(2).filter(|w| w[0] != w[1]).count();
            let ts = thresholds(&vary, &cells);
            prop_assert_eq!(ts.len(), changes);
            prop_assert!(ts.iter().all(|t| t.exact() && t.counter == "lost_forever"));
        }
    }
}

#[test]
fn the_cell_cap_counts_the_cells_a_shard_runs() {
    // Every switch over the default path lengths: 8192 × 141 cells, over the cap.
    let all: Vec<&str> = sweep::ALL_SWITCHES.to_vec();
    let s = spec(&all, sweep::DEFAULT_PATH_LENS, 1);
    assert!(s.total_cells() > sweep::MAX_CELLS);
    let e = s.validate().unwrap_err().to_string();
    assert!(e.contains("--shard i/n"), "{e}");
    s.validate_for(Some(Shard::parse("0/8").unwrap())).unwrap();
    s.validate_for(Some(Shard::parse("7/8").unwrap())).unwrap();
    let e = s
        .validate_for(Some(Shard::parse("0/1").unwrap()))
        .unwrap_err()
        .to_string();
    assert!(e.contains("the shard has more than"), "{e}");
    assert!(e.contains("more shards"), "{e}");
}

#[test]
fn shards_own_every_cell_once() {
    for total in [0, 1, 7, 8, 9, 100] {
        for count in 1..=9 {
            let owned: Vec<usize> = (0..count)
                .map(|index| Shard { index, count }.cells_of(total))
                .collect();
            assert_eq!(owned.iter().sum::<usize>(), total, "{total} / {count}");
            for (index, n) in owned.iter().enumerate() {
                let by_rule = (0..total)
                    .filter(|i| Shard { index, count }.owns(*i))
                    .count();
                assert_eq!(*n, by_rule, "{total} / {count}, shard {index}");
            }
        }
    }
}
