//! The cheapest schedule is a lower bound: on every shared session, every
//! registered policy's dollars are at least the cheapest schedule's at the
//! policy's own artifact recall (regret >= 0), under the default cache
//! model, each session priced at its own model as `lab replay` prices it.

use crate::common;
use common::{transcript_files, transcripts};

use ctxlab::import::ImportOptions;
use ctxlab::replay::optimal::{compute, OptimalArgs};
use ctxlab::replay::policies::{replay_files_on, Measure, Pricing};

#[test]
fn regret_is_never_negative_for_any_policy_on_any_shared_session() {
    let Some(dir) = transcripts() else { return };
    let measure = Measure {
        retention: true,
        pricing: Some(Pricing {
            provider: ctxlab::cache::provider::CacheChoice::Anthropic.provider(),
            sheet: ctxlab::cache::prices::sheet(ctxlab::cache::prices::DEFAULT_SHEET)
                .unwrap()
                .clone(),
            prices: ctxlab::replay::cost_arms::load_prices(None).unwrap(),
            // Each session at its own model, as `lab replay` prices it: the
            // bound must be priced the same way.
            by_model: true,
        }),
        // Every policy on the subagents too would multiply this test's
        // time; tests/cost/subagents.rs checks their regret.
        conversations: ctxlab::replay::subagents::Conversations {
            main_chain_only: true,
        },
        ..Measure::default()
    };
    let args = OptimalArgs {
        floor: 0.0,
        limit: None,
    };
    let import = ImportOptions::default();
    let all = vec!["all".to_string()];
    let mut checked = 0;
    let mut files = transcript_files(&dir);
    // A debug build replays every policy with retention on the larger logs
    // for many minutes; `make replay` (release, `--optimal`) reports the
    // regret of every policy on every shared session, and this test under
    // --release checks them all.
    if cfg!(debug_assertions) {
        files.retain(|f| std::fs::metadata(f).is_ok_and(|m| m.len() < 1_000_000));
        eprintln!(
            "debug build: only the sessions under 1 MB ({})",
            files.len()
        );
    }
    for file in files {
        let files = [file.clone()];
        let (out, _) = replay_files_on(
            &files,
            &all,
            ctxlab::replay::profiles::DEFAULT_PATH_LEN,
            &import,
            &measure,
            2,
        )
        .unwrap();
        let part = compute(&files, &import, &measure, args, &out).unwrap();
        for (c, r) in out.iter().zip(&part.regret) {
            if c.run.ended_by_error.is_some() {
                continue;
            }
            let r = r
                .as_ref()
                .unwrap_or_else(|| panic!("{}: {} has no bound", c.run.session, c.run.policy));
            assert!(
                r.dollars >= -1e-9 * r.bound.max(1.0),
                "{} under {}: {} dollars, bound {} at recall {}",
                c.run.session,
                c.run.policy,
                r.bound + r.dollars,
                r.bound,
                r.floor
            );
            checked += 1;
        }
    }
    assert!(checked > 100, "{checked} runs checked");
}
