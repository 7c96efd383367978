//! Demands: where a later model call uses content that arrived earlier.
//!
//! A compaction that removes content is harmless until something later
//! needs it. This module reads a recorded session and names every point
//! where a model call's output (a tool call's arguments, the assistant's
//! text) uses earlier content, with the message and block it came from:
//! - [`DemandKind::Reread`]: a read of a file or URL read before (the
//!   source is the earlier read's result);
//! - [`DemandKind::EditOld`]: an edit whose old text appears in an earlier
//!   tool result (Claude Code's `cat -n` line numbers ignored);
//! - [`DemandKind::Identifier`]: an identifier first seen in a tool result
//!   or a user message (a path, a URL, a hash, a UUID, a number of six
//!   digits or more) used in a later call;
//! - [`DemandKind::Quote`]: a span of at least [`QUOTE_CHARS`] characters
//!   of a tool result or a user message repeated in a later call.
//!
//! - [`DemandKind::Instruction`]: a standing instruction (a user's rule,
//!   CLAUDE.md / AGENTS.md text in a context block) that a later tool call
//!   acts on: the first later call whose arguments carry a distinctive
//!   token of the rule (a backticked span, a flag, a path, a URL, a
//!   hyphenated or underscored name). A rule is a paragraph of user text
//!   with a line that says *always*, *never*, *must*, *don't*, *do not*,
//!   *make sure*, *instead* or *use*; the product's own summaries and its
//!   command caveats are not rules.
//!
//! One demand per use block and source; a re-read or an edit's old text is
//! not counted again as an identifier or quote of the same source.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::message::{Block, Content, Message, Role};

/// Shortest quoted span counted as a quote, in characters.
pub const QUOTE_CHARS: usize = 48;

/// Sources are indexed every `STRIDE` characters: every shared span of
/// `QUOTE_CHARS + STRIDE` characters or more is found, shorter ones may be.
const STRIDE: usize = 16;

/// What kind of use a demand is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum DemandKind {
    /// A file or URL read again.
    Reread,
    /// An edit whose old text is in an earlier result.
    EditOld,
    /// An identifier first seen in a result or user message.
    Identifier,
    /// A long span of a result or user message repeated.
    Quote,
    /// A standing instruction a later call acts on.
    Instruction,
}

impl DemandKind {
    /// The name in tables and label files.
    pub fn name(self) -> &'static str {
        match self {
            DemandKind::Reread => "reread",
            DemandKind::EditOld => "edit_old",
            DemandKind::Identifier => "identifier",
            DemandKind::Quote => "quote",
            DemandKind::Instruction => "instruction",
        }
    }

    /// The kind named `name`.
    pub fn from_name(name: &str) -> Option<DemandKind> {
        [
            DemandKind::Reread,
            DemandKind::EditOld,
            DemandKind::Identifier,
            DemandKind::Quote,
            DemandKind::Instruction,
        ]
        .into_iter()
        .find(|k| k.name() == name)
    }
}

/// One use of earlier content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Demand {
    /// Index of the message that uses it (an assistant message).
    pub at: usize,
    /// Its block.
    pub block: usize,
    /// What kind of use.
    pub kind: DemandKind,
    /// Index of the message the content came from.
    pub source: usize,
    /// Its block.
    pub source_block: usize,
    /// The used text: the path, old text, identifier or quoted span
    /// (at most 200 characters).
    pub span: String,
    /// The tool call id of the source, when it is a tool result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_tool: Option<String>,
}

/// Where a piece of earlier content sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Place {
    message: usize,
    block: usize,
    /// A tool result or user text (content the model did not write).
    foreign: bool,
}

/// Read-like tools: their path argument names content a re-read gets back.
pub const READ_TOOLS: &[&str] = &[
    "read",
    "read_file",
    "readfile",
    "view",
    "notebookread",
    "webfetch",
    "web_fetch",
    "fetch",
    "open_file",
];

/// The argument keys a read-like tool names its path or URL by.
pub const PATH_KEYS: &[&str] = &["file_path", "path", "notebook_path", "url", "filename"];

/// Listing and search tools whose output a second run reproduces (a
/// heuristic: a file may have changed between the two, which the recorded
/// session cannot tell); with [`READ_TOOLS`], the re-fetchable tools.
pub const LIST_TOOLS: &[&str] = &[
    "glob",
    "grep",
    "ls",
    "list_files",
    "list_dir",
    "search_files",
    "find_file",
];
/// Tools that run a shell command (`command` or `cmd` argument).
pub const SHELL_TOOLS: &[&str] = &["bash", "shell", "exec_command", "run_command"];

/// Shell commands (their first word) whose output a second run reproduces,
/// when they redirect nothing.
pub const DETERMINISTIC_COMMANDS: &[&str] = &[
    "cat", "head", "tail", "ls", "grep", "rg", "find", "sed", "wc", "nl", "tree",
];

