//! The frontier's and the cost report's regret column: every policy on the
//! generated session has a regret, and none is negative (the cheapest
//! schedule is a lower bound at equal or better recall).

#[test]
fn every_policy_on_the_frontier_session_has_a_regret_and_none_is_negative() {
    let data = crate::shared::data();
    let (runs, regret) = (&data.runs, &data.regret);
    assert_eq!(regret.len(), runs.len());
    for (c, r) in runs.iter().zip(regret) {
        let r = r.unwrap_or_else(|| panic!("{}: no regret", c.run.policy));
        assert!(r >= -1e-12, "{}: regret {r}", c.run.policy);
    }
    // Some design is not at the bound: the column tells designs apart.
    assert!(regret.iter().flatten().any(|&r| r > 0.01));
}
