//! Sweeps and hunts over any policy: generated coding sessions replayed
//! through the policy engine.
//!
//! A session is generated from a seed: a task, then rounds of one or two
//! tool calls whose results have random sizes (most small, some past the
//! persistence thresholds, a few past the production triggers), a re-read of
//! an earlier file now and then, and a closing answer. `lab sweep --policy`
//! replays seeds `0..N` under each policy; `lab hunt --policy` searches seeds
//! for a session where the policy loses a result forever, loses its pointer,
//! leaves a dangling pointer or sends a request a provider would reject, then
//! shrinks it round by round and writes it as a message file that `lab
//! replay FILE --policy NAME` replays.

use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::error::{LabError, LabResult};
use crate::message::{Block, Message};
use crate::policy::spec::PolicySpec;
use crate::render::{json, table, Format};
use crate::replay::policies::{compare_set_up, Measure, SessionSetup};

/// Most rounds a generated session has.
pub const MAX_ROUNDS: usize = 60;

/// One round: its tool calls' result sizes and whether the first call
/// re-reads the file of an earlier round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Round {
    /// Result sizes in chars, one per parallel call.
    pub sizes: Vec<usize>,
    /// Re-read the file of this earlier round.
    pub reread: Option<usize>,
}

/// The rounds of seed `seed`.
pub fn rounds(seed: u64) -> Vec<Round> {
    let mut rng = rand_chacha::ChaCha12Rng::seed_from_u64(seed);
    let n = rng.gen_range(8..=MAX_ROUNDS);
    (0..n)
        .map(|i| {
            let calls = if rng.gen_range(0..8) == 0 { 2 } else { 1 };
            let sizes = (0..calls)
                .map(|_| match rng.gen_range(0..20) {
                    0 => rng.gen_range(200_000..420_000),
                    1..=3 => rng.gen_range(30_000..80_000),
                    4..=9 => rng.gen_range(2_000..12_000),
                    _ => rng.gen_range(20..900),
                })
                .collect();
            let reread = (i > 2 && rng.gen_range(0..6) == 0).then(|| rng.gen_range(0..i));
            Round { sizes, reread }
        })
        .collect()
}

/// The message list of `rounds`.
pub fn session(rounds: &[Round]) -> Vec<Message> {
    let mut out = vec![Message::user_text(
        "Fix the failing tests of the parser crate.",
    )];
    for (i, r) in rounds.iter().enumerate() {
        let ids: Vec<String> = (0..r.sizes.len())
            .map(|k| format!("toolu_{i:03}_{k}"))
            .collect();
        let file = |k: usize| match (k, r.reread) {
            (0, Some(j)) => format!("/src/file_{j:03}.rs"),
            _ => format!("/src/file_{i:03}.rs"),
        };
        out.push(Message::assistant(
            ids.iter()
                .enumerate()
                .map(|(k, id)| Block::ToolUse {
                    id: id.clone(),
                    name: "Read".into(),
                    input: serde_json::json!({ "file_path": file(k) }).into(),
                })
                .collect(),
        ));
        out.push(Message::tool_results(
            ids.iter()
                .zip(&r.sizes)
                .map(|(id, &n)| (id.clone(), body(id, n)))
                .collect(),
        ));
    }
    out.push(Message::assistant(vec![Block::Text {
        text: "The tests pass now.".into(),
    }]));
    out
}

/// A result of `n` chars: an error line, then numbered lines.
fn body(id: &str, n: usize) -> String {
    let mut s = format!("error: check failed in {id}\n");
    let mut line = 0usize;
    while s.len() < n {
        s.push_str(&format!("{line:06} let x = {line};\n"));
        line += 1;
    }
    s.truncate(n.max(1));
    s
}

/// What one policy did to one generated session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Row {
    /// Policy name.
    pub policy: String,
    /// Seed of the session.
    pub seed: u64,
    /// Rounds of the session.
    pub rounds: usize,
    /// Model calls.
    pub calls: usize,
    /// The checker's counts.
    pub lost_forever: u64,
    /// Held but unreachable.
    pub pointer_lost: u64,
    /// Pointers to missing files.
    pub dangling_pointers: u64,
    /// Requests a provider would reject.
    pub invalid_requests: u64,
    /// Largest request in tokens.
    pub peak_tokens: usize,
    /// What the policy did (compactions, clearings, drops).
    pub events: usize,
}

impl Row {
    /// Does the policy lose or break anything here?
    pub fn damaged(&self) -> bool {
        self.lost_forever + self.pointer_lost + self.dangling_pointers + self.invalid_requests > 0
    }
}

fn run(policy: &PolicySpec, seed: u64, rounds: &[Round]) -> LabResult<Row> {
    let messages = session(rounds);
    let c = compare_set_up(
        "generated",
        &messages,
        policy,
        crate::replay::profiles::DEFAULT_PATH_LEN,
        &Measure::default(),
        &SessionSetup::default(),
    )?;
    let f = &c.run.findings;
    Ok(Row {
        policy: c.run.policy.clone(),
        seed,
        rounds: rounds.len(),
        calls: c.run.calls.len(),
        lost_forever: f.lost_forever.count,
        pointer_lost: f.pointer_lost.count,
        dangling_pointers: f.dangling_pointers.count,
        invalid_requests: c.run.invalid_requests,
        peak_tokens: c.run.calls.iter().map(|x| x.tokens).max().unwrap_or(0),
        events: c.run.events.len(),
    })
}

/// Seeds `0..seeds` under every named policy (`all` for every one).
pub fn sweep(names: &[String], seeds: u64) -> LabResult<Vec<Row>> {
    sweep_on(names, seeds, 1)
}

