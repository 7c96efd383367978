//! Tables and JSON for `lab policies` and `lab replay --policy`: pure functions
//! of policy descriptions and runs.

use serde::Serialize;

use super::engine::PolicyRun;
use super::validity::Provider;
use super::PolicyInfo;
use ctxlab_core::render::{json, table, Format};

/// The JSON type of a variant key's value, as a reader writes it after `=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyType {
    /// `true` or `false`.
    Boolean,
    /// A whole number.
    Integer,
    /// A number with a fraction.
    Number,
    /// Text (quotes optional on the command line).
    String,
    /// A JSON array (`["a","b"]`).
    Array,
    /// A JSON object.
    Object,
    /// `null` by default: an optional value, whose type the default does not show.
    Optional,
}

impl KeyType {
    fn of(v: &serde_json::Value) -> KeyType {
        use serde_json::Value;
        match v {
            Value::Bool(_) => KeyType::Boolean,
            Value::Number(n) if n.is_i64() || n.is_u64() => KeyType::Integer,
            Value::Number(_) => KeyType::Number,
            Value::String(_) => KeyType::String,
            Value::Array(_) => KeyType::Array,
            Value::Object(_) => KeyType::Object,
            Value::Null => KeyType::Optional,
        }
    }
}

/// One key a variant of a policy accepts (`NAME:KEY=VALUE`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VariantKey {
    /// The key, under its upstream name.
    pub key: String,
    /// The type its value takes.
    #[serde(rename = "type")]
    pub kind: KeyType,
    /// Its value when the variant does not set it.
    pub default: serde_json::Value,
}

/// A policy as `lab policies --format json` lists it: its description and
/// the keys a variant accepts.
#[derive(Debug, Clone, Serialize)]
pub struct Listed {
    /// What the policy says of itself.
    #[serde(flatten)]
    pub info: PolicyInfo,
    /// Every key a variant accepts, sorted, with its type and default;
    /// `constants` may list more (upstream names a variant cannot set).
    pub variant_keys: Vec<VariantKey>,
}

impl Listed {
    /// `info` with the keys of `keys` ([`super::Policy::variant_keys`]).
    pub fn new(info: PolicyInfo, keys: &super::variant::Overrides) -> Listed {
        let mut variant_keys: Vec<VariantKey> = keys
            .iter()
            .map(|(k, v)| VariantKey {
                key: k.clone(),
                kind: KeyType::of(v),
                default: v.clone(),
            })
            .collect();
        variant_keys.sort_by(|a, b| a.key.cmp(&b.key));
        Listed { info, variant_keys }
    }
}

/// Every policy with its source, constants and variant keys.
pub fn policies(listed: &[Listed], format: Format) -> String {
    if format == Format::Json {
        return json(&listed);
    }
    let rows = listed
        .iter()
        .map(|l| &l.info)
        .map(|p| {
            let approx = if p.source.approximate {
                " (approximate)"
            } else {
                ""
            };
            vec![
                p.name.clone(),
                p.family.to_string(),
                format!("{:?}", p.unit).to_lowercase(),
                format!("{}{approx}", p.source.upstream),
                p.summary.to_string(),
            ]
        })
        .collect();
    let mut s = table(
        &["policy", "family", "unit", "source", "design"],
        rows,
        format == Format::Markdown,
    );
    s.push('\n');
    s
}

/// GUIDE.md's policy table: name, family, unit, source (marked when
/// approximate) and every deliberate difference from upstream.
pub fn readme_table(infos: &[PolicyInfo]) -> String {
    // Line breaks become spaces (a difference may span lines); `|` is
    // escaped by the table itself, once.
    let cell = |s: &str| s.replace('\n', " ");
    let rows = infos
        .iter()
        .map(|p| {
            let approx = if p.source.approximate {
                " (approximate)"
            } else {
                ""
            };
            let diffs = if p.differences.is_empty() {
                "none".to_string()
            } else {
                p.differences.join("; ")
            };
            vec![
                cell(&p.name),
                cell(p.family),
                format!("{:?}", p.unit).to_lowercase(),
                cell(&format!("{}{approx}", p.source.upstream)),
                cell(&diffs),
            ]
        })
        .collect();
    let mut s = table(
        &[
            "policy",
            "family",
            "unit",
            "source",
            "deliberate differences",
        ],
        rows,
        true,
    );
    s.push('\n');
    s
}

