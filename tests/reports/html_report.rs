//! `lab replay … --policy … --html FILE`: one self-contained page. Checked
//! without a browser (structure, nothing external, escaping, refusals,
//! nothing half-written) and in a real headless Chromium when one is
//! installed (no console error, every section renders, a screenshot under
//! target/).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::lab;
use ctxlab::replay::html::SECTIONS;

const POLICIES: &str = "none,prototype,swe-agent-mask-5,openhands-recent,langchain-summarization";

/// The generated session (planted facts and all) replayed under a few
/// policies of different families, with retention and cost, into an HTML
/// page; the session file's name holds characters HTML must escape.
fn page(dir: &Path) -> (PathBuf, String) {
    let session = common::write(
        dir,
        "gen<b>&.json",
        &serde_json::to_string_pretty(&ctxlab::reports::frontier::session()).unwrap(),
    );
    let out = dir.join("report.html");
    let (code, _, err) = lab(&[
        "replay",
        session.to_str().unwrap(),
        "--policy",
        POLICIES,
        "--retention",
        "--cost",
        "--html",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let html = std::fs::read_to_string(&out).unwrap();
    (out, html)
}

/// Elements that have no closing tag in HTML.
const VOID: [&str; 4] = ["meta", "br", "input", "hr"];

/// Every opened element is closed in order (self-closing SVG elements and
/// HTML void elements aside); script and style bodies are skipped.
fn balanced(html: &str) -> Result<(), String> {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find('<') {
        rest = &rest[i + 1..];
        if rest.starts_with('!') {
            continue;
        }
        let end = rest.find('>').ok_or("an unclosed tag")?;
        let tag = &rest[..end];
        let closing = tag.starts_with('/');
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        if closing {
            match stack.pop() {
                Some(open) if open == name => {}
                other => return Err(format!("</{name}> closes {other:?}")),
            }
        } else if !tag.ends_with('/') && !VOID.contains(&name.as_str()) {
            if name == "script" || name == "style" {
                let close = format!("</{name}>");
                let at = rest.find(&close).ok_or("an unclosed script or style")?;
                rest = &rest[at + close.len()..];
                continue;
            }
            stack.push(name);
        }
        rest = &rest[end..];
    }
    if stack.is_empty() {
        Ok(())
    } else {
        Err(format!("left open: {stack:?}"))
    }
}

/// Attribute values of `src`/`href`, `@import` and `url(` that reach out.
fn external_links(html: &str) -> Vec<String> {
    let mut out = Vec::new();
    for attr in ["src=\"", "href=\"", "src='", "href='", "url("] {
        for (i, _) in html.match_indices(attr) {
            let value = &html[i + attr.len()..];
            let value: String = value.chars().take(40).collect();
            let v = value.trim_start_matches(['"', '\'']).to_ascii_lowercase();
            if v.starts_with("http:") || v.starts_with("https:") || v.starts_with("//") {
                out.push(format!("{attr}{value}"));
            }
        }
    }
    if html.contains("@import") {
        out.push("@import".into());
    }
    if html.contains("<link") {
        out.push("<link".into());
    }
    out
}

#[test]
fn the_page_is_whole_links_nothing_and_escapes_names() {
    let dir = tempfile::tempdir().unwrap();
    let (_, html) = page(dir.path());
    assert!(html.starts_with("<!DOCTYPE html>\n<html lang=\"en\">"));
    assert!(html.contains("<meta charset=\"utf-8\">") && html.contains("<title>"));
    assert!(html.ends_with("</html>\n"));
    balanced(&html).unwrap();
    assert_eq!(external_links(&html), Vec::<String>::new());
    // Every section, in order, with its heading.
    let at: Vec<usize> = SECTIONS
        .iter()
        .map(|s| {
            html.find(&format!("<section id=\"{s}\">\n<h2>"))
                .unwrap_or_else(|| panic!("{s}"))
        })
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{at:?}");
    // The filter offers each policy's family; every policy has its rows.
    for family in ["baseline", "course", "SWE-agent", "OpenHands", "LangChain"] {
        assert!(html.contains(&format!("value=\"{family}\"")), "{family}");
    }
    for p in POLICIES.split(',') {
        assert!(
            html.contains(&format!("<summary>gen&lt;b&gt;&amp;.json · {p} · ")),
            "{p}"
        );
    }
    // Drill-down from the replay's own events; planted facts' fates.
    assert!(html.contains("summarised ") && html.contains("cleared the result of"));
    // A gone fact says which tier: re-fetchable or lost.
    assert!(
        (html.contains("class=\"gone\">gone (lost)<")
            || html.contains("class=\"gone\">gone (re-fetchable)<"))
            && html.contains("class=\"present\">present<")
    );
    // Names are escaped everywhere.
    assert!(!html.contains("gen<b>"), "a raw name reached the page");
    // Timelines: a figure per policy group present.
    assert_eq!(
        html.matches("<figure data-families=").count(),
        4,
        "four groups"
    );
}

#[test]
fn refusals_leave_nothing_half_written() {
    let dir = tempfile::tempdir().unwrap();
    let session = common::write(
        dir.path(),
        "s.json",
        &serde_json::to_string(&ctxlab::reports::frontier::session()).unwrap(),
    );
    let s = session.to_str().unwrap();
    // Without --policy there is nothing to report.
    let out = dir.path().join("r.html");
    let (code, _, err) = lab(&["replay", s, "--html", out.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--policy"), "{err}");
    // Into a missing directory: a clear error naming the flag.
    let missing = dir.path().join("no/such/r.html");
    let (code, _, err) = lab(&[
        "replay",
        s,
        "--policy",
        "none",
        "--html",
        missing.to_str().unwrap(),
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("--html"), "{err}");
    // A failing replay leaves an existing page as it was, and no temp file.
    std::fs::write(&out, "old page").unwrap();
    let (code, _, _) = lab(&[
        "replay",
        s,
        "--policy",
        "no-such-policy",
        "--html",
        out.to_str().unwrap(),
    ]);
    assert_ne!(code, 0);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "old page");
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
}

/// The first of the usual Chromium binaries on PATH.
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|b| std::env::split_paths(&path).map(move |d| d.join(b)))
        .find(|p| p.is_file())
}

fn headless(browser: &Path, extra: &[&str], url: &str) -> (String, String) {
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
        ])
        .args(["--enable-logging=stderr", "--v=0"])
        .args(extra)
        .arg(url)
        .output()
        .expect("the browser starts");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_page_renders_in_a_headless_chromium() {
    let Some(browser) = chromium() else {
        println!("SKIP: no chromium, chromium-browser or google-chrome on PATH; install one (apt-get install chromium) to run this test");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (file, _) = page(dir.path());
    let url = format!("file://{}", file.display());
    let (dom, log) = headless(&browser, &["--dump-dom"], &url);
    let body = &dom[dom.find("<body").expect("a body")..];
    let body = &body[..body.find('>').unwrap()];
    assert!(body.contains("data-errors=\"0\""), "script errors: {body}");
    for s in SECTIONS {
        assert!(body.contains(s), "section {s} did not render: {body}");
    }
    // Console messages reach stderr as CONSOLE lines; none may be an error.
    let bad: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("CONSOLE") && (l.contains("Uncaught") || l.contains("rror")))
        .collect();
    assert!(bad.is_empty(), "{bad:#?}");
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("html-report.png");
    let _ = std::fs::remove_file(&shot);
    headless(
        &browser,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1400,1000",
        ],
        &url,
    );
    let png = std::fs::read(&shot).expect("a screenshot");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{} bytes",
        png.len()
    );
    println!("screenshot: {}", shot.display());
}

