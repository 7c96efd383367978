//! Every figure and page the lab writes can be read without seeing it and
//! seen without full colour vision: each SVG is an image named by its own
//! `<title>` and `<desc>` (`role="img"`, `aria-labelledby`); each HTML table
//! has a `<caption>` and scoped header cells; each data colour reaches 3:1
//! against the background. Checked on every SVG and HTML file in `reports/`
//! (the checked-in files, `reports/replay/` included), on what `lab reports`
//! writes now, and on the replay plots and HTML page of a generated session.

use crate::common;

use std::path::Path;

use ctxlab::plot::style::{contrast, BACKGROUND, COLOURS, MIN_CONTRAST};

/// The value of attribute `name` in the tag text `tag`.
fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let at = tag.find(&key)? + key.len();
    Some(&tag[at..at + tag[at..].find('"')?])
}

/// The text of the element `<name id="id">…</name>` in `svg`.
fn element_text<'a>(svg: &'a str, name: &str, id: &str) -> Option<&'a str> {
    let open = format!("<{name} id=\"{id}\">");
    let at = svg.find(&open)? + open.len();
    Some(&svg[at..at + svg[at..].find(&format!("</{name}>"))?])
}

/// Every `<svg …>…</svg>` in `text`.
fn svgs(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("<svg ") {
        rest = &rest[i..];
        let end = rest
            .find("</svg>")
            .map_or(rest.len(), |e| e + "</svg>".len());
        out.push(&rest[..end]);
        rest = &rest[end..];
    }
    out
}

/// What is wrong with one SVG, for a reader who cannot see it or its colours.
fn svg_problems(svg: &str) -> Vec<String> {
    let mut out = Vec::new();
    let root = &svg[..svg.find('>').unwrap_or(svg.len())];
    if attr(root, "role") != Some("img") {
        out.push("no role=\"img\"".to_string());
    }
    match attr(root, "aria-labelledby") {
        None => out.push("no aria-labelledby".to_string()),
        Some(ids) => {
            let ids: Vec<&str> = ids.split(' ').collect();
            for (id, name) in ids.iter().zip(["title", "desc"]) {
                match element_text(svg, name, id) {
                    Some(t) if t.trim().len() > 3 => {}
                    _ => out.push(format!("aria-labelledby names {id}, no <{name}> with text")),
                }
            }
            if ids.len() != 2 {
                out.push(format!(
                    "aria-labelledby names {ids:?}, not a title and a desc"
                ));
            }
        }
    }
    // A highlighted series' colour is a data colour; grey context series
    // and rules are not data a reader must tell apart.
    for line in svg.lines().filter(|l| l.contains("data-style=")) {
        if let Some(c) = attr(line, "stroke") {
            match contrast(c, BACKGROUND) {
                Some(r) if r >= MIN_CONTRAST => {}
                r => out.push(format!("series colour {c}: contrast {r:?}")),
            }
        }
    }
    out
}

/// What is wrong with the tables of one HTML page.
fn table_problems(html: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, part) in html.split("<table").skip(1).enumerate() {
        let table = &part[..part.find("</table>").unwrap_or(part.len())];
        let head = table[table.find('>').map_or(0, |e| e + 1)..].trim_start();
        if !head.starts_with("<caption>") || head.starts_with("<caption></caption>") {
            out.push(format!("table {i}: no caption"));
        }
        let unscoped = table.matches("<th").count() - table.matches("<th scope=").count();
        if unscoped > 0 {
            out.push(format!("table {i}: {unscoped} header cells without scope"));
        }
    }
    out
}

/// Check `name`'s text: every SVG in it, and its tables when it is HTML.
fn check(name: &str, text: &str, problems: &mut Vec<String>) -> usize {
    let figures = svgs(text);
    for (k, svg) in figures.iter().enumerate() {
        for p in svg_problems(svg) {
            problems.push(format!("{name} figure {k}: {p}"));
        }
    }
    if name.ends_with(".html") {
        for p in table_problems(text) {
            problems.push(format!("{name}: {p}"));
        }
        // Ids are unique across the page's figures.
        let mut ids: Vec<&str> = figures
            .iter()
            .filter_map(|s| attr(&s[..s.find('>').unwrap_or(0)], "aria-labelledby"))
            .collect();
        let all = ids.len();
        ids.sort_unstable();
        ids.dedup();
        if ids.len() != all {
            problems.push(format!("{name}: {} figures share ids", all - ids.len()));
        }
    }
    figures.len()
}

#[test]
fn every_palette_colour_reaches_three_to_one() {
    for c in COLOURS {
        let r = contrast(c, BACKGROUND).unwrap();
        assert!(r >= MIN_CONTRAST, "{c}: {r:.2}");
    }
}

#[test]
fn every_report_figure_and_page_is_accessible() {
    let mut problems = Vec::new();
    let mut figures = 0;
    // What `lab reports` writes now.
    for (name, text) in crate::shared::files() {
        if name.ends_with(".svg") || name.ends_with(".html") {
            figures += check(name, text, &mut problems);
        }
    }
    assert!(figures >= 10, "{figures} figures");
    // What is checked in, `make replay`'s plots included.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("reports");
    let mut on_disk = 0;
    for dir in [root.clone(), root.join("replay")] {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.display().to_string();
            if name.ends_with(".svg") || name.ends_with(".html") {
                on_disk += check(
                    &name,
                    &std::fs::read_to_string(&path).unwrap(),
                    &mut problems,
                );
            }
        }
    }
    assert!(on_disk >= figures, "{on_disk} figures on disk");
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn the_replay_plots_and_page_of_a_session_are_accessible() {
    let dir = tempfile::tempdir().unwrap();
    let session = common::write(
        dir.path(),
        "generated.json",
        &serde_json::to_string(&ctxlab::reports::frontier::session()).unwrap(),
    );
    let s = session.to_str().unwrap();
    let out = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
    let runs: [&[&str]; 3] = [
        &["replay", s, "--plot", &out("sizes.svg")],
        &[
            "replay",
            s,
            "--policy",
            "none,prototype,swe-agent-mask-5",
            "--cost",
            "--plot",
            &out("dollars.svg"),
        ],
        &[
            "replay",
            s,
            "--policy",
            "none,prototype,swe-agent-mask-5",
            "--retention",
            "--cost",
            "--html",
            &out("page.html"),
        ],
    ];
    for args in runs {
        let (code, _, err) = common::lab(args);
        assert_eq!(code, 0, "{args:?}: {err}");
    }
    let mut problems = Vec::new();
    let mut figures = 0;
    for n in ["sizes.svg", "dollars.svg", "page.html"] {
        figures += check(n, &std::fs::read_to_string(out(n)).unwrap(), &mut problems);
    }
    assert!(figures >= 4, "{figures} figures");
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn the_checks_catch_an_unnamed_figure_a_faint_colour_and_a_bare_table() {
    let bare = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"1\" height=\"1\">\n\
                <path data-style=\"x\" stroke=\"#E69F00\" d=\"M0 0\"/>\n</svg>";
    let p = svg_problems(bare);
    assert_eq!(p.len(), 3, "{p:#?}");
    assert!(p[2].contains("#E69F00"), "{p:#?}");
    let p = table_problems("<table>\n<tr><th>a</th><th scope=\"col\">b</th></tr></table>");
    assert_eq!(
        p,
        [
            "table 0: no caption",
            "table 0: 1 header cells without scope"
        ]
    );
}
