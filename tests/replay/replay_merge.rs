//! `lab replay --merge` streamed: memory does not grow with the parts'
//! records, any number of parts merge (past the open-file bound too),
//! `--out FILE` appears whole or not at all, and a killed merge run again
//! gives the same bytes.

use std::path::{Path, PathBuf};

use ctxlab::replay::aggregate::SessionRecord;
use ctxlab::replay::shard::{CorpusJson, CorpusSpec, SessionRecords};
use ctxlab::shard::{owner_of_key, Shard};

use super::replay_shard::{merge, ok, parts, POLICIES};
use crate::common;

/// One session's record under `policy`, its label `pad` characters long
/// (a record's strings are what a merge holding records would hold).
fn record(j: usize, policy: &str, pad: usize) -> SessionRecord {
    SessionRecord {
        session: format!("s{j:06} {}", "x".repeat(pad)),
        policy: policy.to_string(),
        calls: 10 + j % 7,
        peak_chars: 1000 + j * 13 % 997,
        last_tokens: 300 + j % 101,
        lost_forever: (j % 3) as u64,
        pointer_lost: (j % 5) as u64,
        dangling_pointers: 0,
        orphans: (j % 2) as u64,
        invalid_requests: 0,
        events: j % 4,
        dollars: Some((j % 89) as f64 * 0.0137),
        recall_percent: Some((j % 100) as f64),
        tokenizer: "approx".to_string(),
        anchor: None,
    }
}

/// `n` parts of one made-up replay, `per_part` sessions each, written in
/// `dir` as `lab replay … --shard i/n --format json` writes them.
fn synthetic_parts(dir: &Path, n: usize, per_part: usize, pad: usize) -> Vec<String> {
    let mut buckets: Vec<Vec<(usize, String)>> = vec![Vec::new(); n];
    let mut j = 0;
    while buckets.iter().any(|b| b.len() < per_part) {
        let key = format!("s{j:06}.json");
        let owner = owner_of_key(&key, n);
        if buckets[owner].len() < per_part {
            buckets[owner].push((j, key));
        }
        j += 1;
    }
    let spec = CorpusSpec {
        inputs: vec!["corpus/".into()],
        policies: vec!["none".into(), "codex-cli".into()],
        options: Default::default(),
    };
    buckets
        .into_iter()
        .enumerate()
        .map(|(i, bucket)| {
            let records = bucket
                .into_iter()
                .map(|(j, key)| SessionRecords {
                    key,
                    order: [j, 0, 0],
                    records: vec![record(j, "none", pad), record(j, "codex-cli", pad)],
                })
                .collect::<Vec<_>>();
            let part = CorpusJson {
                spec: spec.clone(),
                shard: Some(Shard { index: i, count: n }),
                listing: "0".repeat(64),
                items: j,
                sessions: records.len(),
                skipped: 0,
                records,
                checksum: None,
            }
            .sealed();
            let text = ctxlab::replay::policies::render_corpus_json(&part);
            common::write(dir, &format!("p{n}-{i}.json"), &text)
                .to_string_lossy()
                .into_owned()
        })
        .collect()
}

fn merge_args<'a>(files: &'a [String], extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["replay", "--merge"];
    args.extend(files.iter().map(String::as_str));
    args.extend(extra);
    args
}

