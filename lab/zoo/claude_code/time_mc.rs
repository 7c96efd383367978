//! Claude Code's time-based microcompact: once the gap since the last
//! assistant reply reaches the prompt cache's lifetime, the cached prefix is
//! gone anyway, so old tool results are content-cleared before the request.
//!
//! Source (a public mirror of Claude Code's source, so approximate):
//! `DroxKiwi/claude-code-leak-packaged@fb1320d1baf5b77a0a02c15f41efb1dfa9aeff4b`,
//! `src/services/compact/timeBasedMCConfig.ts` (`TimeBasedMCConfig`, defaults
//! `enabled: false`, `gapThresholdMinutes` 60, `keepRecent` 5, behind the
//! GrowthBook flag `tengu_slate_heron`) and `src/services/compact/microCompact.ts`
//! (`TIME_BASED_MC_CLEARED_MESSAGE`, `COMPACTABLE_TOOLS`,
//! `collectCompactableToolIds`, `evaluateTimeBasedTrigger`,
//! `maybeTimeBasedMicrocompact`, `calculateToolResultTokens`); tool names from
//! the tool modules beside them (`SHELL_TOOL_NAMES` is Bash and PowerShell).
//!
//! As upstream: the trigger fires when `(now − last assistant timestamp)` in
//! minutes is at least `gapThresholdMinutes` (no assistant message or no
//! time: no trigger); the ids of the compactable tools' calls are collected
//! in order, the newest `max(1, keepRecent)` kept, and every other of their
//! results not already the cleared text becomes it. When that frees no token
//! by `roughTokenCountEstimation` (`round(length / 4)`), nothing changes. The
//! clearing rewrites the history (the cache is cold, nothing to preserve).
//!
//! The mechanism ([`clear_old`]) is also the `claude-code` policy's microcompaction.

use serde::{Deserialize, Serialize};

use crate::error::LabResult;
use crate::message::{tool_results_mut, Block, Message};
use crate::policy::{
    PointerRule, Policy, PolicyCtx, PolicyEvent, PolicyInfo, Prepared, Source, Unit,
};

/// The policy name in `lab policies`.
pub const NAME: &str = "claude-code-time-mc";

/// `TIME_BASED_MC_CLEARED_MESSAGE`, byte for byte.
pub const TIME_BASED_MC_CLEARED_MESSAGE: &str = "[Old tool result content cleared]";

/// `COMPACTABLE_TOOLS`: Read, the shell tools (Bash, PowerShell), Grep, Glob,
/// WebSearch, WebFetch, Edit, Write.
pub const COMPACTABLE_TOOLS: [&str; 9] = [
    "Read",
    "Bash",
    "PowerShell",
    "Grep",
    "Glob",
    "WebSearch",
    "WebFetch",
    "Edit",
    "Write",
];

/// `TimeBasedMCConfig` without `enabled` (the lab runs it enabled), plus the
/// tool list; `Default` is upstream's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[allow(non_snake_case)]
pub struct Switches {
    /// Minutes since the last assistant reply at which clearing runs (60:
    /// the server's one-hour cache lifetime has surely passed).
    pub gapThresholdMinutes: f64,
    /// Newest compactable results kept (5; upstream floors it at 1).
    pub keepRecent: usize,
    /// Tools whose results may be cleared (`COMPACTABLE_TOOLS`).
    pub COMPACTABLE_TOOLS: Vec<String>,
}

impl Default for Switches {
    fn default() -> Self {
        Switches {
            gapThresholdMinutes: 60.0,
            keepRecent: 5,
            COMPACTABLE_TOOLS: COMPACTABLE_TOOLS.map(String::from).to_vec(),
        }
    }
}

/// The policy: switches and the recorded time of the last assistant reply.
#[derive(Debug, Clone, Default)]
pub struct TimeMc {
    /// Constants.
    pub switches: Switches,
    /// Time of the newest assistant message in the history: the time of the
    /// reply the previous call produced (`None` before the first reply or
    /// when the transcript has no time for it).
    last_reply_ms: Option<u64>,
}

/// A boxed policy with upstream's defaults.
pub fn make() -> Box<dyn Policy> {
    Box::new(TimeMc::default())
}

/// `roughTokenCountEstimation`: `Math.round(length / 4)` over UTF-16 units.
pub fn rough_tokens(text: &str) -> usize {
    (text.encode_utf16().count() + 2) / 4
}

/// `evaluateTimeBasedTrigger`: whether `now_ms − last_reply_ms` is at least
/// the threshold (no reply or no time: never).
pub fn fires(last_reply_ms: Option<u64>, now_ms: Option<u64>, threshold_minutes: f64) -> bool {
    let (Some(last), Some(now)) = (last_reply_ms, now_ms) else {
        return false;
    };
    let gap_minutes = (now as f64 - last as f64) / 60_000.0;
    gap_minutes.is_finite() && gap_minutes >= threshold_minutes
}

