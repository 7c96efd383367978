//! `verdicts`: every registry row at its default cells, one line per cell and
//! counter that catches it, intact against broken — the registry as a table
//! an author can paste (`lab list` says what each row does, this says what it
//! measured).

use super::{Cell, Table};
use crate::counters::Counters;
use crate::registry::ExperimentVerdict;

/// One registry row's run with the counters that catch it.
#[derive(Debug, Clone)]
pub struct RowVerdict {
    /// The row's verdict at its default cells.
    pub verdict: ExperimentVerdict,
    /// The row's "caught by" counters, in the registry's order.
    pub caught_by: Vec<String>,
}

/// The value of `name` in `c`, or `-` when that side does not report it.
fn value(c: &Counters, name: &str) -> String {
    c.get(name)
        .map_or_else(|| "-".to_string(), |x| x.value.to_string())
}

/// `verdicts`: id, mechanism, kind, cell, counter, intact, broken, and
/// whether the two sides differ.
pub fn verdicts_table(rows: &[RowVerdict]) -> Table {
    let columns = [
        "id",
        "mechanism",
        "kind",
        "cell",
        "counter",
        "intact or fixed",
        "broken or as is",
        "differs",
    ];
    let mut body = Vec::new();
    for r in rows {
        let v = &r.verdict;
        for cell in &v.cells {
            for name in &r.caught_by {
                let (a, b) = (value(&cell.baseline, name), value(&cell.broken, name));
                let differs = Cell::Bool(a != b);
                body.push(vec![
                    Cell::Text(v.id.clone()),
                    Cell::Text(v.mechanism.name().to_string()),
                    Cell::Text(format!("{:?}", v.kind).to_lowercase()),
                    Cell::Text(cell.label.clone()),
                    Cell::Text(name.clone()),
                    Cell::Text(a),
                    Cell::Text(b),
                    differs,
                ]);
            }
        }
    }
    Table {
        name: "verdicts".into(),
        title: "Every registry row at its default cells: the counters that catch it, intact (or fixed) against broken (or as is)".into(),
        columns: columns.iter().map(|c| c.to_string()).collect(),
        rows: body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments as list;
    use crate::registry::RunOptions;

    #[test]
    fn every_row_has_a_line_per_cell_and_counter_and_the_caught_counters_differ() {
        let rows: Vec<RowVerdict> = ["D6", "I-tabs", "M-dedup-off"]
            .iter()
            .map(|id| {
                let e = list::find(id).unwrap();
                RowVerdict {
                    verdict: (e.run)(&RunOptions::default()).unwrap(),
                    caught_by: e.caught_by.iter().map(|s| s.to_string()).collect(),
                }
            })
            .collect();
        let t = verdicts_table(&rows);
        let expected: usize = rows
            .iter()
            .map(|r| r.verdict.cells.len() * r.caught_by.len())
            .sum();
        assert_eq!(t.rows.len(), expected);
        for id in ["D6", "I-tabs", "M-dedup-off"] {
            assert!(
                t.rows
                    .iter()
                    .any(|r| r[0] == Cell::Text(id.into()) && r[7] == Cell::Bool(true)),
                "{id}: no caught counter differs"
            );
        }
        insta::assert_snapshot!(crate::reports::markdown(&t));
    }
}
