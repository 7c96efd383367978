//! `lab run`: scenario files, compaction and memory.

use std::io::Write;

use crate::error::{LabError, LabResult};
use crate::render::Format;
use crate::report;

/// Every scenario file is run even when an earlier one is bad: the good
/// ones' reports are printed, then every error.
pub fn run_scenarios(files: &[std::path::PathBuf], format: Format) -> LabResult<String> {
    let mut out = String::new();
    let mut failures = Vec::new();
    // JSON is one document: an array of every file's report.
    let mut reports = Vec::new();
    let mut errors = Vec::new();
    for f in files {
        let r = match run_scenario(f) {
            Ok(r) => r,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        failures.extend(r.failures.iter().map(|l| format!("{}: {l}", f.display())));
        if format == Format::Json {
            reports.push(r);
        } else {
            out += &report::scenario_run(&r, format);
        }
    }
    if format == Format::Json {
        out = serde_json::to_string_pretty(&reports).expect("reports serialise") + "\n";
    }
    if !failures.is_empty() {
        errors.push(LabError::Expectation { failures });
    }
    match LabError::several(errors) {
        None => Ok(out),
        Some(e) => {
            let _ = std::io::stdout().write_all(out.as_bytes());
            Err(e)
        }
    }
}

fn run_scenario(f: &std::path::Path) -> LabResult<crate::scenario::RunReport> {
    let text = crate::input::read_text(f, "a scenario")?;
    if crate::memory::scenario::is_memory_scenario(&text) {
        let backend = crate::storage::root::current_backend();
        let (counters, failures) = crate::memory::scenario::run_scenario_text(f, &text, backend)?;
        let name = f
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(crate::scenario::RunReport {
            file: f.to_path_buf(),
            name,
            cells: vec![("store".to_string(), counters)],
            failures,
        })
    } else {
        let (sc, config) = crate::scenario::Scenario::parse(f, &text)?;
        sc.run(f, &config)
    }
}
