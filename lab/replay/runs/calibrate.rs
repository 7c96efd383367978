//! `lab calibrate DIR`: the closed loop's predicted re-fetches against what
//! agents really did after their product compacted.
//!
//! Every real compaction a log records (`real_compactions`: Claude Code's
//! summaries, Pi's compaction entries, any product the importer knows) is
//! ground truth. After it, the recorded agent had only what the product
//! kept, and the log shows what it used again: the **observed** re-fetches
//! are the demands ([`crate::import::demands`]) whose use is in the
//! [`WINDOW`] calls after the compaction and whose source came before it.
//! The **predicted** ones are the demands in the same calls for which the
//! product's own port, replayed closed-loop on the whole session (the
//! product's summaries taken out), inserted a recovery call or a re-fetch.
//! Precision and recall are over the listed pairs, per compaction and in
//! total, printed as computed.
//!
//! The port is replayed under `--anchor recorded` where the log records
//! usage, so it compacts where the product did: what is calibrated is what
//! a compaction costs afterwards, not when it fires (`lab replay`'s
//! product table measures that).

use std::path::Path;

use serde::Serialize;

use crate::error::{LabError, LabResult};
use crate::message::Role;
use crate::replay::runs::policies::closed_loop::Outcome;

/// Calls after a real compaction whose demands are compared (the issue's
/// "10 calls after").
pub const WINDOW: usize = 10;

/// Precision, recall and the counts they come from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Figures {
    /// Demands the recorded agent used after the compaction whose source
    /// came before it.
    pub observed: usize,
    /// Demands in the window the port's closed loop inserted a call for.
    pub predicted: usize,
    /// Both.
    pub both: usize,
    /// Observed demands the port's closed loop counted lost.
    pub observed_lost: usize,
    /// `both / predicted`; `None` when nothing was predicted.
    pub precision: Option<f64>,
    /// `both / observed`; `None` when nothing was observed.
    pub recall: Option<f64>,
}

impl Figures {
    /// The figures of `pairs`.
    pub fn of<'a>(pairs: impl IntoIterator<Item = &'a Pair>) -> Figures {
        let mut f = Figures::default();
        for p in pairs {
            let predicted = p.predicted.inserted();
            f.observed += usize::from(p.observed);
            f.predicted += usize::from(predicted);
            f.both += usize::from(p.observed && predicted);
            f.observed_lost += usize::from(p.observed && p.predicted == Outcome::Lost);
        }
        let ratio = |n: usize, d: usize| (d > 0).then(|| n as f64 / d as f64);
        f.precision = ratio(f.both, f.predicted);
        f.recall = ratio(f.both, f.observed);
        f
    }
}

/// One real compaction.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CompactionRow {
    /// The file, under the walked directory.
    pub file: String,
    /// The session label.
    pub session: String,
    /// The compaction's index in the imported main conversation.
    pub at: usize,
    /// The index in the replayed messages (the product's summaries taken
    /// out) of the first message after it.
    pub replayed_at: usize,
    /// The product's port replayed.
    pub port: String,
    /// Calls in the window (fewer than [`WINDOW`] when the session ends).
    pub calls: usize,
    /// Its figures.
    pub figures: Figures,
}

/// One demand of a window that was observed, predicted, or both.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Pair {
    /// The session label.
    pub session: String,
    /// The compaction's index in the main conversation.
    pub compaction: usize,
    /// The demanding message (replayed index).
    pub at: usize,
    /// The source message (replayed index).
    pub source: usize,
    /// The demand's kind.
    pub kind: crate::import::demands::DemandKind,
    /// Its source came before the compaction: the recorded agent used
    /// again what the product had compacted.
    pub observed: bool,
    /// What the port's closed loop did for it.
    pub predicted: Outcome,
}

/// The whole calibration.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Calibration {
    /// Calls after each compaction compared.
    pub window: usize,
    /// The anchor the ports were replayed under.
    pub anchor: String,
    /// Every real compaction found, in file order.
    pub compactions: Vec<CompactionRow>,
    /// The figures over every pair.
    pub total: Figures,
    /// Every pair, by compaction.
    pub pairs: Vec<Pair>,
    /// Files under the directory that are not transcripts (or archives,
    /// not walked), with why.
    pub not_read: Vec<String>,
}

/// How the port is replayed: as `lab replay FILE --policy P --closed-loop
/// --anchor recorded`.
fn measure() -> crate::replay::runs::policies::Measure {
    crate::replay::runs::policies::Measure {
        anchor: crate::replay::input::anchor::AnchorArg {
            anchor: crate::replay::input::anchor::Anchor::Recorded,
            // Not named: a session with no recorded usage is replayed
            // unanchored rather than refused.
            given: false,
        },
        closed_loop: Some(Default::default()),
        ..Default::default()
    }
}