/// Whether a call of `name` with `input` is re-fetchable: a read-like
/// tool, or a shell command in [`DETERMINISTIC_COMMANDS`] that writes
/// nothing, or a read-only `git` command. The closed loop makes such a call
/// again; retention counts what it brought as re-fetchable.
pub fn refetchable(name: &str, input: &serde_json::Value) -> bool {
    let lower = name.to_ascii_lowercase();
    if READ_TOOLS.contains(&lower.as_str()) || LIST_TOOLS.contains(&lower.as_str()) {
        return true;
    }
    if !SHELL_TOOLS.contains(&lower.as_str()) {
        return false;
    }
    let cmd = input
        .get("command")
        .or_else(|| input.get("cmd"))
        .map(|c| match c {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Array(a) => a
                .iter()
                .filter_map(|x| x.as_str())
                .collect::<Vec<_>>()
                .join(" "),
            _ => String::new(),
        })
        .unwrap_or_default();
    let cmd = cmd
        .trim_start_matches("bash -lc ")
        .trim_start_matches('"')
        .trim();
    let first = cmd.split_whitespace().next().unwrap_or("");
    (DETERMINISTIC_COMMANDS.contains(&first) && !cmd.contains('>'))
        || cmd.starts_with("git show")
        || cmd.starts_with("git diff")
        || cmd.starts_with("git log")
}

/// Every demand of `messages`, in order of use.
pub fn extract(messages: &[Message]) -> Vec<Demand> {
    let mut x = Extractor::default();
    for (i, m) in messages.iter().enumerate() {
        x.message(i, m);
    }
    x.out
}

#[derive(Default)]
struct Extractor {
    out: Vec<Demand>,
    /// A read call's id → the path it read.
    pending_reads: HashMap<String, String>,
    /// A tool call's id → its name.
    tool_names: HashMap<String, String>,
    /// Path read → the result of its latest read.
    reads: HashMap<String, (Place, String)>,
    /// Identifier → where it was first seen.
    first_seen: HashMap<String, Place>,
    /// Identifiers (and their path tails) the model has written itself: a
    /// later use of one needs no earlier result.
    written: HashSet<String>,
    /// Foreign texts (tool results, user text), normalised, for edits and quotes.
    texts: Vec<(Place, String, Option<String>)>,
    /// Window hash of `QUOTE_CHARS` chars at every `STRIDE`-th char of a
    /// foreign text → index in `texts`.
    windows: HashMap<u64, usize>,
    /// Standing instructions' tokens not yet acted on: (token, the rule's
    /// place).
    rules: Vec<(String, Place)>,
}

