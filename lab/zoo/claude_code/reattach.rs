//! What Claude Code sends again after an automatic compaction besides the
//! summary: the files it read or wrote most recently and the plan.
//!
//! Read in the unofficial mirror `claude-code-best/claude-code@3af5497d`
//! (approximate, no code copied):
//! - `src/services/compact/compact.ts`: `createPostCompactFileAttachments`
//!   takes the read-file state (every file the Read, Write and Edit tools
//!   touched, with the time of the touch), drops the plan file and the
//!   `CLAUDE.md` memory files, keeps the [`POST_COMPACT_MAX_FILES_TO_RESTORE`]
//!   newest, reads each again with a limit of
//!   [`POST_COMPACT_MAX_TOKENS_PER_FILE`] (a file over it comes back as a
//!   path only, a `compact_file_reference`), and keeps attachments in that
//!   order while their rough size (`length / 4`) stays within
//!   [`POST_COMPACT_TOKEN_BUDGET`]; `createPlanAttachmentIfNeeded` then adds
//!   the plan (`plan_file_reference`);
//! - `src/utils/messages.ts`: each attachment becomes meta user messages
//!   wrapped in `<system-reminder>` (a file as a Read call and its result),
//!   and consecutive user messages reach the API as one message.
//!
//! A replay cannot read the files again, so a file's content is what the
//! log last showed of it: its last Read result as recorded, or the content
//! the session wrote (Write, or an Edit applied to content the log shows),
//! numbered as the Read tool numbers lines. A file whose content the log
//! does not show (edited after a Read the lab cannot un-number) comes back
//! as a path only. The plan is the last `ExitPlanMode` call's `plan`.
//!
//! A file last Read with an offset or a limit comes back whole: the
//! product's restore re-reads every file with no offset and no limit.
//! Read in npm `@anthropic-ai/claude-code` 2.1.38 `cli.js` (not kept):
//! `Ua4` (the post-compact restore; 2.0.22 `i$5`, 2.0.5 `Hj6` alike) sorts
//! the read-file state by time, keeps the `Ba4` = 5 newest and calls the
//! file attachment `TyA(path, {…, fileReadingLimits: {maxTokens: VmY}},
//! …, "compact")` with no offset or limit, so the Read tool's `call`
//! (`offset = 1, limit = undefined`, `Ca4` slicing nothing) reads the whole
//! file, checked by `ya4` against `VmY` = 5,000 tokens of its text (over
//! it, `MaxFileReadTokenExceededError` makes it a `compact_file_reference`),
//! and keeps attachments while `JSON.stringify(attachment).length / 4`
//! stays within `fmY` = 50,000. The read-file state remembers the partial
//! Read's offset and limit, but the restore does not pass them. Where the
//! log shows the whole file (an earlier whole Read or Write, Edits applied,
//! and the partial Read agrees with it line for line) that content comes
//! back; otherwise its size is an estimate: the shown lines' tokens per
//! line times the file's line count the log recorded for the Read
//! (`toolUseResult.file.totalLines`, [`ReadLines`]), sent as a
//! [`Block::Unlogged`] whose `what` opens with [`ESTIMATED_FILE`].
//!
//! The read-file state lives in the product's process, not in its log, so
//! a resumed process starts it afresh ([`Resumed`]): before 2.0.59 empty
//! (a resumed process has read no file, and its first compaction
//! re-attaches only what it touched since), from 2.0.59 rebuilt from the
//! loaded messages' whole Reads and Writes (`triggers.json`,
//! `resume_read_state`, with the releases read). A file only edited or read
//! in part before the resume is not in it; its content, where it is, is
//! still what the disk holds (every earlier edit applied).

use std::collections::{HashMap, HashSet};

use crate::message::{Block, Message, Role};
use crate::policy::engine::ReadLines;
use crate::tokens::TokenCounter;

/// Newest files re-attached (mirror `POST_COMPACT_MAX_FILES_TO_RESTORE`).
pub const POST_COMPACT_MAX_FILES_TO_RESTORE: usize = 5;

/// Rough tokens all file attachments may take (mirror `POST_COMPACT_TOKEN_BUDGET`).
pub const POST_COMPACT_TOKEN_BUDGET: usize = 50_000;

/// A file over this many tokens comes back as a path only (mirror
/// `POST_COMPACT_MAX_TOKENS_PER_FILE`).
pub const POST_COMPACT_MAX_TOKENS_PER_FILE: usize = 5_000;

