//! The interlocked session: compaction and memory together, loading, threads.
//!
//! One test binary per area (each file below is a module of it), so the
//! crate is linked once per area rather than once per file.

#[path = "../common/mod.rs"]
mod common;

mod interlock;
mod interlock_loading;
mod interlock_threads;
