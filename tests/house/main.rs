//! The house: the command line, its inputs, the README examples, the import graph, comments, JSON schemas.
//!
//! One test binary per area (each file below is a module of it), so the
//! crate is linked once per area rather than once per file.

#[path = "../common/mod.rs"]
mod common;

mod cli;
mod cli_inputs;
mod comments_cite_no_issues;
mod commit_subjects;
mod crates;
mod docs;
mod import_graph;
mod progress;
mod readme_examples;
mod schemas;
