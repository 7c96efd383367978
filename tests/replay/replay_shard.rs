//! `lab replay CORPUS --shard i/n --format json` and `lab replay --merge`:
//! sessions go to shards by a stable hash of their key, a shard opens only
//! its own, the merged parts print what the whole run prints, byte for
//! byte; an edited, cut, missing, doubled or foreign part is refused naming
//! the file, with nothing printed.

use crate::common;

use common::lab;

pub(crate) const POLICIES: &str = "none,prototype,codex-cli,claude-code";

pub(crate) fn ok(args: &[&str]) -> String {
    let (code, out, err) = lab(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    out
}

/// Write the `n` shard parts of a `--cost --retention` replay of `root`; their paths.
pub(crate) fn parts(root: &str, dir: &std::path::Path, n: usize) -> Vec<String> {
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

pub(crate) fn merge(files: &[String], extra: &[&str]) -> (i32, String, String) {
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
    // A part replays the sessions whose key hashes to it, and says which shard it is.
    let part: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&files[1]).unwrap()).unwrap();
    let corpus = &part["corpus"];
    assert_eq!(corpus["shard"], serde_json::json!({"index": 1, "count": 3}));
    assert_eq!(corpus["items"], 11);
    let keys: Vec<&str> = corpus["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["key"].as_str().unwrap())
        .collect();
    let expected: Vec<String> = (0..11)
        .map(|i| format!("s{i:03}.json"))
        .filter(|k| ctxlab::shard::owner_of_key(k, 3) == 1)
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(keys, expected);
    assert_eq!(corpus["sessions"], expected.len());
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
    let (code, out, err) = merge(&files[..1], &[]);
    assert_eq!(code, 3, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("missing 1/2") && err.contains("fix:"), "{err}");

    // A part of another replay (other policies).
    let other = ok(&[
        "replay", &root, "--policy", "none", "--shard", "1/2", "--format", "json",
    ]);
    let other = common::write(dir.path(), "other.json", &other);
    let (code, _, err) = merge(
        &[files[0].clone(), other.to_string_lossy().into_owned()],
        &[],
    );
    assert_eq!(code, 3, "{err}");
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

/// The keys of every file under `root` and the shard of `n` each goes to.
fn owners(root: &std::path::Path, n: usize) -> std::collections::BTreeMap<String, usize> {
    let inputs = ctxlab::import::corpus::expand(&[root.to_path_buf()]).unwrap();
    let input = &inputs[0];
    input
        .items
        .iter()
        .map(|item| {
            let key = ctxlab::import::corpus::Keys::of(input, item).key;
            let owner = ctxlab::shard::owner_of_key(&key, n);
            (key, owner)
        })
        .collect()
}

#[test]
fn adding_ten_sessions_to_five_hundred_moves_none_of_them() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("corpus");
    std::fs::create_dir_all(root.join("a")).unwrap();
    // Listing is all a shard's choice reads: the files need not be sessions.
    for i in 0..500 {
        common::write(&root.join("a"), &format!("s{:04}.json", i * 2), "[]");
    }
    let before = owners(&root, 8);
    assert_eq!(before.len(), 500);
    assert!(
        before.keys().all(|k| k.starts_with("a/s")),
        "keys are relative to the corpus"
    );
    // The new sessions sort between the old ones (odd numbers): an index in
    // corpus order would move most of the old ones.
    for i in 0..10 {
        common::write(&root.join("a"), &format!("s{:04}.json", i * 98 + 1), "[]");
    }
    let after = owners(&root, 8);
    assert_eq!(after.len(), 510);
    let moved: Vec<&String> = before
        .iter()
        .filter(|(k, o)| after[*k] != **o)
        .map(|(k, _)| k)
        .collect();
    assert!(moved.is_empty(), "moved: {moved:?}");
    let by_index_moved = before
        .keys()
        .enumerate()
        .filter(|(i, k)| after.keys().position(|a| a == *k).unwrap() % 8 != i % 8)
        .count();
    assert!(by_index_moved > 100, "{by_index_moved}");
    // Every shard gets a share.
    for shard in 0..8 {
        let n = after.values().filter(|o| **o == shard).count();
        assert!((30..=100).contains(&n), "shard {shard}: {n}");
    }
    // The same corpus moved elsewhere keeps its keys.
    let moved_root = dir.path().join("elsewhere");
    std::fs::rename(&root, &moved_root).unwrap();
    assert_eq!(owners(&moved_root, 8), after);
}

#[test]
fn a_shard_keeps_its_sessions_when_sessions_are_added() {
    let dir = tempfile::tempdir().unwrap();
    let root = super::replay_jobs::mixed_corpus(dir.path(), 8);
    let first = ok(&[
        "replay",
        &root,
        "--policy",
        "none,codex-cli",
        "--shard",
        "0/3",
        "--format",
        "json",
    ]);
    for i in 0..3 {
        let messages = ctxlab::replay::profiles::synthetic_main(3 + i, 500);
        common::write(
            std::path::Path::new(&root),
            &format!("s{i:03}x.json"),
            &serde_json::to_string(&messages).unwrap(),
        );
    }
    let second = ok(&[
        "replay",
        &root,
        "--policy",
        "none,codex-cli",
        "--shard",
        "0/3",
        "--format",
        "json",
    ]);
    let records = |text: &str| -> Vec<serde_json::Value> {
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        v["corpus"]["records"].as_array().unwrap().clone()
    };
    let (old, new) = (records(&first), records(&second));
    assert!(!old.is_empty());
    // Every session of the first run is in the second, with the same numbers.
    for s in &old {
        let same = new.iter().find(|n| n["key"] == s["key"]);
        assert_eq!(
            same.map(|n| &n["records"]),
            Some(&s["records"]),
            "{}",
            s["key"]
        );
    }
    // The only new ones are among the added files.
    for n in &new {
        let key = n["key"].as_str().unwrap();
        assert!(
            old.iter().any(|s| s["key"] == key) || key.ends_with("x.json"),
            "{key}"
        );
    }
}

#[test]
fn a_shard_opens_only_its_own_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let root = super::replay_jobs::mixed_corpus(dir.path(), 9);
    let args = |root: &str| -> Vec<String> {
        [
            "replay",
            root,
            "--policy",
            "none,codex-cli",
            "--shard",
            "1/2",
            "--format",
            "json",
        ]
        .map(String::from)
        .to_vec()
    };
    let run = |args: &[String]| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        lab(&args)
    };
    let (code, clean, err) = run(&args(&root));
    assert_eq!(code, 0, "{err}");
    // The other shard's files made unreadable as sessions: had the shard
    // opened one, it would be skipped and named on stderr.
    let theirs = owners(std::path::Path::new(&root), 2);
    let mut damaged = 0;
    for (key, owner) in &theirs {
        if *owner != 1 {
            std::fs::write(std::path::Path::new(&root).join(key), "not a session\n").unwrap();
            damaged += 1;
        }
    }
    assert!(damaged > 0 && damaged < 9, "{damaged}");
    let (code, part, err) = run(&args(&root));
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("skipped"), "{err}");
    assert!(
        part == clean,
        "the part changed when other shards' files did"
    );
    // The whole run does open them.
    let (_, _, err) = lab(&["replay", &root, "--policy", "none", "--format", "json"]);
    let skipped = err.lines().filter(|l| l.starts_with("skipped ")).count();
    assert_eq!(skipped, damaged, "{err}");

    // An archive of the same files: members of the other shard are skipped
    // unread (a plain tar is seeked over, a compressed one never imported).
    // Keys and numbers; the place differs (members of one archive).
    let records = |text: &str| -> Vec<(serde_json::Value, serde_json::Value)> {
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        let all = v["corpus"]["records"].as_array().unwrap().clone();
        all.into_iter()
            .map(|s| (s["key"].clone(), s["records"].clone()))
            .collect()
    };
    let status = std::process::Command::new("tar")
        .current_dir(&root)
        .args(["-cf", "../c.tar"])
        .args(theirs.keys())
        .status()
        .unwrap();
    assert!(status.success());
    let status = std::process::Command::new("sh")
        .current_dir(dir.path())
        .args(["-c", "gzip -k -c c.tar > c.tgz"])
        .status()
        .unwrap();
    assert!(status.success());
    for archive in ["c.tar", "c.tgz"] {
        let path = dir.path().join(archive).to_string_lossy().into_owned();
        let (code, out, err) = run(&args(&path));
        assert_eq!(code, 0, "{archive}: {err}");
        assert!(!err.contains("skipped"), "{archive}: {err}");
        assert_eq!(records(&out), records(&clean), "{archive}");
    }
}

