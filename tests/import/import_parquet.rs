//! Parquet corpora: one session per row, in the column layouts of the
//! public trajectory datasets. Counts against the sidecar the fixture
//! script writes by its own rules (`scripts/fixtures/parquet_corpus.py`),
//! shards that merge to the whole run, damage named by file and row group
//! with exit 3 while the rest of a corpus imports, and peak memory that
//! does not grow with the number of rows.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use ctxlab::import::corpus::{expand, for_each_member, Item};
use ctxlab::import::ImportOptions;
use parquet::basic::{Compression, Repetition, Type as Physical};
use parquet::data_type::{ByteArray, ByteArrayType};
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;

use crate::common::lab;

const LAYOUTS: [&str; 3] = [
    "swe_agent.parquet",
    "openhands.parquet",
    "documents.parquet",
];

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/import/fixtures/parquet")
}

/// (messages, tool calls, tool results) per row, as the script counted them.
fn expected(dir: &Path, file: &str) -> Vec<(usize, usize, usize)> {
    let text = std::fs::read_to_string(dir.join("expected.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["files"][file]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let n = |k: &str| r[k].as_u64().unwrap() as usize;
            (n("messages"), n("tool_calls"), n("tool_results"))
        })
        .collect()
}

/// (key, messages, tool calls, tool results) per row, as imported.
fn imported(path: &Path) -> Vec<(String, usize, usize, usize)> {
    let inputs = expand(&[path.to_path_buf()]).unwrap();
    assert!(inputs[0].corpus, "a Parquet file is a corpus");
    assert!(matches!(inputs[0].items[0], Item::Parquet(_)));
    let mut out = Vec::new();
    for_each_member(&inputs[0].items[0], &ImportOptions::default(), false, |m| {
        let sessions = m.sessions.unwrap_or_else(|e| panic!("{}: {e}", m.name));
        assert_eq!(sessions.len(), 1, "{}", m.name);
        assert_eq!(sessions[0].label, m.name);
        let s = sessions[0].summary();
        out.push((
            m.key,
            s.main_messages,
            s.main_tool_uses,
            s.main_tool_results,
        ));
        Ok(())
    })
    .unwrap();
    out
}

fn check_counts(dir: &Path) {
    for file in LAYOUTS {
        let path = dir.join(file);
        let want = expected(dir, file);
        let got = imported(&path);
        assert_eq!(got.len(), want.len(), "{file}: one session per row");
        for (n, ((key, m, c, r), w)) in got.into_iter().zip(want).enumerate() {
            assert_eq!(key, format!("{}#row={n}", path.display()));
            assert_eq!((m, c, r), w, "{file} row {n}: (messages, calls, results)");
        }
    }
}

#[test]
fn fixture_rows_import_with_the_scripts_counts() {
    check_counts(&fixture());
}

/// The fixture written afresh by pyarrow at its pinned version, with
/// row groups of uneven size; skipped when pip cannot install it here.
#[test]
fn a_corpus_written_by_pyarrow_now_imports_with_its_counts() {
    let Some(python) = pyarrow_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/fixtures/parquet_corpus.py");
    let out = dir.path().join("corpus");
    let status = Command::new(python)
        .arg(script)
        .arg(&out)
        .args(["--rows", "23", "--group", "5", "--seed", "11"])
        .status()
        .unwrap();
    assert!(status.success());
    check_counts(&out);
}

/// The pinned pyarrow, installed in a venv under $TMPDIR, or `None` with
/// the reason printed.
fn pyarrow_python() -> Option<PathBuf> {
    let venv = std::env::temp_dir().join("ctxlab-pyarrow-26.0.1");
    let python = venv.join("bin/python");
    let ready = |p: &Path| {
        Command::new(p)
            .args([
                "-c",
                "import pyarrow; assert pyarrow.__version__ == '26.0.1'",
            ])
            .status()
            .is_ok_and(|s| s.success())
    };
    if ready(&python) {
        return Some(python);
    }
    let made = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .is_ok_and(|s| s.success());
    let installed = made
        && Command::new(venv.join("bin/pip"))
            .args(["install", "-q", "pyarrow==26.0.1"])
            .status()
            .is_ok_and(|s| s.success());
    if installed && ready(&python) {
        Some(python)
    } else {
        eprintln!("skipped: pyarrow 26.0.1 could not be installed in a venv under $TMPDIR (no python3 -m venv or no package index)");
        None
    }
}

