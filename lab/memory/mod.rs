//! Persistent memory (seed sections 6-7).
pub mod experiments;
