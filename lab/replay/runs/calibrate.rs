//! `lab calibrate DIR`: the closed loop's predicted re-fetches against what
//! agents really did after their product compacted.
//!
//! Every real compaction a log records (`real_compactions`: Claude Code's
//! summaries, Pi's compaction entries, any product the importer knows) is
//! ground truth. After it, the recorded agent had only what the product
//! kept, and the log shows what it fetched again. The two sides are
//! computed apart, so the precision can fail:
//!
//! - **predicted**: every source (an earlier tool result or user message,
//!   from before the compaction) that the product's own port, replayed
//!   closed-loop on the whole session (the product's summaries taken out),
//!   did not keep and got back with a recovery call or a re-fetch for any
//!   demand of any kind (re-read, edit old text, identifier, quote) in the
//!   [`WINDOW`] calls after the compaction. A source the recorded agent used
//!   without fetching it again (the product's summary kept it) is a false
//!   positive.
//! - **observed**: every call in those [`WINDOW`] calls that fetches again
//!   what a call before the compaction fetched: a read (a read tool, or
//!   `cat`/`head`/`tail`/`nl`/`less` of one file) of a path read before, or
//!   a listing, search or read-only command (`ls`, `grep`, `git status`…)
//!   run before with the same arguments; a command that acts (`git push`,
//!   a test run) is no re-fetch. Found by
//!   [`target`] on the log alone; it never looks at the demands or the
//!   closed loop.
//!
//! The unit on both sides is the thing fetched (a file, a command, a call;
//! a source no call can fetch is its message), matched by [`Target::same`].
//! Precision and recall are over the listed pairs, per compaction and in
//! total, printed as computed.
//!
//! The port is replayed under `--anchor recorded` where the log records
//! usage, so it compacts where the product did: what is calibrated is what
//! a compaction costs afterwards, not when it fires (`lab replay`'s
//! product table measures that).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::error::{LabError, LabResult};
// The tool vocabulary (which names read, list or run a shell) is the
// demand extractor's: it is knowledge of the products, not of a prediction.
// What counts as fetched again is this matcher's own.
use crate::import::demands::{LIST_TOOLS, PATH_KEYS, READ_TOOLS, SHELL_TOOLS};
use crate::message::{Block, Content, Message, Role};
use crate::replay::runs::policies::closed_loop::Outcome;

/// Calls after a real compaction that are compared (the issue's "10 calls
/// after").
pub const WINDOW: usize = 10;

/// What a call fetches, as the calibration compares it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(tag = "kind", content = "what", rename_all = "snake_case")]
pub enum Target {
    /// A file (or URL) read whole: a read tool, or a shell `cat` of it.
    File(String),
    /// A shell command, its whitespace collapsed.
    Run(String),
    /// A listing or search tool with these arguments (`NAME {json}`).
    Call(String),
    /// A source no call fetches again (a user message, an edit's result):
    /// never observed, so a prediction of it is a false positive.
    Message(usize),
}

impl Target {
    /// Whether two targets fetch the same thing: equal, or two paths of one
    /// file, one relative and one absolute (`src/a.rs`, `/w/src/a.rs`).
    pub fn same(&self, other: &Target) -> bool {
        match (self, other) {
            (Target::File(a), Target::File(b)) => {
                let (a, b) = (a.trim_start_matches("./"), b.trim_start_matches("./"));
                a == b
                    || (a.ends_with(b) && a[..a.len() - b.len()].ends_with('/'))
                    || (b.ends_with(a) && b[..b.len() - a.len()].ends_with('/'))
            }
            _ => self == other,
        }
    }

    /// The target as a table cell.
    pub fn cell(&self) -> String {
        let cut = |s: &str| {
            let mut t: String = s.chars().take(70).collect();
            if t.len() < s.len() {
                t.push('…');
            }
            t
        };
        match self {
            Target::File(p) => format!("read {}", cut(p)),
            Target::Run(c) => format!("run `{}`", cut(c)),
            Target::Call(c) => cut(c),
            Target::Message(m) => format!("message {m}"),
        }
    }
}

