//! `lab replay --policy` reads its inputs as every command does: tar
//! archives of any format, the same refusals (a FIFO), the same damage
//! reporting, and `--jobs` bounded.

use std::path::Path;

use crate::common::lab;

#[test]
fn a_tar_of_claude_code_logs_replays_as_its_files_do() {
    let Some(t) = crate::common::transcripts() else {
        return;
    };
    let logs = t.join("claude_code");
    let names = [
        "claude-code-config-73752f2f__dotclaude.jsonl",
        "claude-code-viewer__fe5e1c67.jsonl",
    ];
    let dir = tempfile::tempdir().unwrap();
    let unpacked = dir.path().join("logs");
    std::fs::create_dir(&unpacked).unwrap();
    let tar_path = dir.path().join("logs.tar");
    let mut b = tar::Builder::new(std::fs::File::create(&tar_path).unwrap());
    for n in names {
        b.append_path_with_name(logs.join(n), n).unwrap();
        std::fs::copy(logs.join(n), unpacked.join(n)).unwrap();
    }
    b.finish().unwrap();
    drop(b);
    let args = [
        "--policy",
        "none,claude-code",
        "--cost",
        "--format",
        "jsonl",
    ];
    let run = |input: &Path| {
        let mut a = vec!["replay", input.to_str().unwrap()];
        a.extend(args);
        let (code, out, err) = lab(&a);
        assert_eq!(code, 0, "{}: {err}", input.display());
        out
    };
    let from_tar = run(&tar_path);
    let from_dir = run(&unpacked);
    assert!(!from_tar.is_empty());
    // The same records: recorded usage read back from the archive member.
    let strip = |s: &str| -> Vec<serde_json::Value> {
        s.lines()
            .map(|l| {
                let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
                v.as_object_mut().unwrap().remove("session");
                v
            })
            .collect()
    };
    assert_eq!(strip(&from_tar), strip(&from_dir));
}

