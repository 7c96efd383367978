//! What each `lab` subcommand does beyond the modules it drives: one
//! module per command (or family of small ones). `cli` holds the argument
//! types and the dispatch, and calls these.

pub mod hunt;
pub mod memcheck;
pub mod readme;
pub mod rows;
pub mod scenarios;
pub mod schema;
