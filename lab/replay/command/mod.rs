//! `lab replay`'s command line.

pub mod args;
