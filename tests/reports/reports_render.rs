//! The generated reports: escaping, formats, snapshots, and drift against the checked-in `reports/`.

use std::path::Path;

use crate::shared::{data, files};
use ctxlab::reports::{self, csv_field, latex_escape, Cell, Table};

fn file(name: &str) -> &'static str {
    &files().iter().find(|(n, _)| n == name).unwrap().1
}

#[test]
fn csv_fields_are_quoted_only_when_needed() {
    assert_eq!(csv_field("plain_text"), "plain_text");
    assert_eq!(csv_field("a,b"), "\"a,b\"");
    assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    assert_eq!(csv_field("two\nlines"), "\"two\nlines\"");
    assert_eq!(csv_field(" edge"), "\" edge\"");
    assert_eq!(csv_field(""), "");
}

#[test]
fn latex_special_characters_are_escaped() {
    assert_eq!(latex_escape("path_len"), "path\\_len");
    assert_eq!(
        latex_escape("50% & $5 #1 {x}"),
        "50\\% \\& \\$5 \\#1 \\{x\\}"
    );
    assert_eq!(
        latex_escape("a\\b ~ ^ <>|"),
        "a\\textbackslash{}b \\textasciitilde{} \\textasciicircum{} \\textless{}\\textgreater{}\\textbar{}"
    );
}

fn tiny() -> Table {
    Table {
        name: "tiny_table".into(),
        title: "a_b, \"c\"".into(),
        columns: vec!["name".into(), "n".into(), "ok".into()],
        rows: vec![
            vec![Cell::Text("x,y".into()), Cell::Int(3), Cell::Bool(true)],
            vec![Cell::Text("50%".into()), Cell::Int(0), Cell::Bool(false)],
        ],
    }
}

#[test]
fn every_format_of_a_tiny_table() {
    let t = tiny();
    assert_eq!(reports::csv(&t), "name,n,ok\n\"x,y\",3,true\n50%,0,false\n");
    let tex = reports::latex(&t);
    assert!(
        tex.contains("\\begin{tabular}{lrl}\n\\toprule\nname & n & ok \\\\\n\\midrule\n"),
        "{tex}"
    );
    assert!(
        tex.contains("50\\% & 0 & false \\\\\n\\bottomrule\n"),
        "{tex}"
    );
    assert!(
        tex.contains("\\caption{a\\_b, \"c\"}\n\\label{tab:tiny-table}"),
        "{tex}"
    );
    let json: serde_json::Value = serde_json::from_str(&reports::json(&t)).unwrap();
    assert_eq!(json["rows"][0], serde_json::json!(["x,y", 3, true]));
    insta::assert_snapshot!("reports_tiny_markdown", reports::markdown(&t));
    insta::assert_snapshot!("reports_tiny_latex", tex);
}

#[test]
fn every_table_comes_in_four_formats_plus_plot_and_index() {
    let names: Vec<&str> = files().iter().map(|(n, _)| n.as_str()).collect();
    for stem in [
        "grid2x2_lost_forever",
        "grid2x2_pointer_lost",
        "factorial",
        "profiles",
        "memory_growth",
    ] {
        for ext in ["md", "csv", "json", "tex"] {
            assert!(
                names.contains(&format!("{stem}.{ext}").as_str()),
                "{stem}.{ext}"
            );
        }
    }
    for extra in [
        "grid2x2.svg",
        "memory_growth.svg",
        "thresholds.md",
        "README.md",
    ] {
        assert!(names.contains(&extra), "{extra}");
    }
    for (name, text) in files() {
        assert!(
            !text.contains("/tmp") && !text.contains("ctxlab-"),
            "{name} names a machine path"
        );
        assert!(text.ends_with('\n'), "{name}");
    }
    // 2 × 2^5 factorial rows at two path lengths, 5 profiles × 4 scripts × 2 lengths.
    assert_eq!(file("factorial.csv").lines().count(), 1 + 32 * 2);
    assert_eq!(file("profiles.csv").lines().count(), 1 + 5 * 4 * 2);
    assert_eq!(
        file("memory_growth.csv").lines().count(),
        1 + ctxlab::reports::MEMORY_SESSIONS
    );
}

#[test]
fn memory_growth_is_unbounded_for_the_course_and_bounded_when_chunked() {
    let curves = &data().memory_growth;
    let course = &curves.iter().find(|(n, _)| n == "course").unwrap().1;
    let chunked = &curves
        .iter()
        .find(|(n, _)| n == "chunked_consolidation")
        .unwrap()
        .1;
    assert!(course.windows(2).all(|w| w[1] > w[0]), "{course:?}");
    let cap = chunked.iter().max().unwrap();
    assert!(*cap < course[course.len() - 1] / 4, "{chunked:?}");
    insta::assert_snapshot!("reports_memory_growth_md", file("memory_growth.md"));
}

