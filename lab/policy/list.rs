//! The list of every policy (the types live in [`super`]; this is only the list,
//! so that policy modules never import it and no circle forms).

use super::course::CoursePolicy;
use super::none::NoCompaction;
use super::zoo;
use super::Policy;
use crate::error::{LabError, LabResult};

/// A constructor of a policy with its upstream defaults.
pub type Make = fn() -> Box<dyn Policy>;

/// Every production policy, in `lab policies` order.
pub fn zoo() -> Vec<(&'static str, Make)> {
    vec![
        (
            zoo::anthropic_clear_tool_uses::NAME,
            zoo::anthropic_clear_tool_uses::make,
        ),
        (zoo::anthropic_compact::NAME, zoo::anthropic_compact::make),
        (zoo::codex_cli::NAME, zoo::codex_cli::make),
        (zoo::opencode::NAME, zoo::opencode::make),
        (zoo::gemini_cli::NAME, zoo::gemini_cli::make),
        (zoo::claude_code::NAME, zoo::claude_code::make),
    ]
}

/// Every policy name: the baseline, the course profiles, then the zoo.
pub fn names() -> Vec<&'static str> {
    let mut out = vec!["none"];
    out.extend(CoursePolicy::names());
    out.extend(zoo().into_iter().map(|(n, _)| n));
    out
}

/// Build the policy called `name` (case-insensitive; `seed` is the course
/// revision the seed analyses).
pub fn make(name: &str) -> LabResult<Box<dyn Policy>> {
    let want = name.to_ascii_lowercase();
    if want == "none" {
        return Ok(Box::new(NoCompaction));
    }
    if want == "seed" || CoursePolicy::names().contains(&want.as_str()) {
        return Ok(Box::new(CoursePolicy::new(&want)?));
    }
    zoo()
        .into_iter()
        .find(|(n, _)| *n == want)
        .map(|(_, f)| f())
        .ok_or_else(|| {
            LabError::usage(
                format!("unknown policy `{name}`"),
                format!("use one of: {} (or `all`)", names().join(", ")),
            )
        })
}