/// Shell commands that print one file whole (or its head or tail).
const CAT_COMMANDS: &[&str] = &["cat", "head", "tail", "nl", "less", "more", "bat"];

/// What the call `name(input)` fetches, when it fetches anything: the
/// calibration's own matcher, independent of the demand extractor. Writes,
/// edits and commands that act rather than read fetch nothing.
pub fn target(name: &str, input: &serde_json::Value) -> Option<Target> {
    let lower = name.to_ascii_lowercase();
    if READ_TOOLS.contains(&lower.as_str()) {
        return PATH_KEYS
            .iter()
            .find_map(|k| input.get(*k)?.as_str())
            .map(|p| Target::File(p.to_string()));
    }
    if LIST_TOOLS.contains(&lower.as_str()) {
        return Some(Target::Call(format!("{lower} {input}")));
    }
    if !SHELL_TOOLS.contains(&lower.as_str()) {
        return None;
    }
    let cmd = match input.get("command").or_else(|| input.get("cmd"))? {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(a) => a
            .iter()
            .filter_map(|x| x.as_str())
            .collect::<Vec<_>>()
            .join(" "),
        _ => return None,
    };
    let words: Vec<&str> = cmd.split_whitespace().collect();
    if words.is_empty() {
        return None;
    }
    // `cat FILE`, `head -50 FILE`: a read of FILE, whatever tool read it
    // before.
    if CAT_COMMANDS.contains(&words[0]) && !cmd.contains(['|', '>', '<', ';', '&', '*']) {
        let args: Vec<&str> = words[1..]
            .iter()
            .copied()
            .filter(|w| !w.starts_with('-') && !w.bytes().all(|b| b.is_ascii_digit()))
            .collect();
        if let [path] = args[..] {
            return Some(Target::File(path.trim_matches(['\'', '"']).to_string()));
        }
    }
    // A command that reads (a listing, a search, `git status`) fetches
    // again; one that acts (`git push`, a build, a test run) is not a
    // re-fetch of content, however often it is run.
    let reads = crate::import::demands::DETERMINISTIC_COMMANDS.contains(&words[0])
        || (words[0] == "git"
            && words
                .get(1)
                .is_some_and(|w| ["status", "show", "diff", "log", "branch"].contains(w)));
    (reads && !cmd.contains('>')).then(|| Target::Run(words.join(" ")))
}

/// Every tool call of `messages`: (message index, its target, the index of
/// the message holding its result), in order.
fn fetches(messages: &[Message]) -> Vec<(usize, Option<Target>, Option<usize>)> {
    let mut results: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, m) in messages.iter().enumerate() {
        if let Content::Blocks(bs) = &m.content {
            for b in bs {
                if let Block::ToolResult { tool_use_id, .. } = b {
                    results.entry(tool_use_id).or_insert(i);
                }
            }
        }
    }
    let mut out = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        if m.role != Role::Assistant {
            continue;
        }
        if let Content::Blocks(bs) = &m.content {
            for b in bs {
                if let Block::ToolUse { id, name, input } = b {
                    out.push((i, target(name, input), results.get(id.as_str()).copied()));
                }
            }
        }
    }
    out
}

/// Precision, recall and the counts they come from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Figures {
    /// Targets the recorded agent fetched again after the compaction that
    /// a call before it had fetched.
    pub observed: usize,
    /// Targets the port's closed loop fetched again (recovery or re-fetch).
    pub predicted: usize,
    /// Both.
    pub both: usize,
    /// Observed targets the port's closed loop counted lost (a demand of
    /// it that could not be met).
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
            let predicted = p.predicted();
            let observed = p.observed();
            f.observed += usize::from(observed);
            f.predicted += usize::from(predicted);
            f.both += usize::from(observed && predicted);
            f.observed_lost += usize::from(observed && p.port == Some(Outcome::Lost));
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