/// Calibrate on every transcript under `dir`.
pub fn calibrate(dir: &Path) -> LabResult<Calibration> {
    if !dir.is_dir() {
        return Err(LabError::usage(
            format!("{} is not a directory", dir.display()),
            "pass the directory of shared transcripts (e.g. lab calibrate ../shared/transcripts)",
        ));
    }
    let input = crate::import::corpus::expand(&[dir.to_path_buf()])?;
    let measure = measure();
    let import = crate::import::ImportOptions::default();
    let mut out = Calibration {
        window: WINDOW,
        anchor: "recorded where the log records usage, else none".into(),
        compactions: Vec::new(),
        total: Figures::default(),
        pairs: Vec::new(),
        not_read: Vec::new(),
    };
    for item in input.into_iter().flat_map(|i| i.items) {
        let path = match item {
            crate::import::corpus::Item::File(p) => p,
            crate::import::corpus::Item::Archive(p, _) => {
                out.not_read.push(format!(
                    "{}: an archive (a corpus), not walked",
                    rel(dir, &p)
                ));
                continue;
            }
            // Calibration walks session files; a dataset, like an
            // archive, is listed as not walked.
            crate::import::corpus::Item::Parquet(p) => {
                out.not_read.push(format!(
                    "{}: a Parquet dataset (a corpus), not walked",
                    rel(dir, &p)
                ));
                continue;
            }
        };
        let sessions = match crate::replay::input::subagents::replayed_sessions(
            &path,
            &import,
            measure.conversations,
            measure.envelope,
            measure.tokens,
            measure.anchor,
        ) {
            Ok(s) => s,
            Err(e @ LabError::Input { .. }) => {
                let first = e.parts().0.lines().next().unwrap_or("").to_string();
                out.not_read
                    .push(format!("{}: not a transcript ({first})", rel(dir, &path)));
                continue;
            }
            Err(e) => return Err(e),
        };
        for s in sessions {
            session(&rel(dir, &path), s, &measure, &mut out)?;
        }
    }
    out.total = Figures::of(&out.pairs);
    Ok(out)
}

