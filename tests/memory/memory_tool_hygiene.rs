//! `lab memcheck` against external processes that misbehave as processes:
//! never reading their input, flooding their output, hanging, missing,
//! exiting at once, printing garbage. Each ends the run with exit 3 within
//! twice `--timeout` plus 10 s, naming the command, the last line of its
//! stderr and the fix, with nothing left running and no sandbox left.
//! Relative commands resolve where memcheck was started; Ctrl-C / SIGTERM
//! kill the tool's group and remove the run directory.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ctxlab::memory::tool::external::External;
use ctxlab::memory::tool::rows::{self, ToolVerdict};
use ctxlab::memory::tool::MemoryTool;

// 5 s, not 2: the flood case must read 64 MiB from `tr` before it, and
// on a 2-core CI machine running tests side by side 2 s was missed once
// in three runs under load.
const TIMEOUT_S: u64 = 5;

/// `lab memcheck --exec cmd --timeout TIMEOUT_S` with its own TMPDIR, run in `cwd`:
/// (exit code, stderr, seconds taken).
fn memcheck_in(cwd: &Path, tmpdir: &Path, cmd: &str, extra: &[&str]) -> (i32, String, f64) {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_lab"))
        .current_dir(cwd)
        .env("TMPDIR", tmpdir)
        .args([
            "memcheck",
            "--exec",
            cmd,
            "--timeout",
            &TIMEOUT_S.to_string(),
        ])
        .args(extra)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        started.elapsed().as_secs_f64(),
    )
}

/// Whether process `pid` still runs (a zombie counts as gone).
fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

fn left_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// A process that records its pid in `pids/` before misbehaving: every one
/// started must be gone when memcheck returns.
fn with_pid(pids: &Path, then: &str) -> String {
    format!("echo $$ > '{}/'$$; {then}", pids.display())
}

fn all_gone(pids: &Path) {
    let deadline = Instant::now() + Duration::from_secs(2);
    for name in left_in(pids) {
        let pid: u32 = name.parse().unwrap();
        while running(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(!running(pid), "process {pid} outlived memcheck");
    }
}

#[test]
fn a_misbehaving_process_ends_memcheck_with_exit_3_and_leaves_nothing() {
    let cases: &[(&str, &str, &str)] = &[
        ("never reads stdin", "exec sleep 100", "gave no answer"),
        ("floods stdout", "exec yes", "answered garbage"),
        (
            // It reads the request first: a tool whose input is closed
            // before memcheck writes fails on the write, whichever of
            // the shell's exec and the write comes first.
            "floods one line",
            "read line; exec tr '\\0' a < /dev/zero",
            "answered a line over",
        ),
        (
            "hangs after reading",
            "read line; exec sleep 100",
            "gave no answer",
        ),
        (
            "cannot be found",
            "no-such-memory-tool-4f1",
            "no-such-memory-tool-4f1: not found",
        ),
        (
            "exits at once",
            "echo 'ImportError: no memory tool' >&2; exit 1",
            "ImportError: no memory tool",
        ),
        (
            "prints garbage",
            "echo garbage; cat > /dev/null",
            "answered garbage",
        ),
    ];
    for (what, body, needle) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let pids = tempfile::tempdir().unwrap();
        let cmd = with_pid(pids.path(), body);
        let (code, err, secs) = memcheck_in(Path::new("."), tmp.path(), &cmd, &[]);
        assert_eq!(code, 3, "{what}: {err}");
        assert!(
            secs < (2 * TIMEOUT_S + 10) as f64,
            "{what}: took {secs:.1} s"
        );
        assert!(err.contains(&cmd), "{what}: names the command: {err}");
        assert!(err.contains(needle), "{what}: says why ({needle}): {err}");
        assert!(err.contains("fix: check that `sh -c"), "{what}: {err}");
        assert!(
            left_in(tmp.path()).is_empty(),
            "{what}: left {:?}",
            left_in(tmp.path())
        );
        assert!(!left_in(pids.path()).is_empty(), "{what}: never started");
        all_gone(pids.path());
    }
}