/// How the `what` of an [`Block::Unlogged`] file opens when a replay put
/// back an @-mentioned file the log does not keep (sized by mechanism):
/// the path follows. The product read it, so it is in the read-file state
/// and comes back after a compaction like any read file.
pub const MENTIONED_FILE: &str = "@-mentioned file ";

/// How the `what` of an [`Block::Unlogged`] file opens when the port
/// re-attaches a file the log showed only in part, sized by estimate (the
/// shown lines' tokens per line times the file's recorded line count): the
/// path follows.
pub const ESTIMATED_FILE: &str = "file read in part, re-read whole (size estimated) ";

/// The tool whose calls and results a file attachment imitates.
pub const FILE_READ_TOOL_NAME: &str = "Read";

/// Where the plan sits when the plan call names no file (the lab's placeholder).
pub const PLAN_FILE_PLACEHOLDER: &str = "~/.claude/plans/plan.md";

/// The limits, under their upstream names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Newest files kept.
    pub max_files: usize,
    /// Rough tokens of all file attachments.
    pub token_budget: usize,
    /// Tokens above which a file is a path only.
    pub max_tokens_per_file: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_files: POST_COMPACT_MAX_FILES_TO_RESTORE,
            token_budget: POST_COMPACT_TOKEN_BUDGET,
            max_tokens_per_file: POST_COMPACT_MAX_TOKENS_PER_FILE,
        }
    }
}

/// What comes back after a compaction: the text blocks to follow the
/// summary in its user message, and what each one restores.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Restored {
    /// `<system-reminder>` text blocks, in the product's order.
    pub blocks: Vec<String>,
    /// Files known only by their size (an @-mentioned file a replay put
    /// back): `(what, tokens)`, sent as [`Block::Unlogged`] after the blocks.
    pub unlogged: Vec<(String, usize)>,
    /// What they restore: a path, `path (path only)`, or `plan`.
    pub items: Vec<String>,
}

impl Restored {
    /// Chars of every block.
    pub fn chars(&self) -> usize {
        self.blocks.iter().map(|b| b.chars().count()).sum()
    }
}

/// What the log shows of one file at its last touch (`Default`: nothing,
/// touched first).
#[derive(Debug, Clone, Default)]
struct FileState {
    /// Position of the last touch (later is newer).
    order: usize,
    /// The Read result as the model would see it, when known.
    shown: Option<String>,
    /// The file's text without line numbers, when known (to apply edits).
    raw: Option<String>,
    /// Its tokens, when it is known only by its size (an @-mentioned
    /// file put back as [`Block::Unlogged`]).
    sized: Option<usize>,
    /// Its whole size by estimate, when the log showed only part of it.
    estimated: Option<Estimate>,
    /// Whether the file is in the read-file state (a file touched only in
    /// ways a resumed process forgot is tracked for its content alone).
    member: bool,
}

/// A file's whole size estimated from the part a Read showed.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Estimate {
    /// Tokens of the attachment as sent (the Read call and the numbered
    /// result, each a `<system-reminder>`).
    sent: f64,
    /// Tokens of the file's text alone (what the 5,000-token cap checks).
    text: f64,
    /// Characters of the attachment (the budget's rough size is a quarter).
    chars: f64,
}

impl Estimate {
    /// The estimate after an edit replaced `old` by `new` once.
    fn edited(self, old: &str, new: &str, tokens: &dyn TokenCounter) -> Estimate {
        let dt = tokens.count(new) as f64 - tokens.count(old) as f64;
        let dc = new.chars().count() as f64 - old.chars().count() as f64;
        Estimate {
            sent: (self.sent + dt).max(0.0),
            text: (self.text + dt).max(0.0),
            chars: (self.chars + dc).max(0.0),
        }
    }
}

/// Where the read-file state of a resumed process starts: the tool calls
/// of the history it loaded, and whether it rebuilt the state from them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resumed {
    /// The `tool_use` ids in the history at the latest resume.
    pub before: HashSet<String>,
    /// Whether the release rebuilds the state from the loaded messages'
    /// whole Reads and Writes (2.0.59 on); else it starts empty.
    pub rebuilds: bool,
}

impl Resumed {
    /// A resume with `history` loaded, under a release that `rebuilds`.
    pub fn at(history: &[Message], rebuilds: bool) -> Resumed {
        let before = history
            .iter()
            .flat_map(|m| m.tool_use_ids())
            .map(str::to_string)
            .collect();
        Resumed { before, rebuilds }
    }

