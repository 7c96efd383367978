//! Policy families: the groups plots draw as small multiples and the HTML
//! report filters by. Five groups of at most seven, so a panel that
//! highlights one family never needs more than seven styles, and a policy
//! keeps one style everywhere ([`style_index`]).

/// The families, in display order.
pub const FAMILIES: [&str; 5] = [
    "baseline and course",
    "coding agents",
    "SWE-agent",
    "OpenHands",
    "APIs and frameworks",
];

/// The family of policy `name` (case-insensitive); unknown names go with
/// the coding agents.
pub fn family(name: &str) -> &'static str {
    let n = name.to_ascii_lowercase();
    let starts = |p: &[&str]| p.iter().any(|x| n.starts_with(x));
    if n == "none"
        || n == "seed"
        || crate::policy::course::CoursePolicy::names().contains(&n.as_str())
    {
        FAMILIES[0]
    } else if starts(&["swe-agent"]) {
        FAMILIES[2]
    } else if starts(&["openhands"]) {
        FAMILIES[3]
    } else if starts(&["anthropic-", "langchain-", "vercel-", "openai-"]) {
        FAMILIES[4]
    } else {
        FAMILIES[1]
    }
}

/// The style index of policy `name`: its position in the policy list, so
/// its colour, marker and dash are the same in every plot (unlisted names
/// after the list, by their order in `names`).
pub fn style_index(name: &str, names: &[&str]) -> usize {
    let list = crate::policy::list::names();
    match list.iter().position(|n| n.eq_ignore_ascii_case(name)) {
        Some(i) => i,
        None => list.len() + names.iter().position(|n| *n == name).unwrap_or(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_has_at_most_seven_policies() {
        let names = crate::policy::list::names();
        for f in FAMILIES {
            let n = names.iter().filter(|p| family(p) == f).count();
            assert!((1..=7).contains(&n), "{f}: {n}");
        }
        assert_eq!(family("swe-agent-mask-5"), "SWE-agent");
        assert_eq!(family("course-main"), "baseline and course");
    }
}
