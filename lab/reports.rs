//! The generated report files: pure renderers from results to bytes.
//!
//! `lab reports` (see [`crate::sweep::report_data`]) runs the experiments once
//! and hands the results here; everything in this module is a pure function
//! of that data, so the checked-in `reports/` directory can be regenerated and
//! compared byte for byte. Nothing machine-specific (paths, times) is ever an
//! input, and every number is formatted by hand (no float `Display` drift).

use comfy_table::{presets, Cell as TCell, ContentArrangement, Table as CTable};
use serde::Serialize;

use crate::sweep::{self, render, CellResult, ProfileCell, SweepResult};

/// A terminal or Markdown table with a fixed layout (never the terminal's width).
pub fn text_table<S: AsRef<str>>(header: &[S], rows: Vec<Vec<String>>, markdown: bool) -> String {
    let mut t = CTable::new();
    // Fixed layout: a table must not depend on the terminal it is printed to.
    t.set_content_arrangement(ContentArrangement::Disabled);
    t.load_preset(if markdown {
        presets::ASCII_MARKDOWN
    } else {
        presets::UTF8_FULL_CONDENSED
    });
    t.set_header(header.iter().map(|h| TCell::new(h.as_ref())));
    for r in rows {
        t.add_row(r);
    }
    t.to_string()
}

/// One typed table cell; JSON keeps the type, the text formats print it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Cell {
    /// Free text (switch values, names, ranges).
    Text(String),
    /// A count.
    Int(u64),
    /// A flag.
    Bool(bool),
}

impl std::fmt::Display for Cell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cell::Text(s) => f.write_str(s),
            Cell::Int(n) => write!(f, "{n}"),
            Cell::Bool(b) => write!(f, "{b}"),
        }
    }
}

/// A report table: the one shape every file format is rendered from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Table {
    /// File stem, e.g. `grid2x2_pointer_lost`.
    pub name: String,
    /// One-line title (ASCII, it is also the LaTeX caption).
    pub title: String,
    /// Column names.
    pub columns: Vec<String>,
    /// Rows, each as long as `columns`.
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    fn text_rows(&self) -> Vec<Vec<String>> {
        self.rows
            .iter()
            .map(|r| r.iter().map(Cell::to_string).collect())
            .collect()
    }
}

/// Markdown: a heading and a GitHub table.
pub fn markdown(t: &Table) -> String {
    format!(
        "### {}\n\n{}\n",
        t.title,
        text_table(&t.columns, t.text_rows(), true)
    )
}

/// One CSV field (RFC 4180): quoted when it holds a comma, quote, line break
/// or edge whitespace, with quotes doubled.
pub fn csv_field(s: &str) -> String {
    let needs = s.contains([',', '"', '\n', '\r'])
        || s.starts_with(char::is_whitespace)
        || s.ends_with(char::is_whitespace);
    if needs {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// CSV: a header line, then one line per row (LF line ends, so git diffs stay clean).
pub fn csv(t: &Table) -> String {
    let line = |cells: Vec<String>| {
        cells
            .iter()
            .map(|c| csv_field(c))
            .collect::<Vec<_>>()
            .join(",")
            + "\n"
    };
    let mut out = line(t.columns.clone());
    for r in t.text_rows() {
        out += &line(r);
    }
    out
}

/// JSON: name, title, columns and typed rows (arrays, so key order never matters).
pub fn json(t: &Table) -> String {
    crate::report::json(t)
}

/// Escape text for LaTeX outside math mode.
pub fn latex_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\textbackslash{}"),
            '&' | '%' | '$' | '#' | '_' | '{' | '}' => {
                out.push('\\');
                out.push(c);
            }
            '~' => out.push_str("\\textasciitilde{}"),
            '^' => out.push_str("\\textasciicircum{}"),
            '<' => out.push_str("\\textless{}"),
            '>' => out.push_str("\\textgreater{}"),
            '|' => out.push_str("\\textbar{}"),
            _ => out.push(c),
        }
    }
    out
}

