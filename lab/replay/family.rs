//! Policy groups: the panels plots draw as small multiples. Each group
//! gathers whole policy families (`PolicyInfo::family`, the product a
//! policy ports) into eight groups of at most seven policies, so a panel
//! that highlights one group never needs more than seven styles; a policy
//! keeps one style everywhere ([`style_index`]). [`family`] is the finer
//! label the HTML report filters by.

/// The groups, in display order.
pub const GROUPS: [&str; 8] = [
    "baseline and course",
    "Claude Code",
    "Codex, Gemini CLI and Amp",
    "coding agents",
    "SWE-agent",
    "OpenHands",
    "APIs and frameworks",
    "OpenAI API",
];

/// The group of policy `name` (case-insensitive); unknown names go with
/// the coding agents.
pub fn group(name: &str) -> &'static str {
    let n = name.to_ascii_lowercase();
    let starts = |p: &[&str]| p.iter().any(|x| n.starts_with(x));
    if n == "none"
        || n == "seed"
        || crate::policy::course::CoursePolicy::names().contains(&n.as_str())
    {
        GROUPS[0]
    } else if starts(&["claude-code"]) {
        GROUPS[1]
    } else if starts(&["codex-", "gemini-cli", "amp-"]) {
        GROUPS[2]
    } else if starts(&["swe-agent"]) {
        GROUPS[4]
    } else if starts(&["openhands"]) {
        GROUPS[5]
    } else if starts(&["openai-"]) {
        // Its own group since a third OpenAI policy made "APIs and
        // frameworks" eight.
        GROUPS[7]
    } else if starts(&["anthropic-", "langchain-", "vercel-"]) {
        GROUPS[6]
    } else {
        GROUPS[3]
    }
}

/// The family of policy `name` (`PolicyInfo::family`: the product or
/// paper it ports), or its group for a name the list does not know.
pub fn family(name: &str) -> String {
    if name.starts_with(crate::policy::exec::PREFIX) {
        return "external".into();
    }
    match crate::zoo::list::make(name) {
        Ok(p) => p.info().family.to_string(),
        Err(_) => group(name).to_string(),
    }
}

/// The style index of policy `name`: its position in the policy list, so
/// its colour, marker and dash are the same in every plot (unlisted names
/// after the list, by their order in `names`).
pub fn style_index(name: &str, names: &[&str]) -> usize {
    let list = crate::zoo::list::names();
    match list.iter().position(|n| n.eq_ignore_ascii_case(name)) {
        Some(i) => i,
        None => list.len() + names.iter().position(|n| *n == name).unwrap_or(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_group_has_at_most_seven_policies_and_whole_families() {
        let names = crate::zoo::list::names();
        for g in GROUPS {
            let n = names.iter().filter(|p| group(p) == g).count();
            assert!((1..=7).contains(&n), "{g}: {n}");
        }
        assert_eq!(group("swe-agent-mask-5"), "SWE-agent");
        assert_eq!(group("gemini-cli-mask"), "Codex, Gemini CLI and Amp");
        assert_eq!(group("codex-truncate"), "Codex, Gemini CLI and Amp");
        assert_eq!(group("claude-code-session-memory"), "Claude Code");
        assert_eq!(group("hermes-lean"), "coding agents");
        assert_eq!(group("course-main"), "baseline and course");
        assert_eq!(group("openai-server-compaction"), "OpenAI API");
        for a in &names {
            for b in &names {
                if family(a) == family(b) {
                    assert_eq!(group(a), group(b), "{a} and {b}");
                }
            }
        }
    }
}
