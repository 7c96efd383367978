//! Files changed on disk outside the product's own edits, sized by
//! mechanism where the log shows them before and after.
//!
//! Before every model call Claude Code checks each file in its read-file
//! state (every file a Read, Edit or Write touched, emptied at a compaction
//! but for the files it restores) and, for one whose modification time
//! passed the time it was read, reads it again and attaches the change
//! (npm `@anthropic-ai/claude-code` 2.0.5 `cli.js` `nP6`, label
//! `changed_files`, attachment `edited_text_file`): the hunks of a line
//! diff of the state's content against the new one with 8 lines of
//! context (`y80`: jsdiff `structuredPatch(…, {context: 8})`), each hunk's
//! context and added lines numbered from the hunk's old start line
//! (`Ex`, `{n:>6}→{line}`), hunks joined by `\n...\n`, in a `<system-reminder>`
//! after the note [`NOTE`]. The same function, snippet and note in 2.0.22
//! (`mL0`) and 2.1.38 (`wIY`, `DjA`), where a file read with an offset or
//! a limit is skipped. An unchanged text (an empty snippet) attaches
//! nothing; the re-read sets the state, so each change is attached once.
//!
//! The log keeps none of it. [`checks`] walks the log's messages keeping
//! the read-file state as far as the text shows it (a whole Read's result,
//! a Write's content, an Edit applied to a known text; an @-mentioned file
//! joins it unshown), and at each shell
//! command that rewrites files ([`super::mechanisms::changes_files`]) takes
//! every file in that state the command could reach: below its working
//! directory (the `cwd` its record names, or the `cd DIR &&` it starts with), and for
//! `git checkout REV -- PATHS` below one of the paths. The file's next
//! Read shows the text after. Where both sides are shown and differ, the
//! attachment is rebuilt and counted ([`Check::tokens`]), joined to the
//! command's results (the first such command since the state's text was
//! set: when the file changed between two of them the log does not say).
//! Where one side is not shown (a file the log never showed whole, a next
//! touch that is an Edit, a Write or a partial Read, no later Read), the
//! check is counted, not sized. At a resume the state starts afresh, as
//! the release does ([`Resumes`], the Claude Code port's `triggers.json`
//! `resume_read_state`): before 2.0.59 empty, so nothing is sized across
//! one; from 2.0.59 rebuilt from the loaded messages' whole Reads and
//! Writes, each with the text that call showed, so a change still open
//! for such a file is compared from that text. Not modelled: the rebuilt
//! entry's time is its message's, so a file edited by the product since
//! its last whole Read looks changed to the resumed process, which then
//! attaches its own edits once.

use std::collections::HashMap;

use crate::message::{Block, Message, Role};
use crate::tokens::TokenCounter;
use crate::zoo::claude_code::reattach;

/// The context lines around each hunk (`y80`: `{context: 8}`).
pub const CONTEXT: usize = 8;

/// What the product writes before the snippet, after the file's name
/// (2.0.5, 2.0.22, 2.1.38 alike).
pub const NOTE: &str = " was modified, either by the user or by a linter. This change was intentional, so make sure to take it into account as you proceed (ie. don't revert it unless the user asks you to). Don't tell the user this, since they are already aware. Here are the relevant changes (shown with line numbers):\n";

/// The files the post-compaction restore keeps in the read state (2.0.5
/// `Hj6`, 2.1.38 `Ua4` with `Ba4` = 5): the newest five.
const RESTORED: usize = 5;

/// The `what` of a rebuilt attachment, before the file's path.
pub const CHANGED_FILE: &str = "file changed outside the product's edits (sized by mechanism) ";

/// The most lines a Read shows without a limit (Claude Code's Read tool,
/// 2,000 lines): a result that long may be a part.
const READ_LINES: usize = 2_000;

/// One file in the read state a file-rewriting command could have changed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Check {
    /// Index in `main` of the message holding the command's results: the
    /// attachment goes with the request after it.
    pub at: usize,
    /// The file.
    pub path: String,
    /// The log shows the state's text when the command ran.
    pub before_shown: bool,
    /// The log shows the file's text after it (its next touch is a whole
    /// Read, in the same process).
    pub after_shown: bool,
    /// The rebuilt attachment's tokens, where both sides are shown and
    /// differ (at the first command that could have changed the file since
    /// its text was last set; a later one is counted, not sized).
    pub tokens: Option<usize>,
}

/// A file in the read state: its text where the log shows it, and the
/// message that set it.
struct Entry {
    text: Option<String>,
    at: usize,
}

