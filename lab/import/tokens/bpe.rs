//! OpenAI's byte-pair count, from a compact vocabulary.
//!
//! The count is `tiktoken`'s `encode_ordinary(text).len()`: the text is cut
//! by the encoding's pre-split regex, a piece that is a token counts one,
//! and any other piece is merged pair by pair, lowest rank first, as
//! `tiktoken`'s `_byte_pair_merge` does (the same loop, so the same tokens).
//! What differs is the vocabulary's form: the build writes every token's
//! bytes end to end in rank order (`build.rs`), embedded in the binary, and
//! the first count builds one hash table of ranks over them: about 3 MB and
//! a few milliseconds for `o200k_base`, where `tiktoken-rs`'s three maps of
//! owned byte vectors take ~45 MB and half a billion instructions. The
//! lab only counts, so it keeps no decoder and no special tokens.

use std::cell::RefCell;
use std::sync::OnceLock;

use fancy_regex::Regex;
use hashbrown::HashTable;

/// `o200k_base`'s pre-split pattern (GPT-4o and later), as `tiktoken` 0.7
/// and `tiktoken-rs` 0.7 give it.
const O200K_PATTERN: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|\p{N}{1,3}",
    r"| ?[^\s\p{L}\p{N}]+[\r\n/]*",
    r"|\s*[\r\n]+",
    r"|\s+(?!\S)",
    r"|\s+",
);

/// `cl100k_base`'s pre-split pattern (GPT-4, GPT-3.5-turbo).
const CL100K_PATTERN: &str = concat!(
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}",
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
);

/// One encoding's vocabulary and pre-split regex.
pub struct Bpe {
    /// Every token's bytes, end to end in rank order.
    bytes: &'static [u8],
    /// Where each rank's bytes start in `bytes`; one more entry than ranks.
    starts: Vec<u32>,
    /// Ranks, hashed by their bytes.
    ranks: HashTable<u32>,
    /// The hasher of `ranks` (fixed: the table is rebuilt per process).
    hasher: foldhash::fast::FixedState,
    /// The pre-split regex, compiled once; each thread counts with its
    /// own clone (below).
    regex: Regex,
    /// Which of a thread's clones is this encoding's.
    slot: usize,
}

thread_local! {
    /// Each thread's clones of the encodings' regexes, by [`Bpe::slot`]. A
    /// lookahead makes `fancy_regex` search with `find_at`, whose scratch
    /// space threads would otherwise share and contend for (`tiktoken`
    /// keeps per-thread clones for the same reason).
    static REGEXES: RefCell<[Option<Regex>; 2]> = const { RefCell::new([None, None]) };
}

