//! The second mechanism of the family: *archive the old messages*. At a
//! compaction point every message before the last `m` goes to an archive
//! file, and one user message pointing at it takes their place (as the
//! course's snip writes its transcript). Nothing is lost to recall: every
//! archived artifact stays reachable through the pointer, so a schedule's
//! recall is the uncompacted session's.
//!
//! Monotone as clearing is: the request at call `i` depends only on the
//! last compaction `j` (`[system, pointer(j), messages from j's cut on]`),
//! and since each pointer names its own archive, a compaction shares only
//! the system segment with anything sent before it. The same O(n²)
//! program as [`super::dp`], with that one difference in what a compaction reads.

use super::price::{self, Entry, Request, Reuse};
use super::{Problem, Schedule, Shape};
use crate::cache::session::{starts_turn, RequestBuilder};
use crate::cache::CacheRequest;
use crate::message::Message;
use crate::tokens::{TokenCounter, Tokens};

/// The keep-last-messages grid (0: archive everything before the call).
pub const KEEP_MESSAGES: &[usize] = &[0, 2, 4, 8, 16, 32, 64];

/// The pointer message a compaction at call `j` leaves.
pub fn pointer(j: usize) -> Message {
    Message::user_text(format!(
        "[Earlier messages saved at /ctxlab/optimal/archive-{j:06}.jsonl]"
    ))
}

/// Archive schedules of one session: where each compaction cuts, and the
/// size of each pointer.
#[derive(Debug)]
pub struct Archive<'s, 'a> {
    shape: &'s Shape<'a>,
    keep: usize,
    pointer_tokens: Vec<u64>,
}

impl<'s, 'a> Archive<'s, 'a> {
    /// Keeping the last `keep` messages at each compaction.
    pub fn new(shape: &'s Shape<'a>, keep: usize, counter: &dyn TokenCounter) -> Self {
        let pointer_tokens = (0..shape.n())
            .map(|j| counter.count_message(&pointer(j)) as u64)
            .collect();
        Archive {
            shape,
            keep,
            pointer_tokens,
        }
    }

    /// Messages archived by a compaction at call `j`.
    pub fn cut(&self, j: usize) -> usize {
        self.shape.calls[j].saturating_sub(self.keep)
    }

    /// Tokens of call `i`'s request after the last compaction `j`.
    pub fn tokens(&self, i: usize, j: Option<usize>) -> u64 {
        let at = self.shape.calls[i];
        match j {
            None => self.shape.tokens(i, 0),
            Some(j) => {
                self.shape.envelope + self.pointer_tokens[j] + self.shape.message_tokens(at, 0)
                    - self.shape.message_tokens(self.cut(j), 0)
            }
        }
    }

    /// Segments of call `i`'s request after the last compaction `j`.
    fn segments(&self, i: usize, j: Option<usize>) -> usize {
        let at = self.shape.calls[i];
        j.map_or(1 + at, |j| 2 + at - self.cut(j))
    }

    /// Whether a compaction at `i` after the last one at `j` archives more.
    pub fn archives_more(&self, i: usize, j: Option<usize>) -> bool {
        self.cut(i) > j.map_or(0, |j| self.cut(j))
    }

    /// Call `i`'s messages after the last compaction `j`.
    pub fn messages(&self, i: usize, j: Option<usize>) -> Vec<Message> {
        let all = self.shape.messages_before(i);
        match j {
            None => all.to_vec(),
            Some(j) => {
                let mut out = vec![pointer(j)];
                out.extend_from_slice(&all[self.cut(j)..]);
                out
            }
        }
    }

    /// The cache requests of a schedule (`last[i]`: call `i`'s last
    /// compaction), built as the replay's cost observer builds them.
    pub fn requests(
        &self,
        last: &[Option<usize>],
        counter: &dyn TokenCounter,
    ) -> Vec<CacheRequest> {
        let mut builder = RequestBuilder::new(Tokens::Approx, self.shape.envelope);
        if self.shape.envelope > 0 {
            builder.set_system_tokens(self.shape.envelope);
        }
        let mut out = Vec::new();
        let mut turn = 0;
        let mut next = 0;
        for (mi, m) in self.shape.all_messages().iter().enumerate() {
            while next < self.shape.n() && self.shape.calls[next] == mi {
                let mut r =
                    builder.request_counted(&self.messages(next, last[next]), turn, counter);
                r.at_ms = self.shape.times[next];
                out.push(r);
                next += 1;
            }
            turn += starts_turn(m) as usize;
        }
        out
    }

