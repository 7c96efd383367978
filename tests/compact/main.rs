//! The course pipeline: its steps, experiments, properties, storage backends, scenarios and byte-for-byte goldens.
//!
//! One test binary per area (each file below is a module of it), so the
//! crate is linked once per area rather than once per file.

#[path = "../common/mod.rs"]
mod common;

mod backends;
mod compact_experiments;
mod compact_props;
mod compact_steps;
mod course_exact;
mod golden_course;
mod scenarios;