/// The product's resumes: the messages before which it resumed, and
/// whether the resumed process rebuilds its read-file state from the
/// loaded messages (2.0.59 on) or starts it empty.
#[derive(Debug, Clone, Copy, Default)]
pub struct Resumes<'a> {
    /// Indices in `main`.
    pub at: &'a [usize],
    /// The release rebuilds the state at a resume.
    pub rebuilds: bool,
}

/// Every file a file-rewriting command in `main` could have changed, in
/// order, sized where the log shows it before and after (counted with
/// `counter`). `compactions`: indices of the product's compaction
/// summaries (the state keeps its five newest files there); `resumes`:
/// where the product resumed and what its state starts from;
/// `cwds`: each message's working directory, as the log names it (where
/// none is known, only commands that `cd` to an absolute directory reach
/// a file).
pub fn checks(
    main: &[Message],
    compactions: &[usize],
    resumes: Resumes<'_>,
    cwds: &[Option<String>],
    counter: &dyn TokenCounter,
) -> Vec<Check> {
    let mut calls: HashMap<&str, (&str, &serde_json::Value)> = HashMap::new();
    let mut state: HashMap<String, Entry> = HashMap::new();
    // What a resumed process rebuilds: each file's last whole Read or
    // Write since the last compaction (the messages a resume loads), with
    // the text that call showed.
    let mut rebuilt: HashMap<String, Option<String>> = HashMap::new();
    let mut out: Vec<Check> = Vec::new();
    // Per path, the checks not yet settled (the first one's command is
    // where a change is put) and the state's text when the first ran.
    let mut open: HashMap<String, (Vec<usize>, Option<String>)> = HashMap::new();
    for (k, m) in main.iter().enumerate() {
        let cwd = cwds.get(k).cloned().flatten();
        if resumes.at.contains(&k) {
            state.clear();
            if resumes.rebuilds {
                for (path, text) in &rebuilt {
                    let entry = Entry {
                        text: text.clone(),
                        at: k,
                    };
                    state.insert(path.clone(), entry);
                }
                // A change still open is compared from the rebuilt text.
                open.retain(|path, o| match rebuilt.get(path) {
                    Some(text) => {
                        o.1.clone_from(text);
                        true
                    }
                    None => false,
                });
            } else {
                open.clear();
            }
        }
        if compactions.contains(&k) {
            rebuilt.clear();
            let mut newest: Vec<(usize, String)> =
                state.iter().map(|(p, e)| (e.at, p.clone())).collect();
            newest.sort_by(|a, b| b.cmp(a));
            let keep: Vec<String> = newest.into_iter().take(RESTORED).map(|x| x.1).collect();
            state.retain(|p, _| keep.contains(p));
        }
        if m.role == Role::User && super::mechanisms::is_prompt(m) {
            // An @-mentioned file is read with the Read tool (2.0.5 `lP6`),
            // so it joins the state; the log never shows its text then.
            for (path, _) in super::mechanisms::at_mentions(&m.text())
                .into_iter()
                .filter(|x| !x.1)
            {
                let path = match (path.starts_with('/'), cwd.as_deref()) {
                    (true, _) => path,
                    (false, Some(dir)) => format!(
                        "{}/{}",
                        dir.trim_end_matches('/'),
                        path.trim_start_matches("./")
                    ),
                    (false, None) => continue,
                };
                open.remove(&path);
                state.insert(path, Entry { text: None, at: k });
            }
        }
        for b in m.blocks() {
            match b {
                Block::ToolUse { id, name, input } => {
                    calls.insert(id.as_str(), (name.as_str(), input));
                }
                Block::ToolResult {
                    tool_use_id,
                    content,
                } => {
                    let Some(&(name, input)) = calls.get(tool_use_id.as_str()) else {
                        continue;
                    };
                    if content.starts_with("<tool_use_error>") {
                        continue;
                    }
                    let str_of = |k: &str| input.get(k).and_then(serde_json::Value::as_str);
                    match (name, str_of("file_path")) {
                        ("Read", Some(path)) => {
                            let whole =
                                input.get("offset").is_none() && input.get("limit").is_none();
                            let text = whole.then(|| shown_text(content)).flatten();
                            if let Some((open, before)) = open.remove(path) {
                                for (n, &i) in open.iter().enumerate() {
                                    out[i].after_shown = text.is_some();
                                    if n == 0 {
                                        close(
                                            &mut out[i],
                                            before.as_deref(),
                                            text.as_deref(),
                                            counter,
                                        );
                                    }
                                }
                            }
                            if whole {
                                rebuilt.insert(path.to_string(), text.clone());
                            }
                            state.insert(path.to_string(), Entry { text, at: k });
                        }
                        ("Edit" | "MultiEdit", Some(path)) => {
                            open.remove(path);
                            let before = state.remove(path).and_then(|e| e.text);
                            let text = before.and_then(|t| edited(&t, input));
                            state.insert(path.to_string(), Entry { text, at: k });
                        }
                        ("Write", Some(path)) => {
                            open.remove(path);
                            let text = str_of("content").map(str::to_string);
                            rebuilt.insert(path.to_string(), text.clone());
                            state.insert(path.to_string(), Entry { text, at: k });
                        }
                        ("Bash", _) => {
                            let Some(command) = str_of("command") else {
                                continue;
                            };
                            if !super::mechanisms::changes_files(command) {
                                continue;
                            }
                            let mut reached: Vec<(&String, &Entry)> = state
                                .iter()
                                .filter(|(p, _)| reaches(command, cwd.as_deref(), p))
                                .collect();
                            reached.sort_by(|a, b| a.0.cmp(b.0));
                            for (path, e) in reached {
                                let o = open
                                    .entry(path.clone())
                                    .or_insert((Vec::new(), e.text.clone()));
                                o.0.push(out.len());
                                out.push(Check {
                                    at: k,
                                    path: path.clone(),
                                    before_shown: e.text.is_some(),
                                    after_shown: false,
                                    tokens: None,
                                });
                            }
                        }
                        _ => {}
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// Sizes a check on the file's next whole Read (`after`; `None`: a
/// partial one).
fn close(check: &mut Check, before: Option<&str>, after: Option<&str>, counter: &dyn TokenCounter) {
    if let (Some(before), Some(after)) = (before, after) {
        check.tokens = attachment(&check.path, before, after).map(|t| counter.count(&t));
    }
}

/// The attachment Claude Code sends for `path` changed from `before` to
/// `after`: `None` when the snippet is empty (nothing is sent).
pub fn attachment(path: &str, before: &str, after: &str) -> Option<String> {
    let snippet = snippet(before, after);
    (!snippet.is_empty())
        .then(|| format!("<system-reminder>\nNote: {path}{NOTE}{snippet}\n</system-reminder>"))
}

/// The diff snippet of `y80`: each hunk's context and added lines,
/// numbered from the hunk's old start line, hunks joined by `\n...\n`.
pub fn snippet(before: &str, after: &str) -> String {
    let old: Vec<&str> = before.split('\n').collect();
    let new: Vec<&str> = after.split('\n').collect();
    let ops = similar::capture_diff_slices(similar::Algorithm::Myers, &old, &new);
    let hunks: Vec<String> = similar::group_diff_ops(ops, CONTEXT)
        .iter()
        .map(|group| {
            let start = group.first().map_or(0, |op| op.old_range().start) + 1;
            let lines = group.iter().flat_map(|op| match op.tag() {
                similar::DiffTag::Delete => &new[0..0],
                _ => &new[op.new_range()],
            });
            lines
                .enumerate()
                .map(|(j, line)| format!("{:>6}→{line}", start + j))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect();
    hunks.join("\n...\n")
}

/// The file's text a whole Read's result shows (its numbered lines, the
/// numbers taken off): `None` when it shows no lines from 1 on or may be
/// cut at the tool's line limit.
fn shown_text(result: &str) -> Option<String> {
    let mut lines = Vec::new();
    for line in result.split('\n') {
        let Some((n, text)) = line.split_once('→') else {
            continue;
        };
        let Ok(n) = n.trim_start().parse::<usize>() else {
            continue;
        };
        if n != lines.len() + 1 {
            return None;
        }
        lines.push(text);
    }
    (!lines.is_empty() && lines.len() < READ_LINES).then(|| lines.join("\n"))
}

/// `text` after an Edit's or a MultiEdit's replacements, as the Claude
/// Code port applies them ([`reattach::apply_edit`]); `None` when one does
/// not apply (the log's text is not the file's).
fn edited(text: &str, input: &serde_json::Value) -> Option<String> {
    match input.get("edits").and_then(|e| e.as_array()) {
        Some(edits) => edits
            .iter()
            .try_fold(text.to_string(), |t, e| reattach::apply_edit(&t, e)),
        None => reattach::apply_edit(text, input),
    }
}

/// Whether `command` could rewrite `path`: the file is below the
/// directory the command runs in, and for `git checkout REV -- PATHS`
/// below one of the paths.
fn reaches(command: &str, cwd: Option<&str>, path: &str) -> bool {
    let Some(dir) = working_dir(command, cwd) else {
        return false;
    };
    let below = |dir: &str, path: &str| {
        let dir = dir.trim_end_matches('/');
        path.strip_prefix(dir)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    };
    if !below(&dir, path) {
        return false;
    }
    match checkout_paths(command) {
        Some(specs) => specs.iter().any(|s| {
            let spec = s.trim_start_matches("./");
            below(&format!("{dir}/{spec}"), path) || (spec == "." && below(&dir, path))
        }),
        None => true,
    }
}

/// The directory `command` runs in: the one a leading `cd DIR &&` names
/// (absolute, or relative to `cwd`; `~` from a `/Users/NAME` or
/// `/home/NAME` working directory), else `cwd`.
fn working_dir(command: &str, cwd: Option<&str>) -> Option<String> {
    let Some(rest) = command.trim_start().strip_prefix("cd ") else {
        return cwd.map(str::to_string);
    };
    let target = rest
        .split(['&', ';', '\n'])
        .next()?
        .trim()
        .trim_matches('"');
    if target.starts_with('/') {
        return Some(target.to_string());
    }
    let cwd = cwd?;
    if let Some(under_home) = target.strip_prefix('~') {
        let parts: Vec<&str> = cwd.split('/').collect();
        let home = match parts.get(1) {
            Some(&"Users") | Some(&"home") => parts.get(..3)?.join("/"),
            _ => return None,
        };
        return Some(format!("{home}{under_home}"));
    }
    Some(format!("{}/{target}", cwd.trim_end_matches('/')))
}

/// The paths of a `git checkout REV -- PATHS` in `command`, if it has one.
fn checkout_paths(command: &str) -> Option<Vec<&str>> {
    command.split(['\n', ';', '&', '|']).find_map(|part| {
        let words: Vec<&str> = part.split_whitespace().collect();
        let git = words.iter().position(|w| *w == "git")?;
        let checkout = words[git..].iter().position(|w| *w == "checkout")? + git;
        let dashes = words[checkout..].iter().position(|w| *w == "--")? + checkout;
        Some(words[dashes + 1..].to_vec())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zoo::claude_code::reattach::numbered;
    use serde_json::json;

    fn call(id: &str, name: &str, input: serde_json::Value) -> Message {
        Message::assistant(vec![Block::ToolUse {
            id: id.into(),
            name: name.into(),
            input: input.into(),
        }])
    }

    #[test]
    fn the_snippet_is_the_hunks_new_lines_with_eight_lines_of_context() {
        let before: Vec<String> = (1..=30).map(|n| format!("line {n}")).collect();
        let mut after = before.clone();
        after[14] = "changed".into();
        after.remove(25);
        let s = snippet(&before.join("\n"), &after.join("\n"));
        // One hunk from old line 7 (15 − 8) to old line 30 (26 + 8, past
        // the end): the deleted line is not shown, the added one is.
        let first = s.lines().next().unwrap();
        assert_eq!(first, "     7→line 7");
        assert!(s.contains("    15→changed"), "{s}");
        assert!(!s.contains("line 26") && !s.contains("line 15"), "{s}");
        assert!(!s.contains("..."), "{s}");
        // Two changes far apart make two hunks.
        let mut far = before.clone();
        far[0] = "first".into();
        far[29] = "last".into();
        let two = snippet(&before.join("\n"), &far.join("\n"));
        assert_eq!(two.matches("\n...\n").count(), 1, "{two}");
        assert_eq!(snippet("a\nb", "a\nb"), "");
        assert!(attachment("/p/f", "a", "a").is_none());
        let a = attachment("/p/f", "a", "b").unwrap();
        assert!(
            a.starts_with("<system-reminder>\nNote: /p/f was modified"),
            "{a}"
        );
        assert!(
            a.ends_with("(shown with line numbers):\n     1→b\n</system-reminder>"),
            "{a}"
        );
    }

    #[test]
    fn a_change_is_sized_only_where_the_log_shows_the_file_before_and_after() {
        let counter = crate::tokens::Approx;
        let v1 = "fn a() {}\nfn b() {}";
        let v2 = "fn a() {}\nfn b() { 1 }";
        let main = vec![
            Message::user_text("go"),
            call("r1", "Read", json!({"file_path": "/w/src/a.rs"})),
            Message::tool_results(vec![("r1".into(), numbered(v1))]),
            call(
                "r2",
                "Read",
                json!({"file_path": "/w/src/b.rs", "limit": 1}),
            ),
            Message::tool_results(vec![("r2".into(), numbered("x"))]),
            call("r3", "Read", json!({"file_path": "/elsewhere/c.rs"})),
            Message::tool_results(vec![("r3".into(), numbered(v1))]),
            call("g", "Bash", json!({"command": "git checkout main"})),
            Message::tool_results(vec![("g".into(), "Switched".into())]),
            call("r4", "Read", json!({"file_path": "/w/src/a.rs"})),
            Message::tool_results(vec![("r4".into(), numbered(v2))]),
            call("r5", "Read", json!({"file_path": "/w/src/b.rs"})),
            Message::tool_results(vec![("r5".into(), numbered(v2))]),
            // A checkout of other paths does not reach a.rs.
            call(
                "g2",
                "Bash",
                json!({"command": "git checkout dev -- src/b.rs"}),
            ),
            Message::tool_results(vec![("g2".into(), String::new())]),
            call("r6", "Read", json!({"file_path": "/w/src/b.rs"})),
            Message::tool_results(vec![("r6".into(), numbered(v2))]),
        ];
        let cwds = vec![Some("/w".to_string()); main.len()];
        let got = checks(&main, &[], Resumes::default(), &cwds, &counter);
        let rows: Vec<(usize, &str, bool, bool, bool)> = got
            .iter()
            .map(|c| {
                let sized = c.tokens.is_some();
                (c.at, c.path.as_str(), c.before_shown, c.after_shown, sized)
            })
            .collect();
        assert_eq!(
            rows,
            [
                // Shown before (a whole Read) and after (the next Read): sized.
                (8, "/w/src/a.rs", true, true, true),
                // Read in part before: counted, not sized.
                (8, "/w/src/b.rs", false, true, false),
                // Shown both sides, unchanged: nothing attached.
                (14, "/w/src/b.rs", true, true, false),
            ]
        );
        let expected = attachment("/w/src/a.rs", v1, v2).unwrap();
        assert_eq!(got[0].tokens, Some(counter.count(&expected)));
        // A resume between the command and the next Read: before 2.0.59
        // the resumed process has no state, so nothing is sized; from
        // 2.0.59 it rebuilt a.rs from its whole Read, so the change is
        // compared from that text as before; b.rs (read in part) is gone.
        let at = [9];
        let resumed = |rebuilds| {
            let resumes = Resumes { at: &at, rebuilds };
            checks(&main, &[], resumes, &cwds, &counter)
        };
        let empty = resumed(false);
        assert!(empty.iter().all(|c| c.tokens.is_none()), "{empty:?}");
        let kept = resumed(true);
        assert_eq!(kept[0].tokens, got[0].tokens, "{kept:?}");
        assert!(kept[1..].iter().all(|c| c.tokens.is_none()), "{kept:?}");
    }

    #[test]
    fn an_edit_applied_to_a_shown_text_is_the_state_before_the_command() {
        let counter = crate::tokens::Approx;
        let main = vec![
            Message::user_text("go"),
            call("r1", "Read", json!({"file_path": "/w/a"})),
            Message::tool_results(vec![("r1".into(), numbered("x = 1\ny = 2"))]),
            call(
                "e",
                "Edit",
                json!({"file_path": "/w/a", "old_string": "y = 2", "new_string": "y=2"}),
            ),
            Message::tool_results(vec![("e".into(), "updated".into())]),
            call(
                "c",
                "Bash",
                json!({"command": "cd /w && npx prettier --write a"}),
            ),
            Message::tool_results(vec![("c".into(), String::new())]),
            call("r2", "Read", json!({"file_path": "/w/a"})),
            Message::tool_results(vec![("r2".into(), numbered("x = 1\ny = 2"))]),
        ];
        let got = checks(&main, &[], Resumes::default(), &[], &counter);
        let expected = attachment("/w/a", "x = 1\ny=2", "x = 1\ny = 2").unwrap();
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].tokens, Some(counter.count(&expected)));
    }

    #[test]
    fn the_working_directory_is_the_cd_before_the_command_or_the_logs() {
        assert_eq!(working_dir("git commit", Some("/w")).as_deref(), Some("/w"));
        assert_eq!(
            working_dir("cd ~/t && git worktree add ../x b", Some("/Users/u/p")).as_deref(),
            Some("/Users/u/t")
        );
        assert_eq!(
            working_dir("cd sub && git pull", Some("/w")).as_deref(),
            Some("/w/sub")
        );
        assert_eq!(working_dir("git pull", None), None);
        assert!(!reaches("git commit -m x", Some("/w"), "/elsewhere/a"));
        assert!(reaches("git checkout b -- src/", Some("/w"), "/w/src/x.ts"));
        assert!(!reaches(
            "git checkout b -- src/",
            Some("/w"),
            "/w/lib/x.ts"
        ));
    }
}
