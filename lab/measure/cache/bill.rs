//! A recorded session's bill: every request priced by the model that
//! answered it (`message.model`), at that model's list price in a
//! [`PriceTable`], output tokens included.
//!
//! The prompt side and the output are kept apart: a replay re-sends the
//! recorded history and generates nothing, so a replayed arm is comparable
//! with the prompt side only; the whole bill is what the provider charged.

use serde::Serialize;

use super::prices::table::{Bill, Lookup, PriceTable, Tokens};
use crate::error::LabResult;
use crate::tokens::recorded::RecordedRequest;

/// What a recorded session cost at list prices.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RecordedBill {
    /// Requests priced (requests to no model, `<synthetic>`, cost nothing).
    pub requests: usize,
    /// Output tokens over every request.
    pub output_tokens: u64,
    /// Dollars of uncached input, cache writes and cache reads.
    pub input_dollars: f64,
    /// Dollars of output.
    pub output_dollars: f64,
    /// `input_dollars + output_dollars`.
    pub dollars: f64,
    /// The models that answered, sorted.
    pub models: Vec<String>,
    /// The price table's origin and date.
    pub prices: String,
    /// Per request, in log order.
    pub per_request: Vec<Bill>,
    /// What the provider charged for these requests, where the log records
    /// a charge for every one of them (a trajectory routed through
    /// OpenRouter); `None` otherwise. The check of `dollars`: the list
    /// prices recomputed against the provider's own bill.
    pub charged: Option<f64>,
    /// Where requests record a stream placeholder for their output
    /// ([`crate::tokens::recorded::placeholders`]): the bill with their
    /// output estimated from the content. `dollars` is then a lower bound.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimated_output: Option<EstimatedOutput>,
}

/// The bill with placeholder outputs estimated from the replies' content.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct EstimatedOutput {
    /// Requests whose recorded output is a placeholder.
    pub placeholders: usize,
    /// Output tokens over every request, placeholders estimated.
    pub output_tokens: u64,
    /// Dollars with output, placeholders estimated (an estimate).
    pub dollars: f64,
}

/// The tokens of a recorded request as billed: writes split by lifetime.
pub fn tokens_of(r: &RecordedRequest) -> Tokens {
    let u = r.usage;
    let write_1h = r
        .billing
        .cache_write_1h_tokens
        .min(u.cache_creation_input_tokens);
    Tokens {
        uncached: u.input_tokens,
        write_5m: u.cache_creation_input_tokens - write_1h,
        write_1h,
        read: u.cache_read_input_tokens,
        output: r.billing.output_tokens,
    }
}

/// The session's model: the one that answered most main-chain requests
/// (the first seen on a tie); subagent and side calls do not count.
pub fn session_model(recorded: &[RecordedRequest]) -> Option<&str> {
    conversation_model(recorded.iter().filter(|r| !r.sidechain))
}

/// The model that answered most of one conversation's `requests` (the
/// first seen on a tie): a subagent's, over its own requests.
pub fn conversation_model<'a>(
    requests: impl IntoIterator<Item = &'a RecordedRequest>,
) -> Option<&'a str> {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for r in requests {
        match counts.iter_mut().find(|(m, _)| *m == r.model) {
            Some((_, n)) => *n += 1,
            None => counts.push((&r.model, 1)),
        }
    }
    // max_by_key keeps the last maximum; reversed, the first seen wins.
    counts.iter().rev().max_by_key(|(_, n)| *n).map(|(m, _)| *m)
}

/// `source`, with the line of the first request `model` answered when the
/// log says (`s.jsonl:12`): where an error about that model points.
pub fn located(source: &str, recorded: &[RecordedRequest], model: Option<&str>) -> String {
    let line = recorded
        .iter()
        .find(|r| Some(r.model.as_str()) == model)
        .and_then(|r| r.line);
    match line {
        Some(l) => format!("{source}:{l}"),
        None => source.to_string(),
    }
}

