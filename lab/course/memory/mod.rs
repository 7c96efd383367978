//! Persistent memory (seed sections 6-7): what must not be lost.
//!
//! One module per mechanism of the course's `s09_memory`:
//! [`store`] (files + derived index + path guard), [`recall`] (selection and
//! system-prompt assembly), [`extract`] (gated writes at the end of a turn),
//! [`consolidate`] (destructive rewrite with snapshot and rollback),
//! [`journal`] (that snapshot made durable, recovered on the next open),
//! [`crash`] (kill and full-disk windows of one pass),
//! [`prompts`] (what a real side model would be sent), and
//! [`checker`] which turns the resulting disk state into [`crate::counters::Counters`].
//! [`session`] drives scripted turns through all of them; [`scenario`] reads
//! such sessions from JSON files; [`experiments`] registers the break rows.
//! [`profiles`] puts other memory designs (add-only, git-backed, versioned,
//! two-stage) on the same fault machinery.

pub mod checker;
pub mod consolidate;
pub mod crash;
pub mod experiments;
pub mod extract;
pub mod frontmatter;
pub mod journal;
pub mod profiles;
pub mod prompts;
pub mod recall;
pub mod sandbox;
pub mod scenario;
pub mod session;
pub mod store;
pub mod switches;
pub mod tool;
pub mod transcript;