#[cfg(unix)]
#[test]
fn a_fifo_is_refused_on_the_policy_path_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("s.jsonl");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("SKIP: mkfifo not available");
        return;
    }
    let mut child = crate::common::lab_command()
        .args(["replay", fifo.to_str().unwrap(), "--policy", "none"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > std::time::Duration::from_secs(20) {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("lab replay --policy waited on a FIFO");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(status.code(), Some(3), "{err}");
    assert!(err.contains("FIFO"), "{err}");
}

#[test]
fn import_damage_reaches_stderr_on_the_policy_path() {
    let Some(t) = crate::common::transcripts() else {
        return;
    };
    let bytes = std::fs::read(t.join("claude_code/claude-code-viewer__fe5e1c67.jsonl")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cut = crate::common::write(dir.path(), "cut.jsonl", &bytes[..300_000]);
    let whole = crate::common::write(dir.path(), "whole.jsonl", &bytes);
    let (code, _, err) = lab(&["replay", cut.to_str().unwrap(), "--policy", "none"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("warning: ") && err.contains("cut.jsonl:153:"),
        "{err}"
    );
    assert!(err.contains(": truncated:"), "{err}");
    let (code, _, err) = lab(&["replay", whole.to_str().unwrap(), "--policy", "none"]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("truncated"), "the intact log is clean: {err}");
}

#[test]
fn jobs_past_the_cap_are_a_usage_error() {
    let (code, _, err) = lab(&[
        "replay",
        "Cargo.toml",
        "--policy",
        "none",
        "--jobs",
        "99999",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("more than the 256 allowed"), "{err}");
    let (code, _, err) = lab(&["sweep", "--jobs", "100000"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn help_lists_every_format_from_the_table_guide_lists() {
    let names = ctxlab::import::format_list::names("|");
    let guide = crate::common::guide();
    assert!(
        guide.contains(&format!("`--format-in {names}`")),
        "GUIDE lists the formats of format_list::ALL"
    );
    for args in [&["replay", "--help"][..], &["import", "--help"]] {
        let help = crate::common::lab_ok(args);
        let names = ctxlab::import::format_list::names(", ");
        assert!(
            help.contains(&format!("[possible values: {names}]")),
            "{args:?} lists every format as --format-in's values: {help}"
        );
        assert!(!help.contains("with --profile only"), "{help}");
    }
    let help = crate::common::lab_ok(&["replay", "--help"]);
    assert!(help.contains("with --policy and --profile alike"), "{help}");
}

#[test]
fn an_unknown_format_is_refused_with_exit_2_naming_every_format() {
    let names = ctxlab::import::format_list::names(", ");
    for command in ["replay", "import"] {
        let (code, out, err) = crate::common::lab(&[command, "x.jsonl", "--format-in", "yaml"]);
        assert_eq!(code, 2, "{command}: {err}");
        assert!(out.is_empty(), "{command}: {out}");
        assert!(
            err.contains("'yaml'") && err.contains("--format-in"),
            "{err}"
        );
        assert!(
            err.contains(&format!("[possible values: {names}]")),
            "{command} names every format: {err}"
        );
    }
}

#[test]
fn the_sweep_header_counts_sessions_not_files() {
    let Some(t) = crate::common::transcripts() else {
        return;
    };
    // One log, five subagents: six sessions.
    let f = t.join("claude_code/claude-code-viewer__fe5e1c67.jsonl");
    let out = crate::common::lab_ok(&[
        "sweep",
        "--policy",
        "claude-code",
        "--vary",
        "autocompact_buffer=5000..10000:5000",
        "--sessions",
        f.to_str().unwrap(),
    ]);
    let header = out.lines().next().unwrap();
    assert!(
        header.contains("varied on 6 real sessions from 1 file ("),
        "{header}"
    );
    let row = out.lines().find(|l| l.contains("│ 5000 ")).unwrap();
    assert!(row.contains("┆ 6 "), "the table's count: {row}");
}

/// A directory of `n` generated sessions.
fn sessions_in(dir: &Path, n: usize) -> std::path::PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    for i in 0..n {
        let messages = ctxlab::replay::profiles::synthetic_main(2 + i, 300);
        crate::common::write(
            dir,
            &format!("s{i}.json"),
            &serde_json::to_string(&messages).unwrap(),
        );
    }
    dir.to_path_buf()
}

/// No data is never a result: a corpus in which no session is found is
/// refused with exit 3 and nothing on stdout, in every output format.
#[test]
fn a_corpus_of_no_sessions_is_refused_with_nothing_written() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let notes = dir.path().join("notes");
    std::fs::create_dir(&notes).unwrap();
    std::fs::write(notes.join("a.txt"), "not a session\n").unwrap();
    for (input, says) in [
        (&empty, "no file or member to read"),
        (&notes, "1 files or members, none of them a session"),
    ] {
        for format in [
            &["--format", "table"][..],
            &["--format", "json", "--per-session"],
            &["--format", "jsonl"],
        ] {
            let mut args = vec!["replay", input.to_str().unwrap(), "--policy", "none"];
            args.extend(format);
            let (code, out, err) = lab(&args);
            assert_eq!(code, 3, "{args:?}: {err}");
            assert_eq!(out, "", "{args:?}");
            assert!(
                err.contains("no sessions to replay") && err.contains(says),
                "{err}"
            );
            assert!(err.contains("fix:"), "{err}");
        }
    }
    // The control: the same command on a directory with a session passes.
    let one = sessions_in(&dir.path().join("one"), 1);
    let (code, out, err) = lab(&[
        "replay",
        one.to_str().unwrap(),
        "--policy",
        "none",
        "--format",
        "jsonl",
    ]);
    assert_eq!((code, out.lines().count()), (0, 1), "{err}");
}

/// A corpus assembled from symbolic links to session files replays as the
/// files do; a link to a directory is named, not followed.
#[cfg(unix)]
#[test]
fn links_to_session_files_are_read_and_links_to_directories_named() {
    let dir = tempfile::tempdir().unwrap();
    let real = sessions_in(&dir.path().join("real"), 3);
    let linked = dir.path().join("linked");
    std::fs::create_dir(&linked).unwrap();
    for i in 0..3 {
        std::os::unix::fs::symlink(
            real.join(format!("s{i}.json")),
            linked.join(format!("s{i}.json")),
        )
        .unwrap();
    }
    std::os::unix::fs::symlink(&real, linked.join("loop")).unwrap();
    let run = |input: &Path| {
        let (code, out, err) = lab(&[
            "replay",
            input.to_str().unwrap(),
            "--policy",
            "none,course-main",
            "--format",
            "jsonl",
        ]);
        assert_eq!(code, 0, "{err}");
        let records: Vec<serde_json::Value> = out
            .lines()
            .map(|l| {
                let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
                v.as_object_mut().unwrap().remove("session");
                v
            })
            .collect();
        (records, err)
    };
    let (from_links, err) = run(&linked);
    let (from_files, _) = run(&real);
    assert_eq!(from_links.len(), 6);
    assert_eq!(from_links, from_files);
    assert!(
        err.contains("a symbolic link to a directory is not followed"),
        "{err}"
    );
}

/// The command line is checked before the inputs are read: a mistyped
/// policy is a usage error (exit 2) naming it, even where the input would
/// fail on its own or be a directory to walk.
#[test]
fn an_unknown_policy_is_named_before_any_input_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-corpus");
    let (code, out, err) = lab(&[
        "replay",
        missing.to_str().unwrap(),
        "--policy",
        "tail-window",
    ]);
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert!(err.contains("unknown policy `tail-window`"), "{err}");
    // The control: a known policy reaches the input, and its error (a
    // path that does not exist: exit 4, as for every command).
    let (code, _, err) = lab(&["replay", missing.to_str().unwrap(), "--policy", "none"]);
    assert_eq!(code, 4, "{err}");
    assert!(err.contains("no-such-corpus"), "{err}");
}
