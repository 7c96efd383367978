//! Actions written as text: the harnesses that parse a shell command out of
//! the model's reply instead of taking a tool call.
//!
//! Two upstream parsers are reproduced, each with its own regular
//! expression, so that what counts as an action here is what counted as one
//! when the session ran:
//!
//! * mini-swe-agent 1.x (`SWE-agent/mini-swe-agent`,
//!   `src/minisweagent/agents/default.py`, `DefaultAgent.parse_action`):
//!   `re.findall(r"```bash\s*\n(.*?)\n```", content, re.DOTALL)`; exactly one
//!   match is an action (its `.strip()`), none or several are a format error
//!   and nothing runs;
//! * SWE-agent 0.x / 1.x `thought_action` (`SWE-agent/SWE-agent`,
//!   `sweagent/tools/parsing.py`, `ThoughtActionParser`): the last fenced
//!   block not nested in another one, found with
//!   `^```(\S*)\s*\n|^```\s*$` (multi-line).
//!
//! The `regex` crate's leftmost-first matching is Python `re`'s for these
//! patterns (no back-references, no look-around); one difference remains:
//! Python's `str.strip()` also strips the ASCII separators U+001C..U+001F,
//! Rust's `trim()` does not.
//!
//! An imported action becomes a `tool_use` named [`TEXT_ACTION_TOOL`] with id
//! [`action_id`] (the message's index in the file), its command under
//! `input.command`; the reply's text stays whole beside it, so the recorded
//! shape can be restored by dropping the synthetic call and turning its
//! result back into the user message it was.

use std::sync::OnceLock;

use regex::Regex;

/// Prefix of every synthetic `tool_use` id of a text action.
pub const TEXT_ACTION_ID_PREFIX: &str = "text-action-";

/// Tool name given to a text action (both harnesses run it in a shell).
pub const TEXT_ACTION_TOOL: &str = "bash";

/// The synthetic id of the action of the message at `index` in the file's
/// message list (0-based, the system message counted).
pub fn action_id(index: usize) -> String {
    format!("{TEXT_ACTION_ID_PREFIX}{index}")
}

/// Is `id` the id of a text action (not a recorded tool call)?
pub fn is_text_action_id(id: &str) -> bool {
    id.strip_prefix(TEXT_ACTION_ID_PREFIX)
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn mini_pattern() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"(?s)```bash\s*\n(.*?)\n```").expect("constant pattern"))
}

fn fence_pattern() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"(?m)^```(\S*)\s*\n|^```\s*$").expect("constant pattern"))
}

/// mini-swe-agent's `parse_action`: the one fenced `bash` block's command,
/// stripped; `None` when the reply holds none or more than one (upstream's
/// `FormatError`: nothing was executed).
pub fn mini_swe_action(content: &str) -> Option<String> {
    let mut found = mini_pattern().captures_iter(content);
    let first = found.next()?;
    if found.next().is_some() {
        return None;
    }
    Some(first[1].trim().to_string())
}

/// How many fenced `bash` blocks mini-swe-agent's `parse_action` sees.
pub fn mini_swe_action_count(content: &str) -> usize {
    mini_pattern().find_iter(content).count()
}

/// SWE-agent's `ThoughtActionParser`: the text between the last top-level
/// fence pair, unstripped (upstream returns the slice as is); `None` when
/// there is no closed block (upstream's "No action found").
pub fn thought_action(content: &str) -> Option<String> {
    let mut stack: Vec<usize> = Vec::new();
    let mut last: Option<(usize, usize)> = None;
    for caps in fence_pattern().captures_iter(content) {
        let whole = caps.get(0).expect("group 0 always matches");
        let tag = caps.get(1).map(|m| m.as_str());
        match tag {
            // A closing fence: the second alternative, or a bare "```".
            None | Some("") if !stack.is_empty() => {
                let start = stack.pop().expect("checked non-empty");
                if stack.is_empty() {
                    last = Some((start, whole.start()));
                }
            }
            Some(_) => stack.push(whole.end()),
            None => {}
        }
    }
    last.map(|(start, end)| content[start..end].to_string())
}

/// Does a user message read as a mini-swe-agent observation (its
/// `action_observation_template` or `timeout_template` output)? Used only to
/// report an observation that answers no action; pairing itself follows
/// upstream (the user message after an action is its result, whatever it says).
pub fn looks_like_observation(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with("<returncode>") || t.starts_with("The last command <command>")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mini_takes_exactly_one_bash_block() {
        assert_eq!(
            mini_swe_action("THOUGHT: x\n\n```bash\nls -la\n```").as_deref(),
            Some("ls -la")
        );
        // Two blocks, or none: upstream's format error, no action.
        assert_eq!(mini_swe_action("```bash\na\n```\n```bash\nb\n```"), None);
        assert_eq!(mini_swe_action("```\nls\n```"), None);
        assert_eq!(mini_swe_action("```bash ls```"), None);
        // `\s*\n` may swallow blank lines; the command is stripped.
        assert_eq!(
            mini_swe_action("```bash  \n\n  echo hi  \n```").as_deref(),
            Some("echo hi")
        );
        // Lazy: the first "\n```" closes the block.
        assert_eq!(
            mini_swe_action("```bash\ncat <<EOF\n```\nEOF\n```").as_deref(),
            Some("cat <<EOF")
        );
        assert_eq!(mini_swe_action_count("```bash\na\n```\n```bash\nb\n```"), 2);
    }

    #[test]
    fn thought_action_takes_the_last_top_level_block() {
        let two = "look\n```\nls\n```\nthen\n```\nopen a.py\n```\n";
        assert_eq!(thought_action(two).as_deref(), Some("open a.py\n"));
        // A block nested in another is not the action.
        let nested = "x\n```bash\n```python\nprint(1)\n```\n```\n";
        assert_eq!(
            thought_action(nested).as_deref(),
            Some("```python\nprint(1)\n```\n")
        );
        assert_eq!(thought_action("no block here"), None);
        assert_eq!(thought_action("```\nunclosed"), None);
    }

    #[test]
    fn ids_say_they_are_synthetic() {
        assert!(is_text_action_id(&action_id(12)));
        assert!(!is_text_action_id("text-action-"));
        assert!(!is_text_action_id("call_12"));
    }
}
