//! The memory-tool rows: ctxlab's reference holds every one; the shipped
//! broken implementation fails exactly the rows it should, in process and
//! over the protocol; an external implementation that crashes, hangs,
//! prints garbage or writes outside its root is reported, and nothing is
//! left behind.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use ctxlab::memory::tool::external::External;
use ctxlab::memory::tool::rows::{self, ToolVerdict};
use ctxlab::memory::tool::{KillPoint, MemoryTool};

fn verdicts(card: &rows::Card) -> BTreeMap<String, &'static str> {
    card.rows
        .iter()
        .map(|(id, v)| (id.clone(), v.name()))
        .collect()
}

fn builtin_card(name: &str) -> rows::Card {
    let make = rows::builtin(name).unwrap();
    rows::card(name, "", &rows::rows(), make.as_ref(), true).unwrap()
}

/// What the naive implementation must get: every row that is not listed holds.
fn naive_expected() -> BTreeMap<&'static str, &'static str> {
    [
        ("traversal-dotdot", "escaped"),
        ("traversal-deep", "escaped"),
        ("traversal-absolute", "wrong"),
        ("view-dotdot", "escaped"),
        ("link-out-create", "escaped"),
        ("link-out-view", "escaped"),
        ("link-file-out-edit", "escaped"),
        ("rename-onto-existing", "lost"),
        ("rename-out", "escaped"),
        ("replace-none", "wrong"),
        ("replace-two", "wrong"),
        ("insert-past-end", "wrong"),
        ("create-existing", "lost"),
        ("full-disk-edit", "torn"),
        ("huge-file", "wrong"),
        ("traversal-sibling-prefix", "escaped"),
        ("root-case", "wrong"),
        ("root-unicode", "escaped"),
        ("link-hard-out", "escaped"),
        ("link-dir-relative-out", "escaped"),
        ("full-disk-create", "torn"),
        ("kill-create", "torn"),
        ("kill-str_replace", "torn"),
        ("kill-insert", "torn"),
        ("race-create-2", "lost"),
        ("race-create-4", "lost"),
        ("race-str_replace-2", "lost"),
        ("race-str_replace-4", "lost"),
        ("race-insert-2", "lost"),
        ("race-insert-4", "lost"),
        ("race-rename-2", "lost"),
        ("race-rename-4", "lost"),
        ("race-delete-2", "lost"),
        ("race-delete-4", "lost"),
    ]
    .into()
}

#[test]
fn the_reference_holds_every_row() {
    let card = builtin_card("reference");
    assert_eq!(card.rows.len(), rows::rows().len());
    for (id, v) in &card.rows {
        assert_eq!(v, &ToolVerdict::Held, "{id}");
    }
}

#[test]
fn the_naive_implementation_fails_exactly_the_rows_it_should() {
    let card = builtin_card("naive");
    let want = naive_expected();
    for (id, got) in verdicts(&card) {
        let expected = want.get(id.as_str()).copied().unwrap_or("held");
        assert_eq!(got, expected, "{id}");
    }
}

#[test]
fn the_cached_implementation_also_loses_one_of_two_sessions_edits() {
    let naive = verdicts(&builtin_card("naive"));
    let cached = verdicts(&builtin_card("cached"));
    for (id, got) in &cached {
        let want = if id == "lost-update" {
            "lost"
        } else {
            naive[id]
        };
        assert_eq!(*got, want, "{id}");
    }
    assert_eq!(
        naive["lost-update"], "held",
        "the naive one re-reads the file"
    );
}

fn lab_bin() -> String {
    env!("CARGO_BIN_EXE_lab").to_string()
}

fn external_card(cmd: &str, tmp: &Path, timeout: Duration) -> rows::Card {
    let mut out = Vec::new();
    for row in rows::rows() {
        let make = |_: ctxlab::storage::Shared, root: &Path| {
            External::start(cmd, root, timeout).map(|t| Box::new(t) as Box<dyn MemoryTool>)
        };
        out.push((
            row.id.to_string(),
            rows::run_row(&row, &make, false, tmp).unwrap(),
        ));
    }
    rows::Card {
        implementation: cmd.into(),
        select: String::new(),
        rows: out,
    }
}

