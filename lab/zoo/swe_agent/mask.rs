//! SWE-agent's `LastNObservations` history processor: all but the last `n`
//! observations are replaced by `Old environment output: ({N} lines omitted)`.
//!
//! Read in `SWE-agent/SWE-agent@3ea751c087f32b16e039a2233dd6eefecef325d5`
//! `sweagent/agent/history_processors.py` (`LastNObservations`,
//! `_get_content_stats`, `TagToolCallObservations`) and in the Complexity Trap
//! fork `Recursive-Safeguarding/the-complexity-trap@1b07decf4ca4b5d722d25a57810fe18a2d8b60fb`
//! (same algorithm, text-only line count).
//!
//! Mapping onto the lab's message model: an *observation* is the first user
//! message (SWE-agent's instance template, never masked) and every user
//! message carrying tool results. Each masked result gets its own placeholder
//! with its own line count (upstream has one call per step, so one result per
//! observation; parallel results are masked one by one).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::error::{LabError, LabResult};
use crate::message::{Block, Content, Message, Role};
use crate::policy::PolicyEvent;

/// Switches of `last_n_observations`, under their upstream names.
///
/// `Default` is upstream's field defaults with `n = 5` (upstream has no
/// default for `n`; 5 is the value of its docstring and the SWE-agent 0.7
/// configs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LastNObservations {
    /// Number of observations to keep (> 0).
    pub n: usize,
    /// Steps between updates of the cut (> 0): between `n` and `n + polling`
    /// observations are kept, so the prefix changes less often.
    pub polling: usize,
    /// Observations with one of these tags are always elided.
    pub always_remove_output_for_tags: BTreeSet<String>,
    /// Observations with one of these tags are always kept.
    pub always_keep_output_for_tags: BTreeSet<String>,
    /// Tool name → tags given to its observations (the role of upstream's
    /// `tag_tool_call_observations` processor; empty as in every shipped config).
    pub tool_tags: BTreeMap<String, BTreeSet<String>>,
}

impl Default for LastNObservations {
    fn default() -> Self {
        LastNObservations {
            n: 5,
            polling: 1,
            always_remove_output_for_tags: BTreeSet::from(["remove_output".to_string()]),
            always_keep_output_for_tags: BTreeSet::from(["keep_output".to_string()]),
            tool_tags: BTreeMap::new(),
        }
    }
}

/// The placeholder upstream writes for an elided observation of `lines` lines.
pub fn placeholder(lines: usize) -> String {
    format!("Old environment output: ({lines} lines omitted)")
}

/// `len(text.splitlines())` as Python counts it (every Unicode line boundary,
/// `\r\n` as one, no empty last line).
pub fn py_line_count(text: &str) -> usize {
    // Break to break by a vectorised scan: a masked observation is counted
    // at every call, so a char-by-char walk made masking the policy's cost.
    let mut lines = 0;
    let mut rest = text;
    while let Some(i) = crate::compact::course::find_line_break(rest) {
        lines += 1;
        let mut end = i + rest[i..].chars().next().map_or(1, char::len_utf8);
        if rest.as_bytes()[i] == b'\r' && rest[end..].starts_with('\n') {
            end += 1;
        }
        rest = &rest[end..];
    }
    lines + usize::from(!rest.is_empty())
}

impl LastNObservations {
    /// Refuse switches upstream's validators (or arithmetic) would refuse.
    pub fn validate(&self) -> LabResult<()> {
        if self.n == 0 || self.polling == 0 {
            return Err(LabError::usage(
                format!(
                    "last_n_observations: n = {} and polling = {} must both be positive",
                    self.n, self.polling
                ),
                "set n and polling to 1 or more",
            ));
        }
        Ok(())
    }

    /// Indices of the observations of `request`, oldest first.
    fn observation_indices(request: &[Message]) -> Vec<usize> {
        request
            .iter()
            .enumerate()
            .filter(|(i, m)| (*i == 0 && m.role == Role::User) || m.is_tool_result())
            .map(|(i, _)| i)
            .collect()
    }

    /// Indices upstream elides by position (tags aside): observations
    /// `[1, (len // polling) * polling - n)`; the first one is never elided.
    fn omit_indices(&self, request: &[Message]) -> BTreeSet<usize> {
        let obs = Self::observation_indices(request);
        let last_removed = ((obs.len() / self.polling) * self.polling).saturating_sub(self.n);
        obs.iter()
            .skip(1)
            .take(last_removed.saturating_sub(1))
            .copied()
            .collect()
    }

    /// Tags of a message: the union of its answered tools' tags.
    fn tags_of(&self, message: &Message, names: &BTreeMap<&str, &str>) -> BTreeSet<&str> {
        message
            .tool_result_ids()
            .iter()
            .filter_map(|id| names.get(id))
            .filter_map(|name| self.tool_tags.get(*name))
            .flatten()
            .map(String::as_str)
            .collect()
    }

    /// Elide old observations of `request` in place, recording one
    /// [`PolicyEvent::Cleared`] per masked result.
    pub fn apply(&self, request: &mut [Message], events: &mut Vec<PolicyEvent>) -> LabResult<()> {
        self.validate()?;
        let omit = self.omit_indices(request);
        let names: BTreeMap<String, String> = request
            .iter()
            .flat_map(|m| m.blocks())
            .filter_map(|b| match b {
                Block::ToolUse { id, name, .. } => Some((id.clone(), name.clone())),
                _ => None,
            })
            .collect();
        let names: BTreeMap<&str, &str> = names
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        for (i, message) in request.iter_mut().enumerate() {
            let tags = self.tags_of(message, &names);
            let tagged = |set: &BTreeSet<String>| tags.iter().any(|t| set.contains(*t));
            let keep = (!omit.contains(&i) || tagged(&self.always_keep_output_for_tags))
                && !tagged(&self.always_remove_output_for_tags);
            if !keep {
                mask_message(message, events);
            }
        }
        Ok(())
    }
}

