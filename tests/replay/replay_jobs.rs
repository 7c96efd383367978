//! `--jobs N`: a replay (a corpus's sessions, or a named session's
//! policies) and a sweep print the same bytes on one thread as on several.

use crate::common;

use std::path::Path;

use common::lab;

/// A directory of `n` sessions of mixed shapes: generated rounds of several
/// sizes, and tool sessions with one result past every persistence threshold.
pub fn mixed_corpus(dir: &Path, n: usize) -> String {
    let root = dir.join("corpus");
    std::fs::create_dir(&root).unwrap();
    for i in 0..n {
        let messages = if i % 3 == 2 {
            common::tool_session(4 + i % 7, i % 4)
        } else {
            ctxlab::replay::profiles::synthetic_main(2 + i % 9, 300 + 997 * (i % 13))
        };
        common::write(
            &root,
            &format!("s{i:03}.json"),
            &serde_json::to_string(&messages).unwrap(),
        );
    }
    root.to_str().unwrap().to_string()
}

fn ok(args: &[&str]) -> String {
    let (code, out, err) = lab(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    out
}

/// The same command's output with `--jobs 1`, `2` and `3`: all equal, and returned.
fn same_for_every_jobs(args: &[&str]) -> String {
    let outs: Vec<String> = ["1", "2", "3"]
        .iter()
        .map(|j| {
            let mut a = args.to_vec();
            a.extend(["--jobs", j]);
            ok(&a)
        })
        .collect();
    for (j, out) in outs.iter().enumerate().skip(1) {
        assert!(
            out == &outs[0],
            "--jobs {} differs from --jobs 1 for {args:?}",
            j + 1
        );
    }
    outs.into_iter().next().unwrap()
}

#[test]
fn a_corpus_replay_with_cost_and_retention_is_the_same_for_every_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let root = mixed_corpus(dir.path(), 7);
    let table = same_for_every_jobs(&["replay", &root, "--policy", "all", "--cost", "--retention"]);
    assert!(table.contains("┆ 7 "), "{table}");
    let lines = same_for_every_jobs(&[
        "replay",
        &root,
        "--policy",
        "all",
        "--cost",
        "--retention",
        "--format",
        "jsonl",
    ]);
    let names = ctxlab::zoo::list::names();
    assert_eq!(lines.lines().count(), 7 * names.len());
    // Records come in corpus order, each session's in policy order.
    let first: Vec<String> = lines
        .lines()
        .step_by(names.len())
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["session"].to_string())
        .collect();
    let mut sorted = first.clone();
    sorted.sort();
    assert_eq!(first, sorted);
}

#[test]
fn named_sessions_replay_their_policies_in_parallel_with_the_same_output() {
    let dir = tempfile::tempdir().unwrap();
    let a = common::write(
        dir.path(),
        "a.json",
        &serde_json::to_string(&common::tool_session(12, 3)).unwrap(),
    );
    let b = common::write(
        dir.path(),
        "b.json",
        &serde_json::to_string(&ctxlab::replay::profiles::synthetic_main(9, 4000)).unwrap(),
    );
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let json = same_for_every_jobs(&[
        "replay",
        a,
        b,
        "--policy",
        "all",
        "--cost",
        "--retention",
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        v["runs"].as_array().unwrap().len(),
        2 * ctxlab::zoo::list::names().len()
    );
}

#[test]
fn a_sweep_is_the_same_for_every_jobs() {
    let json = same_for_every_jobs(&[
        "sweep",
        "--vary",
        "order,unseen_guard",
        "--path-len",
        "80..100",
        "--seeds",
        "2",
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["cells"].as_array().unwrap().len(), 4 * 2 * 21);
    let table = same_for_every_jobs(&["sweep", "--policy", "all", "--seeds", "2"]);
    assert!(table.contains("prototype"), "{table}");
}

#[test]
fn jobs_must_be_one_or_more() {
    for bad in ["0", "x", "-2"] {
        let (code, _, err) = lab(&["replay", "x.json", "--policy", "none", "--jobs", bad]);
        assert_eq!(code, 2, "{bad}: {err}");
        assert!(bad == "-2" || err.contains("1 or more"), "{bad}: {err}");
        let (code, _, err) = lab(&["sweep", "--jobs", bad]);
        assert_eq!(code, 2, "{bad}: {err}");
    }
}
