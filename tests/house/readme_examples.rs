//! The shell examples of README.md and the guide leave no files in the
//! checkout: every file an example writes (a `>` redirect, `--out`, `--plot`,
//! `--write`) goes to a temp dir, or is one of the generated files the
//! repository keeps (the guide's tables, `reports/`, `scenarios/hunt/`).

use std::path::Path;

/// Generated outputs that belong in the checkout.
const KEPT: &[&str] = &["docs/src/", "reports/", "scenarios/hunt/"];

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

/// The documents whose examples are checked: the user's README and the
/// guide (its index and every chapter, as one text).
fn docs() -> Vec<(&'static str, String)> {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    vec![("README.md", readme), ("the guide", crate::common::guide())]
}

#[test]
fn readme_examples_write_only_to_temp_dirs_or_kept_outputs() {
    for (doc, md) in docs() {
        // Both documents show a plot example: without one the check would see no
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
    let md = "text\n```sh\nlab sweep > s0.json; lab x --plot out.svg  # c\nlab y >\"$tmp/a\"\nlab readme --write docs/src/experiments.md\n```\n\n```text\nlab z > ignored.txt\n```\n";
    assert_eq!(leaks(md), vec!["s0.json", "out.svg"]);
}

/// The value after `flag` among `words`, if given.
fn flag<'a>(words: &[&'a str], flag: &str) -> Option<&'a str> {
    let at = words.iter().position(|w| *w == flag)?;
    words.get(at + 1).copied()
}

/// Every `lab sweep … --shard` example of the docs (GNU parallel's `{}` and
/// Slurm's task id read as shard 0) runs within the cell cap: the cap counts
/// the cells of a shard, so `--vary all --shard {}/8` is not refused.
#[test]
fn sharded_sweep_examples_fit_the_cell_cap() {
    use ctxlab::sweep::{parse_path_lens, parse_vary, Shard, SweepSpec, DEFAULT_PATH_LENS};
    let mut checked = 0;
    for (doc, md) in docs() {
        for line in shell_lines(&md) {
            let line = line
                .replace("{}", "0")
                .replace("\\$SLURM_ARRAY_TASK_ID", "0")
                .replace('"', " ");
            let words: Vec<&str> = line.split_whitespace().collect();
            let Some(start) = words.windows(2).position(|w| w == ["lab", "sweep"]) else {
                continue;
            };
            let words = &words[start..];
            let Some(shard) = flag(words, "--shard") else {
                continue;
            };
            let spec = SweepSpec {
                profile: flag(words, "--profile").unwrap_or("prototype").into(),
                vary: parse_vary(flag(words, "--vary").unwrap_or("order")).unwrap(),
                path_lens: parse_path_lens(flag(words, "--path-len").unwrap_or(DEFAULT_PATH_LENS))
                    .unwrap(),
                seeds: flag(words, "--seeds").map_or(1, |s| s.parse().unwrap()),
            };
            let shard = Shard::parse(shard).unwrap();
            assert!(
                spec.validate_for(Some(shard)).is_ok(),
                "{doc}: {line} is refused by the cell cap"
            );
            checked += 1;
        }
    }
    // GUIDE.md's GNU parallel and Slurm recipes, at least.
    assert!(checked >= 2, "found {checked} sharded sweep examples");
}
