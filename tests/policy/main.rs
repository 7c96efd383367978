//! The policy engine and the zoo: conformance with the course replay, every port, the policy search.
//!
//! One test binary per area (each file below is a module of it), so the
//! crate is linked once per area rather than once per file.

#[path = "../common/mod.rs"]
mod common;

mod exec_live;
mod exec_protocol;
mod frozen;
mod gated;
mod policy_engine;
mod policy_inspect;
mod policy_pi;
mod policy_search;
mod policy_swe_mask_corpus;
mod policy_zoo_a;
mod policy_zoo_b;
mod variants;
mod variants_summary;
