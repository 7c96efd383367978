//! The cheapest schedule: the dynamic program against every schedule, and
//! its price against the cache model's.

use ctxlab::cache::{prices, provider, PriceSheet, Provider};
use ctxlab::message::{Block, Message};
use ctxlab::optimal::archive::Archive;
use ctxlab::optimal::{brute, dp, max_cleared, recall_at_end, Problem, Shape};
use ctxlab::tokens::{Approx, TokenCounter};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha12Rng;

/// A small session: a prompt, then calls with one or two tool uses each,
/// results of random sizes, now and then a user prompt; times when `timed`.
fn session(rng: &mut ChaCha12Rng, calls: usize) -> (Vec<Message>, Vec<Option<u64>>) {
    let mut out = vec![Message::user_text(format!("task {}", rng.gen::<u32>()))];
    let mut id = 0;
    for _ in 0..calls {
        let uses = rng.gen_range(0..=2);
        let mut blocks = vec![Block::Text {
            text: format!("step {}", rng.gen::<u32>()),
        }];
        let mut results = Vec::new();
        for _ in 0..uses {
            id += 1;
            blocks.push(Block::ToolUse {
                id: format!("t{id}"),
                name: "read".into(),
                input: serde_json::json!({ "path": format!("src/f{id}.rs") }).into(),
            });
            let size = rng.gen_range(10..6_000);
            let body: String = (0..size)
                .map(|_| rng.gen_range(b'a'..=b'z') as char)
                .collect();
            let error = if rng.gen_bool(0.5) {
                format!("\nerror: case {id} failed at line {}", rng.gen::<u16>())
            } else {
                String::new()
            };
            results.push((format!("t{id}"), format!("/tmp/f{id}.rs {body}{error}")));
        }
        out.push(Message::assistant(blocks));
        if !results.is_empty() {
            out.push(Message::tool_results(results));
        }
        if rng.gen_bool(0.2) {
            out.push(Message::user_text(format!("more {}", rng.gen::<u32>())));
        }
    }
    let mut t = 0;
    let times = out
        .iter()
        .map(|_| {
            t += rng.gen_range(0..200_000u64);
            Some(t)
        })
        .collect();
    (out, times)
}

fn provider_of(rng: &mut ChaCha12Rng) -> (Provider, PriceSheet) {
    match rng.gen_range(0..4) {
        0 => (
            Provider::Anthropic(Default::default()),
            prices::sheet("claude-sonnet-4.5-5m").unwrap().clone(),
        ),
        1 => (
            Provider::Anthropic(provider::Anthropic {
                lookback: 3,
                min_tokens: 2_048,
                ..Default::default()
            }),
            prices::sheet("claude-opus-4.1-5m").unwrap().clone(),
        ),
        2 => (
            Provider::OpenAi(Default::default()),
            prices::sheet("gpt-5").unwrap().clone(),
        ),
        _ => (
            Provider::Gemini(Default::default()),
            prices::sheet("gpt-4.1").unwrap().clone(),
        ),
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12)
}

#[test]
fn the_program_equals_every_schedule_on_200_generated_sessions() {
    let mut rng = ChaCha12Rng::seed_from_u64(0x0b7);
    let (mut infeasible, mut compacting, mut floored) = (0, 0, 0);
    let mut archive_checked = 0;
    for case in 0..200 {
        let calls = rng.gen_range(1..=9);
        let (messages, times) = session(&mut rng, calls);
        let (provider, sheet) = provider_of(&mut rng);
        let none_peak = Approx.count_messages(&messages) as u64;
        let limit = rng
            .gen_bool(0.3)
            .then(|| rng.gen_range(none_peak / 4..=none_peak + 1_000));
        let p = Problem {
            messages: &messages,
            times_ms: rng.gen_bool(0.6).then_some(&times[..]),
            envelope: [0, 900, 3_000][rng.gen_range(0..3)],
            provider,
            sheet: sheet.clone(),
            limit,
        };
        let shape = Shape::new(&p, &Approx);
        let total = shape.results_before.last().copied().unwrap_or(0);
        // A recall floor in percent, as the measure gives it.
        let floor = if rng.gen_bool(0.4) {
            rng.gen_range(0.0..100.0)
        } else {
            0.0
        };
        let keep = rng.gen_range(0..=3);
        let end_ok = |c: usize| recall_at_end(&messages, &[], c) >= floor;
        let brute = brute::cheapest(&shape, &p, keep, &end_ok, &Approx);
        let cap = max_cleared(&messages, &[], floor, total);
        let fast = cap.and_then(|cap| dp::cheapest(&shape, &p, keep, cap));
        match (&brute, &fast) {
            (None, None) => infeasible += 1,
            (Some(b), Some(f)) => {
                assert!(
                    close(b.dollars, f.dollars),
                    "case {case}: brute force {} ({:?}) != program {} ({:?})",
                    b.dollars,
                    b.points,
                    f.dollars,
                    f.points
                );
                // The program's own schedule, priced by the cache model.
                let cleared = ctxlab::optimal::cleared_per_call(&shape, keep, &f.points);
                let priced =
                    ctxlab::cache::cost(&shape.requests(&cleared, &Approx), &provider, &sheet);
                assert!(
                    close(priced.dollars, f.dollars),
                    "case {case}: priced {} != {}",
                    priced.dollars,
                    f.dollars
                );
                assert!(limit.is_none_or(|l| f.peak_tokens <= l));
                assert!(end_ok(f.cleared), "case {case}: the floor");
                compacting += usize::from(!f.points.is_empty());
                archive_checked += archive_matches(&shape, &p, case);
                floored += usize::from(floor > 0.0 && cap < Some(total));
            }
            _ => panic!("case {case}: brute force {brute:?}, program {fast:?}"),
        }
    }
    // The generated cases reach every branch: infeasible ones, schedules
    // that compact, and floors that bind.
    assert!(infeasible >= 5, "{infeasible} infeasible");
    assert!(compacting >= 20, "{compacting} compacting");
    assert!(floored >= 5, "{floored} floored");
    assert!(archive_checked >= 100, "{archive_checked} archive cases");
}

/// The archive program equals every archive schedule at every keep of a
/// few; its own schedule priced by the cache model equals its dollars.
/// Returns how many keeps had a feasible schedule.
fn archive_matches(shape: &Shape<'_>, p: &Problem<'_>, case: usize) -> usize {
    let mut feasible = 0;
    for &m in &[0, 3] {
        let arch = Archive::new(shape, m, &Approx);
        let fast = arch.cheapest(p);
        let slow = brute::cheapest_archive(&arch, shape, p, &Approx);
        match (&fast, slow) {
            (None, None) => {}
            (Some(f), Some(b)) => {
                assert!(
                    close(f.dollars, b),
                    "case {case} keep {m}: program {} ({:?}) != brute force {b}",
                    f.dollars,
                    f.points
                );
                let mut last = None;
                let lasts: Vec<Option<usize>> = (0..shape.n())
                    .map(|i| {
                        if f.points.contains(&i) {
                            last = Some(i);
                        }
                        last
                    })
                    .collect();
                let priced =
                    ctxlab::cache::cost(&arch.requests(&lasts, &Approx), &p.provider, &p.sheet);
                assert!(
                    close(priced.dollars, f.dollars),
                    "case {case} keep {m}: priced"
                );
                feasible += 1;
            }
            _ => panic!("case {case} keep {m}: program {fast:?}, brute force {slow:?}"),
        }
    }
    feasible
}
