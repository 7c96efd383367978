use super::*;
use crate::cache::prices;
use crate::cache::provider::Anthropic;
use crate::tokens::fit::{load_dir, shared_transcripts};

const MIN: i64 = 60_000;

fn req(chain: &str, at_min: i64, messages: &[Message], u: (u64, u64, u64)) -> RecordedRequest {
    RecordedRequest {
        id: String::new(),
        chain: chain.into(),
        sidechain: false,
        model: "m".into(),
        at_ms: Some(at_min * MIN),
        sent_ms: Some(at_min * MIN),
        resent_units: 0.0,
        prompts_after_stop_hook: 0,
        line: None,
        messages: messages.to_vec().into(),
        billing: Default::default(),
        charged: None,
        implicit_cache: false,
        usage: Usage {
            input_tokens: u.0,
            cache_creation_input_tokens: u.1,
            cache_read_input_tokens: u.2,
        },
    }
}

/// An append-only conversation whose usage is what a 5-minute cache does:
/// a 7-minute pause before the fourth request makes it rewrite everything.
fn session() -> Vec<RecordedRequest> {
    let m: Vec<Message> = (0..8)
        .map(|i| Message::user_text(format!("message {i} ").repeat(50)))
        .collect();
    vec![
        req("a", 0, &m[..1], (10, 5_000, 0)),
        req("a", 1, &m[..3], (10, 400, 5_000)),
        req("a", 2, &m[..5], (10, 600, 5_400)),
        req("a", 9, &m[..7], (10, 6_500, 0)),
        req("a", 10, &m[..8], (10, 300, 6_500)),
    ]
}

fn sheet() -> &'static PriceSheet {
    prices::sheet("claude-opus-4.1-5m").unwrap()
}

#[test]
fn a_faithful_model_reproduces_usage_and_flags_the_expiry_rewrite() {
    let (report, v) = validate(
        &session(),
        &Provider::Anthropic(Anthropic::default()),
        sheet(),
    );
    assert_eq!(v.within_5pct, 5, "{v:?}");
    assert_eq!(
        (v.recorded_rewrites, v.flagged_rewrites, v.false_rewrites),
        (1, 1, 0)
    );
    assert!(report.requests[3].expired);
    assert_eq!(v.series[3].predicted_write, 6_500);
}

#[test]
fn a_wrong_ttl_is_caught_by_the_comparison() {
    let hour = Provider::Anthropic(Anthropic {
        ttl_secs: 3_600,
        ..Anthropic::default()
    });
    let (_, v) = validate(&session(), &hour, sheet());
    assert_eq!(v.within_5pct, 4);
    assert_eq!(v.misses, vec![3]);
    assert_eq!((v.flagged_rewrites, v.unflagged.clone()), (0, vec![3]));
}

#[test]
fn sizes_follow_the_recorded_totals() {
    let reqs = requests_of(&session());
    assert_eq!(reqs[0].tokens(), 5_010);
    assert_eq!(reqs[2].tokens(), 6_010);
    // The system segment plus the first message make the first request's cached part.
    assert_eq!(
        reqs[0].segments[0].tokens + reqs[0].segments[1].tokens,
        5_000
    );
    assert_eq!(reqs[1].segments[1].tokens, reqs[0].segments[1].tokens);
}

#[test]
fn split_gives_the_remainder_to_the_system_or_the_last_message() {
    assert_eq!(split(100, &[0, 10, 30], true), vec![60, 10, 30]);
    assert_eq!(split(20, &[0, 10, 30], true), vec![0, 5, 15]);
    assert_eq!(split(10, &[1, 2], false), vec![3, 7]);
    assert_eq!(split(10, &[], false), Vec::<u64>::new());
}

