//! What a session brings to a replay besides its messages: the `--anchor`
//! choice, the envelope (system, tools, the request's fixed prefix), what
//! the log leaves out, its subagents, the summary's predicted size, the product's own compactions and
//! per-call counts, and the wire shapes a dump is written in.

pub mod anchor;
pub mod envelope;
pub mod envelope_table;
pub mod product;
pub mod product_counts;
pub mod subagents;
pub mod summary_sizes;
pub mod unlogged;
pub mod wire;
