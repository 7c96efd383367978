//! Byte scans of long texts: the first byte of a small fixed class.
//!
//! The size estimate, the transcript writer and the archive scanner spend
//! most of their time looking for the next byte that needs attention (an
//! escape, a non-ASCII byte, a line break's lead byte) in runs of plain
//! text. [`find`] answers that 32 bytes per step with AVX2 when the CPU has
//! it (detected at run time) and falls back to [`position`], a portable
//! block scan the compiler vectorises with SSE2, everywhere else.

/// The bytes a scan stops at: below `below` (unsigned), every byte from
/// 0x80 up when `high`, and the two bytes of `eq`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stops {
    /// Bytes below this one stop the scan (0 stops none).
    pub below: u8,
    /// Whether every byte from 0x80 up stops the scan.
    pub high: bool,
    /// Two more bytes that stop the scan (repeat one to name only one).
    pub eq: [u8; 2],
}

/// A byte JSON escapes: `"`, `\` and the controls below U+0020.
pub const ESCAPE: Stops = Stops {
    below: 0x20,
    high: false,
    eq: [b'"', b'\\'],
};

/// A byte JSON escapes or a byte of a non-ASCII char.
pub const ESCAPE_OR_HIGH: Stops = Stops {
    below: 0x20,
    high: true,
    eq: [b'"', b'\\'],
};

/// A byte that can start a line break of Python's `str.splitlines()`: the
/// controls, 0xC2 (U+0085) and 0xE2 (U+2028, U+2029).
pub const LINE_BREAK_LEAD: Stops = Stops {
    below: 0x20,
    high: false,
    eq: [0xC2, 0xE2],
};

impl Stops {
    /// Does every byte stop the scan? (`high` with `below` from 0x80 up: a
    /// class the vector compare cannot say, as its compare is signed.)
    pub fn takes_every_byte(self) -> bool {
        self.high && self.below >= 0x80
    }

    /// Does `b` stop the scan?
    #[inline(always)]
    pub fn hits(self, b: u8) -> bool {
        b < self.below || (self.high && b >= 0x80) || b == self.eq[0] || b == self.eq[1]
    }
}

/// Index of the first byte of `bytes` that `stops` hits.
#[inline]
pub fn find(bytes: &[u8], stops: Stops) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above), the one
        // requirement of `avx2::find` beyond a valid slice.
        return unsafe { avx2::find(bytes, stops) };
    }
    position(bytes, |b| stops.hits(b))
}

/// Call `f` with the index of every byte of `bytes` that `stops` hits, in
/// order: the whole text in one pass (with AVX2, a block's hits come from one
/// mask), where calling [`find`] again after each hit set the scan up again
/// for every escape of a text.
#[inline]
pub fn for_each_hit(bytes: &[u8], stops: Stops, mut f: impl FnMut(usize)) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above), the one
        // requirement of `avx2::for_each_hit` beyond a valid slice.
        return unsafe { avx2::for_each_hit(bytes, stops, f) };
    }
    let mut at = 0;
    while let Some(i) = position(&bytes[at..], |b| stops.hits(b)) {
        f(at + i);
        at += i + 1;
    }
}

/// Length of the longest ASCII prefix of `bytes` (the index of the first
/// byte from 0x80 up): the test every char count starts with, 128 bytes per
/// step with AVX2 (four blocks joined, one mask).
#[inline]
pub fn ascii_prefix(bytes: &[u8]) -> usize {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above), the one
        // requirement of `avx2::ascii_prefix` beyond a valid slice.
        return unsafe { avx2::ascii_prefix(bytes) };
    }
    position(bytes, |b| b >= 0x80).unwrap_or(bytes.len())
}

/// `bytes` as a `str` when they are UTF-8: the ASCII prefix by
/// [`ascii_prefix`] (an archived transcript is mostly ASCII), the rest by
/// the standard check.
pub fn utf8(bytes: &[u8]) -> Option<&str> {
    let i = ascii_prefix(bytes);
    std::str::from_utf8(&bytes[i..]).ok()?;
    // SAFETY: `bytes[..i]` is ASCII (checked by `ascii_prefix`) and
    // `bytes[i..]` is UTF-8 (checked just above); an ASCII byte ends any
    // char, so the two together are UTF-8.
    Some(unsafe { std::str::from_utf8_unchecked(bytes) })
}

