//! What Claude Code attaches and does not log, mechanism by mechanism,
//! found and sized from the log's text alone (no recorded usage).
//!
//! Before each model call Claude Code gathers attachments (npm
//! `@anthropic-ai/claude-code` 2.0.5 `cli.js`, the function that runs every
//! `DW("label", …)`; the same labels in 2.0.22 and 2.1.38): `at_mentioned_files`,
//! `changed_files`, `nested_memory`, `plan_mode`, `todo_reminders`,
//! `background_shells` and others. The log keeps none of them. A message
//! shows where one could have been sent (a prompt naming `@path`, a command
//! that rewrote files the session had read, a partial Read, a skill call, a
//! todo call); [`evidence`] lists those places per [`Mechanism`] with the
//! product source ([`Mechanism::source`]).
//!
//! Only one mechanism's words can be sized from the text alone, and only
//! where the log shows the file: an @-mentioned file is sent as the Read
//! tool's call and result, so a whole-file Read of the same path elsewhere in
//! the log gives its size ([`Sizing::Read`]). In the session's first message
//! the first request's size, which every anchor may read, bounds the
//! mentioned files that no Read shows: what it holds beyond the release's
//! envelope and the logged text is split evenly among them
//! ([`Sizing::FirstRequest`]). A file read in part is sized by the
//! product's port when it re-attaches it whole after compacting
//! (`zoo::claude_code::reattach`, from the file's line count the log
//! records for the Read). The rest is counted, not sized: a changed
//! file comes back as a diff snippet of content the log never shows, a
//! skill's text is not logged, the todo and plan reminders' text is
//! determined by the log but their steady share is already in the
//! estimator's per-message rate (`notes/cost.md`), and CLAUDE.md is part of
//! the user context every request carries (the envelope).

use std::collections::HashMap;

use crate::message::{Block, Message, Role};
use crate::tokens::TokenCounter;

/// A way Claude Code attaches content its log does not keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mechanism {
    /// A prompt names a file with `@`: its content is sent as a Read.
    AtMentionedFile,
    /// A prompt names a directory with `@`: its `ls` listing is sent.
    AtMentionedDirectory,
    /// A command rewrote files the session had read (a git checkout,
    /// stash, pull, a commit whose hooks format, a formatter): each comes
    /// back as a diff snippet before the next call.
    ChangedByCommand,
    /// A Read with an offset or a limit: after a compaction the product
    /// reads the file again whole (up to 5,000 tokens).
    PartialRead,
    /// A skill was invoked: its text is sent, and re-sent after a
    /// compaction (2.1.x).
    InvokedSkill,
    /// The todo list changed: reminders of it follow while it is not
    /// touched again.
    TodoReminder,
    /// Plan mode: a reminder before every call while it is on.
    PlanMode,
    /// A CLAUDE.md read or edited: memory files are user context, sent
    /// with every request (and nested ones when a file below them is read).
    ClaudeMd,
}

/// Where the product does it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Source {
    /// The `cli.js` release read.
    pub release: &'static str,
    /// The attachment's label or type in it.
    pub label: &'static str,
    /// The (minified) function or constant that computes it.
    pub function: &'static str,
}

impl Mechanism {
    /// Every mechanism, in table order.
    pub const ALL: [Mechanism; 8] = [
        Mechanism::AtMentionedFile,
        Mechanism::AtMentionedDirectory,
        Mechanism::ChangedByCommand,
        Mechanism::PartialRead,
        Mechanism::InvokedSkill,
        Mechanism::TodoReminder,
        Mechanism::PlanMode,
        Mechanism::ClaudeMd,
    ];

