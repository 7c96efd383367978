//! The drivers: policies through the engine (`--policy`), course profiles
//! (`--profile`), the priced arms (`--cost`), the optimal schedule, the
//! calibration, and a corpus streamed session by session or in shards, and the shards merged.

pub mod calibrate;
pub mod cost_arms;
pub mod merge;
pub mod optimal;
pub mod policies;
pub mod profiles;
pub mod shard;
pub mod stream;