#[test]
fn jobs_and_shard_parts_of_a_parquet_corpus_give_the_whole_run() {
    let file = fixture().join("openhands.parquet");
    let file = file.to_str().unwrap();
    let replay = |extra: &[&str]| {
        let mut args = vec![
            "replay",
            file,
            "--policy",
            "none,claude-code",
            "--format",
            "json",
        ];
        args.extend(extra);
        let (code, out, err) = lab(&args);
        assert_eq!(code, 0, "{extra:?}: {err}");
        out
    };
    let whole = replay(&[]);
    assert!(
        replay(&["--jobs", "3"]) == whole,
        "--jobs 3 differs from --jobs 1"
    );
    let dir = tempfile::tempdir().unwrap();
    let mut parts = Vec::new();
    for i in 0..2 {
        let part = dir.path().join(format!("part{i}.json"));
        std::fs::write(&part, replay(&["--shard", &format!("{i}/2")])).unwrap();
        parts.push(part.to_string_lossy().into_owned());
    }
    // Each part replays only its own rows, and the parts cover the file.
    let sessions = |p: &str| {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
        v["corpus"]["sessions"].as_u64().unwrap()
    };
    let counts: Vec<u64> = parts.iter().map(|p| sessions(p)).collect();
    assert_eq!(counts.iter().sum::<u64>(), 4, "{counts:?}");
    let mut args = vec!["replay", "--merge"];
    args.extend(parts.iter().map(String::as_str));
    args.extend(["--format", "json"]);
    let (code, merged, err) = lab(&args);
    assert_eq!(code, 0, "{err}");
    assert!(merged == whole, "merged parts differ from the whole run");
    let v: serde_json::Value = serde_json::from_str(&whole).unwrap();
    let keys: Vec<&str> = v["corpus"]["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys.len(), 4);
    for (n, key) in keys.iter().enumerate() {
        assert!(
            key.ends_with(&format!("/openhands.parquet#row={n}")),
            "{key}"
        );
    }
}

/// Byte range of each row group's column chunks in the file.
fn row_group_spans(path: &Path) -> Vec<(u64, u64)> {
    let reader = SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
    (0..reader.metadata().num_row_groups())
        .map(|g| {
            let rg = reader.metadata().row_group(g);
            let start = (0..rg.num_columns())
                .map(|c| rg.column(c).byte_range().0)
                .min()
                .unwrap();
            let end = (0..rg.num_columns())
                .map(|c| {
                    let (s, n) = rg.column(c).byte_range();
                    s + n
                })
                .max()
                .unwrap();
            (start, end)
        })
        .collect()
}

#[test]
fn a_corrupt_row_group_is_named_and_the_other_rows_import() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("openhands.parquet");
    std::fs::copy(fixture().join("openhands.parquet"), &path).unwrap();
    let spans = row_group_spans(&path);
    assert_eq!(spans.len(), 2);
    // Every byte of the second row group's column chunks flipped.
    let mut bytes = std::fs::read(&path).unwrap();
    let (start, end) = spans[1];
    for b in &mut bytes[start as usize..end as usize] {
        *b = !*b;
    }
    std::fs::write(&path, &bytes).unwrap();

    let inputs = expand(std::slice::from_ref(&path)).unwrap();
    let mut keys = Vec::new();
    let err = for_each_member(&inputs[0].items[0], &ImportOptions::default(), false, |m| {
        m.sessions.unwrap();
        keys.push(m.key);
        Ok(())
    })
    .unwrap_err();
    let p = path.display().to_string();
    assert_eq!(keys, [format!("{p}#row=0"), format!("{p}#row=1")]);
    let text = err.to_string();
    assert!(
        text.contains(&p) && text.contains("row group 1 (rows 2-3)") && text.contains("at row 2"),
        "{text}"
    );
    assert!(text.contains("fix:"), "{text}");

    let (code, out, err) = lab(&["import", &p, "--format", "json"]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("row group 1"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v[0]["summary"]["sessions"], 2,
        "the readable rows are counted: {out}"
    );
    let (code, _, err) = lab(&["replay", &p, "--policy", "none"]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("row group 1"), "{err}");
}

#[test]
fn a_file_without_a_session_column_is_refused_naming_the_columns() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bare.parquet");
    write_documents(&path, "instance_id", 3, 2, 1);
    let p = path.display().to_string();
    let (code, _, err) = lab(&["import", &p]);
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains(&p) && err.contains("no session column") && err.contains("`instance_id`"),
        "{err}"
    );
    assert!(err.contains("fix: rename the column"), "{err}");
}

