//! ctxlab: a reproducible experiment lab and fault-injection harness for how an
//! LLM agent harness manages memory.
//!
//! Two mechanisms, one module tree each: [`compact`] (context compaction: what
//! may be lost) and [`memory`] (persistent memory: what must not be lost). Both
//! report through [`counters::Counters`] and register their experiments in
//! [`registry`].

pub mod alloc;
pub mod cache;
pub mod cli;
pub mod compact;
pub mod counters;
pub mod error;
pub mod experiments;
pub mod import;
pub mod input;
pub mod interlock;
pub mod memory;
pub mod message;
pub mod plot;
pub mod policy;
pub mod progress;
pub mod pyjson;
pub mod registry;
pub mod render;
pub mod replay;
pub mod report;
pub mod reports;
pub mod retention;
pub mod scan;
pub mod scenario;
pub mod storage;
pub mod sweep;
pub mod tokens;
