//! The `lab` binary end to end: outputs, exit codes, and the generated tables in GUIDE.md.

use crate::common;
use common::{lab, lab_command};

use std::process::Command;

#[test]
fn break_flag_and_subcommand_agree() {
    let (a, out_a, _) = lab(&["--break", "D6"]);
    let (b, out_b, _) = lab(&["break", "D6"]);
    assert_eq!((a, b), (0, 0));
    assert_eq!(out_a, out_b);
    assert!(out_a.contains("lost_forever 0 → 1 [b1]"), "{out_a}");
}

#[test]
fn d2_prints_no_observable_difference_at_both_path_lengths() {
    let (code, out, _) = lab(&["--break", "D2", "--path-len", "60,160"]);
    assert_eq!(code, 0);
    assert_eq!(
        out.matches("(no observable difference)").count(),
        2,
        "{out}"
    );
    // Each says why, and where D2 is caught (`lab list` says it is).
    assert_eq!(
        out.matches("another safeguard still covers the removed one")
            .count(),
        2,
        "{out}"
    );
    assert!(out.contains("`lab hunt --break D2` finds"), "{out}");
}

#[test]
fn unknown_experiment_is_a_usage_error_listing_the_ids() {
    let (code, out, err) = lab(&["--break", "D9"]);
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert!(
        err.contains("unknown experiment \"D9\"") && err.contains("D6"),
        "{err}"
    );
}

#[test]
fn other_layer_ids_are_explained() {
    for id in ["D1", "D4", "D5"] {
        let (code, _, err) = lab(&["break", id]);
        assert_eq!(code, 2);
        assert!(err.contains("not a memory-management experiment"), "{err}");
    }
}

