use super::super::claude::FITTED;
use super::super::recorded::Usage;
use super::*;
use crate::message::{Block, Message};

/// A synthetic session whose "true" tokenizer is `truth`: each request adds
/// a prose message and a tool result; recorded totals are the exact sums.
fn synthetic(name: &str, truth: &Coefficients, n: usize, seed: usize) -> Session {
    let mut messages = Vec::new();
    let mut requests = Vec::new();
    for i in 0..n {
        let prose = "word ".repeat(10 + (i * 37 + seed) % 200);
        // Varied numbers, so that the o200k count grows with the length
        // (a run of one letter would merge into a handful of tokens).
        let out: String = (0..3 + (i * 13 + seed) % 60)
            .map(|j| format!("{}:{} ", j, (j * 7919 + i) % 1000))
            .collect();
        messages.push(Message::assistant(vec![Block::Text { text: prose }]));
        messages.push(Message::tool_results(vec![(format!("t{i}"), out)]));
        let total = 5_000.0 + Features::of(&messages).tokens(truth);
        requests.push(RecordedRequest {
            id: String::new(),
            chain: "root".into(),
            sidechain: false,
            model: "m".into(),
            at_ms: None,
            sent_ms: None,
            resent_units: 0.0,
            prompts_after_stop_hook: 0,
            line: None,
            messages: messages.clone().into(),
            billing: Default::default(),
            charged: None,
            implicit_cache: false,
            usage: Usage {
                input_tokens: total.round() as u64,
                ..Usage::default()
            },
        });
    }
    Session {
        name: name.into(),
        requests,
    }
}

#[test]
fn the_fit_recovers_known_rates_and_scores_them_near_zero() {
    let truth = Coefficients::from_array([0.25, 0.0, 0.4, 0.0, 0.0, 6.0]);
    let sessions: Vec<Session> = (0..3)
        .map(|s| synthetic(&format!("s{s}"), &truth, 40, s))
        .collect();
    let all: Vec<_> = sessions.iter().flat_map(samples).collect();
    assert_eq!(all.len(), 3 * 39);
    let k = fit(&all);
    assert!((k.text - 0.25).abs() < 0.01, "{k:?}");
    assert!((k.tool_result - 0.4).abs() < 0.01, "{k:?}");
    let h = holdout(&sessions);
    assert_eq!(h.one_step.n, 3 * 39);
    assert!(h.one_step.p95 < 0.001 && h.cumulative.p95 < 0.001, "{h:?}");
    // A wrong rate is visible in the score.
    let wrong = Coefficients::from_array([0.5, 0.0, 0.8, 0.0, 0.0, 6.0]);
    assert!(Spread::of(&score(&sessions[0], &wrong).cumulative).median > 0.05);
}

#[test]
fn spread_uses_nearest_rank() {
    let s = Spread::of(&[0.4, 0.1, 0.3, 0.2]);
    assert_eq!((s.n, s.median, s.p95), (4, 0.2, 0.4));
    assert_eq!(Spread::of(&[]).n, 0);
}

/// The shared sessions, loaded once per test process.
fn shared() -> Option<&'static [Session]> {
    static SESSIONS: std::sync::OnceLock<Option<Vec<Session>>> = std::sync::OnceLock::new();
    let loaded = SESSIONS.get_or_init(|| {
        let dir = shared_transcripts()?;
        Some(load_dir(&dir.join("claude_code")).expect("shared sessions load"))
    });
    if loaded.is_none() {
        eprintln!("skipped: no shared/transcripts/claude_code (set CTXLAB_TRANSCRIPTS)");
    }
    loaded.as_deref()
}

/// The sessions [`FITTED`] was fitted on. Sessions added to the shared
/// directory later are scored held-out below but do not move the constants:
/// three of them compact, and a growth pair across a compaction is no growth
/// of one request (splitting conversations there belongs with the session
/// envelope, which sizes each conversation after a compaction on its own).
const FIT_SET: &[&str] = &[
    "attio-mcp-server__chat@816b68a.json",
    "claude-code-viewer__fe5e1c67.jsonl",
    "dmux__chat@eef6c28.json",
    "session-share__general-tool-calls.jsonl",
    "templar__chat@a46211b.json",
];

fn fit_set(sessions: &[Session]) -> Vec<&Session> {
    let set: Vec<&Session> = sessions
        .iter()
        .filter(|s| FIT_SET.contains(&s.name.as_str()))
        .collect();
    assert_eq!(set.len(), FIT_SET.len(), "a fitting session is missing");
    set
}

