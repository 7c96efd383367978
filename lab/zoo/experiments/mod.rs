//! Policy rows of the experiment registry: faults from public bug reports,
//! planted as switches on production policies, each caught by a named counter
//! of the policy checker or the provider validity oracle, the intact policy
//! clean.
//!
//! [`agents`] holds the faults of agent harnesses' history handling (Codex
//! CLI orphans and resume duplicates, opencode's retention, a compaction error
//! committed as the summary); [`summaries`] the summariser faults (SWE-agent's
//! study summariser, LangChain's bounded search).

pub mod agents;
pub mod summaries;