#[test]
fn a_cut_doubled_or_foreign_part_is_refused_with_nothing_printed() {
    let dir = tempfile::tempdir().unwrap();
    let root = super::replay_jobs::mixed_corpus(dir.path(), 6);
    let files = parts(&root, dir.path(), 3);
    let refused = |files: &[String], what: &str, names: &str| {
        let (code, out, err) = merge(files, &["--format", "json"]);
        assert_eq!(code, 3, "{what}: {err}");
        assert!(out.is_empty(), "{what}: printed {out}");
        assert!(
            err.contains(what) && err.contains(names) && err.contains("fix:"),
            "{what}: {err}"
        );
    };
    // Cut short, as a shard killed mid-write would leave it.
    let text = std::fs::read_to_string(&files[2]).unwrap();
    let cut = common::write(dir.path(), "cut.json", &text[..text.len() / 2]);
    let cut = cut.to_string_lossy().into_owned();
    refused(
        &[files[0].clone(), files[1].clone(), cut.clone()],
        "not the JSON of a corpus replay",
        &cut,
    );
    // A shard twice (and so another missing).
    refused(
        &[files[0].clone(), files[1].clone(), files[1].clone()],
        "shard 1/3 is also",
        &files[1],
    );
    // A part of a run over a corpus that has changed since.
    common::write(std::path::Path::new(&root), "s999.json", "[]");
    let later = ok(&[
        "replay",
        &root,
        "--policy",
        POLICIES,
        "--cost",
        "--retention",
        "--shard",
        "2/3",
        "--format",
        "json",
    ]);
    let later = common::write(dir.path(), "later.json", &later)
        .to_string_lossy()
        .into_owned();
    refused(
        &[files[0].clone(), files[1].clone(), later.clone()],
        "listings",
        &later,
    );
    // The parts of one run, in any order, still merge; again, the same bytes.
    let (code, a, err) = merge(
        &[files[2].clone(), files[0].clone(), files[1].clone()],
        &["--format", "json"],
    );
    assert_eq!(code, 0, "{err}");
    let (_, b, _) = merge(&files, &["--format", "json"]);
    assert_eq!(a, b);
}