    /// Whether the call `id` of `tool` (with `input`) puts its file in the
    /// read-file state: any call after the resume; one before it only if
    /// the release rebuilds and it is a whole Read or a Write.
    fn admits(&self, id: &str, tool: &str, input: &serde_json::Value) -> bool {
        if !self.before.contains(id) {
            return true;
        }
        let whole_read = tool == FILE_READ_TOOL_NAME && !is_partial(input);
        self.rebuilds && (whole_read || tool == "Write")
    }
}

/// The attachments for `history` (the messages being summarised);
/// `read_lines`: the line count of the file each Read showed, where the
/// log recorded it (sizes a file last Read in part); `resumed`: where the
/// latest resume left the read-file state, if the product resumed.
pub fn restore(
    history: &[Message],
    limits: Limits,
    tokens: &dyn TokenCounter,
    read_lines: Option<&ReadLines>,
    resumed: Option<&Resumed>,
) -> Restored {
    let files = file_state(history, read_lines, tokens, resumed);
    let mut newest: Vec<(&String, &FileState)> =
        files.iter().filter(|(p, _)| !excluded(p)).collect();
    newest.sort_by_key(|f| std::cmp::Reverse(f.1.order));
    let mut out = Restored::default();
    let mut used = 0;
    for (path, state) in newest.into_iter().take(limits.max_files) {
        if let (None, Some(t)) = (&state.shown, state.sized) {
            if t <= limits.max_tokens_per_file {
                if used + t > limits.token_budget {
                    continue;
                }
                used += t;
                out.unlogged.push((format!("{MENTIONED_FILE}{path}"), t));
                out.items.push(path.clone());
                continue;
            }
        }
        if let (None, Some(e)) = (&state.shown, state.estimated) {
            if e.text <= limits.max_tokens_per_file as f64 {
                let rough = (e.chars / 4.0).round() as usize;
                if used + rough > limits.token_budget {
                    continue;
                }
                used += rough;
                let sent = e.sent.round() as usize;
                out.unlogged.push((format!("{ESTIMATED_FILE}{path}"), sent));
                out.items.push(format!("{path} (whole, estimated)"));
                continue;
            }
        }
        // The product caps the file's text (`ya4`), not the numbered result.
        let text_tokens = |shown: &str| match &state.raw {
            Some(raw) => tokens.count(raw),
            None => tokens.count(shown),
        };
        let (blocks, item) = match state.shown.as_deref() {
            Some(text) if text_tokens(text) <= limits.max_tokens_per_file => {
                (file_blocks(path, text), path.clone())
            }
            _ => (vec![reference_block(path)], format!("{path} (path only)")),
        };
        let rough = blocks.iter().map(|b| b.chars().count()).sum::<usize>() / 4;
        if used + rough > limits.token_budget {
            continue;
        }
        used += rough;
        out.blocks.extend(blocks);
        out.items.push(item);
    }
    if let Some(block) = plan_block(history) {
        out.blocks.push(block);
        out.items.push("plan".into());
    }
    out
}

/// The plan file and memory files are never restored (mirror
/// `shouldExcludeFromPostCompactRestore`).
fn excluded(path: &str) -> bool {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    name == "CLAUDE.md" || name == "CLAUDE.local.md" || path.contains("/.claude/plans/")
}

