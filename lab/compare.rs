//! Policies compared on sessions: the driver behind `lab replay --policy`.
//!
//! Imports each transcript once, replays it under every named policy through
//! the [engine](crate::policy::engine), and optionally measures
//! [retention](crate::retention) with planted facts.

use std::path::PathBuf;

use crate::error::LabResult;
use crate::message::Message;
use crate::policy::course::CoursePolicy;
use crate::policy::engine::{replay_observed, Env, PolicyRun, Session};
use crate::policy::{list, Policy};
use crate::retention::planted::{plant, Position};
use crate::retention::{Retention, RetentionReport};

/// Every policy name `names` asks for: `all` expands to every policy.
pub fn expand_names(names: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in names {
        if n.eq_ignore_ascii_case("all") {
            out.extend(list::names().into_iter().map(str::to_string));
        } else {
            out.push(n.clone());
        }
    }
    out.dedup();
    out
}

/// Build a policy for one session: course profiles get a root whose result
/// path is `path_len` long for the session's first tool id, as `lab replay
/// --profile` does.
fn make_for(name: &str, messages: &[Message], path_len: usize) -> LabResult<Box<dyn Policy>> {
    let lower = name.to_ascii_lowercase();
    if lower == "seed" || CoursePolicy::names().contains(&lower.as_str()) {
        let ref_id = messages
            .iter()
            .flat_map(|m| m.tool_use_ids())
            .next()
            .map_or(7, |id| id.chars().count());
        return Ok(Box::new(CoursePolicy::with_root(
            &lower,
            Some(path_len),
            ref_id,
        )?));
    }
    list::make(name)
}

/// What to measure besides the checker's verdict.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Measure {
    /// Artifact recall, re-fetch demand and planted facts.
    pub retention: bool,
}

/// One session under one policy.
#[derive(Debug, Clone)]
pub struct Compared {
    /// The run.
    pub run: PolicyRun,
    /// Retention, when asked for.
    pub retention: Option<RetentionReport>,
}

/// Replay one session (already imported) under one policy.
pub fn compare_one(
    label: &str,
    messages: &[Message],
    name: &str,
    path_len: usize,
    measure: Measure,
) -> LabResult<Compared> {
    let mut policy = make_for(name, messages, path_len)?;
    let (planted, facts) = if measure.retention {
        plant(messages, &Position::ALL)
    } else {
        (messages.to_vec(), vec![])
    };
    let session = Session {
        name: label,
        messages: &planted,
        times_ms: None,
    };
    let mut env = Env::default();
    if measure.retention {
        let mut r = Retention::with_facts(facts);
        let run = replay_observed(policy.as_mut(), session, &mut env, &mut [&mut r])?;
        Ok(Compared {
            run,
            retention: Some(r.finish()),
        })
    } else {
        let run = replay_observed(policy.as_mut(), session, &mut env, &mut [])?;
        Ok(Compared {
            run,
            retention: None,
        })
    }
}

/// Replay every file under every named policy (`all` for every policy), in
/// file order then policy order. Unknown names fail before any work.
pub fn replay_files(
    files: &[PathBuf],
    names: &[String],
    path_len: usize,
    import: &crate::import::ImportOptions,
    measure: Measure,
) -> LabResult<Vec<Compared>> {
    let names = expand_names(names);
    for n in &names {
        list::make(n)?;
    }
    let mut out = Vec::new();
    for file in files {
        let session = crate::import::import_file(file, import)?;
        let label = file.file_name().map_or_else(
            || file.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        for name in &names {
            out.push(compare_one(&label, &session.main, name, path_len, measure)?);
        }
    }
    Ok(out)
}

/// The runs' table; with retention, the retention table and planted facts after it.
pub fn render(out: &[Compared], format: crate::report::Format) -> String {
    use crate::report::Format;
    let runs: Vec<PolicyRun> = out.iter().map(|c| c.run.clone()).collect();
    let with: Vec<(PolicyRun, RetentionReport)> = out
        .iter()
        .filter_map(|c| c.retention.clone().map(|r| (c.run.clone(), r)))
        .collect();
    if with.is_empty() {
        return crate::policy::render::runs(&runs, format);
    }
    let scored = crate::retention::render::score(&with);
    if format == Format::Json {
        #[derive(serde::Serialize)]
        struct Both<'a> {
            runs: &'a [PolicyRun],
            retention: &'a [crate::retention::render::Scored],
        }
        return crate::report::json(&Both {
            runs: &runs,
            retention: &scored,
        });
    }
    let mut s = crate::policy::render::runs(&runs, format);
    s.push('\n');
    s.push_str(&crate::retention::render::retention(&scored, format));
    s.push('\n');
    s.push_str(&crate::retention::render::facts(&scored, format));
    s
}
