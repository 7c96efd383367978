//! Texts cut where a byte-pair count can be taken piece by piece.
//!
//! tiktoken-rs splits text with a backtracking regex and unwraps its
//! result: one regex piece of millions of characters (a tool result of one
//! repeated character) overflows the regex's stack and panics. A long text
//! is therefore counted in segments of at most [`SEGMENT_BYTES`], cut where
//! the encoder's own pieces end: before the space that starts a new word
//! (`word| next`), where the split changes no piece. A window of
//! [`SEGMENT_BYTES`] with no such place (one piece that long) is cut inside
//! the piece every [`RUN_BYTES`]: the byte-pair merge is quadratic in a
//! piece's length, and equal cuts of a run of one character are counted
//! once (the counter's memo). Its count is then an estimate, off by at most
//! a token or two per cut, in a piece no real prose has.

/// Longest segment counted at once, 64 KiB: far below the length at which
/// the regex fails, far above any word.
pub const SEGMENT_BYTES: usize = 64 * 1024;

/// Longest run of one repeated byte counted at once, 1 KiB; a longer one
/// is cut every this many bytes. Only such runs are cut inside a piece, so
/// text without one (prose, JSON, code) is counted exactly.
pub const RUN_BYTES: usize = 1024;

/// A word starts at `i`: a space after a non-space, before a letter or digit.
fn word_starts(b: &[u8], i: usize) -> bool {
    b[i] == b' '
        && !b[i - 1].is_ascii_whitespace()
        && b.get(i + 1).is_some_and(u8::is_ascii_alphanumeric)
}

/// `text` in segments of about [`SEGMENT_BYTES`] at most, cut before the
/// space that starts a word, and runs of one byte cut every [`RUN_BYTES`];
/// their counts add up to the text's (exactly, but for the cut runs).
pub fn segments(text: &str) -> Vec<&str> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let (mut seg, mut word, mut same) = (0, 0, 0);
    for i in 1..b.len() {
        if b[i] != b[i - 1] {
            same = i;
        }
        if i - same >= RUN_BYTES && text.is_char_boundary(i) {
            out.push(&text[seg..i]);
            (seg, word, same) = (i, i, i);
        } else if word_starts(b, i) {
            if i - seg > SEGMENT_BYTES && word > seg {
                out.push(&text[seg..word]);
                seg = word;
            }
            word = i;
        }
    }
    if seg < text.len() {
        out.push(&text[seg..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_cover_the_text_in_order_and_stay_short() {
        let text = "word ".repeat(40_000) + "{\"json\":[1,2,3]}";
        let segs = segments(&text);
        assert_eq!(segs.concat(), text);
        assert!(segs.len() > 2);
        assert!(segs.iter().all(|s| s.len() <= SEGMENT_BYTES + 8), "short");
        // Between words the cut is before the space.
        assert!(segs[1].starts_with(" word"), "{:?}", &segs[1][..10]);
        let run = "a".repeat(SEGMENT_BYTES * 2);
        assert!(segments(&run).iter().all(|s| s.len() == RUN_BYTES));
        assert_eq!(segments(&run).concat(), run);
        // Text with no run and no word is one segment (counted exactly).
        let json = "{\"k\":\"v\"}".repeat(20_000);
        assert_eq!(segments(&json), vec![json.as_str()]);
        assert_eq!(segments("short"), vec!["short"]);
        assert!(segments("").is_empty());
    }
}
