//! The one input path every command reads through (`import::corpus::expand`
//! then `for_each_member`, format sniffed from the content), fuzzed: any
//! bytes under any file name, and cuts and byte flips of small samples of
//! every format (built here or taken from the repository's own fixtures;
//! no shared transcript is copied). Each case must end, within
//! [`CASE_TIMEOUT`], in sessions or a documented input error (exit 3),
//! never a panic, and the process's peak RSS stays under [`RSS_BOUND`].
//!
//! The RSS bound is by construction, not measured per case: a transcript
//! is at most `input::MAX_TRANSCRIPT_BYTES` (1 GiB) and streamed, one record
//! (a JSON Lines line or a JSON array element) at most
//! `input::MAX_LINE_BYTES` (64 MiB) and held alone. The samples here are a
//! few KiB, so the whole test must stay far under the bound; a case that
//! blows up memory out of proportion to its input trips it.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use ctxlab::import::corpus::{expand, for_each_member};
use ctxlab::import::ImportOptions;
use proptest::prelude::*;
use serde_json::json;

use crate::common::{cut_or_flipped, jsonl};

/// Longest one case may take (debug build, two cores shared).
const CASE_TIMEOUT: Duration = Duration::from_secs(20);

/// Peak resident memory of the test process, documented in `notes/cli.md`.
const RSS_BOUND_MIB: u64 = 1024;
const RSS_BOUND: u64 = RSS_BOUND_MIB * 1024 * 1024;

const SNIFF: ImportOptions = ImportOptions {
    strict: false,
    format: None,
};

/// A small Claude Code conversation: prompt, call, result, answer.
fn claude_records() -> Vec<serde_json::Value> {
    vec![
        json!({"type": "user", "uuid": "u1", "parentUuid": null, "isSidechain": false,
            "message": {"role": "user", "content": "fix the test — ünïcode ✓"}}),
        json!({"type": "assistant", "uuid": "a1", "parentUuid": "u1", "isSidechain": false,
            "message": {"id": "m1", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
                "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}],
                "usage": {"input_tokens": 10, "cache_read_input_tokens": 3000, "output_tokens": 5}}}),
        json!({"type": "user", "uuid": "u2", "parentUuid": "a1", "isSidechain": false,
            "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a\nb"}]}}),
        json!({"type": "assistant", "uuid": "a2", "parentUuid": "u2", "isSidechain": false,
            "message": {"id": "m2", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
                "content": [{"type": "text", "text": "done"}],
                "usage": {"input_tokens": 10, "cache_read_input_tokens": 3100, "output_tokens": 5}}}),
    ]
}

/// Samples of the formats, each under the file name it is sniffed with.
fn samples() -> Vec<(String, Vec<u8>)> {
    let claude = claude_records();
    let mut out = vec![
        ("s.jsonl".to_string(), jsonl(&claude).into_bytes()),
        (
            "chat.json".to_string(),
            serde_json::to_vec_pretty(&claude).unwrap(),
        ),
        (
            "request.json".to_string(),
            serde_json::to_vec(&json!({"model": "claude-sonnet-4-5", "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Read", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}]}]}))
            .unwrap(),
        ),
        (
            "openai.json".to_string(),
            serde_json::to_vec(&json!({"messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function",
                    "function": {"name": "ls", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c", "content": "a"}]}))
            .unwrap(),
        ),
        (
            "chat.history.md".to_string(),
            b"# aider chat started at 2025-01-01 10:00:00\n\n#### fix it\n\nDone.\n\n> Tokens: 1k sent, 20 received.\n"
                .to_vec(),
        ),
    ];
    // The repository's own fixtures of the other formats (generated from
    // upstream code, a few KiB each).
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/import/fixtures");
    for rel in [
        "gemini_cli/session.jsonl",
        "gemini_cli/session-legacy.json",
        "gemini_contents/checkpoint-demo.json",
        "goose/session.jsonl",
        "opencode/export.json",
        "openhands/trajectory.json",
        "roo_code/api_conversation_history.json",
    ] {
        let bytes = std::fs::read(root.join(rel)).unwrap();
        let name = Path::new(rel).file_name().unwrap().to_string_lossy();
        out.push((name.into_owned(), bytes));
    }
    out
}

/// A tar archive (gzipped when `gz`) of the first few samples.
fn archive(gz: bool) -> (String, Vec<u8>) {
    let mut b = tar::Builder::new(Vec::new());
    for (name, bytes) in samples().into_iter().take(3) {
        let mut h = tar::Header::new_gnu();
        h.set_size(bytes.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, name, bytes.as_slice()).unwrap();
    }
    let tar = b.into_inner().unwrap();
    if !gz {
        return ("logs.tar".into(), tar);
    }
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut e, &tar).unwrap();
    ("logs.tar.gz".into(), e.finish().unwrap())
}

/// The checked-in Parquet corpus with tool calls (four rows, two row groups).
fn parquet() -> (String, Vec<u8>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/import/fixtures/parquet/openhands.parquet");
    ("rows.parquet".into(), std::fs::read(path).unwrap())
}

/// Reads `path` as every command does, lazily and not, each session's
/// main conversation read to its end. `Err` with the error's exit code and text.
fn read_all(path: &Path) -> Result<usize, (i32, String)> {
    let mut sessions = 0;
    for lazy in [false, true] {
        let inputs = expand(&[path.to_path_buf()]).map_err(|e| (e.exit_code(), e.to_string()))?;
        for input in &inputs {
            for item in &input.items {
                for_each_member(item, &SNIFF, lazy, |m| {
                    // A member that is not a session is reported, not fatal.
                    if let Err(e) = &m.sessions {
                        assert_eq!(e.exit_code(), 3, "{}: {e}", m.name);
                    }
                    for s in m.sessions.into_iter().flatten() {
                        sessions += 1;
                        for msg in s.main_messages() {
                            if let Err(e) = msg {
                                assert_eq!(e.exit_code(), 3, "{}: {e}", m.name);
                            }
                        }
                    }
                    Ok(())
                })
                .map_err(|e| (e.exit_code(), e.to_string()))?;
            }
        }
    }
    Ok(sessions)
}

/// Writes `bytes` as `name` in a fresh directory and reads it under the
/// timeout: sessions or a documented input error.
fn holds(name: &str, bytes: Vec<u8>) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let path: PathBuf = dir.path().join(name);
    std::fs::write(&path, &bytes).unwrap();
    let (tx, rx) = mpsc::channel();
    let p = path.clone();
    std::thread::spawn(move || {
        let r = std::panic::catch_unwind(|| read_all(&p));
        let _ = tx.send(r);
    });
    match rx.recv_timeout(CASE_TIMEOUT) {
        Err(_) => Err(TestCaseError::fail(format!(
            "{name} ({} bytes): no answer within {CASE_TIMEOUT:?}",
            bytes.len()
        ))),
        Ok(Err(_)) => Err(TestCaseError::fail(format!(
            "{name} ({} bytes): panicked",
            bytes.len()
        ))),
        Ok(Ok(Ok(_))) => Ok(()),
        Ok(Ok(Err((code, e)))) => {
            prop_assert_eq!(code, 3, "{}: {}", name, e);
            // A documented input error names its file.
            prop_assert!(e.contains(name), "{}: {}", name, e);
            Ok(())
        }
    }
}

