//! Properties of the prompt-cache accounting on random request sequences.

use ctxlab::cache::provider::{Anthropic, OpenAi};
use ctxlab::cache::{cost, prices, CacheRequest, Provider, Segment};
use proptest::prelude::*;

/// A request: which of a small pool of contents each segment holds (so
/// prefixes repeat and diverge), its sizes, and a time step in seconds.
fn requests() -> impl Strategy<Value = Vec<CacheRequest>> {
    let req = (
        prop::collection::vec((0u8..4, 1u64..3_000), 1..12),
        0i64..900,
        0u32..2,
    );
    prop::collection::vec(req, 0..15).prop_map(|reqs| {
        let mut t = 0;
        reqs.into_iter()
            .enumerate()
            .map(|(i, (segs, step, stream))| {
                t += step * 1000;
                let segments = segs
                    .into_iter()
                    .enumerate()
                    .map(|(j, (c, tokens))| Segment::new(format!("s{j}"), (j, c), tokens))
                    .collect();
                let mut r = CacheRequest::with_last_breakpoint(segments, Some(t), i);
                r.stream = stream;
                r
            })
            .collect()
    })
}

fn providers() -> [Provider; 3] {
    [
        Provider::Anthropic(Anthropic::default()),
        Provider::Anthropic(Anthropic {
            lookback: 2,
            min_tokens: 0,
            ..Anthropic::default()
        }),
        Provider::OpenAi(OpenAi::default()),
    ]
}

proptest! {
    #[test]
    fn tokens_are_conserved_and_reads_stay_inside_the_live_prefix(reqs in requests()) {
        let sheet = prices::sheet("claude-sonnet-4.5-5m").unwrap();
        for p in providers() {
            let r = cost(&reqs, &p, sheet);
            prop_assert_eq!(r.requests.len(), reqs.len());
            for (q, req) in r.requests.iter().zip(&reqs) {
                prop_assert_eq!(q.input_tokens, req.tokens());
                prop_assert_eq!(q.cache_read_tokens + q.cache_write_tokens + q.uncached_tokens, q.input_tokens);
                prop_assert!(q.cache_read_tokens <= q.lcp_tokens);
                prop_assert!(q.dollars >= 0.0);
                prop_assert_eq!(q.broke, q.break_at.is_some());
            }
            prop_assert_eq!(r.input_tokens, r.cache_read_tokens + r.cache_write_tokens + r.uncached_tokens);
        }
    }

    #[test]
    fn repeating_a_request_within_the_ttl_reads_all_it_wrote(reqs in requests()) {
        let sheet = prices::sheet("gpt-5").unwrap();
        let p = Provider::Anthropic(Anthropic { min_tokens: 0, ..Anthropic::default() });
        for req in reqs.iter().take(3) {
            let twice = [req.clone(), CacheRequest { turn: req.turn + 1, ..req.clone() }];
            let r = cost(&twice, &p, sheet);
            prop_assert!(!r.requests[1].broke);
            prop_assert_eq!(r.requests[1].cache_write_tokens, 0);
            prop_assert_eq!(r.requests[1].cache_read_tokens, r.requests[0].cache_read_tokens + r.requests[0].cache_write_tokens);
        }
    }
}