/// `path` under `dir`, as the table names it.
fn rel(dir: &Path, path: &Path) -> String {
    path.strip_prefix(dir)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

/// One session's compactions: its port replayed closed-loop once, each
/// compaction's window compared.
fn session(
    file: &str,
    logged: crate::replay::input::subagents::LoggedSession,
    measure: &crate::replay::runs::policies::Measure,
    out: &mut Calibration,
) -> LabResult<()> {
    let crate::replay::input::subagents::LoggedSession { session, log } = logged;
    if session.real_compactions.is_empty() {
        return Ok(());
    }
    let Some(port) = crate::replay::input::envelope::session_product_policy(&session) else {
        return Ok(());
    };
    let messages = crate::import::artefacts::without_product_artefacts(&session);
    let demands = crate::import::demands::extract(&messages);
    let runs = crate::replay::runs::policies::replay_logged(
        &session,
        log,
        &[port.parse()?],
        crate::replay::runs::profiles::DEFAULT_PATH_LEN,
        measure,
        None,
        1,
    )?;
    let outcomes = runs
        .runs
        .first()
        .and_then(|c| c.closed_loop.as_ref())
        .map(|r| r.outcomes.clone())
        .unwrap_or_default();
    let artefacts = crate::import::artefacts::product_artefacts(&session);
    for &c in &session.real_compactions {
        let start = c - artefacts.iter().filter(|&&a| a < c).count();
        let calls: Vec<usize> = (start..messages.len())
            .filter(|&i| messages[i].role == Role::Assistant)
            .take(WINDOW)
            .collect();
        let pairs: Vec<Pair> = demands
            .iter()
            .enumerate()
            .filter(|(_, d)| calls.contains(&d.at))
            .filter_map(|(id, d)| {
                let observed = d.source < start;
                let predicted = outcomes.get(id).copied().unwrap_or(Outcome::Unchecked);
                (observed || predicted.inserted()).then(|| Pair {
                    session: session.label.clone(),
                    compaction: c,
                    at: d.at,
                    source: d.source,
                    kind: d.kind,
                    observed,
                    predicted,
                })
            })
            .collect();
        out.compactions.push(CompactionRow {
            file: file.to_string(),
            session: session.label.clone(),
            at: c,
            replayed_at: start,
            port: port.to_string(),
            calls: calls.len(),
            figures: Figures::of(&pairs),
        });
        out.pairs.extend(pairs);
    }
    Ok(())
}

/// A share as a cell: three decimals, `-` when undefined.
fn share(x: Option<f64>) -> String {
    x.map_or("-".into(), |x| format!("{x:.3}"))
}

/// The calibration as tables (`Format::Json`: the struct).
pub fn render(c: &Calibration, format: crate::render::Format) -> String {
    if format == crate::render::Format::Json {
        return serde_json::to_string_pretty(c).unwrap_or_default() + "\n";
    }
    let md = format == crate::render::Format::Markdown;
    let figures = |f: &Figures| {
        vec![
            f.observed.to_string(),
            f.predicted.to_string(),
            f.both.to_string(),
            f.observed_lost.to_string(),
            share(f.precision),
            share(f.recall),
        ]
    };
    let head = [
        "file",
        "compaction (message)",
        "port",
        "calls after",
        "observed",
        "predicted",
        "both",
        "observed, lost by the port",
        "precision",
        "recall",
    ];
    let mut body: Vec<Vec<String>> = c
        .compactions
        .iter()
        .map(|r| {
            let mut row = vec![
                r.file.clone(),
                r.at.to_string(),
                r.port.clone(),
                r.calls.to_string(),
            ];
            row.extend(figures(&r.figures));
            row
        })
        .collect();
    let mut total = vec![
        "total".to_string(),
        format!("{} compactions", c.compactions.len()),
        String::new(),
        c.compactions
            .iter()
            .map(|r| r.calls)
            .sum::<usize>()
            .to_string(),
    ];
    total.extend(figures(&c.total));
    body.push(total);
    let mut s = String::new();
    if md {
        s.push_str(
            "# Closed-loop calibration: predicted against observed re-fetches after real compactions\n\n\
             Written by `make calibration` (`lab calibrate ../shared/transcripts --format markdown`); \
             `tests/replay/calibration.rs` recomputes it from the shared transcripts. Do not edit by hand.\n\n",
        );
    }
    s.push_str(&crate::render::table(&head, body, md));
    s.push_str(&format!(
        "\nObserved: demands (lab import --demands, an estimate) used in the {} calls after a real \
         compaction whose source came before it. Predicted: demands in those calls for which the \
         product's port, replayed closed-loop (anchor {}), inserted a recovery call or a re-fetch. \
         precision = both / predicted, recall = both / observed; - where the denominator is 0.\n",
        c.window, c.anchor
    ));
    s.push_str(if md { "\n## Pairs\n\n" } else { "\nPairs\n" });
    let head = [
        "session",
        "compaction",
        "demand at",
        "source",
        "kind",
        "observed",
        "port's closed loop",
    ];
    let body = c
        .pairs
        .iter()
        .map(|p| {
            vec![
                p.session.clone(),
                p.compaction.to_string(),
                p.at.to_string(),
                p.source.to_string(),
                p.kind.name().to_string(),
                if p.observed { "yes" } else { "no" }.to_string(),
                p.predicted.name().to_string(),
            ]
        })
        .collect();
    s.push_str(&crate::render::table(&head, body, md));
    if !c.not_read.is_empty() {
        s.push_str(if md {
            "\n## Not read\n\n"
        } else {
            "\nNot read\n"
        });
        for n in &c.not_read {
            s.push_str(&format!("- {n}\n"));
        }
    }
    s
}

/// The JSON Schema of `lab calibrate --format json`.
pub fn schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(Calibration)).unwrap_or_default()
}

/// `lab calibrate DIR`.
pub fn command(dir: &Path, format: crate::render::Format) -> LabResult<String> {
    Ok(render(&calibrate(dir)?, format))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(observed: bool, predicted: Outcome) -> Pair {
        Pair {
            session: "s".into(),
            compaction: 3,
            at: 9,
            source: 1,
            kind: crate::import::demands::DemandKind::Reread,
            observed,
            predicted,
        }
    }

    #[test]
    fn figures_count_pairs_and_leave_empty_ratios_undefined() {
        let pairs = [
            pair(true, Outcome::Refetch),
            pair(true, Outcome::InRequest),
            pair(true, Outcome::Lost),
            pair(false, Outcome::Recovery),
        ];
        let f = Figures::of(&pairs);
        assert_eq!(
            (f.observed, f.predicted, f.both, f.observed_lost),
            (3, 2, 1, 1)
        );
        assert_eq!(f.precision, Some(0.5));
        assert_eq!(f.recall, Some(1.0 / 3.0));
        let none = Figures::of(&[pair(false, Outcome::InRequest)]);
        assert_eq!((none.precision, none.recall), (None, None));
    }
}