/// The per-session numbers of a run, for tables and the JSON summary.
#[derive(Debug, Serialize)]
struct Row<'a> {
    session: &'a str,
    policy: &'a str,
    calls: usize,
    peak_chars: usize,
    final_tokens: usize,
    lost_forever: u64,
    pointer_lost: u64,
    dangling_pointers: u64,
    orphans: u64,
    invalid_anthropic: usize,
    invalid_openai: usize,
    events: usize,
    ended_by_error: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<&'a str>,
}

/// The note column: a policy with nothing to act on, then an early end
/// (the error's first line: its fix line is for the command line, and a
/// table cell would show its line break escaped; JSON keeps it whole).
fn note_cell(x: &Row<'_>) -> String {
    let ended = x
        .ended_by_error
        .map(|e| format!("ended: {}", e.lines().next().unwrap_or(e)));
    x.note
        .map(str::to_string)
        .into_iter()
        .chain(ended)
        .collect::<Vec<_>>()
        .join("; ")
}

fn invalid(run: &PolicyRun, p: Provider) -> usize {
    run.calls
        .iter()
        .filter(|c| c.violations.iter().any(|v| v.provider == p))
        .count()
}

fn row(run: &PolicyRun) -> Row<'_> {
    let f = &run.findings;
    Row {
        session: &run.session,
        policy: &run.policy,
        calls: run.calls.len(),
        peak_chars: run.peak_chars(),
        final_tokens: run.calls.last().map_or(0, |c| c.tokens),
        lost_forever: f.lost_forever.count,
        pointer_lost: f.pointer_lost.count,
        dangling_pointers: f.dangling_pointers.count,
        orphans: f.orphans.count,
        invalid_anthropic: invalid(run, Provider::Anthropic),
        invalid_openai: invalid(run, Provider::OpenAi),
        events: run.events.len(),
        ended_by_error: run.ended_by_error.as_deref(),
        note: run.note.as_deref(),
    }
}

/// Policy × session: loss counters, validity, sizes. JSON carries every run in
/// full (per-request series, events and the checker's samples).
pub fn runs(runs: &[PolicyRun], format: Format) -> String {
    if format == Format::Json {
        return json(&runs);
    }
    let rows = runs
        .iter()
        .map(|r| {
            let x = row(r);
            vec![
                x.session.to_string(),
                x.policy.to_string(),
                x.calls.to_string(),
                x.peak_chars.to_string(),
                x.final_tokens.to_string(),
                x.lost_forever.to_string(),
                x.pointer_lost.to_string(),
                x.dangling_pointers.to_string(),
                x.orphans.to_string(),
                format!("{}/{}", x.invalid_anthropic, x.invalid_openai),
                x.events.to_string(),
                note_cell(&x),
            ]
        })
        .collect();
    let mut s = table(
        &[
            "session",
            "policy",
            "calls",
            "peak chars",
            "last tokens",
            "lost",
            "ptr lost",
            "dangling",
            "orphans",
            "invalid A/O",
            "events",
            "note",
        ],
        rows,
        format == Format::Markdown,
    );
    s.push('\n');
    if let Some(r) = runs.first() {
        s.push_str(&format!(
            "\ntokens: {}; invalid A/O = requests breaking Anthropic / OpenAI rules\n",
            r.tokenizer
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Source, Unit};

    #[test]
    fn a_bar_in_a_difference_is_escaped_once_and_keeps_the_row_whole() {
        let info = PolicyInfo {
            name: "p".into(),
            family: "f",
            summary: "s".into(),
            source: Source {
                upstream: "u".into(),
                files: &[],
                license: "MIT",
                approximate: false,
            },
            constants: serde_json::Value::Null,
            unit: Unit::Chars,
            differences: vec!["a | b\nc"],
        };
        let md = readme_table(&[info]);
        let row = md.lines().find(|l| l.contains("a \\| b c")).expect(&md);
        assert!(!row.contains("\\\\|"), "{row}");
        assert_eq!(row.replace("\\|", "").matches('|').count(), 6, "{row}");
    }
}