#[test]
fn over_the_protocol_the_builtins_get_the_same_verdicts() {
    let tmp = tempfile::tempdir().unwrap();
    for name in ["reference", "naive"] {
        let cmd = format!("'{}' memtool-serve {name}", lab_bin());
        let remote = external_card(&cmd, tmp.path(), Duration::from_secs(20));
        let local = builtin_card(name);
        for ((id, r), (_, l)) in remote.rows.iter().zip(&local.rows) {
            let row = rows::rows().into_iter().find(|row| row.id == id).unwrap();
            if row.fault.is_some() && r.name() == "skipped" {
                // No tmpfs to fill without root: said, not failed.
                let ToolVerdict::Skipped(why) = r else {
                    unreachable!()
                };
                assert!(why.contains("tmpfs"), "{why}");
            } else if row.kill && name == "naive" {
                // SIGKILL lands where timing puts it: an in-place write
                // tears only when a kill falls inside it.
                assert!(["torn", "held"].contains(&r.name()), "{name} {id}: {r:?}");
            } else {
                assert_eq!(r.name(), l.name(), "{name} {id}: {r:?} vs {l:?}");
            }
        }
    }
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "sandboxes left behind: {left:?}");
}

/// One row run against `cmd`, with a short timeout.
fn one_row(cmd: &str, id: &str) -> ToolVerdict {
    let tmp = tempfile::tempdir().unwrap();
    let row = rows::rows().into_iter().find(|r| r.id == id).unwrap();
    let make = |_: ctxlab::storage::Shared, root: &Path| {
        External::start(cmd, root, Duration::from_millis(500))
            .map(|t| Box::new(t) as Box<dyn MemoryTool>)
    };
    let v = rows::run_row(&row, &make, false, tmp.path()).unwrap();
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "{cmd}: left {left:?}");
    v
}

fn failed_with(v: &ToolVerdict, needle: &str) {
    match v {
        ToolVerdict::Failed(d) => {
            assert!(d.contains(needle), "{d}");
            assert!(d.contains("fix: answer each request line"), "{d}");
            assert!(
                d.contains("\"command\":\"create\""),
                "names the command: {d}"
            );
        }
        other => panic!("expected a failure with {needle:?}, got {other:?}"),
    }
}

#[test]
fn a_crashing_hanging_or_garbled_implementation_is_reported_with_the_command() {
    failed_with(&one_row("exit 3", "create-existing"), "exited");
    failed_with(&one_row("sleep 5", "create-existing"), "gave no answer");
    failed_with(
        &one_row("echo garbage; cat >/dev/null", "create-existing"),
        "answered garbage",
    );
    failed_with(
        &one_row(
            "echo '{\"id\": 7, \"result\": \"x\"}'; cat >/dev/null",
            "create-existing",
        ),
        "answered id 7",
    );
    failed_with(
        &one_row("echo '{\"id\": 1}'; cat >/dev/null", "create-existing"),
        "neither or both",
    );
}

#[test]
fn a_hung_implementation_s_whole_process_tree_is_killed() {
    let marker = tempfile::tempdir().unwrap();
    let flag = marker.path().join("still-running");
    // A shell that starts a child which would write the flag after a while.
    let cmd = format!("(sleep 2; touch '{}') & sleep 5", flag.display());
    failed_with(&one_row(&cmd, "create-existing"), "gave no answer");
    std::thread::sleep(Duration::from_millis(2_500));
    assert!(
        !flag.exists(),
        "a process of the hung tool outlived its row"
    );
}

#[test]
fn an_implementation_that_writes_outside_its_root_is_caught() {
    // The process knows its root, beside `outside/`.
    let cmd = format!(
        "cd \"$CTXLAB_MEMTOOL_ROOT/..\" && echo pwned > outside/pwn.md; exec '{}' memtool-serve reference",
        lab_bin()
    );
    match one_row(&cmd, "replace-none") {
        ToolVerdict::Escaped(d) => assert!(d.contains("outside/pwn.md"), "{d}"),
        other => panic!("{other:?}"),
    }
    // One level up, beside its sandbox: caught too (and removed with the run).
    let tmp = tempfile::tempdir().unwrap();
    let row = rows::rows()
        .into_iter()
        .find(|r| r.id == "replace-none")
        .unwrap();
    let cmd = format!(
        "cd \"$CTXLAB_MEMTOOL_ROOT/..\" && echo pwned > ../climbed.md; exec '{}' memtool-serve reference",
        lab_bin()
    );
    let make = |_: ctxlab::storage::Shared, root: &Path| {
        External::start(&cmd, root, Duration::from_secs(20))
            .map(|t| Box::new(t) as Box<dyn MemoryTool>)
    };
    match rows::run_row(&row, &make, false, tmp.path()).unwrap() {
        ToolVerdict::Escaped(d) => assert!(d.contains("climbed.md"), "{d}"),
        other => panic!("{other:?}"),
    }
    // Intact: the reference over the protocol holds the same row.
    let cmd = format!("exec '{}' memtool-serve reference", lab_bin());
    assert_eq!(one_row(&cmd, "replace-none"), ToolVerdict::Held);
}

