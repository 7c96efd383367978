//! Reports: rendering of every generated report and Markdown tables.
//!
//! One test binary per area (each file below is a module of it), so the
//! crate is linked once per area rather than once per file.

mod accessibility;
#[path = "../common/mod.rs"]
mod common;
mod frontier_closed;
mod frontier_regret;
mod horizon_report;
mod html_report;
mod markdown_render;
mod plot_layout;
mod reports_render;
mod shared;
