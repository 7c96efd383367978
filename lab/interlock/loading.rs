//! Two-layer memory loading: where the catalog and the recalled bodies sit in
//! the request, and what that does to the prompt cache.
//!
//! The course's `build_system` rebuilds the system prompt at the start of
//! every turn with the catalog (`MEMORY.md`) *and* the recalled bodies in it
//! ([`Layout::SystemPrompt`]). The course site, describing the product, says
//! the catalog stays resident and the bodies are injected into the current
//! turn to keep the cache ([`Layout::CatalogResident`]). This module runs an
//! interlocked session under each layout and prices every request with the
//! cache accounting in [`crate::cache`]: a memory written mid-session changes
//! the course's system prompt at the next turn, which breaks the cached prefix
//! and rewrites the whole history; the product's prefix stays stable but every
//! turn carries its recalled bodies as new tokens.
//!
//! Approximations of the product (its code is not public): the catalog is
//! read once at the start of the session and kept for the whole session
//! (`../shared/research/peers.md` §2.1: MEMORY.md "loaded every session"),
//! and the bodies are appended to the turn's user prompt as one text block in
//! a `<system-reminder>` wrapper (the wrapper text is this lab's). Recall
//! itself (selection, budget) is the course's in both layouts.

use serde::{Deserialize, Serialize};

use super::Interlocked;
use crate::cache::session::{starts_turn, RequestBuilder};
use crate::cache::{cost, prices, CacheRequest, CostReport, Provider, Segment};
use crate::error::{LabError, LabResult};
use crate::memory::recall::{build_system, load, recall_turn, SelectorScript};
use crate::message::{Block, Content, Message, Role};
use crate::tokens::{TokenCounter, Tokens};

/// Where recalled memory goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    /// The course: catalog and recalled bodies in the system prompt, rebuilt
    /// at the start of every turn.
    #[default]
    SystemPrompt,
    /// The product, per the course site: the catalog resident in the system
    /// prompt for the session, the recalled bodies injected into the turn's
    /// user message.
    CatalogResident,
}

/// Switches of memory loading. `Default` is the course
/// (`layout: system_prompt`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoadingSwitches {
    /// Where recalled memory goes.
    pub layout: Layout,
}

/// The workspace path the system prompt names.
pub const WORKDIR: &str = "/workspace";

/// Tokens of the tool definitions sent before the system prompt's text, in
/// the same cached segment. An approximation (about 2k tokens for the course's
/// handful of tools); without it a short session never reaches the provider's
/// 1,024-token minimum and nothing would be cached at all.
pub const TOOLS_TOKENS: u64 = 2_000;

/// The price sheet the rows use.
pub const SHEET: &str = "claude-sonnet-4.5-5m";

/// What a loading run measured.
#[derive(Debug, Clone)]
pub struct LoadingRun {
    /// One cache request per model call, the system segment included.
    pub requests: Vec<CacheRequest>,
    /// Tokens of the system prompt, per request.
    pub system_tokens: Vec<u64>,
    /// Tokens injected into each turn's user message (0 under the course).
    pub injected_tokens: Vec<u64>,
    /// The priced requests.
    pub cost: CostReport,
}

impl LoadingRun {
    /// Requests whose system prompt differs from the previous request's.
    pub fn system_prompt_changes(&self) -> Vec<usize> {
        self.requests
            .windows(2)
            .enumerate()
            .filter(|(_, w)| w[0].segments[0].key != w[1].segments[0].key)
            .map(|(i, _)| i + 1)
            .collect()
    }
}

/// The turn's recalled bodies as the product would inject them, or `None`
/// when recall loaded nothing.
fn injection(relevant: &str) -> Option<String> {
    (!relevant.is_empty()).then(|| {
        format!("<system-reminder>\nRelevant memory records:\n{relevant}\n</system-reminder>")
    })
}

/// `m` with `text` appended as one more text block.
fn with_block(m: &Message, text: String) -> Message {
    let mut blocks = match &m.content {
        Content::Text(t) => vec![Block::Text { text: t.clone() }],
        Content::Blocks(b) => b.clone(),
    };
    blocks.push(Block::Text { text });
    Message {
        content: Content::Blocks(blocks),
        ..m.clone()
    }
}

/// Per-session state of a loading run.
struct Loader<'a> {
    switches: &'a LoadingSwitches,
    counter: Box<dyn TokenCounter>,
    /// The catalog-only system prompt read at the start of the session.
    resident: String,
    system: String,
    turn: Option<usize>,
}

