//! Exact OpenAI token counts with the published BPE tables.
//!
//! The `o200k_base` and `cl100k_base` vocabularies come from the pinned
//! `tiktoken-rs` crate at build time and are counted by [`super::bpe`], so
//! counting needs no network and gives the counts of OpenAI's Python
//! `tiktoken`. Text is encoded as ordinary text: a transcript that happens
//! to contain `<|endoftext|>` is counted as the characters it is, the way an
//! API request carrying that text would be.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use super::bpe::Bpe;
use super::TokenCounter;

/// Which OpenAI encoding to count with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// GPT-4o, GPT-4.1, o-series, GPT-5.
    O200k,
    /// GPT-4, GPT-3.5-turbo.
    Cl100k,
}

/// An exact counter for one OpenAI encoding.
#[derive(Debug, Clone, Copy)]
pub struct OpenAi {
    encoding: Encoding,
}

impl OpenAi {
    /// The `o200k_base` counter.
    pub const O200K: OpenAi = OpenAi {
        encoding: Encoding::O200k,
    };
    /// The `cl100k_base` counter.
    pub const CL100K: OpenAi = OpenAi {
        encoding: Encoding::Cl100k,
    };

    /// The encoding this counter uses.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    fn bpe(&self) -> &'static Bpe {
        // Built from the embedded vocabulary once per process.
        match self.encoding {
            Encoding::O200k => Bpe::o200k(),
            Encoding::Cl100k => Bpe::cl100k(),
        }
    }
}

impl TokenCounter for OpenAi {
    fn name(&self) -> &'static str {
        match self.encoding {
            Encoding::O200k => "o200k",
            Encoding::Cl100k => "cl100k",
        }
    }

    /// Memoised per thread by encoding and content (a 64-bit hash and the
    /// length): a replay counts a session's history at every request that
    /// carries it, and a byte-pair count costs far more than a hash. Short
    /// texts are counted directly.
    fn count(&self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        if text.len() < 64 {
            return self.bpe().count(text);
        }
        let key = (self.encoding, content_hash(text), text.len());
        if let Some(n) = MEMO.with(|m| m.borrow().get(&key).copied()) {
            return n;
        }
        // Segment by segment: one huge regex piece would overflow the
        // regex's backtracking ([`super::pieces`]).
        let segments = match text.len() > super::pieces::RUN_BYTES {
            true => super::pieces::segments(text),
            false => vec![text],
        };
        let n = if segments.len() == 1 {
            self.bpe().count(text)
        } else {
            // Through the memo: equal cuts of a long run are counted once.
            segments.into_iter().map(|s| self.count(s)).sum()
        };
        MEMO.with(|m| {
            let mut m = m.borrow_mut();
            // Bounded: a long replay must not hold every text it ever saw.
            if m.len() >= MEMO_LIMIT {
                m.clear();
            }
            m.insert(key, n);
        });
        n
    }
}

/// Entries kept by the counting memo before it starts over.
const MEMO_LIMIT: usize = 1 << 20;

thread_local! {
    static MEMO: RefCell<HashMap<(Encoding, u64, usize), usize>> = RefCell::new(HashMap::new());
}

fn content_hash(s: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_run_of_one_character_of_40_mb_is_counted_without_a_panic() {
        use crate::tokens::TokenCounter as _;
        let text = "a".repeat(40 * 1024 * 1024);
        for c in [super::OpenAi::O200K, super::OpenAi::CL100K] {
            let n = c.count(&text);
            // Long runs of one letter merge into multi-letter tokens.
            assert!(n > 0 && n < text.len() / 2, "{}: {n}", c.name());
        }
        // Prose is counted exactly across the segment cuts.
        let prose = "the quick brown fox jumps over the lazy dog ".repeat(5000);
        let c = super::OpenAi::O200K;
        assert_eq!(
            c.count(&prose),
            tiktoken_rs::o200k_base_singleton()
                .encode_ordinary(&prose)
                .len()
        );
    }

    use super::*;

    // Reference counts from OpenAI's Python tiktoken 0.14 given the same rank
    // files (`len(enc.encode_ordinary(s))`): a second implementation of the
    // same merges, so a wrong pre-split regex or a swapped table fails here.
    #[test]
    fn counts_match_python_tiktoken() {
        let cases = [
            ("hello world", 2, 2),
            ("", 0, 0),
            ("fn main() { println!(\"hi\"); }", 9, 9),
            ("Überprüfung der Größe", 4, 7),
            ("<|endoftext|>", 7, 7),
        ];
        for (text, o200k, cl100k) in cases {
            assert_eq!(OpenAi::O200K.count(text), o200k, "o200k {text:?}");
            assert_eq!(OpenAi::CL100K.count(text), cl100k, "cl100k {text:?}");
        }
    }

    #[test]
    fn the_memo_answers_per_encoding_what_the_encoder_does() {
        // Cyrillic and Chinese: o200k's larger vocabulary needs fewer tokens.
        let text = "Привет, мир! 你好，世界。".repeat(8);
        for c in [OpenAi::O200K, OpenAi::CL100K] {
            let direct = c.bpe().count(&text);
            assert_eq!(c.count(&text), direct);
            assert_eq!(c.count(&text), direct, "the memoised answer");
        }
        assert_ne!(OpenAi::O200K.count(&text), OpenAi::CL100K.count(&text));
    }

    #[test]
    fn names_are_the_report_names() {
        assert_eq!(OpenAi::O200K.name(), "o200k");
        assert_eq!(OpenAi::CL100K.name(), "cl100k");
    }
}
