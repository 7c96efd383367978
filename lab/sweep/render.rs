//! Rendering of sweep results (pure functions).

use serde::Serialize;

use super::{thresholds, CellResult, SweepResult, SweepSpec, Threshold, COUNTERS};
use crate::render::{self, Format};

/// A run of neighbouring path lengths with identical counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment<'a> {
    /// First cell of the run.
    pub first: &'a CellResult,
    /// Last path length of the run.
    pub last_len: usize,
}

/// Collapse cells into runs of equal counters per combination and seed
/// (a 4 000-cell sweep then prints a few dozen rows).
pub fn segments(cells: &[CellResult]) -> Vec<Segment<'_>> {
    let mut out: Vec<Segment> = Vec::new();
    for c in cells {
        if let Some(last) = out.last_mut() {
            if last.first.values == c.values
                && last.first.seed == c.seed
                && last.first.counters() == c.counters()
            {
                last.last_len = c.path_len;
                continue;
            }
        }
        out.push(Segment {
            first: c,
            last_len: c.path_len,
        });
    }
    out
}

/// One threshold as a line, e.g. `order=micro_first,unseen_guard=false: pointer_lost 0→1 at path_len=90`.
pub fn threshold_line(t: &Threshold, with_seed: bool) -> String {
    let seed = if with_seed {
        format!(" (seed {})", t.seed)
    } else {
        String::new()
    };
    let at = if t.exact() {
        format!("at path_len={}", t.at)
    } else {
        format!("between path_len={} and {}", t.below, t.at)
    };
    format!("{}{seed}: {} {}→{} {at}", t.combo, t.counter, t.from, t.to)
}

/// The thresholds as text lines (or a line saying there are none).
pub fn thresholds_text(result: &SweepResult) -> String {
    let ts = thresholds(&result.spec.vary, &result.cells);
    if ts.is_empty() {
        return "no counter changes with path length\n".to_string();
    }
    ts.iter()
        .map(|t| threshold_line(t, result.spec.seeds > 1) + "\n")
        .collect()
}

fn header(spec: &SweepSpec) -> String {
    format!(
        "sweep · profile {} · {} combinations × {} seed(s) × {} path length(s) = {} cells",
        spec.profile,
        spec.combos(),
        spec.seeds,
        spec.path_lens.len(),
        spec.total_cells()
    )
}

/// JSON form: the result plus its thresholds (complete results only).
#[derive(Serialize)]
struct JsonOut<'a> {
    #[serde(flatten)]
    result: &'a SweepResult,
    #[serde(skip_serializing_if = "Option::is_none")]
    thresholds: Option<Vec<Threshold>>,
}

/// Render a sweep: a table of runs of equal counters, then the thresholds.
/// JSON is the full result (the input `--merge` reads) plus thresholds.
pub fn sweep(result: &SweepResult, format: Format) -> String {
    let complete = result.shard.is_none();
    if format == Format::Json {
        return render::json(&JsonOut {
            result,
            thresholds: complete.then(|| thresholds(&result.spec.vary, &result.cells)),
        });
    }
    let md = format == Format::Markdown;
    let spec = &result.spec;
    let mut head: Vec<&str> = spec.vary.iter().map(String::as_str).collect();
    if spec.seeds > 1 {
        head.push("seed");
    }
    head.push("path_len");
    head.extend(COUNTERS);
    let rows = segments(&result.cells)
        .iter()
        .map(|s| {
            let mut r = s.first.values.clone();
            if spec.seeds > 1 {
                r.push(s.first.seed.to_string());
            }
            r.push(if s.last_len == s.first.path_len {
                s.last_len.to_string()
            } else {
                format!("{}..{}", s.first.path_len, s.last_len)
            });
            r.extend(s.first.counters().into_iter().map(|(_, v)| v));
            r
        })
        .collect();
    let table = render::table(&head, rows, md);
    let shard = match result.shard {
        Some(s) => format!(
            " · shard {}/{} ({} cells)",
            s.index,
            s.count,
            result.cells.len()
        ),
        None => String::new(),
    };
    let mut out = if md {
        format!("### {}{shard}\n\n{table}\n\n", header(spec))
    } else {
        format!("== {}{shard} ==\n{table}\n", header(spec))
    };
    if complete {
        out += if md {
            "**thresholds**\n\n"
        } else {
            "thresholds:\n"
        };
        let text = thresholds_text(result);
        if md {
            out += &text.lines().map(|l| format!("- {l}\n")).collect::<String>();
        } else {
            out += &text.lines().map(|l| format!("  {l}\n")).collect::<String>();
        }
    }
    out
}
