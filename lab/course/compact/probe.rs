//! The seed's probes as scripts, and the one function that runs a script.
//!
//! - [`prototype_probe`]: the Python prototype's `replay_turns` (three
//!   single-result rounds of 500 chars, then one batch of three), the probe
//!   behind D2, D3 and D6.
//! - [`scenario_a`], [`scenario_b`]: the seed's two step-level findings on the
//!   course code (section 3).
//! - [`recompaction`]: the placeholder compacted twice at a long path (section 4).
//! - [`guard_demo`]: six unseen results are left alone until the model has seen them.

use serde::Serialize;

use super::oracle::check;
use super::session::{Action, Call, Script, Session, Turn};
use super::{Compactor, Config, LabRoot, Step, Summarizer};
use crate::counters::Counters;
use crate::error::LabResult;
use crate::message::Message;

/// What one run of a script produced.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// The checker's counters.
    pub counters: Counters,
    /// Estimated chars of every request, in order (the context-size series).
    pub request_chars: Vec<usize>,
    /// Final history with machine-specific paths redacted.
    pub final_messages: Vec<Message>,
}

/// Run `script` under `config` with the embedded result path `path_len` chars long.
pub fn run(config: &Config, script: &Script, path_len: Option<usize>) -> LabResult<Outcome> {
    run_with(config, script, path_len, Summarizer::Scripted)
}

/// [`run`] with a chosen summarizer (e.g. one that fails).
pub fn run_with(
    config: &Config,
    script: &Script,
    path_len: Option<usize>,
    summarizer: Summarizer,
) -> LabResult<Outcome> {
    let session = run_session(config, script, path_len, summarizer, false)?;
    let counters = check(
        &session.compactor,
        &session.messages,
        &session.ledger,
        &session.requests,
    );
    let root = &session.compactor.root;
    let final_messages = redact_messages(root, &session.messages);
    Ok(Outcome {
        counters,
        request_chars: session.requests.iter().map(|r| r.chars).collect(),
        final_messages,
    })
}

/// One cell of `lab probe`: the prototype's probe under a profile with
/// overrides at one path length.
#[derive(Debug, Clone, Serialize)]
pub struct ProbeCell {
    /// Profile name.
    pub profile: String,
    /// `key=value` overrides, as given.
    pub overrides: Vec<String>,
    /// Exact length of the embedded result path.
    pub path_len: usize,
    /// The checker's counters.
    pub counters: Counters,
}

/// Run the prototype's probe under `profile` + `sets` at every length of `lens`.
pub fn probe_cells(profile: &str, sets: &[String], lens: &[usize]) -> LabResult<Vec<ProbeCell>> {
    let mut cfg = super::config::profile(profile)?.config;
    cfg.apply_overrides(sets)?;
    let script = prototype_probe();
    lens.iter()
        .map(|&path_len| {
            Ok(ProbeCell {
                profile: profile.to_string(),
                overrides: sets.to_vec(),
                path_len,
                counters: run(&cfg, &script, Some(path_len))?.counters,
            })
        })
        .collect()
}

/// Only the checker's counters of [`run`]: sweeps need nothing else, and
/// skipping the redacted copy of the final history saves a JSON round trip per cell.
// Out of line (a cell is one call, so it costs nothing): LTO inlined it
// into its callers, and profiles then could not name a cell's cost.
#[inline(never)]
pub fn run_counters(
    config: &Config,
    script: &Script,
    path_len: Option<usize>,
) -> LabResult<Counters> {
    let s = run_session(config, script, path_len, Summarizer::Scripted, true)?;
    Ok(check(&s.compactor, &s.messages, &s.ledger, &s.requests))
}

fn run_session(
    config: &Config,
    script: &Script,
    path_len: Option<usize>,
    summarizer: Summarizer,
    counters_only: bool,
) -> LabResult<Session> {
    let script = script.normalised_cow()?;
    let root = LabRoot::new(path_len, script.reference_id_chars())?;
    let mut compactor = Compactor::new(config.clone(), root)?;
    compactor.summarizer = summarizer;
    let mut session = Session::new(compactor);
    if counters_only {
        session = session.counters_only();
    }
    session.run_normalised(&script)?;
    Ok(session)
}

