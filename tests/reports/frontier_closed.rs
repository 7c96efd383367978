//! The frontier on closed-loop dollars: every policy on the generated
//! session replayed closed-loop, its pointers and removals paid for.

#[test]
fn prototype_pays_for_its_pointers_and_the_closed_frontier_has_several_points() {
    let data = crate::shared::data();
    let proto = data
        .runs
        .iter()
        .find(|c| c.run.policy == "prototype")
        .expect("prototype is on the frontier session");
    let row = proto
        .closed_loop
        .as_ref()
        .expect("the frontier runs closed-loop");
    let t = &row.tiers;
    // A demanded source prototype removed: not verbatim at its demanding call.
    let removed = t.one_call_away + t.further_away + t.refetchable + t.lost;
    assert!(
        removed > 0,
        "the generated session re-reads files prototype has persisted"
    );
    let (open, closed) = (row.open_dollars.unwrap(), row.dollars.unwrap());
    assert!(
        closed > open,
        "prototype removed {removed} demanded sources: closed ${closed} vs open ${open}"
    );
    assert!(row.recovery_calls + row.refetches > 0);
    // The closed-loop point is the row's.
    let scored = data
        .frontier
        .iter()
        .find(|s| s.policy == "prototype")
        .unwrap();
    let point = scored.closed.expect("a closed-loop point");
    assert_eq!(point.dollars, closed);
    assert_eq!(point.recovery_calls, row.recovery_calls);
    // In-request recall counts only what is verbatim: below the open
    // recall, which counts what its pointers reach.
    assert!(point.in_request_recall < scored.artifact_recall);
    // The closed frontier: at least two points once pointers are paid for.
    let on: Vec<&str> = data
        .frontier
        .iter()
        .filter(|s| s.closed.is_some_and(|c| !c.dominated))
        .map(|s| s.policy.as_str())
        .collect();
    assert!(on.len() >= 2, "closed-loop frontier: {on:?}");
    // Every frontier point is undominated by every other closed point.
    for s in data
        .frontier
        .iter()
        .filter(|s| on.contains(&s.policy.as_str()))
    {
        let me = s.closed.unwrap();
        for o in data.frontier.iter().filter_map(|o| o.closed) {
            assert!(
                !(o.dollars < me.dollars && o.in_request_recall > me.in_request_recall),
                "{} is dominated",
                s.policy
            );
        }
    }
}
