//! Every Markdown output renders as intended: parsed with a CommonMark/GFM
//! parser, each table keeps its header's column count in every row, and
//! the text around tables (status lines, readings) is never swallowed as a
//! table row.

use crate::common;
use common::lab_ok;

use std::path::Path;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// What a renderer made of the text: per table, the cell count of each
/// row (header first) and the text of its cells; and the text of every
/// paragraph.
#[derive(Debug, Default)]
struct Rendered {
    tables: Vec<Vec<Vec<String>>>,
    paragraphs: Vec<String>,
}

fn render(md: &str) -> Rendered {
    let mut r = Rendered::default();
    let (mut in_para, mut text) = (false, String::new());
    let mut row: Option<Vec<String>> = None;
    for ev in Parser::new_ext(md, Options::ENABLE_TABLES) {
        match ev {
            Event::Start(Tag::Table(_)) => r.tables.push(Vec::new()),
            Event::Start(Tag::TableHead | Tag::TableRow) => row = Some(Vec::new()),
            Event::End(TagEnd::TableHead | TagEnd::TableRow) => {
                r.tables.last_mut().unwrap().push(row.take().unwrap());
            }
            Event::Start(Tag::TableCell) => row.as_mut().unwrap().push(String::new()),
            Event::Start(Tag::Paragraph) => (in_para, text) = (true, String::new()),
            Event::End(TagEnd::Paragraph) => {
                in_para = false;
                r.paragraphs.push(std::mem::take(&mut text));
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some(cells) = row.as_mut() {
                    cells.last_mut().unwrap().push_str(&t);
                } else if in_para {
                    text.push_str(&t);
                }
            }
            _ => {}
        }
    }
    r
}

fn assert_well_formed(label: &str, md: &str) -> Rendered {
    let r = render(md);
    assert!(!r.tables.is_empty(), "{label}: no table rendered:\n{md}");
    for t in &r.tables {
        let width = t[0].len();
        for row in t {
            assert_eq!(row.len(), width, "{label}: ragged row {row:?}\n{md}");
            assert!(
                !row.iter().any(|c| c.starts_with("PASS")
                    || c.starts_with("FAIL")
                    || c.starts_with("reading")),
                "{label}: prose swallowed as a table row {row:?}"
            );
        }
    }
    r
}

#[test]
fn scenario_runs_render_status_lines_as_paragraphs() {
    let scenarios = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let tmp = tempfile::tempdir().unwrap();
    let mut args = vec!["run".to_string()];
    // Compaction scenarios pin short paths; copies at a length any TMPDIR
    // allows, without their pinned counters, still pass and still render.
    for name in ["probe-intact.json", "seed-scenario-a.json"] {
        let text = std::fs::read_to_string(scenarios.join(name)).unwrap();
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["path_len"] = serde_json::json!([250]);
        v["expect"] = serde_json::json!({});
        let copy = tmp.path().join(name);
        std::fs::write(&copy, v.to_string()).unwrap();
        args.push(copy.to_string_lossy().into_owned());
    }
    args.push(
        scenarios
            .join("memory/dedup_off.json")
            .to_string_lossy()
            .into_owned(),
    );
    args.extend(["--format".into(), "markdown".into()]);
    let md = lab_ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let r = assert_well_formed("run", &md);
    let passes = r
        .paragraphs
        .iter()
        .filter(|p| p.starts_with("PASS"))
        .count();
    assert_eq!(passes, 3, "{:?}", r.paragraphs);
}

#[test]
fn verdicts_list_probe_and_profiles_render_as_tables() {
    let r = assert_well_formed(
        "break",
        &lab_ok(&[
            "break",
            "D6",
            "M-dedup-off",
            "--path-len",
            "250",
            "--format",
            "markdown",
        ]),
    );
    assert!(
        r.paragraphs
            .iter()
            .any(|p| p.starts_with("reading: lost_forever")),
        "{:?}",
        r.paragraphs
    );
    let list = assert_well_formed("list", &lab_ok(&["list", "--format", "markdown"]));
    assert_eq!(list.tables[0][0].len(), 6);
    assert!(list.tables[0].iter().any(|row| row[0] == "D6"));
    assert_well_formed(
        "probe",
        &lab_ok(&["probe", "--path-len", "250", "--format", "markdown"]),
    );
    assert_well_formed("profiles", &lab_ok(&["profiles", "--format", "markdown"]));
}

#[test]
fn a_pipe_or_a_control_byte_in_a_cell_keeps_the_row_intact() {
    let cell = ctxlab::render::cell_text("a|b\u{0}\u{1b}[2J\nc", true);
    assert_eq!(cell, "a\\|b\\u{0}\\u{1b}[2J\\u{a}c");
    let md = format!("| x | y |\n|---|---|\n| {cell} | 2 |\n");
    let r = render(&md);
    assert_eq!(
        r.tables[0][1],
        vec!["a|b\\u{0}\\u{1b}[2J\\u{a}c".to_string(), "2".into()]
    );
    assert_eq!(ctxlab::render::cell_text("a|b", false), "a|b");
}

#[test]
fn counts_are_singular_when_one() {
    assert_eq!(ctxlab::render::count(1, "round"), "1 round");
    assert_eq!(ctxlab::render::count(0, "round"), "0 rounds");
    assert_eq!(ctxlab::render::count(4, "round"), "4 rounds");
}

#[test]
fn sweeps_and_checked_in_reports_render_as_tables() {
    let md = lab_ok(&[
        "sweep",
        "--vary",
        "order",
        "--path-len",
        "250",
        "--format",
        "markdown",
    ]);
    assert_well_formed("sweep", &md);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("reports");
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md")
            && p.file_name().is_some_and(|n| n != "README.md")
        {
            let text = std::fs::read_to_string(&p).unwrap();
            // Lists (thresholds) have no table; every other report is one.
            if text.contains('|') {
                assert_well_formed(&p.display().to_string(), &text);
            }
        }
    }
}
