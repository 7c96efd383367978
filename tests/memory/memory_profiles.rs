//! Store profiles (add-only, git-backed, versioned, two-stage, memory-tool)
//! through the measures: every constant and rule has a source or is named
//! an assumption; each intact profile is clean where its design says it
//! should be; a deliberately broken variant per measure is caught by the
//! counter that measure names; a measure a design cannot fail says n/a.

use std::sync::OnceLock;

use ctxlab::memory::profiles::add_only::AddOnly;
use ctxlab::memory::profiles::git_backed::GitBacked;
use ctxlab::memory::profiles::measures::{
    self, fault_points, growth, kill_points, lost_updates, stale, FaultKind, Measured,
};
use ctxlab::memory::profiles::memory_tool::MemoryToolStore;
use ctxlab::memory::profiles::sources::{self, Basis, RULES};
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

fn listed(name: &str) -> bool {
    RULES.iter().any(|r| r.name == name)
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
fn every_constant_in_the_profiles_is_in_the_sources_list() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("lab/course/memory/profiles");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().unwrap() == "sources.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for line in text.lines() {
            let t = line.trim_start();
            let Some(rest) = ["pub const ", "pub(crate) const ", "const "]
                .iter()
                .find_map(|p| t.strip_prefix(p))
            else {
                continue;
            };
            let name = rest.split(':').next().unwrap().trim();
            seen += 1;
            assert!(
                listed(name),
                "{}: `{name}` has no source or assumption in sources::RULES",
                path.display()
            );
        }
    }
    assert!(seen >= 14, "only {seen} constants found");
}

#[test]
fn every_switch_of_every_profile_is_in_the_sources_list() {
    let switches = [
        ("AddOnly", serde_json::to_value(AddOnly::default()).unwrap()),
        (
            "GitBacked",
            serde_json::to_value(GitBacked::default()).unwrap(),
        ),
        (
            "Versioned",
            serde_json::to_value(Versioned::default()).unwrap(),
        ),
        (
            "TwoStage",
            serde_json::to_value(TwoStage::default()).unwrap(),
        ),
        (
            "MemoryToolStore",
            serde_json::to_value(MemoryToolStore::default()).unwrap(),
        ),
    ];
    for (ty, value) in switches {
        for (field, _) in value.as_object().unwrap() {
            let name = format!("{ty}.{field}");
            assert!(listed(&name), "switch `{name}` is not in sources::RULES");
        }
    }
}

#[test]
fn an_assumption_that_changes_a_result_is_off_by_default() {
    for r in RULES {
        if let Basis::Assumption {
            changes_result: true,
            on_by_default,
            ..
        } = r.basis
        {
            assert!(!on_by_default, "{} {} is on by default", r.profile, r.name);
        }
    }
    // The one such switch today: Mem0's unverified top-10 dedup.
    assert!(!AddOnly::default().dedup);
}

#[test]
fn every_design_states_what_acknowledged_means_with_its_source() {
    for p in profiles() {
        let ack = sources::of(p.name())
            .into_iter()
            .find(|r| r.name == "ack")
            .unwrap_or_else(|| panic!("{} has no ack rule", p.name()));
        assert!(matches!(ack.basis, Basis::Source { .. }), "{ack:?}");
        assert!(
            named(p.name()).acknowledgement.contains('['),
            "{}",
            p.name()
        );
    }
    assert!(named("two-stage")
        .acknowledgement
        .starts_with("nothing is acknowledged"));
}

#[test]
fn the_memory_designs_listing_is_snapshotted() {
    let table = ctxlab::memory::profiles::repro::listing(ctxlab::render::Format::Table);
    insta::assert_snapshot!("memory_designs_listing", table);
    let json: serde_json::Value = serde_json::from_str(&ctxlab::memory::profiles::repro::listing(
        ctxlab::render::Format::Json,
    ))
    .unwrap();
    assert_eq!(json["rules"].as_array().unwrap().len(), RULES.len());
    let repro = &json["reproductions"][0];
    assert_eq!(repro["issue"], "mem0ai/mem0#6911, #7201");
    assert_eq!(repro["verdict"]["kind"], "reproduced", "{repro}");
}

