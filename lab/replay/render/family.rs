//! Policy groups: the panels plots draw as small multiples. Each group
//! gathers whole policy families (`PolicyInfo::family`, the product a
//! policy ports) into nine groups of at most seven policies, so a panel
//! that highlights one group never needs more than seven styles; a policy
//! keeps one style everywhere ([`style_index`]). [`family`] is the finer
//! label the HTML report filters by.

/// The groups, in display order.
pub const GROUPS: [&str; 9] = [
    "baseline and course",
    "Claude Code",
    "Codex, Gemini CLI, Amp and Pi",
    "coding agents",
    "SWE-agent",
    "OpenHands",
    "APIs and frameworks",
    "OpenAI API",
    "Inspect AI",
];

/// The group of each family (`PolicyInfo::family`, the product a policy
/// ports): a new port of a listed product lands in its product's panel
/// with no edit here. A family not listed goes with the coding agents.
const FAMILY_GROUPS: &[(&str, usize)] = &[
    ("baseline", 0),
    ("course", 0),
    ("Claude Code", 1),
    ("Codex CLI", 2),
    ("Gemini CLI", 2),
    ("Amp", 2),
    ("pi", 2),
    ("SWE-agent", 4),
    ("OpenHands", 5),
    ("Anthropic API", 6),
    ("LangChain", 6),
    ("Vercel AI SDK", 6),
    // Its own group since a third OpenAI policy made "APIs and
    // frameworks" eight.
    ("OpenAI API", 7),
    // Its own group: its three strategies would make "APIs and
    // frameworks" eight.
    ("Inspect AI", 8),
];

/// The group of policy `name` (case-insensitive), from its family in the
/// policy list; names the list does not know (an external process, a
/// mistyped name) go with the coding agents.
pub fn group(name: &str) -> &'static str {
    if name.starts_with(crate::policy::exec::PREFIX) {
        // Building an external policy would start its process.
        return GROUPS[3];
    }
    let family = crate::zoo::list::make(name).map(|p| p.info().family);
    let g = family
        .ok()
        .and_then(|f| FAMILY_GROUPS.iter().find(|(n, _)| *n == f))
        .map_or(3, |(_, g)| *g);
    GROUPS[g]
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
        assert_eq!(group("gemini-cli-mask"), "Codex, Gemini CLI, Amp and Pi");
        assert_eq!(group("codex-truncate"), "Codex, Gemini CLI, Amp and Pi");
        assert_eq!(group("pi-auto-compact"), "Codex, Gemini CLI, Amp and Pi");
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
