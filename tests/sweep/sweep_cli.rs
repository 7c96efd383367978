//! `lab sweep` and `lab reports` end to end through the binary.

use crate::common;
use common::lab;

#[test]
fn shards_merged_on_the_command_line_equal_the_unsharded_run() {
    let common = [
        "sweep",
        "--vary",
        "order,unseen_guard",
        "--path-len",
        "80..100:5",
        "--seeds",
        "2",
    ];
    let tmp = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for i in 0..3 {
        let shard = format!("{i}/3");
        let mut args = common.to_vec();
        args.extend(["--shard", &shard, "--format", "json"]);
        let (code, out, err) = lab(&args);
        assert_eq!(code, 0, "{err}");
        let path = tmp.path().join(format!("s{i}.json"));
        std::fs::write(&path, out).unwrap();
        files.push(path.to_string_lossy().into_owned());
    }
    for format in ["table", "markdown", "json"] {
        let mut whole = common.to_vec();
        whole.extend(["--format", format]);
        let (c1, a, _) = lab(&whole);
        let mut merge = vec!["sweep", "--merge"];
        merge.extend(files.iter().map(String::as_str));
        merge.extend(["--format", format]);
        let (c2, b, err) = lab(&merge);
        assert_eq!((c1, c2), (0, 0), "{err}");
        assert_eq!(a, b, "{format}");
    }
}

#[test]
fn progress_goes_to_stderr_only_when_asked() {
    let args = ["sweep", "--vary", "order", "--path-len", "60,160"];
    let (_, quiet_out, quiet_err) = lab(&args);
    assert_eq!(quiet_err, "", "stderr is not a terminal under cargo test");
    let mut loud = args.to_vec();
    loud.push("--progress");
    let (code, out, err) = lab(&loud);
    assert_eq!(code, 0);
    assert_eq!(out, quiet_out, "progress never touches stdout");
    assert_eq!(err, "sweep: 4/4 cells\n");
}

#[test]
fn sweep_usage_errors_exit_2() {
    for args in [
        vec!["sweep", "--path-len", "60..x"],
        vec!["sweep", "--vary", "nope"],
        vec!["sweep", "--shard", "2/2"],
        vec!["sweep", "--path-len", "19"],
        vec!["sweep", "--path-len", "30..5000"],
        vec!["sweep", "--profile", "nope"],
    ] {
        let (code, _, err) = lab(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains("fix:"), "{args:?}: {err}");
    }
}

#[test]
fn merge_of_a_bad_file_names_it() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.json");
    std::fs::write(&bad, "{\n  \"spec\": 3\n}\n").unwrap();
    let (code, _, err) = lab(&["sweep", "--merge", bad.to_str().unwrap()]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("bad.json:2:"), "{err}");
}

#[test]
fn reports_check_exits_1_and_lists_drifted_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("reports");
    let d = dir.to_str().unwrap();
    // The checked-in reports (which CI's `make reports-check` and the
    // reports tests hold to the code) with one file edited: one generation,
    // not two, since each costs minutes of CPU in a debug build. "1 file(s)"
    // below also says that every other file matched.
    std::fs::create_dir(&dir).unwrap();
    let checked_in = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("reports");
    for e in std::fs::read_dir(checked_in).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
        }
    }
    std::fs::write(dir.join("factorial.md"), "edited\n").unwrap();
    let (code, _, err) = lab(&["reports", "--check", d]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("reports: 1 file(s) in"), "{err}");
    assert!(
        err.contains("error: 1 generated file differs from the checked-in copy"),
        "{err}"
    );
    assert!(err.contains("factorial.md (checked in)"), "{err}");
    assert!(err.contains("-edited"), "{err}");
    let (code, _, _) = lab(&["reports"]);
    assert_eq!(code, 2, "--out or --check is required");
}

/// Write shards `0/n .. n-1/n` of a small sweep into `dir`; returns their paths.
fn write_shards(dir: &std::path::Path, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let shard = format!("{i}/{n}");
            let args = [
                "sweep",
                "--vary",
                "order,unseen_guard",
                "--path-len",
                "88..92",
                "--shard",
                &shard,
                "--format",
                "json",
            ];
            let (code, out, err) = lab(&args);
            assert_eq!(code, 0, "{err}");
            let path = dir.join(format!("shard{i}.json"));
            std::fs::write(&path, out).unwrap();
            path.to_string_lossy().into_owned()
        })
        .collect()
}

#[test]
fn merge_refuses_a_shard_with_a_counter_edited_by_seven() {
    let tmp = tempfile::tempdir().unwrap();
    let files = write_shards(tmp.path(), 2);
    let text = std::fs::read_to_string(&files[1]).unwrap();
    let edited = text.replacen("\"pointer_lost\": 0", "\"pointer_lost\": 7", 1);
    assert_ne!(text, edited, "the shard has a pointer_lost of 0 to edit");
    std::fs::write(&files[1], edited).unwrap();
    let (code, out, err) = lab(&["sweep", "--merge", &files[0], &files[1]]);
    assert_eq!(code, 3, "{err}");
    assert!(out.is_empty());
    assert!(
        err.contains("shard1.json:") && err.contains("checksum does not match"),
        "{err}"
    );
}

#[test]
fn merge_refuses_the_options_it_would_ignore() {
    let tmp = tempfile::tempdir().unwrap();
    let files = write_shards(tmp.path(), 2);
    for extra in [
        ["--vary", "order"],
        ["--path-len", "60"],
        ["--profile", "hardened"],
    ] {
        let mut args = vec!["sweep", "--merge", &files[0], &files[1]];
        args.extend(extra);
        let (code, _, err) = lab(&args);
        assert_eq!(code, 2, "{extra:?}: {err}");
        assert!(err.contains("cannot be used with"), "{err}");
    }
    let (code, _, err) = lab(&["sweep", "--merge", &files[0], &files[1]]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn gnu_parallel_runs_the_shards_and_merge_equals_the_whole() {
    let tmp = tempfile::tempdir().unwrap();
    // The README's form: one job per shard, each writing its own JSON file.
    let args = "sweep --vary order,unseen_guard --path-len 80..100";
    let Some(files) = common::parallel_shards(tmp.path(), args, 4, "shard") else {
        return;
    };
    let mut merge = vec!["sweep", "--merge"];
    merge.extend(files.iter().map(String::as_str));
    let (c1, merged, err) = lab(&merge);
    assert_eq!(c1, 0, "{err}");
    let (c2, whole, _) = lab(&[
        "sweep",
        "--vary",
        "order,unseen_guard",
        "--path-len",
        "80..100",
    ]);
    assert_eq!(c2, 0);
    assert_eq!(merged, whole);
    assert!(whole.contains("pointer_lost 0→1 at path_len=90"), "{whole}");
}