#[test]
fn plots_show_every_series_unclipped_with_provenance() {
    let svg = file("grid2x2.svg");
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert!(svg.ends_with("</svg>\n"));
    assert_eq!(
        svg.matches(" data-style=").count(),
        8,
        "4 series × 2 panels"
    );
    assert!(!svg.contains("clip"), "no series is clipped");
    assert!(svg.contains("lab reports --out reports/ · profile "));
    assert!(svg.contains("path_len (chars of the embedded result path)"));
    assert_eq!(reports::grid_svg(&data().grid), svg);
    insta::assert_snapshot!("reports_grid2x2_svg", svg);
    let growth = file("memory_growth.svg");
    assert_eq!(
        growth.matches(" data-style=").count(),
        data().memory_growth.len()
    );
    insta::assert_snapshot!("reports_memory_growth_svg", growth);
}

#[test]
fn snapshot_report_tables() {
    insta::assert_snapshot!(
        "reports_grid2x2_lost_forever_md",
        file("grid2x2_lost_forever.md")
    );
    insta::assert_snapshot!(
        "reports_grid2x2_pointer_lost_md",
        file("grid2x2_pointer_lost.md")
    );
    insta::assert_snapshot!("reports_factorial_md", file("factorial.md"));
    insta::assert_snapshot!("reports_profiles_md", file("profiles.md"));
    insta::assert_snapshot!("reports_thresholds_md", file("thresholds.md"));
    insta::assert_snapshot!(
        "reports_grid2x2_pointer_lost_tex",
        file("grid2x2_pointer_lost.tex")
    );
}

#[test]
fn generation_into_a_tempdir_matches_the_checked_in_reports() {
    // Generate exactly as `make reports` does, then compare the written bytes.
    let tmp = tempfile::tempdir().unwrap();
    reports::write_files(tmp.path(), files()).unwrap();
    let written: Vec<(String, String)> = files()
        .iter()
        .map(|(n, _)| {
            (
                n.clone(),
                std::fs::read_to_string(tmp.path().join(n)).unwrap(),
            )
        })
        .collect();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("reports");
    let drift = reports::drift(&dir, &written).unwrap();
    assert!(
        drift.is_empty(),
        "reports/ drifted; run `make reports` and commit:\n{}",
        drift.join("\n")
    );
}

#[test]
fn generation_into_a_tempdir_round_trips_and_drift_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let out = reports::write_files(tmp.path(), files()).unwrap();
    assert_eq!(out.lines().count(), files().len());
    assert!(reports::drift(tmp.path(), files()).unwrap().is_empty());
    // No temp files are left behind by the atomic writes.
    assert_eq!(
        std::fs::read_dir(tmp.path()).unwrap().count(),
        files().len()
    );

    let csv = tmp.path().join("profiles.csv");
    let text = std::fs::read_to_string(&csv)
        .unwrap()
        .replacen("true", "maybe", 1);
    std::fs::write(&csv, text).unwrap();
    std::fs::remove_file(tmp.path().join("grid2x2.svg")).unwrap();
    std::fs::write(tmp.path().join("stale.md"), "old\n").unwrap();
    let drift = reports::drift(tmp.path(), files()).unwrap();
    assert_eq!(drift.len(), 3, "{drift:#?}");
    assert!(drift.iter().any(|d| d.contains("grid2x2.svg: missing")));
    let changed = drift.iter().find(|d| d.contains("profiles.csv")).unwrap();
    assert!(changed.contains("@@ line 2 @@"), "{changed}");
    assert!(
        changed.contains("-course-old,probe,60,3,0,maybe"),
        "{changed}"
    );
    assert!(
        changed.contains("+course-old,probe,60,3,0,true"),
        "{changed}"
    );
    assert!(drift.iter().any(|d| d.contains("stale.md: unexpected")));
}

/// The spread figure: every policy over the default number of seeds, its
/// median between its min and max at every call, the seeds differing
/// (some band has width), one band per policy in its group's panel, and
/// the caption naming the seeds and what the band is.
#[test]
fn the_cost_figure_shows_the_median_and_spread_over_seeds() {
    use ctxlab::reports::cost::{seed_count, seeds_svg, spread, SEEDS};
    let rows = &crate::shared::data().cost_seeds;
    assert_eq!(seed_count(rows), SEEDS as usize);
    let spread = spread(rows);
    assert_eq!(spread.len(), ctxlab::zoo::list::names().len());
    let mut wide = 0;
    for (policy, points) in &spread {
        assert!(points.len() > 10, "{policy}: {} calls", points.len());
        for &(call, lo, mid, hi) in points {
            assert!(
                lo <= mid && mid <= hi,
                "{policy} at {call}: {lo} {mid} {hi}"
            );
        }
        wide += usize::from(points.last().is_some_and(|q| q.3 > q.1));
    }
    assert!(wide > spread.len() / 2, "the seeds barely differ: {wide}");
    let svg = seeds_svg(rows, "test");
    assert_eq!(svg.matches("data-band=").count(), spread.len());
    assert!(svg.contains(&format!("over {SEEDS} seeds")));
    assert!(svg.contains("line = median, band = min to max over the seeds"));
    let problems = ctxlab::plot::lint::check(&svg);
    assert!(problems.is_empty(), "{problems:#?}");
}
