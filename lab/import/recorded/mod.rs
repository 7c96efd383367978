//! The recorded wing: what is read from a product's own log beyond its
//! messages. Here: a Claude Code log read whole (`log_records`), by the
//! importer's own readers and damage rules.
//!
//! The rest stays where the crates' layering allows it. The recorded usage
//! is `tokens::recorded`: it counts with the Claude estimator and the
//! estimator's fit reads it, so under this module it would close a circle
//! between `import` and `tokens`; the content a log leaves out
//! (`replay::input::unlogged`) counts with a token counter too, the same
//! circle. What else a replay reads of a log (the envelope, subagents as
//! sent, the product's compactions and counts) needs the policy engine's
//! types and the zoo's ports, crates above this one.

pub mod log_facts;
pub mod log_records;
