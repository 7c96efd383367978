//! The deterministic parts of Hermes Agent's lean compaction, rewritten from
//! upstream's `agent/context_compressor.py` (see the policy module doc):
//! the recovery stub of a demoted tail tool result, and the three sections
//! appended to every summary (anchor index, verbatim user messages,
//! recovery footer). Strings are byte for byte; lengths are Python's, in
//! code points.

use std::sync::OnceLock;

use regex::Regex;

/// `_LEAN_USER_MESSAGES_HEADING`.
pub const USER_MESSAGES_HEADING: &str = "## User Messages (verbatim, newest first)";
/// `_LEAN_RECOVERY_HEADING`.
pub const RECOVERY_HEADING: &str = "## Context Recovery";
/// `SKILL_PRUNED_MARKER_PREFIX`: a result holding it is never demoted.
pub const SKILL_PRUNED_MARKER_PREFIX: &str = "[SKILL_PRUNED:";
/// `_LEAN_ANCHOR_HEADING`.
pub const ANCHOR_HEADING: &str = "## Anchor Index (mechanically extracted, exact)";

/// `_SYNTHETIC_USER_ROW_PREFIXES`: scaffolding user rows with no user words.
pub(crate) const SYNTHETIC_USER_ROW_PREFIXES: [&str; 9] = [
    "[System:",
    "[CONTEXT",
    "[PRIOR CONTEXT",
    "[IMPORTANT: Background",
    "[Your active task list",
    "[Planning state preserved",
    "[ASYNC DELEGATION",
    "[OUT-OF-BAND",
    "Cronjob Response:",
];

/// `_ANCHOR_NOISE`: the session owner's handles, in every upstream transcript.
pub(crate) const ANCHOR_NOISE: [&str; 2] = ["@teknium", "@teknium1"];

/// `_ANCHOR_PATTERNS`: label, pattern, per-category cap.
pub(crate) const ANCHOR_PATTERNS: [(&str, &str, usize); 7] = [
    ("PRs/issues", r"#\d{3,6}\b", 120),
    ("commits", r"\b[0-9a-f]{9,40}\b", 40),
    (
        "branches",
        r"\b(?:fix|feat|docs|refactor|chore|salvage|ent)/[A-Za-z0-9._/-]{3,60}",
        40,
    ),
    (
        "files",
        r"\b[\w./-]+/[\w.-]+\.(?:py|ts|tsx|js|rs|md|yaml|yml|json|toml|sh)\b",
        80,
    ),
    (
        "errors",
        r"\b(?:[A-Z][a-zA-Z]*Error|Exception|ENOSPC|EACCES|SIGKILL|Traceback)\b[^\n]{0,90}",
        40,
    ),
    ("handles", r"@[A-Za-z0-9-]{3,30}\b", 40),
    ("urls", r#"https?://[^\s)\"']{10,110}"#, 30),
];

fn anchor_regexes() -> &'static [Regex] {
    static RES: OnceLock<Vec<Regex>> = OnceLock::new();
    RES.get_or_init(|| {
        ANCHOR_PATTERNS
            .iter()
            .map(|(_, p, _)| Regex::new(p).expect("the upstream anchor patterns compile"))
            .collect()
    })
}

/// Python's `len(s)`.
fn py_len(s: &str) -> usize {
    s.chars().count()
}

/// Python's `s[:n]`.
fn py_head(s: &str, n: usize) -> &str {
    s.char_indices().nth(n).map_or(s, |(i, _)| &s[..i])
}

/// `f"{n:,}"`.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `_lean_recovery_stub`: the one line a demoted tail tool result becomes.
pub fn recovery_stub(tool_name: &str, content_len: usize, session_id: &str) -> String {
    let hint = if session_id.is_empty() {
        String::new()
    } else {
        format!(" Recover with session_search(query=..., session_id='{session_id}')")
    };
    let tool = if tool_name.is_empty() {
        "tool"
    } else {
        tool_name
    };
    format!(
        "[{tool} output demoted at compaction — {} chars preserved in session history.{hint}]",
        thousands(content_len)
    )
}

/// `_synthetic_user_row`.
pub fn synthetic_user_row(content: &str) -> bool {
    content.trim().is_empty()
        || SYNTHETIC_USER_ROW_PREFIXES
            .iter()
            .any(|p| content.trim_start().starts_with(p))
}

