//! The evidence for each way Claude Code attaches content its log does not
//! keep (`replay::unlogged::mechanisms`), counted on every shared Claude
//! Code log (the directory walked, main chains): where a message shows
//! that the product would have attached something, and for @-mentioned
//! files how many the log's text sizes (a whole Read of the same path
//! elsewhere in the log). notes/cost.md carries the table.

use crate::common;

use ctxlab::import::{import_file, ImportOptions};
use ctxlab::replay::unlogged::mechanisms::{evidence, Mechanism, Sizing};

/// Per log: the count of each mechanism (in [`Mechanism::ALL`] order), and
/// the @-mentioned files sized from a Read.
fn counts(path: &std::path::Path) -> (Vec<usize>, usize) {
    let session = import_file(path, &ImportOptions::default()).unwrap();
    let counter = ctxlab::tokens::Tokens::Claude.counter();
    let found = evidence(&session.main, counter.as_ref());
    let per = Mechanism::ALL
        .iter()
        .map(|m| found.iter().filter(|e| e.mechanism == *m).count())
        .collect();
    let sized = found
        .iter()
        .filter(|e| matches!(e.sized, Some((_, Sizing::Read))))
        .count();
    (per, sized)
}

#[test]
fn every_mechanism_is_counted_on_the_shared_logs() {
    let Some(dir) = common::transcripts() else {
        return;
    };
    let files = common::claude_code_files(&dir);
    let mut table = String::from("| log |");
    for m in Mechanism::ALL {
        table.push_str(&format!(" {} |", m.name()));
    }
    table.push_str(" @-files sized by a Read |\n|---|");
    table.push_str(&"---:|".repeat(Mechanism::ALL.len() + 1));
    table.push('\n');
    let mut totals = vec![0; Mechanism::ALL.len()];
    let mut sized_total = 0;
    for f in &files {
        let (per, sized) = counts(f);
        let name = f.file_name().unwrap().to_string_lossy();
        let name = name.split(['@', '.']).next().unwrap_or(&name).to_string();
        table.push_str(&format!("| {name} |"));
        for (t, n) in totals.iter_mut().zip(&per) {
            *t += n;
            table.push_str(&format!(" {n} |"));
        }
        table.push_str(&format!(" {sized} |\n"));
        sized_total += sized;
    }
    table.push_str("| all |");
    for t in &totals {
        table.push_str(&format!(" {t} |"));
    }
    table.push_str(&format!(" {sized_total} |\n"));
    eprintln!("{table}");
    // Most mechanisms are seen: the table is evidence, not a list of guesses.
    let seen = totals.iter().filter(|&&t| t > 0).count();
    assert!(seen >= 6, "{totals:?}");
    assert!(sized_total <= totals[0], "{sized_total} of {}", totals[0]);
    insta::assert_snapshot!("unlogged_mechanisms_on_the_shared_logs", table);
}

/// Every mechanism names where in the product it was read.
#[test]
fn every_mechanism_names_its_source() {
    for m in Mechanism::ALL {
        let s = m.source();
        assert!(s.release.starts_with("2."), "{m:?}");
        assert!(!s.label.is_empty() && !s.function.is_empty(), "{m:?}");
    }
}

