//! Importers: every format, damage, corpora, lazy reading, the shared real sessions.
//!
//! One test binary per area (each file below is a module of it), so the
//! crate is linked once per area rather than once per file.

#[path = "../common/mod.rs"]
mod common;

mod demand_labels;
mod import_aider;
mod import_atif;
mod import_cline;
mod import_codex;
mod import_corpus;
mod import_damage;
mod import_done_when;
mod import_gemini;
mod import_gemini_contents;
mod import_goose;
mod import_goose_db;
mod import_lazy;
mod import_mini_swe;
mod import_opencode;
mod import_opencode_db;
mod import_opencode_storage;
mod import_openhands;
mod import_openhands_events;
mod import_parquet;
mod import_pi;
mod import_props;
mod import_real;
mod import_roo_code;
mod import_shapes;
mod input_fuzz;