#[test]
fn memcheck_prints_the_rows_and_exits_by_verdict() {
    let (code, out, err) = crate::common::lab(&["memcheck", "--format", "markdown"]);
    assert_eq!(code, 0, "{err}");
    insta::assert_snapshot!("memcheck_reference", out);
    let (code, out, err) = crate::common::lab(&[
        "memcheck",
        "--builtin",
        "reference",
        "--builtin",
        "naive",
        "--format",
        "markdown",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("did not hold"), "{err}");
    insta::assert_snapshot!("memcheck_reference_naive", out);
    let (code, _, err) = crate::common::lab(&["memcheck", "--builtin", "nope"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = crate::common::lab(&["memcheck", "--row", "nope"]);
    assert_eq!(code, 2, "{err}");
    // Every reproduce line reproduces its row alone.
    let again = out
        .lines()
        .find_map(|l| l.split("(reproduce: `lab ").nth(1))
        .unwrap()
        .trim_end_matches("`)")
        .to_string();
    let args: Vec<&str> = again.split(' ').collect();
    let (code, one, _) = crate::common::lab(&args);
    assert_eq!(code, 1);
    assert_eq!(one.matches("(reproduce:").count(), 1, "{one}");
}

/// A card recorded before a row existed (a third-party one kept in
/// `recorded.json`) renders `not run` on that row instead of failing.
#[test]
fn a_card_recorded_before_a_row_existed_says_not_run() {
    let mut old = builtin_card("reference");
    old.rows.retain(|(id, _)| id != "huge-file");
    let out = rows::render(
        &[builtin_card("naive"), old],
        ctxlab::render::Format::Markdown,
    );
    let line = out.lines().find(|l| l.starts_with("| huge-file")).unwrap();
    assert!(
        line.contains("| wrong") && line.contains("not run"),
        "{line}"
    );
}

/// The kill rows in process: the naive implementation writes in place,
/// so a kill inside its write leaves part of the file (caught, naming the
/// kill point) for `create`, `str_replace` and `insert`; the reference
/// writes a temporary file and renames it, so the kill at every one of its
/// operations leaves the old state or the new, for every writing command.
#[test]
fn a_kill_tears_an_in_place_write_and_never_a_renamed_one() {
    let tmp = tempfile::tempdir().unwrap();
    let naive = rows::builtin("naive").unwrap();
    for id in ["kill-create", "kill-str_replace", "kill-insert"] {
        match rows::run_row(&row(id), naive.as_ref(), true, tmp.path()).unwrap() {
            ToolVerdict::Torn(d) => assert!(d.starts_with("killed at operation"), "{id}: {d}"),
            v => panic!("naive {id}: {v:?}"),
        }
    }
    let reference = rows::builtin("reference").unwrap();
    let plan = |kill_after| rows::Faults {
        plan: Some(ctxlab::storage::FaultPlan {
            kill_after,
            torn_kill: true,
            ..Default::default()
        }),
        kill: Some(KillPoint::Sent),
        ..Default::default()
    };
    for id in [
        "kill-create",
        "kill-str_replace",
        "kill-insert",
        "kill-rename",
        "kill-delete",
    ] {
        let row = row(id);
        let clean = rows::run_once(&row, reference.as_ref(), tmp.path(), &plan(None)).unwrap();
        assert_eq!(clean.verdict, ToolVerdict::Held, "{id}");
        assert!(
            !clean.killed && clean.ops.1 > clean.ops.0,
            "{id} writes: {:?}",
            clean.ops
        );
        for k in clean.ops.0..clean.ops.1 {
            let r = rows::run_once(&row, reference.as_ref(), tmp.path(), &plan(Some(k))).unwrap();
            assert!(r.killed, "{id} kill point {k}");
            assert_eq!(r.verdict, ToolVerdict::Held, "{id} kill point {k}");
        }
    }
    assert!(
        std::fs::read_dir(tmp.path()).unwrap().next().is_none(),
        "sandboxes left"
    );
}

fn row(id: &str) -> rows::Row {
    rows::rows().into_iter().find(|r| r.id == id).unwrap()
}

/// `full-disk-edit` against a process: its sandbox on a size-limited
/// tmpfs, filled after planting. As root, the naive implementation (in
/// place) is torn and the reference (temporary file, rename) holds, with
/// no mount and no directory left; without root the row says it is
/// skipped and why.
#[test]
fn a_full_disk_for_a_process_is_a_full_tmpfs_or_a_skip_that_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    let full = row("full-disk-edit");
    let verdict = |name: &str| {
        let cmd = format!("'{}' memtool-serve {name}", lab_bin());
        let make = |_: ctxlab::storage::Shared, root: &Path| {
            External::start(&cmd, root, Duration::from_secs(20))
                .map(|t| Box::new(t) as Box<dyn MemoryTool>)
        };
        rows::run_row(&full, &make, false, tmp.path()).unwrap()
    };
    let (naive, reference) = (verdict("naive"), verdict("reference"));
    match (&naive, &reference) {
        (ToolVerdict::Skipped(a), ToolVerdict::Skipped(b)) => {
            eprintln!("SKIP: {a}");
            assert!(a.contains("tmpfs") && a == b, "{a} / {b}");
        }
        (ToolVerdict::Torn(d), ToolVerdict::Held) => assert!(d.contains("a.md holds"), "{d}"),
        _ => panic!("naive {naive:?}, reference {reference:?}"),
    }
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let here = tmp.path().to_str().unwrap();
    assert!(
        !mounts.contains(here),
        "a tmpfs is left mounted under {here}"
    );
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// The race rows in process are a seeded schedule, not timing: the naive
/// implementation (read, edit, write back, no lock) loses acknowledged
/// edits on every run, with the same count and the same schedule seed
/// each time (20 of 20); the reference, which takes the store lock, holds
/// every seed.
#[test]
fn a_race_row_catches_the_lost_update_on_every_run() {
    let tmp = tempfile::tempdir().unwrap();
    let naive = rows::builtin("naive").unwrap();
    let reference = rows::builtin("reference").unwrap();
    for id in ["race-str_replace-2", "race-insert-4", "race-delete-2"] {
        let row = row(id);
        let first = rows::run_row(&row, naive.as_ref(), true, tmp.path()).unwrap();
        let ToolVerdict::Lost(d) = &first else {
            panic!("{id}: naive {first:?}")
        };
        assert!(d.starts_with("schedule seed "), "{d}");
        assert!(d.contains("acknowledged edits lost"), "{d}");
        for run in 1..20 {
            let again = rows::run_row(&row, naive.as_ref(), true, tmp.path()).unwrap();
            assert_eq!(again, first, "{id}: run {run} differs");
        }
        assert_eq!(
            rows::run_row(&row, reference.as_ref(), true, tmp.path()).unwrap(),
            ToolVerdict::Held,
            "{id}"
        );
    }
    assert!(std::fs::read_dir(tmp.path()).unwrap().next().is_none());
}

/// Four real processes of the reference on one root, released together
/// every round: its lock file keeps every acknowledged edit across
/// processes, for every writing command.
#[test]
fn four_reference_processes_at_once_keep_every_acknowledged_edit() {
    let tmp = tempfile::tempdir().unwrap();
    let cmd = format!("exec '{}' memtool-serve reference", lab_bin());
    let make = |_: ctxlab::storage::Shared, root: &Path| {
        External::start(&cmd, root, Duration::from_secs(20))
            .map(|t| Box::new(t) as Box<dyn MemoryTool>)
    };
    for r in rows::rows().into_iter().filter(|r| r.race.is_some()) {
        let v = rows::run_row(&r, &make, false, tmp.path()).unwrap();
        assert_eq!(v, ToolVerdict::Held, "{}", r.id);
    }
}

/// The most common wrong containment fix (resolve `..`, then compare the
/// text with the root's) refuses `/memories/../pwn.md` but lets
/// `/memories/../memories_evil/x.md` out: `traversal-sibling-prefix`
/// catches it, naming the file written outside; the reference holds.
#[test]
fn a_string_prefix_containment_check_is_caught_by_the_sibling_row() {
    let tmp = tempfile::tempdir().unwrap();
    let prefix = rows::builtin("prefix").unwrap();
    match rows::run_row(
        &row("traversal-sibling-prefix"),
        prefix.as_ref(),
        true,
        tmp.path(),
    )
    .unwrap()
    {
        ToolVerdict::Escaped(d) => assert!(d.contains("memories_evil/x.md"), "{d}"),
        v => panic!("prefix: {v:?}"),
    }
    for id in [
        "traversal-dotdot",
        "traversal-deep",
        "view-dotdot",
        "root-case",
    ] {
        assert_eq!(
            rows::run_row(&row(id), prefix.as_ref(), true, tmp.path())
                .unwrap()
                .name(),
            if id == "root-case" { "wrong" } else { "held" },
            "prefix {id}"
        );
    }
    let reference = rows::builtin("reference").unwrap();
    for id in [
        "traversal-sibling-prefix",
        "root-case",
        "root-unicode",
        "link-hard-out",
    ] {
        assert_eq!(
            rows::run_row(&row(id), reference.as_ref(), true, tmp.path()).unwrap(),
            ToolVerdict::Held,
            "reference {id}"
        );
    }
}

/// A read-modify-write tool as people write it: read the file, edit the
/// text, write it back, no lock (`careful`: the same under an exclusive
/// `flock` of a lock file in the root, taken before the read).
const RMW_TOOL: &str = r#"
import fcntl, json, os, sys
root = os.environ["CTXLAB_MEMTOOL_ROOT"]
careful = sys.argv[1:] == ["careful"]
def real(p):
    return os.path.join(root, p[len("/memories"):].lstrip("/"))
def edit(c):
    p = real(c["path"])
    with open(p) as f:
        text = f.read()
    if c["command"] == "str_replace":
        if text.count(c["old_str"]) != 1:
            raise ValueError("old_str must occur once")
        text = text.replace(c["old_str"], c["new_str"])
    else:
        lines = text.splitlines()
        lines.insert(c["insert_line"], c["insert_text"])
        text = "\n".join(lines) + "\n"
    with open(p, "w") as f:
        f.write(text)
for line in sys.stdin:
    req = json.loads(line)
    out = {"id": req["id"]}
    try:
        if careful:
            with open(os.path.join(root, ".lock"), "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                edit(req["input"])
        else:
            edit(req["input"])
        out["result"] = "edited"
    except Exception as e:
        out["error"] = str(e)
    print(json.dumps(out), flush=True)
"#;

/// `python3 TOOL ARGS` as an external implementation, or `None` (the
/// reason printed) without python3.
fn python_tool(dir: &Path, args: &str) -> Option<String> {
    let ok = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("SKIP: python3 is absent; the external race tools are Python scripts");
        return None;
    }
    let tool = dir.join("rmw_tool.py");
    std::fs::write(&tool, RMW_TOOL).unwrap();
    Some(format!("exec python3 '{}' {args}", tool.display()))
}

fn race_verdict(cmd: &str, id: &str, tmp: &Path) -> ToolVerdict {
    let make = |_: ctxlab::storage::Shared, root: &Path| {
        External::start(cmd, root, Duration::from_secs(20))
            .map(|t| Box::new(t) as Box<dyn MemoryTool>)
    };
    rows::run_row(&row(id), &make, false, tmp).unwrap()
}

/// The race rows against processes run at the barrier library memcheck
/// preloads into them, not on timing: a read-modify-write script without a
/// lock loses acknowledged edits on 20 of 20 runs, with the same verdict
/// each time (the release order is seeded); the same script under a
/// `flock`, and the reference as 2 processes, hold on every run.
#[test]
fn a_process_race_is_caught_at_the_barrier_on_every_run() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let Some(naive) = python_tool(dir.path(), "") else {
        return;
    };
    let careful = python_tool(dir.path(), "careful").unwrap();
    let reference = format!("exec '{}' memtool-serve reference", lab_bin());
    for id in ["race-str_replace-2", "race-insert-4"] {
        let first = race_verdict(&naive, id, tmp.path());
        let ToolVerdict::Lost(d) = &first else {
            panic!("{id}: the naive script got {first:?}")
        };
        assert!(d.starts_with("barrier seed 0: "), "{d}");
        assert!(d.contains("acknowledged edits lost"), "{d}");
        for run in 1..20 {
            assert_eq!(
                race_verdict(&naive, id, tmp.path()),
                first,
                "{id}: run {run}"
            );
        }
    }
    for run in 0..20 {
        for (name, cmd) in [("careful", &careful), ("reference", &reference)] {
            let v = race_verdict(cmd, "race-str_replace-2", tmp.path());
            assert_eq!(v, ToolVerdict::Held, "{name} run {run}");
        }
    }
    assert!(
        std::fs::read_dir(tmp.path()).unwrap().next().is_none(),
        "left behind"
    );
}

/// A tool the barrier library cannot reach (here it drops LD_PRELOAD
/// before starting) acknowledges writes the barrier never saw: the row is
/// skipped, saying why, never decided by timing.
#[test]
fn a_tool_the_barrier_cannot_reach_is_skipped_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let Some(naive) = python_tool(dir.path(), "") else {
        return;
    };
    let unreachable = naive.replace("exec python3", "exec env -u LD_PRELOAD python3");
    match race_verdict(&unreachable, "race-str_replace-2", tmp.path()) {
        ToolVerdict::Skipped(d) => {
            assert!(d.contains("LD_PRELOAD does not reach"), "{d}");
            assert!(d.contains("never on timing"), "{d}");
        }
        v => panic!("{v:?}"),
    }
}

/// Without a C compiler the barrier cannot be built: the race rows of a
/// process say so (skipped, exit 0 when nothing else fails).
#[test]
fn without_a_compiler_a_process_race_row_is_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(lab_bin())
        .env("CC", "no-such-compiler-7c1")
        .env("TMPDIR", tmp.path())
        .args([
            "memcheck",
            "--exec",
            &format!("exec '{}' memtool-serve naive", lab_bin()),
            "--row",
            "race-insert-2",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("\"skipped\""), "{text}");
    assert!(
        text.contains("no C compiler (no-such-compiler-7c1)"),
        "{text}"
    );
}

/// A kill part-way through the answer: a tool that writes half a memory,
/// begins its answer and stalls is killed once 1 byte of the answer is
/// read, so the half file is there on every run (torn, naming the point);
/// the reference over the protocol holds every kill point of every kill
/// row, 1 byte and half the answer included.
#[test]
fn a_kill_after_k_bytes_of_the_answer_lands_after_those_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let cmd = "read line; printf half > \"$CTXLAB_MEMTOOL_ROOT/big.md\"; printf '{'; exec sleep 30";
    let make = |_: ctxlab::storage::Shared, root: &Path| {
        External::start(cmd, root, Duration::from_secs(20))
            .map(|t| Box::new(t) as Box<dyn MemoryTool>)
    };
    for _ in 0..5 {
        let faults = rows::Faults {
            kill: Some(KillPoint::Replying(1)),
            ..Default::default()
        };
        let run = rows::run_once(&row("kill-create"), &make, tmp.path(), &faults).unwrap();
        match run.verdict {
            ToolVerdict::Torn(d) => assert!(d.contains("big.md holds 4 bytes"), "{d}"),
            v => panic!("{v:?}"),
        }
    }
    let reference = format!("exec '{}' memtool-serve reference", lab_bin());
    let make = |_: ctxlab::storage::Shared, root: &Path| {
        External::start(&reference, root, Duration::from_secs(20))
            .map(|t| Box::new(t) as Box<dyn MemoryTool>)
    };
    for id in ["kill-create", "kill-str_replace", "kill-rename"] {
        let clean = rows::run_once(&row(id), &make, tmp.path(), &rows::Faults::default()).unwrap();
        assert!(clean.reply_bytes > 4, "{id}: {}", clean.reply_bytes);
        for at in [
            KillPoint::Replying(1),
            KillPoint::Replying(clean.reply_bytes as u64 / 2),
        ] {
            let faults = rows::Faults {
                kill: Some(at),
                ..Default::default()
            };
            let v = rows::run_once(&row(id), &make, tmp.path(), &faults)
                .unwrap()
                .verdict;
            assert_eq!(v, ToolVerdict::Held, "{id} {at:?}");
        }
    }
    assert!(std::fs::read_dir(tmp.path()).unwrap().next().is_none());
}

