//! Consolidation: the one destructive rewrite of the store, with its safety net.
//!
//! Course order: validate the model's result before touching disk (empty or
//! duplicate slugs fail with nothing written); snapshot every file; delete
//! all; rewrite the new list; rebuild the index. Any failure after the
//! snapshot takes the rollback path: delete all, restore the snapshot,
//! rebuild, re-raise; the outer layer logs one "skipped" line.
//!
//! The reverse gate (seed section 7, a finding): when the catalog exceeds the
//! input cap the pass is skipped *before* the model call, with one quiet log
//! line. Since consolidation is the only deletion path, a store past the cap
//! grows without bound. [`chunked_consolidation`](super::switches::MemorySwitches::chunked_consolidation) and
//! [`warn_on_skip`](super::switches::MemorySwitches::warn_on_skip) are the two fixes the lab compares.

use serde::{Deserialize, Serialize};

use super::extract::validate;
use super::journal;
use super::recall::extract_json_array;
use super::store::{slug, Memory, Record, Snapshot, Store};
use super::switches::{MemoryConstants, MemorySwitches};
use crate::error::{LabError, LabResult};

/// Where to inject a failure into a consolidation pass.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FaultPlan {
    /// Fail right after the snapshot is taken.
    pub after_snapshot: bool,
    /// Fail once this many files have been deleted (0 = before the first).
    pub mid_delete_after: Option<usize>,
    /// Fail once this many new files have been written (0 = before the first).
    pub mid_rewrite_after: Option<usize>,
    /// Fail while rebuilding the index (after its temp file is written).
    pub during_rebuild: bool,
}

impl FaultPlan {
    /// Does this plan inject anything?
    pub fn is_empty(&self) -> bool {
        *self == FaultPlan::default()
    }
}

/// What the scripted consolidator model does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ConsolidatorScript {
    /// A deterministic model that keeps the first of each adjacent pair of
    /// records (by file name) and merges the second away as superseded:
    /// halves the store, so repeated passes keep it bounded.
    MergePairs,
    /// A model that returns every record unchanged.
    KeepAll,
    /// The call succeeds with this literal text.
    Reply(String),
    /// The call raises with this message.
    Fail(String),
}

impl Default for ConsolidatorScript {
    /// `MergePairs`: a model that does its job.
    fn default() -> Self {
        ConsolidatorScript::MergePairs
    }
}

/// What a consolidation attempt did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Consolidation {
    /// Fewer records than the threshold: nothing to do.
    NotDue {
        /// Records on disk.
        count: usize,
    },
    /// Skipped before the model call because the input exceeds the cap.
    Skipped {
        /// Catalog characters.
        chars: usize,
        /// Whether it was reported as a warning (`warn_on_skip`) or silently logged.
        warned: bool,
    },
    /// The pass failed; `rolled_back` says whether the snapshot was restored.
    Failed {
        /// The error.
        error: String,
        /// Whether the rollback path ran.
        rolled_back: bool,
    },
    /// The store was rewritten.
    Done {
        /// Files before.
        before: Vec<String>,
        /// Files after.
        after: Vec<String>,
        /// Model calls made (more than one when chunked).
        model_calls: usize,
    },
}

