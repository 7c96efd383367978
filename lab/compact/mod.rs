//! Context compaction (placeholder, replaced by the real pipeline).
pub mod experiments;