#[test]
fn fitted_constants_are_reproduced() {
    let Some(sessions) = shared() else { return };
    let all: Vec<_> = fit_set(sessions).into_iter().flat_map(samples).collect();
    let k = fit(&all);
    for (got, pinned) in k.as_array().iter().zip(FITTED.as_array()) {
        assert!(
            (got - pinned).abs() < 1e-3,
            "refit {k:?} != FITTED {FITTED:?}"
        );
    }
}

#[test]
fn held_out_error_is_pinned() {
    let Some(sessions) = shared() else { return };
    let fitted: Vec<Session> = fit_set(sessions).into_iter().cloned().collect();
    let h = holdout(&fitted);
    // On the fitting set: 0.07 % / 1.0 % one-step; cumulative 2.07 % /
    // 12.4 % (the median meets the 3 % target, the p95 is above 8 %: one
    // session whose Claude Code 1.0.70 attaches files' contents without
    // logging them).
    assert_eq!(h.one_step.n, 777);
    assert!(h.one_step.median <= 0.03 && h.one_step.p95 <= 0.08, "{h:?}");
    assert!((h.cumulative.median - 0.0207).abs() < 0.002, "{h:?}");
    assert!((h.cumulative.p95 - 0.1245).abs() < 0.005, "{h:?}");
    // Every shared session, each scored by a fit without it: the one-step
    // error holds (0.12 % / 1.1 %), the cumulative one does not (3.1 % /
    // 26.6 %). The sessions with a real compaction carry it: their
    // cumulative error runs from the first request across the compaction,
    // where the product's summary and re-attached files replace the logged
    // history (the fixed prefix of each conversation is not modelled yet).
    let all = holdout(sessions);
    assert_eq!(all.one_step.n, 1252);
    assert!(
        all.one_step.median <= 0.03 && all.one_step.p95 <= 0.08,
        "{all:?}"
    );
    assert!((all.cumulative.median - 0.0311).abs() < 0.002, "{all:?}");
    assert!((all.cumulative.p95 - 0.2662).abs() < 0.005, "{all:?}");
}

/// Prints a refit and the held-out figures (for updating FITTED and GUIDE.md).
#[test]
#[ignore]
fn print_fit() {
    let Some(sessions) = shared() else { return };
    let all: Vec<_> = sessions.iter().flat_map(samples).collect();
    println!(
        "requests {} samples {}",
        sessions.iter().map(|s| s.requests.len()).sum::<usize>(),
        all.len()
    );
    println!("{:?}", fit(&all));
    let h = holdout(sessions);
    for row in &h.sessions {
        println!("{row:?}");
    }
    println!("one-step {:?}\ncumulative {:?}", h.one_step, h.cumulative);
    // GUIDE.md also quotes the pooled figure without the Claude Code
    // 1.0.70 session, each session still fitted without itself.
    let mut rest = Vec::new();
    for (i, held) in sessions.iter().enumerate() {
        if held.name.starts_with("attio") {
            continue;
        }
        rest.extend(score(held, &fit_without(sessions, i)).cumulative);
    }
    println!("cumulative without attio {:?}", Spread::of(&rest));
}

/// A session whose requests each carry `extra` unlogged tokens per step,
/// plus a 20,000-token injection at one step (a changed file's contents).
fn with_unlogged(truth: &Coefficients, extra: f64, seed: usize) -> Session {
    let mut s = synthetic(&format!("u{seed}"), truth, 60, seed);
    let mut added = 0.0;
    for (i, r) in s.requests.iter_mut().enumerate() {
        added += extra + if i == 30 { 20_000.0 } else { 0.0 };
        r.usage.input_tokens += added as u64;
    }
    s
}

#[test]
fn the_overhead_takes_the_steady_unlogged_share_but_not_the_spikes() {
    let truth = Coefficients::from_array([0.25, 0.0, 0.4, 0.0, 0.0, 6.0]);
    let sessions: Vec<Session> = (0..3).map(|s| with_unlogged(&truth, 30.0, s)).collect();
    let all: Vec<_> = sessions.iter().flat_map(samples).collect();
    let k = fit(&all);
    // 30 tokens per step of two messages: 15 more per message.
    assert!((k.per_message - 21.0).abs() < 1.5, "{k:?}");
    assert!((k.text - 0.25).abs() < 0.01, "{k:?}");
    // Without the overhead the summed estimate drifts by 30 tokens a step.
    let mut bare = k;
    bare.per_message = 6.0;
    let drift = |k: &Coefficients| {
        let e = score(&sessions[0], k).cumulative;
        e[..29].iter().copied().fold(0.0, f64::max)
    };
    assert!(drift(&k) < 0.01 && drift(&bare) > 0.05, "{k:?}");
}
