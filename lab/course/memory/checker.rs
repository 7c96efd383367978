//! Invariant checks over a harness run: disk state plus harness tallies in,
//! [`Counters`] out. Checkers return data; they never panic or print.

use std::collections::{BTreeMap, BTreeSet};

use super::extract::{duplicate_of, temporary_marker};
pub use super::sandbox::{files_outside, watched_root};
use super::session::{Harness, Tally};
use super::store::{Memory, Record, Store};
use crate::counters::Counters;
use crate::error::LabResult;

/// Acknowledged memories missing from the store (not merged away on
/// purpose), and among them those whose file now holds a different memory.
fn losses(h: &Harness, records: &[super::store::Record]) -> (Vec<String>, Vec<String>) {
    let by_file: BTreeMap<&str, &str> = records
        .iter()
        .map(|r| (r.file.as_str(), r.memory.name.as_str()))
        .collect();
    let mut lost = Vec::new();
    let mut overwritten = Vec::new();
    for (name, file) in &h.ledger.acknowledged {
        if h.ledger.merged.contains(name) {
            continue;
        }
        match by_file.get(file.as_str()) {
            Some(n) if n == name => {}
            Some(_) => {
                lost.push(name.clone());
                overwritten.push(format!("{name}@{file}"));
            }
            None => lost.push(name.clone()),
        }
    }
    (lost, overwritten)
}

/// All memory counters for a harness, in a fixed order:
/// `written_outside_store`, `index_drift`, `temporary_stored`,
/// `duplicates_stored`, `acknowledged_lost`, `garbage_fallbacks`,
/// `garbage_empty_selections`, `keyword_fallbacks`, `records_cut_midway`,
/// `model_writes`, `model_write_attempts_refused`, `consolidations_done`,
/// `consolidations_failed`, `rollbacks`, `consolidation_skipped_silently`,
/// `consolidation_skipped_warned`, `refused_writes`, `system_prompts`,
/// `overwritten_by_other_memory`, `quarantined` (malformed files left out),
/// `store_size` (memory files on disk), `store_chars` (consolidation-catalog
/// characters of the store).
pub fn check(h: &Harness) -> LabResult<Counters> {
    let mut c = Counters::default();
    let store = &h.store;
    let outside = written_outside(h)?;
    c.count("written_outside_store", outside.len() as u64, outside);

    let scan = store.scan()?;
    let records = scan.records;
    let drift = index_drift(store, &records)?;
    c.count("index_drift", drift.len() as u64, drift);
    let temporary: Vec<String> = records
        .iter()
        .filter(|r| temporary_marker(&r.memory).is_some())
        .map(|r| r.file.clone())
        .collect();
    c.count("temporary_stored", temporary.len() as u64, temporary);
    let dups = duplicates(&records);
    c.count("duplicates_stored", dups.len() as u64, dups);
    let (lost, overwritten) = losses(h, &records);
    c.count("acknowledged_lost", lost.len() as u64, lost);

    let s = &h.stats;
    for (name, t) in [
        ("garbage_fallbacks", &s.garbage_fallbacks),
        ("garbage_empty_selections", &s.garbage_empty_selections),
        ("keyword_fallbacks", &s.keyword_fallbacks),
        ("records_cut_midway", &s.records_cut_midway),
        ("model_writes", &s.model_writes),
        (
            "model_write_attempts_refused",
            &s.model_write_attempts_refused,
        ),
        ("consolidations_done", &s.consolidations_done),
        ("consolidations_failed", &s.consolidations_failed),
        ("rollbacks", &s.rollbacks),
        (
            "consolidation_skipped_silently",
            &s.consolidation_skipped_silently,
        ),
        (
            "consolidation_skipped_warned",
            &s.consolidation_skipped_warned,
        ),
        ("refused_writes", &s.refused_writes),
    ] {
        tally(&mut c, name, t);
    }
    c.count("system_prompts", s.system_prompts.n, std::iter::empty());
    c.count(
        "overwritten_by_other_memory",
        overwritten.len() as u64,
        overwritten,
    );
    let q: Vec<String> = scan
        .quarantined
        .iter()
        .map(super::store::Quarantined::describe)
        .collect();
    c.count("quarantined", q.len() as u64, q);
    c.count("store_size", records.len() as u64, std::iter::empty());
    let chars = super::consolidate::catalog(&records).chars().count() as u64;
    c.count("store_chars", chars, std::iter::empty());
    Ok(c)
}

