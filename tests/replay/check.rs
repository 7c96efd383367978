//! `lab check FILE`: policies over sessions against declared expectations.

use crate::common::{lab, lab_ok};

/// A directory with the session `s.json` and `check.toml` holding `body`.
fn check_dir(body: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("s.json"),
        serde_json::to_string(&crate::common::tool_session(8, 1)).unwrap(),
    )
    .unwrap();
    std::fs::write(dir.path().join("check.toml"), body).unwrap();
    dir
}

fn path(dir: &tempfile::TempDir, name: &str) -> String {
    dir.path().join(name).to_str().unwrap().to_string()
}

#[test]
fn expectations_that_hold_print_the_table_and_exit_0() {
    let dir = check_dir(
        r#"sessions = ["s.json"]
policies = ["none", "course-main"]
expect = ["invalid_requests == 0", "lost_forever == 0", "calls == 9", "dollars <= 1.5 * none"]
"#,
    );
    let out = lab_ok(&["check", &path(&dir, "check.toml")]);
    insta::assert_snapshot!("check_holds", out);
    assert_eq!(out.matches("holds").count(), 8, "{out}");
}

#[test]
fn a_miss_exits_1_naming_session_policy_and_metric_and_junit_says_so() {
    let dir = check_dir(
        r#"sessions = ["s.json"]
policies = ["none", "course-main"]
expect = ["calls < 9", "lost_forever == 0"]
"#,
    );
    let junit = path(&dir, "report.xml");
    let (code, out, err) = lab(&["check", &path(&dir, "check.toml"), "--junit", &junit]);
    assert_eq!(code, 1, "{err}");
    assert!(out.contains("MISS"), "the table is printed: {out}");
    assert!(
        err.contains(
            "s.json under none, whole session: calls: `calls < 9` failed: got 9, bound 9 (count)"
        ),
        "{err}"
    );
    assert!(
        err.contains("s.json under course-main, whole session: calls: `calls < 9` failed"),
        "{err}"
    );
    assert!(
        !err.contains("lost_forever"),
        "the intact expectation holds: {err}"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("tests=\"4\" failures=\"2\""), "{xml}");
    assert_eq!(xml.matches("<failure ").count(), 2, "{xml}");
}

#[test]
fn a_bad_check_file_names_its_line_and_the_fix() {
    let cases = [
        (
            "sessions = [\"s.json\"]\npolicies = [\"none\"]\nexpect = [\"lost == 0\"]\n",
            "unknown metric \"lost\"",
            3,
        ),
        (
            "sessions = [\"s.json\"]\npolicies = [\"none\"]\nexpect = [\"calls <= 2 * nope\"]\n",
            "unknown policy \"nope\"",
            3,
        ),
        (
            "sessions = [\"s.json\"]\npolicies = [\"none\"]\nexpct = [\"calls == 1\"]\n",
            "unknown field `expct`",
            3,
        ),
        (
            "sessions = [\"s.json\"]\npolicies = [\"none\"]\nexpect = [\"calls 1\"]\n",
            "no comparison",
            3,
        ),
    ];
    for (body, message, line) in cases {
        let dir = check_dir(body);
        let (code, out, err) = lab(&["check", &path(&dir, "check.toml")]);
        assert_eq!(code, 3, "{body}: {err}");
        assert!(out.is_empty());
        assert!(err.contains(message), "{body}: {err}");
        assert!(
            err.contains(&format!("check.toml:{line}:")),
            "{body}: {err}"
        );
    }
}

#[test]
fn a_policy_that_loses_is_caught_by_the_named_counter_and_the_intact_run_is_clean() {
    // vercel-prune-messages drops old tool results without keeping them
    // anywhere: lost_forever catches it; `none` keeps everything.
    let dir = check_dir(
        r#"sessions = ["s.json"]
policies = ["none", "vercel-prune-messages"]
expect = ["lost_forever == 0", "invalid_requests == 0"]
"#,
    );
    let (code, _, err) = lab(&["check", &path(&dir, "check.toml")]);
    assert_eq!(code, 1, "{err}");
    let miss = err
        .lines()
        .find(|l| l.contains("s.json under vercel-prune-messages, call "))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        miss.contains(": lost_forever: `lost_forever == 0` failed: got "),
        "{miss}"
    );
    assert!(!err.contains("under none"), "{err}");
    assert!(!err.contains("invalid_requests"), "{err}");
}
