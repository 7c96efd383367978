//! Production designs, one module each, each citing its upstream source.
//!
//! Every module exposes a constructor returning a boxed [`Policy`](super::Policy)
//! with the upstream defaults; [`super::list`] collects them.

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
mod tests;
