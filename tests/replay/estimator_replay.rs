//! The Claude estimator scored leave-one-session-out on the replay's own
//! requests: each shared Claude Code session is imported, its envelope sized
//! from recorded usage with rates fitted without it, and replayed under
//! `none` conversation by conversation (the first one, and each after a real
//! compaction from the product's summary on); every request but each
//! conversation's first (the anchor of the envelope) is scored against the
//! recorded prompt tokens of the request that produced its reply (paired by
//! response id): |messages + envelope − recorded| / recorded. As in every
//! replay, what the log leaves out is put back where recorded usage shows
//! it (`replay::unlogged`: at a message that carried an attachment, or a
//! step larger than all the log added), and dropped again at a resume; the
//! request that sized one is its anchor and is not scored either.
//!
//! Target: cumulative error ≤ 3 % median, ≤ 8 % p95. Met and pinned below
//! as measured; notes/cost.md has the figures. That figure sizes what it
//! puts back from the scored session's own usage, so it is no accuracy
//! of a prediction: [`the_estimator_alone_held_out`] scores the estimator
//! with nothing put back, the figure the guide quotes.

use crate::common;

use ctxlab::import::{import_file, ImportOptions, ImportedSession};
use ctxlab::message::{Block, Role};
use ctxlab::policy::engine::{replay, Env, Prefix, Session};
use ctxlab::replay::envelope::{envelope_for, first_request_mentions, EnvelopeArg, RecordedLog};
use ctxlab::replay::unlogged::{put_back, put_back_changed_files, put_back_mentions};
use ctxlab::tokens::claude::Claude;
use ctxlab::tokens::fit::{fit_without, load_dir, Spread};

/// What a scored replay puts back of what the log leaves out.
#[derive(Clone, Copy, PartialEq)]
enum Put {
    /// What `--anchor recorded` puts back: shell reminders rebuilt from the
    /// log's text, attachments sized from the scored session's own usage.
    Recorded,
    /// What `--anchor none` puts back: the shell reminders rebuilt from the
    /// log's text and the @-mentioned files it sizes, nothing sized from
    /// usage after the first request.
    FromText,
    /// Nothing: the estimator alone on the logged messages.
    Nothing,
}

/// Held-out errors of one session and the attachments put back in it, or
/// why it was not scored.
fn session_errors(
    dir: &std::path::Path,
    name: &str,
    counter: Claude,
    put: Put,
) -> Result<(Vec<f64>, usize), String> {
    let path = dir.join(name);
    let mut imported = import_file(&path, &ImportOptions::default()).unwrap();
    let log = RecordedLog::read(&path, imported.format).unwrap().unwrap();
    // What the log leaves out, put back where recorded usage shows it, as
    // every replay does; the request that sized an attachment is its
    // anchor, as the first one is the envelope's, and is not scored.
    let recorded = |place| Some(log.request_at(place)?.usage.total());
    let resumes = log.resumed_before(&imported);
    let unread = |_| None;
    let found = match put {
        Put::Recorded => put_back(
            &mut imported,
            log.version.as_deref(),
            &recorded,
            &resumes,
            &counter,
        ),
        Put::FromText => {
            let found = put_back(
                &mut imported,
                log.version.as_deref(),
                &unread,
                &resumes,
                &counter,
            );
            // The @-mentioned files the log's text sizes, as `--anchor
            // none` puts them back (the first request's size, read under
            // every anchor, sizes those of the first message).
            let first = first_request_mentions(&imported, &log, &counter);
            put_back_mentions(&mut imported, first, &counter);
            // The files changed outside the product's edits that the log
            // shows before and after, as `--anchor none` puts them back.
            let cwds = log.cwds(&imported);
            let resumes = ctxlab::replay::unlogged::changed_files::Resumes {
                at: &resumes,
                rebuilds: ctxlab::replay::subagents::resume_rebuilds(log.version.as_deref()),
            };
            put_back_changed_files(&mut imported, &cwds, resumes, &counter);
            found
        }
        Put::Nothing => Vec::new(),
    };
    let anchored: Vec<usize> = found
        .iter()
        .filter_map(|a| {
            (a.at..imported.main.len()).find(|&k| imported.main[k].role == Role::Assistant)
        })
        .collect();
    if !found.is_empty() {
        eprintln!("{name}: {found:?}");
    }
    // Each call pairs with the recorded request that produced its reply:
    // the one whose response id the reply's first record carries.
    let mut errors = Vec::new();
    for (j, (calls, paired)) in paired_calls(name, &imported, &log, counter, &resumes)
        .into_iter()
        .enumerate()
    {
        // A reply the importer split in two makes two calls of one request;
        // a call that pairs with nothing is not scored. Most must pair.
        if paired.len() * 10 < calls * 9 {
            return Err(format!(
                "conversation {j}: {} of {calls} calls pair with a recorded request",
                paired.len(),
            ));
        }
        // The first request anchors the envelope: not scored.
        for (at, sent, y) in paired.into_iter().skip(1) {
            if !anchored.contains(&at) {
                errors.push((sent - y).abs() / y);
            }
        }
    }
    Ok((errors, found.len()))
}