impl Extractor {
    fn message(&mut self, i: usize, m: &Message) {
        let blocks: Vec<std::borrow::Cow<'_, Block>> = match &m.content {
            Content::Text(t) => vec![std::borrow::Cow::Owned(Block::Text { text: t.clone() })],
            Content::Blocks(b) => b.iter().map(std::borrow::Cow::Borrowed).collect(),
        };
        for (j, b) in blocks.iter().enumerate() {
            let place = Place {
                message: i,
                block: j,
                foreign: m.role == Role::User,
            };
            match (b.as_ref(), m.role) {
                (Block::ToolUse { id, name, input }, Role::Assistant) => {
                    self.tool_names.insert(id.clone(), name.clone());
                    self.tool_use(place, id, name, input);
                }
                (Block::Text { text }, Role::Assistant) => {
                    self.uses(place, text, &HashSet::new());
                    self.see(place, text, None);
                }
                (
                    Block::ToolResult {
                        tool_use_id,
                        content,
                    },
                    _,
                ) => {
                    if let Some(path) = self.pending_reads.remove(tool_use_id) {
                        self.reads.insert(path, (place, tool_use_id.clone()));
                    }
                    self.see(place, content, Some(tool_use_id.clone()));
                }
                (Block::Text { text }, Role::User) => {
                    self.see(place, text, None);
                    self.rules
                        .extend(rule_tokens(text).into_iter().map(|t| (t, place)));
                }
                _ => {}
            }
        }
    }

    fn tool_use(&mut self, place: Place, id: &str, name: &str, input: &serde_json::Value) {
        let mut done: HashSet<usize> = HashSet::new();
        if let Some(path) = read_path(name, input) {
            if let Some((src, tool)) = self.reads.get(&path) {
                done.insert(src.message);
                self.push(place, DemandKind::Reread, *src, &path, Some(tool.clone()));
            }
            self.pending_reads.insert(id.to_string(), path);
        }
        for old in old_texts(input) {
            if self.model_wrote(&old) {
                continue;
            }
            if let Some((src, tool)) = self.find_text(&old) {
                if done.insert(src.message) {
                    self.push(place, DemandKind::EditOld, src, &old, tool);
                }
            }
        }
        let mut text = String::new();
        strings_of(input, &mut text);
        self.uses(place, &text, &done);
        self.acts_on_rules(place, &text);
        self.see(place, &text, None);
    }

    /// The standing instructions whose token the call's arguments `text`
    /// carry, each acted on here for the first time.
    fn acts_on_rules(&mut self, place: Place, text: &str) {
        let mut hit: Vec<(Place, String)> = Vec::new();
        self.rules.retain(|(token, src)| {
            if src.message < place.message && text.contains(token.as_str()) {
                if !hit.iter().any(|(p, _)| p == src) {
                    hit.push((*src, token.clone()));
                }
                return false;
            }
            true
        });
        for (src, token) in hit {
            let known = self.out.iter().any(|d| {
                d.at == place.message && d.block == place.block && d.source == src.message
            });
            if !known {
                self.push(place, DemandKind::Instruction, src, &token, None);
            }
        }
    }

    /// Identifiers and quotes of foreign content in `text`, used at `place`;
    /// sources in `done` already have a demand of this block.
    fn uses(&mut self, place: Place, text: &str, done: &HashSet<usize>) {
        let mut done = done.clone();
        for token in identifiers(text) {
            // An absolute path names the relative one a search printed.
            if self.written.contains(&token) {
                continue;
            }
            // The whole token first, then ever shorter tails.
            let Some(src) = path_tails(&token).find_map(|t| self.first_seen.get(t).copied()) else {
                continue;
            };
            if src.foreign && src.message < place.message && done.insert(src.message) {
                let tool = self.tool_of(src);
                self.push(place, DemandKind::Identifier, src, &token, tool);
            }
        }
        for (src, span, tool) in self.quotes(text, &done) {
            if done.insert(src.message) {
                self.push(place, DemandKind::Quote, src, &span, tool);
            }
        }
    }

    /// Whether the model itself wrote `span` in an earlier call: then the
    /// span stays in its own output whatever happens to the result.
    fn model_wrote(&self, span: &str) -> bool {
        self.texts
            .iter()
            .any(|(q, t, _)| !q.foreign && t.contains(span))
    }

    fn tool_of(&self, src: Place) -> Option<String> {
        self.texts
            .iter()
            .rev()
            .find(|(p, _, _)| *p == src)
            .and_then(|(_, _, t)| t.clone())
    }

    /// Content at `place` arrives: its identifiers (first sighting) and,
    /// when foreign, its text for edits and quotes.
    fn see(&mut self, place: Place, text: &str, tool: Option<String>) {
        for token in identifiers(text) {
            if !place.foreign {
                self.written.extend(path_tails(&token).map(str::to_string));
            }
            self.first_seen.entry(token).or_insert(place);
        }
        // Every text's windows are indexed, the model's own too: a span
        // the model wrote first (an edit's new text echoed back by the
        // tool) is no use of foreign content.
        let norm = if place.foreign {
            strip_line_numbers(text)
        } else {
            text.to_string()
        };
        let index = self.texts.len();
        let chars: Vec<(usize, char)> = norm.char_indices().collect();
        let mut k = 0;
        while k + QUOTE_CHARS <= chars.len() {
            let start = chars[k].0;
            let end = chars.get(k + QUOTE_CHARS).map_or(norm.len(), |c| c.0);
            let w = &norm[start..end];
            if !w.trim().is_empty() {
                self.windows.entry(hash(w)).or_insert(index);
            }
            k += STRIDE;
        }
        self.texts.push((place, norm, tool));
    }

    /// The most recent foreign text holding `needle`, else one holding its
    /// longest line (of at least 20 chars).
    fn find_text(&self, needle: &str) -> Option<(Place, Option<String>)> {
        let find = |n: &str| {
            self.texts
                .iter()
                .rev()
                .find(|(p, t, _)| p.foreign && t.contains(n))
                .map(|(p, _, tool)| (*p, tool.clone()))
        };
        if needle.trim().len() >= 8 {
            if let Some(hit) = find(needle) {
                return Some(hit);
            }
        }
        let line = needle.lines().map(str::trim).max_by_key(|l| l.len())?;
        (line.len() >= 20).then(|| find(line)).flatten()
    }

    /// Spans of `text` of [`QUOTE_CHARS`] chars found in a foreign text.
    fn quotes(&self, text: &str, done: &HashSet<usize>) -> Vec<(Place, String, Option<String>)> {
        // A span also in a source this block already uses is that use.
        let credited: Vec<&str> = self
            .texts
            .iter()
            .filter(|(p, _, _)| p.foreign && done.contains(&p.message))
            .map(|(_, t, _)| t.as_str())
            .collect();
        let mut out: Vec<(Place, String, Option<String>)> = Vec::new();
        if self.windows.is_empty() {
            return out;
        }
        let chars: Vec<(usize, char)> = text.char_indices().collect();
        let mut k = 0;
        while k + QUOTE_CHARS <= chars.len() {
            let start = chars[k].0;
            let end = chars.get(k + QUOTE_CHARS).map_or(text.len(), |c| c.0);
            let w = &text[start..end];
            // A span without two blanks is one token (a path, a hash):
            // identifiers judge those.
            let words = w.chars().filter(|c| c.is_whitespace()).count() >= 2;
            if let Some(&i) = self.windows.get(&hash(w)).filter(|_| words) {
                let (p, t, tool) = &self.texts[i];
                // Not a span the model wrote before the tool echoed it.
                let fresh =
                    p.foreign && !credited.iter().any(|c| c.contains(w)) && !self.model_wrote(w);
                if fresh && t.contains(w) && !out.iter().any(|(q, _, _)| q == p) {
                    out.push((*p, w.to_string(), tool.clone()));
                    k += QUOTE_CHARS;
                    continue;
                }
            }
            k += 1;
        }
        out
    }

    fn push(&mut self, at: Place, kind: DemandKind, src: Place, span: &str, tool: Option<String>) {
        self.out.push(Demand {
            at: at.message,
            block: at.block,
            kind,
            source: src.message,
            source_block: src.block,
            span: span.chars().take(200).collect(),
            source_tool: tool,
        });
    }
}

