//! Replay of every real transcript under every profile.
//!
//! The transcripts are read in place from `../shared/transcripts/` (they hold
//! real names and paths); snapshots hold numbers only. Without the directory
//! every test prints a skip message and passes.

use crate::common;
use common::{snapshot_name, transcripts};

use ctxlab::import::{import_file, ImportOptions};
use ctxlab::replay::profiles::{
    profile_names, render_json, render_markdown, render_svg, render_table, replay, ReplayReport,
};
use serde::Serialize;

const FILES: &[&str] = &[
    "claude_code/session-share__general-tool-calls.jsonl",
    "claude_code/claude-code-viewer__fe5e1c67.jsonl",
    "claude_code/dmux__chat@eef6c28.json",
    "claude_code/templar__chat@a46211b.json",
    "claude_code/attio-mcp-server__chat@816b68a.json",
    "openai_format/swe-agent__function-calling-demo__marshmallow-1867.traj",
];

/// The numbers of a report, without the per-call series.
#[derive(Serialize)]
struct Numbers<'a> {
    profile: &'a str,
    model_calls: usize,
    tool_results: usize,
    lost_forever: u64,
    pointer_lost: u64,
    pairs_intact: bool,
    invalid_requests: u64,
    unseen_compacted: u64,
    double_compacted: u64,
    persisted_files: usize,
    bytes_persisted: u64,
    summary_calls: u64,
    first_fired_at: Option<usize>,
    first_summary_at: Option<usize>,
    real_compactions: &'a [usize],
    summary_vs_real: Option<i64>,
    peak_chars: usize,
    final_chars: usize,
    raw_final_chars: usize,
}

fn numbers(r: &ReplayReport) -> Numbers<'_> {
    Numbers {
        profile: &r.profile,
        model_calls: r.model_calls,
        tool_results: r.tool_results,
        lost_forever: r.lost_forever,
        pointer_lost: r.pointer_lost,
        pairs_intact: r.pairs_intact,
        invalid_requests: r.invalid_requests,
        unseen_compacted: r.unseen_compacted,
        double_compacted: r.double_compacted,
        persisted_files: r.persisted_files,
        bytes_persisted: r.bytes_persisted,
        summary_calls: r.summary_calls,
        first_fired_at: r.first_fired_at,
        first_summary_at: r.first_summary_at,
        real_compactions: &r.real_compactions,
        summary_vs_real: r.summary_vs_real,
        peak_chars: r.peak_chars,
        final_chars: r.final_chars,
        raw_final_chars: r.raw_final_chars,
    }
}

fn every_profile(file: &str) {
    let Some(dir) = transcripts() else { return };
    let s = import_file(&dir.join(file), &ImportOptions::default()).unwrap();
    let reports: Vec<ReplayReport> = profile_names()
        .iter()
        .map(|p| replay(&s, p, 1.0).unwrap_or_else(|e| panic!("{file} {p}: {e}")))
        .collect();
    let calls = s
        .main
        .iter()
        .filter(|m| m.role == ctxlab::message::Role::Assistant)
        .count();
    for r in &reports {
        assert_eq!(r.model_calls, calls, "{file} {}", r.profile);
        assert_eq!(r.series.len(), calls);
        assert_eq!(r.messages, s.main.len());
        assert_eq!(r.real_compactions, s.real_compactions);
        assert!(r.series.windows(2).all(|w| w[0].at < w[1].at));
        assert!(r.series.iter().all(|p| p.chars > 0));
    }
    let numbers: Vec<Numbers> = reports.iter().map(numbers).collect();
    insta::assert_json_snapshot!(snapshot_name("replay", file), numbers);
}

// One test per file so they run in parallel.
#[test]
fn session_share_under_every_profile() {
    every_profile(FILES[0]);
}

#[test]
fn claude_code_viewer_under_every_profile() {
    every_profile(FILES[1]);
}

#[test]
fn dmux_under_every_profile() {
    every_profile(FILES[2]);
}

#[test]
fn templar_under_every_profile() {
    every_profile(FILES[3]);
}

#[test]
fn attio_under_every_profile() {
    every_profile(FILES[4]);
}

#[test]
fn swe_agent_under_every_profile() {
    every_profile(FILES[5]);
}

#[test]
fn a_smaller_scale_never_raises_the_peak() {
    let Some(dir) = transcripts() else { return };
    let s = import_file(&dir.join(FILES[3]), &ImportOptions::default()).unwrap();
    let full = replay(&s, "course-f9e8b28", 1.0).unwrap();
    let tenth = replay(&s, "course-f9e8b28", 0.1).unwrap();
    assert_eq!(tenth.context_char_limit, full.context_char_limit / 10);
    assert!(
        tenth.peak_chars <= full.peak_chars,
        "{} > {}",
        tenth.peak_chars,
        full.peak_chars
    );
    // A tenth of the budget summarises at least as often. (Not "fires no
    // later": "first fired" is the first archive or summary, and at a tenth
    // the results persisted and micro-compacted earlier can put it later:
    // on this session call 15 against 11.)
    assert!(tenth.summary_calls >= full.summary_calls);
    assert!(tenth.first_fired_at.is_some());
    assert_eq!(tenth.raw_final_chars, full.raw_final_chars, "same input");
}

#[test]
fn renderings_are_deterministic_and_hold_no_transcript_text() {
    let Some(dir) = transcripts() else { return };
    let s = import_file(&dir.join(FILES[2]), &ImportOptions::default()).unwrap();
    let reports: Vec<ReplayReport> = ["course-main", "hardened"]
        .iter()
        .map(|p| replay(&s, p, 0.5).unwrap())
        .collect();
    let again: Vec<ReplayReport> = ["course-main", "hardened"]
        .iter()
        .map(|p| replay(&s, p, 0.5).unwrap())
        .collect();
    assert_eq!(reports, again, "a replay is reproducible");
    for text in [
        render_table(&reports),
        render_markdown(&reports),
        render_json(&reports),
        render_svg(&reports),
    ] {
        assert!(text.contains("dmux"));
        assert!(!text.contains("/work/"), "no paths");
        assert!(!text.contains("toolu_"), "no tool ids");
    }
    assert_eq!(render_svg(&reports), render_svg(&again));
}

#[test]
fn templar_at_the_real_budget() {
    let Some(dir) = transcripts() else { return };
    let s = import_file(&dir.join(FILES[3]), &ImportOptions::default()).unwrap();
    let scale = ctxlab::replay::profiles::scale_to_real(&s, "course-f9e8b28")
        .unwrap()
        .expect("templar compacted");
    assert!(
        scale > 1.0,
        "the real context was larger than the course's: {scale}"
    );
    let r = replay(&s, "course-f9e8b28", scale).unwrap();
    let at = s.real_compactions[0];
    // Before the real compaction the raw size stays under the scaled limit
    // (within rounding), so nothing can have needed a summary earlier.
    let before = r.series.iter().rfind(|p| p.at < at).unwrap();
    assert!(before.raw_chars <= r.context_char_limit + r.context_char_limit / 500);
    assert!(
        r.first_summary_at.is_none_or(|i| i >= at - 2),
        "{:?}",
        r.first_summary_at
    );
    insta::assert_json_snapshot!("replay_templar_at_real_budget", numbers(&r));
    let none = import_file(&dir.join(FILES[2]), &ImportOptions::default()).unwrap();
    assert_eq!(
        ctxlab::replay::profiles::scale_to_real(&none, "hardened").unwrap(),
        None
    );
}
