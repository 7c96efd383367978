//! Production designs, one module each, each citing its upstream source.
//!
//! Every module exposes a constructor returning a boxed [`Policy`](super::Policy)
//! with the upstream defaults; [`super::list`] collects them.

pub mod aider;
pub mod goose;
pub mod langchain;
pub mod openhands;
pub mod swe_agent;
pub mod vercel;