/// The partial Reads before each of the product's compactions, on every
/// shared Claude Code log (the directory walked, main chains): how many
/// Reads in the compacted conversation named an offset or a limit, how
/// many of them the log gives the file's line count for
/// (`toolUseResult.file.totalLines`), and what the port re-attaches at the
/// product's own call (`reattach::restore` on the history the product
/// summarised, with those line counts): files in all, files last read in
/// part that come back whole by estimate, and files last read in part
/// that come back exactly (the whole file shown earlier, edits applied).
/// The product re-reads every restored file whole (2.1.38 `Ua4`), so each
/// estimated one is content its log never shows.
#[test]
fn partial_reads_before_each_compaction_are_counted_and_sized() {
    use ctxlab::message::{Block, Message};
    use ctxlab::zoo::claude_code::reattach;
    let Some(dir) = common::transcripts() else {
        return;
    };
    let counter = ctxlab::tokens::Tokens::Claude.counter();
    let partial = |m: &Message| -> Vec<String> {
        m.blocks()
            .iter()
            .filter_map(|b| match b {
                Block::ToolUse { id, name, input }
                    if name == "Read"
                        && (input.get("offset").is_some() || input.get("limit").is_some()) =>
                {
                    Some(id.clone())
                }
                _ => None,
            })
            .collect()
    };
    let mut table = String::from(
        "| log | compaction @message | trigger | partial Reads before | with a line count | files re-attached (Read, Write, Edit) | last read in part, estimated | last read in part, exact |\n|---|---:|---|---:|---:|---:|---:|---:|\n",
    );
    let (mut all_partial, mut all_estimated) = (0, 0);
    for f in common::claude_code_files(&dir) {
        let session = import_file(&f, &ImportOptions::default()).unwrap();
        let log = ctxlab::replay::envelope::RecordedLog::read(&session.source, session.format)
            .unwrap()
            .expect("a Claude Code log records usage");
        let lines = log.read_lines(&session);
        let name = f.file_name().unwrap().to_string_lossy();
        let name = name.split(['@', '.']).next().unwrap_or(&name).to_string();
        let mut start = 0;
        for c in &session.real_compaction_meta {
            let history = &session.main[start..c.at];
            let ids: Vec<String> = history.iter().flat_map(partial).collect();
            let counted = ids.iter().filter(|id| lines.contains_key(*id)).count();
            let restored = reattach::restore(
                history,
                reattach::Limits::default(),
                counter.as_ref(),
                Some(&lines),
                None,
            );
            let estimated = restored
                .items
                .iter()
                .filter(|i| i.ends_with("(whole, estimated)"))
                .count();
            // Paths last read in part in this conversation.
            let partly: std::collections::BTreeSet<String> = history
                .iter()
                .flat_map(|m| m.blocks())
                .filter_map(|b| match b {
                    Block::ToolUse { id, input, .. } if ids.contains(id) => {
                        Some(input.get("file_path")?.as_str()?.to_string())
                    }
                    _ => None,
                })
                .collect();
            let exact = restored
                .items
                .iter()
                .filter(|i| partly.contains(i.as_str()))
                .count();
            let files = restored.items.iter().filter(|i| *i != "plan").count();
            table.push_str(&format!(
                "| {name} | {} | {} | {} | {counted} | {files} | {estimated} | {exact} |\n",
                c.at,
                c.trigger.as_deref().unwrap_or("?"),
                ids.len(),
            ));
            all_partial += ids.len();
            all_estimated += estimated;
            start = c.at;
        }
    }
    eprintln!("{table}");
    // Every estimate stands on a recorded line count.
    assert!(
        all_estimated <= all_partial,
        "{all_estimated} of {all_partial}"
    );
    insta::assert_snapshot!("partial_reads_before_each_compaction", table);
}

