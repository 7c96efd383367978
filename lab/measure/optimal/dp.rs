//! The exact dynamic program over `(call i, last compaction j)`.
//!
//! A state is the run a request belongs to: the call `j` that started it
//! (a compaction point) or the run before any compaction. A run's requests
//! are fixed by `j` alone (the mechanism is monotone), so are the cache
//! entries they leave; what a compaction at `i` can read comes from the
//! previous run and from the requests before the first tool result
//! ([`super::price`]). Those first requests' entry is the one thing a path
//! changes besides its run (a compaction that reads it refreshes it): each
//! state carries its expiry along its cheapest path.
//!
//! O(n²) states, each priced in O(log n).

use super::price::{self, Entry, Request, Reuse};
use super::{Problem, Schedule, Shape};

/// The cheapest state of a run at one call.
#[derive(Debug, Clone, Copy)]
struct Val {
    dollars: f64,
    /// When the entry of the requests before any tool result expires.
    pre_expires: Option<i64>,
    /// The cheapest path's largest request so far.
    peak: u64,
}

/// The program for one `keep`.
struct Program<'s, 'a> {
    shape: &'s Shape<'a>,
    p: &'s Problem<'a>,
    keep: usize,
    /// The longest call sent before any tool result, if any.
    pre: Option<usize>,
}

/// The cheapest schedule keeping the last `keep` results at every
/// compaction, with at most `max_cleared` results cleared at the end;
/// `None` when no schedule keeps every request under the limit.
pub fn cheapest(
    shape: &Shape<'_>,
    p: &Problem<'_>,
    keep: usize,
    max_cleared: usize,
) -> Option<Schedule> {
    let n = shape.n();
    if n == 0 {
        return Some(Schedule {
            mechanism: super::CLEAR.to_string(),
            keep,
            points: vec![],
            dollars: 0.0,
            cleared: 0,
            peak_tokens: 0,
            requests: 0,
        });
    }
    let a0 = shape.agreement(0, usize::MAX);
    let pre = (a0 != usize::MAX)
        .then(|| shape.calls.partition_point(|&at| at < a0))
        .and_then(|k| k.checked_sub(1));
    let prog = Program {
        shape,
        p,
        keep,
        pre,
    };
    prog.run(max_cleared)
}

impl Program<'_, '_> {
    fn cleared(&self, start: Option<usize>) -> usize {
        start.map_or(0, |s| self.shape.clears_at(s, self.keep))
    }

    fn request(&self, i: usize, c: usize) -> Request {
        Request {
            segments: self.shape.segments(i),
            tokens: self.shape.tokens(i, c),
            at: self.shape.times[i],
            system: self.shape.envelope,
            previous_at: i.checked_sub(1).and_then(|k| self.shape.times[k]),
            first: i == 0,
        }
    }

    fn fits(&self, i: usize, c: usize) -> bool {
        self.p.limit.is_none_or(|l| self.shape.tokens(i, c) <= l)
    }

    fn entry(&self, t: usize, c: usize, expires: Option<i64>) -> Entry {
        Entry {
            segments: self.shape.segments(t),
            tokens: self.shape.tokens(t, c),
            expires,
        }
    }

    /// When call `t`'s entry expires at call `until` in a run clearing `c`:
    /// call `t + 1` refreshes it when it reads it.
    fn run_expiry(&self, t: usize, c: usize, until: usize) -> Option<i64> {
        let written = price::expiry(&self.p.provider, self.shape.times[t]);
        if t + 1 >= until {
            return written;
        }
        let next = self.request(t + 1, c);
        if price::anthropic_reads(&self.p.provider, &next, &self.entry(t, c, written)) {
            price::expiry(&self.p.provider, self.shape.times[t + 1])
        } else {
            written
        }
    }

    /// Call `i` extends call `i - 1` of the same run.
    fn extend(&self, i: usize, c: usize) -> f64 {
        let r = self.request(i, c);
        let prev = i - 1;
        let expires = price::expiry(&self.p.provider, self.shape.times[prev]);
        let tokens = self.shape.tokens(prev, c);
        let reuse = match self.p.provider {
            crate::cache::Provider::Anthropic(_) => Reuse::Entry(self.entry(prev, c, expires)),
            _ => Reuse::Shared {
                tokens,
                covered: tokens >= price::min_tokens(&self.p.provider),
                expires,
            },
        };
        price::dollars(&self.p.provider, &self.p.sheet, &r, reuse).0
    }

