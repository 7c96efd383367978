//! `memory_profiles`: every store profile (other memory designs on the
//! same fault machinery) through the four measures of
//! [`crate::memory::profiles::measures`], one row a profile.

use super::{Cell, Table};
use crate::memory::profiles::measures::{Measured, GROWTH_SESSIONS, STALE_CONSOLIDATIONS};

/// A count that the design has no notion of shows `-`.
fn opt(n: Option<u64>) -> Cell {
    n.map_or(Cell::Text("-".into()), Cell::Int)
}

/// The table, a pure function of the measured profiles.
pub fn memory_profiles_table(results: &[Measured]) -> Table {
    let columns = [
        "profile",
        "kill points losing",
        "acknowledged lost",
        "stale gone after",
        "bytes",
        "files",
        "versions",
        "refused",
        "first refusal",
        "sessions over a limit",
        "interleavings losing",
        "updates lost",
        "design",
    ];
    let rows = results
        .iter()
        .map(|m| {
            let stale = match m.stale.gone_after {
                Some(n) => format!("{n} consolidation(s)"),
                None => format!("survives {}", m.stale.consolidations),
            };
            vec![
                Cell::Text(m.profile.clone()),
                Cell::Text(format!("{}/{}", m.kill.losing, m.kill.points)),
                Cell::Int(m.kill.lost),
                Cell::Text(stale),
                Cell::Int(m.growth.bytes),
                Cell::Int(m.growth.files),
                opt(m.growth.versions),
                Cell::Int(m.growth.refused),
                opt(m.growth.first_refusal),
                Cell::Int(m.growth.over_limit),
                Cell::Text(format!(
                    "{}/{}",
                    m.lost_updates.losing, m.lost_updates.interleavings
                )),
                Cell::Int(m.lost_updates.lost),
                Cell::Text(m.design.clone()),
            ]
        })
        .collect();
    Table {
        name: "memory_profiles".into(),
        title: format!(
            "Memory designs as store profiles: kill points losing an acknowledged memory, stale fact after up to {STALE_CONSOLIDATIONS} consolidations, store after {GROWTH_SESSIONS} generated sessions, lost updates between two concurrent consolidators"
        ),
        columns: columns.iter().map(|c| c.to_string()).collect(),
        rows,
    }
}