/// A shared Claude Code session whose log records a real (manual)
/// compaction and its usage, and on which the `claude-code` port fires too.
const COMPACTED: &str = "claude_code/claude-code-config-73752f2f__dotclaude.jsonl";

/// The text between `open` (a prefix of a tag) and the end of its element
/// `close`, for each occurrence in `dom`.
fn elements<'a>(dom: &'a str, open: &str, close: &str) -> Vec<&'a str> {
    dom.match_indices(open)
        .map(|(i, _)| {
            let rest = &dom[i..];
            &rest[..rest.find(close).map_or(rest.len(), |e| e + close.len())]
        })
        .collect()
}

/// The cells of a table row, tags stripped.
fn cells(row: &str) -> Vec<String> {
    row.split("<td")
        .skip(1)
        .map(|c| {
            let c = &c[c.find('>').map_or(0, |e| e + 1)..];
            c[..c.find("</td>").unwrap_or(c.len())].to_string()
        })
        .collect()
}

#[test]
fn the_page_of_a_real_session_shows_the_product_in_a_headless_chromium() {
    let Some(root) = common::transcripts() else {
        println!("SKIP: no shared transcripts (set CTXLAB_TRANSCRIPTS)");
        return;
    };
    let file = root.join(COMPACTED);
    if !file.is_file() {
        println!(
            "SKIP: {} is not among the shared transcripts",
            file.display()
        );
        return;
    }
    let Some(browser) = chromium() else {
        println!("SKIP: no chromium, chromium-browser or google-chrome on PATH; install one (apt-get install chromium) to run this test");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("real.html");
    // The CLI's JSON of the same run is what the page must agree with.
    let (code, json, err) = lab(&[
        "replay",
        file.to_str().unwrap(),
        "--policy",
        "claude-code,none,prototype",
        "--tokens",
        "claude",
        "--cost",
        "--html",
        out.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    let url = format!("file://{}", out.display());
    let (dom, _) = headless(&browser, &["--dump-dom"], &url);
    assert!(dom.contains("data-errors=\"0\""), "script errors");
    // The recorded bill as a row, with the CLI's dollars.
    let billed = json["recorded"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["arm"] == "recorded-usage")
        .expect("a recorded-usage row in the CLI's output");
    let dollars = format!("{:.4}", billed["report"]["dollars"].as_f64().unwrap());
    let product_rows = elements(&dom, "<tr class=\"product\">", "</tr>");
    assert!(
        product_rows.iter().any(|r| {
            let c = cells(r);
            c[1] == "recorded-usage" && c.contains(&dollars)
        }),
        "no recorded-usage row at {dollars}: {product_rows:#?}"
    );
    // The compaction table: the CLI's call (counted from 1 on the page),
    // tokens before, the port and where it fired.
    let real = &json["product_compactions"][0];
    let call = real["call"].as_u64().unwrap() + 1;
    let rows = elements(&dom, "<tr class=\"compaction\">", "</tr>");
    assert_eq!(rows.len(), 1, "{rows:#?}");
    let c = cells(rows[0]);
    assert_eq!(c[1], call.to_string(), "{c:?}");
    assert_eq!(c[3], real["pre_tokens"].to_string(), "{c:?}");
    assert_eq!(c[5], "claude-code", "{c:?}");
    assert_eq!(
        c[6],
        (real["policy_call"].as_u64().unwrap() + 1).to_string(),
        "{c:?}"
    );
    // The marker on every timeline panel, and the context window line.
    let marker = format!("product compacted (call {call})");
    let figures = elements(&dom, "<svg", "</svg>");
    assert!(!figures.is_empty());
    for f in &figures {
        assert!(f.contains(&marker), "a timeline without the marker");
        // The marker, the window line and the product's line leave every
        // label readable.
        let p = ctxlab::plot::lint::check(f);
        assert!(p.is_empty(), "{p:#?}");
    }
    assert!(dom.contains("claude-code context window"));
    // The headline states the product's bill.
    assert!(
        dom.contains(&format!("${dollars} (prompt side) over ")),
        "the headline lacks the product's bill"
    );
    // The product's own recorded sizes as a line beside the policies'.
    assert!(dom.contains("data-label=\"the product (recorded, API tokens)\""));
    // The price sheet, its date and the tokenizer in the header.
    let sheet = &billed["report"]["sheet"];
    let basis = elements(&dom, "<p id=\"basis\">", "</p>")[0];
    for want in [
        sheet["name"].as_str().unwrap(),
        sheet["date"].as_str().unwrap(),
        "tokenizer:</strong> claude",
    ] {
        assert!(basis.contains(want), "{want} not in {basis}");
    }
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("html-report-real.png");
    let _ = std::fs::remove_file(&shot);
    headless(
        &browser,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1400,2000",
        ],
        &url,
    );
    let png = std::fs::read(&shot).expect("a screenshot");
    assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000);
    println!("screenshot: {}", shot.display());
}

/// `lab replay` of the reports' generated session under [`POLICIES`] with
/// retention and cost (and the closed loop when `closed`): its JSON and
/// its HTML page.
fn generated_page(dir: &Path, closed: bool) -> (serde_json::Value, String) {
    let session = common::write(
        dir,
        "gen.json",
        &serde_json::to_string(&ctxlab::reports::frontier::session()).unwrap(),
    );
    let out = dir.join(format!("r{closed}.html"));
    let mut args = vec![
        "replay",
        session.to_str().unwrap(),
        "--policy",
        POLICIES,
        "--retention",
        "--cost",
        "--html",
        out.to_str().unwrap(),
        "--format",
        "json",
    ];
    if closed {
        args.push("--closed-loop");
    }
    let json = serde_json::from_str(&common::lab_ok(&args)).unwrap();
    (json, std::fs::read_to_string(&out).unwrap())
}

/// The page's headline section.
fn headline(html: &str) -> &str {
    let head = &html[html.find("<section id=\"headline\">").unwrap()..];
    &head[..head.find("</section>").unwrap()]
}

#[test]
fn the_headline_ranks_what_the_tables_below_it_show() {
    let dir = tempfile::tempdir().unwrap();
    let (json, html) = generated_page(dir.path(), false);
    // The cheapest policy keeping every planted fact in the request, from
    // the CLI's own retention and cost.
    let all_present = |p: &str| {
        json["retention"].as_array().unwrap().iter().any(|r| {
            r["policy"] == p
                && r["retention"]["facts"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|f| f["status"] == "present")
        })
    };
    let (best, dollars) = json["cost"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| all_present(c["policy"].as_str().unwrap()))
        .map(|c| {
            (
                c["policy"].as_str().unwrap(),
                c["dollars"].as_f64().unwrap(),
            )
        })
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .expect("a policy keeps every fact");
    let recall = json["retention"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["policy"] == best)
        .and_then(|r| r["artifact_recall"].as_f64())
        .expect("the best policy's recall, in percent");
    let head = headline(&html);
    let first = &head[head.find("<li>").unwrap()..head.find("</li>").unwrap()];
    assert!(
        first.contains("keeping every planted fact in the request:</strong>")
            && first.contains(&format!("{best}: ${dollars:.4}"))
            && first.contains(&format!("artifact recall {recall:.1} %")),
        "{first}"
    );
    // The largest loss and the invalid requests are stated, and the table
    // of contents links every section by its anchor.
    assert!(
        head.contains("largest loss:") && head.contains("invalid requests:"),
        "{head}"
    );
    for s in SECTIONS {
        assert!(head.contains(&format!("href=\"#{s}\"")), "{s}");
        assert!(html.contains(&format!("<section id=\"{s}\">")), "{s}");
    }
}

/// With the closed loop, the headline's middle tier prices recovery: the
/// cheapest run meeting every demand at its closed-loop dollars (the
/// recovery calls and re-fetches a removal causes, inserted and priced),
/// not the open-loop "behind a pointer" tier, where following a pointer is
/// free. Without the closed loop that open tier stays (the control).
#[test]
fn the_headline_prices_recovery_under_the_closed_loop() {
    let dir = tempfile::tempdir().unwrap();
    let (_, open_page) = generated_page(dir.path(), false);
    let open_head = headline(&open_page);
    assert!(
        open_head.contains("in the request or behind a pointer:</strong>"),
        "{open_head}"
    );
    assert!(!open_head.contains("closed loop"), "{open_head}");

    let (json, page) = generated_page(dir.path(), true);
    let head = headline(&page);
    assert!(!head.contains("behind a pointer"), "{head}");
    // The cheapest closed-loop point with no lost demand, from the CLI's JSON.
    let rows = json["closed_loop"].as_array().expect("closed-loop rows");
    let (best, dollars) = rows
        .iter()
        .filter(|r| r["lost_demands"] == 0)
        .map(|r| {
            (
                r["policy"].as_str().unwrap(),
                r["dollars"].as_f64().unwrap(),
            )
        })
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .expect("a closed-loop run meets every demand");
    let tier = head
        .split("<li>")
        .find(|li| li.contains("its recovery paid (closed loop):</strong>"))
        .unwrap_or_else(|| panic!("no closed-loop tier: {head}"));
    assert!(
        tier.contains(&format!("{best}: ${dollars:.4} closed loop")),
        "{tier}"
    );
}

#[test]
fn the_page_fits_a_phone_and_the_filter_reaches_every_figure() {
    let dir = tempfile::tempdir().unwrap();
    let (file, html) = page(dir.path());
    // The frontier's points, tags and key entries carry their family, as
    // the timelines' figures do, so the filter hides them too.
    let frontier = &html[html.find("<section id=\"frontier\">").unwrap()..];
    for family in ["baseline", "course", "SWE-agent", "OpenHands", "LangChain"] {
        assert!(
            frontier.contains(&format!("<g data-families=\"{family}")),
            "{family}: a frontier point the filter cannot reach"
        );
    }
    // Long placeholder paths are shortened, the whole path on hover.
    assert!(
        html.contains("<span class=\"path\" title=\""),
        "no shortened path"
    );
    let Some(browser) = chromium() else {
        println!("SKIP: no chromium, chromium-browser or google-chrome on PATH; install one (apt-get install chromium) to run this test");
        return;
    };
    // Headless Chromium keeps its window at least 500 px wide: the page is
    // laid out at 390 px in a frame, and the frame's own measure of its
    // width (written by the page's script) read back.
    let frame = common::write(
        dir.path(),
        "phone.html",
        &format!(
            "<!DOCTYPE html><html><body style=\"margin:0\">\
             <iframe id=\"f\" src=\"{}\" width=\"390\" height=\"2000\" style=\"border:0\"></iframe>\
             <script>window.addEventListener('load', function () {{ var d = document.getElementById('f').contentDocument; \
             document.body.setAttribute('data-inner', d ? d.body.getAttribute('data-scroll-width') : 'blocked'); }});</script>\
             </body></html>",
            file.file_name().unwrap().to_str().unwrap()
        ),
    );
    let url = format!("file://{}", frame.display());
    let (dom, _) = headless(
        &browser,
        &[
            "--allow-file-access-from-files",
            "--window-size=500,2000",
            "--dump-dom",
        ],
        &url,
    );
    let at = dom.find("data-inner=\"").expect("the frame was measured") + "data-inner=\"".len();
    let width: u32 = dom[at..at + dom[at..].find('"').unwrap()]
        .parse()
        .unwrap_or_else(|_| panic!("{}", &dom[at..at + 40]));
    assert!(width <= 390, "the page is {width} px wide at 390");
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("html-report-390.png");
    let _ = std::fs::remove_file(&shot);
    headless(
        &browser,
        &[
            "--allow-file-access-from-files",
            "--window-size=500,2000",
            &format!("--screenshot={}", shot.display()),
        ],
        &url,
    );
    assert!(std::fs::read(&shot)
        .expect("a screenshot")
        .starts_with(b"\x89PNG"));
    println!("screenshot: {}", shot.display());
}
