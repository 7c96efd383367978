//! Policy groups: the panels plots draw as small multiples. Each group
//! gathers whole policy families (`PolicyInfo::family`, the product a
//! policy ports) into nine groups of at most seven policies, so a panel
//! that highlights one group never needs more than seven styles; a policy
//! keeps one style everywhere ([`style_index`]). [`family`] is the finer
//! label the HTML report filters by. Both are keyed on the
//! [`PolicySpec`] a run ran ([`group_of`], [`family_of`]); a renderer that
//! holds only a run's name reaches them through [`group`] and [`family`].

use crate::policy::spec::PolicySpec;

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

/// The group of the policy `spec` names, from its base policy's family in
/// the policy list (wrappers and a variant's overrides keep their base's
/// family); an external process or a name the list does not know goes with
/// the coding agents.
pub fn group_of(spec: &PolicySpec) -> &'static str {
    let g = listed_family(spec)
        .and_then(|f| FAMILY_GROUPS.iter().find(|(n, _)| *n == f))
        .map_or(3, |(_, g)| *g);
    GROUPS[g]
}

/// The family of the policy `spec` names (`PolicyInfo::family`: the
/// product or paper its base policy ports), `external` for an external
/// process, or its group for a name the list does not know.
pub fn family_of(spec: &PolicySpec) -> String {
    if spec.is_exec() {
        return "external".into();
    }
    match listed_family(spec) {
        Some(f) => f.to_string(),
        None => group_of(spec).to_string(),
    }
}

/// The family of `spec`'s base policy in the policy list, `None` for an
/// external process (building it would start its process) or a name the
/// list does not know.
fn listed_family(spec: &PolicySpec) -> Option<&'static str> {
    match spec.innermost() {
        PolicySpec::Named { name, .. } => crate::zoo::list::make_named(name)
            .ok()
            .map(|p| p.info().family),
        _ => None,
    }
}

/// The spec a run's `name` was parsed from (a run is named after the text
/// of its spec), `None` when the text no longer parses (a variant's TOML
/// file gone since the run).
fn spec_of_run(name: &str) -> Option<PolicySpec> {
    name.parse().ok()
}

/// [`group_of`] the spec run `name` ran (case-insensitive); a name that
/// does not parse goes with the coding agents.
pub fn group(name: &str) -> &'static str {
    spec_of_run(name).map_or(GROUPS[3], |s| group_of(&s))
}

/// [`family_of`] the spec run `name` ran; a name that does not parse is
/// in the coding agents' group.
pub fn family(name: &str) -> String {
    spec_of_run(name).map_or_else(|| GROUPS[3].to_string(), |s| family_of(&s))
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

    #[test]
    fn a_spec_keeps_its_base_policys_family_through_wrappers_and_variants() {
        let of = |text: &str| family_of(&text.parse().unwrap());
        assert_eq!(of("codex-cli"), "Codex CLI");
        assert_eq!(of("frozen:codex-cli"), "Codex CLI");
        assert_eq!(of("gated@gpt-5:frozen:claude-code"), "Claude Code");
        assert_eq!(of("exec:python3 p.py"), "external");
        assert_eq!(of("frozen:exec:python3 p.py"), "external");
        assert_eq!(of("no-such-policy"), "coding agents");
        assert_eq!(group_of(&"gated:course-main".parse().unwrap()), GROUPS[0]);
        // A run's name reaches the same answer as the spec it ran.
        assert_eq!(family("frozen:codex-cli"), "Codex CLI");
        assert_eq!(group("frozen:codex-cli"), GROUPS[2]);
    }
}
