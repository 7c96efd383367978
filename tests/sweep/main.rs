//! Sweeps: the command, cells, shards, input properties.
//!
//! One test binary per area (each file below is a module of it), so the
//! crate is linked once per area rather than once per file.

#[path = "../common/mod.rs"]
mod common;

mod input_props;
mod sweep_cli;
mod sweep_unit;
mod sweep_variants;
