//! Compaction experiments.
use crate::registry::Experiment;
/// Compaction rows of the registry.
pub static EXPERIMENTS: &[Experiment] = &[];
