//! `lab replay`'s command line, and the command as a whole.

pub mod args;
pub mod drive;
