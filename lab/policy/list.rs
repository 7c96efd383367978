//! The list of every policy (the types live in [`super`]; this is only the list,
//! so that policy modules never import it and no circle forms).

use super::zoo;
use super::Policy;

/// A constructor of a policy with its upstream defaults.
pub type Make = fn() -> Box<dyn Policy>;

/// Every production policy, in `lab policies` order.
pub fn zoo() -> Vec<(&'static str, Make)> {
    vec![(
        zoo::anthropic_clear_tool_uses::NAME,
        zoo::anthropic_clear_tool_uses::make,
    )]
}

/// Build the policy called `name` (case-insensitive).
pub fn make(name: &str) -> Option<Box<dyn Policy>> {
    zoo()
        .into_iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, f)| f())
}
