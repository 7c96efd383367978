//! Comments and doc comments say what the code does, not which tracker entry
//! asked for it: an "issue 5, phase 2" means nothing to a reader of the code
//! and goes stale when the tracker moves.

use std::path::Path;

/// Every `issue N` / `#N` citation in a comment line, as `file:line`.
fn citations(path_label: &str, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        // Links to upstream projects' trackers are sources, not citations of
        // this project's issues; drop URLs before looking for a comment.
        let line: String = line
            .split(' ')
            .map(|w| if w.contains("://") { "" } else { w })
            .collect::<Vec<_>>()
            .join(" ");
        let Some(at) = line.find("//") else { continue };
        let comment = line[at..].to_lowercase();
        let words: Vec<&str> = comment
            .split(|c: char| !c.is_alphanumeric() && c != '#')
            .collect();
        let cites = words.windows(2).any(|w| {
            matches!(w[0], "issue" | "issues")
                && w[1].trim_start_matches('#').parse::<u32>().is_ok()
        }) || words.iter().any(|w| {
            w.strip_prefix('#')
                .is_some_and(|d| d.parse::<u32>().is_ok())
        });
        if cites {
            out.push(format!("{path_label}:{}", n + 1));
        }
    }
    out
}

fn walk(dir: &Path, out: &mut Vec<String>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.extend(citations(
                &p.display().to_string(),
                &std::fs::read_to_string(&p).unwrap(),
            ));
        }
    }
}

#[test]
fn no_comment_under_lab_cites_an_issue_number() {
    let mut found = Vec::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("lab"),
        &mut found,
    );
    assert!(
        found.is_empty(),
        "comments citing issue numbers (say what the code does instead):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_sees_the_citation_forms() {
    assert_eq!(
        citations("f", "//! Importers (issue 5).\nfn x() {} // see #12\n"),
        vec!["f:1", "f:2"]
    );
    assert!(citations(
        "f",
        "//! Issues are files; 5 issues of tool pairs.\nlet s = \"issue 5\";"
    )
    .is_empty());
}
