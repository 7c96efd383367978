//! Step 1: persist oversized tool results by a batch budget.
//!
//! Only the newest batch (the last message, if it carries tool results) is
//! considered. Largest first, only items above the per-item threshold, and
//! the loop stops as soon as the batch is under budget — which is exactly why
//! a smaller large result can stay unsaved and later be "omitted" by step 3
//! (the seed's scenario A: lost forever in the intact pipeline).

use std::path::Path;

use super::{Compactor, Event, Step};
use crate::error::{LabError, LabResult};
use crate::message::{Block, Message, Role};
use crate::storage::root::safe_id;

/// Prefix of a step-3 placeholder that keeps its pointer.
pub const SAVED_PREFIX: &str = "[Earlier tool result saved at ";
/// A step-3 placeholder without a pointer.
pub const OMITTED: &str = "[Earlier tool result omitted.]";
/// First line of step-1 output.
pub const PERSISTED_OPEN: &str = "<persisted-output>\n";
/// The line step 3 scans for.
pub const FULL_OUTPUT: &str = "Full output: ";

/// Chars, as Python's `len` counts them.
pub(crate) fn chars(s: &str) -> usize {
    // Tool results are mostly ASCII: one byte per char up to the first byte
    // of a non-ASCII char (a vector scan; `is_ascii` reads a word at a
    // time), where counting decodes every char.
    let i = crate::scan::ascii_prefix(s.as_bytes());
    // `i` is a char boundary: every byte before it is ASCII.
    i + s[i..].chars().count()
}

/// The `<persisted-output>` text that replaces a result in context.
pub fn persisted_text(path: &str, preview: &str) -> String {
    // Pieces pushed into one allocation: `format!` cost more than the copy.
    let parts = [
        PERSISTED_OPEN,
        FULL_OUTPUT,
        path,
        "\nPreview:\n",
        preview,
        "\n</persisted-output>",
    ];
    let mut out = String::with_capacity(parts.iter().map(|p| p.len()).sum());
    for p in parts {
        out.push_str(p);
    }
    out
}

/// First `n` chars of `s`.
pub(crate) fn prefix_chars(s: &str, n: usize) -> &str {
    // An ASCII prefix ends at byte `n`: no walk over its chars.
    if s.as_bytes().get(..n).is_some_and(<[u8]>::is_ascii) {
        return &s[..n];
    }
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// The f9e8b28 scan: the first line starting with `Full output: `, anywhere in
/// the text, with lines split as Python's `splitlines()` splits them.
///
/// Found without splitting: a line starts where the text starts or right after
/// a line-break char (a `\r` followed by `\n` ends its line at the `\n`, which
/// cannot begin the pattern), and the pattern cannot overlap itself, so the
/// first match at a line start is the first such line. Equivalence with the
/// split is tested against [`super::course::splitlines`].
pub fn full_output_line(content: &str) -> Option<&str> {
    static FINDER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(FULL_OUTPUT));
    let bytes = content.as_bytes();
    let mut from = 0;
    let i = loop {
        let i = from + FINDER.find(&bytes[from..])?;
        if at_line_start(content, i) {
            break i;
        }
        from = i + 1;
    };
    output_path(&content[i + FULL_OUTPUT.len()..])
}

/// Does a `splitlines()` line of `text` start at byte `i` (a char boundary)?
pub(crate) fn at_line_start(text: &str, i: usize) -> bool {
    text[..i]
        .chars()
        .next_back()
        .is_none_or(super::course::is_line_break)
}

/// The path of a `Full output: ` line, given the text after its prefix: the
/// rest of that line, unless empty.
pub(crate) fn output_path(rest: &str) -> Option<&str> {
    let path = super::course::find_line_break(rest).map_or(rest, |end| &rest[..end]);
    (!path.is_empty()).then_some(path)
}

/// Is this a step-3 placeholder (either form)?
pub fn is_placeholder(content: &str) -> bool {
    content == OMITTED || (content.starts_with(SAVED_PREFIX) && content.ends_with(']'))
}

