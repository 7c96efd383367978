//! The zoo's fault rows (caught by their counter, intact run clean) and a
//! replay of every real transcript through each policy of this part of the
//! zoo, with validity held.

mod common;
use common::{transcript_files, transcripts};

use ctxlab::import::{import_file, ImportOptions};
use ctxlab::policy::engine::{replay, Env, Session};
use ctxlab::policy::experiments::agents::EXPERIMENTS;
use ctxlab::policy::list;

#[test]
fn every_fault_row_is_caught_and_its_baseline_is_clean() {
    for row in EXPERIMENTS {
        let v = common::verdict_holding(row);
        for c in &v.cells {
            // The codex baseline drops the planted orphan by design, so
            // lost_forever is not part of "clean" here; validity and pointers are.
            for name in ["dangling_pointers", "invalid_requests"] {
                assert_eq!(
                    c.baseline.count_of(name),
                    Some(0),
                    "{} baseline {name}",
                    row.id
                );
            }
        }
    }
}

const ZOO_A: &[&str] = &[
    "anthropic-clear-tool-uses",
    "anthropic-compact",
    "codex-cli",
    "opencode",
    "gemini-cli",
    "claude-code",
];

/// Every transcript through every policy of this part of the zoo: no
/// request may break a provider rule the recorded session itself keeps (the
/// `none` baseline replays it unchanged), and no pointer may dangle.
#[test]
fn every_transcript_replays_with_validity_held() {
    let Some(dir) = transcripts() else { return };
    let files = transcript_files(&dir);
    assert!(!files.is_empty(), "the transcript directory is empty");
    for path in files {
        let session = import_file(&path, &ImportOptions::default()).unwrap();
        let s = Session {
            name: "real",
            messages: &session.main,
            times_ms: None,
        };
        let base = replay(list::make("none").unwrap().as_mut(), s, &mut Env::default()).unwrap();
        for name in ZOO_A {
            let run = replay(list::make(name).unwrap().as_mut(), s, &mut Env::default()).unwrap();
            let what = format!("{} under {name}", path.display());
            assert!(
                run.ended_by_error.is_none(),
                "{what}: {:?}",
                run.ended_by_error
            );
            assert_eq!(run.calls.len(), base.calls.len(), "{what}: calls");
            assert!(
                run.invalid_requests <= base.invalid_requests,
                "{what}: {} invalid requests, the recorded session has {}",
                run.invalid_requests,
                base.invalid_requests
            );
            assert_eq!(run.findings.dangling_pointers.count, 0, "{what}: dangling");
            eprintln!(
                "DBG {what}: calls {} events {} peak {} base_invalid {} inv {}",
                run.calls.len(),
                run.events.len(),
                run.peak_chars(),
                base.invalid_requests,
                run.invalid_requests
            );
        }
    }
}