/// The clearing of `maybeTimeBasedMicrocompact`: all but the newest
/// `max(1, keep_recent)` calls of `compactable` tools lose their result to
/// the cleared text. Returns the events, or nothing (and leaves `history`
/// as it was) when no token would be freed.
pub fn clear_old(
    history: &mut [Message],
    compactable: &[String],
    keep_recent: usize,
) -> Vec<PolicyEvent> {
    let ids: Vec<String> = history
        .iter()
        .flat_map(Message::blocks)
        .filter_map(|b| match b {
            Block::ToolUse { id, name, .. } if compactable.contains(name) => Some(id.clone()),
            _ => None,
        })
        .collect();
    let clear = &ids[..ids.len().saturating_sub(keep_recent.max(1))];
    let saved: usize = tool_results_mut(history)
        .filter(|(id, content)| clear.contains(id) && *content != TIME_BASED_MC_CLEARED_MESSAGE)
        .map(|(_, content)| rough_tokens(content))
        .sum();
    if saved == 0 {
        return Vec::new();
    }
    let mut events = Vec::new();
    for (id, content) in tool_results_mut(history) {
        if clear.contains(id) && content != TIME_BASED_MC_CLEARED_MESSAGE {
            *content = TIME_BASED_MC_CLEARED_MESSAGE.into();
            events.push(PolicyEvent::Cleared {
                id: id.clone(),
                part: "result",
                placeholder: TIME_BASED_MC_CLEARED_MESSAGE.into(),
            });
        }
    }
    events
}

impl Policy for TimeMc {
    fn configure(&mut self, overrides: &crate::policy::variant::Overrides) -> Result<(), String> {
        crate::policy::variant::set_fields(&mut self.switches, overrides)
    }

    fn variant_keys(&self) -> crate::policy::variant::Overrides {
        crate::policy::variant::fields(&self.switches)
    }

    fn info(&self) -> PolicyInfo {
        PolicyInfo {
            name: NAME.into(),
            family: "Claude Code",
            summary: "time-based microcompact: 60 minutes after the last reply (a cold cache), all but the newest 5 results of the compactable tools become a cleared marker".into(),
            source: Source {
                upstream: "DroxKiwi/claude-code-leak-packaged@fb1320d1baf5b77a0a02c15f41efb1dfa9aeff4b (a mirror of Claude Code's source)".into(),
                files: &[
                    "src/services/compact/timeBasedMCConfig.ts",
                    "src/services/compact/microCompact.ts",
                ],
                license: "closed source, read in a public mirror (no code reproduced)",
                approximate: true,
            },
            constants: serde_json::json!({
                "switches": self.switches,
                "TIME_BASED_MC_CLEARED_MESSAGE": TIME_BASED_MC_CLEARED_MESSAGE,
            }),
            unit: Unit::Messages,
            differences: vec![
                "runs enabled: upstream's default is `enabled: false`, switched on per user by the GrowthBook flag `tengu_slate_heron`",
                "`now` is the recorded time of the reply the request produced (the request's own time is not recorded), so the gap includes the model's latency",
                "time-based microcompact alone: persistence, auto-compaction and the cache-editing path are not part of this policy (`claude-code` has the first two)",
                "every request counts as the main thread's (sub-agents and analysis calls never trigger upstream)",
            ],
        }
    }

    fn acts_on(&self) -> crate::policy::shape::ActsOn {
        crate::policy::shape::ActsOn::ToolResults
    }