/// Sixteen times the parts, each as large, sixteen times the records: a
/// merge that held them (or its output) would grow by tens of megabytes;
/// the streamed one grows by the aggregate's numbers only (11 per session
/// and policy, as the unsharded run holds).
#[test]
fn merge_memory_stays_flat_from_4_to_64_parts() {
    let dir = tempfile::tempdir().unwrap();
    let four = synthetic_parts(dir.path(), 4, 200, 1000);
    let sixty_four = synthetic_parts(dir.path(), 64, 200, 1000);
    let bytes = |files: &[String]| -> u64 {
        files
            .iter()
            .map(|f| std::fs::metadata(f).unwrap().len())
            .sum()
    };
    assert!(bytes(&sixty_four) > 30_000_000, "{}", bytes(&sixty_four));
    // Every peak first: the test process reading the outputs would grow,
    // and a child forked from it may count the parent's pages.
    let mut outs = Vec::new();
    for format in ["json", "jsonl"] {
        let out = dir.path().join(format!("merged.{format}"));
        let out_s = out.to_str().unwrap();
        let peak = |files: &[String]| {
            common::peak_rss_of(&merge_args(files, &["--format", format, "--out", out_s]))
        };
        let p4 = peak(&four);
        let p64 = peak(&sixty_four);
        eprintln!(
            "--format {format}: peak RSS 4 parts {} kB, 64 parts {} kB",
            p4 / 1024,
            p64 / 1024
        );
        assert!(
            p64 <= p4 + 12 * 1024 * 1024,
            "{format}: 64 parts peaked at {p64} bytes, 4 parts at {p4}"
        );
        outs.push((format, out));
    }
    // It did merge them all: every record, in corpus order.
    for (format, out) in outs {
        let text = std::fs::read_to_string(&out).unwrap();
        if format == "jsonl" {
            let sessions: Vec<String> = text
                .lines()
                .map(|l| {
                    let v: serde_json::Value = serde_json::from_str(l).unwrap();
                    v["session"].as_str().unwrap()[..7].to_string()
                })
                .collect();
            assert_eq!(sessions.len(), 64 * 200 * 2);
            assert!(sessions.windows(2).all(|w| w[0] <= w[1]));
        } else {
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(v["corpus"]["records"].as_array().unwrap().len(), 64 * 200);
            assert_eq!(v["aggregate"][0]["sessions"], 64 * 200);
        }
    }
}

/// More parts than stay open at once: each is reopened at its byte offset;
/// the records still come out in corpus order, each once.
#[test]
fn more_parts_than_stay_open_merge_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let n = ctxlab::replay::merge::OPEN_AT_ONCE + 44;
    let files = synthetic_parts(dir.path(), n, 2, 0);
    let (code, out, err) = merge(&files, &["--format", "jsonl"]);
    assert_eq!(code, 0, "{err}");
    let orders: Vec<String> = out
        .lines()
        .step_by(2)
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["session"].to_string())
        .collect();
    assert_eq!(orders.len(), 2 * n);
    assert!(
        orders.windows(2).all(|w| w[0] < w[1]),
        "not in corpus order"
    );
}

/// `--out FILE`: a refused merge leaves FILE as it was and no temp file;
/// a temp file left by a killed merge is written over; the file is the
/// whole run's output.
#[test]
fn merge_out_is_written_whole_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let root = super::replay_jobs::mixed_corpus(dir.path(), 6);
    let files = parts(&root, dir.path(), 3);
    let out = dir.path().join("merged.json");
    let tmp = dir.path().join(".merged.json.tmp");
    std::fs::write(&out, "the previous merge\n").unwrap();
    std::fs::write(&tmp, "half of a killed merge").unwrap();
    let out_s = out.to_str().unwrap();

    let (code, printed, err) = merge(&files[..2], &["--format", "json", "--out", out_s]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("missing 2/3"), "{err}");
    assert!(printed.is_empty());
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "the previous merge\n"
    );
    assert!(!tmp.exists(), "the temp file is removed");

    std::fs::write(&tmp, "half of a killed merge").unwrap();
    let (code, printed, err) = merge(&files, &["--format", "json", "--out", out_s]);
    assert_eq!(code, 0, "{err}");
    assert!(printed.is_empty(), "{printed}");
    let whole = ok(&[
        "replay",
        &root,
        "--policy",
        POLICIES,
        "--cost",
        "--retention",
        "--format",
        "json",
    ]);
    assert!(std::fs::read_to_string(&out).unwrap() == whole);
    assert!(!tmp.exists());
}

/// A merge killed partway leaves no output file (only its temp), and run
/// again writes the same bytes as a merge never interrupted.
#[test]
fn a_killed_merge_run_again_gives_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let files = synthetic_parts(dir.path(), 16, 300, 400);
    let out: PathBuf = dir.path().join("merged.json");
    let out_s = out.to_str().unwrap().to_string();
    let args = merge_args(&files, &["--format", "json", "--out", &out_s]);
    let mut child = common::lab_command()
        .args(&args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(150));
    child.kill().unwrap();
    let status = child.wait().unwrap();
    if status.success() {
        println!("the merge finished before it was killed: only the re-run is checked");
    } else {
        assert!(!out.exists(), "a killed merge left {}", out.display());
    }
    let (code, _, err) = common::lab(&args);
    assert_eq!(code, 0, "{err}");
    let again = std::fs::read(&out).unwrap();
    let (code, printed, err) = merge(&files, &["--format", "json"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        again == printed.as_bytes(),
        "the re-run differs from a merge to stdout"
    );
    assert!(!dir.path().join(".merged.json.tmp").exists());
}

