//! Frontmatter against PyYAML, through fixtures made by
//! `tests/golden/memory/generate.py` (PyYAML; not run by CI, see its header):
//! files the course's write path writes load as PyYAML reads them, and every
//! value ctxlab writes is read back identically by PyYAML.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ctxlab::memory::frontmatter::{parse, render, Document};
use ctxlab::memory::store::Store;
use ctxlab::memory::switches::MemorySwitches;
use ctxlab::storage::{MemFs, Shared};

fn golden() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/memory")
}

#[derive(serde::Deserialize, Debug, PartialEq)]
struct Fields {
    name: String,
    description: String,
    #[serde(rename = "type")]
    mem_type: String,
    body: String,
}

fn load(file: &str) -> Vec<Fields> {
    let text = std::fs::read_to_string(golden().join(file)).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn doc(f: &Fields) -> Document {
    Document {
        name: f.name.clone(),
        description: f.description.clone(),
        mem_type: f.mem_type.clone(),
        body: f.body.clone(),
    }
}

fn fixture(dir: &str, i: usize) -> PathBuf {
    golden().join(dir).join(format!("{i:03}.md"))
}

#[test]
fn ctxlab_written_fixtures_are_what_the_renderer_writes_now() {
    let values = load("values.json");
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    if update {
        std::fs::create_dir_all(golden().join("ctxlab_written")).unwrap();
    }
    for (i, v) in values.iter().enumerate() {
        let text = render(&doc(v));
        if update {
            std::fs::write(fixture("ctxlab_written", i), &text).unwrap();
        }
        let committed = std::fs::read_to_string(fixture("ctxlab_written", i)).unwrap();
        assert_eq!(
            committed, text,
            "fixture {i} is stale: rerun generate.py's steps"
        );
        assert_eq!(parse(&text).unwrap(), doc(v), "ctxlab round trip of {i}");
    }
}

#[test]
fn pyyaml_reads_back_every_value_ctxlab_writes() {
    let values = load("values.json");
    let read = load("pyyaml_read.json");
    assert_eq!(values.len(), read.len());
    for (i, (v, r)) in values.iter().zip(&read).enumerate() {
        assert_eq!(v, r, "PyYAML read value {i} back differently");
    }
}

#[test]
fn course_written_files_load_as_pyyaml_reads_them() {
    let read = load("course_read.json");
    let mut folded = 0;
    for (i, want) in read.iter().enumerate() {
        let text = std::fs::read_to_string(fixture("course_written", i)).unwrap();
        folded += usize::from(text.lines().count() > 7);
        let got = parse(&text).unwrap_or_else(|e| panic!("course file {i}: {e:?}\n{text}"));
        assert_eq!(got, doc(want), "course file {i}:\n{text}");
    }
    assert!(
        folded > 0,
        "the fixtures include a description PyYAML folded"
    );
}

#[test]
fn a_store_of_course_written_files_quarantines_nothing() {
    let fs: Shared = Arc::new(MemFs::new());
    let store = Store::open(
        fs.clone(),
        Path::new("/w/.memory"),
        MemorySwitches::default(),
    )
    .unwrap();
    let n = load("course_read.json").len();
    for i in 0..n {
        let bytes = std::fs::read(fixture("course_written", i)).unwrap();
        fs.write_new(&store.root().join(format!("m{i:03}.md")), &bytes)
            .unwrap();
    }
    let scan = store.scan().unwrap();
    assert_eq!(scan.quarantined, vec![]);
    assert_eq!(scan.records.len(), n);
}
