//! `lab replay FILE… --policy …` and `lab replay --merge` as a whole: the
//! inputs expanded, a corpus streamed or the named sessions replayed, and
//! what is printed and written (plot, HTML, OTLP spans) as the outputs say.

use std::path::PathBuf;

use crate::error::{LabError, LabResult};
use crate::replay::observe::otel;
use crate::replay::render::dollars::{policy_costs, write_plot_titled};
use crate::replay::render::{distribution, dollars, frontier_plot, html};
use crate::replay::runs::policies::Measure;
use crate::replay::runs::{merge, optimal, policies, stream};

/// What a policy replay writes besides what it prints, and on how many
/// threads it runs.
#[derive(Debug, Clone, Default)]
pub struct Outputs {
    /// `--plot FILE`: the cumulative-dollars plot.
    pub plot: Option<PathBuf>,
    /// `--html FILE`: the HTML report.
    pub html: Option<PathBuf>,
    /// `--otel FILE`: every run as OTLP/JSON spans ([`otel`]).
    pub otel: Option<PathBuf>,
    /// `--format jsonl`: one record per session × policy, streamed.
    pub jsonl: bool,
    /// `--per-session`: a corpus prints each session's tables too.
    pub per_session: bool,
    /// `--jobs`: worker threads (a corpus's sessions, or each named
    /// session's policies); 0 or 1 runs on the calling thread. The output
    /// is the same bytes for every number.
    pub jobs: usize,
    /// `--shard i/n`: replay the sessions whose key hashes to shard `i` of
    /// `n`, as a part for `--merge` (`--format json`).
    pub shard: Option<crate::shard::Shard>,
    /// `--optimal`: each session's cheapest schedule and every run's regret.
    pub optimal: Option<optimal::OptimalArgs>,
}

/// `lab replay FILE… --policy …`: every file under every policy, rendered;
/// when priced, the recorded usage of Claude Code logs beside the
/// prediction; the plot and the HTML report written where `outputs` says.
pub fn replay_command(
    files: &[PathBuf],
    names: &[String],
    path_len: usize,
    import: &crate::import::ImportOptions,
    measure: Measure,
    outputs: Outputs,
    format: crate::render::Format,
) -> LabResult<String> {
    // The command line before the inputs: a mistyped policy is named
    // before a directory is walked or a file opened.
    let specs = policies::checked_specs(names)?;
    let inputs = crate::import::corpus::expand(files)?;
    if outputs.shard.is_some() && (format != crate::render::Format::Json || outputs.jsonl) {
        return Err(LabError::usage(
            "--shard writes a part for `lab replay --merge`, which reads JSON",
            "add --format json (e.g. lab replay CORPUS --policy all --shard 0/4 --format json > part0.json)",
        ));
    }
    // A shard is a part of a corpus, whatever the inputs are.
    if outputs.jsonl || outputs.shard.is_some() || stream::is_corpus(&inputs, import)? {
        if measure.closed_loop.is_some() {
            // The streamed records and the corpus aggregate have no place
            // for the closed-loop rows yet: refused rather than dropped.
            return Err(LabError::usage(
                "--closed-loop replays named session files, not a corpus or a --format jsonl stream",
                "replay the session files themselves (e.g. lab replay a.jsonl --policy all --closed-loop --cost)",
            ));
        }
        if outputs.optimal.is_some() {
            return Err(LabError::usage(
                "--optimal schedules named session files, not a corpus or a --format jsonl stream",
                "replay the session files themselves (e.g. lab replay a.jsonl --optimal --cost)",
            ));
        }
        return stream_corpus(&inputs, names, path_len, import, &measure, &outputs, format);
    }
    let files = &crate::import::corpus::plain_files(files)?;
    let trace = outputs.otel.is_some();
    let (out, sessions, traced) = policies::replay_files_traced(
        files,
        &specs,
        path_len,
        import,
        &measure,
        outputs.jobs,
        trace,
    )?;
    if let Some(path) = &outputs.otel {
        let runs: Vec<otel::TracedRun<'_>> = out
            .iter()
            .map(|c| otel::TracedRun {
                run: &c.run,
                cost: c.cost.as_ref(),
            })
            .collect();
        otel::write(path, &runs, &traced)?;
    }
    // Each caption says which anchor the runs used.
    let anchor = measure.anchor.anchor.label();
    // The plot draws a log's subagents together; the table under the
    // text output gives each one.
    let mut subagents = String::new();
    if let Some(path) = outputs.plot {
        let title = format!("lab replay --policy … --cost; {anchor}");
        write_plot_titled(&path, &out, &title)?;
        if format != crate::render::Format::Json {
            subagents = dollars::subagent_table(
                &policy_costs(&out),
                format == crate::render::Format::Markdown,
            );
        }
    }
    if let Some(path) = outputs.html {
        let scored = frontier_plot::scored(&out);
        let title = format!("lab replay --policy … --html; {anchor}");
        html::write(&path, &out, &scored, &sessions, &title)?;
    }
    let optimal = match outputs.optimal {
        Some(args) => optimal::compute(files, import, &measure, args, &out)?,
        None => crate::optimal::render::OptimalPart::default(),
    };
    let mut text = policies::render_optimal(&out, &sessions.recorded, &sessions, &optimal, format);
    if !subagents.is_empty() {
        text.push('\n');
        text.push_str(&subagents);
    }
    Ok(text)
}

