//! ctxlab's zoo: production context-management designs, one module each,
//! each citing its upstream source, and [`list`], every policy by name.
//!
//! Every module exposes a constructor returning a boxed
//! [`Policy`](ctxlab_policy::Policy) with the upstream defaults; [`list`]
//! collects them with the course's policies, `none`, external processes and
//! the `frozen:`/`gated:` wrappers. [`experiments`] holds the registry rows
//! that run production designs.
//!
//! Stands on `ctxlab-core`, `ctxlab-import`, `ctxlab-course` and
//! `ctxlab-policy`. A change to one port rebuilds this crate and the ones
//! above it only.

// The lower crates' modules under the names this crate's code has always
// used (`crate::policy::…`); private, so they are no part of this API.
use ctxlab_core::{counters, error, message, pyjson, registry, storage};
use ctxlab_course::compact;
use ctxlab_import as import;
use ctxlab_import::tokens;
use ctxlab_policy as policy;

pub mod experiments;
pub mod list;

pub mod aider;
pub mod amp_handoff;
pub mod anthropic_clear_tool_uses;
pub mod anthropic_compact;
pub mod claude_code;
pub mod cline_focus_chain;
pub mod codex_cli;
pub mod codex_truncate;
pub mod gemini_cli;
pub mod gemini_cli_mask;
pub mod goose;
pub mod hermes_lean;
pub mod inspect;
pub mod jev_drop_tools;
pub mod langchain;
pub mod openai_realtime;
pub mod openai_server_compaction;
pub mod opencode;
pub mod openhands;
pub mod pi;
pub mod roo_code;
pub mod swe_agent;
pub mod vercel;

#[cfg(test)]
mod shape_tests;
#[cfg(test)]
mod tests;