#[test]
fn shared_sessions_are_reproduced() {
    let Some(dir) = shared_transcripts() else {
        eprintln!("skipped: no shared/transcripts/claude_code (set CTXLAB_TRANSCRIPTS)");
        return;
    };
    let sessions = load_dir(&dir.join("claude_code")).expect("shared sessions load");
    let provider = Provider::Anthropic(Anthropic::default());
    let (mut n, mut ok, mut rec, mut flagged, mut wrong) = (0, 0, 0, 0, 0);
    for s in &sessions {
        let (_, v) = validate(&s.requests, &provider, sheet());
        eprintln!(
            "{}: {}/{} within 5%, rewrites {}/{} flagged, {} false {:?}, misses {:?} unflagged {:?}",
            s.name,
            v.within_5pct,
            v.requests,
            v.flagged_rewrites,
            v.recorded_rewrites,
            v.false_rewrites,
            v.false_alarms,
            v.misses,
            v.unflagged
        );
        (n, ok, rec, flagged, wrong) = (
            n + v.requests,
            ok + v.within_5pct,
            rec + v.recorded_rewrites,
            flagged + v.flagged_rewrites,
            wrong + v.false_rewrites,
        );
    }
    eprintln!("total {ok}/{n} within 5%, rewrites {flagged}/{rec} flagged, {wrong} false");
    // Pinned on the five sessions the rules were read from: 773 of 798
    // requests within ±5 % (target ≥ 90 %), 20 of 20 recorded rewrites
    // flagged, 2 false (gaps of 301 and 313 s, within the model's latency of
    // the TTL). Flagged: gaps over the TTL between send times, new
    // conversations, a model switch, earlier turns' thinking dropped at a new
    // prompt or at tool results that carried an unlogged reminder (attio 38,
    // after a subagent that edited files), prompts after a Stop hook (dmux
    // 41 and 48, an empirical rule: see tokens::recorded::stop_hooks).
    //
    // With the four sessions added later (held out from the rules) and the
    // Stop-hook rule off by default (it raised 14 false alarms there, see
    // RewriteRules): 1,212 of 1,283 within ±5 % (94.5 %), 40 of 46 rewrites
    // flagged (dmux 41 and 48 go unflagged without it), 11 false (5 in
    // claude-agentic-framework, Claude Code 2.1.38).
    assert_eq!((n, ok), (1283, 1212));
    assert_eq!((rec, flagged, wrong), (46, 40, 11));
}

#[test]
fn absurd_usage_numbers_do_not_overflow() {
    let m = vec![Message::user_text("x")];
    let huge = req("a", 0, &m, (u64::MAX, u64::MAX, 5));
    let (report, v) = validate(
        &[huge.clone(), huge],
        &Provider::Anthropic(Anthropic::default()),
        sheet(),
    );
    assert_eq!(v.requests, 2);
    assert_eq!(report.requests.len(), 2);
}

#[test]
fn a_request_without_a_time_does_not_keep_the_cache_alive_forever() {
    let m: Vec<Message> = (0..5)
        .map(|i| Message::user_text(format!("message {i} ").repeat(50)))
        .collect();
    let mut untimed = req("a", 0, &m[..3], (10, 400, 5_000));
    (untimed.at_ms, untimed.sent_ms) = (None, None);
    let recorded = vec![
        req("a", 0, &m[..1], (10, 5_000, 0)),
        untimed,
        req("a", 9, &m[..5], (10, 5_800, 0)),
    ];
    let (report, v) = validate(
        &recorded,
        &Provider::Anthropic(Anthropic::default()),
        sheet(),
    );
    assert!(report.requests[2].expired, "timed from the last known send");
    assert_eq!((v.recorded_rewrites, v.flagged_rewrites), (1, 1), "{v:?}");
    assert_eq!(v.within_5pct, 3);
}

#[test]
fn requests_are_timed_by_their_send_time() {
    let m = vec![Message::user_text("x".repeat(400))];
    // Logged 2 minutes after sending: the response time would see no gap over 5 minutes.
    let mut late = req("a", 7, &m, (10, 0, 5_000));
    late.sent_ms = Some(6 * MIN);
    let mut first = req("a", 0, &m, (10, 5_000, 0));
    first.at_ms = Some(2 * MIN);
    let (report, _) = validate(
        &[first, late],
        &Provider::Anthropic(Anthropic::default()),
        sheet(),
    );
    assert!(report.requests[1].expired);
}