    /// The name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::AtMentionedFile => "@-mentioned file",
            Mechanism::AtMentionedDirectory => "@-mentioned directory",
            Mechanism::ChangedByCommand => "file changed by a command",
            Mechanism::PartialRead => "partial Read (whole after compacting)",
            Mechanism::InvokedSkill => "invoked skill",
            Mechanism::TodoReminder => "todo reminder",
            Mechanism::PlanMode => "plan-mode reminder",
            Mechanism::ClaudeMd => "CLAUDE.md (user context)",
        }
    }

    /// The product source it was read in (npm tarballs, not kept).
    pub fn source(self) -> Source {
        let s = |release, label, function| Source {
            release,
            label,
            function,
        };
        match self {
            Mechanism::AtMentionedFile => s(
                "2.0.5",
                "at_mentioned_files",
                "lP6 (paths by sP6: (^|\\s)@\"…\" or (^|\\s)@\\S+\\b), read by Vq0 as the Read tool",
            ),
            Mechanism::AtMentionedDirectory => s(
                "2.0.5",
                "at_mentioned_files (type directory)",
                "lP6: `ls` of the path through the Bash tool",
            ),
            Mechanism::ChangedByCommand => s(
                "2.0.5",
                "changed_files (type edited_text_file)",
                "nP6: every readFileState entry whose mtime passed its read time, snippet y80(old, new)",
            ),
            Mechanism::PartialRead => s(
                "2.1.38",
                "file / compact_file_reference after compacting",
                "Ua4: TyA(path, maxTokens VmY = 5,000, \"compact\") with no offset or limit, the whole file; Ba4 = 5 newest, fmY = 50,000 in all (2.0.22 i$5, 2.0.5 Hj6)",
            ),
            Mechanism::InvokedSkill => s(
                "2.1.38",
                "invoked_skills",
                "createSkillAttachmentIfNeeded: 5,000 tokens per skill, 25,000 in all",
            ),
            Mechanism::TodoReminder => s(
                "2.0.5",
                "todo_reminders",
                "Zj6: after 7 assistant turns without TodoWrite, then every 3 (2.1.38: 10 / 10)",
            ),
            Mechanism::PlanMode => s("2.0.5", "plan_mode", "gP6: while the mode is plan"),
            Mechanism::ClaudeMd => s(
                "2.0.5",
                "nested_memory; user context",
                "aP6 (nested CLAUDE.md of a read file's directories); prependUserContext",
            ),
        }
    }
}

/// How a piece of evidence was sized from the log's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Sizing {
    /// From a whole-file Read of the same path elsewhere in the log.
    Read,
    /// From the first request's size: what it holds beyond the envelope
    /// and the logged text, split evenly among the files nothing else sizes.
    FirstRequest,
}

/// One place where the product would have attached content.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Evidence {
    /// The mechanism.
    pub mechanism: Mechanism,
    /// Index in `main` of the message it joins (the user message that
    /// carries it: the prompt, or the results after the call).
    pub at: usize,
    /// The path it concerns, where one is named.
    pub path: Option<String>,
    /// Its size in the counter's tokens and how, where the text gives one.
    pub sized: Option<(usize, Sizing)>,
}

/// Every place in `main` where one of the mechanisms would attach content,
/// in message order; @-mentioned files sized from a whole Read of the same
/// path where the log has one (counted with `counter`).
pub fn evidence(main: &[Message], counter: &dyn TokenCounter) -> Vec<Evidence> {
    let whole = whole_reads(main);
    let mut out = Vec::new();
    let next_user = |k: usize| (k + 1..main.len()).find(|&j| main[j].role == Role::User);
    for (k, m) in main.iter().enumerate() {
        match m.role {
            Role::User if is_prompt(m) => {
                for (path, dir) in at_mentions(&m.text()) {
                    let mechanism = match dir {
                        true => Mechanism::AtMentionedDirectory,
                        false => Mechanism::AtMentionedFile,
                    };
                    let sized = (!dir)
                        .then(|| matching(&whole, &path))
                        .flatten()
                        .map(|shown| (read_tokens(&path, shown, counter), Sizing::Read));
                    out.push(Evidence {
                        mechanism,
                        at: k,
                        path: Some(path),
                        sized,
                    });
                }
            }
            Role::User => {}
            Role::Assistant => {
                for b in m.blocks() {
                    let Some((mechanism, path)) = call_mechanism(b) else {
                        continue;
                    };
                    if let Some(at) = next_user(k) {
                        out.push(Evidence {
                            mechanism,
                            at,
                            path,
                            sized: None,
                        });
                    }
                }
            }
        }
    }
    out
}

/// The mechanism a tool call sets off, and the path it names.
fn call_mechanism(b: &Block) -> Option<(Mechanism, Option<String>)> {
    let Block::ToolUse { name, input, .. } = b else {
        return None;
    };
    let str_of = |k: &str| input.get(k).and_then(serde_json::Value::as_str);
    let path = str_of("file_path").map(str::to_string);
    if path.as_deref().is_some_and(|p| file_name(p) == "CLAUDE.md") {
        return Some((Mechanism::ClaudeMd, path));
    }
    match name.as_str() {
        "Bash" if changes_files(str_of("command")?) => Some((Mechanism::ChangedByCommand, None)),
        "Read" if input.get("offset").is_some() || input.get("limit").is_some() => {
            Some((Mechanism::PartialRead, path))
        }
        "Skill" => Some((Mechanism::InvokedSkill, str_of("skill").map(str::to_string))),
        "TodoWrite" | "TaskCreate" | "TaskUpdate" => Some((Mechanism::TodoReminder, None)),
        "EnterPlanMode" | "ExitPlanMode" => Some((Mechanism::PlanMode, None)),
        _ => None,
    }
}

