//! Progress off a terminal: a long command prints one plain line every
//! interval on stderr (never on stdout), `--quiet` prints none, and a
//! command shorter than the interval prints nothing.

use crate::common::lab_command;

/// Run `lab args` with the progress interval set to `secs` (None: the
/// default interval): (exit code, stdout, stderr).
fn run(args: &[&str], secs: Option<&str>) -> (i32, String, String) {
    let mut cmd = lab_command();
    match secs {
        Some(s) => cmd.env("CTXLAB_PROGRESS_SECS", s),
        None => cmd.env_remove("CTXLAB_PROGRESS_SECS"),
    };
    let out = cmd.args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

const HORIZON: &[&str] = &[
    "horizon",
    "--tokens",
    "100000",
    "--policy",
    "none,prototype,claude-code",
    "--jobs",
    "1",
];

#[test]
fn a_long_horizon_prints_progress_lines_off_a_terminal() {
    let (code, out, err) = run(HORIZON, Some("0.01"));
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert!(!lines.is_empty(), "no progress line at a 10 ms interval");
    for l in &lines {
        assert!(
            l.starts_with("horizon: policies: ") && l.contains("/3 (") && l.ends_with(" elapsed)"),
            "{l}"
        );
    }
    // Progress never changes the output.
    let (_, quiet_out, quiet_err) = run(&[&["--quiet"], HORIZON].concat(), Some("0.01"));
    assert_eq!(quiet_out, out);
    assert_eq!(quiet_err, "", "--quiet prints no progress");
}

#[test]
fn a_command_shorter_than_the_interval_prints_nothing() {
    let (code, _, err) = run(&["horizon", "--tokens", "2000", "--policy", "none"], None);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        err, "",
        "the default interval is seconds, not a line at once"
    );
}

#[test]
fn a_sweep_off_a_terminal_counts_its_cells() {
    let args = [
        "sweep",
        "--vary",
        "order",
        "--path-len",
        "60,160,260,360",
        "--jobs",
        "1",
    ];
    let (code, out, err) = run(&args, Some("0.001"));
    assert_eq!(code, 0, "{err}");
    assert!(
        err.lines()
            .any(|l| l.starts_with("sweep: cells: ") && l.contains("/8 (")),
        "{err}"
    );
    let (_, quiet_out, quiet_err) = run(&[&["--quiet"], &args[..]].concat(), Some("0.001"));
    assert_eq!(quiet_out, out);
    assert_eq!(quiet_err, "");
}