/// A replayed call beside the recorded request that produced its reply:
/// (message index, the replay's request, the recorded one).
type Paired = (usize, f64, f64);

/// Each conversation of `imported` (split at its compactions) replayed
/// under `none` from its envelope, a resume in `resumes` (indices in
/// `main`) dropping what was put back before it: per conversation, its
/// number of calls and the calls that pair with the recorded request that
/// produced their reply.
fn paired_calls(
    name: &str,
    imported: &ImportedSession,
    log: &RecordedLog,
    counter: Claude,
    resumes: &[usize],
) -> Vec<(usize, Vec<Paired>)> {
    let envelope = envelope_for(imported, Some(log), EnvelopeArg::Auto, &counter).unwrap();
    let mut bounds = vec![0];
    bounds.extend(imported.real_compactions.iter().copied());
    bounds.push(imported.main.len());
    let mut out = Vec::new();
    for (j, w) in bounds.windows(2).enumerate() {
        let mut env = Env {
            tokens: Box::new(counter),
            prefix: Prefix {
                tokens: envelope.prefix.after(j),
                resumes: resumes
                    .iter()
                    .filter(|&&r| (w[0]..w[1]).contains(&r))
                    .map(|r| r - w[0])
                    .collect(),
                ..Prefix::default()
            },
            ..Env::default()
        };
        let mut none = ctxlab::zoo::list::make("none").unwrap();
        let session = Session {
            name,
            messages: &imported.main[w[0]..w[1]],
            times_ms: None,
        };
        let run = replay(none.as_mut(), session, &mut env).unwrap();
        let paired = run
            .calls
            .iter()
            .filter_map(|c| {
                let r = log.request_at(imported.main_place(w[0] + c.at)?)?;
                let sent = (c.tokens + c.envelope) as f64;
                Some((w[0] + c.at, sent, r.usage.total() as f64))
            })
            .collect();
        out.push((run.calls.len(), paired));
    }
    out
}

#[test]
fn held_out_on_the_replays_own_requests_with_the_envelope() {
    let Some(dir) = common::transcripts() else {
        return;
    };
    let dir = dir.join("claude_code");
    let sessions = load_dir(&dir).unwrap();
    let mut all = Vec::new();
    let mut skipped = Vec::new();
    let mut put_back = 0;
    for (i, s) in sessions.iter().enumerate() {
        let counter = Claude {
            coefficients: fit_without(&sessions, i),
        };
        match session_errors(&dir, &s.name, counter, Put::Recorded) {
            Ok((e, n)) => {
                put_back += n;
                let spread = Spread::of(&e);
                eprintln!(
                    "{}: n {} median {:.4} p95 {:.4}, over 8 %: {}",
                    s.name,
                    spread.n,
                    spread.median,
                    spread.p95,
                    e.iter().filter(|&&x| x > 0.08).count()
                );
                all.extend(e);
            }
            Err(why) => {
                eprintln!("{}: not scored: {why}", s.name);
                skipped.push(s.name.clone());
            }
        }
    }
    let pooled = Spread::of(&all);
    eprintln!(
        "pooled: n {} median {:.4} p95 {:.4}, put back {put_back}; not scored: {skipped:?}",
        pooled.n, pooled.median, pooled.p95
    );
    // Measured 2026-12-05, every session scored (calls paired with their
    // recorded requests by the reply's response id), golfgod's eight
    // background shells reminded of before every later call, and 26
    // attachments put back: 15 at a cause (dotclaude 3 @-mentions and 4
    // partial reads, socialaize 6 working-tree rewrites,
    // claude-agentic-framework 2 subagent returns) and 11 unattributed,
    // each a step larger than all the log added since the request before
    // (socialaize 2: a commit, a worktree set-up; session-share 6; templar
    // 3, beside its formatting hooks); session-share's put-back dropped at
    // its three resumes. Median 1.5 %, p95 4.0 % (target met; 21.1 % with
    // none of it, 9.7 % with causes only). Left over 8 %: session-share's 5
    // requests after its resumes, 15-25 % over: the resumed process sent no
    // thinking and about 10k tokens less than the log holds.
    assert_eq!(pooled.n, 795);
    assert_eq!(put_back, 26);
    assert!(pooled.median <= 0.03, "{pooled:?}");
    assert!(pooled.p95 <= 0.08, "{pooled:?}");
    assert!((pooled.p95 - 0.0396).abs() < 0.005, "{pooled:?}");
    assert!(skipped.is_empty(), "{skipped:?}");
}

