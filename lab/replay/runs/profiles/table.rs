//! The renderers of a profile replay, beside the report they render
//! ([`super::ReplayReport`]): the table and its columns, Markdown, JSON and
//! the SVG of context size per call. Pure: a report in, text out.

use super::{ReplayReport, SIZE_ESTIMATES};
use crate::error::{LabError, LabResult};
use crate::import::RealCompaction;

// ---------------------------------------------------------------------------
// Rendering (pure).

/// Every column of the replay table: (key for `--columns`, header).
pub const COLUMNS: &[(&str, &str)] = &[
    ("file", "file"),
    ("profile", "profile"),
    ("scale", "scale"),
    ("limit_chars", "limit chars"),
    ("msgs", "msgs"),
    ("calls", "calls"),
    ("lost_forever", "lost_forever"),
    ("pointer_lost", "pointer_lost"),
    ("pairs_intact", "pairs_intact"),
    ("unseen_compacted", "unseen_compacted"),
    ("double_compacted", "double_compacted"),
    ("persisted", "persisted (files / bytes)"),
    ("summary_calls", "summary_calls"),
    ("first_fired", "first fired @"),
    ("first_summary", "first summary @"),
    ("real_compaction", "real compaction @"),
    ("peak_chars", "peak chars"),
    ("final_chars", "final / raw chars / sent"),
    ("notes", "notes"),
];

/// The terminal table's default columns: what was lost and when compaction
/// fired, narrow enough for a 120-column terminal. `--columns all` (or
/// Markdown / JSON output) gives every field.
pub const DEFAULT_COLUMNS: &[&str] = &[
    "file",
    "profile",
    "lost_forever",
    "pointer_lost",
    "pairs_intact",
    "summary_calls",
    "first_fired",
];

/// Column indices of a `--columns` list (`a,b,c` or `all`), in the order given.
pub fn parse_columns(spec: &str) -> LabResult<Vec<usize>> {
    if spec.trim().eq_ignore_ascii_case("all") {
        return Ok((0..COLUMNS.len()).collect());
    }
    spec.split(',')
        .map(|k| {
            let k = k.trim();
            COLUMNS
                .iter()
                .position(|(key, _)| key.eq_ignore_ascii_case(k))
                .ok_or_else(|| {
                    LabError::usage(
                        format!("unknown replay column {k:?}"),
                        format!(
                            "use `all` or a comma-separated list of: {}",
                            COLUMNS.iter().map(|c| c.0).collect::<Vec<_>>().join(", ")
                        ),
                    )
                })
        })
        .collect()
}

fn default_columns() -> Vec<usize> {
    DEFAULT_COLUMNS
        .iter()
        .filter_map(|k| COLUMNS.iter().position(|(key, _)| key == k))
        .collect()
}

fn opt(v: Option<usize>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "-".to_string())
}

fn row(r: &ReplayReport) -> Vec<String> {
    vec![
        r.source.clone(),
        r.profile.clone(),
        format!("{}", r.scale),
        r.context_char_limit.to_string(),
        r.messages.to_string(),
        r.model_calls.to_string(),
        r.lost_forever.to_string(),
        r.pointer_lost.to_string(),
        r.pairs_intact.to_string(),
        r.unseen_compacted.to_string(),
        r.double_compacted.to_string(),
        format!("{} / {}", r.persisted_files, r.bytes_persisted),
        r.summary_calls.to_string(),
        opt(r.first_fired_at),
        opt(r.first_summary_at),
        if r.real_compaction_meta.is_empty() {
            "-".to_string()
        } else {
            r.real_compaction_meta
                .iter()
                .map(RealCompaction::describe)
                .collect::<Vec<_>>()
                .join(", ")
        },
        r.peak_chars.to_string(),
        format!(
            "{} / {} / {}",
            r.final_chars, r.raw_final_chars, r.sent_final_chars
        ),
        notes(r),
    ]
}

/// What a reader must know to compare the row: where its budget and its
/// conversation came from.
fn notes(r: &ReplayReport) -> String {
    let mut out = Vec::new();
    if r.scaled_to_real {
        out.push("scale = real budget".to_string());
    }
    if r.starts_with_summary {
        out.push("starts with a summary (compacted before the file)".to_string());
    }
    if let Some(k) = r.main_from_sidechain {
        out.push(format!(
            "sidechain {} replayed (no main conversation)",
            k + 1
        ));
    }
    if out.is_empty() {
        "-".to_string()
    } else {
        out.join("; ")
    }
}

fn table(reports: &[ReplayReport], markdown: bool, columns: &[usize]) -> String {
    let header: Vec<&str> = columns.iter().map(|&c| COLUMNS[c].1).collect();
    let rows = reports
        .iter()
        .map(|r| {
            let cells = row(r);
            columns.iter().map(|&c| cells[c].clone()).collect()
        })
        .collect();
    crate::render::table(&header, rows, markdown)
}

/// A terminal table, one row per report, the [`DEFAULT_COLUMNS`], with a
/// trailing newline.
pub fn render_table(reports: &[ReplayReport]) -> String {
    render_table_columns(reports, &default_columns())
}

