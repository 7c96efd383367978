//! What a session brings to a replay besides its messages: the `--anchor`
//! choice, the envelope (system, tools, the request's fixed prefix), its
//! subagents, the product's own compactions and per-call counts, and the
//! wire shapes a dump is written in. What the log leaves out is read in
//! the import crate's recorded wing (`import::recorded::unlogged`; its
//! tests, which replay through the engine, are here).

pub mod anchor;
pub mod envelope;
pub mod envelope_table;
pub mod product;
pub mod product_counts;
pub mod subagents;
#[cfg(test)]
mod unlogged_tests;
pub mod wire;