/// The course's consolidation catalog for a set of records.
pub fn catalog(records: &[Record]) -> String {
    records
        .iter()
        .map(|r| {
            format!(
                "## {}\nname: {}\ntype: {}\ndescription: {}\n\n{}",
                r.file, r.memory.name, r.memory.mem_type, r.memory.description, r.memory.body
            )
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Split records into consecutive chunks whose catalogs each fit `limit`
/// characters; a single record larger than the limit forms its own chunk.
pub fn chunks(records: &[Record], limit: usize) -> Vec<Vec<Record>> {
    let mut out: Vec<Vec<Record>> = Vec::new();
    let mut cur: Vec<Record> = Vec::new();
    for r in records {
        cur.push(r.clone());
        if cur.len() > 1 && catalog(&cur).chars().count() > limit {
            let last = cur.pop();
            out.push(std::mem::take(&mut cur));
            cur.extend(last);
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn fault(step: &str) -> LabError {
    LabError::io(
        format!("injected fault {step}"),
        "<fault plan>",
        std::io::Error::other(format!("injected fault {step}")),
    )
}

/// Run the scripted model on one chunk; returns the raw candidate list.
fn call_model(script: &ConsolidatorScript, records: &[Record]) -> LabResult<Vec<Memory>> {
    let items: Vec<serde_json::Value> = match script {
        ConsolidatorScript::Fail(e) => {
            return Err(LabError::io(
                "consolidation model call",
                "<model>",
                std::io::Error::other(e.clone()),
            ))
        }
        ConsolidatorScript::Reply(text) => extract_json_array(text).unwrap_or_default(),
        ConsolidatorScript::KeepAll => records.iter().map(|r| memory_json(&r.memory)).collect(),
        ConsolidatorScript::MergePairs => records
            .iter()
            .step_by(2)
            .map(|r| memory_json(&r.memory))
            .collect(),
    };
    // Like the course, invalid items are dropped, not fatal.
    Ok(items
        .iter()
        .filter_map(|v| validate(v, false).ok())
        .map(|(m, _)| m)
        .collect())
}

fn memory_json(m: &Memory) -> serde_json::Value {
    serde_json::json!({"name": m.name, "type": m.mem_type, "description": m.description, "body": m.body})
}

fn refuse_result(message: String) -> LabError {
    LabError::Refused {
        message,
        fix: "the consolidator must return a non-empty list with distinct names".into(),
    }
}

/// Attempt one consolidation of `store`. Never leaves a half-written store
/// when `rollback` is on; failures come back as [`Consolidation::Failed`].
pub fn consolidate(
    store: &Store,
    script: &ConsolidatorScript,
    plan: &FaultPlan,
    constants: &MemoryConstants,
) -> LabResult<Consolidation> {
    if store.switches().crash_journal {
        // A pass of this process whose rollback failed left its journal: undo
        // it before a new journal could overwrite the only copy.
        store.recover_journal()?;
    }
    let records = store.records()?;
    if records.len() < constants.consolidate_threshold {
        return Ok(Consolidation::NotDue {
            count: records.len(),
        });
    }
    let sw = *store.switches();
    let limit = constants.consolidate_input_char_limit;
    let chars = catalog(&records).chars().count();
    let groups = if sw.chunked_consolidation {
        chunks(&records, limit)
    } else if chars > limit && sw.reverse_gate {
        // The reverse gate: skipped before any model call.
        return Ok(Consolidation::Skipped {
            chars,
            warned: sw.warn_on_skip,
        });
    } else {
        vec![records.clone()]
    };

    let (consolidated, model_calls) = match merge_groups(script, &groups, sw, limit) {
        Ok(done) => done,
        Err(e) => return Ok(failed(e, false)),
    };
    // Validate before touching disk.
    if let Err(e) = check_records(store, &consolidated) {
        return Ok(failed(e, false));
    }
    apply(store, &records, &consolidated, plan, model_calls)
}

/// The consolidator's records for every group, and how many model calls
/// that took (under the reverse gate, an oversized group is kept as is).
fn merge_groups(
    script: &ConsolidatorScript,
    groups: &[Vec<Record>],
    sw: MemorySwitches,
    limit: usize,
) -> Result<(Vec<Memory>, usize), LabError> {
    let mut consolidated = Vec::new();
    let mut model_calls = 0;
    for g in groups {
        if sw.reverse_gate && catalog(g).chars().count() > limit {
            consolidated.extend(g.iter().map(|r| r.memory.clone())); // one oversized record: kept as is
            continue;
        }
        model_calls += 1;
        consolidated.extend(call_model(script, g)?);
    }
    Ok((consolidated, model_calls))
}

/// A non-empty list with distinct names, each with a valid file name.
fn check_records(store: &Store, consolidated: &[Memory]) -> Result<(), LabError> {
    let slugs: Vec<String> = consolidated.iter().map(|m| slug(&m.name)).collect();
    let mut uniq = slugs.clone();
    uniq.sort();
    uniq.dedup();
    if consolidated.is_empty() || uniq.len() != slugs.len() {
        return Err(refuse_result(
            "consolidation returned empty or duplicate records".into(),
        ));
    }
    for m in consolidated {
        store.file_for(&m.name)?;
    }
    Ok(())
}

/// Replace `records` by `consolidated` on disk: journal first (when on),
/// then the rewrite; a failed rewrite is rolled back when `rollback` is on.
fn apply(
    store: &Store,
    records: &[Record],
    consolidated: &[Memory],
    plan: &FaultPlan,
    model_calls: usize,
) -> LabResult<Consolidation> {
    let sw = *store.switches();
    let before: Vec<String> = records.iter().map(|r| r.file.clone()).collect();
    let snapshot = store.snapshot()?;
    if sw.crash_journal {
        // Durable before the first delete; nothing is deleted if it fails.
        if let Err(e) = begin_journal(store, &snapshot, consolidated) {
            return Ok(failed(e, false));
        }
    }
    match rewrite(store, &snapshot, consolidated, plan).and_then(|()| commit(store)) {
        Ok(()) => Ok(Consolidation::Done {
            before,
            after: store.memory_files()?,
            model_calls,
        }),
        Err(e) if sw.rollback => match roll_back(store, &snapshot).and_then(|()| commit(store)) {
            Ok(()) => Ok(failed(e, true)),
            Err(re) => Ok(Consolidation::Failed {
                error: format!("{e}; rollback also failed: {re}"),
                rolled_back: false,
            }),
        },
        Err(e) => Ok(failed(e, false)),
    }
}

fn failed(e: LabError, rolled_back: bool) -> Consolidation {
    Consolidation::Failed {
        // Drop the CLI's "error: " prefix: this text goes into a log line.
        error: e
            .to_string()
            .trim_start_matches("error: ")
            .replace('\n', " "),
        rolled_back,
    }
}

/// Write the journal of a pass: the snapshot and the files it will write.
fn begin_journal(store: &Store, snapshot: &Snapshot, new: &[Memory]) -> LabResult<()> {
    let mut writes = Snapshot::new();
    for m in new {
        let (path, text) = store.planned(m)?;
        // Only files inside the store are the journal's to undo (a guard-off
        // escape is the break's to show, not to repair).
        if path.parent() == Some(store.root()) {
            let file = path.file_name().map(|n| n.to_string_lossy().into_owned());
            writes.insert(file.unwrap_or_default(), text);
        }
    }
    let pending = journal::Pending {
        before: snapshot.clone(),
        writes,
    };
    let path = journal::path(store.root());
    if store.fs().kind(&path) == Some(crate::storage::FileKind::Dir) {
        return Err(LabError::Refused {
            message: format!(
                "{} is a directory where the consolidation journal goes",
                path.display()
            ),
            fix: format!(
                "move {} out of the store (ctxlab keeps its crash journal at that name)",
                path.display()
            ),
        });
    }
    journal::write(store.fs().as_ref(), store.root(), &pending)
        .map_err(|e| LabError::io("writing consolidation journal", &path, e))
}

/// Remove the journal: the pass (or its rollback) is complete.
fn commit(store: &Store) -> LabResult<()> {
    if !store.switches().crash_journal {
        return Ok(());
    }
    journal::remove(store.fs().as_ref(), store.root()).map_err(|e| {
        LabError::io(
            "removing consolidation journal",
            journal::path(store.root()),
            e,
        )
    })
}

/// The normal path after the snapshot: delete all, write new, rebuild.
fn rewrite(store: &Store, snapshot: &Snapshot, new: &[Memory], plan: &FaultPlan) -> LabResult<()> {
    if plan.after_snapshot {
        return Err(fault("after snapshot"));
    }
    for (deleted, file) in snapshot.keys().enumerate() {
        if plan.mid_delete_after == Some(deleted) {
            return Err(fault(&format!("after deleting {deleted} file(s)")));
        }
        store.remove_file(file)?;
    }
    if plan.mid_delete_after == Some(snapshot.len()) {
        return Err(fault(&format!(
            "after deleting all {} file(s)",
            snapshot.len()
        )));
    }
    for (written, m) in new.iter().enumerate() {
        if plan.mid_rewrite_after == Some(written) {
            return Err(fault(&format!("after rewriting {written} file(s)")));
        }
        store.write_file(m)?;
    }
    if plan.mid_rewrite_after == Some(new.len()) {
        return Err(fault(&format!("after rewriting all {} file(s)", new.len())));
    }
    if plan.during_rebuild {
        // Simulate a crash between writing the index temp file and renaming it.
        let tmp = store
            .root()
            .join(crate::storage::temp_name(super::store::INDEX_FILE));
        let fs = store.fs();
        fs.write_new(&tmp, b"partial")
            .map_err(|e| LabError::io("writing temp index", &tmp, e))?;
        let _ = fs.remove_file(&tmp);
        return Err(fault("during index rebuild"));
    }
    store.rebuild_index().map(drop)
}

/// Rollback: delete every memory record, restore the snapshot, rebuild.
fn roll_back(store: &Store, snapshot: &Snapshot) -> LabResult<()> {
    // Readable records only: a quarantined file was never part of the pass.
    for r in store.records()? {
        store.remove_file(&r.file)?;
    }
    store.restore(snapshot)?;
    store.rebuild_index().map(drop)
}

/// The one line the outer layer prints for an attempt, if any.
pub fn log_line(c: &Consolidation, limit: usize) -> Option<String> {
    match c {
        Consolidation::NotDue { .. } => None,
        Consolidation::Skipped { chars, warned: false } => {
            Some(format!("[Memory consolidation skipped: memory store is too large for one consolidation pass ({chars} > {limit} chars)]"))
        }
        Consolidation::Skipped { chars, warned: true } => Some(format!(
            "WARNING: memory consolidation cannot run: store catalog is {chars} chars, over the {limit}-char input cap; the store will keep growing until it is split or pruned"
        )),
        Consolidation::Failed { error, .. } => Some(format!("[Memory consolidation skipped: {error}]")),
        Consolidation::Done { before, after, .. } => {
            Some(format!("[Memory: consolidated {} to {} records]", before.len(), after.len()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::switches::MemorySwitches;

    fn filled(n: usize, body_len: usize, sw: MemorySwitches) -> ((), Store) {
        let fs: crate::storage::Shared = std::sync::Arc::new(crate::storage::MemFs::new());
        let store = Store::open(fs, std::path::Path::new("/w/m"), sw).unwrap();
        let dir = ();
        for i in 0..n {
            store
                .save(&Memory {
                    name: format!("fact {i:02}"),
                    mem_type: "project".into(),
                    description: format!("fact number {i}"),
                    body: "x".repeat(body_len),
                })
                .unwrap();
        }
        (dir, store)
    }

    #[test]
    fn not_due_below_threshold_and_merges_at_threshold() {
        let c = MemoryConstants::default();
        let (_d, s) = filled(9, 10, MemorySwitches::default());
        assert_eq!(
            consolidate(
                &s,
                &ConsolidatorScript::MergePairs,
                &FaultPlan::default(),
                &c
            )
            .unwrap(),
            Consolidation::NotDue { count: 9 }
        );
        s.save(&Memory {
            name: "fact 09".into(),
            mem_type: "user".into(),
            description: "d".into(),
            body: "b".into(),
        })
        .unwrap();
        let r = consolidate(
            &s,
            &ConsolidatorScript::MergePairs,
            &FaultPlan::default(),
            &c,
        )
        .unwrap();
        assert!(
            matches!(r, Consolidation::Done { ref after, .. } if after.len() == 5),
            "{r:?}"
        );
        assert_eq!(s.read_index().unwrap(), s.derived_index().unwrap());
    }

    #[test]
    fn invalid_results_write_nothing() {
        let c = MemoryConstants::default();
        let (_d, s) = filled(10, 10, MemorySwitches::default());
        let before = s.snapshot().unwrap();
        let dup = r#"[{"name":"a","type":"user","description":"d","body":"b"},{"name":"A","type":"user","description":"e","body":"c"}]"#;
        for script in [
            ConsolidatorScript::Reply("[]".into()),
            ConsolidatorScript::Reply(dup.into()),
            ConsolidatorScript::Fail("boom".into()),
        ] {
            let r = consolidate(&s, &script, &FaultPlan::default(), &c).unwrap();
            assert!(
                matches!(
                    r,
                    Consolidation::Failed {
                        rolled_back: false,
                        ..
                    }
                ),
                "{r:?}"
            );
            assert_eq!(s.snapshot().unwrap(), before);
        }
    }

    #[test]
    fn reverse_gate_skips_oversized_store_and_chunking_fixes_it() {
        let c = MemoryConstants::default();
        let (_d, s) = filled(10, 2500, MemorySwitches::default());
        let r = consolidate(
            &s,
            &ConsolidatorScript::MergePairs,
            &FaultPlan::default(),
            &c,
        )
        .unwrap();
        assert!(
            matches!(r, Consolidation::Skipped { warned: false, .. }),
            "{r:?}"
        );
        let sw = MemorySwitches {
            chunked_consolidation: true,
            ..MemorySwitches::default()
        };
        let (_d2, s2) = filled(10, 2500, sw);
        let r = consolidate(
            &s2,
            &ConsolidatorScript::MergePairs,
            &FaultPlan::default(),
            &c,
        )
        .unwrap();
        assert!(
            matches!(r, Consolidation::Done { model_calls: 2, .. }),
            "{r:?}"
        );
    }

    #[test]
    fn reverse_gate_fires_before_the_model_call() {
        // A model that would fail is never called: the pass is Skipped, not Failed.
        let c = MemoryConstants::default();
        let (_d, s) = filled(10, 2500, MemorySwitches::default());
        let r = consolidate(
            &s,
            &ConsolidatorScript::Fail("called".into()),
            &FaultPlan::default(),
            &c,
        )
        .unwrap();
        assert!(matches!(r, Consolidation::Skipped { .. }), "{r:?}");
        assert!(log_line(&r, 20000)
            .unwrap()
            .starts_with("[Memory consolidation skipped:"));
    }

    #[test]
    fn rollback_restores_snapshot_bytes() {
        let c = MemoryConstants::default();
        let (_d, s) = filled(10, 10, MemorySwitches::default());
        let before = s.snapshot().unwrap();
        let plan = FaultPlan {
            mid_delete_after: Some(4),
            ..FaultPlan::default()
        };
        let r = consolidate(&s, &ConsolidatorScript::MergePairs, &plan, &c).unwrap();
        assert!(
            matches!(
                r,
                Consolidation::Failed {
                    rolled_back: true,
                    ..
                }
            ),
            "{r:?}"
        );
        assert_eq!(s.snapshot().unwrap(), before);
        assert_eq!(s.read_index().unwrap(), s.derived_index().unwrap());
    }
}