#[test]
fn bad_override_and_short_path_name_the_fix() {
    let (code, _, err) = lab(&["probe", "--set", "unseen_gaurd=false"]);
    assert_eq!(code, 2);
    assert!(err.contains("unseen_guard"), "{err}");
    let (code, _, err) = lab(&["probe", "--path-len", "3"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--path-len") && err.contains("3 is outside 20..=4096"),
        "{err}"
    );
    // Within the bounds but too short for scenario A's 7-char ids: the minimum that works.
    let (code, _, err) = lab(&["break", "A", "--path-len", "21"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--path-len 21 is shorter than the minimum 25") && err.contains("fix:"),
        "{err}"
    );
    let (code, _, err) = lab(&["break", "A", "--path-len", "25"]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn probe_and_break_take_ranges_and_the_seed_range_runs() {
    let (code, out, err) = lab(&["probe", "--path-len", "30..51:7", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let lens: Vec<u64> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path_len"].as_u64().unwrap())
        .collect();
    assert_eq!(lens, [30, 37, 44, 51]);
    assert_eq!(v[0]["profile"], "prototype");
}

#[test]
fn both_backends_print_the_same_verdicts() {
    let args = ["break", "D6", "G1", "--path-len", "130..200:35"];
    let (code, mem, _) = lab(&args);
    assert_eq!(code, 0);
    let mut disk_args = args.to_vec();
    disk_args.extend(["--fs", "disk"]);
    let (code, disk, err) = lab(&disk_args);
    assert_eq!(code, 0, "{err}");
    assert_eq!(mem, disk);
}

#[test]
fn break_d6_over_the_seed_range_shows_the_single_threshold_at_90() {
    let (code, out, err) = lab(&["break", "D6", "--path-len", "30..200", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let cells = v[0]["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 171);
    // The broken side's pointer_lost changes exactly once, between 89 and 90.
    let pointer_lost: Vec<(u64, u64)> = cells
        .iter()
        .map(|c| {
            let len = c["label"]
                .as_str()
                .unwrap()
                .trim_start_matches("path_len=")
                .parse()
                .unwrap();
            let n = c["broken"]
                .as_array()
                .unwrap()
                .iter()
                .find(|k| k["name"] == "pointer_lost")
                .unwrap()["value"]
                .as_u64()
                .unwrap();
            (len, n)
        })
        .collect();
    let changes: Vec<u64> = pointer_lost
        .windows(2)
        .filter(|w| w[0].1 != w[1].1)
        .map(|w| w[1].0)
        .collect();
    assert_eq!(changes, [90], "{pointer_lost:?}");
    let (code, table, _) = lab(&["break", "D6", "--path-len", "30..200"]);
    assert_eq!(code, 0);
    let line = table
        .lines()
        .find(|l| l.starts_with("  thresholds (broken):"))
        .unwrap_or_default();
    assert!(line.contains("pointer_lost 0→1 at path_len=90"), "{line}");
}

#[test]
fn selftest_and_the_registry_pass_with_a_60_char_tmpdir() {
    let base = tempfile::tempdir().unwrap();
    let pad = 60usize
        .saturating_sub(base.path().to_string_lossy().len() + 1)
        .max(1);
    let long = base.path().join("t".repeat(pad));
    std::fs::create_dir_all(&long).unwrap();
    for args in [&["selftest"][..], &["break", "all"][..]] {
        let out = lab_command()
            .args(args)
            .env("TMPDIR", &long)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Nothing of a run is left in the temp dir.
    assert_eq!(std::fs::read_dir(&long).unwrap().count(), 0);
}

#[test]
fn a_disk_run_leaves_no_temp_dir_behind_after_sigterm() {
    let base = tempfile::tempdir().unwrap();
    let mut child = lab_command()
        .args([
            "sweep",
            "--vary",
            "all",
            "--path-len",
            "120..200",
            "--fs",
            "disk",
        ])
        .env("TMPDIR", base.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the sweep has temp dirs, then stop it.
    let started = std::time::Instant::now();
    while std::fs::read_dir(base.path()).unwrap().count() == 0
        && started.elapsed() < std::time::Duration::from_secs(20)
    {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let status = child.wait().unwrap();
    assert!(!status.success());
    let left: Vec<_> = std::fs::read_dir(base.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn json_output_parses() {
    let (code, out, _) = lab(&["--break", "D3", "--format", "json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v[0]["id"], "D3");
}

#[test]
fn list_is_snapshotted_and_guide_tables_are_current() {
    let (code, out, _) = lab(&["list"]);
    assert_eq!(code, 0);
    insta::assert_snapshot!("lab_list", out);
    let chapter = |name: &str| {
        std::fs::read_to_string(format!("{}/docs/src/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
    };
    assert!(
        chapter("experiments.md").contains(&ctxlab::cli::readme_block()),
        "docs/src/experiments.md's experiment table is stale: run `make readme`"
    );
    assert!(
        chapter("policy-table.md").contains(&ctxlab::cli::policies_block().unwrap()),
        "docs/src/policy-table.md's policy table is stale: run `make readme`"
    );
    let (_, profiles, _) = lab(&["profiles"]);
    insta::assert_snapshot!("lab_profiles", profiles);
}

#[test]
fn selftest_passes() {
    let (code, out, err) = lab(&["selftest"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("every expectation holds"));
}

#[test]
fn same_command_same_bytes() {
    for args in [
        &["break", "all", "--format", "json"][..],
        &["list", "--format", "markdown"][..],
    ] {
        let (a, out_a, _) = lab(args);
        let (b, out_b, _) = lab(args);
        assert_eq!((a, b), (0, 0));
        assert_eq!(out_a, out_b, "{args:?}");
        assert!(
            !out_a.contains("/tmp/"),
            "machine paths leaked into {args:?}"
        );
    }
}

#[test]
fn replay_reports_damaged_input_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("cut.jsonl");
    std::fs::write(
        &f,
        concat!(
            r#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","isSidechain":false,"message":{"role":"user","content":"hi"}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s","isSidechain":false,"message":{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"bash","input":{}}]}}"#,
            "\n",
            r#"{"type":"user","uuid":"u2","parentUuid":"a1","#,
        ),
    )
    .unwrap();
    let (code, out, err) = lab(&["replay", f.to_str().unwrap(), "--profile", "hardened"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("cut.jsonl:3"), "{err}");
    assert!(out.contains("hardened"), "{out}");
    let (code, _, err) = lab(&["replay", f.to_str().unwrap(), "--strict"]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("cut.jsonl:3"), "{err}");
    let (code, _, err) = lab(&["replay", f.to_str().unwrap(), "--profile", "nope"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = lab(&["replay", f.to_str().unwrap(), "--scale", "0"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn import_summarises_and_flags_damage() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("dangling.jsonl");
    std::fs::write(
        &f,
        concat!(
            r#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","isSidechain":false,"message":{"role":"user","content":"hi"}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s","isSidechain":false,"message":{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"bash","input":{}}]}}"#,
            "\n",
        ),
    )
    .unwrap();
    let (code, out, err) = lab(&["import", f.to_str().unwrap(), "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("dangling.jsonl:2") && err.contains("t1"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v[0]["file"], "dangling.jsonl");
    let (code, _, err) = lab(&["import", f.to_str().unwrap(), "--strict"]);
    assert_eq!(code, 3, "{err}");
}

#[test]
fn fs_is_accepted_before_and_after_the_command() {
    let run = |args: &[&str], tmpdir: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_lab"))
            .args(args)
            .env("TMPDIR", tmpdir)
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        (out.status.code().unwrap_or(-1), text)
    };
    let tmp = std::env::temp_dir();
    let tmp = tmp.to_str().unwrap();
    let before = ["--fs", "disk", "break", "D6", "--path-len", "90"];
    let after = ["break", "D6", "--path-len", "90", "--fs", "disk"];
    let (code_b, out_b) = run(&before, tmp);
    let (code_a, out_a) = run(&after, tmp);
    assert_eq!((code_b, code_a), (0, 0));
    assert_eq!(out_b, out_a);
    assert!(out_b.contains("pointer_lost"), "{out_b}");
    // Both spellings really select the disk: with no usable TMPDIR the disk
    // run fails on the file system (exit 4) while the memory run does not.
    let missing = "/nonexistent-ctxlab-tmpdir/x";
    assert_eq!(run(&before, missing).0, 4);
    assert_eq!(run(&after, missing).0, 4);
    assert_eq!(run(&["--fs", "mem", "break", "D6"], missing).0, 0);
    // Without a command `--fs` goes with `--break`.
    assert_eq!(run(&["--fs", "disk", "--break", "D6"], missing).0, 4);
}

#[test]
fn break_options_before_a_command_are_refused() {
    for args in [
        &["--format", "json", "list"][..],
        &["--path-len", "90", "break", "D6"],
        &["--break", "D6", "list"],
    ] {
        let (code, out, err) = lab(args);
        assert_eq!(code, 2, "{args:?}: {out}");
        assert!(err.contains("give it after the command"), "{err}");
    }
}

#[test]
fn a_reader_that_closes_the_pipe_early_ends_the_run_quietly() {
    // `lab list | head -1`: the reader is gone before lab writes; lab exits 0
    // (documented in README.md "Exit codes") without a panic message.
    for args in [&["list"][..], &["break", "D6"]] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_lab"))
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(err.is_empty(), "{err}");
    }
}

#[test]
fn break_json_cells_carry_path_len_profile_and_overrides() {
    let (code, out, err) = lab(&[
        "break",
        "D6",
        "A",
        "--path-len",
        "60..62",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let verdicts = v.as_array().expect("one document: an array of verdicts");
    let cells: Vec<&serde_json::Value> = verdicts
        .iter()
        .flat_map(|d| d["cells"].as_array().unwrap())
        .collect();
    assert_eq!(cells.len(), 6);
    for (c, len) in cells.iter().zip([60, 61, 62, 60, 61, 62]) {
        assert_eq!(c["path_len"], len, "{c}");
        assert_eq!(c["label"], format!("path_len={len}"));
    }
    assert_eq!(cells[0]["profile"], "prototype");
    assert_eq!(
        cells[0]["overrides"]["broken"],
        serde_json::json!(["order=micro_first", "unseen_guard=false"])
    );
    // A finding's fix is its baseline side.
    assert_eq!(cells[3]["profile"], "course-f9e8b28");
    assert_eq!(
        cells[3]["overrides"]["baseline"],
        serde_json::json!(["save_before_omit=true"])
    );
}