/// The estimator alone: the same held-out replay with nothing put back
/// (no shell reminder, no attachment), so nothing of the scored session is
/// read but each conversation's first request, which sizes its envelope and
/// is not scored. The rates are fitted on the other sessions. Target ≤ 2 %
/// median, ≤ 8 % p95 of the cumulative (whole-request) error; not met
/// (notes/cost.md, "The Claude estimator"), pinned as measured.
#[test]
fn the_estimator_alone_held_out() {
    held_out(Put::Nothing, ALONE);
}

/// As [`the_estimator_alone_held_out`] with what `--anchor none` puts back
/// from the log's text (background-shell reminders, the @-mentioned files
/// a Read or the first request sizes): still nothing read of the scored
/// session's usage but each conversation's first request.
#[test]
fn the_estimator_with_reminders_from_text_held_out() {
    held_out(Put::FromText, FROM_TEXT);
}

/// Pooled held-out error of every shared Claude Code log replayed with
/// `put`, checked against `pinned`.
fn held_out(put: Put, pinned: Pinned) {
    let Some(dir) = common::transcripts() else {
        return;
    };
    let dir = dir.join("claude_code");
    let sessions = load_dir(&dir).unwrap();
    let mut all = Vec::new();
    for (i, s) in sessions.iter().enumerate() {
        let counter = Claude {
            coefficients: fit_without(&sessions, i),
        };
        // Every shared log is scored.
        let (e, found) = session_errors(&dir, &s.name, counter, put).unwrap();
        assert_eq!(found, 0, "{}: an attachment was sized from usage", s.name);
        let spread = Spread::of(&e);
        eprintln!(
            "{}: n {} median {:.4} p95 {:.4}",
            s.name, spread.n, spread.median, spread.p95
        );
        all.extend(e);
    }
    let pooled = Spread::of(&all);
    eprintln!(
        "pooled: n {} median {:.4} p95 {:.4}",
        pooled.n, pooled.median, pooled.p95
    );
    // The requests scored with put-back, and those that sized an attachment.
    assert_eq!(pooled.n, 821, "{pooled:?}");
    pinned.check(&pooled);
}

/// A held-out figure as measured (notes/cost.md, "The Claude estimator"):
/// pinned to half a point, so that a change to the estimator or the
/// replay that moves it is seen and the quoted figure updated.
struct Pinned {
    median: f64,
    p95: f64,
}

impl Pinned {
    fn check(&self, got: &Spread) {
        assert!(
            (got.median - self.median).abs() < 0.005 && (got.p95 - self.p95).abs() < 0.005,
            "now median {:.4} p95 {:.4}, pinned {:.4} / {:.4}: update the pin, notes/cost.md and docs/",
            got.median,
            got.p95,
            self.median,
            self.p95
        );
    }
}

/// Measured 2026-12-07: median 2.8 %, p95 21.1 % over 821 requests.
const ALONE: Pinned = Pinned {
    median: 0.0278,
    p95: 0.2106,
};

/// Measured 2026-12-07: median 2.4 %, p95 16.6 % over 821 requests
/// (golfgod's p95 15.5 % → 3.2 % with its shell reminders; 21.1 % → 16.6 %
/// with the @-mentioned files the text sizes, dotclaude's median 19.7 % →
/// 14.9 %; the tail left is dotclaude's partial reads and mentions no Read
/// sizes, socialaize's changed files).
const FROM_TEXT: Pinned = Pinned {
    median: 0.0239,
    p95: 0.1656,
};

/// One step between two consecutive paired requests of a conversation,
/// replayed as `--anchor none` replays it (rates fitted without the log).
struct BoxStep {
    log: String,
    /// The later request's reply, in `main`.
    at: usize,
    /// Box-drawing characters (U+2500–U+257F) in what the log added.
    boxes: usize,
    /// Their runs (a tree's `├── ` is one run of three; a rule line is
    /// one long run, which any byte-pair encoder merges).
    runs: usize,
    /// Recorded growth and the replay's estimate of it.
    recorded: f64,
    estimated: f64,
}

