//! Content fingerprints: a text's identity without keeping the text.
//!
//! The course's checker (its ledger of original results, archive lookups),
//! the policy checker and retention each ask "is this the original?" of
//! texts that may be megabytes long and seen thousands of times. Keeping
//! every original to compare it later would make memory grow with the
//! session, so each keeps a fingerprint instead.

/// A content's identity for the ledger and archive lookups: a 64-bit
/// foldhash (quality variant, fixed seed, so deterministic within and
/// across runs of one build) plus the length. Archives hold the whole
/// context on every snip and the ledger every original result, so keeping
/// each string to compare it later would make memory grow with the session;
/// a collision needs equal length and hash. Fingerprints are only compared
/// within a run, never stored or printed.
pub fn fingerprint(content: &str) -> (u64, usize) {
    fingerprint_bytes(content.as_bytes())
}

/// [`fingerprint`] of raw bytes; of a text's bytes, the text's. A held file
/// is compared by its bytes: only the original's bytes (valid UTF-8) can
/// match, up to the collision every fingerprint accepts, so its UTF-8 need
/// not be checked first. (The 0xFF after the bytes is what hashing a `str`
/// writes, so the numbers are those of `hash_one(content)`.)
pub fn fingerprint_bytes(content: &[u8]) -> (u64, usize) {
    use std::hash::{BuildHasher, Hasher};
    const STATE: foldhash::quality::FixedState =
        foldhash::quality::FixedState::with_seed(0x6374_786c_6162);
    let mut h = STATE.build_hasher();
    h.write(content);
    h.write_u8(0xff);
    (h.finish(), content.len())
}

/// Does `content` have fingerprint `print`? The length is compared first:
/// most texts that are not the original (placeholders, previews) differ in
/// length, and then need no hash.
pub fn has_print(content: &str, print: (u64, usize)) -> bool {
    has_print_bytes(content.as_bytes(), print)
}

/// [`has_print`] of raw bytes (see [`fingerprint_bytes`]).
pub fn has_print_bytes(content: &[u8], print: (u64, usize)) -> bool {
    content.len() == print.1 && fingerprint_bytes(content) == print
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn fingerprint_is_the_hash_of_the_text(s in "(?s).{0,60}", cut in 0usize..60) {
            use std::hash::BuildHasher;
            let state = foldhash::quality::FixedState::with_seed(0x6374_786c_6162);
            proptest::prop_assert_eq!(fingerprint(&s), (state.hash_one(s.as_str()), s.len()));
            proptest::prop_assert!(has_print_bytes(s.as_bytes(), fingerprint(&s)));
            // Other bytes of the same length (a non-UTF-8 one among them) do not match.
            let mut other = s.clone().into_bytes();
            if let Some(b) = other.get_mut(cut) {
                *b = if *b == 0xff { 0xfe } else { 0xff };
                proptest::prop_assert!(!has_print_bytes(&other, fingerprint(&s)));
            }
        }
    }
}
