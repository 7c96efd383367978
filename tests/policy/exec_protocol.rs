//! External policies (`--policy exec:CMD`, protocol `ctxlab.policy/1`):
//! a well-behaved process is replayed and judged like a built-in design,
//! and every way a process can misbehave ends the replay with exit 3, the
//! command, the call and the fix, leaving no process behind. The policies
//! here are `sh` scripts, so the tests need nothing but a POSIX shell.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common;
use serde_json::Value;

/// A session of 6 tool calls whose third result is large (ids `toolu_0000`…).
fn session(dir: &Path) -> PathBuf {
    let text = serde_json::to_string(&common::tool_session(6, 2)).unwrap();
    common::write(dir, "s.json", &text)
}

/// `sh SCRIPT` as a policy spec, the script written in `dir`: `hello` is
/// answered by the first line (in `full` history mode), then `body` runs
/// once per `prepare` line in `$l` with `$n` its id.
fn policy(dir: &Path, name: &str, body: &str) -> String {
    let script = format!(
        "read l\necho '{{\"protocol\":\"ctxlab.policy/1\",\"history\":\"full\",\"pointer_rules\":[{{\"rule\":\"wrapped\",\"open\":\"[saved at \",\"close\":\"]\"}}]}}'\n\
         n=0\nwhile read l; do\n  n=$((n+1))\n{body}\ndone\n"
    );
    let path = common::write(dir, name, &script);
    format!("exec:sh {}", path.display())
}

fn replay(session: &Path, spec: &str, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec![
        "replay",
        session.to_str().unwrap(),
        "--policy",
        "none",
        "--policy",
        spec,
    ];
    args.extend_from_slice(extra);
    common::lab(&args)
}

const ECHO: &str = "  echo \"{\\\"id\\\":$n}\"";

#[test]
fn an_echo_policy_replays_as_none_does() {
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path());
    let spec = policy(dir.path(), "echo.sh", ECHO);
    let (code, out, err) = replay(&s, &spec, &["--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs[1]["policy"], spec.as_str());
    assert_eq!(
        runs[0]["calls"], runs[1]["calls"],
        "the same requests as none"
    );
    assert_eq!(runs[1]["calls"].as_array().unwrap().len(), 7);
}

/// A policy that moves the large result to a file through `writes` (or,
/// with `write` false, only says it did) and leaves a pointer to it.
fn persisting(dir: &Path, write: bool) -> String {
    let writes = if write {
        format!(
            ",\\\"writes\\\":[{{\\\"path\\\":\\\"r2.txt\\\",\\\"content\\\":\\\"{}\\\"}}]",
            "2".repeat(60_000)
        )
    } else {
        String::new()
    };
    let body = format!(
        "  root=$(printf '%s' \"$l\" | sed 's/.*\"root\":\"\\([^\"]*\\)\".*/\\1/')\n\
         \x20 req=$(printf '%s' \"$l\" | sed 's/.*\"append\":\\(\\[.*\\]\\),\"tokens\".*/\\1/' | sed \"s|\\\"content\\\":\\\"22*\\\"|\\\"content\\\":\\\"[saved at $root/r2.txt]\\\"|\")\n\
         \x20 echo \"{{\\\"id\\\":$n,\\\"request\\\":$req{writes}}}\""
    );
    policy(dir, if write { "persist.sh" } else { "forget.sh" }, &body)
}

#[test]
fn files_written_through_the_protocol_are_what_the_checker_sees() {
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path());
    let lost = |spec: &str| {
        let (code, out, err) = replay(&s, spec, &["--format", "json"]);
        assert_eq!(code, 0, "{err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        let run = &v["runs"][1];
        let last = run["calls"].as_array().unwrap().last().unwrap()["chars"]
            .as_u64()
            .unwrap();
        let none = v["runs"][0]["calls"].as_array().unwrap().last().unwrap()["chars"]
            .as_u64()
            .unwrap();
        assert!(
            last + 50_000 < none,
            "the result left the request: {last} vs {none}"
        );
        let count = |k: &str| run["findings"][k]["count"].as_u64().unwrap();
        (count("lost_forever"), count("dangling_pointers"))
    };
    assert_eq!(
        lost(&persisting(dir.path(), true)),
        (0, 0),
        "the file holds the original"
    );
    let (lost_forever, dangling) = lost(&persisting(dir.path(), false));
    assert!(
        lost_forever > 0 && dangling > 0,
        "a pointer to nothing: {lost_forever} lost, {dangling} dangling"
    );
}

/// Replay under `body` and return stderr, asserting exit 3, that it names
/// the command and the fix, and that the run left no temporary file (its
/// `TMPDIR` is a directory of its own, empty again afterwards).
fn refused(body: &str, extra: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let s = session(dir.path());
    let spec = policy(dir.path(), "bad.sh", body);
    let mut args = vec![
        "replay",
        s.to_str().unwrap(),
        "--policy",
        "none",
        "--policy",
        &spec,
    ];
    args.extend_from_slice(extra);
    let run = common::lab_command()
        .args(&args)
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    let (code, out, err) = (
        run.status.code().unwrap_or(-1),
        String::from_utf8(run.stdout).unwrap(),
        String::from_utf8(run.stderr).unwrap(),
    );
    assert_eq!(code, 3, "{body}\nstdout: {out}\nstderr: {err}");
    assert!(out.is_empty(), "no partial table: {out}");
    assert!(err.contains("bad.sh") && err.contains("fix:"), "{err}");
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "temporary files left behind: {left:?}");
    err
}