    fn request(&self, i: usize, j: Option<usize>) -> Request {
        Request {
            segments: self.segments(i, j),
            tokens: self.tokens(i, j),
            at: self.shape.times[i],
            system: self.shape.envelope,
            previous_at: i.checked_sub(1).and_then(|k| self.shape.times[k]),
            first: i == 0,
        }
    }

    fn extend(&self, p: &Problem<'_>, i: usize, j: Option<usize>) -> f64 {
        let prev = i - 1;
        let expires = price::expiry(&p.provider, self.shape.times[prev]);
        let tokens = self.tokens(prev, j);
        let reuse = match p.provider {
            crate::cache::Provider::Anthropic(_) => Reuse::Entry(Entry {
                segments: self.segments(prev, j),
                tokens,
                expires,
            }),
            _ => Reuse::Shared {
                tokens,
                covered: tokens >= price::min_tokens(&p.provider),
                expires,
            },
        };
        price::dollars(&p.provider, &p.sheet, &self.request(i, j), reuse).0
    }

    /// A compaction shares the system segment alone with what came before.
    fn compact(&self, p: &Problem<'_>, i: usize, j: Option<usize>) -> f64 {
        let r = self.request(i, Some(i));
        if i == 0 {
            return price::dollars(&p.provider, &p.sheet, &r, Reuse::Nothing).0;
        }
        let prev_tokens = self.tokens(i - 1, j);
        let reuse = match p.provider {
            crate::cache::Provider::Anthropic(_) => Reuse::Nothing,
            _ => Reuse::Shared {
                tokens: self.shape.envelope,
                covered: prev_tokens >= price::min_tokens(&p.provider),
                expires: price::expiry(&p.provider, self.shape.times[i - 1]),
            },
        };
        price::dollars(&p.provider, &p.sheet, &r, reuse).0
    }

    fn fits(&self, p: &Problem<'_>, i: usize, j: Option<usize>) -> bool {
        p.limit.is_none_or(|l| self.tokens(i, j) <= l)
    }

    /// The cheapest archive schedule under the limit; `None` when none fits.
    pub fn cheapest(&self, p: &Problem<'_>) -> Option<Schedule> {
        let n = self.shape.n();
        // cost[s]: the cheapest path whose last compaction is s (n: none yet).
        let mut cost: Vec<Option<(f64, u64)>> = vec![None; n + 1];
        let mut pred: Vec<Option<usize>> = vec![None; n];
        let key = |j: Option<usize>| j.unwrap_or(n);
        for i in 0..n {
            let mut next: Vec<Option<(f64, u64)>> = vec![None; n + 1];
            let mut best: Option<(f64, u64, Option<usize>)> = None;
            let starts = std::iter::once(None).chain((0..i).map(Some));
            for j in starts {
                let here = if i == 0 {
                    (j.is_none()).then_some((0.0, 0))
                } else {
                    cost[key(j)]
                };
                let Some((d, peak)) = here else { continue };
                if self.fits(p, i, j) {
                    let step = if i == 0 {
                        price::dollars(
                            &p.provider,
                            &p.sheet,
                            &self.request(0, None),
                            Reuse::Nothing,
                        )
                        .0
                    } else {
                        self.extend(p, i, j)
                    };
                    next[key(j)] = Some((d + step, peak.max(self.tokens(i, j))));
                }
                if self.archives_more(i, j) && self.fits(p, i, Some(i)) {
                    let total = d + self.compact(p, i, j);
                    if best.is_none_or(|b| total < b.0) {
                        best = Some((total, peak.max(self.tokens(i, Some(i))), j));
                    }
                }
            }
            if let Some((d, peak, from)) = best {
                next[i] = Some((d, peak));
                pred[i] = from;
            }
            cost = next;
        }
        let (last, (dollars, peak)) = cost
            .iter()
            .enumerate()
            .filter_map(|(s, v)| v.map(|v| (s, v)))
            .min_by(|a, b| a.1 .0.total_cmp(&b.1 .0))?;
        let mut points = Vec::new();
        let mut at = (last < n).then_some(last);
        while let Some(s) = at {
            points.push(s);
            at = pred[s];
        }
        points.reverse();
        Some(Schedule {
            mechanism: super::ARCHIVE.to_string(),
            keep: self.keep,
            points,
            dollars,
            cleared: 0,
            peak_tokens: peak,
            requests: n,
        })
    }
}
