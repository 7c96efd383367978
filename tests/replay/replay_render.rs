//! Renderers of replay reports on synthetic sessions (no transcript data), snapshotted.

use crate::common;

use std::path::PathBuf;

use ctxlab::import::ImportOptions;
use ctxlab::message::{Block, Message};
use ctxlab::replay::profiles::{
    render, render_json, render_markdown, render_svg, render_table, replay_messages, run_files,
    ReplayOptions, ReplayReport,
};

fn synthetic(turns: usize, result_chars: usize) -> Vec<Message> {
    let mut m = vec![Message::user_text("build it")];
    for t in 0..turns {
        let id = format!("call_{t:03}");
        m.push(Message::assistant(vec![Block::ToolUse {
            id: id.clone(),
            name: "bash".into(),
            input: serde_json::json!({"n": t}).into(),
        }]));
        m.push(Message::tool_results(vec![(
            id,
            "x".repeat(result_chars * (1 + t % 3)),
        )]));
    }
    m.push(Message::assistant(vec![Block::Text {
        text: "done".into(),
    }]));
    m
}

fn reports() -> Vec<ReplayReport> {
    let msgs = synthetic(30, 1_500);
    ["course-f9e8b28", "hardened"]
        .iter()
        .map(|p| {
            replay_messages(
                "synthetic__a.jsonl",
                &msgs,
                &[40],
                p,
                &ReplayOptions {
                    scale: 0.3,
                    ..ReplayOptions::default()
                },
            )
            .unwrap()
        })
        .collect()
}

#[test]
fn table_snapshot() {
    insta::assert_snapshot!("replay_table", render_table(&reports()));
}

#[test]
fn markdown_snapshot() {
    insta::assert_snapshot!("replay_markdown", render_markdown(&reports()));
}

#[test]
fn svg_snapshot() {
    insta::assert_snapshot!("replay_svg", render_svg(&reports()));
}

#[test]
fn json_has_every_field_and_the_series() {
    let r = reports();
    let v: serde_json::Value = serde_json::from_str(&render_json(&r)).unwrap();
    assert_eq!(
        v["sizes"],
        ctxlab::replay::profiles::SIZE_ESTIMATES,
        "the estimates are named"
    );
    let first = &v["reports"][0];
    for key in [
        "lost_forever",
        "pointer_lost",
        "pairs_intact",
        "unseen_compacted",
        "double_compacted",
        "bytes_persisted",
        "summary_calls",
        "first_fired_at",
        "first_summary_at",
        "real_compactions",
        "real_compaction_meta",
        "starts_with_summary",
        "sent_final_chars",
        "series",
    ] {
        assert!(first.get(key).is_some(), "missing {key}");
    }
    assert_eq!(first["series"].as_array().unwrap().len(), r[0].model_calls);
    assert_eq!(
        render(&r, ctxlab::render::Format::Json),
        render_json(&r),
        "render dispatches"
    );
}

#[test]
fn run_files_imports_and_replays_every_pair() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("req.json");
    let msgs = synthetic(4, 100);
    std::fs::write(
        &path,
        serde_json::to_string(&serde_json::json!({ "messages": msgs })).unwrap(),
    )
    .unwrap();
    let files: Vec<PathBuf> = vec![path.clone(), path];
    let run = run_files(
        &files,
        &[],
        &ReplayOptions::default(),
        &ImportOptions::default(),
    )
    .unwrap();
    assert_eq!(
        run.reports.len(),
        2 * ctxlab::replay::profiles::profile_names().len()
    );
    assert!(run.diagnostics.is_empty());
    assert!(run.reports.iter().all(|r| r.source == "req.json"));
    let bad = run_files(
        &files,
        &["nope"],
        &ReplayOptions::default(),
        &ImportOptions::default(),
    );
    assert_eq!(bad.unwrap_err().exit_code(), 2);
}

#[test]
fn scale_to_real_matches_the_raw_size_at_the_real_compaction() {
    use serde_json::json;
    let big = "y".repeat(20_000);
    let recs = [
        json!({"type": "user", "uuid": "u1", "parentUuid": null, "message": {"role": "user", "content": big}}),
        json!({"type": "assistant", "uuid": "a1", "parentUuid": "u1", "message": {"role": "assistant", "id": "m1", "content": "ok"}}),
        json!({"type": "user", "uuid": "c1", "parentUuid": "a1", "message": {"role": "user",
            "content": "This session is being continued from a previous conversation."}}),
        json!({"type": "assistant", "uuid": "a2", "parentUuid": "c1", "message": {"role": "assistant", "id": "m2", "content": "go on"}}),
    ];
    let text: String = recs.iter().map(|r| format!("{r}\n")).collect();
    let s = ctxlab::import::import_str(
        &text,
        std::path::Path::new("s.jsonl"),
        ctxlab::import::TranscriptFormat::ClaudeJsonl,
        &ImportOptions::default(),
    )
    .unwrap();
    assert_eq!(s.real_compactions, vec![2]);
    let scale = ctxlab::replay::profiles::scale_to_real(&s, "course-f9e8b28")
        .unwrap()
        .unwrap();
    let raw = ctxlab::message::estimate_chars(&s.main[..2]) as f64;
    assert!((scale * 50_000.0 - raw).abs() <= 50.0, "{scale} vs {raw}");
}

#[test]
fn the_default_table_fits_a_terminal_and_columns_choose_the_rest() {
    let r = reports();
    let table = render_table(&r);
    let widest = table.lines().map(|l| l.chars().count()).max().unwrap();
    assert!(widest <= 120, "{widest} columns:\n{table}");
    let all = ctxlab::replay::profiles::parse_columns("all").unwrap();
    let full = ctxlab::replay::profiles::render_table_columns(&r, &all);
    assert!(full.contains("double_compacted") && !table.contains("double_compacted"));
    let two = ctxlab::replay::profiles::parse_columns("profile, lost_forever").unwrap();
    let narrow = ctxlab::replay::profiles::render_table_columns(&r, &two);
    // The header row is the first table line naming a column (the size
    // estimates are explained above the table).
    let header: Vec<&str> = narrow
        .lines()
        .find(|l| l.contains('┆'))
        .unwrap()
        .split(['│', '┆'])
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(header, ["profile", "lost_forever"], "{narrow}");
    let e = ctxlab::replay::profiles::parse_columns("profile,nope").unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains("\"nope\""), "{e}");
    // JSON keeps every field whatever the columns.
    let json = ctxlab::replay::profiles::render_with(&r, ctxlab::render::Format::Json, Some(&two));
    assert!(json.contains("\"double_compacted\""));
}

#[test]
fn replay_columns_flag_through_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("req.json");
    std::fs::write(
        &path,
        serde_json::to_string(&serde_json::json!({ "messages": synthetic(4, 100) })).unwrap(),
    )
    .unwrap();
    let text = common::lab_ok(&[
        "replay",
        path.to_str().unwrap(),
        "--profile",
        "hardened",
        "--columns",
        "file,calls",
    ]);
    assert!(text.contains("file     ┆ calls"), "{text}");
    let (code, _, _) = common::lab(&["replay", path.to_str().unwrap(), "--columns", "nope"]);
    assert_eq!(code, 2);
}