#[test]
fn shard_auto_reads_the_job_array_index() {
    let dir = tempfile::tempdir().unwrap();
    let root = super::replay_jobs::mixed_corpus(dir.path(), 4);
    let args = [
        "replay", &root, "--policy", "none", "--shard", "auto/2", "--format", "json",
    ];
    let explicit = ok(&[
        "replay", &root, "--policy", "none", "--shard", "1/2", "--format", "json",
    ]);
    for (name, value) in [
        ("JOB_COMPLETION_INDEX", "1"),
        ("SLURM_ARRAY_TASK_ID", "1"),
        ("PARALLEL_SEQ", "2"),
    ] {
        let out = common::lab_command()
            .args(args)
            .env_remove("JOB_COMPLETION_INDEX")
            .env_remove("SLURM_ARRAY_TASK_ID")
            .env_remove("PARALLEL_SEQ")
            .env_remove("PARALLEL_SEQN")
            .env(name, value)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{name}: {err}");
        assert!(
            err.contains(&format!("shard 1/2 from {name}={value}")),
            "{err}"
        );
        assert!(String::from_utf8_lossy(&out.stdout) == explicit, "{name}");
    }
    for env in [
        None,
        Some(("SLURM_ARRAY_TASK_ID", "2")),
        Some(("PARALLEL_SEQ", "0")),
    ] {
        let mut cmd = common::lab_command();
        cmd.args(args)
            .env_remove("JOB_COMPLETION_INDEX")
            .env_remove("SLURM_ARRAY_TASK_ID")
            .env_remove("PARALLEL_SEQ")
            .env_remove("PARALLEL_SEQN");
        if let Some((k, v)) = env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{env:?}: {err}");
        assert!(out.stdout.is_empty());
        assert!(
            err.contains(env.map_or("JOB_COMPLETION_INDEX", |e| e.0)) && err.contains("fix:"),
            "{err}"
        );
    }
}

