//! Codex's middle truncation (`codex_utils_string`'s `truncate.rs`, as the
//! code index stores it): a head and a tail of the byte budget, cut at char
//! boundaries, around `…N tokens truncated…` (or `…N chars truncated…` for
//! a byte budget). No newline is added; lines are not respected.

/// `APPROX_BYTES_PER_TOKEN`.
pub const APPROX_BYTES_PER_TOKEN: usize = 4;

/// `TruncationPolicy`: a budget in approximate tokens or in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TruncationPolicy {
    /// `Bytes(n)`.
    Bytes(usize),
    /// `Tokens(n)`: `4 × n` bytes.
    Tokens(usize),
}

impl TruncationPolicy {
    /// `byte_budget`.
    pub fn byte_budget(self) -> usize {
        match self {
            TruncationPolicy::Bytes(b) => b,
            TruncationPolicy::Tokens(t) => t.saturating_mul(APPROX_BYTES_PER_TOKEN),
        }
    }
}

/// `Mul<f64>`: the budget scaled, rounded up.
impl std::ops::Mul<f64> for TruncationPolicy {
    type Output = Self;

    fn mul(self, multiplier: f64) -> Self {
        let scale = |n: usize| (n as f64 * multiplier).ceil() as usize;
        match self {
            TruncationPolicy::Bytes(b) => TruncationPolicy::Bytes(scale(b)),
            TruncationPolicy::Tokens(t) => TruncationPolicy::Tokens(scale(t)),
        }
    }
}

/// `approx_tokens_from_byte_count`: bytes / 4, rounded up.
pub fn approx_tokens_from_byte_count(bytes: usize) -> usize {
    bytes.div_ceil(APPROX_BYTES_PER_TOKEN)
}

/// `truncate_text`: `truncate_middle_chars` for bytes,
/// `truncate_middle_with_token_budget` for tokens.
pub fn truncate_text(s: &str, policy: TruncationPolicy) -> String {
    match policy {
        TruncationPolicy::Bytes(bytes) => truncate_with_byte_estimate(s, bytes, false),
        TruncationPolicy::Tokens(tokens) => {
            let max_bytes = policy.byte_budget();
            if s.is_empty() || (tokens > 0 && s.len() <= max_bytes) {
                return s.to_string();
            }
            truncate_with_byte_estimate(s, max_bytes, true)
        }
    }
}

/// `format_truncation_marker`.
fn marker(use_tokens: bool, removed: usize) -> String {
    if use_tokens {
        format!("…{removed} tokens truncated…")
    } else {
        format!("…{removed} chars truncated…")
    }
}

/// `truncate_with_byte_estimate`: tokens count the bytes over the budget,
/// chars count the characters actually cut out.
fn truncate_with_byte_estimate(s: &str, max_bytes: usize, use_tokens: bool) -> String {
    if s.is_empty() {
        return String::new();
    }
    if max_bytes == 0 {
        let removed = if use_tokens {
            approx_tokens_from_byte_count(s.len())
        } else {
            s.chars().count()
        };
        return marker(use_tokens, removed);
    }
    if s.len() <= max_bytes {
        return s.to_string();
    }
    let left_budget = max_bytes / 2;
    let (removed_chars, left, right) = split_string(s, left_budget, max_bytes - left_budget);
    let removed = if use_tokens {
        approx_tokens_from_byte_count(s.len() - max_bytes)
    } else {
        removed_chars
    };
    format!("{left}{}{right}", marker(use_tokens, removed))
}

/// `split_string`: the longest head of whole chars within `beginning_bytes`,
/// the tail of the chars starting at or after `len - end_bytes`, and the
/// count of chars between.
pub fn split_string(s: &str, beginning_bytes: usize, end_bytes: usize) -> (usize, &str, &str) {
    let tail_start_target = s.len().saturating_sub(end_bytes);
    let (mut prefix_end, mut suffix_start, mut removed) = (0, s.len(), 0);
    let mut suffix_started = false;
    for (idx, ch) in s.char_indices() {
        let char_end = idx + ch.len_utf8();
        if char_end <= beginning_bytes {
            prefix_end = char_end;
        } else if idx >= tail_start_target {
            if !suffix_started {
                suffix_start = idx;
                suffix_started = true;
            }
        } else {
            removed += 1;
        }
    }
    let suffix_start = suffix_start.max(prefix_end);
    (removed, &s[..prefix_end], &s[suffix_start..])
}