/// LaTeX: a booktabs table (`\toprule`, `\midrule`, `\bottomrule`); numeric
/// columns are right-aligned. Needs `\usepackage{booktabs}`.
pub fn latex(t: &Table) -> String {
    let numeric = |j: usize| {
        !t.rows.is_empty()
            && t.rows
                .iter()
                .all(|r| matches!(r.get(j), Some(Cell::Int(_))))
    };
    let align: String = (0..t.columns.len())
        .map(|j| if numeric(j) { 'r' } else { 'l' })
        .collect();
    let line = |cells: Vec<String>| {
        cells
            .iter()
            .map(|c| latex_escape(c))
            .collect::<Vec<_>>()
            .join(" & ")
            + " \\\\\n"
    };
    let mut out = String::new();
    out += "% generated by `lab reports`; do not edit (needs \\usepackage{booktabs})\n";
    out += "\\begin{table}[ht]\n\\centering\n";
    out += &format!("\\caption{{{}}}\n", latex_escape(&t.title));
    out += &format!("\\label{{tab:{}}}\n", t.name.replace('_', "-"));
    out += &format!("\\begin{{tabular}}{{{align}}}\n\\toprule\n");
    out += &line(t.columns.clone());
    out += "\\midrule\n";
    for r in t.text_rows() {
        out += &line(r);
    }
    out += "\\bottomrule\n\\end{tabular}\n\\end{table}\n";
    out
}

/// The file name → contents pairs of one table, in every format.
pub fn table_files(t: &Table) -> Vec<(String, String)> {
    vec![
        (format!("{}.md", t.name), markdown(t)),
        (format!("{}.csv", t.name), csv(t)),
        (format!("{}.json", t.name), json(t)),
        (format!("{}.tex", t.name), latex(t)),
    ]
}

/// The four cells of the 2×2 (order × unseen_guard), in factor order.
fn grid_cells(result: &SweepResult) -> Vec<Vec<String>> {
    (0..result.spec.combos())
        .map(|c| result.spec.values(c))
        .collect()
}

/// A short column label for a 2×2 cell, e.g. `micro_first, no guard`.
pub fn grid_label(values: &[String]) -> String {
    let guard = match values.get(1).map(String::as_str) {
        Some("true") => "guard",
        _ => "no guard",
    };
    format!(
        "{}, {guard}",
        values.first().map(String::as_str).unwrap_or("?")
    )
}

fn counter_value(c: &CellResult, counter: &str) -> u64 {
    match counter {
        "lost_forever" => c.lost_forever,
        "pointer_lost" => c.pointer_lost,
        "double_compacted" => c.double_compacted,
        "unseen_compacted" => c.unseen_compacted,
        _ => u64::from(!c.pairs_intact),
    }
}

/// The 2×2 table of one counter: a row per path length in `lens`, a column per cell.
pub fn grid_table(result: &SweepResult, counter: &str, lens: &[usize]) -> Table {
    let combos = grid_cells(result);
    let mut columns = vec!["path_len".to_string()];
    columns.extend(combos.iter().map(|v| grid_label(v)));
    let rows = lens
        .iter()
        .map(|&len| {
            let mut row = vec![Cell::Int(len as u64)];
            for v in &combos {
                let cell = result
                    .cells
                    .iter()
                    .find(|c| c.path_len == len && c.seed == 0 && &c.values == v);
                row.push(match cell {
                    Some(c) => Cell::Int(counter_value(c, counter)),
                    None => Cell::Text("-".into()),
                });
            }
            row
        })
        .collect();
    Table {
        name: format!("grid2x2_{counter}"),
        title: format!(
            "{counter}: order x unseen_guard, prototype probe, profile {}",
            result.spec.profile
        ),
        columns,
        rows,
    }
}

/// The full factorial: one row per combination and path length.
pub fn factorial_table(result: &SweepResult) -> Table {
    let mut columns = result.spec.vary.clone();
    columns.push("path_len".into());
    columns.extend(sweep::COUNTERS.iter().map(|s| s.to_string()));
    let rows = result
        .cells
        .iter()
        .map(|c| {
            let mut r: Vec<Cell> = c.values.iter().map(|v| Cell::Text(v.clone())).collect();
            r.push(Cell::Int(c.path_len as u64));
            r.extend([
                Cell::Int(c.lost_forever),
                Cell::Int(c.pointer_lost),
                Cell::Bool(c.pairs_intact),
                Cell::Int(c.double_compacted),
                Cell::Int(c.unseen_compacted),
            ]);
            r
        })
        .collect();
    Table {
        name: "factorial".into(),
        title: format!(
            "full factorial of {} switches, prototype probe, profile {}",
            result.spec.vary.len(),
            result.spec.profile
        ),
        columns,
        rows,
    }
}