/// One target of a window that was observed, predicted, or both.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Pair {
    /// The session label.
    pub session: String,
    /// The compaction's index in the main conversation.
    pub compaction: usize,
    /// What was fetched.
    pub target: Target,
    /// The message (replayed index) holding its content before the
    /// compaction: the predicted demand's source, else the result of the
    /// last call before the compaction that fetched it.
    pub source: usize,
    /// The call (replayed index) in the window that fetched it again, as
    /// the log shows: observed. `None`: not fetched again.
    pub observed_at: Option<usize>,
    /// The demands of it in the window (their kinds), whatever the port did.
    pub demand_kinds: Vec<crate::import::demands::DemandKind>,
    /// The best the port's closed loop did for those demands: a recovery
    /// or re-fetch makes it predicted. `None`: no demand of it.
    pub port: Option<Outcome>,
}

impl Pair {
    /// The log shows it fetched again.
    pub fn observed(&self) -> bool {
        self.observed_at.is_some()
    }

    /// The port's closed loop fetched it again.
    pub fn predicted(&self) -> bool {
        self.port.is_some_and(Outcome::inserted)
    }
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
    let all = fetches(&messages);
    let by_id: BTreeMap<&str, Option<Target>> = messages
        .iter()
        .filter_map(|m| match &m.content {
            Content::Blocks(bs) => Some(bs),
            Content::Text(_) => None,
        })
        .flatten()
        .filter_map(|b| match b {
            Block::ToolUse { id, name, input } => Some((id.as_str(), target(name, input))),
            _ => None,
        })
        .collect();
    for &c in &session.real_compactions {
        let start = c - artefacts.iter().filter(|&&a| a < c).count();
        let calls: Vec<usize> = (start..messages.len())
            .filter(|&i| messages[i].role == Role::Assistant)
            .take(WINDOW)
            .collect();
        let window = |i: usize| calls.contains(&i);
        let mut pairs: Vec<Pair> = Vec::new();
        // Observed, from the log alone: a call in the window fetching what
        // a call before the compaction fetched.
        for (at, t, _) in all.iter().filter(|f| window(f.0)) {
            let Some(t) = t else { continue };
            let Some(before) = all
                .iter()
                .rev()
                .filter(|f| f.0 < start)
                .find(|f| f.1.as_ref().is_some_and(|b| b.same(t)))
            else {
                continue;
            };
            if pairs.iter().any(|p| p.target.same(t)) {
                continue;
            }
            pairs.push(Pair {
                session: session.label.clone(),
                compaction: c,
                target: t.clone(),
                source: before.2.unwrap_or(before.0),
                observed_at: Some(*at),
                demand_kinds: Vec::new(),
                port: None,
            });
        }
        // Predicted, from the port's closed loop: each demand in the window
        // whose source came before the compaction, by what its source's
        // call fetched.
        for (id, d) in demands.iter().enumerate() {
            if !window(d.at) || d.source >= start {
                continue;
            }
            let t = d
                .source_tool
                .as_deref()
                .and_then(|id| by_id.get(id).cloned().flatten())
                .unwrap_or(Target::Message(d.source));
            let outcome = outcomes.get(id).copied().unwrap_or(Outcome::Unchecked);
            let k = match pairs.iter().position(|p| p.target.same(&t)) {
                Some(k) => k,
                None => {
                    pairs.push(Pair {
                        session: session.label.clone(),
                        compaction: c,
                        target: t,
                        source: d.source,
                        observed_at: None,
                        demand_kinds: Vec::new(),
                        port: None,
                    });
                    pairs.len() - 1
                }
            };
            let p = &mut pairs[k];
            if !p.demand_kinds.contains(&d.kind) {
                p.demand_kinds.push(d.kind);
            }
            if p.port.is_none_or(|o| rank(outcome) > rank(o)) {
                p.port = Some(outcome);
            }
        }
        pairs.retain(|p| p.observed() || p.predicted());
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

/// How much an outcome says the port did for a target: a call inserted
/// beats a loss, a loss beats a kept source.
fn rank(o: Outcome) -> u8 {
    match o {
        Outcome::Recovery | Outcome::Refetch => 3,
        Outcome::Lost => 2,
        Outcome::InRequest => 1,
        Outcome::Unchecked => 0,
    }
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
        "\nHow each side is computed (apart, so either can fail). Observed, from the log alone: a \
         call in the {w} calls after a real compaction that fetches again what a call before it \
         fetched (a read tool or a `cat`/`head`/`tail` of a file read before, the same listing, \
         the same read-only shell command such as `ls`, `grep`, `git status`; a command that \
         acts is no re-fetch); the demands and the port are not consulted. Predicted, from the \
         product's port replayed closed-loop (anchor {a}): every source from before the \
         compaction that the port did not keep and fetched back (recovery call or re-fetch) for a \
         demand of any kind (re-read, edit old text, identifier, quote; lab import --demands, an \
         estimate) in those {w} calls. The unit on both sides is what is fetched (a file, a \
         command, a call; a user message or an edit's result is its message, which no call \
         fetches). A predicted source the agent used without fetching it again (the product's \
         summary kept it) is a false positive. precision = both / predicted, recall = both / \
         observed; - where the denominator is 0.\n",
        w = c.window,
        a = c.anchor
    ));
    s.push_str(if md { "\n## Pairs\n\n" } else { "\nPairs\n" });
    let head = [
        "session",
        "compaction",
        "fetched",
        "source",
        "observed (call)",
        "demands in the window",
        "port's closed loop",
        "predicted",
    ];
    let body = c
        .pairs
        .iter()
        .map(|p| {
            vec![
                p.session.clone(),
                p.compaction.to_string(),
                p.target.cell(),
                p.source.to_string(),
                p.observed_at.map_or("no".into(), |a| format!("yes ({a})")),
                p.demand_kinds
                    .iter()
                    .map(|k| k.name())
                    .collect::<Vec<_>>()
                    .join(", "),
                p.port.map_or("-", Outcome::name).to_string(),
                if p.predicted() { "yes" } else { "no" }.to_string(),
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
    use serde_json::json;

    fn pair(observed: bool, port: Option<Outcome>) -> Pair {
        Pair {
            session: "s".into(),
            compaction: 3,
            target: Target::File("a.rs".into()),
            source: 1,
            observed_at: observed.then_some(9),
            demand_kinds: Vec::new(),
            port,
        }
    }

    #[test]
    fn figures_count_pairs_and_leave_empty_ratios_undefined() {
        let pairs = [
            pair(true, Some(Outcome::Refetch)),
            pair(true, Some(Outcome::InRequest)),
            pair(true, Some(Outcome::Lost)),
            pair(false, Some(Outcome::Recovery)),
        ];
        let f = Figures::of(&pairs);
        assert_eq!(
            (f.observed, f.predicted, f.both, f.observed_lost),
            (3, 2, 1, 1)
        );
        assert_eq!(f.precision, Some(0.5));
        assert_eq!(f.recall, Some(1.0 / 3.0));
        let none = Figures::of(&[pair(false, None)]);
        assert_eq!((none.precision, none.recall), (None, None));
    }

    #[test]
    fn a_cat_of_a_file_read_before_is_the_same_target_and_an_edit_none() {
        let read = target("Read", &json!({"file_path": "/w/src/a.rs"})).unwrap();
        let cat = target("Bash", &json!({"command": "cat -n src/a.rs"})).unwrap();
        assert!(read.same(&cat), "{read:?} {cat:?}");
        let other = target("Bash", &json!({"command": "cat ssrc/a.rs"})).unwrap();
        assert!(!read.same(&other));
        let run = target("Bash", &json!({"command": "git  status"})).unwrap();
        assert_eq!(run, Target::Run("git status".into()));
        assert!(target("Bash", &json!({"command": "git push"})).is_none());
        assert!(target("Edit", &json!({"file_path": "/w/src/a.rs"})).is_none());
        let piped = target("Bash", &json!({"command": "cat a.rs | wc -l"})).unwrap();
        assert!(matches!(piped, Target::Run(_)));
    }
}
