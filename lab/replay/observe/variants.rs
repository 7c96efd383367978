//! Each wrapped design beside the design it wraps (`frozen:P` and
//! `gated:P` against `P`), summed over the sessions where both ran priced:
//! dollars and what the wrapper saved, prefix breaks, the share of input
//! read from cache, the gate's skips and, where retention was measured,
//! artifact recall. The per-session rows are in the run, cost and break
//! tables above it; this is the line a reader looks for first.

use serde::Serialize;

use crate::cache::CostReport;
use crate::policy::spec::PolicySpec;

/// One priced run, as the summary reads it.
#[derive(Debug, Clone, Copy)]
pub struct Priced<'a> {
    /// Session name.
    pub session: &'a str,
    /// The spec the run ran.
    pub spec: &'a PolicySpec,
    /// Its run's name (the spec's text).
    pub policy: &'a str,
    /// Its cost.
    pub cost: &'a CostReport,
    /// Decisions its gate skipped (`gated` events).
    pub gate_skips: usize,
    /// Artifact recall, percent, where retention was measured.
    pub recall: Option<f64>,
}

/// One wrapper against its design, over the sessions both ran on.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct VariantSummary {
    /// The wrapped spec (`frozen:swe-agent-mask-5`).
    pub variant: String,
    /// The spec it wraps (`swe-agent-mask-5`).
    pub base: String,
    /// Sessions where both ran priced.
    pub sessions: usize,
    /// Dollars of the design, summed over those sessions (cache model's estimate).
    pub base_dollars: f64,
    /// Dollars of the wrapper, likewise.
    pub variant_dollars: f64,
    /// Prefix breaks of the design, summed.
    pub base_breaks: usize,
    /// Prefix breaks of the wrapper, summed.
    pub variant_breaks: usize,
    /// Cache reads over input tokens of the design, in percent (pooled).
    pub base_read_share: f64,
    /// Likewise for the wrapper.
    pub variant_read_share: f64,
    /// Compactions the gate skipped (`gated` events; 0 for `frozen:`).
    pub gate_skips: usize,
    /// Mean artifact recall (percent) of the design over the sessions, where both
    /// measured retention.
    pub base_recall: Option<f64>,
    /// Likewise for the wrapper.
    pub variant_recall: Option<f64>,
}

impl VariantSummary {
    /// Dollars the wrapper saved against its design, in percent of the design's.
    pub fn saved_percent(&self) -> f64 {
        if self.base_dollars > 0.0 {
            100.0 * (self.base_dollars - self.variant_dollars) / self.base_dollars
        } else {
            0.0
        }
    }
}

/// Every wrapper among `out` whose design also ran, in first-seen order:
/// a run of `frozen:P` or `gated[@SHEET]:P` beside the run of `P`, read
/// from the spec each ran.
pub fn summaries(out: &[Priced<'_>]) -> Vec<VariantSummary> {
    let mut specs: Vec<(&str, String)> = Vec::new();
    for c in out {
        if let PolicySpec::Frozen(inner) | PolicySpec::Gated { inner, .. } = c.spec {
            let base = inner.to_string();
            if !specs.iter().any(|(v, b)| *v == c.policy && *b == base) {
                specs.push((c.policy, base));
            }
        }
    }
    specs
        .into_iter()
        .filter_map(|(variant, base)| summary(out, variant, &base))
        .collect()
}

/// The runs of `variant` with the run of `base` on the same session.
fn pairs<'a>(
    out: &'a [Priced<'a>],
    variant: &str,
    base: &str,
) -> Vec<(&'a Priced<'a>, &'a Priced<'a>)> {
    out.iter()
        .filter(|v| v.policy == variant)
        .filter_map(|v| {
            let b = out
                .iter()
                .find(|b| b.policy == base && b.session == v.session)?;
            Some((b, v))
        })
        .collect()
}

fn summary(out: &[Priced<'_>], variant: &str, base: &str) -> Option<VariantSummary> {
    let pairs = pairs(out, variant, base);
    if pairs.is_empty() {
        return None;
    }
    let (b, v) = (
        Side::of(pairs.iter().map(|p| p.0)),
        Side::of(pairs.iter().map(|p| p.1)),
    );
    let both_recall = pairs
        .iter()
        .all(|(b, v)| b.recall.is_some() && v.recall.is_some());
    Some(VariantSummary {
        variant: variant.to_string(),
        base: base.to_string(),
        sessions: pairs.len(),
        base_dollars: b.dollars,
        variant_dollars: v.dollars,
        base_breaks: b.breaks,
        variant_breaks: v.breaks,
        base_read_share: b.read_share(),
        variant_read_share: v.read_share(),
        gate_skips: pairs.iter().map(|(_, v)| v.gate_skips).sum(),
        base_recall: both_recall.then(|| b.recall / pairs.len() as f64),
        variant_recall: both_recall.then(|| v.recall / pairs.len() as f64),
    })
}

/// One side of a pair, summed over sessions.
#[derive(Default)]
struct Side {
    dollars: f64,
    breaks: usize,
    read: u64,
    input: u64,
    recall: f64,
}

impl Side {
    fn of<'a>(runs: impl Iterator<Item = &'a Priced<'a>>) -> Side {
        let mut s = Side::default();
        for p in runs {
            s.dollars += p.cost.dollars;
            s.breaks += p.cost.breaks;
            s.read += p.cost.cache_read_tokens;
            s.input += p.cost.input_tokens;
            s.recall += p.recall.unwrap_or(0.0);
        }
        s
    }

    fn read_share(&self) -> f64 {
        100.0 * self.read as f64 / self.input.max(1) as f64
    }
}

/// The summary table; empty when no wrapper ran beside its design.
pub fn table(rows: &[VariantSummary], format: crate::render::Format) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let recall = |r: Option<f64>| r.map_or("-".to_string(), |x| format!("{x:.1}%"));
    let body = rows
        .iter()
        .map(|r| {
            vec![
                r.variant.clone(),
                r.sessions.to_string(),
                format!("{:.4}", r.base_dollars),
                format!("{:.4}", r.variant_dollars),
                format!("{:+.1}", r.saved_percent()),
                format!("{} → {}", r.base_breaks, r.variant_breaks),
                format!("{:.1} → {:.1}", r.base_read_share, r.variant_read_share),
                r.gate_skips.to_string(),
                format!("{} → {}", recall(r.base_recall), recall(r.variant_recall)),
            ]
        })
        .collect();
    let mut s = crate::render::table(
        &[
            "variant",
            "sessions",
            "design $",
            "variant $",
            "saved %",
            "prefix breaks",
            "read share %",
            "gate skips",
            "recall",
        ],
        body,
        format == crate::render::Format::Markdown,
    );
    s.push_str(
        "\n\neach wrapper against the design it wraps, summed over the sessions where both ran priced; dollars are the cache model's estimate at each run's prices, read share pools cache reads over input tokens, recall is the mean artifact recall (`-` without --retention)\n",
    );
    s
}