impl Compactor {
    /// Course main `persisted_output_path`: recognise persisted text *and* a
    /// saved-at placeholder, but only when the path is a file that resolves inside
    /// the results dir; the path comes back as `pathlib` prints it.
    pub fn recognised_path(&self, content: &str) -> Option<String> {
        let candidate = if content.starts_with(PERSISTED_OPEN) {
            full_output_line(content)
        } else if content.starts_with(SAVED_PREFIX) && content.ends_with(']') {
            Some(&content[SAVED_PREFIX.len()..content.len() - 1])
        } else {
            None
        }?;
        super::course::file_resolves_inside(self.root.fs(), candidate, self.root.results())
            .then(|| super::course::path_str(candidate))
    }

    /// Write a result's full text under the results dir.
    ///
    /// f9e8b28 never overwrites an existing file (`if not path.exists()`), so two
    /// ids that sanitise to one name share the first one's bytes; course main
    /// overwrites (`overwrite_saved_output`), so they share the last one's;
    /// `collision_safe_paths` picks a fresh name instead.
    ///
    /// `then` gets the path and makes what the caller keeps of it (the
    /// path moves into the `Saved` event and is lent, not copied).
    pub(crate) fn save_output<T>(
        &mut self,
        step: Step,
        id: &str,
        text: &str,
        then: impl FnOnce(&str) -> T,
    ) -> LabResult<T> {
        let base = safe_id(id, self.config.constants.safe_id_max);
        let mut path = self.root.result_path(&base, ".txt");
        let fs = self.root.fs();
        if self.config.switches.collision_safe_paths {
            let mut n = 1;
            while fs.exists(Path::new(&path))
                && fs.read_to_string(Path::new(&path)).ok().as_deref() != Some(text)
            {
                n += 1;
                path = self.root.result_path(&format!("{base}-{n}"), ".txt");
            }
        }
        let written = if self.config.switches.overwrite_saved_output {
            fs.write(Path::new(&path), text.as_bytes()).map(|()| true)
        } else {
            fs.write_if_absent(Path::new(&path), text.as_bytes())
        };
        written.map_err(|e| LabError::io("persisting a tool result", &path, e))?;
        let kept = then(&path);
        self.events.push(Event::Saved {
            step,
            id: id.to_string(),
            path,
            chars: chars(text),
        });
        Ok(kept)
    }

    /// Replacement text for a result being persisted with a preview of `preview` chars.
    fn persisted_preview(
        &mut self,
        step: Step,
        id: &str,
        output: &str,
        preview: usize,
    ) -> LabResult<String> {
        // Course main reuses an existing pointer instead of saving the stub itself.
        if self.config.switches.idempotent_placeholders {
            if let Some(path) = self.recognised_path(output) {
                let saved = self.root.fs().read(std::path::Path::new(&path)).ok();
                let text = super::course::saved_preview(saved, output, preview);
                return Ok(persisted_text(&path, &text));
            }
        }
        self.save_output(step, id, output, |path| {
            persisted_text(path, prefix_chars(output, preview))
        })
    }

