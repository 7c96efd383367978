//! Corpus aggregates of a policy replay: per policy, the number of sessions
//! and the mean, median and 95th percentile of each counter and of dollars.
//!
//! The median and p95 are exact (nearest rank for p95), so the per-session
//! value of each counter is kept: one `f64` per session × policy × counter,
//! about a kilobyte per session for every policy, never a run's series or
//! messages. Everything else a corpus replay holds is one session's runs at
//! a time ([`crate::replay::runs::stream`]).

use serde::{Deserialize, Serialize};

use crate::cache::CostReport;
use crate::policy::engine::PolicyRun;
use crate::retention::RetentionReport;

/// The counters aggregated, in column order: (name, unit note).
pub const METRICS: [&str; 11] = [
    "calls",
    "peak chars",
    "last tokens",
    "lost",
    "ptr lost",
    "dangling",
    "orphans",
    "invalid",
    "events",
    "dollars",
    "recall %",
];

/// One session under one policy, in numbers: what a JSON Lines record and
/// an aggregate are made of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SessionRecord {
    /// Session label.
    pub session: String,
    /// Policy name.
    pub policy: String,
    /// Model calls.
    pub calls: usize,
    /// The largest request, in chars.
    pub peak_chars: usize,
    /// Tokens of the last request (by the run's tokenizer; an estimate unless it is the model's own).
    pub last_tokens: usize,
    /// Originals neither in context nor on disk.
    pub lost_forever: u64,
    /// Originals on disk that nothing in context leads to.
    pub pointer_lost: u64,
    /// Pointers to files that do not exist.
    pub dangling_pointers: u64,
    /// Tool calls or results without their partner.
    pub orphans: u64,
    /// Requests breaking a provider rule.
    pub invalid_requests: u64,
    /// Events the policy recorded.
    pub events: usize,
    /// Prompt-side dollars, when priced.
    pub dollars: Option<f64>,
    /// Artifact recall in percent, when retention was measured.
    pub recall_percent: Option<f64>,
    /// Tokenizer the tokens are counted with.
    pub tokenizer: String,
    /// What the run read of the log's recorded usage (`none`: nothing after
    /// the first request, a prediction; `recorded`: sizes read from the log,
    /// a reproduction); `null` for a session that records no usage.
    pub anchor: Option<crate::replay::input::anchor::Anchor>,
}

impl SessionRecord {
    /// The numbers of one run, with its cost and retention when measured
    /// and the anchor it was replayed under.
    pub fn of(
        r: &PolicyRun,
        cost: Option<&CostReport>,
        retention: Option<&RetentionReport>,
        anchor: Option<crate::replay::input::anchor::Anchor>,
    ) -> SessionRecord {
        let f = &r.findings;
        SessionRecord {
            session: r.session.clone(),
            policy: r.policy.clone(),
            calls: r.calls.len(),
            peak_chars: r.peak_chars(),
            last_tokens: r.calls.last().map_or(0, |x| x.tokens),
            lost_forever: f.lost_forever.count,
            pointer_lost: f.pointer_lost.count,
            dangling_pointers: f.dangling_pointers.count,
            orphans: f.orphans.count,
            invalid_requests: r.invalid_requests,
            events: r.events.len(),
            dollars: cost.map(|x| x.dollars),
            recall_percent: retention.map(|x| x.artifact_recall),
            tokenizer: r.tokenizer.clone(),
            anchor,
        }
    }

    /// The values of [`METRICS`], `None` where not measured.
    fn values(&self) -> [Option<f64>; 11] {
        [
            Some(self.calls as f64),
            Some(self.peak_chars as f64),
            Some(self.last_tokens as f64),
            Some(self.lost_forever as f64),
            Some(self.pointer_lost as f64),
            Some(self.dangling_pointers as f64),
            Some(self.orphans as f64),
            Some(self.invalid_requests as f64),
            Some(self.events as f64),
            self.dollars,
            self.recall_percent,
        ]
    }
}

/// Mean, median and 95th percentile of one counter over sessions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Stats {
    /// Arithmetic mean.
    pub mean: f64,
    /// Middle value (mean of the two middle ones for an even count).
    pub median: f64,
    /// Nearest-rank 95th percentile: the smallest value at or above 95 %
    /// of the sessions.
    pub p95: f64,
}

impl Stats {
    /// The statistics of `values` (`None` when empty).
    pub fn of(values: &[f64]) -> Option<Stats> {
        if values.is_empty() {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        let rank = (0.95 * n as f64).ceil() as usize;
        Some(Stats {
            mean: v.iter().sum::<f64>() / n as f64,
            median,
            p95: v[rank.clamp(1, n) - 1],
        })
    }
}

/// One policy over every session of a corpus.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PolicyAggregate {
    /// Policy name.
    pub policy: String,
    /// Sessions replayed.
    pub sessions: usize,
    /// Per counter of [`METRICS`] (measured ones only).
    pub stats: std::collections::BTreeMap<String, Stats>,
}

/// Per-session values, accumulated one session at a time.
#[derive(Debug, Clone, Default)]
pub struct Aggregate {
    /// Policy, then per metric the per-session values, in first-seen order.
    policies: Vec<(String, Vec<Vec<f64>>)>,
    /// The tokenizer of the first run counted.
    tokenizer: Option<String>,
}