/// Every file the Read, Write, Edit and MultiEdit tools touched with
/// success, at its last touch; a partial Read sized with `read_lines`.
/// After a resume only the files `resumed` admits are in it, each at its
/// last admitted touch, with the content every touch left on disk.
fn file_state(
    history: &[Message],
    read_lines: Option<&ReadLines>,
    tokens: &dyn TokenCounter,
    resumed: Option<&Resumed>,
) -> HashMap<String, FileState> {
    let results: HashMap<&str, &str> = history
        .iter()
        .filter(|m| m.role == Role::User)
        .flat_map(|m| m.blocks())
        .filter_map(|b| match b {
            Block::ToolResult {
                tool_use_id,
                content,
            } => Some((tool_use_id.as_str(), content.as_str())),
            _ => None,
        })
        .collect();
    let mut files: HashMap<String, FileState> = HashMap::new();
    // Every block in order: a put-back mention is touched where its prompt is.
    let blocks = history
        .iter()
        .flat_map(|m| m.blocks().iter().map(|b| (m.role, b)));
    for (order, (role, block)) in blocks.enumerate() {
        if let (Role::User, Block::Unlogged { what, tokens: n }) = (role, block) {
            let blank = FileState {
                order,
                member: true,
                ..FileState::default()
            };
            // A file an earlier compaction re-attached is read again, so it
            // is in the read-file state at that message.
            if let Some(path) = what.strip_prefix(MENTIONED_FILE) {
                let sized = Some(*n);
                files.insert(path.to_string(), FileState { sized, ..blank });
            } else if let Some(path) = what.strip_prefix(ESTIMATED_FILE) {
                let (sent, chars) = (*n as f64, *n as f64 * 4.0);
                let e = Estimate {
                    sent,
                    text: sent,
                    chars,
                };
                let estimated = Some(e);
                files.insert(path.to_string(), FileState { estimated, ..blank });
            }
            continue;
        }
        let (Role::Assistant, Block::ToolUse { id, name, input }) = (role, block) else {
            continue;
        };
        let Some(result) = results.get(id.as_str()) else {
            continue;
        };
        let Some(path) = input.get("file_path").and_then(|p| p.as_str()) else {
            continue;
        };
        if result.starts_with("<tool_use_error>") {
            continue;
        }
        let lines = read_lines.and_then(|r| r.get(id)).copied();
        let touch = Touch {
            tool: name,
            path,
            input,
            result,
            lines,
        };
        let Some(state) = touched(&touch, files.get(path), tokens) else {
            continue;
        };
        // Content follows every touch (the disk); membership and time only
        // the touches the resumed process's state holds.
        let admitted = resumed.is_none_or(|r| r.admits(id, name, input));
        let (order, member) = match files.get(path) {
            Some(f) if !admitted => (f.order, f.member),
            _ => (order, admitted),
        };
        files.insert(
            path.to_string(),
            FileState {
                order,
                member,
                ..state
            },
        );
    }
    files.retain(|_, f| f.member);
    files
}

/// One successful call of a file tool, as the log shows it.
struct Touch<'a> {
    tool: &'a str,
    path: &'a str,
    input: &'a serde_json::Value,
    result: &'a str,
    /// The file's line count the log recorded for this call, if a Read.
    lines: Option<usize>,
}

/// The file after `touch`, from what the log showed of it `before`, or
/// `None` when the tool does not touch the read-file state.
fn touched(
    touch: &Touch<'_>,
    before: Option<&FileState>,
    tokens: &dyn TokenCounter,
) -> Option<FileState> {
    let known = |raw: Option<String>| FileState {
        shown: raw.as_deref().map(numbered),
        raw,
        ..FileState::default()
    };
    let input = touch.input;
    let raw_before = before.and_then(|f| f.raw.clone());
    let estimate_before = before.and_then(|f| f.estimated);
    match touch.tool {
        FILE_READ_TOOL_NAME if is_partial(input) => Some(partial_read(touch, before, tokens)),
        FILE_READ_TOOL_NAME => Some(as_read(touch.result)),
        "Write" => Some(known(
            input
                .get("content")
                .and_then(|c| c.as_str())
                .map(String::from),
        )),
        "Edit" => match (raw_before, estimate_before) {
            (Some(raw), _) => Some(known(apply_edit(&raw, input))),
            // The whole file is known by its size: the edit moves it.
            (None, Some(e)) => Some(FileState {
                estimated: Some(edited(e, input, tokens)),
                ..known(None)
            }),
            (None, None) => Some(known(None)),
        },
        "MultiEdit" => {
            let edits = input.get("edits").and_then(|e| e.as_array());
            if let (None, Some(e), Some(edits)) = (&raw_before, estimate_before, edits) {
                let e = edits.iter().fold(e, |e, edit| edited(e, edit, tokens));
                return Some(FileState {
                    estimated: Some(e),
                    ..known(None)
                });
            }
            let after = edits.and_then(|edits| {
                edits
                    .iter()
                    .try_fold(raw_before?, |raw, edit| apply_edit(&raw, edit))
            });
            Some(known(after))
        }
        _ => None,
    }
}

/// Whether a Read names an offset or a limit (it may show part of the file).
fn is_partial(input: &serde_json::Value) -> bool {
    input.get("offset").is_some() || input.get("limit").is_some()
}

