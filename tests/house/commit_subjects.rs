//! Commit subjects fit a one-line log: at most 72 characters, the details in
//! the body. Checked on the commits since the rule was adopted (the
//! history before keeps its long subjects: history is not rewritten).
//! Skipped, with the reason printed, where the checkout has no history
//! (a shallow clone or an exported tree).

use std::process::Command;

/// The last commit made before the rule.
const ADOPTED_AFTER: &str = "30bd91a0b807c68ee79c90783fac7675af4413e0";

/// The longest subject `git log --oneline` shows whole on a terminal of 80
/// columns beside its abbreviated hash.
const MAX_SUBJECT: usize = 72;

#[test]
fn commit_subjects_since_the_rule_fit_in_72_characters() {
    let root = env!("CARGO_MANIFEST_DIR");
    let known = Command::new("git")
        .args([
            "-C",
            root,
            "cat-file",
            "-e",
            &format!("{ADOPTED_AFTER}^{{commit}}"),
        ])
        .output();
    match known {
        Ok(o) if o.status.success() => {}
        Ok(_) => {
            eprintln!("SKIP: commit {ADOPTED_AFTER} is not in this checkout (shallow or exported)");
            return;
        }
        Err(e) => {
            eprintln!("SKIP: git could not run: {e}");
            return;
        }
    }
    let out = Command::new("git")
        .args([
            "-C",
            root,
            "log",
            "--format=%h %s",
            &format!("{ADOPTED_AFTER}..HEAD"),
        ])
        .output()
        .expect("git ran a moment ago");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = String::from_utf8_lossy(&out.stdout);
    let long: Vec<&str> = log
        .lines()
        .filter(|l| l.split_once(' ').map_or(0, |(_, s)| s.chars().count()) > MAX_SUBJECT)
        .collect();
    assert!(
        long.is_empty(),
        "commit subjects over {MAX_SUBJECT} characters (reword before landing, details in the body):\n{}",
        long.join("\n")
    );
}
