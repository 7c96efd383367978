//! Generated conversations, counterexample search and shrinking.
//!
//! A conversation is generated as [`Rounds`]: one model turn per round, each
//! with the sizes of its tool results. Sizes are drawn around the profile's
//! own thresholds (the 120-char rule, the per-item threshold, the batch
//! budget) so that search spends its time where the mechanisms disagree.
//! `lab hunt` searches for a conversation on which the broken configuration
//! violates an invariant while the intact one is clean, shrinks it greedily to
//! a minimal one and writes it as a scenario file that `lab run` reproduces.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha12Rng;

use super::config::Config;
use super::probe;
use super::session::{Action, Call, Script, Turn};
use crate::counters::Counters;
use crate::error::LabResult;

/// Sizes of the tool results of each round (one model turn per round).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rounds(pub Vec<Vec<usize>>);

impl Rounds {
    /// The script: a user prompt, one assistant turn per round, a final prepare.
    pub fn script(&self) -> Script {
        let mut a = vec![Action::User("generated task".into())];
        let mut n = 0;
        for round in &self.0 {
            let calls = round
                .iter()
                .map(|&chars| {
                    n += 1;
                    Call::sized(&format!("t{n:02}"), chars)
                })
                .collect();
            a.push(Action::Assistant(Turn { text: None, calls }));
        }
        a.push(Action::Prepare);
        Script(a)
    }

    /// A random conversation with sizes around `config`'s thresholds.
    pub fn random(rng: &mut ChaCha12Rng, config: &Config, max_rounds: usize) -> Rounds {
        let c = &config.constants;
        let interesting = [
            c.placeholder_min_chars / 2,
            c.placeholder_min_chars + 1,
            c.large_result_chars,
            c.large_result_chars + 1,
            c.batch_budget_chars / 2,
            c.batch_budget_chars,
        ];
        let rounds = rng.gen_range(1..=max_rounds.max(1));
        Rounds(
            (0..rounds)
                .map(|_| {
                    (0..rng.gen_range(1..=3))
                        .map(|_| {
                            if rng.gen_bool(0.5) {
                                interesting[rng.gen_range(0..interesting.len())]
                            } else {
                                rng.gen_range(1..=c.batch_budget_chars.max(2))
                            }
                        })
                        .collect()
                })
                .collect(),
        )
    }

    /// Smaller neighbours, most aggressive first: drop a round, drop a call, shrink a size.
    pub fn shrink_candidates(&self) -> Vec<Rounds> {
        let mut out = Vec::new();
        for i in 0..self.0.len() {
            let mut r = self.0.clone();
            r.remove(i);
            out.push(Rounds(r));
        }
        for i in 0..self.0.len() {
            for j in 0..self.0[i].len() {
                if self.0[i].len() > 1 {
                    let mut r = self.0.clone();
                    r[i].remove(j);
                    out.push(Rounds(r));
                }
                let v = self.0[i][j];
                for smaller in [v / 2, v.saturating_sub(1)] {
                    if smaller < v {
                        let mut r = self.0.clone();
                        r[i][j] = smaller;
                        out.push(Rounds(r));
                    }
                }
            }
        }
        out
    }
}

/// Does a run violate one of the loss/structure invariants?
pub fn violated(c: &Counters) -> bool {
    c.count_of("lost_forever").unwrap_or(0) > 0
        || c.count_of("pointer_lost").unwrap_or(0) > 0
        || c.flag_of("pairs_intact") == Some(false)
}

/// A counterexample: broken violates, baseline is clean, at `path_len`.
fn is_counterexample(
    baseline: &Config,
    broken: &Config,
    r: &Rounds,
    path_len: usize,
) -> LabResult<bool> {
    let s = r.script();
    Ok(violated(&probe::run(broken, &s, Some(path_len))?.counters)
        && !violated(&probe::run(baseline, &s, Some(path_len))?.counters))
}

/// Search `tries` random conversations from `seed`, then shrink the first hit.
/// Returns the minimal conversation, or `None` if no counterexample was found.
pub fn hunt(
    baseline: &Config,
    broken: &Config,
    path_len: usize,
    seed: u64,
    tries: usize,
) -> LabResult<Option<Rounds>> {
    let mut rng = ChaCha12Rng::seed_from_u64(seed);
    let mut found = None;
    for _ in 0..tries {
        let r = Rounds::random(&mut rng, broken, 6);
        if is_counterexample(baseline, broken, &r, path_len)? {
            found = Some(r);
            break;
        }
    }
    let Some(mut best) = found else {
        return Ok(None);
    };
    // Greedy shrinking to a fixed point: deterministic, and every step keeps the violation.
    'outer: loop {
        for cand in best.shrink_candidates() {
            if is_counterexample(baseline, broken, &cand, path_len)? {
                best = cand;
                continue 'outer;
            }
        }
        return Ok(Some(best));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::config::profile;

    #[test]
    fn shrink_candidates_are_strictly_smaller() {
        let r = Rounds(vec![vec![10, 3], vec![1]]);
        let total = |r: &Rounds| {
            r.0.iter().flatten().sum::<usize>() + r.0.iter().map(Vec::len).sum::<usize>()
        };
        for c in r.shrink_candidates() {
            assert!(total(&c) < total(&r), "{c:?}");
        }
    }

    #[test]
    fn hunting_d6_finds_a_small_counterexample() {
        let base = profile("prototype").unwrap().config;
        let mut broken = base.clone();
        broken.apply_override("order=micro_first").unwrap();
        broken.apply_override("unseen_guard=false").unwrap();
        let r = hunt(&base, &broken, 60, 1, 200)
            .unwrap()
            .expect("D6 has counterexamples");
        assert!(r.0.iter().map(Vec::len).sum::<usize>() <= 4, "{r:?}");
        // Minimal: no candidate one step smaller still fails.
        for c in r.shrink_candidates() {
            assert!(!is_counterexample(&base, &broken, &c, 60).unwrap());
        }
    }
}
