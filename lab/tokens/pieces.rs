//! Texts cut where a byte-pair count can be taken piece by piece.
//!
//! tiktoken-rs splits text with a backtracking regex and unwraps its
//! result: one regex piece of millions of characters (a tool result of one
//! repeated character) overflows the regex's stack and panics. A long text
//! is therefore counted in segments of at most [`SEGMENT_BYTES`], cut where
//! the encoder's own pieces end: before the space that starts a new word
//! (`word| next`), where the split changes no piece. Only a run of more
//! than [`SEGMENT_BYTES`] with no such place (one piece that long) is cut
//! inside itself; its count is then an estimate, off by at most a token or
//! two per cut, in a piece no real prose has.

/// Longest segment counted at once, 64 KiB: far below the length at which
/// the regex fails, far above any word.
pub const SEGMENT_BYTES: usize = 64 * 1024;

/// `text` in segments of at most about [`SEGMENT_BYTES`] (a cut lands on a
/// character boundary), whose counts add up to the text's.
pub fn segments(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while rest.len() > SEGMENT_BYTES {
        let cut = cut_at(rest);
        out.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

/// Where to end the first segment of `text` (longer than a segment): the
/// last ` ` before a word within the segment, else a character boundary.
fn cut_at(text: &str) -> usize {
    let window = &text.as_bytes()[..SEGMENT_BYTES];
    let word_start = (1..window.len() - 1).rev().find(|&i| {
        window[i] == b' '
            && !window[i - 1].is_ascii_whitespace()
            && window[i + 1].is_ascii_alphanumeric()
    });
    match word_start {
        Some(i) => i,
        None => {
            let mut i = SEGMENT_BYTES;
            while !text.is_char_boundary(i) {
                i -= 1;
            }
            i
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_cover_the_text_in_order_and_stay_short() {
        let text = "word ".repeat(40_000) + &"é".repeat(100_000);
        let segs = segments(&text);
        assert_eq!(segs.concat(), text);
        assert!(segs.len() > 3);
        assert!(segs.iter().all(|s| s.len() <= SEGMENT_BYTES), "short");
        // Between words the cut is before the space.
        assert!(segs[1].starts_with(" word"), "{:?}", &segs[1][..10]);
        assert_eq!(segments("short"), vec!["short"]);
        assert!(segments("").is_empty());
    }
}
