//! ctxlab's measures: observers of a policy replay. None of them changes
//! what a policy does; each reads the requests the engine hands it.
//!
//! - [`cache`]: prompt-cache accounting: what each request reads from and
//!   writes to a provider's cache, and what that costs.
//! - [`retention`]: what the model can still reach after compaction,
//!   measured without a judge.
//! - [`optimal`]: the cheapest compaction schedule of a session, a lower
//!   bound every policy's dollars are compared with (regret).
//!
//! Stands on `ctxlab-core`, `ctxlab-import` and
//! `ctxlab-policy`, never on a port: a change to the zoo rebuilds none of it.

// The lower crates' modules under the names this crate's code has always
// used (`crate::policy::…`); private, so they are no part of this API.
use ctxlab_core::{error, fingerprint, input, message, render, storage};
use ctxlab_import::{demands, tokens};
use ctxlab_policy as policy;

pub mod cache;
pub mod optimal;
pub mod retention;