/// One sealed part of `n` holding `records` as given (orders and keys
/// unchecked), written as `name`.
fn part_of(dir: &Path, name: &str, n: usize, index: usize, records: Vec<SessionRecords>) -> String {
    let part = CorpusJson {
        spec: CorpusSpec {
            inputs: vec!["corpus/".into()],
            policies: vec!["none".into()],
            options: Default::default(),
        },
        shard: Some(Shard { index, count: n }),
        listing: "0".repeat(64),
        items: 10,
        sessions: records.len(),
        skipped: 0,
        records,
        checksum: None,
    }
    .sealed();
    let text = ctxlab::replay::policies::render_corpus_json(&part);
    common::write(dir, name, &text)
        .to_string_lossy()
        .into_owned()
}

/// Each kind of bad part is refused with exit 3, the file and its place
/// named, a fix, and nothing written to `--out`.
#[test]
fn each_bad_part_is_named_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("merged.json");
    let out_s = out.to_str().unwrap().to_string();
    let refused = |files: &[String], bad: &str, what: &str| {
        let (code, printed, err) = merge(files, &["--format", "json", "--out", &out_s]);
        assert_eq!(code, 3, "{what}: {err}");
        assert!(printed.is_empty(), "{what}: {printed}");
        assert!(
            err.contains(&format!("{bad}:")) && err.contains(what) && err.contains("fix:"),
            "{what}: {err}"
        );
        assert!(!out.exists(), "{what}: {} written", out.display());
    };
    let session = |key: &str, j: usize| SessionRecords {
        key: key.to_string(),
        order: [j, 0, 0],
        records: vec![record(j, "none", 0)],
    };
    // Out of corpus order within its part (one shard of one: it owns all).
    let disordered = part_of(
        dir.path(),
        "disordered.json",
        1,
        0,
        vec![session("b.json", 5), session("a.json", 3)],
    );
    refused(
        std::slice::from_ref(&disordered),
        &disordered,
        "out of corpus order",
    );
    // A session in the part of a shard that does not own its key.
    let key = (0..)
        .map(|j| format!("s{j}.json"))
        .find(|k| owner_of_key(k, 2) == 1)
        .unwrap();
    let stray = part_of(dir.path(), "stray.json", 2, 0, vec![session(&key, 0)]);
    let other = part_of(dir.path(), "other.json", 2, 1, Vec::new());
    refused(
        &[stray.clone(), other],
        &stray,
        "is not of this part's shard 0/2",
    );
    // Parts of the same corpus and command cut into other shard counts.
    let root = super::replay_jobs::mixed_corpus(dir.path(), 4);
    let two_dir = dir.path().join("two");
    let three_dir = dir.path().join("three");
    std::fs::create_dir_all(&two_dir).unwrap();
    std::fs::create_dir_all(&three_dir).unwrap();
    let two = parts(&root, &two_dir, 2);
    let three = parts(&root, &three_dir, 3);
    refused(
        &[two[0].clone(), three[1].clone(), three[2].clone()],
        &three[1],
        "the shard counts differ",
    );
    // Cut inside a record: the end of the file is named.
    let text = std::fs::read_to_string(&two[1]).unwrap();
    let at = text.find("\"records\": [").unwrap() + 40;
    let cut = common::write(dir.path(), "cut.json", &text[..at]);
    let cut = cut.to_string_lossy().into_owned();
    let lines = text[..at].lines().count();
    refused(
        &[two[0].clone(), cut.clone()],
        &format!("{cut}:{lines}"),
        "not the JSON of a corpus replay",
    );
    // And the good parts still merge.
    let (code, _, err) = merge(&two, &["--format", "json", "--out", &out_s]);
    assert_eq!(code, 0, "{err}");
    assert!(out.exists());
}