/// Prices every request of `recorded` (read from `source`) by its model; a
/// model the table lacks is refused before anything is priced.
pub fn bill(
    source: &str,
    recorded: &[RecordedRequest],
    prices: &PriceTable,
) -> LabResult<RecordedBill> {
    let mut models: Vec<String> = Vec::new();
    let mut per_request = Vec::with_capacity(recorded.len());
    // Placeholder outputs: how many, and the dollars their estimates add.
    let mut estimated = (0usize, 0.0f64);
    for r in recorded {
        // Located only on the error path: the first request of an unpriced
        // model is the one `located` names.
        let lookup = match prices.lookup(&r.model) {
            Some(l) => l,
            None => prices.require(&r.model, &located(source, recorded, Some(&r.model)))?,
        };
        let b = match lookup {
            Lookup::Priced(m) => m.bill(&tokens_of(r)),
            Lookup::NotAModel => Bill::default(),
        };
        if !models.contains(&r.model) {
            models.push(r.model.clone());
        }
        if let (Lookup::Priced(m), (output, true)) = (lookup, r.billing.best_output()) {
            estimated.0 += 1;
            estimated.1 += m
                .bill(&Tokens {
                    output,
                    ..tokens_of(r)
                })
                .output
                - b.output;
        }
        per_request.push(b);
    }
    models.sort();
    let input_dollars: f64 = per_request.iter().map(|b| b.input_side).sum();
    let output_dollars: f64 = per_request.iter().map(|b| b.output).sum();
    Ok(RecordedBill {
        requests: recorded.len(),
        output_tokens: recorded
            .iter()
            .map(|r| r.billing.output_tokens)
            .fold(0, u64::saturating_add),
        input_dollars,
        output_dollars,
        dollars: input_dollars + output_dollars,
        models,
        prices: prices.label(),
        per_request,
        charged: charged(recorded),
        estimated_output: (estimated.0 > 0).then(|| EstimatedOutput {
            placeholders: estimated.0,
            output_tokens: recorded
                .iter()
                .map(|r| r.billing.best_output().0)
                .fold(0, u64::saturating_add),
            dollars: input_dollars + output_dollars + estimated.1,
        }),
    })
}

/// The sum of the provider's charges, when every request records one.
fn charged(recorded: &[RecordedRequest]) -> Option<f64> {
    if recorded.is_empty() {
        return None;
    }
    recorded.iter().map(|r| r.charged).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::recorded::{Billing, Usage};

    fn req(model: &str, u: (u64, u64, u64), billing: Billing) -> RecordedRequest {
        RecordedRequest {
            id: String::new(),
            chain: "c".into(),
            sidechain: false,
            model: model.into(),
            at_ms: None,
            sent_ms: None,
            messages: Default::default(),
            resent_units: 0.0,
            prompts_after_stop_hook: 0,
            line: None,
            usage: Usage {
                input_tokens: u.0,
                cache_creation_input_tokens: u.1,
                cache_read_input_tokens: u.2,
            },
            billing,
            charged: None,
            implicit_cache: false,
        }
    }

    #[test]
    fn each_request_is_priced_by_its_own_model_with_output_apart() {
        let recorded = [
            // Sonnet 4.5: 1M uncached ($3), 1M output ($15).
            req(
                "claude-sonnet-4-5-20250929",
                (1_000_000, 0, 0),
                Billing {
                    output_tokens: 1_000_000,
                    cache_write_1h_tokens: 0,
                    output_estimate: None,
                },
            ),
            // Opus 4.6: 1M written, 400k of it for an hour ($3.75 + $4), 1M read ($0.50).
            req(
                "claude-opus-4-6",
                (0, 1_000_000, 1_000_000),
                Billing {
                    output_tokens: 0,
                    cache_write_1h_tokens: 400_000,
                    output_estimate: None,
                },
            ),
            req("<synthetic>", (0, 0, 0), Billing::default()),
        ];
        let b = bill("s.jsonl", &recorded, &PriceTable::builtin()).unwrap();
        assert!(
            (b.input_dollars - (3.0 + 3.75 + 4.0 + 0.5)).abs() < 1e-9,
            "{b:?}"
        );
        assert!((b.output_dollars - 15.0).abs() < 1e-9, "{b:?}");
        assert_eq!(b.requests, 3);
        assert_eq!(b.models.len(), 3);
        assert_eq!(b.per_request[2], Bill::default());
        assert!(b.prices.ends_with("as of 2026-12-04"), "{}", b.prices);
    }

    #[test]
    fn the_session_model_answers_most_main_chain_requests() {
        let b = Billing::default();
        let mut side = req("claude-haiku-4-5-20251001", (1, 0, 0), b);
        side.sidechain = true;
        let recorded = [
            req("claude-haiku-4-5-20251001", (1, 0, 0), b),
            req("claude-opus-4-6", (1, 0, 0), b),
            req("claude-opus-4-6", (1, 0, 0), b),
            side.clone(),
            side,
        ];
        assert_eq!(session_model(&recorded), Some("claude-opus-4-6"));
        assert_eq!(
            session_model(&recorded[..2]),
            Some("claude-haiku-4-5-20251001")
        );
        assert_eq!(session_model(&[]), None);
        // A subagent's own requests name its model.
        assert_eq!(
            conversation_model(&recorded[3..]),
            Some("claude-haiku-4-5-20251001")
        );
    }

    #[test]
    fn a_model_without_a_price_refuses_the_whole_session() {
        let recorded = [
            req("claude-opus-4-6", (1, 0, 0), Billing::default()),
            req("claude-nope", (1, 0, 0), Billing::default()),
        ];
        let e = bill("s.jsonl", &recorded, &PriceTable::builtin()).unwrap_err();
        assert!(e.to_string().contains("claude-nope"), "{e}");
        assert_eq!(e.exit_code(), 2);
    }
}
