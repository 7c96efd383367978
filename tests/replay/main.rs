//! `lab replay`: profiles on real and generated sessions, rendering, scale, retention.
//!
//! One test binary per area (each file below is a module of it), so the
//! crate is linked once per area rather than once per file.

mod anchor_none;
mod break_causes;
mod calibration;
mod check;
mod check_gate;
mod closed_loop;
#[path = "../common/mod.rs"]
mod common;
mod dump;
mod estimator_replay;
mod input_path;
mod launchers;
mod layout;
mod optimal_cli;
mod optimal_regret;
mod otel;
mod output_placeholders;
mod product_compactions;
mod product_counts;
mod read_once;
mod replay_corpus;
mod replay_jobs;
mod replay_merge;
mod replay_real;
mod replay_render;
mod replay_scale;
mod replay_shard;
mod resumes;
mod retention;
mod retention_classes;
mod retention_session;
mod summary_sizes;
mod unlogged_mechanisms;
mod wire_envelopes;