/// The link rows: an alias of a directory inside the root is followed
/// without being taken for an escape (the naive implementation follows it
/// and holds), and deleting it must not take that directory's files
/// (`follow`, which empties it through the link, is caught: lost); a
/// relative link climbing out is caught (naive: escaped); a root reached
/// through a symlink must work (`unresolved`, which compares resolved
/// paths with the unresolved root, refuses everything: refused). The
/// reference holds all three, in process and as a process.
#[test]
fn the_link_rows_catch_link_bugs_and_no_inside_alias() {
    let tmp = tempfile::tempdir().unwrap();
    let v = |name: &str, id: &str| {
        let make = rows::builtin(name).unwrap();
        rows::run_row(&row(id), make.as_ref(), true, tmp.path()).unwrap()
    };
    assert_eq!(v("naive", "link-dir-inside"), ToolVerdict::Held);
    assert_eq!(v("naive", "root-through-link"), ToolVerdict::Held);
    match v("follow", "link-dir-inside") {
        ToolVerdict::Lost(d) => assert!(d.contains("deleting the alias took"), "{d}"),
        other => panic!("follow: {other:?}"),
    }
    match v("naive", "link-dir-relative-out") {
        ToolVerdict::Escaped(d) => assert!(d.contains("outside/pwn.md"), "{d}"),
        other => panic!("naive: {other:?}"),
    }
    match v("unresolved", "root-through-link") {
        ToolVerdict::Refused(d) => assert!(d.contains("would escape /memories"), "{d}"),
        other => panic!("unresolved: {other:?}"),
    }
    // On a plain root the unresolved check is right.
    assert_eq!(v("unresolved", "link-dir-relative-out"), ToolVerdict::Held);
    let remote = format!("exec '{}' memtool-serve reference", lab_bin());
    let make = |_: ctxlab::storage::Shared, root: &Path| {
        External::start(&remote, root, Duration::from_secs(20))
            .map(|t| Box::new(t) as Box<dyn MemoryTool>)
    };
    for id in [
        "link-dir-inside",
        "link-dir-relative-out",
        "root-through-link",
    ] {
        assert_eq!(v("reference", id), ToolVerdict::Held, "{id}");
        assert_eq!(
            rows::run_row(&row(id), &make, false, tmp.path()).unwrap(),
            ToolVerdict::Held,
            "{id} as a process"
        );
    }
}