impl Bpe {
    /// `o200k_base`, built at its first use in the process.
    pub fn o200k() -> &'static Bpe {
        static O200K: OnceLock<Bpe> = OnceLock::new();
        O200K.get_or_init(|| {
            Bpe::new(
                include_bytes!(concat!(env!("OUT_DIR"), "/o200k.bytes")),
                include_bytes!(concat!(env!("OUT_DIR"), "/o200k.lens")),
                O200K_PATTERN,
                0,
            )
        })
    }

    /// `cl100k_base`, built at its first use in the process.
    pub fn cl100k() -> &'static Bpe {
        static CL100K: OnceLock<Bpe> = OnceLock::new();
        CL100K.get_or_init(|| {
            Bpe::new(
                include_bytes!(concat!(env!("OUT_DIR"), "/cl100k.bytes")),
                include_bytes!(concat!(env!("OUT_DIR"), "/cl100k.lens")),
                CL100K_PATTERN,
                1,
            )
        })
    }

    fn new(bytes: &'static [u8], lens: &[u8], pattern: &str, slot: usize) -> Bpe {
        let mut starts = Vec::with_capacity(lens.len() / 2 + 1);
        let mut at = 0u32;
        starts.push(at);
        for len in lens.chunks_exact(2) {
            at += u32::from(u16::from_le_bytes([len[0], len[1]]));
            starts.push(at);
        }
        let hasher = foldhash::fast::FixedState::with_seed(0);
        let mut ranks = HashTable::with_capacity(starts.len() - 1);
        let token = |r: u32| &bytes[starts[r as usize] as usize..starts[r as usize + 1] as usize];
        for rank in 0..(starts.len() - 1) as u32 {
            let hash = hash_of(&hasher, token(rank));
            ranks.insert_unique(hash, rank, |&r| hash_of(&hasher, token(r)));
        }
        // The pattern is a constant of this file, compiled by every test.
        let regex = Regex::new(pattern).expect("the encodings' patterns compile");
        Bpe {
            bytes,
            starts,
            ranks,
            hasher,
            regex,
            slot,
        }
    }

    /// The bytes of `rank`.
    fn token(&self, rank: u32) -> &[u8] {
        let r = rank as usize;
        &self.bytes[self.starts[r] as usize..self.starts[r + 1] as usize]
    }

    /// The rank of the token whose bytes are `piece`, if it is one.
    fn rank(&self, piece: &[u8]) -> Option<u32> {
        let hash = hash_of(&self.hasher, piece);
        self.ranks.find(hash, |&r| self.token(r) == piece).copied()
    }

    /// Tokens `text` encodes to as ordinary text (special tokens' text
    /// counted as the characters it is).
    pub fn count(&self, text: &str) -> usize {
        REGEXES.with(|regexes| {
            let mut regexes = regexes.borrow_mut();
            let regex = regexes[self.slot].get_or_insert_with(|| self.regex.clone());
            self.count_with(regex, text)
        })
    }

    fn count_with(&self, regex: &Regex, text: &str) -> usize {
        let mut n = 0;
        let mut at = 0;
        for piece in regex.find_iter(text) {
            match piece {
                Ok(piece) => {
                    n += self.count_piece(piece.as_str().as_bytes());
                    at = piece.end();
                }
                // The regex gave up (its backtracking limit, only in a
                // piece far longer than the callers' segments): the rest
                // counts a token a byte, an upper bound, not a panic.
                Err(_) => return n + text.len() - at,
            }
        }
        n
    }

    /// Tokens of one pre-split piece: `tiktoken`'s `_byte_pair_merge`,
    /// whose parts are the tokens.
    fn count_piece(&self, piece: &[u8]) -> usize {
        if piece.len() <= 1 || self.rank(piece).is_some() {
            return piece.len().min(1);
        }
        // (start, rank of the pair that starts here), as in `tiktoken`.
        let mut parts: Vec<(usize, u32)> = Vec::with_capacity(piece.len() + 1);
        let mut min = (u32::MAX, usize::MAX);
        for i in 0..piece.len() - 1 {
            let rank = self.rank(&piece[i..i + 2]).unwrap_or(u32::MAX);
            if rank < min.0 {
                min = (rank, i);
            }
            parts.push((i, rank));
        }
        parts.push((piece.len() - 1, u32::MAX));
        parts.push((piece.len(), u32::MAX));
        let rank_at = |parts: &[(usize, u32)], i: usize| {
            if i + 3 < parts.len() {
                self.rank(&piece[parts[i].0..parts[i + 3].0])
                    .unwrap_or(u32::MAX)
            } else {
                u32::MAX
            }
        };
        while min.0 != u32::MAX {
            let i = min.1;
            if i > 0 {
                parts[i - 1].1 = rank_at(&parts, i - 1);
            }
            parts[i].1 = rank_at(&parts, i);
            parts.remove(i + 1);
            min = (u32::MAX, usize::MAX);
            for (i, &(_, rank)) in parts[..parts.len() - 1].iter().enumerate() {
                if rank < min.0 {
                    min = (rank, i);
                }
            }
        }
        parts.len() - 1
    }
}

