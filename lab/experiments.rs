//! The list of every experiment row: the rows of each mechanism's table, in
//! a stable order, and lookup by id.

use crate::error::{LabError, LabResult};
use crate::registry::Experiment;

/// Experiment ids of the prototype that belong to other harness layers.
pub const OTHER_LAYERS: &[(&str, &str)] = &[
    ("D1", "loop termination trusts stop_reason: execution layer (s01 agent loop), not memory management"),
    ("D4", "permission gate order: execution layer (s03 permissions), not memory management"),
    ("D5", "barrier vs pipeline parallelism: timing layer (s16 workflow runtime), not memory management"),
];

/// The row tables, one per mechanism, in the order `lab list` shows them.
/// A new table of rows is one more line here.
const TABLES: &[&[Experiment]] = &[
    crate::compact::experiments::EXPERIMENTS,
    crate::memory::experiments::EXPERIMENTS,
    crate::interlock::experiments::EXPERIMENTS,
    crate::interlock::loading::EXPERIMENTS,
    crate::interlock::threads::EXPERIMENTS,
    crate::zoo::experiments::agents::EXPERIMENTS,
    crate::zoo::experiments::summaries::EXPERIMENTS,
];

/// Every experiment, table by table, in a stable order.
pub fn all() -> Vec<&'static Experiment> {
    TABLES.iter().flat_map(|t| t.iter()).collect()
}

/// Find an experiment by id (case-insensitive), with a helpful error.
pub fn find(id: &str) -> LabResult<&'static Experiment> {
    if let Some(e) = all().into_iter().find(|e| e.id.eq_ignore_ascii_case(id)) {
        return Ok(e);
    }
    if let Some((other, why)) = OTHER_LAYERS
        .iter()
        .find(|(o, _)| o.eq_ignore_ascii_case(id))
    {
        return Err(LabError::usage(
            format!("{other} is not a memory-management experiment: {why}"),
            "ctxlab models context compaction and persistent memory only; run `lab list` for its experiments",
        ));
    }
    Err(LabError::usage(
        format!("unknown experiment {id:?}"),
        format!(
            "use one of: {} (see `lab list`)",
            all().iter().map(|e| e.id).collect::<Vec<_>>().join(", ")
        ),
    ))
}
