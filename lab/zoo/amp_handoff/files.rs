//! The handoff's file list: which files the new thread mentions (their
//! contents attached) and which it only names, under Amp's token budget.
//!
//! Amp asks a model for the relevant files (`create_handoff_context`'s
//! `relevantFiles`, at most 10, most important first) after the files the
//! goal `@`-mentions, stats each and mentions it while the budget lasts
//! (`ws4`: `ceil(min(bytes, 32768) / 3.5)` tokens a file); a file it cannot
//! stat is left out. The lab has no workspace: the stand-in for the model's
//! choice is the files the thread's tool calls touched, newest first, and a
//! file's content is the newest one the thread shows (a call's `content`
//! input, or the result of a call whose tool name says it reads); a file
//! with neither is left out as one that cannot be stat'ed.

use crate::message::{Block, Message};

/// `Ds4`: most files a handoff carries.
pub const MAX_FILES: usize = 10;
/// `ha0`: tokens of mentioned files' contents.
pub const FILE_TOKEN_BUDGET: usize = 25_000;
/// `Bs4`: bytes of a file counted at most.
pub const FILE_SIZE_CAP: usize = 32_768;
/// `Ns4`: bytes per token in the estimate.
pub const BYTES_PER_TOKEN: f64 = 3.5;

/// `ws4`: the estimated tokens of a file of `bytes`.
pub fn estimated_tokens(bytes: usize) -> usize {
    (bytes.min(FILE_SIZE_CAP) as f64 / BYTES_PER_TOKEN).ceil() as usize
}

/// A file the thread touched, with its newest known content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Touched {
    /// The path as the tool call named it.
    pub path: String,
    /// The newest content the thread shows, if any.
    pub content: Option<String>,
}

/// The path a tool input names (`path`, `file_path`, `filePath`).
fn path_of(input: &serde_json::Value) -> Option<&str> {
    ["path", "file_path", "filePath"]
        .iter()
        .find_map(|k| input.get(*k)?.as_str())
        .filter(|p| !p.is_empty())
}

/// Every file the thread's calls touched, newest first, with its content.
pub fn touched(history: &[Message]) -> Vec<Touched> {
    let mut results = std::collections::HashMap::new();
    for m in history {
        for b in m.blocks() {
            if let Block::ToolResult {
                tool_use_id,
                content,
            } = b
            {
                results.insert(tool_use_id.as_str(), content.as_str());
            }
        }
    }
    let mut out: Vec<Touched> = Vec::new();
    for m in history.iter().rev() {
        for b in m.blocks().iter().rev() {
            let Block::ToolUse { id, name, input } = b else {
                continue;
            };
            let Some(path) = path_of(input) else { continue };
            let written = input.get("content").and_then(|c| c.as_str());
            let read = name
                .to_ascii_lowercase()
                .contains("read")
                .then(|| results.get(id.as_str()).copied())
                .flatten();
            let content = written.or(read).map(String::from);
            match out.iter_mut().find(|t| t.path == path) {
                Some(t) if t.content.is_none() => t.content = content,
                Some(_) => {}
                None => out.push(Touched {
                    path: path.to_string(),
                    content,
                }),
            }
        }
    }
    out
}

/// `Us4`: the paths the goal `@`-mentions.
pub fn mentioned(goal: &str) -> Vec<&str> {
    goal.split('@')
        .skip(1)
        .map(|rest| rest.split(char::is_whitespace).next().unwrap_or(""))
        .filter(|p| !p.is_empty())
        .collect()
}

/// The files a handoff carries: `mention` (contents attached) and `named`
/// (paths only, over the budget).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Chosen {
    /// Mentioned with `@`, content attached.
    pub mention: Vec<Touched>,
    /// Named under "Other relevant files".
    pub named: Vec<String>,
}

/// The goal's mentions, then the touched files; at most [`MAX_FILES`];
/// mentioned while [`FILE_TOKEN_BUDGET`] lasts, named after; unknown files out.
pub fn choose(goal: &str, touched: &[Touched]) -> Chosen {
    let mut order: Vec<&str> = mentioned(goal);
    order.extend(touched.iter().map(|t| t.path.as_str()));
    let mut seen = Vec::new();
    order.retain(|p| {
        let new = !seen.contains(p);
        seen.push(*p);
        new
    });
    order.truncate(MAX_FILES);
    let mut chosen = Chosen::default();
    let mut left = FILE_TOKEN_BUDGET;
    for path in order {
        let Some(t) = touched
            .iter()
            .find(|t| t.path == path && t.content.is_some())
        else {
            continue;
        };
        let cost = estimated_tokens(t.content.as_deref().map_or(0, str::len));
        if left >= cost {
            left -= cost;
            chosen.mention.push(t.clone());
        } else {
            chosen.named.push(t.path.clone());
        }
    }
    chosen
}

/// `CZ`: the attached files as Amp sends them before the message's text,
/// each in a fence named by its base name with numbered lines.
pub fn attached(files: &[Touched]) -> String {
    let fences: Vec<String> = files
        .iter()
        .map(|t| {
            let content = t.content.as_deref().unwrap_or("");
            let mut lines: Vec<&str> = content.split('\n').collect();
            if lines.last() == Some(&"") {
                lines.pop();
            }
            let numbered: Vec<String> = lines
                .iter()
                .enumerate()
                .map(|(i, l)| format!("{}: {l}", i + 1))
                .collect();
            let base = t.path.rsplit(['/', '\\']).next().unwrap_or(&t.path);
            format!("```{base}\n{}\n```", numbered.join("\n"))
        })
        .collect();
    format!("# Attached Files\n\n{}\n\n", fences.join("\n"))
}