#[test]
fn switches_default_to_the_sourced_design_and_refuse_unknown_fields() {
    assert_eq!(
        serde_json::from_str::<GitBacked>("{}").unwrap(),
        GitBacked::default()
    );
    let g = GitBacked::default();
    assert!(g.commit_every_edit && g.parent_check && !g.reset_on_start);
    assert_eq!(
        serde_json::from_str::<TwoStage>("{}").unwrap(),
        TwoStage::default()
    );
    assert!(!TwoStage::default().atomic_regeneration);
    assert_eq!(
        serde_json::from_str::<Versioned>("{}").unwrap(),
        Versioned::default()
    );
    assert!(AddOnly::default().ack_failed_inserts);
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
fn no_intact_acknowledging_profile_loses_an_acknowledged_memory_at_a_kill() {
    for m in all() {
        let r = &m.kill;
        assert!(r.points > 10, "{}: {r:?}", m.profile);
        assert_eq!(r.losing_at_restart, 0, "{}: {r:?}", m.profile);
        assert_eq!(r.losing_after_consolidation, 0, "{}: {r:?}", m.profile);
    }
    assert_eq!(
        named("two-stage").kill.acknowledged,
        0,
        "Codex acknowledges nothing"
    );
    assert!(named("git-backed").kill.acknowledged > 0);
}

#[test]
fn codex_regenerating_memory_md_in_place_regresses_recall_until_the_next_consolidation() {
    // Upstream: MEMORY.md removed, then rewritten in place. Right after a
    // kill in that window recall has lost what it showed; a consolidation
    // from the state-database rows repairs it.
    let r = &named("two-stage").kill;
    assert!(r.regressed > 0, "{r:?}");
    assert!(r.samples[0].starts_with("point "), "{r:?}");
    let atomic = kill_points(&TwoStage {
        atomic_regeneration: true,
        ..TwoStage::default()
    });
    assert_eq!(atomic.regressed, 0, "{atomic:?}");
    // The intact acknowledging designs never regress at a kill.
    for name in ["git-backed", "versioned", "memory-tool"] {
        assert_eq!(
            named(name).kill.regressed,
            0,
            "{name}: {:?}",
            named(name).kill
        );
    }
}

#[test]
fn mem0_6911_an_add_whose_insert_failed_is_acknowledged_and_lost() {
    // mem0ai/mem0#6911, #7201: the failed insert is returned as ADD.
    for kind in [FaultKind::IoError, FaultKind::FullDisk] {
        let r = fault_points(&AddOnly::default(), kind);
        assert!(
            r.losing_at_restart > 0 && r.lost_at_restart > 0,
            "{kind:?}: {r:?}"
        );
        assert_eq!(
            r.losing_after_consolidation, r.losing_at_restart,
            "no consolidation repairs it"
        );
        let fixed = fault_points(
            &AddOnly {
                ack_failed_inserts: false,
                ..AddOnly::default()
            },
            kind,
        );
        assert_eq!(fixed.losing_at_restart, 0, "{kind:?}: {fixed:?}");
    }
    assert!(named("add-only").io_error.losing_at_restart > 0);
}

#[test]
fn letta_recovery_keeps_uncommitted_edits_and_a_reset_loses_them() {
    let late_commits = GitBacked {
        commit_every_edit: false,
        ..GitBacked::default()
    };
    let kept = kill_points(&late_commits);
    assert_eq!(
        kept.losing_at_restart, 0,
        "git pull --ff-only keeps them: {kept:?}"
    );
    let reset = kill_points(&GitBacked {
        reset_on_start: true,
        ..late_commits
    });
    assert!(reset.losing_at_restart > 0, "{reset:?}");
    assert!(
        reset.lost_at_restart >= reset.losing_at_restart,
        "{reset:?}"
    );
}

#[test]
fn intact_acknowledging_profiles_lose_nothing_at_an_io_error_or_a_full_disk() {
    for name in ["git-backed", "versioned", "memory-tool"] {
        let m = named(name);
        for r in [&m.io_error, &m.full_disk] {
            assert!(r.points > 10, "{name}: {r:?}");
            assert_eq!(r.losing_at_restart, 0, "{name}: {r:?}");
        }
    }
}

#[test]
fn a_superseded_fact_is_gone_after_the_consolidations_each_design_needs() {
    let gone = |name: &str| named(name).stale.gone_after;
    assert_eq!(
        gone("add-only"),
        None,
        "ADD only: both facts are kept, by design"
    );
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
    assert_eq!(r.limits_not_applicable, None);
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
fn add_only_keeps_every_repeat_and_the_assumed_dedup_skips_them() {
    let kept = &named("add-only").growth;
    let dedup = growth(&AddOnly {
        dedup: true,
        ..AddOnly::default()
    });
    // Three facts a session; the repeated one is skipped only with dedup.
    assert_eq!(kept.files, 3_000, "{kept:?}");
    assert_eq!(dedup.files, 2_001, "{dedup:?}");
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
fn writers_without_a_precondition_or_a_merge_check_lose_updates() {
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
fn a_measure_a_design_cannot_fail_says_na_never_zero() {
    let table = ctxlab::reports::memory_profiles::memory_profiles_table(all());
    let col = |name: &str| table.columns.iter().position(|c| c == name).unwrap();
    let row = |p: &str| {
        table
            .rows
            .iter()
            .find(|r| matches!(&r[0], ctxlab::reports::Cell::Text(t) if t == p))
            .unwrap()
    };
    let text = |c: &ctxlab::reports::Cell| match c {
        ctxlab::reports::Cell::Text(t) => t.clone(),
        other => format!("{other:?}"),
    };
    let kill = col("kill: acknowledged lost at restart");
    assert!(text(&row("two-stage")[kill]).starts_with("n/a: "));
    let lost = col("interleavings losing");
    for p in ["add-only", "two-stage", "memory-tool"] {
        assert!(text(&row(p)[lost]).starts_with("n/a: "), "{p}");
    }
    assert!(text(&row("git-backed")[lost]).starts_with("0/"));
    let over = col("sessions over a limit");
    assert!(text(&row("git-backed")[over]).starts_with("n/a: "));
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

#[test]
fn each_upstream_issue_row_has_a_verdict_matching_its_report() {
    use ctxlab::memory::profiles::repro::{reproductions, ReproVerdict};
    let rows = reproductions();
    let mem0 = rows
        .iter()
        .find(|r| r.issue.starts_with("mem0ai/mem0#6911"))
        .unwrap();
    // The issue reports ADD returned for never-persisted memories: the run shows it.
    assert!(
        matches!(&mem0.verdict, ReproVerdict::Reproduced(how) if how.contains("returned as ADD")),
        "{mem0:?}"
    );
    assert!(mem0.command.contains("memory_profiles::mem0_6911"));
    // A row either names the test that reproduces it, or says what it would
    // need with no command.
    for r in &rows {
        match &r.verdict {
            ReproVerdict::NotModelled(_) => assert_eq!(r.command, "-", "{r:?}"),
            _ => assert!(
                r.command
                    .starts_with("cargo test --test memory memory_profiles::"),
                "{r:?}"
            ),
        }
    }
    for issue in [
        "letta-ai/letta-code#2203",
        "letta-ai/letta-code#2203 (two agents)",
    ] {
        let r = rows.iter().find(|r| r.issue == issue).unwrap();
        assert!(matches!(r.verdict, ReproVerdict::Reproduced(_)), "{r:?}");
    }
}

#[test]
fn letta_2203_a_server_rewriting_history_wipes_what_the_agent_committed() {
    use ctxlab::memory::profiles::git_remote::Sync;
    use ctxlab::memory::profiles::repro::letta_server_backfill;
    let rewritten = letta_server_backfill(true).unwrap();
    // Every turn's commit reached the server before the rewrite.
    assert_eq!(rewritten.acknowledged, 4, "{rewritten:?}");
    assert_eq!(
        rewritten.syncs[..4],
        [Sync::Pushed, Sync::Pushed, Sync::Pushed, Sync::Pushed]
    );
    // No merge base: the start-up pull resets the clone to the server's tree.
    assert_eq!(rewritten.syncs[4], Sync::ResetToRemote, "{rewritten:?}");
    assert_eq!(rewritten.lost_from_recall, 4, "{rewritten:?}");
    assert_eq!(rewritten.lost_from_server, 4, "{rewritten:?}");
    // The same backfill added on top of main fast-forwards and keeps all.
    let appended = letta_server_backfill(false).unwrap();
    assert_eq!(appended.syncs[4], Sync::FastForward, "{appended:?}");
    assert_eq!(appended.lost_from_recall, 0, "{appended:?}");
    assert_eq!(appended.lost_from_server, 0, "{appended:?}");
}

#[test]
fn letta_2203_two_agents_on_one_repository() {
    use ctxlab::memory::profiles::git_remote::Sync;
    use ctxlab::memory::profiles::repro::letta_two_agents;
    // Same file: B's rebase conflicts, its fact reaches neither the server nor A.
    let same = letta_two_agents("project", false).unwrap();
    assert_eq!(
        same.syncs[2],
        Sync::Conflict("project.md".into()),
        "{same:?}"
    );
    assert_eq!(same.lost_from_server, 1, "{same:?}");
    assert_eq!(same.lost_from_recall, 1, "{same:?}");
    // Separate files: B rebases onto A's commit and both reach A.
    let apart = letta_two_agents("user", false).unwrap();
    assert_eq!(apart.syncs[2], Sync::Pushed, "{apart:?}");
    assert_eq!(apart.syncs[3], Sync::FastForward, "{apart:?}");
    assert_eq!((apart.lost_from_server, apart.lost_from_recall), (0, 0));
    // A writer that force-pushes erases A's pushed commit from the server;
    // A's own pull then conflicts and keeps its clone.
    let forced = letta_two_agents("project", true).unwrap();
    assert_eq!(forced.lost_from_server, 1, "{forced:?}");
    assert!(
        matches!(forced.syncs[3], Sync::PullFailed(ref why) if why.contains("project.md")),
        "{forced:?}"
    );
}

#[test]
fn every_profile_and_measure_has_a_caught_mutant_or_a_reason() {
    use ctxlab::memory::profiles::mutants::{matrix, MUTANTS};
    use ctxlab::memory::profiles::Measure;
    let cells = matrix();
    assert_eq!(cells.len(), profiles().len() * Measure::ALL.len());
    let mut caught = 0;
    for c in &cells {
        let at = format!("{} x {}", c.profile, c.measure.name());
        match (c.not_applicable, &c.mutant, &c.clean) {
            (Some(why), None, None) => assert!(!why.is_empty(), "{at}"),
            (None, Some(m), Some(clean)) => {
                assert!(m.caught, "{at}: the mutant is not caught: {}", m.counter);
                assert!(
                    !clean.caught,
                    "{at}: the clean variant is flagged: {}",
                    clean.counter
                );
                caught += 1;
            }
            (Some(_), Some(_), _) => panic!("{at}: a mutant for a measure said to be n/a"),
            _ => panic!("{at}: no mutant and no reason the design cannot fail it"),
        }
    }
    // Every mutant belongs to a cell (no stale row naming a gone profile).
    assert_eq!(caught, MUTANTS.len());
    let table = ctxlab::reports::memory_profiles::memory_mutants_table(&cells);
    let files = ctxlab::reports::table_files(&table);
    let md = &files
        .iter()
        .find(|(n, _)| n == "memory_mutants.md")
        .unwrap()
        .1;
    insta::assert_snapshot!("memory_mutants_table", md);
}

#[test]
fn the_mutant_wrappers_break_only_what_they_name() {
    use ctxlab::memory::profiles::mutants::{read, Mutated, Mutation};
    use ctxlab::memory::profiles::Measure;
    // Acknowledging unwritten facts is caught at a kill, not by stale; an
    // update refused as a duplicate is caught by stale, not at a kill.
    let ack = Mutated {
        inner: Box::new(Versioned::default()),
        mutation: Mutation::AckUnwritten,
    };
    assert!(read(&ack, Measure::Kill).caught);
    assert!(!read(&ack, Measure::Stale).caught);
    let old = Mutated {
        inner: Box::new(Versioned::default()),
        mutation: Mutation::UpdateAsDuplicate,
    };
    assert!(read(&old, Measure::Stale).caught);
    assert!(!read(&old, Measure::Kill).caught);
}

#[test]
fn codex_23129_a_start_up_within_a_killed_holders_lease_leaves_no_summary() {
    use ctxlab::memory::profiles::repro::codex_lease;
    use ctxlab::memory::profiles::two_stage::{Claim, JobStatus, PHASE_TWO_JOB_LEASE_SECONDS};
    let (first, within) = codex_lease(600).unwrap();
    assert_eq!(first.claim, Claim::Claimed);
    assert!(!first.artifacts, "killed in stage 2: {first:?}");
    // Within the lease: skipped, the job not done, no artifact.
    assert_eq!(within.claim, Claim::SkippedRunning, "{within:?}");
    assert_eq!(within.job.status, JobStatus::Running);
    assert_eq!(within.job.lease_until, PHASE_TWO_JOB_LEASE_SECONDS);
    assert!(!within.artifacts, "{within:?}");
    // One second before the lease lapses it is still skipped; at the
    // lapse the start-up claims the job and writes both files.
    let (_, just_before) = codex_lease(PHASE_TWO_JOB_LEASE_SECONDS - 1).unwrap();
    assert_eq!(just_before.claim, Claim::SkippedRunning);
    let (_, past) = codex_lease(PHASE_TWO_JOB_LEASE_SECONDS).unwrap();
    assert_eq!(past.claim, Claim::Claimed, "{past:?}");
    assert_eq!(past.job.status, JobStatus::Done);
    assert!(past.artifacts, "{past:?}");
    let rows = ctxlab::memory::profiles::repro::reproductions();
    let row = |issue: &str| {
        rows.iter()
            .find(|r| r.issue == issue)
            .unwrap()
            .verdict
            .clone()
    };
    use ctxlab::memory::profiles::repro::ReproVerdict;
    assert!(matches!(
        row("openai/codex#23129"),
        ReproVerdict::Reproduced(_)
    ));
    // #37097 (pending, no lease) is not what the lease explains.
    assert!(matches!(
        row("openai/codex#37097"),
        ReproVerdict::NotReproduced(_)
    ));
}

#[test]
fn codex_29818_a_stage_2_keeping_rewordings_grows_memory_md() {
    use ctxlab::memory::profiles::repro::codex_bloat;
    let (l12, b12) = codex_bloat(true, 12).unwrap();
    let (l24, b24) = codex_bloat(true, 24).unwrap();
    // One line per session for the one principle, growing with sessions.
    assert_eq!((l12, l24), (12, 24));
    assert!(b24 > b12, "{b12} -> {b24}");
    // The reference consolidation keeps one line for it.
    let (r24, rb24) = codex_bloat(false, 24).unwrap();
    assert_eq!(r24, 1);
    assert!(rb24 < b24, "{rb24} vs {b24}");
}

#[test]
fn codex_summary_cap_hides_the_middle_of_a_long_summary_at_start_up() {
    use ctxlab::memory::profiles::repro::codex_summary_cap;
    use ctxlab::memory::profiles::two_stage::{
        truncate_middle, APPROX_BYTES_PER_TOKEN,
        MEMORY_TOOL_DEVELOPER_INSTRUCTIONS_SUMMARY_TOKEN_LIMIT as CAP,
    };
    let big = codex_summary_cap(1_000, CAP).unwrap();
    assert!(big.bytes > CAP * APPROX_BYTES_PER_TOKEN, "{}", big.bytes);
    // The first and the last facts show; a run in the middle does not.
    assert!(big.shown.contains(&1) && big.shown.contains(&1_000));
    assert!(!big.shown.contains(&500));
    let missing = 1_000 - big.shown.len();
    assert!(missing > 700, "{missing} missing");
    // Every fact shown is from the head or the tail: one gap.
    let gap: Vec<usize> = (1..=1_000).filter(|i| !big.shown.contains(i)).collect();
    assert_eq!(gap.last().unwrap() - gap[0] + 1, gap.len());
    // A summary under the cap shows every fact; a higher cap shows more.
    let small = codex_summary_cap(100, CAP).unwrap();
    assert_eq!(small.shown.len(), 100);
    assert!(codex_summary_cap(1_000, 2 * CAP).unwrap().shown.len() > big.shown.len());
    // The cut itself: head and tail kept on the budget, the marker between.
    let text = "a".repeat(30) + &"b".repeat(30);
    let cut = truncate_middle(&text, 10);
    assert_eq!(
        cut,
        format!("{}…5 tokens truncated…{}", "a".repeat(20), "b".repeat(20))
    );
    assert_eq!(truncate_middle("short", 10), "short");
}

#[test]
fn managed_mount_a_write_acknowledged_before_the_sync_is_lost_at_a_kill() {
    use ctxlab::memory::profiles::repro::managed_mount;
    // Three writes inside the first sync interval, the sandbox killed at 12 s.
    let killed = managed_mount(&[1, 5, 10], Some(12), false).unwrap();
    assert_eq!((killed.acknowledged, killed.lost), (3, 3), "{killed:?}");
    // A write past the interval syncs everything before the kill.
    let synced = managed_mount(&[1, 5, 10, 16], Some(20), false).unwrap();
    assert_eq!((synced.acknowledged, synced.lost), (4, 0), "{synced:?}");
    // A session that ends runs the final sync; the API path loses nothing.
    let ended = managed_mount(&[1, 5, 10], None, false).unwrap();
    assert_eq!(ended.lost, 0, "{ended:?}");
    let api = managed_mount(&[1, 5, 10], None, true).unwrap();
    assert_eq!((api.acknowledged, api.lost), (3, 0), "{api:?}");
}

#[test]
fn managed_two_sessions_writing_one_memory_lose_one_sessions_facts() {
    use ctxlab::memory::profiles::repro::managed_two_sessions;
    // Uploads that replace the memory: A's two facts go (B synced last).
    let replace = managed_two_sessions(false).unwrap();
    assert_eq!(
        (replace.acknowledged, replace.lost, replace.refused),
        (5, 2, 0)
    );
    // Uploads with the synced SHA-256: B's are refused (409), B's two go.
    let guarded = managed_two_sessions(true).unwrap();
    assert_eq!((guarded.lost, guarded.refused), (2, 2), "{guarded:?}");
}

#[test]
fn mem0_pending_an_async_add_is_not_recalled_until_processed() {
    use ctxlab::memory::profiles::repro::mem0_pending;
    use ctxlab::memory::profiles::Ack;
    let (acks, before, after) = mem0_pending(3).unwrap();
    assert_eq!(acks, [Ack::Pending, Ack::Pending, Ack::Pending]);
    assert_eq!((before, after), (0, 3));
    let rows = ctxlab::memory::profiles::repro::reproductions();
    for issue in [
        "Managed Agents mount (docs, no issue)",
        "Managed Agents, two sessions (docs, no issue)",
        "Mem0 platform async add (docs, no issue)",
    ] {
        let r = rows.iter().find(|r| r.issue == issue).unwrap();
        assert!(
            matches!(
                r.verdict,
                ctxlab::memory::profiles::repro::ReproVerdict::Reproduced(_)
            ),
            "{r:?}"
        );
    }
}