/// Peak resident set of this process (Linux), in bytes.
fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

fn names() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(vec![
        "f.jsonl",
        "f.json",
        "f.md",
        "f.db",
        "f.traj",
        "f",
        "f.tar",
        "f.tar.gz",
        "f.tar.xz",
        "f.parquet",
    ])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Any bytes under any name: sniffed, maybe taken for an archive.
    #[test]
    fn any_bytes_under_any_name_are_sessions_or_an_input_error(
        name in names(),
        bytes in proptest::collection::vec(
            prop_oneof![any::<u8>(), proptest::sample::select(b"{}[]\":,\n0123 abc".to_vec())],
            0..300,
        ),
    ) {
        holds(name, bytes)?;
    }

    /// Every sample (and two archives of them, and a Parquet corpus), cut
    /// and maybe one byte flipped.
    #[test]
    fn cut_or_flipped_samples_are_sessions_or_an_input_error(
        which in 0usize..15,
        frac in 0.0f64..1.0,
        flip in proptest::option::of((0.0f64..1.0, any::<u8>())),
    ) {
        let mut all = samples();
        all.push(archive(false));
        all.push(archive(true));
        all.push(parquet());
        let (name, bytes) = all.swap_remove(which % all.len());
        holds(&name, cut_or_flipped(bytes, frac, flip))?;
    }

    /// A whole Parquet corpus with one byte changed anywhere (page
    /// headers, compressed pages, the footer): the `parquet` crate's
    /// errors and panics come back as input errors naming the file.
    #[test]
    fn a_parquet_corpus_with_one_byte_changed_reads_or_is_named(
        at in 0.0f64..1.0,
        xor in 1u8..=255,
    ) {
        let (name, mut bytes) = parquet();
        let i = ((bytes.len() as f64 * at) as usize).min(bytes.len() - 1);
        bytes[i] ^= xor;
        holds(&name, bytes)?;
    }
}

#[test]
fn every_sample_reads_whole_as_sessions() {
    // The fuzz starts from files that read: a cut sample differs from a good one.
    let mut all = samples();
    all.push(archive(false));
    all.push(archive(true));
    all.push(parquet());
    assert!(
        all.len() >= 15,
        "the fuzz's sample index covers {}",
        all.len()
    );
    for (name, bytes) in all {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(&name);
        std::fs::write(&path, bytes).unwrap();
        let n = read_all(&path).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert!(n >= 2, "{name}: {n} sessions over the two reads");
    }
}

#[test]
fn the_fuzzed_reads_stay_under_the_rss_bound() {
    // Runs after (or beside) the fuzz in this process; the bound is the
    // documented one, far above what a few KiB of input may cost.
    let Some(peak) = peak_rss() else {
        eprintln!("SKIP: no /proc/self/status here to read the peak RSS from");
        return;
    };
    let mut all = samples();
    all.push(archive(true));
    for (name, bytes) in all {
        for frac in [0.3, 0.7, 1.0] {
            holds(&name, cut_or_flipped(bytes.clone(), frac, None)).unwrap();
        }
    }
    let after = peak_rss().unwrap_or(peak);
    assert!(
        after < RSS_BOUND,
        "peak RSS {} MiB over the documented {RSS_BOUND_MIB} MiB",
        after / (1024 * 1024)
    );
}
