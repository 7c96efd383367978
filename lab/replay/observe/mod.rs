//! What watches or sums up the runs: dumps and OTLP traces written as a
//! replay goes, thrash, cache breaks, wrapper summaries and the per-policy
//! aggregate of a corpus.

pub mod aggregate;
pub mod breaks;
pub mod dump;
pub mod otel;
pub mod thrash;
pub mod variants;
