//! Every schedule, priced by [`crate::cache::cost`]: the check on the
//! dynamic program (exponential in the calls; small sessions only).

use super::{Problem, Schedule, Shape};
use crate::tokens::TokenCounter;

/// The cheapest schedule keeping the last `keep` results, among those whose
/// requests all fit the limit and whose results cleared at the end satisfy
/// `end_ok`; `None` when none does. Schedules with a compaction that clears
/// nothing new are the schedule without it, and are skipped.
pub fn cheapest(
    shape: &Shape<'_>,
    p: &Problem<'_>,
    keep: usize,
    end_ok: &dyn Fn(usize) -> bool,
    counter: &dyn TokenCounter,
) -> Option<Schedule> {
    let n = shape.n();
    assert!(n <= 20, "brute force over {n} calls");
    let mut best: Option<Schedule> = None;
    'masks: for mask in 0u32..(1 << n) {
        let mut c = 0;
        let mut cleared = Vec::with_capacity(n);
        let mut points = Vec::new();
        for i in 0..n {
            if mask & (1 << i) != 0 {
                let new = shape.clears_at(i, keep);
                if new <= c {
                    continue 'masks;
                }
                c = new;
                points.push(i);
            }
            if p.limit.is_some_and(|l| shape.tokens(i, c) > l) {
                continue 'masks;
            }
            cleared.push(c);
        }
        if !end_ok(c) {
            continue;
        }
        let requests = shape.requests(&cleared, counter);
        let report = crate::cache::cost(&requests, &p.provider, &p.sheet);
        if best.as_ref().is_none_or(|b| report.dollars < b.dollars) {
            best = Some(Schedule {
                mechanism: super::CLEAR.to_string(),
                keep,
                points,
                dollars: report.dollars,
                cleared: c,
                peak_tokens: requests.iter().map(|r| r.tokens()).max().unwrap_or(0),
                requests: n,
            });
        }
    }
    best
}

/// The cheapest archive schedule ([`super::archive`]) among those whose
/// requests all fit the limit; `None` when none does. A compaction that
/// archives nothing new is skipped, as the program skips it.
pub fn cheapest_archive(
    arch: &super::archive::Archive<'_, '_>,
    shape: &Shape<'_>,
    p: &Problem<'_>,
    counter: &dyn TokenCounter,
) -> Option<f64> {
    let n = shape.n();
    assert!(n <= 20, "brute force over {n} calls");
    let mut best: Option<f64> = None;
    'masks: for mask in 0u32..(1 << n) {
        let mut last = None;
        let mut lasts = Vec::with_capacity(n);
        for i in 0..n {
            if mask & (1 << i) != 0 {
                if !arch.archives_more(i, last) {
                    continue 'masks;
                }
                last = Some(i);
            }
            if p.limit.is_some_and(|l| arch.tokens(i, last) > l) {
                continue 'masks;
            }
            lasts.push(last);
        }
        let requests = arch.requests(&lasts, counter);
        let report = crate::cache::cost(&requests, &p.provider, &p.sheet);
        debug_assert!(requests
            .iter()
            .zip(&lasts)
            .enumerate()
            .all(|(i, (r, &j))| r.tokens() == arch.tokens(i, j)));
        if best.is_none_or(|b| report.dollars < b) {
            best = Some(report.dollars);
        }
    }
    best
}
