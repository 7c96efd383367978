//! What a replay found, in a few ranked sentences for the top of the HTML
//! report: the cheapest policy at each retention tier, the largest loss,
//! the invalid requests, and thrash. A pure function of the runs and their
//! scores, so the headline and the tables below it never disagree.

use crate::replay::runs::policies::Compared;
use crate::retention::render::Scored;
use crate::retention::Status;

/// One finding: a short title and the sentence that states it.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// What it is about (`cheapest keeping every fact in the request`, …).
    pub topic: String,
    /// The finding, with its figures.
    pub text: String,
}

/// Whether a scored run is in a retention tier.
type InTier = fn(&Scored) -> bool;

/// Retention tiers, strictest first: what a policy must keep of the planted
/// facts to be in the tier. The second is open loop: a fact behind a
/// pointer counts as kept and following the pointer is free, so it is
/// shown only when the runs were not closed ([`CLOSED_TIER`] replaces it).
const TIERS: [(&str, InTier); 3] = [
    ("keeping every planted fact in the request", |x| {
        x.retention
            .facts
            .iter()
            .all(|f| f.status == Status::Present)
    }),
    (
        "keeping every planted fact in the request or behind a pointer",
        |x| x.retention.facts.iter().all(|f| f.status != Status::Gone),
    ),
    ("at any retention", |_| true),
];

/// The closed-loop tier: every demand met, in the request or by the
/// recovery calls and re-fetches the closed loop inserted and priced.
const CLOSED_TIER: &str = "meeting every demand, its recovery paid (closed loop)";

/// What a run cost, as the page compares runs: its dollars when priced,
/// else its tokens sent (envelope included), with the unit.
fn price(c: &Compared) -> (f64, String) {
    match &c.cost {
        Some(r) => (r.dollars, format!("${:.4}", r.dollars)),
        None => {
            let t: usize = c.run.calls.iter().map(|x| x.tokens + x.envelope).sum();
            (t as f64, format!("{t} tokens sent"))
        }
    }
}

/// The findings of `runs`, most important first, per session when there
/// are several.
pub fn findings(runs: &[Compared], scored: &[Scored]) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut sessions: Vec<&str> = Vec::new();
    for c in runs {
        if !sessions.contains(&c.run.session.as_str()) {
            sessions.push(&c.run.session);
        }
    }
    let several = sessions.len() > 1;
    for session in sessions {
        let of: Vec<&Compared> = runs.iter().filter(|c| c.run.session == session).collect();
        let on = |t: &str| match several {
            true => format!("{t} on {session}"),
            false => t.to_string(),
        };
        out.extend(cheapest(&of, scored, &on));
        out.push(largest_loss(&of, scored, &on));
        out.push(invalid(&of, &on));
        if let Some(f) = thrash(&of, &on) {
            out.push(f);
        }
    }
    out
}

