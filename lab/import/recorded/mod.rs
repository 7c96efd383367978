//! The recorded wing: what is read from a product's own log beyond its
//! messages, in one place. A Claude Code log read whole (`log_records`)
//! and the content the log leaves out but its recorded usage counts
//! (`unlogged`). The recorded usage itself is `tokens::recorded`, which
//! stays beside the counters: it counts with the Claude estimator and the
//! estimator's fit reads it, so under this wing it would close a circle
//! between `import` and `tokens`. The rest of what a replay reads of a log
//! (the envelope, subagents as sent, the product's compactions and counts)
//! needs the policy engine's types and the zoo's ports, crates above this
//! one, and stays in `lab/replay/input/`.

pub mod log_records;
pub mod unlogged;
