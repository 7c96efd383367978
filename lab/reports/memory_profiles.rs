//! `memory_profiles`: every store profile (other memory designs on the
//! same fault machinery) through the measures of
//! [`crate::memory::profiles::measures`], one row a profile. A measure that
//! cannot fail for a design says "n/a" and why, never 0.

use super::{Cell, Table};
use crate::memory::profiles::measures::{
    FaultReport, Measured, GROWTH_SESSIONS, STALE_CONSOLIDATIONS,
};

/// A count that the design has no notion of shows `-`.
fn opt(n: Option<u64>) -> Cell {
    n.map_or(Cell::Text("-".into()), Cell::Int)
}

/// Points losing an acknowledged fact right after the restart, and after
/// one clean consolidation; n/a for a design that acknowledges nothing.
fn acked(r: &FaultReport) -> [Cell; 2] {
    if r.acknowledged == 0 {
        let na = || Cell::Text("n/a: acknowledges nothing".into());
        return [na(), na()];
    }
    [
        Cell::Text(format!(
            "{}/{} ({} facts)",
            r.losing_at_restart, r.points, r.lost_at_restart
        )),
        Cell::Text(format!("{}/{}", r.losing_after_consolidation, r.points)),
    ]
}

/// The three cells of one fault row.
fn fault(r: &FaultReport) -> [Cell; 3] {
    let [at, after] = acked(r);
    [
        at,
        after,
        Cell::Text(format!("{}/{}", r.regressed, r.points)),
    ]
}

/// The table, a pure function of the measured profiles.
pub fn memory_profiles_table(results: &[Measured]) -> Table {
    let mut columns = vec!["profile".to_string()];
    for f in ["kill", "I/O error", "full disk"] {
        columns.push(format!("{f}: acknowledged lost at restart"));
        columns.push(format!("{f}: after a consolidation"));
        columns.push(format!("{f}: recall regressed at restart"));
    }
    columns.extend(
        [
            "stale gone after",
            "bytes",
            "files",
            "versions",
            "refused",
            "first refusal",
            "sessions over a limit",
            "interleavings losing",
            "acknowledged means",
            "design",
        ]
        .map(String::from),
    );
    let rows = results
        .iter()
        .map(|m| {
            let stale = match (m.stale.gone_after, &m.stale.not_applicable) {
                (Some(n), None) => format!("{n} consolidation(s)"),
                (None, None) => format!("survives {}", m.stale.consolidations),
                // What the run shows stays beside the reason it is no defect.
                (Some(n), Some(why)) => format!("n/a: {why} (gone after {n})"),
                (None, Some(why)) => format!("n/a: {why} (survives {})", m.stale.consolidations),
            };
            let over = match &m.growth.limits_not_applicable {
                Some(why) => Cell::Text(format!("n/a: {why}")),
                None => Cell::Int(m.growth.over_limit),
            };
            let lu = &m.lost_updates;
            let lost = match &lu.not_applicable {
                Some(why) => format!("n/a: {why}"),
                None if lu.acknowledged == 0 => "n/a: acknowledges nothing".into(),
                None => format!("{}/{} ({} facts)", lu.losing, lu.interleavings, lu.lost),
            };
            let mut row = vec![Cell::Text(m.profile.clone())];
            row.extend(fault(&m.kill));
            row.extend(fault(&m.io_error));
            row.extend(fault(&m.full_disk));
            row.extend([
                Cell::Text(stale),
                Cell::Int(m.growth.bytes),
                Cell::Int(m.growth.files),
                opt(m.growth.versions),
                Cell::Int(m.growth.refused),
                opt(m.growth.first_refusal),
                over,
                Cell::Text(lost),
                Cell::Text(m.acknowledgement.clone()),
                Cell::Text(m.design.clone()),
            ]);
            row
        })
        .collect();
    Table {
        name: "memory_profiles".into(),
        title: format!(
            "Memory designs as store profiles: a kill, an I/O error or a full disk at every storage operation (recall read right after the restart and after one consolidation), stale fact after up to {STALE_CONSOLIDATIONS} consolidations, store after {GROWTH_SESSIONS} generated sessions, lost updates between two concurrent consolidators"
        ),
        columns,
        rows,
    }
}

/// `memory_mutants`: every profile × measure, the mutant the measure
/// catches (its counter, and the clean variant's beside it) or why the
/// design cannot fail the measure. A pure function of the measured matrix.
pub fn memory_mutants_table(cells: &[crate::memory::profiles::mutants::Cell]) -> Table {
    let columns = [
        "profile",
        "measure",
        "mutant",
        "mutant reads",
        "clean reads",
    ]
    .map(String::from)
    .to_vec();
    let rows = cells
        .iter()
        .map(|c| {
            let text = |s: String| Cell::Text(s);
            let (variant, mutant, clean) = match (&c.not_applicable, c.variant) {
                (Some(why), _) => (format!("n/a: {why}"), "-".into(), "-".into()),
                (None, Some(v)) => (
                    v.to_string(),
                    c.mutant.as_ref().map_or("-".into(), reading),
                    c.clean.as_ref().map_or("-".into(), reading),
                ),
                // The completeness test fails before a report shows this.
                (None, None) => (
                    "missing: no mutant and no reason".into(),
                    "-".into(),
                    "-".into(),
                ),
            };
            vec![
                text(c.profile.to_string()),
                text(c.measure.name().to_string()),
                text(variant),
                text(mutant),
                text(clean),
            ]
        })
        .collect();
    Table {
        name: "memory_mutants".into(),
        title: "Memory designs: for every profile and measure, the broken variant the measure catches (and the clean variant it does not), or why the design cannot fail it".into(),
        columns,
        rows,
    }
}

/// `caught: counter` or `clean: counter`.
fn reading(r: &crate::memory::profiles::mutants::Reading) -> String {
    let verdict = if r.caught { "caught" } else { "clean" };
    format!("{verdict}: {}", r.counter)
}