/// A `.memtool.lock` left by a process whose id now names another live
/// process (the id was reused) is broken at once: the reference's next
/// command does not wait for it (before, it waited ~40 s and refused).
#[test]
fn a_lock_whose_pid_was_reused_is_broken() {
    use ctxlab::memory::tool::lock;
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("memories");
    std::fs::create_dir(&root).unwrap();
    let mut other = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let pid = other.id();
    let start = lock::start_time(pid).expect("a /proc start time");
    // The lock's writer had this id but started earlier than its holder now.
    std::fs::write(
        root.join(lock::LOCK_NAME),
        format!("{pid} {}\n", start.saturating_sub(1)),
    )
    .unwrap();
    let make = rows::builtin("reference").unwrap();
    let fs: ctxlab::storage::Shared = std::sync::Arc::new(ctxlab::storage::DiskFs);
    let mut tool = make(fs, &root).unwrap();
    let started = std::time::Instant::now();
    let reply = tool
        .execute(&ctxlab::memory::tool::Command::Create {
            path: "/memories/a.md".into(),
            file_text: "A\n".into(),
        })
        .unwrap();
    assert!(!reply.is_error(), "{reply:?}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "waited {:?}",
        started.elapsed()
    );
    assert_eq!(std::fs::read_to_string(root.join("a.md")).unwrap(), "A\n");
    assert!(!root.join(lock::LOCK_NAME).exists(), "the lock is released");
    // The live holder's own line would not have been broken.
    assert!(!lock::owner_is_gone(&format!("{pid} {start}\n")));
    other.kill().unwrap();
    other.wait().unwrap();
}