#[test]
fn a_cut_file_is_refused_and_a_directory_still_imports_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("a.parquet");
    std::fs::copy(fixture().join("swe_agent.parquet"), &good).unwrap();
    let bytes = std::fs::read(fixture().join("openhands.parquet")).unwrap();
    let cut = dir.path().join("b.parquet");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let c = cut.display().to_string();

    let (code, _, err) = lab(&["import", &c]);
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains(&c) && err.contains("not a readable Parquet file"),
        "{err}"
    );
    assert!(err.contains("fix: the file is cut"), "{err}");

    // In a directory: the good file's four rows are counted, the cut one reported.
    let d = dir.path().display().to_string();
    let (code, out, err) = lab(&["import", &d, "--format", "json"]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains(&c), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v[0]["summary"]["sessions"], 4, "{out}");
    let (code, _, err) = lab(&["replay", &d, "--policy", "none"]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains(&c), "{err}");
}

/// A Parquet file of `rows` rows in `group`-row groups whose string
/// column `column` holds an OpenAI message array of `turns` exchanges,
/// written with the `parquet` crate's own writer (snappy).
fn write_documents(path: &Path, column: &str, rows: usize, group: usize, turns: usize) {
    let values = (0..rows).map(|r| session(r, turns)).collect();
    write_strings(path, column, values, group);
}

/// A Parquet file whose one string column `column` holds `values`, in
/// `group`-row groups.
fn write_strings(path: &Path, column: &str, values: Vec<String>, group: usize) {
    let rows = values.len();
    let field = Type::primitive_type_builder(column, Physical::BYTE_ARRAY)
        .with_repetition(Repetition::REQUIRED)
        .with_logical_type(Some(parquet::basic::LogicalType::String))
        .build()
        .unwrap();
    let schema = Type::group_type_builder("schema")
        .with_fields(vec![Arc::new(field)])
        .build()
        .unwrap();
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let file = std::fs::File::create(path).unwrap();
    let mut writer = SerializedFileWriter::new(file, Arc::new(schema), Arc::new(props)).unwrap();
    for first in (0..rows).step_by(group) {
        let values: Vec<ByteArray> = values[first..rows.min(first + group)]
            .iter()
            .map(|v| ByteArray::from(v.as_bytes().to_vec()))
            .collect();
        let mut rg = writer.next_row_group().unwrap();
        let mut col = rg.next_column().unwrap().unwrap();
        col.typed::<ByteArrayType>()
            .write_batch(&values, None, None)
            .unwrap();
        col.close().unwrap();
        rg.close().unwrap();
    }
    writer.close().unwrap();
}