fn redact_messages(root: &LabRoot, messages: &[Message]) -> Vec<Message> {
    let text = serde_json::to_string(messages).expect("messages serialise");
    let redacted = root.redact(&text);
    serde_json::from_str(&redacted).expect("redaction keeps JSON valid")
}

fn turn(calls: Vec<Call>) -> Action {
    Action::Assistant(Turn { text: None, calls })
}

/// The prototype's probe (`replay_turns` in cc_harness_lab.py).
pub fn prototype_probe() -> Script {
    let mut a = vec![Action::User("start".into())];
    for id in ["a1", "a2", "a3"] {
        a.push(turn(vec![Call::sized(id, 500)]));
    }
    a.push(turn(
        ["b1", "b2", "b3"]
            .iter()
            .map(|id| Call::sized(id, 500))
            .collect(),
    ));
    a.push(Action::Prepare);
    Script(a)
}

/// Scenario A: a five-result batch whose two 120 000-char results are the
/// oldest; step 1, one assistant message, step 3.
pub fn scenario_a() -> Script {
    let sizes = [120_000, 120_000, 1_000, 1_000, 1_000];
    Script(vec![
        Action::User("read the logs".into()),
        turn(
            sizes
                .iter()
                .enumerate()
                .map(|(i, n)| Call::sized(&format!("toolu_{i}"), *n))
                .collect(),
        ),
        Action::Steps(vec![Step::Persist]),
        Action::AppendAssistant("noted".into()),
        Action::Steps(vec![Step::Micro]),
    ])
}

/// Scenario B: one 150 000-char result alone in its batch; step 1.
pub fn scenario_b() -> Script {
    Script(vec![
        Action::User("dump it".into()),
        turn(vec![Call::sized("toolu_0", 150_000)]),
        Action::Steps(vec![Step::Persist]),
    ])
}

/// The placeholder re-compaction: one large result persisted, five short
/// ones, step 3 twice with the model seeing the results in between.
pub fn recompaction() -> Script {
    let mut calls = vec![Call::sized("toolu_0", 250_000)];
    calls.extend((1..6).map(|i| Call::sized(&format!("toolu_{i}"), 100)));
    Script(vec![
        Action::User("build".into()),
        turn(calls),
        Action::Steps(vec![Step::Persist]),
        Action::AppendAssistant("first look".into()),
        Action::Steps(vec![Step::Micro]),
        Action::AppendAssistant("second look".into()),
        Action::Steps(vec![Step::Micro]),
    ])
}

/// The guard demo: six new results, step 3 before and after the model sees them.
pub fn guard_demo() -> Script {
    Script(vec![
        Action::User("scan".into()),
        turn(
            (0..6)
                .map(|i| Call::sized(&format!("toolu_{i}"), 500))
                .collect(),
        ),
        Action::Steps(vec![Step::Micro]),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sweep cell's counters are those of a full run: the unsized requests
    /// of [`run_counters`] change nothing the checker reports.
    #[test]
    fn counters_only_runs_report_what_full_runs_report() {
        let scripts = [
            prototype_probe(),
            scenario_a(),
            scenario_b(),
            recompaction(),
            guard_demo(),
        ];
        let sets: [&[&str]; 3] = [
            &[],
            &["order=micro_first", "unseen_guard=false"],
            &["pair_protection=false"],
        ];
        for name in ["prototype", "course-main"] {
            for set in sets {
                let mut cfg = super::super::config::profile(name).unwrap().config;
                for s in set {
                    cfg.apply_override(s).unwrap();
                }
                for script in &scripts {
                    for len in [40, 90, 160] {
                        let full = run(&cfg, script, Some(len)).unwrap();
                        assert!(full.request_chars.iter().all(|&c| c > 0));
                        let counters = run_counters(&cfg, script, Some(len)).unwrap();
                        assert_eq!(counters, full.counters, "{name} {set:?} L={len}");
                    }
                }
            }
        }
    }
}