impl Aggregate {
    /// Count one run.
    pub fn add(&mut self, r: &SessionRecord) {
        if self.tokenizer.is_none() {
            self.tokenizer = Some(r.tokenizer.clone());
        }
        let at = match self.policies.iter().position(|(p, _)| *p == r.policy) {
            Some(i) => i,
            None => {
                self.policies
                    .push((r.policy.clone(), vec![Vec::new(); METRICS.len()]));
                self.policies.len() - 1
            }
        };
        for (slot, v) in self.policies[at].1.iter_mut().zip(r.values()) {
            if let Some(v) = v {
                slot.push(v);
            }
        }
    }

    /// The policies counted, in first-seen order.
    pub fn policies(&self) -> Vec<&str> {
        self.policies.iter().map(|(p, _)| p.as_str()).collect()
    }

    /// The per-session values of `metric` (one of [`METRICS`]) for `policy`,
    /// in session order; empty when not measured.
    pub fn values(&self, policy: &str, metric: &str) -> &[f64] {
        let m = METRICS.iter().position(|x| *x == metric);
        match (self.policies.iter().find(|(p, _)| p == policy), m) {
            (Some((_, v)), Some(m)) => &v[m],
            _ => &[],
        }
    }

    /// The aggregate with its policies in the order `rank` gives and the
    /// tokenizer `tokenizer`: a merge counts the parts one after another,
    /// not in corpus order, and puts back the order (and the first run's
    /// tokenizer) the whole run would have seen. The statistics sort their
    /// values, so the order of sessions within a policy changes none of them.
    pub fn reordered<K: Ord>(
        mut self,
        rank: impl Fn(&str) -> K,
        tokenizer: Option<String>,
    ) -> Aggregate {
        self.policies.sort_by_key(|(p, _)| rank(p));
        if tokenizer.is_some() {
            self.tokenizer = tokenizer;
        }
        self
    }

    /// Every policy's aggregate, in first-seen order.
    pub fn rows(&self) -> Vec<PolicyAggregate> {
        self.policies
            .iter()
            .map(|(policy, values)| PolicyAggregate {
                policy: policy.clone(),
                sessions: values[0].len(),
                stats: METRICS
                    .iter()
                    .zip(values)
                    .filter_map(|(m, v)| Some((m.to_string(), Stats::of(v)?)))
                    .collect(),
            })
            .collect()
    }
}

/// The aggregates of records already in memory (one session or many files).
pub fn of_records(records: impl Iterator<Item = SessionRecord>) -> Vec<PolicyAggregate> {
    let mut a = Aggregate::default();
    for r in records {
        a.add(&r);
    }
    a.rows()
}

/// One cell: `mean / median / p95`; dollars to four places, other values
/// whole where they are, else to one place.
fn cell(metric: &str, s: Option<&Stats>) -> String {
    let n = |x: f64| {
        if metric == "dollars" {
            format!("{x:.4}")
        } else if x.fract() == 0.0 {
            format!("{x:.0}")
        } else {
            format!("{x:.1}")
        }
    };
    match s {
        Some(s) => format!("{} / {} / {}", n(s.mean), n(s.median), n(s.p95)),
        None => "-".to_string(),
    }
}

/// The aggregate table: a row per policy, a column per measured counter,
/// each cell `mean / median / p95` over sessions.
pub fn table(agg: &Aggregate, markdown: bool, skipped: usize) -> String {
    let rows = &agg.rows();
    let measured: Vec<&str> = METRICS
        .iter()
        .copied()
        .filter(|m| rows.iter().any(|r| r.stats.contains_key(*m)))
        .collect();
    let mut header = vec!["policy".to_string(), "sessions".to_string()];
    header.extend(measured.iter().map(|m| m.to_string()));
    let body = rows
        .iter()
        .map(|r| {
            let mut row = vec![r.policy.clone(), r.sessions.to_string()];
            row.extend(measured.iter().map(|m| cell(m, r.stats.get(*m))));
            row
        })
        .collect();
    let mut s = crate::render::table(&header, body, markdown);
    s.push_str(&format!(
        "\n\neach cell: mean / median / p95 over sessions (p95 by nearest rank); tokens: {} (an estimate); \
         dollars: prompt side only; per-session rows with --per-session, one JSON record per session and policy with --format jsonl\n",
        agg.tokenizer.as_deref().unwrap_or("none")
    ));
    if skipped > 0 {
        s.push_str(&format!(
            "{} not replayed (not sessions; each named on stderr)\n",
            crate::render::count(skipped, "file or member")
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_are_exact() {
        let s = Stats::of(&[5.0, 1.0, 3.0, 2.0, 4.0]).unwrap();
        assert_eq!((s.mean, s.median, s.p95), (3.0, 3.0, 5.0));
        let s = Stats::of(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!((s.median, s.p95), (2.5, 4.0));
        // 20 values: the 95th percentile by nearest rank is the 19th.
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(Stats::of(&v).unwrap().p95, 19.0);
        assert_eq!(Stats::of(&[]), None);
    }
}