/// A corpus (or `--format jsonl`): streamed to stdout, one session at a
/// time; `--plot` draws the distribution of each policy's session costs;
/// the HTML report draws one session's runs and is refused here.
fn stream_corpus(
    inputs: &[crate::import::corpus::Input],
    names: &[String],
    path_len: usize,
    import: &crate::import::ImportOptions,
    measure: &Measure,
    outputs: &Outputs,
    format: crate::render::Format,
) -> LabResult<String> {
    if outputs.otel.is_some() {
        return Err(LabError::usage(
            "--otel traces the runs of named session files, not of a corpus or a --format jsonl stream",
            "replay the session files themselves (e.g. lab replay a.jsonl b.jsonl --policy all --otel trace.json)",
        ));
    }
    if outputs.html.is_some() {
        return Err(LabError::usage(
            "--html draws the runs of named session files, not of a corpus or a --format jsonl stream",
            "replay the session files themselves (e.g. lab replay a.json b.json --policy … --html r.html)",
        ));
    }
    let how = stream::Streamed {
        format,
        jsonl: outputs.jsonl,
        per_session: outputs.per_session,
        jobs: outputs.jobs,
        shard: outputs.shard,
    };
    let mut stdout = std::io::stdout().lock();
    let agg = stream::run(inputs, names, path_len, import, measure, how, &mut stdout)?;
    if let Some(path) = &outputs.plot {
        // A corpus is drawn as distributions: per policy, the cost of its sessions.
        // The caption names what priced the sessions, as the named-file
        // dollars plot does: the sheet and its date, or each session's own
        // model (the default without --sheet), the cache model, the counter.
        let priced = measure.pricing.as_ref().map_or_else(
            || "not priced".to_string(),
            |p| {
                let sheet = if p.by_model {
                    format!(
                        "each session's model ({} as of {} where a log names none)",
                        p.sheet.name, p.sheet.date
                    )
                } else {
                    format!("{} as of {}", p.sheet.name, p.sheet.date)
                };
                format!("prices {sheet}, cache {}", p.provider.name())
            },
        );
        let title = format!(
            "lab replay CORPUS --policy … --cost --plot; {priced}, tokenizer {}; {}",
            measure.tokens.counter().name(),
            measure.anchor.anchor.label()
        );
        let svg = distribution::ecdf_svg(&agg, &title).ok_or_else(|| {
            LabError::usage(
                "--plot draws session costs and no session was priced",
                "add --cost",
            )
        })?;
        crate::storage::root::cleanup::write_replacing(path, svg.as_bytes())
            .map_err(|e| LabError::io("writing the plot", path, e))?;
    }
    Ok(String::new())
}

/// `lab replay --merge FILE… [--out FILE]`: the parts of a sharded corpus
/// replay put back together, streamed ([`merge`]) as the whole run prints
/// (the aggregate table, its JSON, or with `--format jsonl` every record in
/// corpus order), to stdout or, whole or not at all, to `out`.
pub fn merge_command(
    files: &[PathBuf],
    format: crate::render::Format,
    jsonl: bool,
    out: Option<&std::path::Path>,
) -> LabResult<String> {
    let how = match (jsonl, format) {
        (true, _) => merge::MergeFormat::Jsonl,
        (false, crate::render::Format::Json) => merge::MergeFormat::Json,
        (false, f) => merge::MergeFormat::Table(f == crate::render::Format::Markdown),
    };
    match out {
        None => {
            let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
            merge::merge(files, how, &mut stdout)?;
            std::io::Write::flush(&mut stdout)
                .map_err(|e| LabError::io("writing the output", "<stdout>", e))?;
        }
        Some(path) => {
            let mut file = crate::storage::root::cleanup::ReplacingFile::create(path)
                .map_err(|e| LabError::io("creating the merged output", path, e))?;
            merge::merge(files, how, &mut file)?;
            file.commit()
                .map_err(|e| LabError::io("writing the merged output", path, e))?;
        }
    }
    Ok(String::new())
}