/// Every profile on every script.
pub fn profiles_table(cells: &[ProfileCell]) -> Table {
    let columns = [
        "profile",
        "script",
        "path_len",
        "lost_forever",
        "pointer_lost",
        "pairs_intact",
        "double_compacted",
        "unseen_compacted",
        "oversized_in_context",
    ]
    .map(String::from)
    .to_vec();
    let rows = cells
        .iter()
        .map(|p| {
            vec![
                Cell::Text(p.profile.clone()),
                Cell::Text(p.script.clone()),
                Cell::Int(p.path_len as u64),
                Cell::Int(p.lost_forever),
                Cell::Int(p.pointer_lost),
                Cell::Bool(p.pairs_intact),
                Cell::Int(p.double_compacted),
                Cell::Int(p.unseen_compacted),
                Cell::Int(p.oversized_in_context),
            ]
        })
        .collect();
    Table {
        name: "profiles".into(),
        title: "every profile on the probe and the seed's scenarios".into(),
        columns,
        rows,
    }
}

/// Colours of the four 2×2 series (colour-blind-safe Okabe-Ito).
/// A plot of `pointer_lost` and `lost_forever` against path length for the
/// four 2×2 cells: one panel per counter, step lines at their true values.
pub fn grid_svg(result: &SweepResult) -> String {
    use crate::plot::{Figure, Panel, Series};
    let combos = grid_cells(result);
    let panel = |counter: &str| Panel {
        title: counter.to_string(),
        y_label: format!("{counter} (results)"),
        series: combos
            .iter()
            .map(|v| Series {
                label: grid_label(v),
                points: result
                    .spec
                    .path_lens
                    .iter()
                    .filter_map(|&len| {
                        result
                            .cells
                            .iter()
                            .find(|c| c.path_len == len && c.seed == 0 && &c.values == v)
                            .map(|c| (len as f64, counter_value(c, counter) as f64))
                    })
                    .collect(),
                step: true,
            })
            .collect(),
        ..Panel::default()
    };
    crate::plot::svg(&Figure {
        title: "order × unseen_guard on the prototype probe".into(),
        x_label: "path_len (chars of the embedded result path)".into(),
        panels: vec![panel("pointer_lost"), panel("lost_forever")],
        caption: format!(
            "lab reports --out reports/ · profile {} · tokenizer: none (chars)",
            result.spec.profile
        ),
    })
}

/// A plot of the memory store's size after each session, one line per variant.
pub fn memory_growth_svg(curves: &[(String, Vec<u64>)]) -> String {
    use crate::plot::{Figure, Panel, Series};
    let series = curves
        .iter()
        .map(|(name, sizes)| Series {
            label: name.clone(),
            points: sizes
                .iter()
                .enumerate()
                .map(|(i, n)| (i as f64 + 1.0, *n as f64))
                .collect(),
            step: false,
        })
        .collect();
    crate::plot::svg(&Figure {
        title: "memory store growth across sessions".into(),
        x_label: "session (count)".into(),
        panels: vec![Panel {
            title: "memory records on disk".into(),
            y_label: "records (files)".into(),
            series,
            ..Panel::default()
        }],
        caption: "lab reports --out reports/ · memory switches: course defaults, one fix each · tokenizer: none (chars)".into(),
    })
}

/// Everything `lab reports` writes, computed once by [`crate::sweep::report_data`].
#[derive(Debug, Clone)]
pub struct ReportData {
    /// order × unseen_guard over every path length of the plot.
    pub grid: SweepResult,
    /// Path lengths shown in the 2×2 tables (a subset of the grid's).
    pub table_lens: Vec<usize>,
    /// The default factorial at the short and long path.
    pub factorial: SweepResult,
    /// Every profile on every script.
    pub profiles: Vec<ProfileCell>,
    /// Memory store size after each session: (variant, sizes), the reverse gate's growth.
    pub memory_growth: Vec<(String, Vec<u64>)>,
}