/// Files created or changed anywhere in the sandbox outside the store,
/// relative to the sandbox.
fn written_outside(h: &Harness) -> LabResult<Vec<String>> {
    let store = &h.store;
    let fs = store.fs().as_ref();
    let now = files_outside(fs, &watched_root(fs, h.sandbox()), store.root())?;
    Ok(now
        .iter()
        .filter(|(p, b)| h.outside_before().get(*p) != Some(*b))
        .map(|(p, _)| {
            p.strip_prefix(h.sandbox())
                .unwrap_or(p)
                .display()
                .to_string()
        })
        .collect())
}

/// Index lines present on one side only (the index must equal what the
/// files derive).
fn index_drift(store: &Store, records: &[Record]) -> LabResult<Vec<String>> {
    let derived = super::store::render_index(records);
    let actual = store.read_index()?;
    let d: BTreeSet<&str> = derived.lines().collect();
    let a: BTreeSet<&str> = actual.lines().collect();
    let mut drift: Vec<String> = d.symmetric_difference(&a).map(|l| l.to_string()).collect();
    if drift.is_empty() && derived != actual {
        drift.push("(order or whitespace)".into());
    }
    Ok(drift)
}

/// Files whose memory duplicates one stored before it.
fn duplicates(records: &[Record]) -> Vec<String> {
    let mut earlier: Vec<(String, Memory)> = Vec::new();
    let mut dups = Vec::new();
    for r in records {
        if duplicate_of(&r.memory, &earlier).is_some() {
            dups.push(r.file.clone());
        }
        earlier.push((r.file.clone(), r.memory.clone()));
    }
    dups
}

/// Render counters as aligned `name = value [samples]` lines (for snapshots and reports).
pub fn render(c: &Counters) -> String {
    let width = c.0.iter().map(|k| k.name.len()).max().unwrap_or(0);
    c.0.iter()
        .map(|k| {
            let samples = if k.samples.is_empty() {
                String::new()
            } else {
                format!("  [{}]", k.samples.join(", "))
            };
            format!("{:width$} = {}{samples}\n", k.name, k.value)
        })
        .collect()
}

fn tally(c: &mut Counters, name: &'static str, t: &Tally) {
    c.count(name, t.n, t.samples.iter().cloned());
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::memory::session::{Session, Turn};
    use crate::memory::switches::{MemoryConstants, MemorySwitches};

    #[test]
    fn clean_run_is_clean_and_outside_writes_are_seen() {
        let (fs, dir) = crate::memory::session::sandbox();
        fs.create_dir_all(&dir).unwrap();
        fs.write_new(&dir.join("preexisting.txt"), b"x").unwrap();
        let mut h = Harness::new(
            fs.clone(),
            &dir,
            MemorySwitches::default(),
            MemoryConstants::default(),
        )
        .unwrap();
        let t = Turn {
            user: "I prefer tabs. Remember that.".into(),
            assistant: "Noted.".into(),
            extractor: crate::memory::extract::ExtractorScript::Reply(
                r#"[{"name":"tabs","type":"user","description":"prefers tabs","body":"Use tabs.","scope":"persistent"}]"#.into(),
            ),
            ..Turn::default()
        };
        h.run_sessions(&[Session { turns: vec![t] }]).unwrap();
        let c = check(&h).unwrap();
        for name in [
            "written_outside_store",
            "index_drift",
            "temporary_stored",
            "duplicates_stored",
            "acknowledged_lost",
        ] {
            assert_eq!(c.count_of(name), Some(0), "{name}\n{}", render(&c));
        }
        assert_eq!(c.count_of("store_size"), Some(1));
        fs.write_new(&dir.join("new.txt"), b"y").unwrap();
        let c = check(&h).unwrap();
        assert_eq!(c.count_of("written_outside_store"), Some(1));
        assert_eq!(
            c.get("written_outside_store").unwrap().samples,
            vec!["new.txt"]
        );
        // On the in-memory backend a write counts wherever it lands.
        fs.create_dir_all(Path::new("/elsewhere")).unwrap();
        fs.write_new(Path::new("/elsewhere/x"), b"z").unwrap();
        let c = check(&h).unwrap();
        assert_eq!(c.count_of("written_outside_store"), Some(2));
        assert!(c
            .get("written_outside_store")
            .unwrap()
            .samples
            .contains(&"/elsewhere/x".to_string()));
    }
}
