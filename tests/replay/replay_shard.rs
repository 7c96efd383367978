//! `lab replay CORPUS --shard i/n --format json` and `lab replay --merge`:
//! the merged parts print what the whole run prints, byte for byte; an
//! edited, missing or foreign part is refused naming the file.

use crate::common;

use common::lab;

const POLICIES: &str = "none,prototype,codex-cli,claude-code";

fn ok(args: &[&str]) -> String {
    let (code, out, err) = lab(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    out
}

/// Write the `n` shard parts of a `--cost --retention` replay of `root`; their paths.
fn parts(root: &str, dir: &std::path::Path, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let shard = format!("{i}/{n}");
            let out = ok(&[
                "replay",
                root,
                "--policy",
                POLICIES,
                "--cost",
                "--retention",
                "--shard",
                &shard,
                "--format",
                "json",
            ]);
            common::write(dir, &format!("part{i}.json"), &out)
                .to_string_lossy()
                .into_owned()
        })
        .collect()
}

fn merge(files: &[String], extra: &[&str]) -> (i32, String, String) {
    let mut args = vec!["replay", "--merge"];
    args.extend(files.iter().map(String::as_str));
    args.extend(extra);
    lab(&args)
}

#[test]
fn merged_shards_print_the_whole_run_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let root = super::replay_jobs::mixed_corpus(dir.path(), 11);
    let files = parts(&root, dir.path(), 3);
    let whole_args = [
        "replay",
        &root,
        "--policy",
        POLICIES,
        "--cost",
        "--retention",
    ];
    for format in ["json", "table", "markdown", "jsonl"] {
        let mut args = whole_args.to_vec();
        args.extend(["--format", format]);
        let whole = ok(&args);
        let (code, merged, err) = merge(&files, &["--format", format]);
        assert_eq!(code, 0, "{format}: {err}");
        assert!(
            merged == whole,
            "{format}: merged differs from the whole run"
        );
    }
    // A part replays its own sessions only, and says which shard it is.
    let part: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&files[1]).unwrap()).unwrap();
    let corpus = &part["corpus"];
    assert_eq!(corpus["shard"], serde_json::json!({"index": 1, "count": 3}));
    assert_eq!(corpus["sessions"], 11);
    let indices: Vec<u64> = corpus["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["index"].as_u64().unwrap())
        .collect();
    assert_eq!(indices, vec![1, 4, 7, 10]);
    assert_eq!(corpus["checksum"].as_str().unwrap().len(), 64);
    let whole: serde_json::Value =
        serde_json::from_str(&ok(&[&whole_args[..], &["--format", "json"]].concat())).unwrap();
    assert_eq!(whole["corpus"]["checksum"], serde_json::Value::Null);
    assert_eq!(whole["corpus"]["shard"], serde_json::Value::Null);
}

#[test]
fn an_edited_missing_or_foreign_part_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = super::replay_jobs::mixed_corpus(dir.path(), 5);
    let files = parts(&root, dir.path(), 2);

    // One record's dollars edited: the checksum no longer matches.
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&files[1]).unwrap()).unwrap();
    let dollars = &mut v["corpus"]["records"][0]["records"][1]["dollars"];
    *dollars = serde_json::json!(dollars.as_f64().unwrap() / 2.0);
    let edited = common::write(
        dir.path(),
        "edited.json",
        &serde_json::to_string_pretty(&v).unwrap(),
    );
    let edited = edited.to_string_lossy().into_owned();
    let (code, _, err) = merge(&[files[0].clone(), edited.clone()], &[]);
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains(&edited) && err.contains("checksum does not match"),
        "{err}"
    );
    assert!(err.contains("fix: re-run that shard"), "{err}");

    // Only the aggregate edited: it is not the part's records'.
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&files[1]).unwrap()).unwrap();
    v["aggregate"][0]["sessions"] = serde_json::json!(99);
    let edited = common::write(
        dir.path(),
        "agg.json",
        &serde_json::to_string_pretty(&v).unwrap(),
    );
    let (code, _, err) = merge(
        &[files[0].clone(), edited.to_string_lossy().into_owned()],
        &[],
    );
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains("agg.json") && err.contains("aggregate"),
        "{err}"
    );

    // A shard missing.
    let (code, _, err) = merge(&files[..1], &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("cover 3 of 5 sessions") && err.contains("fix:"),
        "{err}"
    );

    // A part of another replay (other policies).
    let other = ok(&[
        "replay", &root, "--policy", "none", "--shard", "1/2", "--format", "json",
    ]);
    let other = common::write(dir.path(), "other.json", &other);
    let (code, _, err) = merge(
        &[files[0].clone(), other.to_string_lossy().into_owned()],
        &[],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("other.json") && err.contains("the policies differ"),
        "{err}"
    );

    // Not a replay at all.
    let junk = common::write(dir.path(), "junk.json", "{\"cells\": []}");
    let (code, _, err) = merge(&[junk.to_string_lossy().into_owned()], &[]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("junk.json:1:"), "{err}");
}

#[test]
fn shard_and_merge_usage_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let root = super::replay_jobs::mixed_corpus(dir.path(), 2);
    for args in [
        vec!["replay", &root, "--policy", "none", "--shard", "0/2"],
        vec![
            "replay", &root, "--policy", "none", "--shard", "2/2", "--format", "json",
        ],
        vec![
            "replay", &root, "--policy", "none", "--shard", "x", "--format", "json",
        ],
        vec!["replay", &root, "--merge", "a.json"],
    ] {
        let (code, _, err) = lab(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.contains("fix:") || err.contains("error:"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn gnu_parallel_runs_the_replay_shards_and_merge_equals_the_whole() {
    let dir = tempfile::tempdir().unwrap();
    let root = super::replay_jobs::mixed_corpus(dir.path(), 7);
    // GUIDE.md's recipe: one job per shard, each writing its own part.
    let args = format!("replay {root} --policy {POLICIES} --cost");
    let Some(files) = common::parallel_shards(dir.path(), &args, 4, "part") else {
        return;
    };
    let (code, merged, err) = merge(&files, &["--format", "markdown"]);
    assert_eq!(code, 0, "{err}");
    let whole = ok(&[
        "replay", &root, "--policy", POLICIES, "--cost", "--format", "markdown",
    ]);
    assert_eq!(merged, whole);
    assert!(whole.contains("| 7 "), "{whole}");
}
