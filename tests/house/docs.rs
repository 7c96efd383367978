//! The guide is a book (`docs/src/`, an mdBook) with GUIDE.md as its
//! index: every chapter is in both tables of contents, every chapter but
//! the generated policy table stays under 40 KB (a reader's page, not a
//! dump), and every relative link of the book and of the top-level
//! documents names a file that exists.

use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn chapters() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(root().join("docs/src"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .filter(|p| {
            !matches!(
                p.file_name().and_then(|n| n.to_str()),
                Some("SUMMARY.md" | "README.md")
            )
        })
        .collect();
    out.sort();
    out
}

/// The relative link targets of a Markdown text (`](target)` outside code).
fn links(md: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fence = false;
    for line in md.lines() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
            continue;
        }
        if fence {
            continue;
        }
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            rest = &rest[i + 2..];
            let Some(end) = rest.find(')') else { break };
            let target = &rest[..end];
            rest = &rest[end..];
            if target.contains("://") || target.starts_with('#') || target.starts_with("mailto:") {
                continue;
            }
            out.push(target.split('#').next().unwrap_or("").to_string());
        }
    }
    out
}

#[test]
fn every_chapter_is_in_the_summary_and_the_index() {
    let summary = std::fs::read_to_string(root().join("docs/src/SUMMARY.md")).unwrap();
    let index = std::fs::read_to_string(root().join("GUIDE.md")).unwrap();
    let chapters = chapters();
    assert!(chapters.len() >= 10, "{} chapters", chapters.len());
    for c in chapters {
        let name = c.file_name().unwrap().to_str().unwrap();
        assert!(
            summary.contains(&format!("]({name})")),
            "{name} is not in docs/src/SUMMARY.md"
        );
        assert!(
            index.contains(&format!("](docs/src/{name})")),
            "{name} is not in GUIDE.md's table"
        );
    }
}

#[test]
fn chapters_stay_readable_in_size() {
    for c in chapters() {
        let name = c.file_name().unwrap().to_str().unwrap().to_string();
        let size = std::fs::metadata(&c).unwrap().len();
        // The policy table is generated, one row per policy with its
        // deliberate differences; it grows with the zoo.
        let cap = if name == "policy-table.md" {
            160_000
        } else {
            40_960
        };
        assert!(
            size <= cap,
            "docs/src/{name} is {size} bytes (cap {cap}): split it"
        );
    }
}

#[test]
fn relative_links_resolve() {
    let mut docs: Vec<PathBuf> = [
        "README.md",
        "GUIDE.md",
        "CONTRIBUTING.md",
        "ARCHITECTURE.md",
    ]
    .iter()
    .map(|d| root().join(d))
    .collect();
    docs.extend(chapters());
    docs.push(root().join("docs/src/SUMMARY.md"));
    docs.push(root().join("docs/src/README.md"));
    let mut broken = Vec::new();
    for d in &docs {
        let md = std::fs::read_to_string(d).unwrap();
        for target in links(&md) {
            if target.is_empty() {
                continue;
            }
            let p = d.parent().unwrap().join(&target);
            if !p.exists() {
                broken.push(format!(
                    "{}: {target}",
                    d.strip_prefix(root()).unwrap().display()
                ));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "links to files that do not exist: {broken:#?}"
    );
}

#[test]
fn the_link_reader_finds_links_and_skips_code() {
    let md = "see [a](x.md#y) and [b](https://e.org) [c](#z)\n```\n[d](no.md)\n```\n[e](../f.rs)";
    assert_eq!(links(md), vec!["x.md".to_string(), "../f.rs".to_string()]);
}
