//! Prompt-cache cost: the cache model, prices, the recorded bill, the cost commands.
//!
//! One test binary per area (each file below is a module of it), so the
//! crate is linked once per area rather than once per file.

#[path = "../common/mod.rs"]
mod common;

mod cache_props;
mod compaction_calls;
mod cost_cli;
mod cost_report;
mod gemini_cache;
mod message_times;
mod optimal;
mod prices_cli;
mod recorded_dollars;
mod same_base;
mod subagents;
mod trajectory_bill;
