//! `lab calibrate`: the closed loop's predicted re-fetches against what the
//! recorded agents used again after their product compacted, on the shared
//! transcripts; the checked-in `reports/closed_loop_calibration.*` are what
//! the code computes now.

use std::path::{Path, PathBuf};

use ctxlab::replay::calibrate::{calibrate, render, Figures};
use ctxlab::replay::policies::closed_loop::Outcome;

/// Every file under `dir`, recursively.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// Real compactions counted from the raw records, not by the importer: a
/// Claude Code record marked `isCompactSummary` (one per compaction: the
/// summary the product wrote), a Pi entry of type `compaction`.
fn raw_compactions(dir: &Path) -> usize {
    let mut all = Vec::new();
    files(dir, &mut all);
    let mut n = 0;
    for path in all {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let records: Vec<serde_json::Value> = match serde_json::from_str(&text) {
            Ok(serde_json::Value::Array(a)) => a,
            _ => text
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect(),
        };
        n += records
            .iter()
            .filter(|r| {
                r.get("isCompactSummary") == Some(&serde_json::Value::Bool(true))
                    || r.get("type").and_then(|t| t.as_str()) == Some("compaction")
            })
            .count();
    }
    n
}

#[test]
fn the_checked_in_calibration_is_what_the_code_computes_on_every_real_compaction() {
    let Some(dir) = crate::common::transcripts() else {
        return;
    };
    let c = calibrate(&dir).unwrap();
    // Every real compaction is walked, counted apart from the importer.
    let raw = raw_compactions(&dir);
    assert!(raw > 0, "the shared transcripts hold real compactions");
    assert_eq!(c.compactions.len(), raw, "compactions walked");
    // Each figure is the listed pairs' count, recomputed here by hand.
    for row in &c.compactions {
        let pairs: Vec<_> = c
            .pairs
            .iter()
            .filter(|p| p.session == row.session && p.compaction == row.at)
            .collect();
        // Each side as the pair records it: the call that fetched again
        // (observed), the port's outcome (predicted).
        let observed = pairs.iter().filter(|p| p.observed_at.is_some()).count();
        let inserted = |p: &&&ctxlab::replay::calibrate::Pair| {
            matches!(p.port, Some(Outcome::Recovery | Outcome::Refetch))
        };
        let predicted = pairs.iter().filter(inserted).count();
        let both = pairs
            .iter()
            .filter(|p| p.observed_at.is_some() && inserted(p))
            .count();
        for p in &pairs {
            // A re-fetch is a call after the compaction of what came before it.
            assert!(p.source < row.replayed_at, "{p:?}");
            assert!(p.observed_at.is_none_or(|a| a >= row.replayed_at), "{p:?}");
            assert!(p.observed_at.is_some() || inserted(&p), "{p:?}");
        }
        let f = &row.figures;
        assert_eq!(
            (f.observed, f.predicted, f.both),
            (observed, predicted, both),
            "{} at {}",
            row.session,
            row.at
        );
        assert_eq!(
            f.precision,
            (predicted > 0).then(|| both as f64 / predicted as f64)
        );
        assert_eq!(
            f.recall,
            (observed > 0).then(|| both as f64 / observed as f64)
        );
    }
    let t = Figures::of(&c.pairs);
    assert_eq!(t, c.total);
    assert_eq!(
        t.observed,
        c.compactions
            .iter()
            .map(|r| r.figures.observed)
            .sum::<usize>()
    );
    // The checked-in report is today's.
    let reports = Path::new(env!("CARGO_MANIFEST_DIR")).join("reports");
    for (name, format) in [
        (
            "closed_loop_calibration.md",
            ctxlab::render::Format::Markdown,
        ),
        ("closed_loop_calibration.json", ctxlab::render::Format::Json),
    ] {
        let have = std::fs::read_to_string(reports.join(name)).unwrap_or_default();
        assert!(
            have == render(&c, format),
            "reports/{name} is stale: run `make calibration` and review the change"
        );
    }
}
