//! Upstream issues the store profiles reproduce (or say why they cannot),
//! each a row with the command that reproduces it and a verdict computed
//! from a run, never written down.

use serde::Serialize;

use super::add_only::AddOnly;
use super::measures::{fault_points, FaultKind};

/// What a run says about an upstream report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum Verdict {
    /// The run shows what the issue reports: how.
    Reproduced(String),
    /// The run does not show it although the profile models it: how.
    NotReproduced(String),
    /// The profile cannot show it: what it would need.
    NotModelled(&'static str),
}

/// One upstream issue as a row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Repro {
    /// `owner/repo#N`.
    pub issue: &'static str,
    /// What the issue reports, in one line.
    pub reports: &'static str,
    /// The command that reproduces it.
    pub command: &'static str,
    /// What the run says.
    pub verdict: Verdict,
}

/// Mem0's failed inserts returned as ADD (https://github.com/mem0ai/mem0/issues/6911 ):
/// an I/O error at every storage operation of the
/// scripted sessions on the add-only profile as the SDK ships.
fn mem0_6911() -> Verdict {
    let r = fault_points(&AddOnly::default(), FaultKind::IoError);
    if r.losing_at_restart > 0 {
        Verdict::Reproduced(format!(
            "{}/{} I/O-error points: {} memories returned as ADD are not in the store",
            r.losing_at_restart, r.points, r.lost_at_restart
        ))
    } else {
        Verdict::NotReproduced(format!("0/{} I/O-error points lose an ADD", r.points))
    }
}

/// Every reproduction row.
pub fn reproductions() -> Vec<Repro> {
    vec![
        Repro {
            issue: "mem0ai/mem0#6911, #7201",
            reports: "add() returns event ADD for memories the vector store never persisted",
            command: "cargo test --test memory memory_profiles::mem0_6911",
            verdict: mem0_6911(),
        },
        Repro {
            issue: "letta-ai/letta-code#2203",
            reports: "the server rewrites the memory repository's history",
            command: "-",
            verdict: Verdict::NotModelled("a remote repository: the profile has no server and no push"),
        },
        Repro {
            issue: "openai/codex#23129",
            reports: "stage 1 succeeds but global consolidation stays pending, no summary artifact",
            command: "-",
            verdict: Verdict::NotModelled("the lease's clock: the profile assumes a killed holder's lease has lapsed at the next start-up"),
        },
        Repro {
            issue: "openai/codex#29818",
            reports: "MEMORY.md grows into a task ledger (2,450 lines, 325 KB) of near-identical learnings",
            command: "-",
            verdict: Verdict::NotModelled("semantic near-duplicates: the scripted stage 2 keeps one value per key"),
        },
    ]
}

/// The rows as a table (`lab memory-designs`).
pub fn render(rows: &[Repro], markdown: bool) -> String {
    let body = rows
        .iter()
        .map(|r| {
            let verdict = match &r.verdict {
                Verdict::Reproduced(how) => format!("reproduced: {how}"),
                Verdict::NotReproduced(how) => format!("not reproduced: {how}"),
                Verdict::NotModelled(what) => format!("not modelled: needs {what}"),
            };
            vec![
                r.issue.to_string(),
                r.reports.to_string(),
                verdict,
                r.command.to_string(),
            ]
        })
        .collect();
    crate::render::table(&["issue", "reports", "verdict", "command"], body, markdown)
}

/// What `lab memory-designs --format json` prints.
#[derive(Debug, Serialize)]
pub struct Listing {
    /// Every constant, switch and rule.
    pub rules: &'static [super::sources::Rule],
    /// The upstream issues as rows, with computed verdicts.
    pub reproductions: Vec<super::repro::Repro>,
}

/// `lab memory-designs`: every rule with its basis, then the upstream
/// issues the profiles reproduce.
pub fn listing(format: crate::render::Format) -> String {
    use crate::render::{json, table, Format};
    let reproductions = reproductions();
    if format == Format::Json {
        return json(&Listing {
            rules: super::sources::RULES,
            reproductions,
        });
    }
    let rows = super::sources::RULES
        .iter()
        .map(|r| {
            let (kind, basis) = match r.basis {
                super::sources::Basis::Source { cite } => ("source".to_string(), cite.to_string()),
                super::sources::Basis::Assumption {
                    why,
                    changes_result,
                    on_by_default,
                } => (
                    format!(
                        "assumption ({}, {})",
                        if on_by_default { "on" } else { "off" },
                        if changes_result {
                            "changes a result"
                        } else {
                            "changes no result"
                        }
                    ),
                    why.to_string(),
                ),
                super::sources::Basis::StandIn {
                    why,
                    changes_result,
                } => (
                    format!(
                        "stand-in ({})",
                        if changes_result {
                            "changes a result"
                        } else {
                            "changes no result"
                        }
                    ),
                    why.to_string(),
                ),
                super::sources::Basis::Lab { why } => {
                    ("lab parameter".to_string(), why.to_string())
                }
            };
            vec![
                r.profile.to_string(),
                r.name.to_string(),
                r.says.to_string(),
                kind,
                basis,
            ]
        })
        .collect();
    let mut s = table(
        &["profile", "rule", "says", "basis", "source or reason"],
        rows,
        format == Format::Markdown,
    );
    s.push_str("\nUpstream issues as rows:\n\n");
    s.push_str(&render(&reproductions, format == Format::Markdown));
    s.push('\n');
    s
}