/// A terminal table of the given columns (indices into [`COLUMNS`]).
pub fn render_table_columns(reports: &[ReplayReport], columns: &[usize]) -> String {
    let mut s = wrap(SIZE_ESTIMATES, 100);
    s += &table(reports, false, columns);
    s.push('\n');
    // Notes change how a row compares; when their column is not shown they
    // follow the table, one line per row that has any.
    let notes_col = COLUMNS.iter().position(|(k, _)| *k == "notes");
    if notes_col.is_some_and(|n| !columns.contains(&n)) {
        for r in reports {
            let n = notes(r);
            if n != "-" {
                s += &format!("note: {} · {}: {n}\n", r.source, r.profile);
            }
        }
    }
    s
}

/// `text` broken at spaces into lines of at most `width` chars (a longer word
/// stays whole), each ending in a newline.
fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// GitHub-flavoured Markdown: a heading and the table with every column.
pub fn render_markdown(reports: &[ReplayReport]) -> String {
    render_markdown_columns(reports, &(0..COLUMNS.len()).collect::<Vec<_>>())
}

/// Markdown of the given columns (indices into [`COLUMNS`]).
pub fn render_markdown_columns(reports: &[ReplayReport], columns: &[usize]) -> String {
    format!(
        "### Replay of real transcripts\n\n{SIZE_ESTIMATES}.\n\n{}\n\n`@` = index in the imported main conversation; \
`first fired` = first model call before which the profile compacted (archived or summarised); \
real compactions show the recorded trigger and tokens when the log has them.\n",
        table(reports, true, columns)
    )
}

/// Pretty JSON: `{"sizes": SIZE_ESTIMATES, "reports": [...]}` (series
/// included), with a trailing newline.
pub fn render_json(reports: &[ReplayReport]) -> String {
    let doc = serde_json::json!({ "sizes": SIZE_ESTIMATES, "reports": reports });
    let mut s = serde_json::to_string_pretty(&doc).expect("reports serialise");
    s.push('\n');
    s
}

/// Render in one of the lab's output formats.
pub fn render(reports: &[ReplayReport], format: crate::render::Format) -> String {
    match format {
        crate::render::Format::Table => render_table(reports),
        crate::render::Format::Markdown => render_markdown(reports),
        crate::render::Format::Json => render_json(reports),
    }
}

/// [`render`] with a `--columns` choice for the table and Markdown forms;
/// JSON always carries every field and the series.
pub fn render_with(
    reports: &[ReplayReport],
    format: crate::render::Format,
    columns: Option<&[usize]>,
) -> String {
    match (format, columns) {
        (crate::render::Format::Table, Some(c)) => render_table_columns(reports, c),
        (crate::render::Format::Markdown, Some(c)) => render_markdown_columns(reports, c),
        (f, _) => render(reports, f),
    }
}

/// A plot of context size per model call: one line per report (chars after
/// `prepare`), the first report's uncompacted size, each distinct context
/// limit as a rule, real compactions as vertical rules. Nothing is clipped:
/// the y axis spans the uncompacted size too, on a log scale, so the
/// uncompacted line (decades above) does not squeeze the profiles flat.
pub fn render_svg(reports: &[ReplayReport]) -> String {
    use crate::plot::{Figure, Panel, Rule, Series};
    let mut series: Vec<Series> = reports
        .iter()
        .map(|r| Series {
            label: format!("{} · {} ×{}", short(&r.source), r.profile, r.scale),
            points: r
                .series
                .iter()
                .map(|p| (p.at as f64, p.chars as f64))
                .collect(),
            step: false,
            ..Series::default()
        })
        .collect();
    if let Some(r) = reports.first() {
        series.push(Series {
            label: format!("{} uncompacted", short(&r.source)),
            points: r
                .series
                .iter()
                .map(|p| (p.at as f64, p.raw_chars as f64))
                .collect(),
            step: false,
            ..Series::default()
        });
    }
    let mut limits: Vec<usize> = reports.iter().map(|r| r.context_char_limit).collect();
    limits.sort_unstable();
    limits.dedup();
    let mut real: Vec<usize> = reports
        .iter()
        .flat_map(|r| r.real_compactions.iter().copied())
        .collect();
    real.sort_unstable();
    real.dedup();
    let panel = Panel {
        title: "context size before each model call (log scale)".into(),
        y_label: "context size (chars, log scale)".into(),
        log_y: true,
        series,
        h_rules: limits
            .iter()
            .map(|l| Rule {
                label: format!("limit {l} chars"),
                at: *l as f64,
            })
            .collect(),
        v_rules: real
            .iter()
            .map(|t| Rule {
                label: "real compaction".into(),
                at: *t as f64,
            })
            .collect(),
        ..Panel::default()
    };
    crate::plot::svg(&Figure {
        title: "Replay of a real session through compaction profiles".into(),
        x_label: "message index (position in the session)".into(),
        panels: vec![panel],
        caption: replay_caption(reports),
    })
}

/// Where a replay figure came from: the command that reproduces it and how
/// sizes were measured.
fn replay_caption(reports: &[ReplayReport]) -> String {
    let mut files: Vec<&str> = reports.iter().map(|r| r.source.as_str()).collect();
    files.dedup();
    let mut profiles: Vec<&str> = reports.iter().map(|r| r.profile.as_str()).collect();
    profiles.sort_unstable();
    profiles.dedup();
    let scale = reports.first().map_or(1.0, |r| r.scale);
    format!(
        "lab replay {} --profile {} --scale {scale} · tokenizer: none (sizes are estimated chars)",
        files.join(" "),
        profiles.join(",")
    )
}

fn short(source: &str) -> &str {
    source.split("__").next().unwrap_or(source)
}