/// The steps of every shared Claude Code log whose added content holds at
/// least `min` box-drawing characters (directory trees, tables).
fn box_steps(dir: &std::path::Path, min: usize) -> Vec<BoxStep> {
    let sessions = load_dir(dir).unwrap();
    let mut out = Vec::new();
    for (i, s) in sessions.iter().enumerate() {
        let counter = Claude {
            coefficients: fit_without(&sessions, i),
        };
        let path = dir.join(&s.name);
        let mut imported = import_file(&path, &ImportOptions::default()).unwrap();
        let log = RecordedLog::read(&path, imported.format).unwrap().unwrap();
        let resumes = log.resumed_before(&imported);
        let unread = |_| None;
        put_back(
            &mut imported,
            log.version.as_deref(),
            &unread,
            &resumes,
            &counter,
        );
        let first = first_request_mentions(&imported, &log, &counter);
        put_back_mentions(&mut imported, first, &counter);
        // Pairs across a resume are skipped below, and no resume drops
        // what was put back: the replay sees none.
        for (_, paired) in paired_calls(&s.name, &imported, &log, counter, &[]) {
            for p in paired.windows(2) {
                let ((a, ea, ra), (b, eb, rb)) = (p[0], p[1]);
                if b <= a || resumes.iter().any(|&r| r > a && r <= b) {
                    continue;
                }
                let is_box = |c: char| ('\u{2500}'..='\u{257f}').contains(&c);
                let (mut boxes, mut runs) = (0, 0);
                for t in imported.main[a..b]
                    .iter()
                    .flat_map(|m| m.blocks())
                    .map(|b| match b {
                        Block::Text { text } => text.as_str(),
                        Block::ToolResult { content, .. } => content.as_str(),
                        _ => "",
                    })
                {
                    let mut before = ' ';
                    for c in t.chars() {
                        boxes += usize::from(is_box(c));
                        runs += usize::from(is_box(c) && !is_box(before));
                        before = c;
                    }
                }
                if boxes >= min {
                    out.push(BoxStep {
                        log: s
                            .name
                            .split(['@', '.'])
                            .next()
                            .unwrap_or(&s.name)
                            .to_string(),
                        at: b,
                        boxes,
                        runs,
                        recorded: rb - ra,
                        estimated: eb - ea,
                    });
                }
            }
        }
    }
    out
}

/// Whether the +5.7k step of claude-agentic-framework after four
/// exploration Task returns (a directory tree of 1,244 box-drawing
/// characters in runs of 1.6 in the step) is the estimator counting such
/// characters too cheaply. It would take +4.6 tokens per character, more
/// than the three UTF-8 bytes each is. The other logs' trees are not
/// undercounted so: golfgod's 433 box-drawing characters (runs of 3.7)
/// −0.9 tokens per character, dmux's 115 (runs of 2.6) +1.7, −0.4
/// pooled. The rest are rule lines (runs of 18–62: dotclaude's 2,119,
/// this log's steps 69 and 71), which any byte-pair encoder merges, so
/// they say nothing either way. Two small steps with opposite signs give
/// nothing to fit a per-character correction on leave-one-session-out:
/// none is fitted, and the step stays unexplained.
#[test]
fn box_drawing_characters_are_no_cheaper_for_the_estimator_on_other_logs() {
    let Some(dir) = common::transcripts() else {
        return;
    };
    let steps = box_steps(&dir.join("claude_code"), 100);
    let mut table = String::from(
        "| log | step @message | box-drawing chars | mean run | recorded | estimated | residual | per char |\n|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let per_char = |s: &BoxStep| (s.recorded - s.estimated) / s.boxes as f64;
    let mean_run = |s: &BoxStep| s.boxes as f64 / s.runs.max(1) as f64;
    for s in &steps {
        table.push_str(&format!(
            "| {} | {} | {} | {:.1} | {:.0} | {:.0} | {:+.0} | {:+.2} |\n",
            s.log,
            s.at,
            s.boxes,
            mean_run(s),
            s.recorded,
            s.estimated,
            s.recorded - s.estimated,
            per_char(s)
        ));
    }
    eprintln!("{table}");
    let suspect = steps
        .iter()
        .find(|s| s.log == "claude-agentic-framework__chat" && s.boxes >= 1_000)
        .expect("the step after the exploration Tasks");
    assert!(per_char(suspect) > 3.0, "{}", per_char(suspect));
    // Trees (runs of 4 or less) in the other logs: each undercounted by
    // less than half the suspect's rate, and not at all pooled.
    let trees: Vec<&BoxStep> = steps
        .iter()
        .filter(|s| s.log != suspect.log && mean_run(s) <= 4.0)
        .collect();
    assert!(trees.len() >= 2, "{table}");
    assert!(
        trees.iter().all(|s| per_char(s) < per_char(suspect) / 2.0),
        "{table}"
    );
    let pooled: f64 = trees.iter().map(|s| s.recorded - s.estimated).sum::<f64>()
        / trees.iter().map(|s| s.boxes as f64).sum::<f64>();
    assert!(pooled < 0.5, "{pooled} {table}");
    insta::assert_snapshot!("box_drawing_steps", table);
}
