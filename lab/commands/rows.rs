//! The registry's commands: `lab break`, `lab selftest`, `lab policies`
//! and `lab drift`.

use std::io::Write;

use crate::error::{LabError, LabResult};
use crate::experiments;
use crate::registry::RunOptions;
use crate::render::Format;
use crate::report;

/// `lab policies`: every policy's card.
pub fn policies(format: Format) -> LabResult<String> {
    let mut listed = Vec::new();
    for name in crate::zoo::list::names() {
        let p = crate::zoo::list::make(name)?;
        listed.push(crate::policy::render::Listed::new(
            p.info(),
            &p.variant_keys(),
        ));
    }
    Ok(crate::policy::render::policies(&listed, format))
}

/// `lab drift`: every summarising strategy over repeated passes.
pub fn drift(passes: usize, capacity: usize, format: Format) -> LabResult<String> {
    if !(1..=1000).contains(&passes) || !(1..=10_000_000).contains(&capacity) {
        return Err(LabError::usage(
            format!("--passes {passes} / --capacity {capacity} out of range"),
            "use --passes 1..=1000 and --capacity 1..=10000000",
        ));
    }
    let curves: Vec<_> = crate::retention::drift::Strategy::ALL
        .iter()
        .map(|s| crate::retention::drift::run(*s, passes, capacity))
        .collect();
    Ok(crate::retention::render::drift(&curves, format))
}

/// `lab break ID…` (and `lab --break ID`): each row run and checked.
pub fn run_breaks(ids: &[String], opts: &RunOptions, format: Format) -> LabResult<String> {
    let rows = if ids.iter().any(|i| i == "all") {
        experiments::all()
    } else {
        ids.iter()
            .map(|i| experiments::find(i))
            .collect::<LabResult<Vec<_>>>()?
    };
    let verdicts = rows
        .iter()
        .map(|e| (e.run)(opts))
        .collect::<LabResult<Vec<_>>>()?;
    Ok(report::verdicts(&verdicts, format))
}

/// `lab selftest`: every row run and checked against its expectations.
pub fn selftest() -> LabResult<String> {
    let opts = RunOptions::default();
    let mut out = String::new();
    let mut failures = Vec::new();
    for e in experiments::all() {
        let v = (e.run)(&opts)?;
        let mut f = v.check(e.expect);
        // A row whose run reports another row's id would check the wrong expectations.
        if v.id != e.id {
            f.push(format!("{}: the verdict names row {}", e.id, v.id));
        }
        out += &format!(
            "{:<16} {:<5} {}\n",
            e.id,
            if f.is_empty() { "ok" } else { "FAIL" },
            e.title
        );
        failures.extend(f);
    }
    if failures.is_empty() {
        out += "selftest: every expectation holds\n";
        Ok(out)
    } else {
        let _ = std::io::stdout().write_all(out.as_bytes());
        Err(LabError::Expectation { failures })
    }
}
