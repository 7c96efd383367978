//! Artifacts a coding agent needs later, read from the transcript's own
//! structure: file paths and commands from tool inputs, error lines from tool
//! results, URLs and searched identifiers from either.

use serde::Serialize;

use crate::message::{Block, Message};

/// What an artifact is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ArtifactKind {
    /// A file read, written or edited (a path from a tool input).
    File,
    /// A command run (first line of a `command`/`cmd` input).
    Command,
    /// An error line from a tool result.
    Error,
    /// A URL anywhere.
    Url,
    /// An identifier the agent searched for (`pattern`, `query`, `symbol`).
    Identifier,
    /// A must-keep fact planted by the experiment.
    Fact,
}

impl ArtifactKind {
    /// Name for tables.
    pub fn name(self) -> &'static str {
        match self {
            ArtifactKind::File => "file",
            ArtifactKind::Command => "command",
            ArtifactKind::Error => "error",
            ArtifactKind::Url => "url",
            ArtifactKind::Identifier => "identifier",
            ArtifactKind::Fact => "fact",
        }
    }
}

/// Input keys that name a file.
const FILE_KEYS: &[&str] = &[
    "file_path",
    "path",
    "filename",
    "notebook_path",
    "target_file",
    "file",
];
/// Input keys that hold a command.
const COMMAND_KEYS: &[&str] = &["command", "cmd"];
/// Input keys that hold a searched identifier.
const IDENT_KEYS: &[&str] = &["pattern", "query", "symbol"];
/// Markers of an error line in a tool result.
const ERROR_MARKERS: &[&str] = &[
    "error:",
    "Error:",
    "ERROR",
    "Traceback",
    "FAILED",
    "panicked at",
    "Exception",
    "No such file",
];
/// Artifacts shorter than this are too common to tell anything.
pub const MIN_CHARS: usize = 4;
/// Longer artifacts are cut to their first this-many chars (still verbatim text).
pub const MAX_CHARS: usize = 160;

/// Cut `s` to [`MAX_CHARS`] chars at a char boundary, trimmed.
fn clip(s: &str) -> Option<String> {
    let s = s.trim();
    let cut: String = s.chars().take(MAX_CHARS).collect();
    let cut = cut.trim_end().to_string();
    (cut.chars().count() >= MIN_CHARS).then_some(cut)
}

/// Every URL in `text` (up to the first space, quote or bracket).
fn urls(text: &str, out: &mut Vec<(ArtifactKind, String)>) {
    for scheme in ["https://", "http://"] {
        let mut rest = text;
        while let Some(at) = rest.find(scheme) {
            let tail = &rest[at..];
            let end = tail
                .find(|c: char| c.is_whitespace() || "\"'<>()[]{}`,".contains(c))
                .unwrap_or(tail.len());
            if let Some(u) = clip(&tail[..end]) {
                out.push((ArtifactKind::Url, u));
            }
            rest = &tail[end..];
        }
    }
}

fn from_input(input: &serde_json::Value, out: &mut Vec<(ArtifactKind, String)>) {
    let Some(obj) = input.as_object() else {
        return;
    };
    for (k, v) in obj {
        let Some(s) = v.as_str() else { continue };
        let kind = if FILE_KEYS.contains(&k.as_str()) {
            Some(ArtifactKind::File)
        } else if COMMAND_KEYS.contains(&k.as_str()) {
            Some(ArtifactKind::Command)
        } else if IDENT_KEYS.contains(&k.as_str()) {
            Some(ArtifactKind::Identifier)
        } else {
            None
        };
        if let Some(kind) = kind {
            let first = s.lines().next().unwrap_or("");
            if let Some(a) = clip(first) {
                out.push((kind, a));
            }
        }
        urls(s, out);
    }
}

fn from_result(content: &str, out: &mut Vec<(ArtifactKind, String)>) {
    for line in content.lines() {
        if ERROR_MARKERS.iter().any(|m| line.contains(m)) {
            if let Some(a) = clip(line) {
                out.push((ArtifactKind::Error, a));
            }
        }
    }
    urls(content, out);
}

/// An artifact found in a message: kind, verbatim text, and the tool call id
/// of the block it came from (for attributing its loss to the policy's events).
pub type Found = (ArtifactKind, String, Option<String>);

/// The artifacts one recorded message introduces, in order (duplicates kept;
/// the caller deduplicates across the session).
pub fn artifacts(m: &Message) -> Vec<Found> {
    let mut out = Vec::new();
    for b in m.blocks() {
        let mut found = Vec::new();
        let id = match b {
            Block::ToolUse { id, input, .. } => {
                from_input(input, &mut found);
                Some(id.clone())
            }
            Block::ToolResult {
                tool_use_id,
                content,
            } => {
                from_result(content, &mut found);
                Some(tool_use_id.clone())
            }
            Block::Text { text } => {
                urls(text, &mut found);
                None
            }
            _ => None,
        };
        out.extend(found.into_iter().map(|(k, t)| (k, t, id.clone())));
    }
    if let crate::message::Content::Text(t) = &m.content {
        let mut found = Vec::new();
        urls(t, &mut found);
        out.extend(found.into_iter().map(|(k, t)| (k, t, None)));
    }
    out
}

/// The tool call id of the block of `m` whose text holds `needle`.
pub fn block_id_holding(m: &Message, needle: &str) -> Option<String> {
    m.blocks().iter().find_map(|b| match b {
        Block::ToolResult {
            tool_use_id,
            content,
        } if content.contains(needle) => Some(tool_use_id.clone()),
        Block::ToolUse { id, input, .. } if input.to_string().contains(needle) => Some(id.clone()),
        _ => None,
    })
}

/// The key a tool call fetches by: the file it reads or the command it runs.
pub fn fetch_key(input: &serde_json::Value) -> Option<(ArtifactKind, String)> {
    let obj = input.as_object()?;
    for (keys, kind) in [
        (FILE_KEYS, ArtifactKind::File),
        (COMMAND_KEYS, ArtifactKind::Command),
    ] {
        for k in keys {
            if let Some(s) = obj.get(*k).and_then(|v| v.as_str()) {
                return Some((kind, s.trim().to_string()));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_commands_errors_and_urls_are_found() {
        let call = Message::assistant(vec![
            Block::ToolUse {
                id: "a".into(),
                name: "Read".into(),
                input: json!({"file_path": "/src/lib.rs", "limit": 10}).into(),
            },
            Block::ToolUse {
                id: "b".into(),
                name: "Bash".into(),
                input: json!({"command": "cargo test\n--quiet"}).into(),
            },
        ]);
        let got = artifacts(&call);
        assert_eq!(
            got,
            vec![
                (
                    ArtifactKind::File,
                    "/src/lib.rs".to_string(),
                    Some("a".to_string())
                ),
                (
                    ArtifactKind::Command,
                    "cargo test".to_string(),
                    Some("b".to_string())
                ),
            ]
        );
        let result = Message::tool_results(vec![(
            "b".into(),
            "ok\nerror: linking failed\nsee https://doc.rust-lang.org/x.html)".into(),
        )]);
        let b = Some("b".to_string());
        assert_eq!(
            artifacts(&result),
            vec![
                (
                    ArtifactKind::Error,
                    "error: linking failed".to_string(),
                    b.clone()
                ),
                (
                    ArtifactKind::Url,
                    "https://doc.rust-lang.org/x.html".to_string(),
                    b
                ),
            ]
        );
        assert_eq!(
            fetch_key(&json!({"command": " ls -la "})),
            Some((ArtifactKind::Command, "ls -la".to_string()))
        );
    }
}
