//! The shell examples of README.md and GUIDE.md leave no files in the
//! checkout: every file an example writes (a `>` redirect, `--out`, `--plot`,
//! `--write`) goes to a temp dir, or is one of the generated files the
//! repository keeps (GUIDE.md's tables, `reports/`, `scenarios/hunt/`).

use std::path::Path;

/// Generated outputs that belong in the checkout.
const KEPT: &[&str] = &["GUIDE.md", "reports/", "scenarios/hunt/"];

/// The shell lines of the ```sh blocks of a Markdown text, comments cut.
fn shell_lines(md: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in md.lines() {
        let t = line.trim_start();
        if t.starts_with("```") {
            inside = !inside && t.trim_start_matches('`').trim() == "sh";
            continue;
        }
        if inside {
            let code = line.split(" #").next().unwrap_or_default().trim();
            if !code.is_empty() && !code.starts_with('#') {
                out.push(code.to_string());
            }
        }
    }
    out
}

/// Every file a line writes, by redirect or output flag.
fn written(line: &str) -> Vec<String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        let target = match *w {
            ">" | ">>" | "--out" | "--plot" | "--html" | "--write" => words.get(i + 1).copied(),
            w if w.starts_with('>') && w.len() > 1 && !w.starts_with(">&") => {
                Some(w.trim_start_matches('>'))
            }
            w => w
                .strip_prefix("--out=")
                .or_else(|| w.strip_prefix("--plot=")),
        };
        if let Some(t) = target {
            out.push(t.trim_end_matches(';').to_string());
        }
    }
    out
}

/// The written files of a Markdown text that land in the checkout.
fn leaks(md: &str) -> Vec<String> {
    shell_lines(md)
        .iter()
        .flat_map(|l| written(l))
        .filter(|t| {
            let t = t.trim_matches('"');
            let scratch =
                t.starts_with("$tmp") || t.starts_with("$(mktemp") || t.starts_with("/dev/null");
            !scratch && !KEPT.iter().any(|k| t.starts_with(k))
        })
        .collect()
}

/// The documents whose examples are checked: the user's README and the guide.
const DOCS: &[&str] = &["README.md", "GUIDE.md"];

#[test]
fn readme_examples_write_only_to_temp_dirs_or_kept_outputs() {
    for doc in DOCS {
        let md = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(doc)).unwrap();
        // Both files show a plot example: without one the check would see no
        // example at all (a fence renamed, say) and pass vacuously.
        assert!(
            shell_lines(&md).iter().any(|l| l.contains("--plot")),
            "the check sees the examples of {doc}"
        );
        let bad = leaks(&md);
        assert!(
            bad.is_empty(),
            "{doc} examples write into the checkout: {bad:?}"
        );
    }
}

#[test]
fn the_check_finds_redirects_and_output_flags() {
    let md = "text\n```sh\nlab sweep > s0.json; lab x --plot out.svg  # c\nlab y >\"$tmp/a\"\nlab readme --write GUIDE.md\n```\n\n```text\nlab z > ignored.txt\n```\n";
    assert_eq!(leaks(md), vec!["s0.json", "out.svg"]);
}
