//! Helpers shared by the integration tests: the built `lab` binary, the
//! shared real transcripts, and small fixtures several test files need.
//!
//! Each test file that says `mod common;` compiles its own copy of this
//! module and uses only part of it, hence the `dead_code` allowance.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ctxlab::compact::config::{profile, Config};
use ctxlab::compact::session::{Action, Call, Turn};
use ctxlab::import::ImportOptions;
use ctxlab::registry::{Experiment, ExperimentVerdict, RunOptions};

/// The built `lab` binary, run from the repository root (where the
/// relative paths of `scenarios/` and `reports/` resolve).
pub fn lab_command() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lab"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    // Off a terminal a long command prints a progress line every few
    // seconds; on a loaded CI machine a test's command can cross that, so
    // tests that read stderr exactly push the interval out of reach
    // (tests/house/progress.rs sets its own).
    cmd.env("CTXLAB_PROGRESS_SECS", "100000");
    cmd
}

fn output(args: &[&str]) -> Output {
    lab_command().args(args).output().unwrap()
}

/// Run `lab` with `args`: (exit code, stdout, stderr); both streams must be UTF-8.
pub fn lab(args: &[&str]) -> (i32, String, String) {
    let out = output(args);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// As [`lab`], for runs fed undecodable input that an error message may echo.
pub fn lab_lossy(args: &[&str]) -> (i32, String, String) {
    let out = output(args);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Run `lab` with `args`, which must succeed; its stdout.
pub fn lab_ok(args: &[&str]) -> String {
    let out = output(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The one real compaction of `file`, replayed under `policy` (the
/// product's own), as the replay reports it beside the policy's counterpart.
pub fn the_product_compaction(
    file: &Path,
    policy: &str,
) -> ctxlab::replay::product::ProductCompaction {
    let (_, info) = ctxlab::replay::policies::replay_files_product(
        &[file.to_path_buf()],
        &[policy.to_string()],
        160,
        &Default::default(),
        Default::default(),
    )
    .unwrap();
    let [c] = info.compactions.as_slice() else {
        panic!("{:?}", info.compactions)
    };
    c.clone()
}

/// `lab replay FILE --policy none --cost --format json EXTRA…`, parsed.
pub fn replay_none_cost_json(file: &Path, extra: &[&str]) -> serde_json::Value {
    replay_cost_json(file, &["--policy", "none"], extra)
}

/// `lab replay FILE ARMS… --cost --format json EXTRA…`, parsed (`ARMS`:
/// `--policy P` or `--profile P`).
pub fn replay_cost_json(file: &Path, arms: &[&str], extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["replay", file.to_str().unwrap()];
    args.extend_from_slice(arms);
    args.extend_from_slice(&["--cost", "--format", "json"]);
    args.extend_from_slice(extra);
    serde_json::from_str(&lab_ok(&args)).unwrap()
}

/// The shared real transcripts: next to the repository, or where
/// `CTXLAB_TRANSCRIPTS` says (a worktree one level deeper has no
/// `../shared`). `None`, with a printed skip message, when absent (CI may
/// not have them).
pub fn transcripts() -> Option<PathBuf> {
    let dir = std::env::var_os("CTXLAB_TRANSCRIPTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/transcripts"));
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "SKIP: {} not found; this test needs the shared transcripts",
            dir.display()
        );
        None
    }
}

/// Every file of the transcript directories, sorted by path; both
/// directories must be there.
pub fn transcript_files(dir: &Path) -> Vec<PathBuf> {
    files_of(dir, &["claude_code", "openai_format"])
}

/// Every shared Claude Code log (`claude_code/`), sorted by path: the
/// directory the product-model tests walk.
pub fn claude_code_files(dir: &Path) -> Vec<PathBuf> {
    files_of(dir, &["claude_code"])
}

/// Every file of `subs` under `dir`, sorted by path.
fn files_of(dir: &Path, subs: &[&str]) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for sub in subs {
        for e in std::fs::read_dir(dir.join(sub)).unwrap() {
            files.push(e.unwrap().path());
        }
    }
    files.sort();
    files
}

/// The snapshot name of a real transcript: `prefix` and the file name up to
/// its first `__`, with `-` as `_`.
pub fn snapshot_name(prefix: &str, file: &str) -> String {
    let stem = Path::new(file).file_name().unwrap().to_string_lossy();
    let short = stem.split("__").next().unwrap();
    format!("{prefix}_{}", short.replace('-', "_"))
}

/// The `.json` files directly in `dir`, sorted.
pub fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    v.sort();
    v
}

/// Write `bytes` to `dir/name` and return the path.
pub fn write(dir: &Path, name: &str, bytes: &(impl AsRef<[u8]> + ?Sized)) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// A named course profile with its constants scaled to prototype size, so
/// generated cases stay fast.
pub fn scaled(name: &str) -> Config {
    let mut c = profile(name).unwrap().config;
    c.constants = c.constants.scaled(0.01);
    c.constants.snip_max_messages = 8;
    c.constants.snip_head = 2;
    c
}

