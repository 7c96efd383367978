//! The list of every policy (the types live in [`super`]; this is only the list,
//! so that policy modules never import it and no circle forms).

use super::Policy;

/// A constructor of a policy with its upstream defaults.
pub type Make = fn() -> Box<dyn Policy>;

/// Every production policy, in `lab policies` order.
pub fn zoo() -> Vec<(&'static str, Make)> {
    vec![
        ("swe-agent-mask-5", super::zoo::swe_agent::mask_5),
        ("swe-agent-mask-10", super::zoo::swe_agent::mask_10),
        (
            "swe-agent-summary-21-10",
            super::zoo::swe_agent::summary_21_10,
        ),
        ("swe-agent-hybrid", super::zoo::swe_agent::hybrid),
        (
            "openhands-observation-masking",
            super::zoo::openhands::observation_masking,
        ),
        ("openhands-recent", super::zoo::openhands::recent),
        ("openhands-amortized", super::zoo::openhands::amortized),
        (
            "openhands-llm-summarizing",
            super::zoo::openhands::llm_summarizing,
        ),
    ]
}

/// Build the policy called `name` (case-insensitive).
pub fn make(name: &str) -> Option<Box<dyn Policy>> {
    zoo()
        .into_iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, f)| f())
}