/// An estimate moved by one edit (`old_string` → `new_string`).
fn edited(e: Estimate, edit: &serde_json::Value, tokens: &dyn TokenCounter) -> Estimate {
    let text = |k: &str| edit.get(k).and_then(|v| v.as_str()).unwrap_or("");
    e.edited(text("old_string"), text("new_string"), tokens)
}

/// The file after a Read with an offset or a limit. The product re-reads
/// it whole after compacting, so: the whole text the log showed before,
/// where the shown lines agree with it (and its line count with the
/// recorded one); the shown result itself when it holds every line; else,
/// with the recorded line count, an estimate of the whole; without one,
/// the shown part as before this was modelled (a log that records no line
/// count gives nothing to size the rest by).
fn partial_read(
    touch: &Touch<'_>,
    before: Option<&FileState>,
    tokens: &dyn TokenCounter,
) -> FileState {
    let shown = numbered_lines(touch.result);
    let as_shown = as_read(touch.result);
    if let Some(f) = before.filter(|f| agrees(f.raw.as_deref(), &shown, touch.lines)) {
        return f.clone();
    }
    let Some(total) = touch.lines else {
        return as_shown;
    };
    let n = shown.len();
    if n == 0 || total <= n {
        return as_shown;
    }
    let part: Vec<String> = shown.iter().map(|(k, l)| format!("{k:>6}→{l}")).collect();
    let part = part.join("\n");
    let raw: Vec<&str> = shown.iter().map(|(_, l)| *l).collect();
    let raw = raw.join("\n");
    // The result as shown (with any trailing reminder the Read tool adds),
    // and the lines not shown at the shown lines' rate.
    let blocks = file_blocks(touch.path, touch.result);
    let scale = total as f64 / n as f64;
    let rest = (total - n) as f64 / n as f64;
    let sent: usize = blocks.iter().map(|b| tokens.count(b)).sum();
    let chars: usize = blocks.iter().map(|b| b.chars().count()).sum();
    let estimate = Estimate {
        sent: sent as f64 + tokens.count(&part) as f64 * rest,
        text: tokens.count(&raw) as f64 * scale,
        chars: chars as f64 + part.chars().count() as f64 * rest,
    };
    FileState {
        estimated: Some(estimate),
        ..FileState::default()
    }
}

/// The file as a Read's `result` shows it.
fn as_read(result: &str) -> FileState {
    FileState {
        shown: Some(result.to_string()),
        raw: unnumbered(result),
        ..FileState::default()
    }
}

/// Whether the whole text `raw` holds every shown `(number, line)` at its
/// number, and has `lines` lines where the log recorded a count.
fn agrees(raw: Option<&str>, shown: &[(usize, &str)], lines: Option<usize>) -> bool {
    let Some(raw) = raw else {
        return false;
    };
    // By `\n`, as the Read tool counts: `lines()` drops an empty last line.
    let all: Vec<&str> = raw.split('\n').collect();
    lines.is_none_or(|n| n == all.len())
        && !shown.is_empty()
        && shown
            .iter()
            .all(|(k, l)| k.checked_sub(1).and_then(|i| all.get(i)) == Some(l))
}

/// `raw` after one Edit (`old_string` replaced by `new_string`, every
/// match with `replace_all`), or `None` when `old_string` is empty or not
/// found (the text the log shows is not the file's).
pub fn apply_edit(raw: &str, edit: &serde_json::Value) -> Option<String> {
    let old = edit.get("old_string")?.as_str()?;
    let new = edit.get("new_string")?.as_str()?;
    if old.is_empty() || !raw.contains(old) {
        return None;
    }
    let all = edit.get("replace_all").and_then(|a| a.as_bool()) == Some(true);
    Some(if all {
        raw.replace(old, new)
    } else {
        raw.replacen(old, new, 1)
    })
}

