//! Memory experiments.
use crate::registry::Experiment;
/// Memory rows of the registry.
pub static EXPERIMENTS: &[Experiment] = &[];
