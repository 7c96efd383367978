//! Gated variants: `gated:P` (or `gated@SHEET:P`) skips a decision of `P`
//! that rewrites the cached prefix when the rewrite costs more than the
//! cache reads it saves over the calls expected to follow.
//!
//! Each call, `P` prepares its request from its own history as it always
//! does. When that request does not start with the request sent last (the
//! cached prefix), the gate compares, in input-price units of the sheet:
//!
//! - *now*: compacting reads the part of the new request shared with the
//!   cached one (`C` tokens at `read_mult`) and writes the rest (`A − C` at
//!   `write_mult`); skipping reads the cached request (`S` at `read_mult`)
//!   and writes what arrived since (`N` at `write_mult`). The difference is
//!   the rewrite's extra cost;
//! - *later*: every later call reads `S + N − A` tokens fewer
//!   (`read_mult` each).
//!
//! It lets the compaction through when the extra cost is at most the
//! saving per call times the expected remaining calls, else it sends the
//! cached request plus the new messages, unchanged, and records a
//! [`PolicyEvent::Gated`] (the run's `gate_skips` counter).
//!
//! *Expected remaining calls* is an estimate: the number of calls made so
//! far (a session expected to last as long again as it has lasted: the
//! median of the remaining length under a scale-free prior, the "delta t"
//! argument of J. R. Gott, Nature 363, 1993). A session knows nothing of its
//! own end, so the estimate is the same for every design.
//!
//! The sheet is the one the spec names (`gated@SHEET:P`, parsed with every
//! spec in [`crate::spec`], resolved by `lab replay`), else the run's: in `lab replay --cost --sheet S`, the sheet
//! `S` that prices the run; elsewhere the default ([`Weights::default`]). The cache is assumed warm: a rewrite
//! after a TTL expiry costs nothing extra, which the gate does not model,
//! so it errs towards skipping after long pauses.
//!
//! A skipped call keeps `P`'s state as `P` left it (its history, its own
//! view): the next call compares `P`'s newer request with what was sent,
//! so a compaction skipped now passes later once enough has grown. Files
//! `P` wrote for a skipped edit stay in storage (the checker may count them
//! as orphans). A gated request is never larger than `none`'s, which the
//! recorded session sent, so skipping never exceeds the recorded context.

use super::{PointerRule, Policy, PolicyCtx, PolicyEvent, PolicyInfo, Prepared};
use crate::error::LabResult;
use crate::message::Message;

/// The spec prefix: `gated:P`, or `gated@SHEET:P` to name the sheet.
pub const PREFIX: &str = "gated";
/// What the gate weighs with: a price sheet's cache multipliers (the
/// input price cancels out of the comparison). The policy layer knows no
/// price sheets (they live above it, in `cache::prices`); a replay hands
/// the gate its sheet's multipliers.
#[derive(Debug, Clone, PartialEq)]
pub struct Weights {
    /// The sheet's name, for the gate's events.
    pub sheet: String,
    /// Cache reads per input token.
    pub read_mult: f64,
    /// Cache writes per input token.
    pub write_mult: f64,
}

impl Default for Weights {
    /// The lab's default sheet, `claude-opus-4.1-5m` (`cache::prices::
    /// DEFAULT_SHEET`: 5-minute writes 1.25×, reads 0.1×; a test holds
    /// the two equal).
    fn default() -> Weights {
        Weights {
            sheet: "claude-opus-4.1-5m".into(),
            read_mult: 0.1,
            write_mult: 1.25,
        }
    }
}

/// A policy whose prefix-rewriting decisions pass a break-even gate.
pub struct Gated {
    inner: Box<dyn Policy>,
    name: String,
    weights: Weights,
    /// The history as the wrapped policy keeps it.
    own: Vec<Message>,
    /// Messages of the engine's history at the end of the last call: the
    /// request sent then (the engine appends what arrives after).
    sent: usize,
}

impl Gated {
    /// `inner` gated with `weights`, named `spec`.
    pub fn new(inner: Box<dyn Policy>, spec: &str, weights: Weights) -> Gated {
        Gated {
            inner,
            name: spec.to_string(),
            weights,
            own: Vec::new(),
            sent: 0,
        }
    }
}

/// What a compaction would cost now and save later, in input-price tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GateDecision {
    /// Extra cost of compacting now over skipping (may be negative).
    pub extra: f64,
    /// Reads saved on each later call.
    pub saved_per_call: f64,
    /// Tokens the compaction frees.
    pub frees: u64,
}

impl GateDecision {
    /// Does the saving over `expected` later calls repay the extra cost?
    pub fn pays(&self, expected: f64) -> bool {
        self.extra <= 0.0
            || (self.saved_per_call > 0.0 && self.saved_per_call * expected >= self.extra)
    }