impl Loader<'_> {
    /// Recall for the turn `prompt` opens; returns the prompt as sent and the
    /// tokens injected into it.
    fn open_turn(&mut self, h: &Interlocked, prompt: &Message) -> LabResult<(Message, u64)> {
        self.turn = Some(self.turn.map_or(0, |t| t + 1));
        let mut query = h.history.clone();
        query.push(prompt.clone());
        // The selector picks the first five records, as a cooperative model would.
        let script = SelectorScript::Reply("[0, 1, 2, 3, 4]".into());
        let recall = recall_turn(&h.store, WORKDIR, &query, &script, &h.constants)?;
        match self.switches.layout {
            Layout::SystemPrompt => {
                self.system = recall.system;
                Ok((prompt.clone(), 0))
            }
            Layout::CatalogResident => {
                self.system = self.resident.clone();
                let records = h.store.records()?;
                let (relevant, _) = load(
                    &records,
                    &recall.selection.files,
                    h.constants.recall_char_limit,
                );
                match injection(&relevant) {
                    Some(text) => {
                        let n = self.counter.count(&text) as u64;
                        Ok((with_block(prompt, text), n))
                    }
                    None => Ok((prompt.clone(), 0)),
                }
            }
        }
    }

    /// The request that produced the assistant message `h` just appended.
    fn request(&self, h: &Interlocked, builder: &mut RequestBuilder) -> (CacheRequest, u64) {
        let sent = &h.history[..h.history.len().saturating_sub(1)];
        let mut req = builder.request_counted(sent, self.turn.unwrap_or(0), self.counter.as_ref());
        let tokens = self.counter.count(&self.system) as u64;
        req.segments[0] = Segment::new("system", &self.system, TOOLS_TOKENS + tokens);
        (req, tokens)
    }
}

/// Run `messages` as one session of `h` with memory loaded per `switches`,
/// count every request with `tokens` and price it with the [`SHEET`] prices.
pub fn run_session(
    h: &mut Interlocked,
    messages: &[Message],
    switches: &LoadingSwitches,
    tokens: Tokens,
) -> LabResult<LoadingRun> {
    let counter = tokens.counter();
    let mut builder = RequestBuilder::new(tokens, 0);
    let resident = build_system(WORKDIR, &h.store.read_index()?, "");
    let mut loader = Loader {
        switches,
        counter,
        system: resident.clone(),
        resident,
        turn: None,
    };
    let (mut requests, mut system_tokens, mut injected_tokens) =
        (Vec::new(), Vec::new(), Vec::new());
    for m in messages {
        if starts_turn(m) {
            let (sent, n) = loader.open_turn(h, m)?;
            injected_tokens.push(n);
            h.push(&sent)?;
            continue;
        }
        h.push(m)?;
        if m.role == Role::Assistant {
            let (req, n) = loader.request(h, &mut builder);
            requests.push(req);
            system_tokens.push(n);
        }
    }
    let sheet = prices::sheet(SHEET).ok_or_else(|| {
        LabError::usage(
            format!("no price sheet {SHEET}"),
            "name a sheet in cache::prices",
        )
    })?;
    let cost = cost(&requests, &Provider::Anthropic(Default::default()), sheet);
    Ok(LoadingRun {
        requests,
        system_tokens,
        injected_tokens,
        cost,
    })
}

/// A preference stated at the start of the first turn.
pub const FIRST_PREF: &str = "Use tabs, not spaces.";
/// A preference stated halfway through the session.
pub const LATER_PREF: &str = "Always run the tests before a commit.";

/// `turns` short turns with one tool call each (no compaction pressure): the
/// first states [`FIRST_PREF`], turn `turns / 2` states [`LATER_PREF`], so
/// extraction writes a memory mid-session twice.
pub fn mid_session_writes(turns: usize) -> Vec<Message> {
    let mut out = Vec::new();
    for t in 0..turns {
        let prompt = match t {
            0 => format!("Set up the parser project. {FIRST_PREF}"),
            t if t == turns / 2 => format!("Add module {t}. {LATER_PREF}"),
            t => format!("Add module {t}."),
        };
        out.push(Message::user_text(prompt));
        let id = format!("toolu_load_{t:03}");
        out.push(Message::assistant(vec![Block::ToolUse {
            id: id.clone(),
            name: "read_file".into(),
            input: serde_json::json!({"path": format!("src/m{t}.rs")}).into(),
        }]));
        let body = format!("fn m{t}() {{}}\n").repeat(20);
        out.push(Message::tool_results(vec![(id, body)]));
        out.push(Message::assistant(vec![Block::Text {
            text: format!("Module {t} is in place."),
        }]));
    }
    out
}

/// Memories an earlier session left in the store.
pub const EARLIER: [(&str, &str); 2] = [
    ("quotes", "Use single quotes in Python."),
    ("release", "Run the benchmarks with --release."),
];

