//! Codex's text truncation, rewritten from the upstream source (constants and
//! marker strings reproduced; see the policy module doc for files and commits).
//!
//! Byte budgets cut at UTF-8 character boundaries, as upstream's
//! `take_bytes_at_char_boundary` / `take_last_bytes_at_char_boundary` do.

/// `MODEL_FORMAT_MAX_BYTES`: model-visible cap of one tool output (10 KiB).
pub const MODEL_FORMAT_MAX_BYTES: usize = 10 * 1024;
/// `MODEL_FORMAT_MAX_LINES`: model-visible line cap of one tool output.
pub const MODEL_FORMAT_MAX_LINES: usize = 256;
/// `APPROX_BYTES_PER_TOKEN` of the token-budget truncation.
pub const APPROX_BYTES_PER_TOKEN: usize = 4;
/// Lines the omission marker adds (upstream `OMISSION_MARKER_LINES`).
const OMISSION_MARKER_LINES: usize = 3;

/// The longest prefix of `s` of at most `max` bytes ending on a char boundary.
pub fn head_bytes(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The longest suffix of `s` of at most `max` bytes starting on a char boundary.
pub fn tail_bytes(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut start = s.len() - max;
    while start < s.len() && !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// `format_output_for_model_body`: the text the model sees of one tool
/// output (head + tail with a marker, prefixed by the total line count).
pub fn format_output_for_model(content: &str, max_bytes: usize, max_lines: usize) -> String {
    let total_lines = content.lines().count();
    if content.len() <= max_bytes && total_lines <= max_lines {
        return content.to_string();
    }
    let body = truncate_formatted(content, total_lines, max_bytes, max_lines);
    format!("Total output lines: {total_lines}\n\n{body}")
}

fn truncate_formatted(
    content: &str,
    total_lines: usize,
    max_bytes: usize,
    max_lines: usize,
) -> String {
    let by_bytes = content.len() > max_bytes;
    let by_lines = total_lines > max_lines;
    if by_bytes && by_lines {
        // Lines first so the "omitted N of M" count is right, then bytes.
        let lined = line_truncation(content, total_lines, max_bytes, max_lines);
        if lined.len() <= max_bytes {
            return lined;
        }
        return rebudget_around_marker(&lined, max_bytes);
    }
    if by_bytes {
        let marker = format!("\n[... output truncated to fit {max_bytes} bytes ...]\n\n");
        let head_budget = (max_bytes / 2).min(max_bytes.saturating_sub(marker.len()));
        let mut out = head_bytes(content, head_budget).to_string();
        out.push_str(&marker);
        let remaining = max_bytes.saturating_sub(out.len());
        if remaining > 0 {
            out.push_str(tail_bytes(content, remaining));
        }
        return out;
    }
    line_truncation(content, total_lines, max_bytes, max_lines)
}

/// Both caps exceeded and the line-cut text still too long: keep the marker
/// line and split the byte budget between head and tail.
fn rebudget_around_marker(lined: &str, max_bytes: usize) -> String {
    let segments: Vec<&str> = lined.split_inclusive('\n').collect();
    let marker_idx = segments
        .iter()
        .position(|s| s.contains("[... omitted"))
        .unwrap_or(segments.len() / 2);
    let head: String = segments[..marker_idx].concat();
    let tail: String = segments.get(marker_idx + 1..).unwrap_or(&[]).concat();
    let marker = segments.get(marker_idx).copied().unwrap_or("");
    let content_budget = max_bytes.saturating_sub(marker.len());
    let head_budget = (content_budget / 2).min(head.len());
    let tail_budget = content_budget.saturating_sub(head_budget).min(tail.len());
    let mut out = head_bytes(&head, head_budget).to_string();
    out.push_str(marker);
    out.push_str(tail_bytes(&tail, tail_budget));
    out
}

fn line_truncation(
    content: &str,
    total_lines: usize,
    max_bytes: usize,
    max_lines: usize,
) -> String {
    let segments: Vec<&str> = content.split_inclusive('\n').collect();
    let available = if segments.len() > max_lines {
        max_lines.saturating_sub(OMISSION_MARKER_LINES)
    } else {
        max_lines
    };
    let head_take = (available / 2).min(segments.len());
    let tail_take = (available - head_take).min(segments.len().saturating_sub(head_take));
    let omitted = segments.len().saturating_sub(head_take + tail_take);
    let head_end: usize = segments[..head_take].iter().map(|s| s.len()).sum();
    let tail_len: usize = segments[segments.len() - tail_take..]
        .iter()
        .map(|s| s.len())
        .sum();
    let marker = if omitted > 0 {
        format!("\n[... omitted {omitted} of {total_lines} lines ...]\n\n")
    } else {
        String::new()
    };
    let head_budget = (max_bytes / 2).min(max_bytes.saturating_sub(marker.len()));
    let mut out = head_bytes(&content[..head_end], head_budget).to_string();
    out.push_str(&marker);
    let remaining = max_bytes.saturating_sub(out.len());
    if remaining > 0 {
        out.push_str(tail_bytes(&content[content.len() - tail_len..], remaining));
    }
    out
}

/// `approx_token_count`: bytes / 4, rounded up.
pub fn approx_token_count(text: &str) -> usize {
    text.len().div_ceil(APPROX_BYTES_PER_TOKEN)
}

/// `truncate_text(_, TruncationPolicy::Tokens(max_tokens))`: middle
/// truncation to `4 * max_tokens` bytes, cutting at newlines where it can,
/// with the marker `[…N tokens truncated…]`.
pub fn truncate_to_tokens(s: &str, max_tokens: usize) -> String {
    let max_bytes = max_tokens * APPROX_BYTES_PER_TOKEN;
    if s.is_empty() || (max_tokens > 0 && s.len() <= max_bytes) {
        return s.to_string();
    }
    let marker = |removed_bytes: usize| {
        format!(
            "[…{} tokens truncated…]",
            removed_bytes.div_ceil(APPROX_BYTES_PER_TOKEN)
        )
    };
    if max_bytes == 0 {
        return marker(s.len());
    }
    let marker = marker(s.len() - max_bytes);
    if marker.len() >= max_bytes {
        return head_bytes(&marker, max_bytes).to_string();
    }
    let keep = max_bytes - marker.len();
    let (left, right) = (keep / 2, keep - keep / 2);
    let prefix_end = prefix_end(s, left);
    let suffix_start = suffix_start(s, right).max(prefix_end);
    let mut out = format!("{}{marker}\n{}", &s[..prefix_end], &s[suffix_start..]);
    if out.len() > max_bytes {
        let keep_len = head_bytes(&out, max_bytes).len();
        out.truncate(keep_len);
    }
    out
}

/// End of the kept head: just after the last newline within the budget, else
/// the budget itself (on a char boundary).
fn prefix_end(s: &str, budget: usize) -> usize {
    if let Some(i) = s.get(..budget).and_then(|h| h.rfind('\n')) {
        return i + 1;
    }
    head_bytes(s, budget).len()
}

/// Start of the kept tail: just after the first newline within the budget,
/// else the budget itself (on a char boundary).
fn suffix_start(s: &str, budget: usize) -> usize {
    let start = s.len().saturating_sub(budget);
    if let Some(i) = s.get(start..).and_then(|t| t.find('\n')) {
        return start + i + 1;
    }
    let mut idx = start.min(s.len());
    while idx < s.len() && !s.is_char_boundary(idx) {
        idx += 1;
    }
    idx
}