/// Words of a line that make it a standing instruction.
const RULE_WORDS: &[&str] = &[
    "always",
    "never",
    "must",
    "don't",
    "dont",
    "do not",
    "make sure",
    "instead",
    "use",
];

/// Openings of user text that is the product's, not the user's: Claude
/// Code's summary of a compacted conversation and its command caveat.
const NOT_RULES: &[&str] = &[
    "This session is being continued from a previous conversation",
    "<local-command-caveat>",
    "Caveat: The messages below were generated by the user while running local commands",
];

/// The distinctive tokens of the standing instructions in `text`: every
/// paragraph (lines up to a blank one) with a line holding a word of
/// `RULE_WORDS`, and in it each backticked span of 3 to 100 chars, each
/// flag (`--x`), path, `./` name, URL and hyphenated or underscored name
/// of 8 chars or more.
pub fn rule_tokens(text: &str) -> Vec<String> {
    if NOT_RULES.iter().any(|p| text.trim_start().starts_with(p)) {
        return Vec::new();
    }
    let mut out: Vec<String> = Vec::new();
    for para in text.split("\n\n") {
        let is_rule = para.lines().any(|l| {
            let l = l.to_lowercase();
            RULE_WORDS.iter().any(|w| {
                l.match_indices(w).any(|(i, _)| {
                    let before = l[..i].chars().next_back();
                    let after = l[i + w.len()..].chars().next();
                    !before.is_some_and(char::is_alphanumeric)
                        && !after.is_some_and(char::is_alphanumeric)
                })
            })
        });
        if !is_rule {
            continue;
        }
        let mut rest = para;
        while let Some(open) = rest.find('`') {
            let Some(len) = rest[open + 1..].find('`') else {
                break;
            };
            let span = rest[open + 1..open + 1 + len].trim();
            if (3..=100).contains(&span.chars().count()) && !span.contains('\n') {
                out.push(span.to_string());
            }
            rest = &rest[open + len + 2..];
        }
        for word in para.split_whitespace() {
            let w = word.trim_matches(|c: char| "`'\"(),;:!?*".contains(c));
            let w = w.trim_end_matches('.');
            let w = w.strip_prefix('@').unwrap_or(w);
            let name = w.trim_start_matches('-');
            let named = name.chars().count() >= 8
                && name.contains(['-', '_'])
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                && name
                    .split(['-', '_'])
                    .filter(|p| p.chars().filter(char::is_ascii_alphabetic).count() >= 2)
                    .count()
                    >= 2;
            let flag = w.starts_with("--") && w.len() >= 4;
            let url = w.starts_with("http://") || w.starts_with("https://");
            if flag || url || is_path(w) || (w.starts_with("./") && w.len() > 3) {
                out.push(w.to_string());
            } else if named {
                out.push(name.to_string());
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// `t` and, for a path, each tail of two components or more
/// (`/w/src/a.rs`, `src/a.rs`).
fn path_tails(t: &str) -> impl Iterator<Item = &str> {
    let whole = is_path(t);
    let tails = t
        .match_indices('/')
        .map(move |(i, _)| &t[i + 1..])
        .filter(move |tail| whole && tail.contains('/') && is_path(tail));
    std::iter::once(t).chain(tails)
}

fn hash(s: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

/// The path or URL a read-like call reads.
fn read_path(name: &str, input: &serde_json::Value) -> Option<String> {
    let lower = name.to_ascii_lowercase();
    if READ_TOOLS.contains(&lower.as_str()) {
        return PATH_KEYS
            .iter()
            .find_map(|k| input.get(*k)?.as_str())
            .map(str::to_string);
    }
    // A shell `cat FILE` is a read of FILE.
    let cmd = input.get("command")?;
    let cmd = cmd.as_str().map(str::to_string).or_else(|| {
        let parts: Vec<&str> = cmd.as_array()?.iter().filter_map(|v| v.as_str()).collect();
        Some(parts.join(" "))
    })?;
    let cmd = cmd.trim();
    let cmd = cmd
        .strip_prefix("bash -lc ")
        .unwrap_or(cmd)
        .trim_matches(['\'', '"']);
    let rest = cmd.strip_prefix("cat ")?.trim();
    (!rest.is_empty() && !rest.contains([' ', '|', '>', '<', ';', '&', '*']))
        .then(|| rest.to_string())
}

/// An edit's old texts (`old_string`, `old_str`, each of a `MultiEdit`'s edits).
fn old_texts(input: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    for k in ["old_string", "old_str"] {
        if let Some(s) = input.get(k).and_then(|v| v.as_str()) {
            out.push(s.to_string());
        }
    }
    if let Some(edits) = input.get("edits").and_then(|v| v.as_array()) {
        for e in edits {
            out.extend(old_texts(e));
        }
    }
    out.retain(|s| !s.trim().is_empty());
    out
}

/// Every string value of `v`, one per line.
fn strings_of(v: &serde_json::Value, out: &mut String) {
    match v {
        serde_json::Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| strings_of(x, out)),
        serde_json::Value::Object(o) => o.values().for_each(|x| strings_of(x, out)),
        _ => {}
    }
}

/// `text` without `cat -n` line numbers (`   12→code`, `12\tcode`), as
/// Claude Code's Read shows a file: an edit quotes the file, not them.
pub fn strip_line_numbers(text: &str) -> String {
    let numbered = text
        .lines()
        .take(3)
        .all(|l| line_number_end(l).is_some() || l.is_empty());
    if !numbered || text.is_empty() {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    for l in text.lines() {
        out.push_str(line_number_end(l).map_or(l, |e| &l[e..]));
        out.push('\n');
    }
    out
}

fn line_number_end(l: &str) -> Option<usize> {
    let t = l.trim_start_matches(' ');
    let digits = t.len() - t.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return None;
    }
    let rest = &t[digits..];
    let sep = ['→', '\t'].into_iter().find(|c| rest.starts_with(*c))?;
    Some(l.len() - rest.len() + sep.len_utf8())
}

/// The identifiers of `text`: paths, URLs, hashes, UUIDs, long numbers.
pub fn identifiers(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for raw in text.split(|c: char| {
        !(c.is_ascii_alphanumeric()
            || matches!(
                c,
                '_' | '.' | '/' | '-' | ':' | '~' | '@' | '#' | '?' | '=' | '%' | '&'
            ))
    }) {
        let t = raw.trim_end_matches(['.', ',', ':', ';', ')', '?', '#']);
        let t = strip_line_suffix(t);
        if is_identifier(t) {
            out.push(t.to_string());
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// `file.rs:12` and `file.rs:12:5` name `file.rs`.
fn strip_line_suffix(t: &str) -> &str {
    let mut t = t;
    for _ in 0..2 {
        if let Some((head, tail)) = t.rsplit_once(':') {
            if !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit()) {
                t = head;
            }
        }
    }
    t
}

fn is_identifier(t: &str) -> bool {
    if t.len() < 6 || t.len() > 300 {
        return false;
    }
    if t.starts_with("http://") || t.starts_with("https://") {
        return t.len() >= 12;
    }
    let hex = t.bytes().all(|b| b.is_ascii_hexdigit());
    let digits = t.bytes().all(|b| b.is_ascii_digit());
    if digits {
        return t.len() >= 6;
    }
    if hex {
        return t.len() >= 7
            && t.bytes().any(|b| b.is_ascii_digit())
            && t.bytes().any(|b| b.is_ascii_alphabetic());
    }
    if is_uuid(t) {
        return true;
    }
    is_path(t)
}

fn is_uuid(t: &str) -> bool {
    let parts: Vec<&str> = t.split('-').collect();
    parts.len() == 5
        && parts.iter().map(|p| p.len()).eq([8, 4, 4, 4, 12])
        && parts
            .iter()
            .all(|p| p.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// A path: a slash and either an absolute or relative start or a file
/// extension at the end (`src/a.rs`, `/etc/hosts`, `./run.sh`).
fn is_path(t: &str) -> bool {
    if !t.contains('/') || t.contains("//") || t.contains(['?', '=', '&', '%', '@', '#']) {
        return false;
    }
    if ["/dev/null", "/dev/stdout", "/dev/stderr", "/usr/bin/env"].contains(&t) {
        return false;
    }
    // A rooted path of one component (`/worktrees`) is as often a regex
    // or a route as a file.
    let rooted = t.trim_end_matches('/').matches('/').count() >= 2
        && (t.starts_with('/')
            || t.starts_with("./")
            || t.starts_with("~/")
            || t.starts_with("../"));
    let ext = t.rsplit_once('.').is_some_and(|(head, e)| {
        !head.is_empty()
            && !head.ends_with('/')
            && (1..=5).contains(&e.len())
            && e.bytes().all(|b| b.is_ascii_alphanumeric())
    });
    (rooted && t.len() > 2 && t[1..].contains(|c: char| c.is_ascii_alphanumeric())) || ext
}

/// A hand-labelled set of demands: for each session (by file name), the
/// message ranges labelled exhaustively and every demand in them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Labels {
    /// `(file, first, last)`: messages `first..=last` of `file` are labelled.
    pub ranges: Vec<(String, usize, usize)>,
    /// Per range, the kinds it was labelled for (empty: every kind).
    pub range_kinds: Vec<Vec<DemandKind>>,
    /// `(file, at, kind, source)`, one per labelled demand.
    pub demands: Vec<(String, usize, DemandKind, usize)>,
}

/// Parses a label file: tab-separated lines, `#` comments and blank lines
/// ignored;
/// `range FILE FIRST LAST [KINDS]` marks messages `FIRST..=LAST` of `FILE`
/// as labelled (for the comma-separated `KINDS` only, when given), `demand FILE AT KIND SOURCE [NOTE]` is one demand (message
/// indices of the imported session's main chain). A bad line is an error
/// naming `path`, its line and the column of the bad field, and the fix.
pub fn parse_labels(path: &std::path::Path, text: &str) -> crate::error::LabResult<Labels> {
    let mut labels = Labels::default();
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let fields: Vec<(usize, &str)> = {
            let mut col = 1;
            line.split('\t')
                .map(|f| {
                    let at = col;
                    col += f.chars().count() + 1;
                    (at, f)
                })
                .collect()
        };
        let bad = |i: usize, message: String| {
            let column = fields.get(i).map_or(line.chars().count() + 1, |f| f.0);
            crate::error::LabError::Input {
                file: path.to_path_buf(),
                line: n + 1,
                column,
                message,
                fix: "write `range<TAB>FILE<TAB>FIRST<TAB>LAST` or `demand<TAB>FILE<TAB>AT<TAB>KIND<TAB>SOURCE[<TAB>NOTE]`, indices as whole numbers, KIND one of reread, edit_old, identifier, quote, instruction; a range may end with a fifth field, the kinds it was labelled for (comma-separated)".to_string(),
            }
        };
        let number = |i: usize| -> crate::error::LabResult<usize> {
            let f = fields
                .get(i)
                .map(|f| f.1)
                .ok_or_else(|| bad(i, "a field is missing".into()))?;
            f.trim()
                .parse()
                .map_err(|_| bad(i, format!("`{f}` is not a message index")))
        };
        let file = || -> crate::error::LabResult<String> {
            match fields.get(1).map(|f| f.1.trim()) {
                Some(f) if !f.is_empty() => Ok(f.to_string()),
                _ => Err(bad(1, "the session file name is missing".into())),
            }
        };
        match fields[0].1.trim() {
            "range" => {
                let (first, last) = (number(2)?, number(3)?);
                if last < first {
                    return Err(bad(
                        3,
                        format!("the range ends ({last}) before it starts ({first})"),
                    ));
                }
                let mut kinds = Vec::new();
                if let Some((_, field)) = fields.get(4).filter(|f| !f.1.trim().is_empty()) {
                    for k in field.split(',') {
                        kinds.push(DemandKind::from_name(k.trim()).ok_or_else(|| {
                            bad(4, format!("unknown demand kind `{}`", k.trim()))
                        })?);
                    }
                }
                labels.ranges.push((file()?, first, last));
                labels.range_kinds.push(kinds);
            }
            "demand" => {
                let kind_field = fields.get(3).map(|f| f.1.trim()).unwrap_or("");
                let kind = DemandKind::from_name(kind_field)
                    .ok_or_else(|| bad(3, format!("unknown demand kind `{kind_field}`")))?;
                let (at, source) = (number(2)?, number(4)?);
                if source >= at {
                    return Err(bad(
                        4,
                        format!("the source ({source}) is not before the use ({at})"),
                    ));
                }
                labels.demands.push((file()?, at, kind, source));
            }
            other => return Err(bad(0, format!("unknown line kind `{other}`"))),
        }
    }
    Ok(labels)
}

/// How an extractor's demands compare with a labelled set.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Score {
    /// Predicted (use, source) pairs that are labelled.
    pub true_positives: usize,
    /// Predicted pairs in a labelled range that are not labelled.
    pub false_positives: usize,
    /// Labelled pairs not predicted.
    pub false_negatives: usize,
}

impl Score {
    /// `tp / (tp + fp)`; 1 when nothing was predicted.
    pub fn precision(&self) -> f64 {
        let n = self.true_positives + self.false_positives;
        if n == 0 {
            1.0
        } else {
            self.true_positives as f64 / n as f64
        }
    }

    /// `tp / (tp + fn)`; 1 when nothing was labelled.
    pub fn recall(&self) -> f64 {
        let n = self.true_positives + self.false_negatives;
        if n == 0 {
            1.0
        } else {
            self.true_positives as f64 / n as f64
        }
    }
}

/// Scores `predicted` demands of `file` against the labels: a demand is
/// its (use message, source message) pair; only uses inside a range
/// labelled for their kind count. Also the false positives themselves, for their classes.
pub fn score(labels: &Labels, file: &str, predicted: &[Demand]) -> (Score, Vec<Demand>) {
    let in_range = |at: usize, kind: DemandKind| {
        labels.ranges.iter().enumerate().any(|(i, (f, a, b))| {
            let kinds = labels.range_kinds.get(i).map_or(&[][..], |k| &k[..]);
            f == file && (*a..=*b).contains(&at) && (kinds.is_empty() || kinds.contains(&kind))
        })
    };
    let truth: HashSet<(usize, usize)> = labels
        .demands
        .iter()
        .filter(|d| d.0 == file)
        .map(|d| (d.1, d.3))
        .collect();
    let mut seen: HashSet<(usize, usize)> = HashSet::new();
    let mut fps = Vec::new();
    let mut tp = 0;
    for d in predicted.iter().filter(|d| in_range(d.at, d.kind)) {
        if !seen.insert((d.at, d.source)) {
            continue;
        }
        if truth.contains(&(d.at, d.source)) {
            tp += 1;
        } else {
            fps.push(d.clone());
        }
    }
    let score = Score {
        true_positives: tp,
        false_positives: fps.len(),
        false_negatives: truth.len() - tp,
    };
    (score, fps)
}

/// One session's demands: an element of `sessions` in `lab import
/// --demands --format json`, and `DIR/SESSION/demands.json` of a dump
/// (`lab schema demands`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct SessionDemands {
    /// The session's name.
    pub session: String,
    /// Its demands, in order of use (indices into its main conversation).
    pub demands: Vec<Demand>,
}

/// The JSON Schema of [`SessionDemands`].
pub fn schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(SessionDemands)).unwrap_or_default()
}

/// `lab import FILE... --demands`: every session's demands, as a table
/// (one row per demand) or JSON.
pub fn command(
    files: &[std::path::PathBuf],
    options: &super::ImportOptions,
    format: crate::render::Format,
) -> crate::error::LabResult<String> {
    let mut all = Vec::new();
    for f in files {
        for s in super::import_file_sessions(f, options)? {
            all.push(SessionDemands {
                session: s.label.clone(),
                demands: extract(&s.main),
            });
        }
    }
    if format == crate::render::Format::Json {
        return Ok(crate::render::json(&serde_json::json!({ "sessions": all })));
    }
    let rows: Vec<Vec<String>> = all
        .iter()
        .flat_map(|s| {
            s.demands.iter().map(|d| {
                vec![
                    s.session.clone(),
                    format!("{}.{}", d.at, d.block),
                    d.kind.name().to_string(),
                    format!("{}.{}", d.source, d.source_block),
                    d.span
                        .chars()
                        .take(60)
                        .collect::<String>()
                        .replace('\n', " "),
                ]
            })
        })
        .collect();
    let mut out = crate::render::table(
        &[
            "session",
            "use (message.block)",
            "kind",
            "source (message.block)",
            "span",
        ],
        rows,
        format == crate::render::Format::Markdown,
    );
    for s in &all {
        out.push_str(&format!(
            "{}: {} demands\n",
            crate::render::cell_text(&s.session, false),
            s.demands.len()
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: &str, name: &str, input: serde_json::Value) -> Message {
        Message::assistant(vec![Block::ToolUse {
            id: id.into(),
            name: name.into(),
            input: input.into(),
        }])
    }

    fn result(id: &str, content: &str) -> Message {
        Message::tool_results(vec![(id.into(), content.into())])
    }

    #[test]
    fn a_reread_an_edit_and_an_identifier_are_found_with_their_sources() {
        let body = "     1→fn main() {\n     2→    let deploy_key = \"a1b2c3d4e5\";\n     3→}\n";
        let m = vec![
            Message::user_text("fix the key in src/main.rs"),
            call("t1", "Read", json!({"file_path": "/w/src/main.rs"})),
            result("t1", body),
            call(
                "t2",
                "Edit",
                json!({"file_path": "/w/src/main.rs", "old_string": "    let deploy_key = \"a1b2c3d4e5\";", "new_string": "x"}),
            ),
            result("t2", "ok"),
            call("t3", "Read", json!({"file_path": "/w/src/main.rs"})),
            result("t3", body),
        ];
        let d = extract(&m);
        let kinds: Vec<(usize, DemandKind, usize)> =
            d.iter().map(|d| (d.at, d.kind, d.source)).collect();
        assert!(kinds.contains(&(3, DemandKind::EditOld, 2)), "{d:?}");
        assert!(kinds.contains(&(5, DemandKind::Reread, 2)), "{d:?}");
        // The first read's path is the user's (a tail of it); by the
        // re-read the model had written it itself.
        assert!(kinds.contains(&(1, DemandKind::Identifier, 0)), "{d:?}");
        assert!(
            !kinds
                .iter()
                .any(|k| k.0 == 5 && k.1 == DemandKind::Identifier),
            "{d:?}"
        );
        assert_eq!(
            d.iter().filter(|x| x.at == 3 && x.source == 2).count(),
            1,
            "one demand per source"
        );
    }

    #[test]
    fn identifiers_are_paths_hashes_and_long_numbers_not_words() {
        let ids = identifiers(
            "see src/lib.rs:12, commit 9f3e2a1b and run 1234567; the word version and 2024",
        );
        assert_eq!(ids, vec!["1234567", "9f3e2a1b", "src/lib.rs"]);
        assert!(identifiers("deadbeef-and-more words").is_empty());
    }

    #[test]
    fn a_long_quote_of_a_result_is_found_and_a_short_one_is_not() {
        let line =
            "error[E0502]: cannot borrow `self.builder` as immutable because it is also borrowed";
        let m = vec![
            call("t1", "Bash", json!({"command": "cargo check"})),
            result("t1", &format!("compiling\n{line}\n")),
            Message::assistant(vec![Block::Text {
                text: format!("The compiler says: {line}."),
            }]),
            Message::assistant(vec![Block::Text {
                text: "cannot borrow".into(),
            }]),
        ];
        let d = extract(&m);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!((d[0].at, d[0].kind, d[0].source), (2, DemandKind::Quote, 1));
    }

    #[test]
    fn a_bad_label_line_names_its_line_and_column() {
        let p = std::path::Path::new("l.tsv");
        let ok = parse_labels(
            p,
            "# c\nrange\ta.jsonl\t1\t9\ndemand\ta.jsonl\t5\treread\t2\tnote\n",
        )
        .unwrap();
        assert_eq!(ok.ranges.len() + ok.demands.len(), 2);
        let e = parse_labels(p, "range\ta\t1\t9\ndemand\ta\t5\tlook\t2\n").unwrap_err();
        assert!(
            e.to_string()
                .contains("l.tsv:2:12: unknown demand kind `look`"),
            "{e}"
        );
        let e = parse_labels(p, "demand\ta\t5\treread\tx\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("l.tsv:1:19: `x` is not a message index"), "{e}");
    }

    #[test]
    fn a_rule_acted_on_later_is_an_instruction_demand_once() {
        let m = vec![
            Message::user_text("Always run tests with `cargo nextest run` and never use --release."),
            Message::user_text("This session is being continued from a previous conversation. Always use `make all`."),
            call("t1", "Bash", json!({"command": "ls"})),
            result("t1", "src"),
            call("t2", "Bash", json!({"command": "cargo nextest run -p a"})),
            result("t2", "ok"),
            call("t3", "Bash", json!({"command": "cargo nextest run -p b && make all"})),
        ];
        let d: Vec<(usize, usize)> = extract(&m)
            .iter()
            .filter(|d| d.kind == DemandKind::Instruction)
            .map(|d| (d.at, d.source))
            .collect();
        // The first call carrying the rule's command acts on it; a later
        // one is no second demand; the product's summary is no rule.
        assert_eq!(d, vec![(4, 0)]);
        assert_eq!(
            rule_tokens("Use `gh` to log in, then always pass --no-verify to ./run.sh"),
            vec!["--no-verify", "./run.sh"]
        );
        assert!(rule_tokens("the `cargo build` output, --release").is_empty());
    }

    #[test]
    fn a_session_without_tool_output_has_no_demands() {
        assert!(extract(&[Message::user_text("hi")]).is_empty());
        assert!(extract(&[]).is_empty());
    }
}