/// `memory_growth`: records on disk after each session, course vs the two fixes.
pub fn memory_growth_table(curves: &[(String, Vec<u64>)]) -> Table {
    let mut columns = vec!["session".to_string()];
    columns.extend(curves.iter().map(|(name, _)| name.clone()));
    let sessions = curves.iter().map(|(_, v)| v.len()).max().unwrap_or(0);
    let rows = (0..sessions)
        .map(|i| {
            let mut row = vec![Cell::Int(i as u64 + 1)];
            row.extend(
                curves
                    .iter()
                    .map(|(_, v)| v.get(i).map_or(Cell::Text("-".into()), |n| Cell::Int(*n))),
            );
            row
        })
        .collect();
    Table {
        name: "memory_growth".into(),
        title: "Memory records on disk after each session: the reverse gate (course) vs chunked consolidation and warn-on-skip".into(),
        columns,
        rows,
    }
}

/// `thresholds.md`: the exact path lengths where a counter changes, per sweep.
pub fn thresholds_md(data: &ReportData) -> String {
    let list = |r: &SweepResult| {
        render::thresholds_text(r)
            .lines()
            .map(|l| format!("- {l}\n"))
            .collect::<String>()
    };
    format!(
        "### thresholds: order x unseen_guard, path_len {}..{} step 1\n\n{}\n### thresholds: full factorial, path_len {}\n\n{}",
        data.grid.spec.path_lens.first().unwrap_or(&0),
        data.grid.spec.path_lens.last().unwrap_or(&0),
        list(&data.grid),
        data.factorial
            .spec
            .path_lens
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        list(&data.factorial),
    )
}

/// One line on what a report file holds, for the generated index.
fn describe(stem: &str) -> &'static str {
    match stem {
        "grid2x2_lost_forever" => "lost_forever of the prototype probe, order x unseen_guard, path_len 60..200 step 10",
        "grid2x2_pointer_lost" => "pointer_lost of the prototype probe, order x unseen_guard, path_len 60..200 step 10",
        "grid2x2" => "plot of pointer_lost and lost_forever against path_len (every length 60..200) for the four 2x2 cells",
        "factorial" => "the default factorial (order, unseen_guard, pair_protection, idempotent_placeholders, save_before_omit) at path_len 60 and 160",
        "profiles" => "every profile on the probe, scenario A, scenario B and the re-compaction script, at path_len 60 and 160",
        "thresholds" => "the path lengths where a counter changes, per switch combination",
        "memory_growth" => "memory records on disk after each of 24 sessions: past the consolidation input cap the course never consolidates again (reverse gate); chunked consolidation stays bounded",
        _ => "",
    }
}

/// Every report file, sorted by name, as (file name, contents).
pub fn files(data: &ReportData) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for counter in ["lost_forever", "pointer_lost"] {
        out.extend(table_files(&grid_table(
            &data.grid,
            counter,
            &data.table_lens,
        )));
    }
    out.extend(table_files(&factorial_table(&data.factorial)));
    out.extend(table_files(&profiles_table(&data.profiles)));
    out.extend(table_files(&memory_growth_table(&data.memory_growth)));
    out.push(("grid2x2.svg".into(), grid_svg(&data.grid)));
    out.push((
        "memory_growth.svg".into(),
        memory_growth_svg(&data.memory_growth),
    ));
    out.push(("thresholds.md".into(), thresholds_md(data)));
    out.sort();
    // One index line per table, linking each of its formats.
    let mut stems: Vec<(&str, Vec<&str>)> = Vec::new();
    for (name, _) in &out {
        let stem = name.rsplit_once('.').map_or(name.as_str(), |(s, _)| s);
        match stems.last_mut() {
            Some((s, names)) if *s == stem => names.push(name),
            _ => stems.push((stem, vec![name])),
        }
    }
    let index: String = stems
        .iter()
        .map(|(stem, names)| {
            let links: Vec<String> = names.iter().map(|n| format!("[`{n}`]({n})")).collect();
            format!("- {}: {}\n", links.join(" "), describe(stem))
        })
        .collect();
    out.push((
        "README.md".into(),
        format!(
            "# Generated reports\n\n\
             Written by `make reports` (`lab reports --out reports/`); `make reports-check` \
             (`lab reports --check reports/`) exits 1 naming every file that differs from what \
             the code produces, and `cargo test` fails on the same drift. Do not edit by hand.\n\n\
             Every table comes as Markdown, CSV (LF line ends), JSON (typed rows) and LaTeX \
             (booktabs). Any cell can be re-run, e.g. \
             `lab sweep --vary order,unseen_guard --path-len 60..200` or \
             `lab probe --set order=micro_first --set unseen_guard=false --path-len 90`.\n\n{index}"
        ),
    ));
    out.sort();
    out
}
