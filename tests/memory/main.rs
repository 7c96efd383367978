//! Persistent memory: the store, its guards, recall, extraction, consolidation, scenarios and goldens.
//!
//! One test binary per area (each file below is a module of it), so the
//! crate is linked once per area rather than once per file.

#[path = "../common/mod.rs"]
mod common;

mod memory_consolidate;
mod memory_defects;
mod memory_experiments;
mod memory_frontmatter_props;
mod memory_golden;
mod memory_hostile;
mod memory_profiles;
mod memory_props;
mod memory_scenarios;
mod memory_session;
mod memory_snapshots;
mod memory_store;
mod memory_tool;
mod memory_tool_hygiene;
