//! `lab schema`: the JSON Schema of every versioned output and protocol.

use crate::error::{LabError, LabResult};
use crate::render;

/// A schema generator.
pub type SchemaFn = fn() -> serde_json::Value;

/// Every JSON output with a schema: its name and generator. The checked-in
/// copies live in `lab/schemas/NAME.schema.json` (`make schemas`).
pub const SCHEMAS: &[(&str, SchemaFn)] = &[
    ("replay-policies", crate::replay::policies::schema),
    (
        "replay-per-session",
        crate::replay::stream::per_session_schema,
    ),
    ("dump", crate::replay::dump::dump_schema),
    ("horizon", crate::horizon::schema),
    ("calibration", crate::replay::calibrate::schema),
    ("export", crate::replay::dump::export_schema),
    ("demands", crate::import::demands::schema),
    (
        "memtool-request",
        crate::memory::tool::external::request_schema,
    ),
    (
        "memtool-answer",
        crate::memory::tool::external::answer_schema,
    ),
    (
        "policy-request",
        crate::policy::exec::protocol::request_schema,
    ),
    ("policy-hello", crate::policy::exec::protocol::hello_schema),
    (
        "policy-answer",
        crate::policy::exec::protocol::answer_schema,
    ),
];

/// `lab schema [NAME]`: the schema, pretty-printed, or the list of names.
pub fn schema(name: Option<&str>) -> LabResult<String> {
    let names = || {
        SCHEMAS
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Some(name) = name else {
        return Ok(names() + "\n");
    };
    match SCHEMAS.iter().find(|(n, _)| *n == name) {
        Some((_, make)) => Ok(render::json(&make())),
        None => Err(LabError::usage(
            format!("no schema named {name:?}"),
            format!("use one of: {}", names()),
        )),
    }
}