/// The cheapest run in each tier (every run is in the last), skipping a
/// tier whose cheapest is the same run as the stricter tier's. A run that
/// ended by error is in no tier: its cheapness is calls it never made.
/// With closed-loop runs the middle tier is [`CLOSED_TIER`], priced at the
/// closed-loop dollars.
fn cheapest(of: &[&Compared], scored: &[Scored], on: &dyn Fn(&str) -> String) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut last: Option<&str> = None;
    let score = |c: &Compared| {
        scored
            .iter()
            .find(|x| x.session == c.run.session && x.policy == c.run.policy)
    };
    let finished: Vec<&&Compared> = of
        .iter()
        .filter(|c| c.run.ended_by_error.is_none())
        .collect();
    let measured = finished.iter().any(|c| score(c).is_some());
    let closed = finished
        .iter()
        .any(|c| score(c).is_some_and(|x| x.closed.is_some()));
    for (k, (tier, holds)) in TIERS.into_iter().enumerate() {
        if !measured && k != 2 {
            continue;
        }
        if closed && k == 1 {
            let best = finished
                .iter()
                .filter_map(|c| Some((c, score(c)?.closed?)))
                .filter(|(_, p)| p.lost_demands == 0)
                .min_by(|a, b| a.1.dollars.total_cmp(&b.1.dollars));
            let topic = on(&format!("cheapest {CLOSED_TIER}"));
            match best {
                Some((c, p)) => {
                    last = Some(&c.run.policy);
                    let unit = match c.cost {
                        Some(_) => format!("${:.4}", p.dollars),
                        None => format!("{:.0} tokens sent", p.dollars),
                    };
                    out.push(Finding {
                        topic,
                        text: format!(
                            "{}: {unit} closed loop ({} recovery calls, {} re-fetches; {} open loop), in-request recall {:.1} %",
                            c.run.policy,
                            p.recovery_calls,
                            p.refetches,
                            price(c).1,
                            p.in_request_recall
                        ),
                    });
                }
                None => out.push(Finding {
                    topic,
                    text: "no policy".into(),
                }),
            }
            continue;
        }
        let best = finished
            .iter()
            .filter(|c| !measured || score(c).is_some_and(holds))
            .min_by(|a, b| price(a).0.total_cmp(&price(b).0));
        let topic = on(&format!("cheapest {tier}"));
        match best {
            Some(c) if last == Some(c.run.policy.as_str()) => {}
            Some(c) => {
                last = Some(&c.run.policy);
                let kept = score(c).map_or(String::new(), |x| {
                    format!(", artifact recall {:.1} %", x.artifact_recall)
                });
                out.push(Finding {
                    topic,
                    text: format!("{}: {}{kept}", c.run.policy, price(c).1),
                });
            }
            None => out.push(Finding {
                topic,
                text: "no policy".into(),
            }),
        }
    }
    out
}

/// The run that lost most: tool results lost for good, then planted facts gone.
fn largest_loss(of: &[&Compared], scored: &[Scored], on: &dyn Fn(&str) -> String) -> Finding {
    let gone = |c: &Compared| {
        scored
            .iter()
            .find(|x| x.session == c.run.session && x.policy == c.run.policy)
            .map_or(0, |x| {
                x.retention
                    .facts
                    .iter()
                    .filter(|f| f.status == Status::Gone)
                    .count()
            })
    };
    let loss = |c: &Compared| (c.run.findings.lost_forever.count, gone(c));
    let worst = of
        .iter()
        .max_by_key(|c| loss(c))
        .filter(|c| loss(c) != (0, 0));
    Finding {
        topic: on("largest loss"),
        text: match worst {
            Some(c) => {
                let (lost, facts) = loss(c);
                format!(
                    "{}: {lost} tool results lost for good, {facts} planted facts gone",
                    c.run.policy
                )
            }
            None => "no policy lost a tool result or a planted fact".into(),
        },
    }
}

/// The runs that sent requests the provider would refuse.
fn invalid(of: &[&Compared], on: &dyn Fn(&str) -> String) -> Finding {
    let bad: Vec<String> = of
        .iter()
        .filter(|c| c.run.invalid_requests > 0)
        .map(|c| format!("{} ({})", c.run.policy, c.run.invalid_requests))
        .collect();
    Finding {
        topic: on("invalid requests"),
        text: match bad.is_empty() {
            true => "none: every policy's requests pass the validity oracle".into(),
            false => format!(
                "{} policies sent requests the provider would refuse: {}",
                bad.len(),
                bad.join(", ")
            ),
        },
    }
}

/// Thrash, from the closed-loop rows (`--closed-loop`); `None` without them.
fn thrash(of: &[&Compared], on: &dyn Fn(&str) -> String) -> Option<Finding> {
    let rows: Vec<_> = of.iter().filter_map(|c| c.closed_loop.as_ref()).collect();
    if rows.is_empty() {
        return None;
    }
    let looping: Vec<&str> = rows
        .iter()
        .filter(|r| r.thrash.looping)
        .map(|r| r.policy.as_str())
        .collect();
    Some(Finding {
        topic: on("thrash"),
        text: match looping.is_empty() {
            true => "no policy thrashes (compacts, then fetches back what it removed)".into(),
            false => format!("{} thrash: {}", looping.len(), looping.join(", ")),
        },
    })
}