    fn pointer_rules(&self) -> Vec<PointerRule> {
        // The cleared marker names no place: the original is gone.
        Vec::new()
    }

    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        let s = &self.switches;
        let events = if fires(self.last_reply_ms, ctx.now_ms, s.gapThresholdMinutes) {
            clear_old(history, &s.COMPACTABLE_TOOLS, s.keepRecent)
        } else {
            Vec::new()
        };
        self.last_reply_ms = ctx.now_ms;
        Ok(Prepared {
            request: history.clone(),
            events,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::model::Scripted;

    const MIN: u64 = 60_000;

    fn call(id: &str, tool: &str) -> Message {
        Message::assistant(vec![Block::ToolUse {
            id: id.into(),
            name: tool.into(),
            input: serde_json::json!({}).into(),
        }])
    }

    fn result(id: &str, text: &str) -> Message {
        Message::tool_results(vec![(id.into(), text.into())])
    }

    /// A task, then `t0` by TodoWrite (not compactable) and `t1`..`t7` by
    /// Read and Bash, each with its output.
    fn history() -> Vec<Message> {
        let mut h = vec![Message::user_text("fix the parser")];
        for i in 0..8 {
            let tool = match i {
                0 => "TodoWrite",
                i if i % 2 == 0 => "Bash",
                _ => "Read",
            };
            h.push(call(&format!("t{i}"), tool));
            h.push(result(&format!("t{i}"), &format!("output of t{i}")));
        }
        h
    }

    /// Prepare once at each time, the way the engine calls before each reply.
    fn run(p: &mut TimeMc, h: &mut Vec<Message>, times: &[Option<u64>]) -> Vec<Prepared> {
        let mut model = Scripted::default();
        times
            .iter()
            .map(|&now| {
                PolicyCtx::with_test("/run/tmc", &mut model, |ctx| {
                    ctx.now_ms = now;
                    p.prepare(h, ctx).unwrap()
                })
            })
            .collect()
    }

    fn cleared(out: &Prepared) -> Vec<&str> {
        out.events
            .iter()
            .map(|e| match e {
                PolicyEvent::Cleared { id, part, .. } => {
                    assert_eq!(*part, "result");
                    id.as_str()
                }
                other => panic!("unexpected {other:?}"),
            })
            .collect()
    }

    /// Derived line by line from `maybeTimeBasedMicrocompact` (upstream runs
    /// only inside the closed product): seven compactable calls, the newest
    /// five kept, `t1` and `t2` cleared, TodoWrite's `t0` never; the history
    /// itself is rewritten.
    #[test]
    fn golden_derived_clears_all_but_the_newest_five_compactable_results() {
        let mut p = TimeMc::default();
        let mut h = history();
        let outs = run(&mut p, &mut h, &[Some(0), Some(60 * MIN)]);
        assert!(outs[0].events.is_empty(), "no reply before the first call");
        let mut want = history();
        want[4] = result("t1", TIME_BASED_MC_CLEARED_MESSAGE);
        want[6] = result("t2", TIME_BASED_MC_CLEARED_MESSAGE);
        assert_eq!(outs[1].request, want);
        assert_eq!(h, want, "the history is rewritten, not only the request");
        assert_eq!(cleared(&outs[1]), ["t1", "t2"]);
    }

    #[test]
    fn the_gap_fires_at_the_threshold_and_not_a_millisecond_before() {
        assert!(!fires(Some(0), Some(60 * MIN - 1), 60.0));
        assert!(fires(Some(0), Some(60 * MIN), 60.0));
        assert!(!fires(None, Some(600 * MIN), 60.0), "no reply yet");
        assert!(!fires(Some(0), None, 60.0), "no recorded time");
        let mut p = TimeMc::default();
        let mut h = history();
        // Three calls each 59 minutes apart: the gap is measured from the
        // last reply, not from the session's start, so nothing fires.
        let outs = run(&mut p, &mut h, &[Some(0), Some(59 * MIN), Some(118 * MIN)]);
        assert!(outs.iter().all(|o| o.events.is_empty()));
        assert_eq!(h, history());
    }

    #[test]
    fn keep_recent_is_floored_at_one_and_already_cleared_results_are_skipped() {
        let mut p = TimeMc::default();
        p.switches.keepRecent = 0;
        let mut h = history();
        let outs = run(&mut p, &mut h, &[Some(0), Some(61 * MIN)]);
        assert_eq!(cleared(&outs[1]), ["t1", "t2", "t3", "t4", "t5", "t6"]);
        assert_eq!(h[16], result("t7", "output of t7"), "the newest stays");
        // Another idle gap finds nothing new to clear.
        let again = run(&mut p, &mut h, &[Some(200 * MIN)]);
        assert!(again[0].events.is_empty());
    }

    #[test]
    fn nothing_changes_when_clearing_would_free_no_token() {
        // `round(1 / 4)` is 0: one-character results free nothing.
        let mut h = vec![Message::user_text("go")];
        for i in 0..7 {
            h.push(call(&format!("t{i}"), "Bash"));
            h.push(result(&format!("t{i}"), "a"));
        }
        let before = h.clone();
        let outs = run(&mut TimeMc::default(), &mut h, &[Some(0), Some(90 * MIN)]);
        assert!(outs[1].events.is_empty());
        assert_eq!(h, before);
        assert_eq!(rough_tokens("ab"), 1, "round half up");
        assert_eq!(rough_tokens("abcdef"), 2);
    }

    #[test]
    fn a_variant_sets_the_upstream_names() {
        use crate::policy::variant::parse;
        let (_, set) = parse("claude-code-time-mc:gapThresholdMinutes=5:keepRecent=2").unwrap();
        let mut p = TimeMc::default();
        p.configure(&set).unwrap();
        assert_eq!(p.switches.gapThresholdMinutes, 5.0);
        assert_eq!(p.switches.keepRecent, 2);
        let (_, bad) = parse("claude-code-time-mc:keep=2").unwrap();
        assert!(p.configure(&bad).unwrap_err().contains("keepRecent"));
    }
}
