//! Store profiles (add-only, git-backed, versioned, two-stage, memory-tool) through the
//! four measures: each intact profile is clean where its design says it
//! should be, and a deliberately broken variant per measure is caught by
//! the counter that measure names.

use std::sync::OnceLock;

use ctxlab::memory::profiles::add_only::AddOnly;
use ctxlab::memory::profiles::git_backed::GitBacked;
use ctxlab::memory::profiles::measures::{
    self, growth, kill_points, lost_updates, stale, Measured,
};
use ctxlab::memory::profiles::memory_tool::MemoryToolStore;
use ctxlab::memory::profiles::two_stage::TwoStage;
use ctxlab::memory::profiles::versioned::{self, Versioned};
use ctxlab::memory::profiles::{merged, profiles};

/// Every registered profile measured once (the growth of every design
/// over 1,000 sessions is the slow part), shared by the tests below.
fn all() -> &'static [Measured] {
    static ALL: OnceLock<Vec<Measured>> = OnceLock::new();
    ALL.get_or_init(measures::measure_all)
}

fn named(name: &str) -> &'static Measured {
    all().iter().find(|m| m.profile == name).unwrap()
}

#[test]
fn the_registry_holds_every_profile_with_distinct_names() {
    let names: Vec<&str> = profiles().iter().map(|p| p.name()).collect();
    assert_eq!(
        names,
        [
            "add-only",
            "git-backed",
            "versioned",
            "two-stage",
            "memory-tool"
        ]
    );
}

#[test]
fn switches_default_to_the_documented_design_and_refuse_unknown_fields() {
    assert_eq!(
        serde_json::from_str::<GitBacked>("{}").unwrap(),
        GitBacked::default()
    );
    assert!(GitBacked::default().commit_every_edit && GitBacked::default().parent_check);
    assert_eq!(
        serde_json::from_str::<TwoStage>("{}").unwrap(),
        TwoStage::default()
    );
    assert_eq!(
        serde_json::from_str::<Versioned>("{}").unwrap(),
        Versioned::default()
    );
    assert!(AddOnly::default().dedup);
    let e = serde_json::from_str::<Versioned>(r#"{"limits": false}"#).unwrap_err();
    assert!(e.to_string().contains("unknown field `limits`"), "{e}");
}

#[test]
fn consolidation_keeps_the_newest_value_unless_told_otherwise() {
    let l = |k: &str, v: &str| (k.to_string(), v.to_string());
    let lines = [l("a", "1"), l("b", "2"), l("a", "3")];
    assert_eq!(merged(&lines, true), [l("a", "3"), l("b", "2")]);
    assert_eq!(merged(&lines, false), [l("a", "1"), l("b", "2")]);
}

#[test]
fn a_ninth_store_in_one_session_is_refused() {
    assert!(versioned::attach_stores(versioned::MAX_STORES_PER_SESSION).is_ok());
    let e = versioned::attach_stores(9).unwrap_err();
    assert!(e.contains("at most 8"), "{e}");
}

#[test]
fn no_intact_profile_loses_an_acknowledged_memory_at_any_kill_point() {
    for m in all() {
        let r = &m.kill;
        assert!(r.points > 10, "{}: {r:?}", m.profile);
        assert_eq!(r.losing, 0, "{}: {r:?}", m.profile);
    }
}

#[test]
fn acknowledging_an_edit_before_its_commit_loses_it_at_kill_points() {
    let broken = GitBacked {
        commit_every_edit: false,
        ..GitBacked::default()
    };
    let r = kill_points(&broken);
    assert!(r.losing > 0 && r.lost >= r.losing, "{r:?}");
    assert!(r.samples[0].starts_with("point "), "{r:?}");
}

#[test]
fn a_superseded_fact_is_gone_after_the_consolidations_each_design_needs() {
    let gone = |name: &str| named(name).stale.gone_after;
    assert_eq!(gone("add-only"), None, "ADD only: both facts are kept");
    assert_eq!(gone("git-backed"), Some(1));
    assert_eq!(gone("versioned"), Some(0), "an edit replaces the line");
    assert_eq!(gone("two-stage"), Some(1));
    assert_eq!(gone("memory-tool"), Some(0), "str_replace edits the line");
}

#[test]
fn a_memory_tool_model_that_only_inserts_keeps_the_stale_fact() {
    let r = stale(&MemoryToolStore {
        edit_in_place: false,
    });
    assert_eq!(r.gone_after, None, "{r:?}");
}

#[test]
fn a_consolidation_preferring_older_guidance_keeps_the_stale_fact() {
    let broken = TwoStage {
        prefer_newer: false,
        ..TwoStage::default()
    };
    let r = stale(&broken);
    assert_eq!(r.gone_after, None, "{r:?}");
    assert_eq!(r.consolidations, measures::STALE_CONSOLIDATIONS);
}

#[test]
fn the_versioned_store_refuses_past_its_limits_and_never_ends_past_one() {
    let r = &named("versioned").growth;
    assert_eq!(r.sessions, 1_000);
    assert!(r.refused > 0, "the journal passes 100 KB: {r:?}");
    assert_eq!(r.over_limit, 0, "{r:?}");
    assert!(r.versions.unwrap() > 2_000, "{r:?}");
}

#[test]
fn a_versioned_store_without_its_limits_ends_sessions_past_them() {
    let broken = Versioned {
        enforce_limits: false,
        ..Versioned::default()
    };
    let r = growth(&broken);
    assert_eq!(r.refused, 0, "{r:?}");
    assert!(r.over_limit > 0, "{r:?}");
    assert!(
        r.over_limit_sample.as_deref().unwrap().contains("bytes"),
        "{r:?}"
    );
}

#[test]
fn add_only_growth_counts_every_new_fact_and_dedup_skips_repeats() {
    let kept = &named("add-only").growth;
    let repeats = growth(&AddOnly { dedup: false });
    // Two new facts a session (the build step, the journal line) plus the one repeated fact.
    assert_eq!(kept.files, 2_001, "{kept:?}");
    assert_eq!(repeats.files, 3_000, "{repeats:?}");
    assert_eq!(kept.versions, None);
}

#[test]
fn intact_consolidators_lose_no_update_in_any_interleaving() {
    for m in all() {
        let r = &m.lost_updates;
        assert!(r.interleavings > 1, "{}: {r:?}", m.profile);
        assert_eq!(r.losing, 0, "{}: {r:?}", m.profile);
    }
}

#[test]
fn writers_without_a_precondition_or_a_parent_check_lose_updates() {
    let versioned = lost_updates(&Versioned {
        precondition: false,
        ..Versioned::default()
    });
    assert!(versioned.losing > 0 && versioned.lost > 0, "{versioned:?}");
    let git = lost_updates(&GitBacked {
        parent_check: false,
        ..GitBacked::default()
    });
    assert!(git.losing > 0, "{git:?}");
    assert!(
        git.samples[0].ends_with(": lint") || git.samples[0].ends_with(": test"),
        "{git:?}"
    );
}

#[test]
fn the_report_table_is_a_pure_function_of_the_results() {
    let table = ctxlab::reports::memory_profiles::memory_profiles_table(all());
    assert_eq!(table.rows.len(), 5);
    let files = ctxlab::reports::table_files(&table);
    let md = &files
        .iter()
        .find(|(n, _)| n == "memory_profiles.md")
        .unwrap()
        .1;
    insta::assert_snapshot!("memory_profiles_table", md);
}