    /// Step 1 (course `tool_result_budget`).
    pub fn persist_batch(&mut self, messages: &mut [Message]) -> LabResult<()> {
        let Some(last) = messages.last_mut() else {
            return Ok(());
        };
        if last.role != Role::User {
            return Ok(());
        }
        let budget = self.config.constants.batch_budget_chars;
        let large = self.config.constants.large_result_chars;
        let preview = self.config.constants.preview_chars;
        let all_large = self.config.switches.persist_all_large;
        let blocks = last.blocks_mut();
        let mut order: Vec<(usize, usize)> = blocks
            .iter()
            .enumerate()
            .filter_map(|(i, b)| match b {
                Block::ToolResult { content, .. } => Some((i, chars(content))),
                _ => None,
            })
            .collect();
        let mut total: usize = order.iter().map(|(_, n)| n).sum();
        // Python's sorted(..., reverse=True) is stable: ties keep batch order.
        order.sort_by_key(|&(_, n)| std::cmp::Reverse(n));
        for (i, n) in order {
            if total <= budget && !all_large {
                break;
            }
            if n <= large {
                continue;
            }
            // The content is taken out for the step rather than copied, and
            // put back if the step fails.
            let Block::ToolResult {
                tool_use_id,
                content,
            } = &mut blocks[i]
            else {
                continue;
            };
            let old = std::mem::take(content);
            match self.persisted_preview(Step::Persist, tool_use_id, &old, preview) {
                Ok(new) => {
                    total = total - n + chars(&new);
                    *content = new;
                }
                Err(e) => {
                    *content = old;
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Course main `fit_tool_results`: persist the largest results anywhere in
    /// history (preview 1 000) until the estimate is under `target`.
    pub fn fit_tool_results(&mut self, messages: &mut [Message], target: usize) -> LabResult<()> {
        let mut positions: Vec<(usize, usize, usize)> =
            crate::message::tool_result_positions(messages)
                .map(|(mi, bi, content)| (mi, bi, chars(content)))
                .collect();
        positions.sort_by_key(|&(_, _, n)| std::cmp::Reverse(n));
        let mut estimate = crate::message::estimate_chars(messages);
        let preview = self.config.constants.fit_preview_chars;
        for (mi, bi, _) in positions {
            if estimate <= target {
                break;
            }
            let Block::ToolResult {
                tool_use_id,
                content,
            } = &messages[mi].blocks()[bi]
            else {
                continue;
            };
            let (id, old) = (tool_use_id.clone(), content.clone());
            let new = self.persisted_preview(Step::Fit, &id, &old, preview)?;
            if chars(&new) < chars(&old) {
                estimate = estimate + crate::message::json_str_chars(&new)
                    - crate::message::json_str_chars(&old);
                if let Block::ToolResult { content, .. } = &mut messages[mi].blocks_mut()[bi] {
                    *content = new;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The scan as the course writes it: split every line, take the first
    /// with the prefix.
    fn by_splitting(content: &str) -> Option<&str> {
        super::super::course::splitlines(content)
            .into_iter()
            .find_map(|l| l.strip_prefix(FULL_OUTPUT))
            .filter(|p| !p.is_empty())
    }

    #[test]
    fn full_output_line_finds_the_first_line_only() {
        let t = "<persisted-output>\nFull output: /r/a.txt\nPreview:\nFull output: /x";
        assert_eq!(full_output_line(t), Some("/r/a.txt"));
        // Not at a line start; then a lone \r starts a line, \r\n ends one.
        assert_eq!(
            full_output_line("x Full output: /a\rFull output: /b\r\n"),
            Some("/b")
        );
        // The first matching line has an empty path: no pointer, as in Python.
        assert_eq!(full_output_line("Full output: \nFull output: /c"), None);
        assert_eq!(
            full_output_line("a\u{2028}Full output: /d\u{85}e"),
            Some("/d")
        );
    }

    proptest! {
        #[test]
        fn char_counts_and_prefixes_are_by_char(s in "[a\u{e9}\u{1F600}]{0,12}", n in 0usize..14) {
            prop_assert_eq!(chars(&s), s.chars().count());
            let want: String = s.chars().take(n).collect();
            prop_assert_eq!(prefix_chars(&s, n), want.as_str());
        }

        #[test]
        fn full_output_line_equals_the_split_scan(
            parts in proptest::collection::vec(
                prop_oneof![
                    Just("Full output: ".to_string()),
                    Just("Full output: /p".to_string()),
                    "[\n\r\u{b}\u{c}\u{1c}\u{1d}\u{1e}\u{85}\u{2028}\u{2029}]",
                    "[a-z /é]{0,4}",
                ],
                0..12,
            )
        ) {
            let s: String = parts.concat();
            prop_assert_eq!(full_output_line(&s), by_splitting(&s));
        }
    }
}
