//! Generic rendering on the ground floor: the output format, fixed-layout
//! tables with escaped cells, counts and JSON. Everything that prints a
//! table goes through [`table`], so a hostile name (a `|`, a control
//! byte) can neither split a Markdown row nor reach the terminal raw.

use comfy_table::{presets, Cell as TCell, ContentArrangement, Table};
use serde::Serialize;

/// Output format of every command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// A terminal table.
    Table,
    /// GitHub-flavoured Markdown.
    Markdown,
    /// Pretty JSON.
    Json,
}

/// A terminal or Markdown table with a fixed layout (never the terminal's width).
pub fn table<S: AsRef<str>>(header: &[S], rows: Vec<Vec<String>>, markdown: bool) -> String {
    let mut t = Table::new();
    // Fixed layout: a table must not depend on the terminal it is printed to.
    t.set_content_arrangement(ContentArrangement::Disabled);
    t.load_preset(if markdown {
        presets::ASCII_MARKDOWN
    } else {
        presets::UTF8_FULL_CONDENSED
    });
    t.set_header(header.iter().map(|h| TCell::new(h.as_ref())));
    for r in rows {
        t.add_row(r.iter().map(|c| cell_text(c, markdown)));
    }
    t.to_string()
}

/// A table cell as printable text: control characters (NUL, escape
/// sequences, line breaks) shown as `\u{..}` escapes so they can neither
/// corrupt a terminal nor split a row; in Markdown a `|` is escaped so it
/// does not end the cell.
pub fn cell_text(s: &str, markdown: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '|' if markdown => out.push_str("\\|"),
            c if c.is_control() => out.push_str(&c.escape_unicode().to_string()),
            c => out.push(c),
        }
    }
    out
}

/// `n` and a noun, plural unless `n` is 1: "1 round", "4 rounds".
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// JSON with a trailing newline.
pub fn json<T: Serialize>(value: &T) -> String {
    let mut s = serde_json::to_string_pretty(value).expect("results serialise");
    s.push('\n');
    s
}

/// The JSON Schema (draft 2020-12) of `T` as serialised: every JSON output
/// and protocol is described by one (`lab schema`).
pub fn schema_of<T: schemars::JsonSchema>() -> serde_json::Value {
    schema_with::<T>(schemars::generate::SchemaSettings::draft2020_12().for_serialize())
}

/// The JSON Schema of what ctxlab reads as `T` (a protocol answer): a field
/// with a default may be left out.
pub fn input_schema_of<T: schemars::JsonSchema>() -> serde_json::Value {
    schema_with::<T>(schemars::generate::SchemaSettings::draft2020_12().for_deserialize())
}

fn schema_with<T: schemars::JsonSchema>(
    settings: schemars::generate::SchemaSettings,
) -> serde_json::Value {
    settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}
