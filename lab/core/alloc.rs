//! The global allocator of the `lab` binary, its benches and examples:
//! mimalloc, entered by its plain `malloc` family wherever that gives the
//! alignment asked for.
//!
//! `mimalloc::MiMalloc` passes every request through `mi_malloc_aligned`,
//! whose alignment checks cost about as much as the allocation itself; a
//! sweep cell makes a few hundred small allocations. Like std's `System`
//! allocator on Unix, this one calls the plain functions when the alignment
//! is at most the platform's minimum (16 bytes on 64-bit targets, which every
//! mimalloc block of that size or more has) and not above the size, and the
//! aligned ones otherwise.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as mi;

/// Alignment every `mi_malloc` block of at least this size has (`MI_MAX_ALIGN_SIZE`).
const MIN_ALIGN: usize = 16;

/// Whether `layout` can be served by the plain (unaligned) entry points.
fn plain(layout: Layout) -> bool {
    layout.align() <= MIN_ALIGN && layout.align() <= layout.size()
}

/// mimalloc as the global allocator (see the module docs).
#[derive(Debug, Clone, Copy, Default)]
pub struct Mimalloc;

// SAFETY: every method forwards to mimalloc, which returns blocks of at
// least the requested size, aligned as `plain` or the aligned call
// guarantees, and frees or resizes any block it returned with `mi_free` /
// `mi_realloc*` whatever entry point allocated it.
unsafe impl GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if plain(layout) {
            // SAFETY: a plain mimalloc call; the block is aligned (see `plain`).
            unsafe { mi::mi_malloc(layout.size()).cast() }
        } else {
            // SAFETY: a plain mimalloc call with a power-of-two alignment.
            unsafe { mi::mi_malloc_aligned(layout.size(), layout.align()).cast() }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if plain(layout) {
            // SAFETY: as in `alloc`.
            unsafe { mi::mi_zalloc(layout.size()).cast() }
        } else {
            // SAFETY: as in `alloc`.
            unsafe { mi::mi_zalloc_aligned(layout.size(), layout.align()).cast() }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator (the caller's contract).
        unsafe { mi::mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let plain_new = layout.align() <= MIN_ALIGN && layout.align() <= new_size;
        if plain_new {
            // SAFETY: `ptr` came from this allocator; the new block is aligned
            // as `plain` says for `new_size`.
            unsafe { mi::mi_realloc(ptr.cast(), new_size).cast() }
        } else {
            // SAFETY: as above, with the alignment asked for.
            unsafe { mi::mi_realloc_aligned(ptr.cast(), new_size, layout.align()).cast() }
        }
    }
}

/// mimalloc v2's `mi_option_purge_delay` (its position in `mi_option_e`,
/// `include/mimalloc.h`, libmimalloc-sys 0.1.49).
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

/// Milliseconds mimalloc waits before giving freed pages back to the OS
/// (its default is 10). A replay frees a session's records, histories and
/// planted copies in bursts; with 10 ms two jobs' freed pages stay resident
/// while the next session allocates new ones. At 1 ms the 40 largest
/// trajectories of the 500-run corpus peak at 72 MB instead of 85 on two
/// jobs (the four largest shared logs 62 instead of 71 on one), for 2-3 %
/// more system time; at 0 it is 61 MB but a quarter more CPU.
pub const PURGE_DELAY_MS: std::ffi::c_long = 1;

// The sys crate declares `mi_option_set` and `mi_option_get` only under its
// `extended` feature (which pulls in `cty`); the symbols are in the library
// either way.
unsafe extern "C" {
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    #[cfg(test)]
    fn mi_option_get(option: std::ffi::c_int) -> std::ffi::c_long;
}

/// Sets mimalloc's options for the lab ([`PURGE_DELAY_MS`]); call first in
/// `main`. mimalloc reads this option each time it purges, so setting it
/// after the runtime's first allocations takes effect.
pub fn tune() {
    // SAFETY: a plain option setter; the option index is v2's (above).
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// mimalloc's purge delay now, in milliseconds.
    fn purge_delay_ms() -> std::ffi::c_long {
        // SAFETY: a plain option getter.
        unsafe { mi_option_get(MI_OPTION_PURGE_DELAY) }
    }

    #[test]
    fn tuning_sets_the_purge_delay() {
        // mimalloc's own default first: the index names the option we mean.
        assert_eq!(purge_delay_ms(), 10);
        tune();
        assert_eq!(purge_delay_ms(), PURGE_DELAY_MS);
    }

    /// One block of `layout`, filled, resized to `new_size` and freed:
    /// aligned as asked at both sizes, zeroed when asked, bytes kept.
    fn round_trip(layout: Layout, zeroed: bool, new_size: usize) {
        let (size, align) = (layout.size(), layout.align());
        let a = Mimalloc;
        // SAFETY: non-zero sizes; the block is used within its size and
        // freed once, with the layout it has then.
        unsafe {
            let p = if zeroed {
                a.alloc_zeroed(layout)
            } else {
                a.alloc(layout)
            };
            assert!(!p.is_null());
            assert_eq!(p as usize % align, 0, "size {size} align {align}");
            if zeroed {
                assert!(std::slice::from_raw_parts(p, size).iter().all(|&b| b == 0));
            }
            for i in 0..size {
                *p.add(i) = i as u8;
            }
            let q = a.realloc(p, layout, new_size);
            assert!(!q.is_null());
            assert_eq!(
                q as usize % align,
                0,
                "realloc {size} -> {new_size} align {align}"
            );
            let kept = std::slice::from_raw_parts(q, size.min(new_size));
            assert!(kept.iter().enumerate().all(|(i, &b)| b == i as u8));
            a.dealloc(q, Layout::from_size_align(new_size, align).unwrap());
        }
    }

    #[test]
    fn blocks_are_aligned_and_keep_their_bytes_through_realloc() {
        for align in [1usize, 2, 4, 8, 16, 32, 64, 4096] {
            for size in [1usize, 3, 8, 12, 16, 24, 40, 100, 513, 5000] {
                let layout = Layout::from_size_align(size, align).unwrap();
                for new_size in [size * 3, size.div_ceil(2), 7] {
                    round_trip(layout, size % 2 == 1, new_size);
                }
            }
        }
    }
}