    /// Call `i` compacts to `new` cleared from the run `start` clearing
    /// `old`: its dollars, and whether it read the first requests' entry.
    fn compact(
        &self,
        i: usize,
        start: Option<usize>,
        old: usize,
        new: usize,
        pre_expires: Option<i64>,
    ) -> (f64, bool) {
        let r = self.request(i, new);
        if i == 0 {
            return (
                price::dollars(&self.p.provider, &self.p.sheet, &r, Reuse::Nothing).0,
                false,
            );
        }
        let agree = self.shape.agreement(old, new);
        let prev = i - 1;
        if !matches!(self.p.provider, crate::cache::Provider::Anthropic(_)) {
            let shared = agree.min(self.shape.segments(prev));
            let prev_tokens = self.shape.tokens(prev, old);
            let reuse = Reuse::Shared {
                tokens: self.shape.envelope + self.shape.message_tokens(shared - 1, old),
                covered: prev_tokens >= price::min_tokens(&self.p.provider),
                expires: price::expiry(&self.p.provider, self.shape.times[prev]),
            };
            return (
                price::dollars(&self.p.provider, &self.p.sheet, &r, reuse).0,
                false,
            );
        }
        let from = start.unwrap_or(0);
        let fit = self.shape.calls.partition_point(|&at| at < agree).min(i);
        let mut read_pre = false;
        let reuse = match fit.checked_sub(1) {
            Some(t) if t >= from => Reuse::Entry(self.entry(t, old, self.run_expiry(t, old, i))),
            _ => match self.pre {
                Some(p) if p < from => {
                    read_pre = true;
                    Reuse::Entry(self.entry(p, 0, pre_expires))
                }
                _ => Reuse::Nothing,
            },
        };
        let (d, hit) = price::dollars(&self.p.provider, &self.p.sheet, &r, reuse);
        (d, read_pre && hit)
    }

    /// The first requests' entry expiry in the run before any compaction.
    fn pre_expiry_initial(&self) -> Option<i64> {
        self.pre.and_then(|p| self.run_expiry(p, 0, self.shape.n()))
    }

    fn run(&self, max_cleared: usize) -> Option<Schedule> {
        let n = self.shape.n();
        // layer[s]: runs started by a compaction at s; `none`: no compaction yet.
        let mut none: Option<Val> = None;
        let mut layer: Vec<Option<Val>> = vec![None; n];
        let mut pred: Vec<Option<usize>> = vec![None; n];
        let pre0 = self.pre_expiry_initial();
        for i in 0..n {
            let mut next_none = None;
            let mut next: Vec<Option<Val>> = vec![None; n];
            let extend_from = |v: Val, c: usize, dollars: f64| Val {
                dollars: v.dollars + dollars,
                pre_expires: v.pre_expires,
                peak: v.peak.max(self.shape.tokens(i, c)),
            };
            if self.fits(i, 0) {
                next_none = if i == 0 {
                    let r = self.request(0, 0);
                    let d = price::dollars(&self.p.provider, &self.p.sheet, &r, Reuse::Nothing).0;
                    Some(Val {
                        dollars: d,
                        pre_expires: pre0,
                        peak: r.tokens,
                    })
                } else {
                    none.map(|v| extend_from(v, 0, self.extend(i, 0)))
                };
            }
            for (s, v) in layer.iter().enumerate().take(i) {
                if let Some(v) = *v {
                    let c = self.cleared(Some(s));
                    if self.fits(i, c) {
                        next[s] = Some(extend_from(v, c, self.extend(i, c)));
                    }
                }
            }
            let new = self.shape.clears_at(i, self.keep);
            if new <= max_cleared && self.fits(i, new) {
                let mut best: Option<(Val, Option<usize>)> = None;
                let mut consider = |start: Option<usize>, v: Val| {
                    let old = self.cleared(start);
                    if new <= old {
                        return;
                    }
                    let (d, read_pre) = self.compact(i, start, old, new, v.pre_expires);
                    let cand = Val {
                        dollars: v.dollars + d,
                        pre_expires: if read_pre {
                            price::expiry(&self.p.provider, self.shape.times[i])
                        } else {
                            v.pre_expires
                        },
                        peak: v.peak.max(self.shape.tokens(i, new)),
                    };
                    if best.is_none_or(|(b, _)| cand.dollars < b.dollars) {
                        best = Some((cand, start));
                    }
                };
                if i == 0 {
                    consider(
                        None,
                        Val {
                            dollars: 0.0,
                            pre_expires: pre0,
                            peak: 0,
                        },
                    );
                } else {
                    if let Some(v) = none {
                        consider(None, v);
                    }
                    for (s, v) in layer.iter().enumerate().take(i) {
                        if let Some(v) = *v {
                            consider(Some(s), v);
                        }
                    }
                }
                if let Some((v, from)) = best {
                    next[i] = Some(v);
                    pred[i] = from;
                }
            }
            none = next_none;
            layer = next;
        }
        self.finish(none, &layer, &pred)
    }

    fn finish(
        &self,
        none: Option<Val>,
        layer: &[Option<Val>],
        pred: &[Option<usize>],
    ) -> Option<Schedule> {
        let mut best: Option<(Val, Option<usize>)> = none.map(|v| (v, None));
        for (s, v) in layer.iter().enumerate() {
            if let Some(v) = *v {
                if best.is_none_or(|(b, _)| v.dollars < b.dollars) {
                    best = Some((v, Some(s)));
                }
            }
        }
        let (v, last) = best?;
        let mut points = Vec::new();
        let mut at = last;
        while let Some(s) = at {
            points.push(s);
            at = pred[s];
        }
        points.reverse();
        Some(Schedule {
            mechanism: super::CLEAR.to_string(),
            keep: self.keep,
            cleared: self.cleared(last),
            points,
            dollars: v.dollars,
            peak_tokens: v.peak,
            requests: self.shape.n(),
        })
    }
}