/// Three requests a minute apart; the third starts a new prompt, after a
/// Stop hook when `stopped`.
fn prompt_after(stopped: bool) -> Vec<RecordedRequest> {
    let m: Vec<Message> = (0..5)
        .map(|i| Message::user_text(format!("message {i} ").repeat(1_000)))
        .collect();
    let mut third = req("a", 2, &m[..5], (10, 13_000, 42_000));
    third.prompts_after_stop_hook = stopped as u32;
    vec![
        req("a", 0, &m[..1], (10, 30_000, 0)),
        req("a", 1, &m[..3], (10, 12_000, 30_000)),
        third,
    ]
}

#[test]
fn a_prompt_after_a_stop_hook_reads_back_only_the_system_prompt_when_the_rule_is_on() {
    let provider = Provider::Anthropic(Anthropic::default());
    let on = RewriteRules {
        stop_hook_prompts: true,
    };
    let system = requests_of(&prompt_after(true))[0].segments[0].tokens;
    let (_, v) = validate_with(&prompt_after(true), &provider, sheet(), on);
    assert_eq!(v.series[2].predicted_read, system);
    assert!(v.series[2].predicted_rewrite);
    let (_, kept) = validate_with(&prompt_after(false), &provider, sheet(), on);
    assert_eq!(kept.series[2].predicted_read, 42_000);
    assert!(!kept.series[2].predicted_rewrite);
    // Off by default: the rule has counter-evidence in the shared logs.
    let (_, default) = validate(&prompt_after(true), &provider, sheet());
    assert_eq!(default.series[2].predicted_read, 42_000);
    assert!(!default.series[2].predicted_rewrite);
}

/// Implicit-cache requests (a trajectory's): the whole previous prompt is
/// cached, read in whole blocks, on the backend (chain) that served it.
fn implicit(
    chain: &str,
    at_min: i64,
    messages: &[Message],
    prompt: u64,
    read: u64,
) -> RecordedRequest {
    RecordedRequest {
        implicit_cache: true,
        ..req(chain, at_min, messages, (prompt - read, 0, read))
    }
}

#[test]
fn an_implicit_cache_reads_whole_blocks_of_the_previous_prompt_on_its_backend() {
    let m: Vec<Message> = (0..5)
        .map(|i| Message::user_text(format!("message {i} ").repeat(50)))
        .collect();
    let gemini = Provider::Gemini(crate::cache::provider::Gemini {
        min_tokens: 2_048,
        ..Default::default()
    });
    let run = [
        implicit("vertex", 0, &m[..1], 4_500, 0),
        implicit("vertex", 1, &m[..3], 5_000, 4_034),
        implicit("studio", 2, &m[..5], 6_200, 0),
    ];
    let (_, v) = validate(&run, &gemini, sheet());
    // 4,500 tokens cached hold two 2,017-token blocks; the other backend
    // holds none.
    let reads: Vec<u64> = v.series.iter().map(|c| c.predicted_read).collect();
    assert_eq!(reads, vec![0, 4_034, 0]);
    // Only reads are compared: the model's writes (billed as input) are
    // not recorded by an implicit cache.
    assert_eq!(v.within_5pct, 3, "{v:?}");
    // Sized by the cached tokens alone (a Claude Code log's reading), the
    // first prompt would leave nothing cacheable.
    let tail: Vec<RecordedRequest> = run
        .iter()
        .map(|r| RecordedRequest {
            implicit_cache: false,
            ..r.clone()
        })
        .collect();
    let (_, v) = validate(&tail, &gemini, sheet());
    assert_eq!(v.series[1].predicted_read, 0);
}
