//! `lab hunt`: the shrunk counterexample of a broken side, or a policy's
//! shrunk damaging session.

use crate::compact::{config, probe};
use crate::error::{LabError, LabResult};
use crate::experiments;
use crate::render::{self, Format};
use crate::report;

/// `lab hunt --policy NAME --out FILE`: the shrunk damaging session, written
/// as a JSON message list.
pub fn hunt_policy(
    policy: &str,
    seed: u64,
    tries: usize,
    out: Option<std::path::PathBuf>,
) -> LabResult<String> {
    let out =
        out.ok_or_else(|| LabError::usage("--policy needs --out FILE", "add --out hunt.json"))?;
    crate::input::output_parent_exists(&out, "--out")?;
    let Some((rounds, row)) = crate::sweep::policies::hunt(policy, seed, tries)? else {
        return Ok(format!(
            "hunt: no damaging session for {policy} in seeds {seed}..{}\n",
            seed.saturating_add(tries as u64)
        ));
    };
    let messages = crate::sweep::policies::session(&rounds);
    let text = serde_json::to_string_pretty(&messages).expect("messages serialise") + "\n";
    crate::storage::root::cleanup::write_replacing(&out, text.as_bytes())
        .map_err(|e| LabError::io("writing the session", &out, e))?;
    Ok(format!(
        "hunt: {policy} damages seed {} shrunk to {} rounds: lost {}, pointer lost {}, dangling {}, invalid requests {}\nwrote {} (replay: lab replay {} --policy {policy})\n",
        row.seed,
        row.rounds,
        row.lost_forever,
        row.pointer_lost,
        row.dangling_pointers,
        row.invalid_requests,
        out.display(),
        out.display()
    ))
}

/// What `lab hunt` searches: a name, the intact side's profile and
/// overrides, and the broken side's overrides on the same profile.
struct HuntTarget {
    name: String,
    profile: String,
    baseline_sets: Vec<String>,
    broken_sets: Vec<String>,
}

/// The sides of a registry row (`--break ID`), or the profile with `--set`s.
fn hunt_target(
    break_id: Option<String>,
    profile: String,
    sets: Vec<String>,
) -> LabResult<HuntTarget> {
    match &break_id {
        Some(id) => {
            let s = crate::compact::experiments::sides(id).ok_or_else(|| {
                let mem = experiments::find(id).is_ok();
                LabError::usage(
                    format!(
                        "{id:?} has no compaction sides to hunt{}",
                        if mem { " (a memory experiment)" } else { "" }
                    ),
                    "hunt one of D2, D3, D6, G1, A, B, R1, or give --profile and --set",
                )
            })?;
            Ok(HuntTarget {
                name: format!("hunt-{}", id.to_ascii_uppercase()),
                profile: s.profile.to_string(),
                baseline_sets: s.baseline.iter().map(|x| x.to_string()).collect(),
                broken_sets: s.broken.iter().map(|x| x.to_string()).collect(),
            })
        }
        None if sets.is_empty() => Err(LabError::usage(
            "nothing to hunt",
            "give --break ID or one or more --set key=value",
        )),
        None => {
            let tag: Vec<String> = sets.iter().map(|s| s.replace('=', "-")).collect();
            Ok(HuntTarget {
                name: format!("hunt-{profile}-{}", tag.join("-")),
                profile,
                baseline_sets: Vec::new(),
                broken_sets: sets,
            })
        }
    }
}

/// `lab hunt --break ID` or `--profile P --set K=V`: the shrunk
/// counterexample where the broken side violates an invariant and the
/// intact side does not, written as a scenario file.
pub fn hunt(
    break_id: Option<String>,
    profile: String,
    sets: Vec<String>,
    path_len: usize,
    seed: u64,
    tries: usize,
    out: Option<std::path::PathBuf>,
) -> LabResult<String> {
    let t = hunt_target(break_id, profile, sets)?;
    let mut baseline = config::profile(&t.profile)?.config;
    baseline.apply_overrides(&t.baseline_sets)?;
    let mut broken = config::profile(&t.profile)?.config;
    broken.apply_overrides(&t.broken_sets)?;
    let Some(rounds) = crate::compact::hunt::hunt(&baseline, &broken, path_len, seed, tries)?
    else {
        return Ok(format!(
            "no counterexample in {tries} conversations (seed {seed}, path_len={path_len}): \
             the intact and broken sides agree on every invariant tried\n"
        ));
    };
    let script = rounds.script();
    let o = probe::run(&broken, &script, Some(path_len))?;
    if let Some(path) = &out {
        crate::input::output_parent_exists(path, "--out")?;
    }
    let path =
        out.unwrap_or_else(|| std::path::PathBuf::from(format!("scenarios/hunt/{}.json", t.name)));
    // Only the default location's directory is created.
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| LabError::io("creating the output dir", dir, e))?;
    }
    let name = t.name.clone();
    crate::scenario::write_file(
        &path,
        &hunt_scenario(t, seed, path_len, script, &o.counters),
    )?;
    let sizes: Vec<String> = rounds.0.iter().map(|r| format!("{r:?}")).collect();
    Ok(format!(
        "counterexample: {}, result sizes {}\n{}wrote {} (reproduce: lab run {})\n",
        render::count(rounds.0.len(), "round"),
        sizes.join(" "),
        report::counters(&name, &o.counters, Format::Table),
        path.display(),
        path.display()
    ))
}

/// The scenario file of a hunted counterexample, pinned to what the broken
/// side showed.
fn hunt_scenario(
    t: HuntTarget,
    seed: u64,
    path_len: usize,
    script: crate::compact::session::Script,
    counters: &crate::counters::Counters,
) -> crate::scenario::Scenario {
    use crate::scenario::{Scenario, SCHEMA};
    let mut set = std::collections::BTreeMap::new();
    for s in &t.broken_sets {
        // Overrides were validated by apply_overrides: each has a `=`.
        let (k, v) = s.split_once('=').unwrap_or((s, ""));
        set.insert(
            k.to_string(),
            serde_json::from_str(v).unwrap_or(serde_json::Value::String(v.to_string())),
        );
    }
    let with = if t.baseline_sets.is_empty() {
        String::new()
    } else {
        format!(" with {}", t.baseline_sets.join(", "))
    };
    Scenario {
        schema: SCHEMA.to_string(),
        description: format!(
            "Minimal counterexample found by `lab hunt` (seed {seed}): the broken side violates an invariant, \
             the intact side ({}{with}) does not.",
            t.profile
        ),
        name: t.name,
        profile: t.profile,
        set,
        path_len: vec![path_len],
        summarizer: Default::default(),
        script,
        expect: Scenario::pin(&[(format!("path_len={path_len}"), counters.clone())]),
    }
}
