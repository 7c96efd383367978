//! `lab replay --scale`: one check, before every other argument check but
//! the column list, with the same message and exit code on the profile,
//! cost and policy paths; library replays refuse a bad scale too.

use crate::common;
use common::lab;

use ctxlab::message::{Block, Message};
use ctxlab::replay::profiles::{replay_messages, ReplayOptions};

/// Bad scales as given on the command line, and as `f64` prints them.
const BAD: [(&str, &str); 4] = [("0", "0"), ("-1", "-1"), ("nan", "NaN"), ("inf", "inf")];

/// The argument tails of the three replay paths.
const PATHS: [&[&str]; 4] = [
    &[],
    &["--profile", "hardened"],
    &["--policy", "all"],
    &["--cost"],
];

fn replay_with(scale: &str, tail: &[&str]) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    // Nothing here exists: the scale must be refused before the file or
    // the plot's directory is looked at, with a format forced (an unknown
    // format name is clap's to refuse, before any of the lab's checks).
    let missing = dir.path().join("missing.jsonl");
    let plot = dir.path().join("no-such-dir/plot.svg");
    let scale = format!("--scale={scale}");
    let mut args = vec![
        "replay",
        missing.to_str().unwrap(),
        &scale,
        "--plot",
        plot.to_str().unwrap(),
        "--format-in",
        "chat_json",
    ];
    args.extend_from_slice(tail);
    let (code, _, err) = lab(&args);
    (code, err)
}

#[test]
fn a_bad_scale_is_a_usage_error_on_every_path_before_any_other_check() {
    for (given, shown) in BAD {
        for tail in PATHS {
            let (code, err) = replay_with(given, tail);
            assert_eq!(code, 2, "{given} {tail:?}: {err}");
            assert!(
                err.contains(&format!("--scale {shown} is not a positive number")),
                "{given} {tail:?}: {err}"
            );
            assert!(
                err.contains("use e.g. --scale 0.1"),
                "{given} {tail:?}: {err}"
            );
        }
    }
}

#[test]
fn the_column_list_is_still_checked_before_the_scale() {
    let (code, _, err) = lab(&["replay", "x.jsonl", "--scale=0", "--columns", "nope"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown replay column"), "{err}");
}

#[test]
fn a_good_scale_on_the_policy_path_is_still_refused_as_profile_only() {
    let (code, _, err) = lab(&["replay", "x.jsonl", "--scale=0.5", "--policy", "all"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--scale applies to --profile replays only"),
        "{err}"
    );
}

#[test]
fn library_replays_refuse_a_bad_scale() {
    let main = vec![
        Message::user_text("hi"),
        Message::assistant(vec![Block::Text { text: "ok".into() }]),
    ];
    for scale in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let options = ReplayOptions {
            scale,
            ..ReplayOptions::default()
        };
        let err = replay_messages("synthetic", &main, &[], "course-f9e8b28", &options)
            .expect_err("a bad scale must be refused");
        assert_eq!(err.exit_code(), 2, "{scale}: {err}");
        assert!(
            err.to_string().contains("is not a positive number"),
            "{scale}: {err}"
        );
    }
    let ok = ReplayOptions {
        scale: 0.5,
        ..ReplayOptions::default()
    };
    assert!(replay_messages("synthetic", &main, &[], "course-f9e8b28", &ok).is_ok());
}
