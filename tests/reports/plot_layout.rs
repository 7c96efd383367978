//! Every plot the lab writes is readable: the layout check
//! (`ctxlab::plot::lint`) finds no two highlighted series of a panel in one
//! style, no label over another and no label off the canvas. Run on the
//! reports' plots, on the replay plots of a generated session, and on the
//! replay plots of every shared session when they are present.

use crate::common;

use std::path::Path;

use common::{lab, transcript_files, transcripts};
use ctxlab::plot::lint::{check, Problems};

fn assert_readable(name: &str, svg: &str) -> Problems {
    let p = check(svg);
    assert!(p.labels > 0, "{name}: no labels read");
    assert!(p.is_empty(), "{name}: {p:#?}");
    p
}

#[test]
fn the_reports_plots_are_readable() {
    let files = crate::shared::files();
    let svgs: Vec<&(String, String)> = files.iter().filter(|(n, _)| n.ends_with(".svg")).collect();
    assert!(
        svgs.len() >= 4,
        "{:?}",
        svgs.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    // The HTML report's figures (timelines, frontier) are plots too.
    let html = &files
        .iter()
        .find(|(n, _)| n == "index.html")
        .expect("index.html")
        .1;
    let figures: Vec<(String, String)> = html
        .split("<svg ")
        .skip(1)
        .enumerate()
        .map(|(i, rest)| {
            let end = rest.find("</svg>").expect("a closed svg") + "</svg>".len();
            (
                format!("index.html figure {i}"),
                format!("<svg {}", &rest[..end]),
            )
        })
        .collect();
    assert!(figures.len() >= 6, "{} figures", figures.len());
    for (name, svg) in &figures {
        assert_readable(name, svg);
    }
    for (name, svg) in svgs {
        let p = assert_readable(name, svg);
        if name == "cost.svg" {
            // Every policy is drawn highlighted once, in a panel of its family.
            assert_eq!(p.series, ctxlab::zoo::list::names().len(), "{name}");
        }
        if name == "frontier.svg" {
            // Every policy is named in the key.
            for n in ctxlab::zoo::list::names() {
                assert!(
                    svg.contains(&format!("  {n}")),
                    "{name}: {n} not in the key"
                );
            }
        }
    }
}

/// The profile plot and the cumulative-dollars plot of every policy on `file`.
fn replay_plots(file: &Path, dir: &Path, dollars: bool) {
    let f = file.to_str().unwrap();
    let sizes = dir.join("sizes.svg");
    let (code, _, err) = lab(&["replay", f, "--plot", sizes.to_str().unwrap()]);
    assert_eq!(code, 0, "{f}: {err}");
    assert_readable(
        &format!("{f} sizes"),
        &std::fs::read_to_string(&sizes).unwrap(),
    );
    if dollars {
        let out = dir.join("dollars.svg");
        let (code, _, err) = lab(&[
            "replay",
            f,
            "--policy",
            "all",
            "--cost",
            "--plot",
            out.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{f}: {err}");
        let svg = std::fs::read_to_string(&out).unwrap();
        let p = assert_readable(&format!("{f} dollars"), &svg);
        // Every policy highlighted once per main session, and once more
        // for a log's subagents, drawn together.
        let sessions =
            ctxlab::replay::subagents::sessions_of(file, &Default::default(), Default::default())
                .unwrap();
        let mains = sessions
            .iter()
            .filter(|s| s.session.subagent.is_none())
            .count();
        let with_subagents = usize::from(sessions.iter().any(|s| s.session.subagent.is_some()));
        assert_eq!(
            p.series,
            ctxlab::zoo::list::names().len() * (mains + with_subagents),
            "{f}"
        );
    }
}

#[test]
fn the_replay_plots_of_a_generated_session_are_readable() {
    let dir = tempfile::tempdir().unwrap();
    let messages = ctxlab::reports::frontier::session();
    let file = common::write(
        dir.path(),
        "generated.json",
        &serde_json::to_string_pretty(&messages).unwrap(),
    );
    replay_plots(&file, dir.path(), true);
}

/// Shared sessions: the profile plot of every one; the dollars plot of
/// those under 1 MB (every policy over the larger ones takes minutes in a
/// test build; `make replay` draws them all).
#[test]
fn the_replay_plots_of_the_shared_sessions_are_readable() {
    let Some(root) = transcripts() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for file in transcript_files(&root) {
        let small = std::fs::metadata(&file).unwrap().len() < 1_000_000;
        replay_plots(&file, dir.path(), small);
    }
}

#[test]
fn a_crowded_figure_fails_the_check() {
    use ctxlab::plot::{svg, Figure, Panel, Series};
    // Two series forced into one style, and a caption-free figure whose
    // legend is fine: the check names exactly the shared style.
    let series = |label: &str| Series {
        label: label.into(),
        points: vec![(0.0, 1.0), (1.0, 2.0)],
        style: Some(3),
        ..Series::default()
    };
    let fig = Figure {
        panels: vec![Panel {
            series: vec![series("a"), series("b")],
            ..Panel::default()
        }],
        ..Figure::default()
    };
    let p = check(&svg(&fig));
    assert_eq!(p.shared_style.len(), 1, "{p:#?}");
    assert!(p.overlaps.is_empty() && p.outside.is_empty(), "{p:#?}");
}