/// Replace an observation's output by the placeholder.
pub(super) fn mask_message(message: &mut Message, events: &mut Vec<PolicyEvent>) {
    match &mut message.content {
        Content::Text(text) => *text = placeholder(py_line_count(text)),
        Content::Blocks(blocks) => {
            for block in blocks {
                if let Block::ToolResult {
                    tool_use_id,
                    content,
                } = block
                {
                    let text = placeholder(py_line_count(content));
                    events.push(PolicyEvent::Cleared {
                        id: tool_use_id.clone(),
                        part: "result",
                        placeholder: text.clone(),
                    });
                    *content = text;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: &str, name: &str) -> Message {
        Message::assistant(vec![Block::ToolUse {
            id: id.into(),
            name: name.into(),
            input: json!({}).into(),
        }])
    }

    /// Task, then `k` steps whose output has `i + 1` lines.
    fn steps(k: usize) -> Vec<Message> {
        let mut h = vec![Message::user_text("task\nline two")];
        for i in 0..k {
            let id = format!("t{i}");
            h.push(call(&id, if i == 1 { "view" } else { "bash" }));
            h.push(Message::tool_results(vec![(id, "x\n".repeat(i + 1))]));
        }
        h
    }

    fn result(m: &Message) -> &str {
        match &m.blocks()[0] {
            Block::ToolResult { content, .. } => content,
            other => panic!("not a result: {other:?}"),
        }
    }

    #[test]
    fn python_line_count_matches_splitlines() {
        // python3 -c 'print([len(s.splitlines()) for s in ["", "a", "a\n", "a\r\nb", "a\rb\x0bc\u2028", "\n\n"]])'
        // -> [0, 1, 1, 2, 3, 2]
        let got: Vec<usize> = ["", "a", "a\n", "a\r\nb", "a\rb\u{b}c\u{2028}", "\n\n"]
            .iter()
            .map(|s| py_line_count(s))
            .collect();
        assert_eq!(got, vec![0, 1, 1, 2, 3, 2]);
    }

    /// The char-by-char count `py_line_count` replaced, as the reference.
    fn line_count_by_chars(text: &str) -> usize {
        let mut lines = 0;
        let mut open = false;
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\r' => {
                    if chars.peek() == Some(&'\n') {
                        chars.next();
                    }
                    lines += 1;
                    open = false;
                }
                '\n' | '\u{b}' | '\u{c}' | '\u{1c}' | '\u{1d}' | '\u{1e}' | '\u{85}'
                | '\u{2028}' | '\u{2029}' => {
                    lines += 1;
                    open = false;
                }
                _ => open = true,
            }
        }
        lines + usize::from(open)
    }

    proptest::proptest! {
        #[test]
        fn line_count_equals_the_char_by_char_count(
            s in "[a\r\n\u{b}\u{c}\u{1c}\u{1e}\u{85}\u{2028}\u{2029}é\u{2027}\u{c5}]{0,40}"
        ) {
            proptest::prop_assert_eq!(py_line_count(&s), line_count_by_chars(&s));
        }
    }

    #[test]
    fn keeps_the_task_and_the_last_n_observations() {
        let mut h = steps(5);
        let mut ev = Vec::new();
        let p = LastNObservations {
            n: 2,
            ..Default::default()
        };
        p.apply(&mut h, &mut ev).unwrap();
        // 6 observations (task + 5): elided are observations 1..4, i.e. steps 0, 1, 2.
        assert_eq!(h[0].text(), "task\nline two");
        assert_eq!(result(&h[2]), "Old environment output: (1 lines omitted)");
        assert_eq!(result(&h[6]), "Old environment output: (3 lines omitted)");
        assert_eq!(result(&h[8]), "x\n".repeat(4));
        assert_eq!(ev.len(), 3);
    }

    #[test]
    fn polling_moves_the_cut_in_steps_and_tags_override() {
        let p = LastNObservations {
            n: 2,
            polling: 4,
            ..Default::default()
        };
        // 6 observations: (6 // 4) * 4 - 2 = 2, so only observation 1 is elided.
        let mut h = steps(5);
        p.apply(&mut h, &mut Vec::new()).unwrap();
        assert!(result(&h[2]).starts_with("Old environment"));
        assert_eq!(result(&h[4]), "x\n".repeat(2));
        let tagged = LastNObservations {
            n: 2,
            tool_tags: BTreeMap::from([
                ("view".into(), BTreeSet::from(["keep_output".into()])),
                ("bash".into(), BTreeSet::from(["remove_output".into()])),
            ]),
            ..Default::default()
        };
        let mut h = steps(5);
        tagged.apply(&mut h, &mut Vec::new()).unwrap();
        assert_eq!(result(&h[4]), "x\n".repeat(2), "keep_output wins over age");
        assert!(
            result(&h[10]).starts_with("Old environment"),
            "remove_output wins over recency"
        );
    }

    #[test]
    fn zero_n_or_polling_is_refused() {
        let p = LastNObservations {
            polling: 0,
            ..Default::default()
        };
        let err = p.apply(&mut steps(1), &mut Vec::new()).unwrap_err();
        assert!(err.to_string().contains("polling"), "{err}");
    }
}