/// Index of the first byte of `bytes` that passes `test`, found a block of
/// 16 bytes at a time: a block is reduced without an early exit, which the
/// compiler turns into vector compares (one SSE2 register; 32-byte blocks
/// cost more in the shuffles that reduce two registers to one).
pub fn position(bytes: &[u8], test: impl Fn(u8) -> bool) -> Option<usize> {
    let mut start = 0;
    for block in bytes.chunks(16) {
        if block.iter().fold(0u8, |any, &b| any | u8::from(test(b))) != 0 {
            return block.iter().position(|&b| test(b)).map(|i| start + i);
        }
        start += block.len();
    }
    None
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::Stops;
    use std::arch::x86_64::*;

    /// The bit mask of the bytes of one 32-byte block that `stops` hits.
    /// Unsigned `x < below` is signed `(x ^ 0x80) < (below ^ 0x80)`; with
    /// `high`, the plain signed compare also takes every byte from 0x80 up
    /// (negative), so both cases are one xor and one compare.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn mask(x: __m256i, [bias, below, e0, e1]: [__m256i; 4]) -> u32 {
        let lt = _mm256_cmpgt_epi8(below, _mm256_xor_si256(x, bias));
        let eq = _mm256_or_si256(_mm256_cmpeq_epi8(x, e0), _mm256_cmpeq_epi8(x, e1));
        _mm256_movemask_epi8(_mm256_or_si256(lt, eq)) as u32
    }

    /// The vectors [`mask`] compares with for `stops` (not a class that
    /// [`Stops::takes_every_byte`]).
    #[target_feature(enable = "avx2")]
    #[inline]
    fn vectors(stops: Stops) -> [__m256i; 4] {
        let flip = if stops.high { 0 } else { 0x80 };
        [
            _mm256_set1_epi8(flip as i8),
            _mm256_set1_epi8((stops.below ^ flip) as i8),
            _mm256_set1_epi8(stops.eq[0] as i8),
            _mm256_set1_epi8(stops.eq[1] as i8),
        ]
    }

    /// The 32 bytes of `bytes` from `at`.
    ///
    /// # Safety
    /// `at + 32 <= bytes.len()`: the load lies inside the slice (`loadu`
    /// has no alignment requirement).
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn load(bytes: &[u8], at: usize) -> __m256i {
        debug_assert!(at + 32 <= bytes.len());
        // SAFETY: in bounds by the caller's contract.
        unsafe { _mm256_loadu_si256(bytes.as_ptr().add(at).cast()) }
    }

    /// [`super::find`] 32 bytes per step.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn find(bytes: &[u8], stops: Stops) -> Option<usize> {
        if stops.takes_every_byte() {
            return (!bytes.is_empty()).then_some(0);
        }
        let v = vectors(stops);
        let n = bytes.len();
        // SAFETY (each `load` below): its 32 bytes end at or before `n`.
        let mut at = 0;
        while at + 32 <= n {
            let m = mask(unsafe { load(bytes, at) }, v);
            if m != 0 {
                return Some(at + m.trailing_zeros() as usize);
            }
            at += 32;
        }
        if at == n {
            return None;
        }
        let rest = n - at;
        let m = if n >= 32 {
            // The last 32 bytes again; drop the bits of the bytes already seen.
            mask(unsafe { load(bytes, n - 32) }, v) >> (32 - rest)
        } else {
            return short(bytes, stops, v);
        };
        (m != 0).then(|| at + m.trailing_zeros() as usize)
    }
    /// [`super::ascii_prefix`] 128 bytes per step.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn ascii_prefix(bytes: &[u8]) -> usize {
        let n = bytes.len();
        // SAFETY (each `load` call): its 32 bytes end at or before `n`.
        let load = |at: usize| unsafe { load(bytes, at) };
        // The high bit of every byte is the movemask: set = not ASCII.
        let high = |x: __m256i| _mm256_movemask_epi8(x) as u32;
        let mut at = 0;
        while at + 128 <= n {
            let (a, b, c, d) = (load(at), load(at + 32), load(at + 64), load(at + 96));
            let any = _mm256_or_si256(_mm256_or_si256(a, b), _mm256_or_si256(c, d));
            if high(any) != 0 {
                break;
            }
            at += 128;
        }
        while at + 32 <= n {
            let m = high(load(at));
            if m != 0 {
                return at + m.trailing_zeros() as usize;
            }
            at += 32;
        }
        if n >= 32 && at < n {
            // The last 32 bytes again; drop the bits of the bytes already seen.
            let m = high(load(n - 32)) >> (32 - (n - at));
            return if m != 0 {
                at + m.trailing_zeros() as usize
            } else {
                n
            };
        }
        at + bytes[at..]
            .iter()
            .position(|&b| b >= 0x80)
            .unwrap_or(n - at)
    }

    /// [`super::for_each_hit`] 32 bytes per step.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn for_each_hit(bytes: &[u8], stops: Stops, mut f: impl FnMut(usize)) {
        let n = bytes.len();
        if n < 32 || stops.takes_every_byte() {
            // Short texts (ids, names) byte by byte: no vector setup; and the
            // class that takes every byte, which the signed compare cannot say.
            for (i, &b) in bytes.iter().enumerate() {
                if stops.hits(b) {
                    f(i);
                }
            }
            return;
        }
        let v = vectors(stops);
        // SAFETY (each `load` call): its 32 bytes end at or before `n`.
        let load = |at: usize| unsafe { load(bytes, at) };
        let mut each = |at: usize, mut m: u32| {
            while m != 0 {
                f(at + m.trailing_zeros() as usize);
                m &= m - 1;
            }
        };
        let mut at = 0;
        while at + 32 <= n {
            each(at, mask(load(at), v));
            at += 32;
        }
        if at < n {
            // The last 32 bytes again; drop the bits of the bytes already seen.
            let rest = n - at;
            each(at, mask(load(n - 32), v) >> (32 - rest));
        }
    }

    /// [`find`] in fewer than 32 bytes: two overlapping loads of 16, 8 or
    /// 4 bytes cover it without a copy; below 4 bytes, byte by byte.
    #[target_feature(enable = "avx2")]
    fn short(bytes: &[u8], stops: Stops, v: [__m256i; 4]) -> Option<usize> {
        let n = bytes.len();
        let v = v.map(|x| _mm256_castsi256_si128(x));
        let mask16 = |x: __m128i| {
            let lt = _mm_cmpgt_epi8(v[1], _mm_xor_si128(x, v[0]));
            let eq = _mm_or_si128(_mm_cmpeq_epi8(x, v[2]), _mm_cmpeq_epi8(x, v[3]));
            _mm_movemask_epi8(_mm_or_si128(lt, eq)) as u32
        };
        let m = if n >= 16 {
            // SAFETY: both 16-byte loads lie inside the slice (16 <= n).
            let (lo, hi) = unsafe {
                let p = bytes.as_ptr();
                (
                    _mm_loadu_si128(p.cast()),
                    _mm_loadu_si128(p.add(n - 16).cast()),
                )
            };
            mask16(lo) | (mask16(hi) << (n - 16))
        } else if n >= 8 {
            let word = |at: usize| {
                let mut w = [0u8; 8];
                w.copy_from_slice(&bytes[at..at + 8]);
                i64::from_le_bytes(w)
            };
            let m = mask16(_mm_set_epi64x(word(n - 8), word(0)));
            (m & 0xff) | ((m >> 8) << (n - 8))
        } else if n >= 4 {
            let word = |at: usize| {
                let mut w = [0u8; 4];
                w.copy_from_slice(&bytes[at..at + 4]);
                u32::from_le_bytes(w)
            };
            let pair = u64::from(word(0)) | (u64::from(word(n - 4)) << 32);
            let m = mask16(_mm_cvtsi64_si128(pair as i64)) & 0xff;
            (m & 0xf) | ((m >> 4) << (n - 4))
        } else {
            return bytes.iter().position(|&b| stops.hits(b));
        };
        (m != 0).then(|| m.trailing_zeros() as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn stops() -> impl Strategy<Value = Stops> {
        (0u8..=255, any::<bool>(), any::<[u8; 2]>()).prop_map(|(below, high, eq)| Stops {
            below,
            high,
            eq,
        })
    }

    proptest! {
        #[test]
        fn find_is_the_first_hit(
            bytes in prop::collection::vec(prop_oneof![Just(b'a'), Just(b'"'), Just(0xC2u8), Just(0x1fu8), any::<u8>()], 0..200),
            stops in stops(),
        ) {
            prop_assert_eq!(find(&bytes, stops), bytes.iter().position(|&b| stops.hits(b)));
        }

        #[test]
        fn for_each_hit_visits_every_hit_in_order(
            bytes in prop::collection::vec(prop_oneof![Just(b'a'), Just(b'\n'), Just(0xC2u8), Just(0x1fu8), any::<u8>()], 0..200),
            stops in stops(),
        ) {
            let want: Vec<usize> = (0..bytes.len()).filter(|&i| stops.hits(bytes[i])).collect();
            let mut got = Vec::new();
            for_each_hit(&bytes, stops, |i| got.push(i));
            prop_assert_eq!(&got, &want);
            // The portable walk, which other CPUs take.
            let mut portable = Vec::new();
            let mut at = 0;
            while let Some(i) = position(&bytes[at..], |b| stops.hits(b)) {
                portable.push(at + i);
                at += i + 1;
            }
            prop_assert_eq!(portable, want);
        }

        #[test]
        fn ascii_prefix_ends_at_the_first_high_byte(
            bytes in prop::collection::vec(prop_oneof![20 => Just(b'a'), 1 => Just(0x80u8), 1 => Just(0xFFu8), 1 => any::<u8>()], 0..400),
        ) {
            let want = bytes.iter().position(|&b| b >= 0x80).unwrap_or(bytes.len());
            prop_assert_eq!(ascii_prefix(&bytes), want);
            prop_assert_eq!(position(&bytes, |b| b >= 0x80).unwrap_or(bytes.len()), want);
        }

        #[test]
        fn utf8_accepts_what_the_standard_check_accepts(
            bytes in prop::collection::vec(prop_oneof![20 => Just(b'a'), 1 => Just(0xC3u8), 1 => Just(0xA9u8), 1 => Just(0xE2u8), 1 => any::<u8>()], 0..300),
        ) {
            prop_assert_eq!(utf8(&bytes), std::str::from_utf8(&bytes).ok());
        }

        #[test]
        fn position_finds_the_first_passing_byte(bytes in prop::collection::vec(0u8..=255, 0..100)) {
            let test = |b: u8| b == 0 || b > 250;
            prop_assert_eq!(position(&bytes, test), bytes.iter().position(|&b| test(b)));
        }

        #[test]
        fn the_named_classes_find_the_first_hit(
            bytes in prop::collection::vec(prop_oneof![Just(b'x'), Just(b'\\'), Just(0xE2u8), Just(0x80u8), any::<u8>()], 0..130),
        ) {
            for stops in [ESCAPE, ESCAPE_OR_HIGH, LINE_BREAK_LEAD] {
                prop_assert_eq!(find(&bytes, stops), bytes.iter().position(|&b| stops.hits(b)));
                prop_assert_eq!(position(&bytes, |b| stops.hits(b)), bytes.iter().position(|&b| stops.hits(b)));
            }
        }
    }

    #[test]
    fn every_byte_stops_when_high_meets_below() {
        // With `high`, `below` from 0x80 up leaves no byte that passes; the
        // vector compare is signed, so 0x80 itself is the edge.
        for below in [0x7f, 0x80, 0x81, 0xff] {
            let stops = Stops {
                below,
                high: true,
                eq: [0, 0],
            };
            for n in [1usize, 5, 12, 20, 40] {
                let bytes = vec![0x7fu8; n];
                let want = bytes.iter().position(|&b| stops.hits(b));
                assert_eq!(find(&bytes, stops), want, "{below:#x} {n}");
            }
        }
    }

    #[test]
    fn a_high_byte_in_every_place_ends_the_ascii_prefix() {
        for n in [0usize, 1, 31, 32, 33, 127, 128, 129, 200, 300] {
            assert_eq!(ascii_prefix(&vec![b'a'; n]), n, "{n}");
            for at in 0..n {
                let mut bytes = vec![b'a'; n];
                bytes[at] = 0xC3;
                assert_eq!(ascii_prefix(&bytes), at, "{n} {at}");
            }
        }
    }

    #[test]
    fn a_hit_in_every_place_of_long_and_short_texts() {
        for n in [0usize, 1, 15, 31, 32, 33, 63, 64, 65, 100] {
            assert_eq!(find(&vec![b'a'; n], ESCAPE), None, "{n}");
            for at in 0..n {
                let mut bytes = vec![b'a'; n];
                bytes[at] = b'\n';
                assert_eq!(find(&bytes, ESCAPE), Some(at), "{n} {at}");
                assert_eq!(find(&bytes, ESCAPE_OR_HIGH), Some(at), "{n} {at}");
                bytes[at] = 0xE2;
                assert_eq!(find(&bytes, LINE_BREAK_LEAD), Some(at), "{n} {at}");
                assert_eq!(find(&bytes, ESCAPE), None, "{n} {at}");
            }
        }
    }
}
