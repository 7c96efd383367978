use super::provider::{Anthropic, OpenAi};
use super::*;

const MIN: i64 = 60_000;

fn sys() -> Segment {
    Segment::new("system", "sys", 2_000)
}

fn msg(n: usize, tokens: u64) -> Segment {
    Segment::new(format!("msg {n}"), format!("m{n}"), tokens)
}

/// Growing conversation: request `k` holds system + messages 0..=k, one a minute.
fn growing(n: usize) -> Vec<CacheRequest> {
    (0..n)
        .map(|k| {
            let mut s = vec![sys()];
            s.extend((0..=k).map(|i| msg(i, 500)));
            CacheRequest::with_last_breakpoint(s, Some(k as i64 * MIN), k)
        })
        .collect()
}

fn sonnet() -> &'static PriceSheet {
    prices::sheet("claude-sonnet-4.5-5m").unwrap()
}

fn anthropic() -> Provider {
    Provider::Anthropic(Anthropic::default())
}

#[test]
fn append_only_reads_the_previous_prefix_and_never_breaks() {
    let r = cost(&growing(5), &anthropic(), sonnet());
    assert_eq!(r.requests[0].cache_read_tokens, 0);
    assert_eq!(r.requests[0].cache_write_tokens, 2_500);
    for k in 1..5 {
        let q = &r.requests[k];
        assert_eq!(q.cache_read_tokens, 2_000 + 500 * k as u64, "request {k}");
        assert_eq!(q.cache_write_tokens, 500);
        assert_eq!(q.lcp_tokens, q.cache_read_tokens);
        assert!(!q.broke && !q.expired);
    }
    assert_eq!(r.breaks, 0);
    assert_eq!(r.turns, 5);
    assert_eq!(
        r.input_tokens,
        r.cache_read_tokens + r.cache_write_tokens + r.uncached_tokens
    );
}

#[test]
fn a_compaction_breaks_at_the_first_changed_message_and_pays_back_later() {
    let mut reqs = growing(4);
    // Request 4 replaces messages 0..=3 with a short summary.
    let summary = Segment::new("summary", "sum", 200);
    let s = vec![sys(), summary, msg(4, 500)];
    reqs.push(CacheRequest::with_last_breakpoint(s, Some(4 * MIN), 4));
    let r = cost(&reqs, &anthropic(), sonnet());
    let q = &r.requests[4];
    assert!(q.broke);
    assert_eq!(q.break_at.as_ref().unwrap().label, "summary");
    assert_eq!(q.break_at.as_ref().unwrap().segment, 1);
    // The system breakpoint is still live: only it is read.
    assert_eq!(q.cache_read_tokens, 2_000);
    assert_eq!(q.cache_write_tokens, 700);
    // before 4000, after 2700: (1.25*2700 - 0.1*4000) / (0.1*1300)
    let expect = (1.25 * 2700.0 - 0.1 * 4000.0) / (0.1 * 1300.0);
    assert!((q.payback_turns.unwrap() - expect).abs() < 1e-9);
    assert_eq!(r.breaks, 1);
}

#[test]
fn a_gap_over_the_ttl_expires_the_cache_without_a_content_break() {
    let mut reqs = growing(2);
    reqs[1].at_ms = Some(6 * MIN);
    let r = cost(&reqs, &anthropic(), sonnet());
    assert!(r.requests[1].expired);
    assert!(!r.requests[1].broke);
    assert_eq!(r.requests[1].cache_read_tokens, 0);
    assert_eq!(r.requests[1].cache_write_tokens, 3_000);
    // The 1-hour TTL keeps it.
    let hour = Provider::Anthropic(Anthropic {
        ttl_secs: 3_600,
        ..Anthropic::default()
    });
    assert_eq!(
        cost(&reqs, &hour, sonnet()).requests[1].cache_read_tokens,
        2_500
    );
}

#[test]
fn lookback_limits_how_far_back_a_breakpoint_finds_an_entry() {
    let mut reqs = growing(1);
    let mut s = vec![sys()];
    s.extend((0..30).map(|i| msg(i, 10)));
    reqs[0] = CacheRequest::with_last_breakpoint(s[..2].to_vec(), Some(0), 0);
    reqs.push(CacheRequest::with_last_breakpoint(s.clone(), Some(MIN), 1));
    let near = Provider::Anthropic(Anthropic {
        lookback: 20,
        min_tokens: 0,
        ..Anthropic::default()
    });
    let far = Provider::Anthropic(Anthropic {
        lookback: 40,
        min_tokens: 0,
        ..Anthropic::default()
    });
    // The entry after message 0 is 29 blocks behind the last breakpoint:
    // with lookback 20 only the system breakpoint hits.
    assert_eq!(
        cost(&reqs, &near, sonnet()).requests[1].cache_read_tokens,
        2_000
    );
    assert_eq!(
        cost(&reqs, &far, sonnet()).requests[1].cache_read_tokens,
        2_010
    );
}

