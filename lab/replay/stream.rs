//! Policy replays of a corpus, streamed: each session is imported, replayed
//! under every policy, written out (a JSON Lines record per policy, or with
//! `--per-session` its own tables) and dropped before the next is read, so
//! memory holds one session's runs plus the aggregates' per-session numbers
//! ([`super::aggregate`]). By default only the aggregate table is printed.

use std::io::Write;

use super::aggregate::{self, Aggregate, SessionRecord};
use super::policies::{expand_names, replay_session, Compared, Measure};
use crate::error::{LabError, LabResult};
use crate::import::corpus::{Input, Item};
use crate::import::{ImportOptions, TranscriptFormat};
use crate::render::Format;

/// `lab replay --format`: the lab's formats plus JSON Lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReplayFormat {
    /// A terminal table.
    Table,
    /// GitHub-flavoured Markdown.
    Markdown,
    /// Pretty JSON: one object, `runs`, `retention`, `cost`, `recorded`, `aggregate`.
    Json,
    /// JSON Lines, streamed: one record per session × policy (`--policy` only).
    Jsonl,
}

/// The table format of a replay and whether it streams JSON Lines;
/// JSON Lines is for `--policy` replays only.
pub fn check_format(f: ReplayFormat, policy: bool) -> LabResult<(Format, bool)> {
    Ok(match f {
        ReplayFormat::Table => (Format::Table, false),
        ReplayFormat::Markdown => (Format::Markdown, false),
        ReplayFormat::Json => (Format::Json, false),
        ReplayFormat::Jsonl if policy => (Format::Json, true),
        ReplayFormat::Jsonl => {
            return Err(LabError::usage(
                "--format jsonl streams policy replays only",
                "replay with --policy NAME, or use --format json",
            ))
        }
    })
}

/// Whether the inputs hold many sessions: a directory, glob or archive, or
/// a trajectory array (one session per trajectory).
pub fn is_corpus(inputs: &[Input], import: &ImportOptions) -> LabResult<bool> {
    for input in inputs {
        if input.corpus {
            return Ok(true);
        }
        for item in &input.items {
            match item {
                Item::Archive(..) => return Ok(true),
                Item::File(path) => {
                    let format = match import.format {
                        Some(f) => f,
                        None => crate::import::detect_format(path, &super::policies::head(path)?),
                    };
                    if format == TranscriptFormat::Trajectories {
                        return Ok(true);
                    }
                }
            }
        }
    }
    Ok(false)
}

/// What a streamed replay prints.
#[derive(Debug, Clone, Copy)]
pub struct Streamed {
    /// Table format of the aggregate and per-session tables.
    pub format: Format,
    /// One JSON record per session × policy instead of tables.
    pub jsonl: bool,
    /// Each session's own tables, then the aggregate.
    pub per_session: bool,
}

/// Replay every session of `inputs` under every policy named, writing to
/// `out` as it goes; the aggregate (unless JSON Lines) at the end. Returns
/// the aggregate, for the distribution plot.
pub fn run(
    inputs: &[Input],
    names: &[String],
    path_len: usize,
    import: &ImportOptions,
    measure: &Measure,
    how: Streamed,
    out: &mut dyn Write,
) -> LabResult<Aggregate> {
    if how.per_session && how.format == Format::Json && !how.jsonl {
        return Err(LabError::usage(
            "--per-session with --format json would hold every run of the corpus",
            "use --format jsonl (one record per session and policy, streamed)",
        ));
    }
    let names = expand_names(names);
    for n in &names {
        crate::policy::list::make(n)?;
    }
    let mut agg = Aggregate::default();
    let mut skipped = 0;
    let mut taken = Vec::new();
    for item in inputs.iter().flat_map(|i| &i.items) {
        crate::import::corpus::for_each_member(item, import, false, |member| {
            let sessions = match member.sessions {
                Ok(s) => s,
                Err(e) => {
                    eprintln!(
                        "skipped {}: {}",
                        member.name,
                        crate::import::corpus::not_a_session(&e)
                    );
                    skipped += 1;
                    return Ok(());
                }
            };
            for s in sessions {
                // The same per-session replay as named files get: the
                // envelope, the product's artefacts removed, dumps.
                let one = replay_session(&s, &names, path_len, measure, &mut taken)?;
                emit(&one.runs, &mut agg, how, out)?;
            }
            Ok(())
        })?;
    }
    if how.jsonl {
        return Ok(agg);
    }
    let rows = agg.rows();
    let text = if how.format == Format::Json {
        crate::render::json(&serde_json::json!({
            "runs": [], "retention": [], "cost": [], "recorded": [],
            "envelopes": [], "product_compactions": [], "aggregate": rows,
        }))
    } else {
        aggregate::table(&agg, how.format == Format::Markdown, skipped)
    };
    write(out, &text)?;
    Ok(agg)
}

/// One session's runs: counted, and written as records or tables.
fn emit(
    runs: &[Compared],
    agg: &mut Aggregate,
    how: Streamed,
    out: &mut dyn Write,
) -> LabResult<()> {
    for c in runs {
        let record = SessionRecord::of(&c.run, c.cost.as_ref(), c.retention.as_ref());
        if how.jsonl {
            let line = serde_json::to_string(&record).expect("records serialise");
            write(out, &format!("{line}\n"))?;
        }
        agg.add(&record);
    }
    if how.per_session && !how.jsonl {
        write(out, &super::policies::render(runs, how.format))?;
        write(out, "\n")?;
    }
    Ok(())
}

fn write(out: &mut dyn Write, text: &str) -> LabResult<()> {
    out.write_all(text.as_bytes())
        .map_err(|e| LabError::io("writing the output", std::path::Path::new("<stdout>"), e))
}