/// What one shard of `n` reads of an archive: each of its members' key and
/// the messages of its sessions, through the corpus walk a replay uses.
fn shard_members(archive: &std::path::Path, shard: usize, n: usize) -> Vec<(String, Vec<usize>)> {
    let inputs = ctxlab::import::corpus::expand(&[archive.to_path_buf()]).unwrap();
    let input = &inputs[0];
    let item = &input.items[0];
    let keys = ctxlab::import::corpus::Keys::of(input, item);
    let mut got = Vec::new();
    ctxlab::import::corpus::for_each_member_where(
        item,
        &keys,
        &ctxlab::import::ImportOptions::default(),
        false,
        &mut |key| ctxlab::shard::owner_of_key(key, n) == shard,
        |m| {
            let sessions = m.sessions.unwrap();
            got.push((m.key, sessions.iter().map(|s| s.main.len()).collect()));
            Ok(())
        },
    )
    .unwrap();
    got
}

/// The first shard to walk an archive saves its index; the next (as a
/// fresh process: nothing kept in memory) walks no header, reads its own
/// members at their offsets, and gets what a walk gets. A rewritten
/// archive is walked again.
#[test]
fn a_saved_tar_index_spares_later_shards_the_walk() {
    use ctxlab::import::tar_index;
    let dir = tempfile::tempdir().unwrap();
    let root = super::replay_jobs::mixed_corpus(dir.path(), 14);
    let status = std::process::Command::new("sh")
        .current_dir(&root)
        .args([
            "-c",
            "tar -cf ../c.tar *.json && gzip -k -c ../c.tar > ../c.tgz",
        ])
        .status()
        .unwrap();
    assert!(status.success());
    // Walked without an index directory: the reference.
    let reference: Vec<_> = ["c.tar", "c.tgz"]
        .iter()
        .map(|a| {
            let path = dir.path().join(a);
            tar_index::forget_kept();
            (0..2)
                .map(|s| shard_members(&path, s, 2))
                .collect::<Vec<_>>()
        })
        .collect();
    let index_dir = dir.path().join("index");
    tar_index::set_index_dir(Some(index_dir.clone()));
    for (archive, expected) in ["c.tar", "c.tgz"].iter().zip(&reference) {
        let path = dir.path().join(archive);
        tar_index::forget_kept();
        let before = tar_index::scans();
        assert_eq!(shard_members(&path, 0, 2), expected[0], "{archive}");
        assert_eq!(
            tar_index::scans(),
            before + 1,
            "{archive}: the first shard walks"
        );
        tar_index::forget_kept();
        assert_eq!(shard_members(&path, 1, 2), expected[1], "{archive}");
        assert_eq!(
            tar_index::scans(),
            before + 1,
            "{archive}: the second shard walked the archive again"
        );
        assert!(!expected[1].is_empty() && !expected[0].is_empty());
    }
    let saved = std::fs::read_dir(&index_dir).unwrap().count();
    assert_eq!(saved, 2, "one index per archive");
    // Rewritten (a member added): its saved index is not this version's.
    let path = dir.path().join("c.tar");
    let status = std::process::Command::new("sh")
        .current_dir(&root)
        .args(["-c", "cp s000.json s999.json && tar -cf ../c.tar *.json"])
        .status()
        .unwrap();
    assert!(status.success());
    tar_index::forget_kept();
    let before = tar_index::scans();
    let all: usize = (0..2).map(|s| shard_members(&path, s, 2).len()).sum();
    assert_eq!(all, 15);
    assert_eq!(tar_index::scans(), before + 1);
    tar_index::set_index_dir(None);
}