/// One row of the compacted region as upstream's sections read it: a role
/// (`user`, `assistant` or `tool`) and its string content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// `user`, `assistant` or `tool`.
    pub role: &'static str,
    /// The row's string content (may be empty).
    pub content: String,
}

/// `_build_verbatim_user_section`: the region's real user messages, newest
/// first, each cut at `max_chars`, all under `budget_chars`.
pub fn verbatim_user_section(rows: &[Row], max_chars: usize, budget_chars: usize) -> String {
    let mut collected: Vec<String> = Vec::new();
    let mut used = 0;
    for row in rows.iter().rev() {
        if row.role != "user" || synthetic_user_row(&row.content) {
            continue;
        }
        let Some(remaining) = budget_chars.checked_sub(used).filter(|r| *r > 0) else {
            break;
        };
        let mut text = row.content.trim().to_string();
        if py_len(&text) > max_chars {
            text = format!("{} …[truncated]", py_head(&text, max_chars).trim_end());
        }
        if py_len(&text) > remaining {
            text = format!("{} …[truncated]", py_head(&text, remaining).trim_end());
        }
        collected.push(format!("> {}", text.replace('\n', "\n> ")));
        used += py_len(&text);
    }
    if collected.is_empty() {
        return String::new();
    }
    format!(
        "\n\n{USER_MESSAGES_HEADING}\n{}\n(Every real user message from the compacted region, quoted verbatim. These are the user's actual words and override any paraphrase of them above.)",
        collected.join("\n\n")
    )
}

/// `_build_recovery_footer`: where the compacted messages can be searched.
pub fn recovery_footer(session_id: &str, region_len: usize) -> String {
    if session_id.is_empty() {
        return String::new();
    }
    format!(
        "\n\n{RECOVERY_HEADING}\nThe {region_len} compacted message(s) remain fully preserved in session history. If you need any detail this summary does not carry (exact command output, file contents, error text, earlier reasoning), recover it with: session_search(query='<keywords>', session_id='{session_id}') — do not guess at lost specifics when you can look them up."
    )
}

/// One category line of the anchor index: most frequent first, ties by
/// the latest match.
fn anchor_line(label: &str, re: &Regex, cap: usize, text: &str) -> Option<String> {
    // value -> (count, index of its last match, first-seen order)
    let mut seen: Vec<(String, usize, usize)> = Vec::new();
    for (n, m) in re.find_iter(text).enumerate() {
        let val = m
            .as_str()
            .trim()
            .trim_end_matches(['.', ',', ';', ':'])
            .to_string();
        if ANCHOR_NOISE.contains(&val.to_lowercase().as_str()) {
            continue;
        }
        match seen.iter_mut().find(|(v, _, _)| *v == val) {
            Some(entry) => {
                entry.1 += 1;
                entry.2 = n;
            }
            None => seen.push((val, 1, n)),
        }
    }
    if seen.is_empty() {
        return None;
    }
    seen.sort_by(|a, b| b.1.cmp(&a.1).then(b.2.cmp(&a.2)));
    let items: Vec<String> = seen
        .iter()
        .take(cap)
        .map(|(v, count, _)| {
            if *count > 1 {
                format!("{v}(x{count})")
            } else {
                v.clone()
            }
        })
        .collect();
    Some(format!("{label}: {}", items.join(", ")))
}

/// `_build_anchor_index`: exact identifiers harvested by pattern from the
/// region's string contents, under `budget_chars`.
pub fn anchor_index(rows: &[Row], budget_chars: usize) -> String {
    let text = rows
        .iter()
        .map(|r| r.content.as_str())
        .filter(|c| !c.is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    if text.is_empty() {
        return String::new();
    }
    let mut sections = Vec::new();
    let mut used = 0;
    for ((label, _, cap), re) in ANCHOR_PATTERNS.iter().zip(anchor_regexes()) {
        let Some(line) = anchor_line(label, re, *cap, &text) else {
            continue;
        };
        if used + py_len(&line) > budget_chars {
            break;
        }
        used += py_len(&line);
        sections.push(line);
    }
    if sections.is_empty() {
        return String::new();
    }
    format!(
        "\n\n{ANCHOR_HEADING}\n{}\n(Exact identifiers from the compacted region — use these verbatim, and as session_search query anchors to recover their full context.)",
        sections.join("\n")
    )
}