/// Lines numbered as Claude Code's Read tool shows them: the number right
/// aligned in six columns, then `→`.
pub fn numbered(raw: &str) -> String {
    raw.lines()
        .enumerate()
        .map(|(i, line)| format!("{:>6}→{line}", i + 1))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The text of a Read result without its line numbers: every line up to
/// the first that is not numbered (a trailing reminder), `None` when the
/// first line is not.
fn unnumbered(shown: &str) -> Option<String> {
    let lines: Vec<&str> = numbered_lines(shown).into_iter().map(|(_, l)| l).collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// The numbered lines of a Read result with their numbers, up to the
/// first line that is not numbered.
fn numbered_lines(shown: &str) -> Vec<(usize, &str)> {
    shown
        .lines()
        .map_while(|l| {
            let (number, rest) = l.split_once('→')?;
            let digits = number.trim_start();
            let ok = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
            Some((digits.parse().ok().filter(|_| ok)?, rest))
        })
        .collect()
}

/// `<system-reminder>` around `text` (mirror `wrapInSystemReminder`).
fn reminder(text: &str) -> String {
    format!("<system-reminder>\n{text}\n</system-reminder>")
}

/// A file attachment: the Read call and its result (mirror
/// `normalizeAttachmentForAPI`, case `file`, text content).
fn file_blocks(path: &str, content: &str) -> Vec<String> {
    let input = serde_json::json!({ "file_path": path });
    vec![
        reminder(&format!(
            "Called the {FILE_READ_TOOL_NAME} tool with the following input: {input}"
        )),
        reminder(&format!(
            "Result of calling the {FILE_READ_TOOL_NAME} tool:\n{content}"
        )),
    ]
}

/// A path-only attachment (mirror case `compact_file_reference`).
fn reference_block(path: &str) -> String {
    reminder(&format!(
        "Note: {path} was read before the last conversation was summarized, but the contents are too large to include. Use {FILE_READ_TOOL_NAME} tool if you need to access it."
    ))
}

/// The plan attachment (mirror case `plan_file_reference`) from the last
/// `ExitPlanMode` call that carried a plan.
fn plan_block(history: &[Message]) -> Option<String> {
    let input = history
        .iter()
        .rev()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| m.blocks().iter().rev())
        .find_map(|b| match b {
            Block::ToolUse { name, input, .. }
                if name == "ExitPlanMode" && input.get("plan").is_some_and(|p| p.is_string()) =>
            {
                Some(input)
            }
            _ => None,
        })?;
    let plan = input.get("plan")?.as_str()?;
    let path = ["planFilePath", "filePath"]
        .iter()
        .find_map(|k| input.get(*k).and_then(|p| p.as_str()))
        .unwrap_or(PLAN_FILE_PLACEHOLDER);
    Some(reminder(&format!(
        "A plan file exists from plan mode at: {path}\n\nPlan contents:\n\n{plan}\n\nIf this plan is relevant to the current work and not already complete, continue working on it."
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::Approx;
    use serde_json::json;

    fn call(id: &str, tool: &str, input: serde_json::Value) -> Message {
        Message::assistant(vec![Block::ToolUse {
            id: id.into(),
            name: tool.into(),
            input: input.into(),
        }])
    }

    fn result(id: &str, text: &str) -> Message {
        Message::tool_results(vec![(id.into(), text.into())])
    }

    #[test]
    fn numbering_round_trips_and_stops_at_a_trailing_reminder() {
        let raw = "fn main() {}\n  let x = 1;";
        assert_eq!(numbered(raw), "     1→fn main() {}\n     2→  let x = 1;");
        let shown = format!(
            "{}\n\n<system-reminder>\nx\n</system-reminder>",
            numbered(raw)
        );
        assert_eq!(unnumbered(&shown).as_deref(), Some(raw));
        assert_eq!(unnumbered("File does not exist."), None);
    }

    #[test]
    fn the_five_newest_files_come_back_newest_first_with_edits_applied() {
        let mut h = vec![Message::user_text("go")];
        for i in 0..7 {
            let p = format!("/r/f{i}.rs");
            h.push(call(&format!("r{i}"), "Read", json!({ "file_path": p })));
            h.push(result(&format!("r{i}"), &numbered(&format!("body {i}"))));
        }
        h.push(call(
            "e",
            "Edit",
            json!({"file_path": "/r/f2.rs", "old_string": "body", "new_string": "edited"}),
        ));
        h.push(result("e", "The file /r/f2.rs has been updated."));
        h.push(call(
            "w",
            "Write",
            json!({"file_path": "/r/CLAUDE.md", "content": "m"}),
        ));
        h.push(result("w", "File created successfully"));
        let r = restore(&h, Limits::default(), &Approx, None, None);
        assert_eq!(
            r.items,
            ["/r/f2.rs", "/r/f6.rs", "/r/f5.rs", "/r/f4.rs", "/r/f3.rs"]
        );
        assert_eq!(
            r.blocks[0],
            "<system-reminder>\nCalled the Read tool with the following input: {\"file_path\":\"/r/f2.rs\"}\n</system-reminder>"
        );
        assert_eq!(
            r.blocks[1],
            "<system-reminder>\nResult of calling the Read tool:\n     1→edited 2\n</system-reminder>"
        );
        assert_eq!(r.blocks.len(), 10);
    }

    #[test]
    fn a_resumed_process_keeps_what_its_release_rebuilds() {
        let mut h = vec![Message::user_text("go")];
        let mut touch = |id: &str, tool: &str, input: serde_json::Value, out: &str| {
            h.push(call(id, tool, input));
            h.push(result(id, out));
        };
        let whole = |p: &str| json!({ "file_path": p });
        touch("a", "Read", whole("/r/a.rs"), &numbered("a 1"));
        touch(
            "b",
            "Read",
            json!({"file_path": "/r/b.rs", "limit": 1}),
            &numbered("b 1"),
        );
        touch(
            "c",
            "Write",
            json!({"file_path": "/r/c.rs", "content": "c 1"}),
            "ok",
        );
        touch("d", "Read", whole("/r/d.rs"), &numbered("d 1"));
        let edit = json!({"file_path": "/r/a.rs", "old_string": "a 1", "new_string": "a 2"});
        touch("e", "Edit", edit, "ok");
        let at_resume = h.clone();
        h.push(Message::user_text("resumed"));
        h.push(call("f", "Read", json!({ "file_path": "/r/f.rs" })));
        h.push(result("f", &numbered("f 1")));
        let restored = |rebuilds| {
            let r = Resumed::at(&at_resume, rebuilds);
            restore(&h, Limits::default(), &Approx, None, Some(&r))
        };
        // Before 2.0.59 the resumed process has read only what it read since.
        assert_eq!(restored(false).items, ["/r/f.rs"]);
        // From 2.0.59: the whole Reads and the Write before the resume, at
        // the time of that call (a's later edit made it no newer); not the
        // partial Read. A file comes back as the disk holds it: edited.
        let r = restored(true);
        assert_eq!(r.items, ["/r/f.rs", "/r/d.rs", "/r/c.rs", "/r/a.rs"]);
        assert!(r.blocks.last().unwrap().contains("1→a 2"), "{:?}", r.blocks);
        // Without a resume every file touched is in the state, at its last
        // touch (the control).
        let all = restore(&h, Limits::default(), &Approx, None, None).items;
        assert_eq!(all, ["/r/f.rs", "/r/a.rs", "/r/d.rs", "/r/c.rs", "/r/b.rs"]);
    }

    #[test]
    fn a_large_or_unknown_file_is_a_path_and_the_budget_and_errors_hold() {
        let big = numbered(&"word ".repeat(30_000));
        let h = vec![
            call("a", "Read", json!({"file_path": "/big"})),
            result("a", &big),
            call(
                "b",
                "Edit",
                json!({"file_path": "/unseen", "old_string": "x", "new_string": "y"}),
            ),
            result("b", "ok"),
            call("c", "Read", json!({"file_path": "/missing"})),
            result("c", "<tool_use_error>File does not exist.</tool_use_error>"),
        ];
        let r = restore(&h, Limits::default(), &Approx, None, None);
        assert_eq!(r.items, ["/unseen (path only)", "/big (path only)"]);
        assert!(r.blocks[1].contains("Note: /big was read before the last conversation was summarized, but the contents are too large to include. Use Read tool if you need to access it."));
        let tight = Limits {
            token_budget: 60,
            ..Limits::default()
        };
        assert_eq!(
            restore(&h, tight, &Approx, None, None).items,
            ["/unseen (path only)"]
        );
    }

    #[test]
    fn a_mentioned_file_known_by_its_size_comes_back_by_its_size() {
        let mention = |path: &str, tokens| Block::Unlogged {
            what: format!("{MENTIONED_FILE}{path}"),
            tokens,
        };
        let h = vec![Message::user_blocks(vec![
            Block::Text {
                text: "see @a.rs and @big.rs".into(),
            },
            mention("a.rs", 1_200),
            mention("big.rs", 9_000),
        ])];
        let r = restore(&h, Limits::default(), &Approx, None, None);
        assert_eq!(r.items, ["big.rs (path only)", "a.rs"]);
        assert_eq!(r.unlogged, [(format!("{MENTIONED_FILE}a.rs"), 1_200)]);
        assert_eq!(r.blocks.len(), 1);
    }

    /// A partly read file: `lines` numbered from `from`, each `text`.
    fn part(from: usize, lines: usize, text: &str) -> String {
        (from..from + lines)
            .map(|k| format!("{k:>6}→{text} {k}"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn a_file_read_in_part_comes_back_whole_by_estimate_or_as_a_path() {
        let h = vec![
            call(
                "a",
                "Read",
                json!({"file_path": "/a.py", "offset": 11, "limit": 10}),
            ),
            result("a", &part(11, 10, "x = compute(1)")),
            call("b", "Read", json!({"file_path": "/b.md", "limit": 10})),
            result("b", &part(1, 10, "word word word word")),
            call("c", "Read", json!({"file_path": "/c.rs", "limit": 2})),
            result("c", &part(1, 2, "fn c() {}")),
        ];
        let lines = ReadLines::from([("a".into(), 40), ("b".into(), 5_000), ("c".into(), 2)]);
        let r = restore(&h, Limits::default(), &Approx, Some(&lines), None);
        // /c.rs showed all its lines: it comes back as shown.
        assert_eq!(
            r.items,
            ["/c.rs", "/b.md (path only)", "/a.py (whole, estimated)"]
        );
        let (what, tokens) = &r.unlogged[0];
        assert_eq!(what, &format!("{ESTIMATED_FILE}/a.py"));
        // The shown part as sent, and 30 more lines at its rate.
        let shown = file_blocks("/a.py", &part(11, 10, "x = compute(1)"));
        let sent: usize = shown.iter().map(|b| Approx.count(b)).sum();
        let rest = 3 * Approx.count(&part(11, 10, "x = compute(1)"));
        assert_eq!(*tokens, sent + rest);
        // With no recorded line count the shown part is all there is.
        let r = restore(&h, Limits::default(), &Approx, None, None);
        assert_eq!(r.items, ["/c.rs", "/b.md", "/a.py"]);
        assert!(r.unlogged.is_empty());
    }

    #[test]
    fn a_part_that_agrees_with_the_whole_file_shown_before_brings_that_back_edited() {
        let whole = (1..=6).map(|k| format!("line {k}")).collect::<Vec<_>>();
        let whole = whole.join("\n");
        let mut h = vec![
            call("w", "Read", json!({"file_path": "/f"})),
            result("w", &numbered(&whole)),
            call(
                "p",
                "Read",
                json!({"file_path": "/f", "offset": 3, "limit": 2}),
            ),
            result("p", "     3→line 3\n     4→line 4"),
            call(
                "e",
                "Edit",
                json!({"file_path": "/f", "old_string": "line 6", "new_string": "six"}),
            ),
            result("e", "ok"),
        ];
        let lines = ReadLines::from([("w".into(), 6), ("p".into(), 6)]);
        let r = restore(&h, Limits::default(), &Approx, Some(&lines), None);
        assert_eq!(r.items, ["/f"]);
        assert!(r.blocks[1].contains("     5→line 5\n     6→six"));
        // A part that disagrees (the file changed on disk): an estimate,
        // moved by the edit after it.
        h[3] = result("p", "     3→changed\n     4→line 4");
        let r = restore(&h, Limits::default(), &Approx, Some(&lines), None);
        assert_eq!(r.items, ["/f (whole, estimated)"]);
        let shown = file_blocks("/f", "     3→changed\n     4→line 4");
        let sent: usize = shown.iter().map(|b| Approx.count(b)).sum();
        let rest = 2 * Approx.count("     3→changed\n     4→line 4");
        let moved = Approx.count("six") as i64 - Approx.count("line 6") as i64;
        assert_eq!(r.unlogged[0].1 as i64, (sent + rest) as i64 + moved);
    }

    #[test]
    fn the_last_plan_follows_the_files() {
        let h = vec![
            call("p1", "ExitPlanMode", json!({"plan": "old"})),
            result("p1", "ok"),
            call("p2", "ExitPlanMode", json!({"plan": "1. build\n2. test"})),
            result("p2", "ok"),
        ];
        let r = restore(&h, Limits::default(), &Approx, None, None);
        assert_eq!(r.items, ["plan"]);
        assert_eq!(
            r.blocks[0],
            format!("<system-reminder>\nA plan file exists from plan mode at: {PLAN_FILE_PLACEHOLDER}\n\nPlan contents:\n\n1. build\n2. test\n\nIf this plan is relevant to the current work and not already complete, continue working on it.\n</system-reminder>")
        );
    }
}