#[test]
fn openai_reads_any_live_prefix_in_steps_and_writes_for_free() {
    let provider = Provider::OpenAi(OpenAi::default());
    let sheet = prices::sheet("gpt-5").unwrap();
    let r = cost(&growing(3), &provider, sheet);
    // lcp 2500 -> 1024 + 11*128 = 2432.
    assert_eq!(r.requests[1].lcp_tokens, 2_500);
    assert_eq!(r.requests[1].cache_read_tokens, 2_432);
    assert_eq!(r.requests[1].uncached_tokens, 0);
    let plain = 3_000.0 - 2_432.0;
    let expect = (plain + 2_432.0 * 0.1) * 1.25 / 1e6;
    assert!((r.requests[1].dollars - expect).abs() < 1e-12);
}

#[test]
fn streams_are_judged_separately_but_share_the_cache() {
    let mut reqs = growing(2);
    let mut side = CacheRequest::with_last_breakpoint(
        vec![Segment::new("system", "other", 1_500)],
        Some(30_000),
        0,
    );
    side.stream = 1;
    reqs.insert(1, side);
    let r = cost(&reqs, &anthropic(), sonnet());
    assert!(!r.requests[1].broke, "a new stream has nothing to break");
    assert!(!r.requests[2].broke);
    assert_eq!(r.requests[2].cache_read_tokens, 2_500);
    assert_eq!(r.turns, 3);
}

#[test]
fn tradeoff_counts_writes_per_saved_token() {
    let base = cost(&growing(4), &anthropic(), sonnet());
    let mut reqs = growing(3);
    reqs.push(CacheRequest::with_last_breakpoint(
        vec![sys(), msg(9, 100)],
        Some(3 * MIN),
        3,
    ));
    let policy = cost(&reqs, &anthropic(), sonnet());
    let t = tradeoff(&policy, &base);
    assert_eq!(t.tokens_saved, 4_000 - 2_100);
    let w = policy.cache_write_tokens as f64 / 1_900.0;
    assert!((t.write_per_saved.unwrap() - w).abs() < 1e-12);
    assert!(tradeoff(&base, &base).write_per_saved.is_none());
}

#[test]
fn an_empty_input_costs_nothing() {
    let r = cost(&[], &anthropic(), sonnet());
    assert_eq!((r.input_tokens, r.turns, r.breaks), (0, 0, 0));
    assert_eq!(r.dollars, 0.0);
}

/// A model's minimum cacheable prefix: the 2,500-token first request is
/// cached under a 1,024-token minimum (Opus 4.1) and not at all under a
/// 4,096-token one (Opus 4.6), so its successor reads nothing.
#[test]
fn a_models_minimum_prefix_decides_what_is_cached() {
    let table = prices::table::PriceTable::builtin();
    let min_of = |model: &str| match table.lookup(model) {
        Some(prices::table::Lookup::Priced(m)) => m.min_cache_tokens,
        other => panic!("{other:?}"),
    };
    let old = anthropic().with_min_tokens(min_of("claude-opus-4-1-20250805"));
    let new = anthropic().with_min_tokens(min_of("claude-opus-4-6"));
    let r = cost(&growing(2), &old, sonnet());
    assert_eq!(r.requests[1].cache_read_tokens, 2_500);
    let r = cost(&growing(2), &new, sonnet());
    assert_eq!(r.requests[0].cache_write_tokens, 0);
    assert_eq!(r.requests[1].cache_read_tokens, 0);
    assert_eq!(new.family(), "anthropic");
}

/// Gemini's implicit caching reads the live prefix in whole 2,017-token
/// blocks (not OpenAI's 128-token steps) and bills a write as plain input;
/// an explicit cache's storage is priced per token-hour.
#[test]
fn gemini_reads_whole_blocks_and_bills_no_write_premium() {
    let table = prices::table::PriceTable::builtin();
    let Some(prices::table::Lookup::Priced(flash)) = table.lookup("gemini-2.5-flash") else {
        panic!("no gemini-2.5-flash");
    };
    let sheet = prices::sheet_of(flash, false, &table.date);
    let gemini = provider::CacheChoice::Gemini.provider();
    assert_eq!(gemini.name(), "gemini-implicit-ttl300s");
    assert_eq!(gemini.family(), flash.provider);
    let r = cost(&growing(3), &gemini, &sheet);
    // 2,500 then 3,000 sent: the second reads the one whole block of the
    // 2,500 (OpenAI would read 2,432, a multiple of 128 past 1,024) and
    // writes the rest.
    assert_eq!(r.requests[1].cache_read_tokens, 2_017);
    assert_eq!(r.requests[1].cache_write_tokens, 983);
    let dollars = (983.0 * 0.30 + 2_017.0 * 0.03) / 1e6;
    assert!((r.requests[1].dollars - dollars).abs() < 1e-12);
    let openai = cost(&growing(3), &Provider::OpenAi(OpenAi::default()), &sheet);
    assert_eq!(openai.requests[1].cache_read_tokens, 2_432);
    // 1M tokens kept for 2 hours at $1.00 per million per hour.
    let storage =
        provider::Gemini::storage_dollars(1_000_000, 2.0, flash.storage_per_mtok_hour.unwrap());
    assert!((storage - 2.0).abs() < 1e-12);
}
