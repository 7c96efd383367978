//! The experiments behind the reports, run once per test binary: every file
//! of this binary that needs them borrows the same result, because one run
//! in a debug build (the long horizon of every policy above all) costs
//! minutes of CPU.

use std::sync::OnceLock;

use ctxlab::reports::{self, ReportData};

/// What `lab reports` computes.
pub fn data() -> &'static ReportData {
    static DATA: OnceLock<ReportData> = OnceLock::new();
    DATA.get_or_init(|| reports::report_data().unwrap())
}

/// Every report file, as `lab reports` writes them.
pub fn files() -> &'static Vec<(String, String)> {
    static FILES: OnceLock<Vec<(String, String)>> = OnceLock::new();
    FILES.get_or_init(|| reports::files(data()))
}