fn hash_of(hasher: &foldhash::fast::FixedState, bytes: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    hasher.hash_one(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn reference(bpe: &Bpe, text: &str) -> usize {
        let theirs = if std::ptr::eq(bpe, Bpe::o200k()) {
            tiktoken_rs::o200k_base_singleton()
        } else {
            tiktoken_rs::cl100k_base_singleton()
        };
        theirs.encode_ordinary(text).len()
    }

    #[test]
    fn every_token_is_its_own_rank() {
        for (bpe, n) in [(Bpe::o200k(), 199_998), (Bpe::cl100k(), 100_256)] {
            assert_eq!(bpe.starts.len() - 1, n);
            for rank in (0..n as u32).step_by(97) {
                assert_eq!(bpe.rank(bpe.token(rank)), Some(rank));
            }
        }
    }

    #[test]
    fn counts_equal_tiktoken_rs_on_mixed_text() {
        let texts = [
            "hello world",
            "fn main() { println!(\"hi\"); }\n\n    let x = 42;\r\n",
            "Überprüfung der Größe — Привет, мир! 你好，世界。 🙂🙂",
            "<|endoftext|> <|endofprompt|>",
            "   leading and trailing spaces   \n\t\n",
            "I'M SHOUTING, isn't it? They'll've done 1234567 things.",
            "{\"key\": [1, 2.5e10, null], \"path\": \"/usr/lib/x86_64\"}",
        ];
        for bpe in [Bpe::o200k(), Bpe::cl100k()] {
            for text in texts {
                assert_eq!(bpe.count(text), reference(bpe, text), "{text:?}");
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Arbitrary Unicode, including the pieces a merge must work
        /// through (long words, digits, mixed scripts, whitespace runs).
        #[test]
        fn counts_equal_tiktoken_rs_on_any_text(text in "\\PC{0,200}|[a-zA-Z0-9 \\n\\t'.,()]{0,300}") {
            for bpe in [Bpe::o200k(), Bpe::cl100k()] {
                prop_assert_eq!(bpe.count(&text), reference(bpe, &text));
            }
        }
    }

    /// Every string of every shared session and wire capture (JSON lines'
    /// strings, other lines whole): real tool output, code, diffs and
    /// prose in many scripts, counted alike by both.
    #[test]
    fn counts_equal_tiktoken_rs_on_every_shared_text() {
        let Some(dir) = crate::tokens::fit::shared_transcripts() else {
            eprintln!("skipped: no shared/transcripts (set CTXLAB_TRANSCRIPTS)");
            return;
        };
        let mut files = Vec::new();
        for root in [dir.clone(), dir.join("../wire")] {
            let mut stack = vec![root];
            while let Some(d) = stack.pop() {
                let Ok(entries) = std::fs::read_dir(&d) else {
                    continue;
                };
                for e in entries.flatten() {
                    let p = e.path();
                    if p.is_dir() {
                        stack.push(p);
                    } else if !p.to_string_lossy().ends_with(".xz") {
                        files.push(p);
                    }
                }
            }
        }
        files.sort();
        let (mut texts, mut bytes) = (0usize, 0usize);
        for file in &files {
            let text = String::from_utf8_lossy(&std::fs::read(file).unwrap()).into_owned();
            let mut strings = Vec::new();
            match serde_json::from_str::<serde_json::Value>(&text) {
                Ok(v) => collect_strings(&v, &mut strings),
                Err(_) => {
                    for line in text.lines() {
                        match serde_json::from_str::<serde_json::Value>(line) {
                            Ok(v) => collect_strings(&v, &mut strings),
                            Err(_) => strings.push(line.to_string()),
                        }
                    }
                }
            }
            for s in &strings {
                // Segments as the counter cuts them: a single regex piece
                // of megabytes is no text either side counts at once.
                for seg in crate::tokens::pieces::segments(s) {
                    for bpe in [Bpe::o200k(), Bpe::cl100k()] {
                        assert_eq!(bpe.count(seg), reference(bpe, seg), "{}", file.display());
                    }
                    texts += 1;
                    bytes += seg.len();
                }
            }
        }
        eprintln!("{} files, {texts} texts, {bytes} bytes", files.len());
        assert!(
            texts > 10_000 && bytes > 10_000_000,
            "{texts} texts, {bytes} bytes"
        );
    }

    fn collect_strings(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::String(s) => out.push(s.clone()),
            serde_json::Value::Array(a) => a.iter().for_each(|v| collect_strings(v, out)),
            serde_json::Value::Object(o) => o.values().for_each(|v| collect_strings(v, out)),
            _ => {}
        }
    }
}