/// Whether a shell command rewrites files in the working tree: a git
/// command that does (checkout, stash, pull…), a commit (its hooks may
/// format the staged files), a worktree set up, or a formatter.
pub fn changes_files(command: &str) -> bool {
    const FORMATTERS: [&str; 7] = [
        "prettier --write",
        "eslint --fix",
        "cargo fmt",
        "black ",
        "ruff format",
        "gofmt -w",
        "biome format",
    ];
    crate::tokens::recorded::reminders::rewrites_worktree(command)
        || command.contains("git commit")
        || command.contains("git worktree add")
        || FORMATTERS.iter().any(|f| command.contains(f))
}

fn file_name(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

/// A prompt the user typed: not tool results, not command output Claude
/// Code wraps in tags, not the product's continuation summary.
pub(super) fn is_prompt(m: &Message) -> bool {
    let text = m.text();
    !m.is_tool_result() && !text.starts_with('<') && !crate::import::is_product_summary(m)
}

/// The paths a prompt @-mentions, as Claude Code 2.0.5 extracts them
/// (`sP6`): `@"a path"`, or `@` then non-space characters up to the last
/// word boundary, at the start or after white space, each once, quoted
/// ones first; whether each names a directory (written with a trailing
/// `/`). An MCP resource (`server:uri`) is not a path.
pub fn at_mentions(text: &str) -> Vec<(String, bool)> {
    let mut quoted = Vec::new();
    let mut bare = Vec::new();
    let mut before = ' ';
    for (k, c) in text.char_indices() {
        if c == '@' && before.is_whitespace() {
            let rest = &text[k + 1..];
            if let Some(q) = rest.strip_prefix('"') {
                if let Some(end) = q.find('"').filter(|&e| e > 0) {
                    quoted.push(q[..end].to_string());
                }
            } else {
                let token = rest.split(char::is_whitespace).next().unwrap_or("");
                let path = token.trim_end_matches(|c: char| !(c.is_alphanumeric() || c == '_'));
                if !path.is_empty() && !path.contains(':') {
                    // A directory is written with a slash after its name.
                    let dir = token[path.len()..].starts_with('/');
                    bare.push((path.to_string(), dir));
                }
            }
        }
        before = c;
    }
    let mut out: Vec<(String, bool)> = quoted.into_iter().map(|p| (p, false)).collect();
    for b in bare {
        if !out.iter().any(|(p, _)| *p == b.0) {
            out.push(b);
        }
    }
    out
}

/// The largest whole-file Read result of each path in `main`.
fn whole_reads(main: &[Message]) -> HashMap<&str, &str> {
    let results: HashMap<&str, &str> = main
        .iter()
        .flat_map(|m| m.blocks())
        .filter_map(|b| match b {
            Block::ToolResult {
                tool_use_id,
                content,
            } => Some((tool_use_id.as_str(), content.as_str())),
            _ => None,
        })
        .collect();
    let mut out: HashMap<&str, &str> = HashMap::new();
    for b in main.iter().flat_map(|m| m.blocks()) {
        let Block::ToolUse { id, name, input } = b else {
            continue;
        };
        let whole = input.get("offset").is_none() && input.get("limit").is_none();
        let path = input.get("file_path").and_then(serde_json::Value::as_str);
        let result = results.get(id.as_str()).copied();
        if let (true, "Read", Some(path), Some(result)) = (whole, name.as_str(), path, result) {
            if result.starts_with("<tool_use_error>") {
                continue;
            }
            let e = out.entry(path).or_insert(result);
            if result.len() > e.len() {
                *e = result;
            }
        }
    }
    out
}

/// The whole Read of the path a mention names (absolute, or relative to
/// a working directory the log does not name: the Read path ends with it).
fn matching<'a>(whole: &HashMap<&str, &'a str>, mention: &str) -> Option<&'a str> {
    let mention = mention.trim_start_matches("./");
    let mut found: Vec<(&str, &str)> = whole
        .iter()
        .filter(|(p, _)| {
            **p == mention
                || p.strip_suffix(mention)
                    .is_some_and(|head| head.ends_with('/') || head.ends_with('\\'))
        })
        .map(|(p, r)| (*p, *r))
        .collect();
    // The same file under two working trees: the largest, in path order
    // for a stable choice.
    found.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(b.0)));
    found.first().map(|(_, r)| *r)
}