/// An assistant turn of tool calls with no text.
pub fn turn(calls: Vec<Call>) -> Action {
    Action::Assistant(Turn { text: None, calls })
}

/// Records as JSON lines.
pub fn jsonl(records: &[serde_json::Value]) -> String {
    records.iter().map(|r| format!("{r}\n")).collect()
}

/// Import options that repair what they can.
pub const LENIENT: ImportOptions = ImportOptions {
    strict: false,
    format: None,
};

/// Import options that refuse any damage.
pub const STRICT: ImportOptions = ImportOptions {
    strict: true,
    format: None,
};

/// Run `row` at its default cells, assert the verdict names `row` and every
/// expectation of the registry holds, and return the verdict for the test's own further checks.
pub fn verdict_holding(row: &Experiment) -> ExperimentVerdict {
    let v = (row.run)(&RunOptions::default()).unwrap();
    assert_eq!(v.id, row.id, "the verdict names another row");
    let failures = v.check(row.expect);
    assert!(failures.is_empty(), "{}: {failures:#?}", row.id);
    v
}

/// A coding session: a task, `calls` tool calls (`cat src/libN.rs`, each
/// result 300 copies of its call's number, the one at `large` 60,000: past
/// every persistence threshold), then a closing answer.
pub fn tool_session(calls: usize, large: usize) -> Vec<ctxlab::message::Message> {
    use ctxlab::message::{Block, Message};
    let mut out = vec![Message::user_text("fix the failing test")];
    for t in 0..calls {
        let id = format!("toolu_{t:04}");
        out.push(Message::assistant(vec![Block::ToolUse {
            id: id.clone(),
            name: "bash".into(),
            input: serde_json::json!({"command": format!("cat src/lib{t}.rs")}).into(),
        }]));
        let size = if t == large { 60_000 } else { 300 };
        out.push(Message::tool_results(vec![(
            id,
            format!("{t}").repeat(size),
        )]));
    }
    out.push(Message::assistant(vec![Block::Text {
        text: "done".into(),
    }]));
    out
}

/// GUIDE's GNU parallel recipe: run `lab ARGS --shard {}/N --format json >
/// PART{}.json` for every shard in `dir`, and return the part files in shard
/// order. `None` (after printing why) where GNU parallel is not installed.
pub fn parallel_shards(dir: &Path, args: &str, n: usize, part: &str) -> Option<Vec<String>> {
    let has_parallel = Command::new("parallel")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_parallel {
        println!("GNU parallel is not installed: the parallel recipe of `lab {args} --shard` is not tested here");
        return None;
    }
    let lab_bin = env!("CARGO_BIN_EXE_lab");
    let job = format!("{lab_bin} {args} --shard {{}}/{n} --format json > {part}{{}}.json");
    let shards: Vec<String> = (0..n).map(|i| i.to_string()).collect();
    let status = Command::new("parallel")
        .current_dir(dir)
        .args(["--will-cite", &job, ":::"])
        .args(&shards)
        .status()
        .unwrap();
    assert!(status.success(), "{job}");
    let files = (0..n)
        .map(|i| {
            dir.join(format!("{part}{i}.json"))
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    Some(files)
}

/// Peak resident set (bytes) of `lab args`, from the child's own rusage.
// The child is reaped by `wait4`, which returns its rusage (`Child::wait`
// does not), so the lint's `wait()` would find no child.
#[allow(clippy::zombie_processes)]
pub fn peak_rss_of(args: &[&str]) -> u64 {
    let child = lab_command()
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value to be written over.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own child, not yet waited for; both pointers are valid.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{args:?} failed"
    );
    u64::try_from(usage.ru_maxrss).unwrap() * 1024
}

/// `bytes` with the byte at fraction `flip.0` set to `flip.1` (when given),
/// then cut at fraction `frac`: the damaged file the importers' property
/// tests feed back.
pub fn cut_or_flipped(mut bytes: Vec<u8>, frac: f64, flip: Option<(f64, u8)>) -> Vec<u8> {
    if let Some((at, b)) = flip {
        let i = ((bytes.len() - 1) as f64 * at) as usize;
        bytes[i] = b;
    }
    bytes.truncate((bytes.len() as f64 * frac) as usize);
    bytes
}

/// The guide as one text: GUIDE.md (the index) and every chapter of
/// `docs/src/` in file-name order, for tests that hold the docs to the
/// binary wherever in the book a list or an example sits.
#[allow(dead_code)]
pub fn guide() -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut text = std::fs::read_to_string(root.join("GUIDE.md")).unwrap();
    let mut chapters: Vec<_> = std::fs::read_dir(root.join("docs/src"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    chapters.sort();
    for c in chapters {
        text.push('\n');
        text.push_str(&std::fs::read_to_string(c).unwrap());
    }
    text
}