/// Row `r`'s session: a task, then `turns` calls each answered by a tool message.
fn session(r: usize, turns: usize) -> String {
    let mut msgs =
        vec![serde_json::json!({"role": "user", "content": format!("task {r}: fix the parser")})];
    for t in 0..turns {
        let id = format!("call_{r}_{t}");
        msgs.push(
            serde_json::json!({"role": "assistant", "content": "looking",
            "tool_calls": [{"id": id, "type": "function",
                "function": {"name": "bash", "arguments": "{\"command\": \"cat parser.py\"}"}}]}),
        );
        msgs.push(serde_json::json!({"role": "tool", "tool_call_id": id,
            "content": format!("line {t} of row {r}: ").repeat(40)}));
    }
    msgs.push(serde_json::json!({"role": "assistant", "content": "done"}));
    serde_json::to_string(&msgs).unwrap()
}

#[test]
fn peak_memory_does_not_grow_with_rows() {
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("r100.parquet");
    let large = dir.path().join("r1000.parquet");
    write_documents(&small, "messages", 100, 50, 12);
    write_documents(&large, "messages", 1000, 50, 12);
    assert!(
        std::fs::metadata(&large).unwrap().len() > 5 * std::fs::metadata(&small).unwrap().len()
    );
    let peak = |p: &Path| {
        let p = p.to_str().unwrap();
        crate::common::peak_rss_of(&["replay", p, "--policy", "none,claude-code"])
    };
    let (p100, p1000) = (peak(&small), peak(&large));
    eprintln!(
        "peak RSS: 100 rows {} kB, 1,000 rows {} kB",
        p100 / 1024,
        p1000 / 1024
    );
    assert!(
        p1000 as f64 <= 1.3 * p100 as f64 + 10.0 * 1024.0 * 1024.0,
        "1,000 rows peaked at {p1000} bytes, 100 rows at {p100}"
    );
}

/// A Claude Code log with usage, three calls.
fn claude_log() -> String {
    let mut records = Vec::new();
    let mut parent = serde_json::Value::Null;
    for i in 0..3 {
        let u = serde_json::json!({"type": "user", "uuid": format!("u{i}"), "parentUuid": parent,
            "sessionId": "s", "isSidechain": false, "version": "1.0.0",
            "message": {"role": "user", "content": format!("step {i}: read the file {}", "x".repeat(200))}});
        parent = serde_json::json!(format!("u{i}"));
        records.push(u);
        let a = serde_json::json!({"type": "assistant", "uuid": format!("a{i}"), "parentUuid": parent,
            "sessionId": "s", "isSidechain": false, "version": "1.0.0", "requestId": format!("r{i}"),
            "message": {"id": format!("m{i}"), "role": "assistant", "model": "claude-sonnet-4",
                "content": [{"type": "text", "text": "ok"}],
                "usage": {"input_tokens": 100 + i * 50, "output_tokens": 20,
                    "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}}});
        parent = serde_json::json!(format!("a{i}"));
        records.push(a);
    }
    crate::common::jsonl(&records)
}

/// A Claude Code log in a string column replays as the file does: its
/// recorded usage is read back from the row (`FILE#row=N`).
#[test]
fn a_claude_code_log_in_a_row_replays_as_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("s.jsonl");
    std::fs::write(&log, claude_log()).unwrap();
    let file = dir.path().join("logs.parquet");
    write_strings(&file, "messages", vec![claude_log(), claude_log()], 1);
    let json = |args: &[&str]| {
        let (code, out, err) = lab(args);
        assert_eq!(code, 0, "{args:?}: {err}");
        serde_json::from_str::<serde_json::Value>(&out).unwrap()
    };
    let alone = json(&[
        "replay",
        log.to_str().unwrap(),
        "--policy",
        "none",
        "--format",
        "json",
    ]);
    let rows = json(&[
        "replay",
        file.to_str().unwrap(),
        "--policy",
        "none",
        "--per-session",
        "--format",
        "json",
    ]);
    let sessions = rows["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2);
    let mut envelope = sessions[1]["replay"]["envelopes"][0].clone();
    assert_eq!(envelope["basis"], "recorded", "{envelope}");
    envelope["session"] = alone["envelopes"][0]["session"].clone();
    assert_eq!(envelope, alone["envelopes"][0]);
}
