//! The verdicts of `lab check` as JUnit XML: one test suite per check file,
//! one test case per expectation × session × policy, a `<failure>` for a
//! miss. CI systems (GitHub Actions reporters, GitLab, Jenkins) read it.

use std::path::Path;

use super::CheckVerdict;

/// `text` escaped for XML attributes and text.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 has no place for other control characters.
            c if c.is_control() && !matches!(c, '\n' | '\t') => {
                out.push_str(&format!("\\u{{{:x}}}", c as u32))
            }
            c => out.push(c),
        }
    }
    out
}

/// The JUnit document.
pub fn render(check: &Path, verdicts: &[CheckVerdict]) -> String {
    let failures = verdicts.iter().filter(|v| !v.holds).count();
    let name = escape(&super::short(check));
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    s.push_str(&format!(
        "<testsuites name=\"ctxlab check\" tests=\"{}\" failures=\"{failures}\">\n",
        verdicts.len()
    ));
    s.push_str(&format!(
        "  <testsuite name=\"{name}\" tests=\"{}\" failures=\"{failures}\">\n",
        verdicts.len()
    ));
    for v in verdicts {
        s.push_str(&format!(
            "    <testcase classname=\"{}.{}\" name=\"{}\"",
            escape(&v.session),
            escape(&v.policy),
            escape(&v.expect)
        ));
        if v.holds {
            s.push_str("/>\n");
        } else {
            s.push_str(&format!(
                ">\n      <failure message=\"{}\"/>\n    </testcase>\n",
                escape(&v.miss_line())
            ));
        }
    }
    s.push_str("  </testsuite>\n</testsuites>\n");
    s
}