    /// Later calls until the saving repays the extra cost (rounded up).
    pub fn payback_calls(&self) -> u64 {
        if self.extra <= 0.0 {
            0
        } else if self.saved_per_call <= 0.0 {
            u64::MAX
        } else {
            (self.extra / self.saved_per_call).ceil() as u64
        }
    }
}

/// The gate's arithmetic: `cached` tokens sent last and still cached,
/// `arrived` tokens since, `shared` tokens of the compacted request equal
/// to the cached one's start, `compacted` tokens of the compacted request.
pub fn decide(
    sheet: &Weights,
    cached: u64,
    arrived: u64,
    shared: u64,
    compacted: u64,
) -> GateDecision {
    let (r, w) = (sheet.read_mult, sheet.write_mult);
    let now_compact = r * shared as f64 + w * compacted.saturating_sub(shared) as f64;
    let now_skip = r * cached as f64 + w * arrived as f64;
    let skip_size = cached + arrived;
    GateDecision {
        extra: now_compact - now_skip,
        saved_per_call: r * (skip_size as f64 - compacted as f64),
        frees: skip_size.saturating_sub(compacted),
    }
}

impl Gated {
    /// The gate's verdict on sending `request` instead of `history` (whose
    /// first `self.sent` messages are the cached request).
    fn judge(&self, history: &[Message], request: &[Message], ctx: &PolicyCtx<'_>) -> GateDecision {
        let sent = self.sent.min(history.len());
        let shared = history[..sent]
            .iter()
            .zip(request)
            .take_while(|(a, b)| a == b)
            .count();
        let count = |m: &[Message]| ctx.tokens.count_messages(m) as u64;
        decide(
            &self.weights,
            count(&history[..sent]),
            count(&history[sent..]),
            count(&request[..shared]),
            count(request),
        )
    }
}

impl Policy for Gated {
    fn info(&self) -> PolicyInfo {
        let mut info = self.inner.info();
        info.name = self.name.clone();
        info.differences.push(
            "gated: a decision that rewrites the cached prefix is skipped when its rewrite costs more than the reads it saves over the calls made so far (the expected remaining calls)",
        );
        info
    }

    fn pointer_rules(&self) -> Vec<PointerRule> {
        self.inner.pointer_rules()
    }

    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        let arrived = self.sent.min(history.len());
        self.own.extend_from_slice(&history[arrived..]);
        let mut prepared = self.inner.prepare(&mut self.own, ctx)?;
        let cached = &history[..arrived];
        if !cached.is_empty() && !prepared.request.starts_with(cached) {
            let v = self.judge(history, &prepared.request, ctx);
            let expected = ctx.turn.max(1);
            if !v.pays(expected as f64) {
                prepared = Prepared {
                    request: history.clone(),
                    events: vec![PolicyEvent::Gated {
                        frees: v.frees,
                        payback_calls: v.payback_calls(),
                        expected_calls: expected as u64,
                        sheet: self.weights.sheet.clone(),
                    }],
                };
            }
        }
        history.clone_from(&prepared.request);
        self.sent = history.len();
        Ok(prepared)
    }

    fn resumed(&mut self, history: &[Message], dropped: bool) {
        // The wrapped policy's history loses what the engine's lost.
        for m in &mut self.own {
            m.drop_unlogged();
        }
        // The engine's history is the whole loaded conversation (the
        // wrapped one's own copy lacks what arrived since its last call).
        self.inner.resumed(history, dropped);
    }

    forward_to_inner!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_name_their_sheet_or_take_the_run_s() {
        use crate::spec::{wrapper, Wrapper};
        assert_eq!(
            wrapper("gated:codex-cli"),
            Some((Wrapper::Gated(None), "codex-cli"))
        );
        assert_eq!(
            wrapper("gated@gpt-5:frozen:none"),
            Some((Wrapper::Gated(Some("gpt-5")), "frozen:none"))
        );
        assert_eq!(wrapper("codex-cli"), None);
        assert_eq!(wrapper("gatedx:none"), None);
    }

    #[test]
    fn the_arithmetic_weighs_the_rewrite_against_the_reads_it_saves() {
        let s = &Weights::default();
        // 100k cached, 1k new; compaction to 20k sharing 5k.
        let v = decide(s, 100_000, 1_000, 5_000, 20_000);
        // now: 0.1·5k + 1.25·15k = 19_250; skip: 0.1·100k + 1.25·1k = 11_250.
        assert!((v.extra - 8_000.0).abs() < 1e-6, "{v:?}");
        assert!((v.saved_per_call - 8_100.0).abs() < 1e-6, "{v:?}");
        assert_eq!(v.frees, 81_000);
        assert_eq!(v.payback_calls(), 1);
        assert!(v.pays(1.0));
        assert!(!v.pays(0.5));
        // Nothing freed: never pays unless it is cheaper now.
        let none = decide(s, 100_000, 0, 0, 100_000);
        assert!(!none.pays(1_000.0));
    }
}
