//! ctxlab's course references: the two mechanisms the seed document
//! analyses, reproduced byte for byte from shareAI-lab/learn-claude-code
//! and the Python prototype, with switches.
//!
//! - [`compact`]: context compaction (`s08_context_compact`), the four-step
//!   pipeline that runs before every model call, its switches, profiles and
//!   invariant checker: what may be lost.
//! - [`memory`]: persistent memory (`s09_memory`), one module per
//!   mechanism, the store profiles of production memory designs and the
//!   memory-tool checks: what must not be lost.
//! - [`scenario`]: declarative compaction scenario files that are also
//!   regression tests.
//! - [`report`]: pure renderers from verdicts and lists to text.
//!
//! Stands on `ctxlab-core` only.

// The ground floor's modules under the names this crate's code has always
// used (`crate::storage::…`); private, so they are no part of this API.
use ctxlab_core::{
    counters, error, fingerprint, input, message, process, pyjson, registry, render, scan, storage,
};

pub mod compact;
pub mod memory;
pub mod report;
pub mod scenario;
