//! Thresholds: the path lengths at which a counter changes within one combination.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::CellResult;

/// A path length where a counter changes within one combination and seed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Threshold {
    /// `switch=value` pairs of the combination, comma separated.
    pub combo: String,
    /// Seed.
    pub seed: u64,
    /// Counter name.
    pub counter: String,
    /// Value below the threshold.
    pub from: String,
    /// Value from the threshold on.
    pub to: String,
    /// Last path length measured with `from`.
    pub below: usize,
    /// First path length measured with `to`; exact when `at == below + 1`.
    pub at: usize,
}

impl Threshold {
    /// Whether the sweep measured both neighbouring lengths, so `at` is exact.
    pub fn exact(&self) -> bool {
        self.at == self.below + 1
    }
}

/// The label of a cell's combination: `switch=value` pairs, comma separated.
pub fn combo_label(vary: &[String], values: &[String]) -> String {
    vary.iter()
        .zip(values)
        .map(|(s, v)| format!("{s}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Every change of a counter between neighbouring measured path lengths,
/// per combination and seed. Pure: works on any cells (synthetic ones in tests).
pub fn thresholds(vary: &[String], cells: &[CellResult]) -> Vec<Threshold> {
    let mut groups: BTreeMap<(Vec<String>, u64), Vec<&CellResult>> = BTreeMap::new();
    let mut order = Vec::new();
    for c in cells {
        let key = (c.values.clone(), c.seed);
        if !groups.contains_key(&key) {
            order.push(key.clone());
        }
        groups.entry(key).or_default().push(c);
    }
    let mut out = Vec::new();
    for key in order {
        let mut group = groups.remove(&key).unwrap_or_default();
        group.sort_by_key(|c| c.path_len);
        for w in group.windows(2) {
            let (a, b) = (w[0].counters(), w[1].counters());
            for ((name, va), (_, vb)) in a.iter().zip(b.iter()) {
                if va != vb {
                    out.push(Threshold {
                        combo: combo_label(vary, &key.0),
                        seed: key.1,
                        counter: name.to_string(),
                        from: va.clone(),
                        to: vb.clone(),
                        below: w[0].path_len,
                        at: w[1].path_len,
                    });
                }
            }
        }
    }
    out
}