#[test]
fn a_crash_garbage_a_wrong_id_or_a_bad_write_names_the_call() {
    let crash = refused(
        "  [ $n = 3 ] && { echo 'Traceback: boom' >&2; exit 7; }\n  echo \"{\\\"id\\\":$n}\"",
        &[],
    );
    assert!(
        crash.contains("call 2") && crash.contains("exited") && crash.contains("boom"),
        "{crash}"
    );
    let garbage = refused("  echo 'not json'", &[]);
    assert!(
        garbage.contains("call 0") && garbage.contains("\"not json\""),
        "{garbage}"
    );
    let wrong = refused("  echo '{\"id\":99}'", &[]);
    assert!(wrong.contains("answered id 99 to request 1"), "{wrong}");
    let outside = refused("  echo \"{\\\"id\\\":$n,\\\"writes\\\":[{\\\"path\\\":\\\"../x\\\",\\\"content\\\":\\\"y\\\"}]}\"", &[]);
    assert!(outside.contains("`../x`, outside its root"), "{outside}");
    let part = refused("  echo \"{\\\"id\\\":$n,\\\"events\\\":[{\\\"event\\\":\\\"cleared\\\",\\\"id\\\":\\\"a\\\",\\\"part\\\":\\\"all\\\",\\\"placeholder\\\":\\\"\\\"}]}\"", &[]);
    assert!(part.contains("part is `all`"), "{part}");
}

#[test]
fn an_invented_or_reordered_request_is_refused_with_the_message() {
    let call = |id: &str| {
        format!("{{\\\"role\\\":\\\"assistant\\\",\\\"content\\\":[{{\\\"type\\\":\\\"tool_use\\\",\\\"id\\\":\\\"{id}\\\",\\\"name\\\":\\\"bash\\\",\\\"input\\\":{{}}}}]}}")
    };
    let answer = |req: String| {
        format!("  [ $n -lt 3 ] && {{ {ECHO}; continue; }}\n  echo \"{{\\\"id\\\":$n,\\\"request\\\":[{req}]}}\"")
    };
    let invented = refused(&answer(call("zz")), &[]);
    assert!(
        invented.contains("call 2")
            && invented.contains("message 0")
            && invented.contains("call `zz`")
            && invented.contains("invented"),
        "{invented}"
    );
    let reordered = refused(
        &answer(format!("{},{}", call("toolu_0001"), call("toolu_0000"))),
        &[],
    );
    assert!(
        reordered.contains("message 1") && reordered.contains("reordered"),
        "{reordered}"
    );
}

#[test]
fn a_hung_policy_times_out_and_its_whole_process_tree_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let flag = dir.path().join("still-running");
    let body = format!("  (sleep 2; touch '{}') &\n  sleep 30", flag.display());
    let start = std::time::Instant::now();
    let err = refused(&body, &["--exec-timeout", "0.5"]);
    assert!(
        err.contains("call 0") && err.contains("no answer within 0.5 s"),
        "{err}"
    );
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "the timeout ended it"
    );
    std::thread::sleep(Duration::from_millis(2_500));
    assert!(
        !flag.exists(),
        "a child of the hung policy outlived the replay"
    );
}

#[test]
fn a_command_that_cannot_start_or_greet_is_refused_before_any_replay() {
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path());
    let other = common::write(
        dir.path(),
        "other.sh",
        "read l\necho '{\"protocol\":\"other/2\"}'\ncat >/dev/null\n",
    );
    let (code, _, err) = replay(&s, &format!("exec:sh {}", other.display()), &[]);
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains("hello") && err.contains("speaks `other/2`"),
        "{err}"
    );
    let (code, _, err) = replay(&s, "exec:", &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("names no command"), "{err}");
    let (code, _, err) = common::lab(&[
        "replay",
        s.to_str().unwrap(),
        "--policy",
        "none",
        "--exec-timeout",
        "0",
    ]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn lab_check_runs_an_external_policy_against_its_expectations() {
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path());
    let echo = policy(dir.path(), "echo.sh", ECHO);
    let crash = policy(dir.path(), "crash.sh", "  exit 9");
    let check = |spec: &str, expect: &str| {
        let file = format!(
            "sessions = [{:?}]\npolicies = [{spec:?}]\nexpect = [{expect:?}]\n",
            s.display().to_string()
        );
        let path = common::write(dir.path(), "c.toml", &file);
        common::lab(&["check", path.to_str().unwrap()])
    };
    let (code, out, err) = check(&echo, "calls == none");
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("holds"), "{out}");
    let (code, _, err) = check(&echo, "events > 0");
    assert_eq!(code, 1, "an echo does nothing: {err}");
    let (code, _, err) = check(&crash, "calls == none");
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("crash.sh") && err.contains("call 0"), "{err}");
}