/// Files changed on disk outside the product's edits
/// (`replay::unlogged::changed_files`), on every shared Claude Code log
/// (main chains): per log, the file-rewriting shell commands, the files in
/// the product's read state each could reach, how many of them the log
/// shows before (the state's text) and after (the next whole Read), and
/// how many of those changed, which `--anchor none` sizes by mechanism.
/// Beside them, the recorded steps of at least 1,000 tokens over the
/// estimate at such a command's results (recorded usage read only to
/// list them, as `--anchor recorded` sizes them) and the files they could
/// be. notes/cost.md carries both tables.
#[test]
fn changed_files_are_sized_only_where_the_log_shows_both_sides() {
    use ctxlab::replay::envelope::RecordedLog;
    use ctxlab::replay::unlogged::{changed_files, mechanisms::changes_files, put_back, Cause};
    let Some(dir) = common::transcripts() else {
        return;
    };
    let counter = ctxlab::tokens::Tokens::Claude.counter();
    let mut table = String::from(
        "| log | commands | files reached | shown before | shown after | both | changed, sized | tokens sized |\n|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut steps = String::from(
        "| log | message | command | step over the estimate | files reached | shown before | shown after | sized |\n|---|---:|---|---:|---:|---:|---:|---:|\n",
    );
    let (mut all_both, mut all_sized) = (0, 0);
    for f in common::claude_code_files(&dir) {
        let mut session = import_file(&f, &ImportOptions::default()).unwrap();
        let log = RecordedLog::read(&session.source, session.format)
            .unwrap()
            .expect("a Claude Code log records usage");
        let resumes = log.resumed_before(&session);
        let checks = changed_files::checks(
            &session.main,
            &session.real_compactions,
            changed_files::Resumes {
                at: &resumes,
                rebuilds: ctxlab::replay::subagents::resume_rebuilds(log.version.as_deref()),
            },
            &log.cwds(&session),
            counter.as_ref(),
        );
        let commands: Vec<(usize, String)> = session
            .main
            .iter()
            .enumerate()
            .flat_map(|(k, m)| {
                m.blocks().iter().filter_map(move |b| match b {
                    ctxlab::message::Block::ToolUse { name, input, .. } if name == "Bash" => {
                        let c = input.get("command")?.as_str()?;
                        changes_files(c).then(|| (k, c.to_string()))
                    }
                    _ => None,
                })
            })
            .collect();
        let name = f.file_name().unwrap().to_string_lossy();
        let name = name.split(['@', '.']).next().unwrap_or(&name).to_string();
        let count =
            |p: &dyn Fn(&changed_files::Check) -> bool| checks.iter().filter(|c| p(c)).count();
        let both = count(&|c| c.before_shown && c.after_shown);
        let sized = count(&|c| c.tokens.is_some());
        let tokens: usize = checks.iter().filter_map(|c| c.tokens).sum();
        table.push_str(&format!(
            "| {name} | {} | {} | {} | {} | {both} | {sized} | {tokens} |\n",
            commands.len(),
            checks.len(),
            count(&|c| c.before_shown),
            count(&|c| c.after_shown),
        ));
        all_both += both;
        all_sized += sized;
        // The recorded steps at a file-rewriting command's results.
        let recorded = |place| Some(log.request_at(place)?.usage.total());
        let found = put_back(
            &mut session,
            log.version.as_deref(),
            &recorded,
            &resumes,
            counter.as_ref(),
        );
        for a in found {
            if !matches!(a.cause, Cause::TreeRewrite | Cause::Unattributed) {
                continue;
            }
            // The last command before the step's message, in the same turn.
            let Some((k, command)) = commands
                .iter()
                .rev()
                .find(|(k, _)| *k < a.at && a.at - k <= 8)
            else {
                continue;
            };
            let at: Vec<&changed_files::Check> = checks
                .iter()
                .filter(|c| c.at > *k && c.at <= a.at)
                .collect();
            let word: String = command
                .split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ");
            steps.push_str(&format!(
                "| {name} | {} | `{word}` | {} | {} | {} | {} | {} |\n",
                a.at,
                a.tokens / 100 * 100,
                at.len(),
                at.iter().filter(|c| c.before_shown).count(),
                at.iter().filter(|c| c.after_shown).count(),
                at.iter().filter(|c| c.tokens.is_some()).count(),
            ));
        }
    }
    eprintln!("{table}\n{steps}");
    assert!(all_sized <= all_both, "{all_sized} of {all_both}");
    insta::assert_snapshot!("changed_files_on_the_shared_logs", table);
    insta::assert_snapshot!("changed_files_at_recorded_steps", steps);
}