/// [`sweep`] on `jobs` worker threads (`--jobs`); rows in the same order
/// (policy, then seed) for every number.
pub fn sweep_on(names: &[String], seeds: u64, jobs: usize) -> LabResult<Vec<Row>> {
    if !(1..=10_000).contains(&seeds) {
        return Err(LabError::usage(
            format!("--seeds {seeds} is out of range for a policy sweep"),
            "use --seeds 1..=10000",
        ));
    }
    let specs = crate::replay::policies::checked_specs(names)?;
    sweep_specs_on(&specs, seeds, jobs)
}

/// [`sweep_on`] of specs already parsed and checked.
pub fn sweep_specs_on(names: &[PolicySpec], seeds: u64, jobs: usize) -> LabResult<Vec<Row>> {
    // Course policies build their roots on the backend of the starting thread.
    let backend = crate::storage::root::current_backend();
    crate::jobs::try_collect(
        jobs,
        |push| {
            names
                .iter()
                .all(|name| (0..seeds).all(|seed| push((name, seed))))
        },
        |(name, seed): (&PolicySpec, u64)| {
            crate::storage::root::with_backend(backend, || run(name, seed, &rounds(seed)))
        },
    )
}

/// The sweep's rows, and per policy how many sessions it damaged.
pub fn render(rows: &[Row], format: Format) -> String {
    if format == Format::Json {
        return json(&rows);
    }
    let mut names: Vec<&str> = rows.iter().map(|r| r.policy.as_str()).collect();
    names.dedup();
    let body = names
        .iter()
        .map(|n| {
            let mine: Vec<&Row> = rows.iter().filter(|r| r.policy == *n).collect();
            let sum = |f: &dyn Fn(&Row) -> u64| mine.iter().map(|r| f(r)).sum::<u64>();
            let damaged: Vec<String> = mine
                .iter()
                .filter(|r| r.damaged())
                .take(5)
                .map(|r| r.seed.to_string())
                .collect();
            vec![
                n.to_string(),
                mine.len().to_string(),
                mine.iter().filter(|r| r.damaged()).count().to_string(),
                sum(&|r| r.lost_forever).to_string(),
                sum(&|r| r.pointer_lost).to_string(),
                sum(&|r| r.dangling_pointers).to_string(),
                sum(&|r| r.invalid_requests).to_string(),
                damaged.join(", "),
            ]
        })
        .collect();
    let mut s = table(
        &[
            "policy",
            "sessions",
            "damaged",
            "lost",
            "ptr lost",
            "dangling",
            "invalid requests",
            "first damaged seeds",
        ],
        body,
        format == Format::Markdown,
    );
    s.push_str("\n\nsessions: generated from seeds 0..N (`lab hunt --policy NAME` shrinks one to a replayable file)\n");
    s
}

/// Search seeds `seed..seed + tries` for a session `policy` damages and
/// shrink it (drop rounds, then halve sizes) while the damage stays.
/// Returns the shrunk rounds and their row, or `None` when none was found.
pub fn hunt(policy: &str, seed: u64, tries: usize) -> LabResult<Option<(Vec<Round>, Row)>> {
    let policy: PolicySpec = policy.parse()?;
    let policy = &policy;
    crate::zoo::list::make_spec(policy, "approx", crate::policy::exec::DEFAULT_TIMEOUT)?;
    for s in seed..seed.saturating_add(tries as u64) {
        let rs = rounds(s);
        let row = run(policy, s, &rs)?;
        if row.damaged() {
            return Ok(Some(shrink(policy, s, rs, row)?));
        }
    }
    Ok(None)
}

fn shrink(
    policy: &PolicySpec,
    seed: u64,
    mut rs: Vec<Round>,
    mut row: Row,
) -> LabResult<(Vec<Round>, Row)> {
    loop {
        let mut smaller = None;
        for cand in candidates(&rs) {
            let r = run(policy, seed, &cand)?;
            if r.damaged() {
                smaller = Some((cand, r));
                break;
            }
        }
        match smaller {
            Some((c, r)) => (rs, row) = (c, r),
            None => return Ok((rs, row)),
        }
    }
}

/// Smaller variants of `rs`: each round dropped (re-reads of it cleared),
/// then each size halved.
fn candidates(rs: &[Round]) -> Vec<Vec<Round>> {
    let mut out = Vec::new();
    for i in 0..rs.len() {
        let mut c: Vec<Round> = rs.to_vec();
        c.remove(i);
        for r in &mut c {
            r.reread = match r.reread {
                Some(j) if j == i => None,
                Some(j) if j > i => Some(j - 1),
                other => other,
            };
        }
        out.push(c);
    }
    for i in 0..rs.len() {
        for k in 0..rs[i].sizes.len() {
            if rs[i].sizes[k] > 20 {
                let mut c = rs.to_vec();
                c[i].sizes[k] /= 2;
                out.push(c);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_valid_and_seeded() {
        assert_eq!(rounds(3), rounds(3));
        assert_ne!(rounds(3), rounds(4));
        let s = session(&rounds(3));
        assert!(crate::policy::validity::check(&s).is_empty());
    }

    #[test]
    fn shrinking_only_ever_makes_a_session_smaller() {
        let rs = rounds(1);
        for c in candidates(&rs) {
            let total = |x: &[Round]| x.iter().flat_map(|r| &r.sizes).sum::<usize>();
            assert!(c.len() < rs.len() || total(&c) < total(&rs));
            for (i, r) in c.iter().enumerate() {
                assert!(r.reread.is_none_or(|j| j < i), "a re-read points back");
            }
        }
    }
}