/// An @-mentioned file as Claude Code sends it: the Read call and its
/// result, each a `<system-reminder>`.
fn read_tokens(path: &str, shown: &str, counter: &dyn TokenCounter) -> usize {
    let input = serde_json::json!({ "file_path": path });
    counter.count(&format!(
        "<system-reminder>\nCalled the Read tool with the following input: {input}\n</system-reminder>"
    )) + counter.count(&format!(
        "<system-reminder>\nResult of calling the Read tool:\n{shown}\n</system-reminder>"
    ))
}

/// What an @-mentioned file put back carries as its `what`: the path
/// after it, so the product's port re-attaches it after a compaction.
pub const MENTIONED_FILE: &str = crate::zoo::claude_code::reattach::MENTIONED_FILE;

/// The @-mentioned files of `evidence` that are sized, as the blocks put
/// back: (message index, `what`, tokens).
pub fn mentioned_files(evidence: &[Evidence]) -> Vec<(usize, String, usize)> {
    evidence
        .iter()
        .filter(|e| e.mechanism == Mechanism::AtMentionedFile)
        .filter_map(|e| {
            let (tokens, _) = e.sized?;
            Some((
                e.at,
                format!("{MENTIONED_FILE}{}", e.path.as_deref()?),
                tokens,
            ))
        })
        .collect()
}

/// Sizes the unsized @-mentioned files and directories of the first
/// message (`first`, its index in `main`) from `remainder`: what the first
/// request holds beyond the envelope and the logged messages, less the
/// mentions already sized, split evenly among the unsized ones (the log
/// gives no better split).
pub fn size_from_first_request(evidence: &mut [Evidence], first: usize, remainder: usize) {
    let is_first = |e: &Evidence| {
        e.at == first
            && matches!(
                e.mechanism,
                Mechanism::AtMentionedFile | Mechanism::AtMentionedDirectory
            )
    };
    let sized: usize = evidence
        .iter()
        .filter(|e| is_first(e))
        .filter_map(|e| e.sized.map(|s| s.0))
        .sum();
    let unsized_n = evidence
        .iter()
        .filter(|e| is_first(e) && e.sized.is_none())
        .count();
    let Some(each) = remainder.saturating_sub(sized).checked_div(unsized_n) else {
        return;
    };
    for e in evidence.iter_mut() {
        if is_first(e) && e.sized.is_none() {
            e.sized = Some((each, Sizing::FirstRequest));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn mentions_are_read_as_claude_code_reads_them() {
        let m =
            at_mentions("see @src/a.rs, @\"my file.md\" and @docs/, or a@b.c @srv:res/x @src/a.rs");
        assert_eq!(
            m,
            [
                ("my file.md".to_string(), false),
                ("src/a.rs".to_string(), false),
                ("docs".to_string(), true),
            ]
        );
    }

    #[test]
    fn a_mentioned_file_is_sized_from_a_whole_read_of_it_and_the_rest_from_the_first_request() {
        let main = vec![
            Message::user_text("split @src/a.rs and @src/b.rs please"),
            Message::assistant(vec![Block::ToolUse {
                id: "r".into(),
                name: "Read".into(),
                input: json!({"file_path": "/home/u/p/src/a.rs"}).into(),
            }]),
            Message::tool_results(vec![("r".into(), "     1→fn a() {}".into())]),
            Message::assistant(vec![Block::ToolUse {
                id: "p".into(),
                name: "Read".into(),
                input: json!({"file_path": "/home/u/p/src/b.rs", "limit": 1}).into(),
            }]),
            Message::tool_results(vec![("p".into(), "     1→fn b() {}".into())]),
        ];
        let counter = crate::tokens::Approx;
        let mut ev = evidence(&main, &counter);
        let kinds: Vec<(Mechanism, usize, bool)> = ev
            .iter()
            .map(|e| (e.mechanism, e.at, e.sized.is_some()))
            .collect();
        assert_eq!(
            kinds,
            [
                (Mechanism::AtMentionedFile, 0, true),
                (Mechanism::AtMentionedFile, 0, false),
                (Mechanism::PartialRead, 4, false),
            ]
        );
        let a = ev[0].sized.unwrap().0;
        size_from_first_request(&mut ev, 0, a + 700);
        assert_eq!(ev[1].sized, Some((700, Sizing::FirstRequest)));
        let put = mentioned_files(&ev);
        assert_eq!(put[0], (0, "@-mentioned file src/a.rs".to_string(), a));
    }

    #[test]
    fn commands_that_change_read_files_are_told_apart() {
        assert!(changes_files("git commit -m x"));
        assert!(changes_files("cd ~/t && git worktree add ../x b"));
        assert!(changes_files("git checkout main"));
        assert!(changes_files("npx prettier --write src"));
        assert!(!changes_files("git status --short"));
        assert!(!changes_files("git checkout -b new"));
    }
}
