use super::*;
use crate::cache::prices;
use crate::policy::engine::{replay_observed, Env, Session};
use ctxlab_import::generate::synthetic_main;
use ctxlab_zoo::list::make;

fn run(policy: &str, gap_ms: u64) -> CostReport {
    let messages = synthetic_main(30, 20_000);
    let times: Vec<Option<u64>> = (0..messages.len() as u64)
        .map(|i| Some(i * gap_ms))
        .collect();
    let mut observer = CostObserver::new(2_000, Some(&times));
    let mut p = make(policy).unwrap();
    let session = Session {
        name: "syn",
        messages: &messages,
        times_ms: Some(&times),
    };
    replay_observed(
        p.as_mut(),
        session,
        &mut Env::default(),
        &mut [&mut observer],
    )
    .unwrap();
    assert_eq!(
        observer.requests().len(),
        31,
        "one request per assistant message"
    );
    observer.finish(
        &Provider::Anthropic(Default::default()),
        prices::sheet("claude-sonnet-4.5-5m").unwrap(),
    )
}

#[test]
fn the_none_policy_never_breaks_and_reads_its_history() {
    let r = run("none", 30_000);
    assert_eq!((r.breaks, r.expiries), (0, 0));
    assert!(r.cache_read_tokens > 10 * r.cache_write_tokens, "{r:?}");
}

#[test]
fn a_compacting_policy_breaks_and_the_break_names_its_event() {
    let r = run("course-main", 30_000);
    assert!(r.breaks > 0, "{r:?}");
    let label = &r
        .requests
        .iter()
        .find_map(|q| q.break_at.clone())
        .unwrap()
        .label;
    assert!(label.contains(" after "), "{label}");
}

#[test]
fn recorded_times_expire_the_cache() {
    let r = run("none", 400_000);
    assert_eq!(r.expiries, 30);
    assert_eq!(r.cache_read_tokens, 0, "{r:?}");
}
