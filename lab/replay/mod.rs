//! `lab replay`: a recorded session replayed call by call.
//!
//! [`run`] takes the command's arguments ([`ReplayArgs`]) and picks the
//! driver. One engine drives every policy: [`policies`] runs each named policy
//! (course profiles included, as [`crate::policy::course::CoursePolicy`])
//! through [`crate::policy::engine`], with retention and cost as observers,
//! and [`cost_arms`] prices the replayed arms beside the session's recorded
//! usage. [`profiles`] streams a session through the same engine with a
//! course profile and judges it with the course's own checker, the oracle
//! the engine's policy-agnostic checker is tested against (the conformance
//! test in `tests/policy/policy_engine.rs` holds the two to the same verdicts on
//! every shared session). [`dollars`] renders priced runs.
//!
//! The folder is four rooms behind this face, each importing only from
//! the rooms before it: [`input`] (what a session brings besides its
//! messages: envelope, anchor, unlogged content, subagents, the product's
//! own compactions), [`observe`] (dumps, traces, thrash, aggregates),
//! [`runs`] (the drivers) and [`render`] (tables, plots, the HTML
//! report); the command line and the command's outline sit above them
//! (`command`). This file only declares the rooms and re-exports their
//! modules under the paths the rest of the crate names.

mod command;
pub mod input;
pub mod observe;
pub mod render;
pub mod runs;

pub use command::args::{run, ReplayArgs};
pub use command::drive::{merge_command, replay_command, Outputs};
pub use input::{
    anchor, envelope, envelope_table, product, product_counts, subagents, summary_sizes, unlogged,
    wire,
};
pub use observe::{aggregate, breaks, dump, otel, thrash, variants};
pub use render::dollars::{write_plot, write_plot_titled};
pub use render::{distribution, dollars, family, frontier_plot, headline, html};
pub use runs::{calibrate, cost_arms, merge, optimal, policies, profiles, shard, stream};

pub use crate::render::schema_of;