/// `request N` (1-based) of every priced request that `keep` accepts.
fn requests_where(
    run: &LoadingRun,
    keep: impl Fn(&crate::cache::RequestCost) -> bool,
) -> Vec<String> {
    run.cost
        .requests
        .iter()
        .filter(|r| keep(r))
        .map(|r| format!("request {}", r.index + 1))
        .collect()
}

/// The run as registry counters.
pub fn counters(run: &LoadingRun, h: &Interlocked) -> crate::counters::Counters {
    let mut c = crate::counters::Counters::default();
    let changes: Vec<String> = run
        .system_prompt_changes()
        .iter()
        .map(|i| format!("request {}", i + 1))
        .collect();
    c.count("system_prompt_changes", changes.len() as u64, changes);
    let breaks = requests_where(run, |r| r.broke);
    c.count("prefix_breaks", breaks.len() as u64, breaks);
    // Breaks at the system segment are the loading's; later ones are compaction's.
    let at_system = requests_where(run, |r| r.break_at.as_ref().is_some_and(|b| b.segment == 0));
    c.count("prefix_breaks_at_system", at_system.len() as u64, at_system);
    let injected = run.injected_tokens.iter().filter(|&&n| n > 0).count();
    c.count("turns_with_injection", injected as u64, std::iter::empty());
    let none = std::iter::empty;
    c.count("injected_tokens", run.injected_tokens.iter().sum(), none());
    let max_system = run.system_tokens.iter().copied().max().unwrap_or(0);
    c.count("system_tokens_max", max_system, none());
    c.count("cache_write_tokens", run.cost.cache_write_tokens, none());
    c.count("cache_read_tokens", run.cost.cache_read_tokens, none());
    c.count(
        "micro_dollars",
        (run.cost.dollars * 1e6).round() as u64,
        none(),
    );
    c.count(
        "memories_stored",
        h.tally.stored.len() as u64,
        h.tally.stored.clone(),
    );
    c.count("compactions", h.tally.compactions as u64, none());
    c
}

/// One session of `messages` in a fresh sandbox whose store holds
/// [`EARLIER`], compacting with the course profile `profile`.
pub fn side(
    messages: &[Message],
    profile: &str,
    interlock: super::InterlockSwitches,
    switches: &LoadingSwitches,
) -> LabResult<crate::counters::Counters> {
    let (fs, dir) = crate::memory::session::sandbox();
    let policy = Box::new(crate::policy::course::CoursePolicy::new(profile)?);
    let mut h = Interlocked::new(fs, &dir, policy, interlock)?;
    for (name, body) in EARLIER {
        h.store.save(&crate::memory::store::Memory {
            name: name.into(),
            mem_type: "feedback".into(),
            description: body.into(),
            body: body.into(),
        })?;
    }
    let run = run_session(&mut h, messages, switches, Tokens::Approx)?;
    Ok(counters(&run, &h))
}

/// The course profile the rows compact with.
pub const PROFILE: &str = "course-f9e8b28";

fn run_loading(_: &crate::registry::RunOptions) -> LabResult<crate::registry::ExperimentVerdict> {
    let messages = mid_session_writes(6);
    let product = LoadingSwitches {
        layout: Layout::CatalogResident,
    };
    let sw = super::InterlockSwitches::default();
    let cell = crate::registry::Cell {
        label: "6 turns, 2 memories written mid-session".into(),
        baseline: side(&messages, PROFILE, sw, &product)?,
        broken: side(&messages, PROFILE, sw, &LoadingSwitches::default())?,
        ..Default::default()
    };
    crate::registry::ExperimentVerdict::of_row(EXPERIMENTS, "I-loading", vec![cell])
}

/// The loading row.
pub static EXPERIMENTS: &[crate::registry::Experiment] = &[crate::registry::Experiment {
    id: "I-loading",
    mechanism: crate::registry::Mechanism::Interlock,
    kind: crate::registry::Kind::Finding,
    title: "memory in the system prompt breaks the cached prefix at each mid-session write; a resident catalog injects per turn",
    change: "baseline: interlock::loading::Layout::CatalogResident (the product, approximate); broken: the course's system prompt",
    caught_by: &["prefix_breaks_at_system", "turns_with_injection"],
    seed: "section 8: two-layer loading is described but not built",
    run: run_loading,
    expect: &[
        crate::registry::every("system_prompt_changes", 0, 2),
        crate::registry::every("prefix_breaks_at_system", 0, 2),
        crate::registry::every("turns_with_injection", 6, 0),
        crate::registry::every("compactions", 0, 0),
    ],
}];
