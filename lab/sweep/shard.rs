//! Sharding and merging: `--shard i/n` runs the cells whose index is `i` mod
//! `n`; each shard carries a checksum of its spec, shard and cells, so
//! `--merge` refuses a tampered or mismatched file.

use std::collections::BTreeMap;
use std::path::Path;

use super::{CellResult, SweepResult, SweepSpec};
use crate::error::{LabError, LabResult};
pub use crate::shard::Shard;

/// SHA-256 (lower-case hex) of a result's spec, shard and cells as compact JSON.
pub fn checksum(spec: &SweepSpec, shard: Option<Shard>, cells: &[CellResult]) -> String {
    let bytes = serde_json::to_vec(&(spec, shard, cells)).expect("results serialise");
    crate::shard::sha256_hex(&bytes)
}

/// A shard must carry the checksum of exactly its content.
pub fn verify(part: &SweepResult) -> LabResult<()> {
    let Some(shard) = part.shard else {
        // A complete result has no checksum to check; its cells are checked against the spec.
        return Ok(());
    };
    let want = checksum(&part.spec, Some(shard), &part.cells);
    match &part.checksum {
        Some(have) if *have == want => Ok(()),
        Some(_) => Err(LabError::usage(
            format!(
                "shard {}/{}: the checksum does not match its content (the file was edited or damaged)",
                shard.index, shard.count
            ),
            "re-run that shard with `lab sweep ... --shard i/n --format json`; never edit shard files",
        )),
        None => Err(LabError::usage(
            format!("shard {}/{} carries no checksum", shard.index, shard.count),
            "merge files written by `lab sweep ... --shard i/n --format json` of this version",
        )),
    }
}

/// Merge shard outputs into one complete result. Every input must come from
/// the same spec and together they must cover every cell; a cell present in
/// two inputs (overlapping shards) must be identical in both.
pub fn merge(parts: Vec<SweepResult>) -> LabResult<SweepResult> {
    let mut parts = parts.into_iter();
    let first = parts.next().ok_or_else(|| {
        LabError::usage(
            "--merge needs at least one file",
            "pass shard outputs, e.g. --merge a.json b.json",
        )
    })?;
    let spec = first.spec.clone();
    // Merging runs no cell: the cap applied to each shard when it ran.
    spec.validate_shape()?;
    let mut cells: BTreeMap<usize, CellResult> = BTreeMap::new();
    for part in std::iter::once(first).chain(parts) {
        verify(&part)?;
        if part.spec != spec {
            return Err(LabError::usage(
                "shards come from different sweeps (profile, vary, path lengths or seeds differ)",
                "merge only the outputs of one `lab sweep ... --shard i/n` command line",
            ));
        }
        for c in part.cells {
            if c.index >= spec.total_cells() || !cell_matches(&spec, &c) {
                return Err(LabError::usage(
                    format!("cell {} does not belong to this sweep's spec", c.index),
                    "merge unedited outputs of `lab sweep --shard i/n --format json`",
                ));
            }
            if let Some(prev) = cells.get(&c.index) {
                if *prev != c {
                    return Err(LabError::usage(
                        format!("cell {} differs between shards", c.index),
                        "re-run the shards with the same build",
                    ));
                }
            }
            cells.insert(c.index, c);
        }
    }
    let total = spec.total_cells();
    if cells.len() != total {
        let missing: Vec<String> = (0..total)
            .filter(|i| !cells.contains_key(i))
            .take(5)
            .map(|i| i.to_string())
            .collect();
        return Err(LabError::usage(
            format!(
                "shards cover {} of {total} cells (missing e.g. {})",
                cells.len(),
                missing.join(", ")
            ),
            "pass every shard 0/n .. n-1/n of the sweep",
        ));
    }
    Ok(SweepResult::sealed(
        spec,
        None,
        cells.into_values().collect(),
    ))
}

/// Whether a cell's switch values, seed and path length are those its index stands for.
fn cell_matches(spec: &SweepSpec, c: &CellResult) -> bool {
    let (combo, seed, len) = spec.cell(c.index);
    c.seed == seed && c.path_len == len && c.values == spec.values(combo)
}

pub(crate) fn read_shard(path: &Path) -> LabResult<SweepResult> {
    let text = crate::input::read_text(path, "a shard")?;
    let part: SweepResult = serde_json::from_str(&text).map_err(|e| LabError::Input {
        file: path.to_path_buf(),
        line: e.line(),
        column: crate::input::char_column(&text, e.line(), e.column()),
        message: format!("not a sweep result: {e}"),
        fix: "pass files written by `lab sweep --shard i/n --format json`".into(),
    })?;
    verify(&part).map_err(|e| {
        let (message, fix) = match e {
            LabError::Usage { message, fix } => (message, fix),
            other => (other.to_string(), String::new()),
        };
        // Point at the checksum (or the start, when there is none).
        let at = text.find("\"checksum\"").unwrap_or(0);
        let line = text[..at].matches('\n').count() + 1;
        let column = text[..at]
            .rsplit('\n')
            .next()
            .map_or(0, |l| l.chars().count())
            + 1;
        LabError::Input {
            file: path.to_path_buf(),
            line,
            column,
            message,
            fix,
        }
    })?;
    Ok(part)
}