/// The README's `--exec "python3 my_memory_tool.py"`: a relative path in
/// the command resolves against the directory memcheck was started in.
#[test]
fn a_relative_command_resolves_where_memcheck_was_started() {
    let here = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        here.path().join("my_memory_tool.sh"),
        format!(
            "exec '{}' memtool-serve reference\n",
            env!("CARGO_BIN_EXE_lab")
        ),
    )
    .unwrap();
    let (code, err, _) = memcheck_in(
        here.path(),
        tmp.path(),
        "sh my_memory_tool.sh",
        &["--row", "replace-none", "--row", "insert-works"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(left_in(tmp.path()).is_empty());
    // Started elsewhere, the same command cannot find its script: exit 3.
    let (code, err, _) = memcheck_in(tmp.path(), tmp.path(), "sh my_memory_tool.sh", &[]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("my_memory_tool.sh"), "{err}");
}

/// The 8 MiB request of `huge-file` to a process that never reads its
/// input: the write gives up at the timeout instead of blocking forever.
#[test]
fn a_write_to_a_process_that_never_reads_is_under_the_timeout() {
    let tmp = tempfile::tempdir().unwrap();
    let row = rows::rows()
        .into_iter()
        .find(|r| r.id == "huge-file")
        .unwrap();
    let make = |_: ctxlab::storage::Shared, root: &Path| {
        External::start("exec sleep 30", root, Duration::from_millis(500))
            .map(|t| Box::new(t) as Box<dyn MemoryTool>)
    };
    let started = Instant::now();
    let v = rows::run_row(&row, &make, false, tmp.path()).unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    match v {
        ToolVerdict::Failed(d) => assert!(d.contains("did not read its request"), "{d}"),
        other => panic!("{other:?}"),
    }
}

/// SIGTERM (as Ctrl-C) during a row: memcheck exits 130, the tool's whole
/// process group is killed, and the run directory is removed.
#[test]
fn sigterm_kills_the_tool_s_group_and_removes_the_sandbox() {
    let tmp = tempfile::tempdir().unwrap();
    let pids = tempfile::tempdir().unwrap();
    // Answers the preflight, then hangs in a child on the first row.
    let serve = format!("'{}' memtool-serve reference", env!("CARGO_BIN_EXE_lab"));
    let cmd = format!(
        "if [ -e '{p}/first' ]; then sh -c \"echo \\$\\$ > '{p}'/child-\\$\\$; exec sleep 60\" & wait; else touch '{p}/first'; exec {serve}; fi",
        p = pids.path().display()
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_lab"))
        .env("TMPDIR", tmp.path())
        .args(["memcheck", "--exec", &cmd, "--timeout", "60"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !left_in(pids.path()).iter().any(|n| n.starts_with("child-")) {
        assert!(
            Instant::now() < deadline,
            "the tool never started its child"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !left_in(tmp.path()).is_empty(),
        "a run directory exists while it runs"
    );
    let pid = i32::try_from(child.id()).unwrap();
    assert!(pid > 1);
    // SAFETY: kill(2) on our own child's pid (positive: one process).
    unsafe {
        libc::kill(pid, libc::SIGTERM);
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let grandchild: u32 = left_in(pids.path())
        .iter()
        .find_map(|n| n.strip_prefix("child-"))
        .unwrap()
        .parse()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(2);
    while running(grandchild) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!running(grandchild), "the tool's child outlived memcheck");
    assert!(
        left_in(tmp.path()).is_empty(),
        "left {:?}",
        left_in(tmp.path())
    );
}

/// `make memtools` with an install directory it cannot use stops at once,
/// saying so, before installing or recording anything.
#[test]
fn memtools_fails_loudly_on_an_unusable_install_directory() {
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("SKIP: python3 is absent (the script needs it first)");
        return;
    }
    let out = Command::new("sh")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("scripts/memtools.sh")
        .env("CTXLAB_MEMTOOLS", "/proc/ctxlab-no-such-dir")
        .env("LAB", "/bin/false")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("/proc/ctxlab-no-such-dir cannot be created"),
        "{err}"
    );
}
