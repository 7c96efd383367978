//! Production designs, one module each, each citing its upstream source.
//!
//! Every module exposes a constructor returning a boxed [`Policy`](super::Policy)
//! with the upstream defaults; [`super::list`] collects them.

pub mod anthropic_clear_tool_uses;
pub mod anthropic_compact;
pub mod claude_code;
pub mod codex_cli;
pub mod gemini_cli;
pub mod opencode;
