//! Claude Code's API microcompact: the context-management edits Claude Code
//! asks the Anthropic API to apply server-side, `clear_thinking_20251015`
//! and `clear_tool_uses_20250919`.
//!
//! Source (a public mirror of Claude Code's source, so approximate):
//! `DroxKiwi/claude-code-leak-packaged@fb1320d1baf5b77a0a02c15f41efb1dfa9aeff4b`,
//! `src/services/compact/apiMicrocompact.ts` (`getAPIContextManagement`,
//! `DEFAULT_MAX_INPUT_TOKENS` 180,000, `DEFAULT_TARGET_INPUT_TOKENS` 40,000,
//! `TOOLS_CLEARABLE_RESULTS`, `TOOLS_CLEARABLE_USES`), and the caller in
//! `src/services/api/claude.ts` (`thinkingClearLatched`: set for the rest of
//! the session once more than `CACHE_TTL_1HOUR_MS` has passed since the last
//! API completion).
//!
//! What Claude Code sends, in order:
//! 1. when the request has thinking (and redact-thinking is off):
//!    `clear_thinking_20251015` with `keep: "all"`, or
//!    `keep: {thinking_turns: 1}` once the idle latch is set;
//! 2. Anthropic-internal builds only (`USER_TYPE=ant`), with
//!    `USE_API_CLEAR_TOOL_RESULTS`: `clear_tool_uses_20250919` with trigger
//!    `API_MAX_INPUT_TOKENS` (180,000), `clear_at_least` trigger − target
//!    (140,000) and `clear_tool_inputs` = the clearable-result tools;
//! 3. same builds, with `USE_API_CLEAR_TOOL_USES`: the same trigger and
//!    floor with `exclude_tools` = the edit tools.
//!
//! The tool edits run through [`ClearToolUses`], the lab's model of the API
//! strategy (its placeholder and token counting included); the thinking edit
//! is modelled here from the context-editing documentation: thinking blocks
//! survive only in the newest `keep` assistant turns that have them.
//! Projecting, as the API is: the client history stays whole.

use serde::{Deserialize, Serialize};

use crate::anthropic_clear_tool_uses::{
    ClearAtLeast, ClearInputs, ClearToolUses, Switches as ToolSwitches, Trigger,
};
use crate::error::LabResult;
use crate::message::{Block, Content, Message, Role};
use crate::policy::{
    PointerRule, Policy, PolicyCtx, PolicyEvent, PolicyInfo, Prepared, Source, Unit,
};

/// The policy name in `lab policies`.
pub const NAME: &str = "claude-code-api-mc";

/// `TOOLS_CLEARABLE_RESULTS`: the shell tools, Glob, Grep, Read, WebFetch, WebSearch.
pub const TOOLS_CLEARABLE_RESULTS: [&str; 7] = [
    "Bash",
    "PowerShell",
    "Glob",
    "Grep",
    "Read",
    "WebFetch",
    "WebSearch",
];

/// `TOOLS_CLEARABLE_USES`: Edit, Write, NotebookEdit.
pub const TOOLS_CLEARABLE_USES: [&str; 3] = ["Edit", "Write", "NotebookEdit"];

/// `CACHE_TTL_1HOUR_MS`: the idle gap that latches clearing all but the last thinking turn.
pub const CACHE_TTL_1HOUR_MS: u64 = 60 * 60 * 1000;

/// The inputs of `getAPIContextManagement` under their upstream names
/// (environment variables and options); `Default` is an internal build with
/// `USE_API_CLEAR_TOOL_RESULTS` set and the defaults of the rest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[allow(non_snake_case)]
pub struct Switches {
    /// `API_MAX_INPUT_TOKENS` (default `DEFAULT_MAX_INPUT_TOKENS`, 180,000): the trigger.
    pub API_MAX_INPUT_TOKENS: usize,
    /// `API_TARGET_INPUT_TOKENS` (default `DEFAULT_TARGET_INPUT_TOKENS`,
    /// 40,000): `clear_at_least` is the trigger minus this.
    pub API_TARGET_INPUT_TOKENS: usize,
    /// `USER_TYPE=ant`: the tool edits exist in internal builds only.
    pub USER_TYPE_ANT: bool,
    /// `USE_API_CLEAR_TOOL_RESULTS` (the lab sets it).
    pub USE_API_CLEAR_TOOL_RESULTS: bool,
    /// `USE_API_CLEAR_TOOL_USES` (unset).
    pub USE_API_CLEAR_TOOL_USES: bool,
    /// `isRedactThinkingActive`: redacted thinking gets no thinking edit (false).
    pub isRedactThinkingActive: bool,
}

impl Default for Switches {
    fn default() -> Self {
        Switches {
            API_MAX_INPUT_TOKENS: 180_000,
            API_TARGET_INPUT_TOKENS: 40_000,
            USER_TYPE_ANT: true,
            USE_API_CLEAR_TOOL_RESULTS: true,
            USE_API_CLEAR_TOOL_USES: false,
            isRedactThinkingActive: false,
        }
    }
}

impl Switches {
    /// The `clear_tool_uses_20250919` edits `getAPIContextManagement` sends,
    /// in its order, as the lab's model of the API strategy.
    pub fn tool_edits(&self) -> Vec<ClearToolUses> {
        if !self.USER_TYPE_ANT {
            return Vec::new();
        }
        let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let base = ToolSwitches {
            trigger: Trigger::InputTokens(self.API_MAX_INPUT_TOKENS),
            clear_at_least: Some(ClearAtLeast::InputTokens(
                self.API_MAX_INPUT_TOKENS
                    .saturating_sub(self.API_TARGET_INPUT_TOKENS),
            )),
            ..ToolSwitches::default()
        };
        let mut out = Vec::new();
        if self.USE_API_CLEAR_TOOL_RESULTS {
            out.push(ToolSwitches {
                clear_tool_inputs: ClearInputs::Tools(names(&TOOLS_CLEARABLE_RESULTS)),
                ..base.clone()
            });
        }
        if self.USE_API_CLEAR_TOOL_USES {
            out.push(ToolSwitches {
                exclude_tools: names(&TOOLS_CLEARABLE_USES),
                ..base
            });
        }
        out.into_iter().map(ClearToolUses::new).collect()
    }
}

/// The policy: switches, the idle latch and the time of the last reply.
#[derive(Debug, Clone, Default)]
pub struct ApiMc {
    /// Constants.
    pub switches: Switches,
    /// `thinkingClearLatched`: once set, only the last thinking turn is kept.
    thinking_clear_latched: bool,
    /// Recorded time of the last reply (the last API completion).
    last_completion_ms: Option<u64>,
    /// The tool edits, kept between calls (each keeps its clearing) with
    /// the switches they were made from.
    edits: Option<(Switches, Vec<ClearToolUses>)>,
    /// Whether the first edit was last given the history itself, not a
    /// copy with thinking cleared.
    edits_on_history: bool,
}

/// A boxed policy with the defaults above.
pub fn make() -> Box<dyn Policy> {
    Box::new(ApiMc::default())
}

/// `clear_thinking_20251015` with `keep: {thinking_turns: keep}`: thinking
/// blocks stay only in the newest `keep` assistant turns that have some;
/// an assistant message left with no block leaves the request. Returns the
/// event, if anything was cleared.
///
/// An assistant turn is everything the assistant sends between two user
/// prompts, its tool loop included: the documentation says a turn "may
/// include multiple content blocks (e.g. when using tools) and multiple
/// thinking blocks (e.g. with interleaved thinking)". Counting each message
/// as a turn would clear the previous call's thinking at every call of a
/// tool loop and rewrite the cache each time.
pub fn clear_thinking(request: &mut Vec<Message>, keep: usize) -> Option<PolicyEvent> {
    let has = |m: &Message| {
        m.role == Role::Assistant
            && m.blocks()
                .iter()
                .any(|b| matches!(b, Block::Thinking { .. }))
    };
    let turn_of = assistant_turns(request);
    let mut turns: Vec<usize> = (0..request.len())
        .filter(|&i| has(&request[i]))
        .map(|i| turn_of[i])
        .collect();
    turns.dedup();
    let older = &turns[..turns.len().saturating_sub(keep)];
    let cleared: Vec<usize> = (0..request.len())
        .filter(|&i| has(&request[i]) && older.contains(&turn_of[i]))
        .collect();
    if cleared.is_empty() {
        return None;
    }
    let mut blocks = 0;
    for &i in &cleared {
        if let Content::Blocks(b) = &mut request[i].content {
            let before = b.len();
            b.retain(|x| !matches!(x, Block::Thinking { .. }));
            blocks += before - b.len();
        }
    }
    let before = request.len();
    let mut i = 0;
    request.retain(|m| {
        let emptied = cleared.contains(&i) && m.blocks().is_empty();
        i += 1;
        !emptied
    });
    Some(PolicyEvent::Dropped {
        messages: before - request.len(),
        why: format!(
            "clear_thinking_20251015: {blocks} thinking blocks of {} earlier assistant turns cleared",
            older.len()
        ),
    })
}

/// For each message, the number of user prompts before or at it: the
/// assistant turn it belongs to (a user message that carries only tool
/// results continues the turn).
fn assistant_turns(request: &[Message]) -> Vec<usize> {
    let mut turn = 0;
    request
        .iter()
        .map(|m| {
            turn += (m.role == Role::User && !m.is_tool_result()) as usize;
            turn
        })
        .collect()
}

impl ApiMc {
    /// The tool edits of the current switches, made again when they changed.
    fn edits(&mut self) -> &mut Vec<ClearToolUses> {
        if self.edits.as_ref().is_none_or(|(s, _)| *s != self.switches) {
            self.edits = Some((self.switches.clone(), self.switches.tool_edits()));
        }
        &mut self.edits.get_or_insert_with(Default::default).1
    }

    /// The caller's latch: set for good once the gap since the last API
    /// completion exceeds an hour.
    fn latch(&mut self, now_ms: Option<u64>) {
        if let (Some(last), Some(now)) = (self.last_completion_ms, now_ms) {
            if now.saturating_sub(last) > CACHE_TTL_1HOUR_MS {
                self.thinking_clear_latched = true;
            }
        }
    }
}

impl Policy for ApiMc {
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
            summary: "API microcompact: server-side clear_tool_uses past 180k input tokens (must free 140k), clear_thinking to the last thinking turn after an hour idle; history kept whole".into(),
            source: Source {
                upstream: "DroxKiwi/claude-code-leak-packaged@fb1320d1baf5b77a0a02c15f41efb1dfa9aeff4b (a mirror of Claude Code's source)".into(),
                files: &[
                    "src/services/compact/apiMicrocompact.ts",
                    "src/services/api/claude.ts (thinkingClearLatched)",
                    "https://platform.claude.com/docs/en/build-with-claude/context-editing (the edits' semantics, read 2026-12-03)",
                ],
                license: "closed source, read in a public mirror (no code reproduced)",
                approximate: true,
            },
            constants: serde_json::json!({
                "switches": self.switches,
                "clear_at_least": self.switches.API_MAX_INPUT_TOKENS.saturating_sub(self.switches.API_TARGET_INPUT_TOKENS),
                "TOOLS_CLEARABLE_RESULTS": TOOLS_CLEARABLE_RESULTS,
                "TOOLS_CLEARABLE_USES": TOOLS_CLEARABLE_USES,
                "CACHE_TTL_1HOUR_MS": CACHE_TTL_1HOUR_MS,
            }),
            unit: Unit::Tokens,
            differences: vec![
                "runs as an internal build (`USER_TYPE=ant`) with `USE_API_CLEAR_TOOL_RESULTS` set: external builds send the thinking edit only",
                "the tool edit is the lab's `anthropic-clear-tool-uses` model of the API (placeholder `[cleared]`, a cleared input `{}`, the run's token counter, `keep` at the API's documented 3)",
                "`hasThinking` is read from the history (a thinking block in it); a thinking turn is what the assistant sends between two user prompts, its tool loop included (the documentation's assistant turn), and a message left empty leaves the request",
                "the idle latch compares the recorded times of consecutive replies and is never reset (upstream resets it on /clear and /compact)",
            ],
        }
    }

    fn acts_on(&self) -> crate::policy::shape::ActsOn {
        crate::policy::shape::ActsOn::ToolCallsOrReasoning
    }

    fn pointer_rules(&self) -> Vec<PointerRule> {
        // Nothing cleared names a place: the originals stay in the client history.
        Vec::new()
    }

    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        self.latch(ctx.now_ms);
        self.last_completion_ms = ctx.now_ms;
        let mut events = Vec::new();
        let has_thinking = history
            .iter()
            .flat_map(Message::blocks)
            .any(|b| matches!(b, Block::Thinking { .. }));
        // `keep: "all"` clears nothing; the latch keeps one thinking turn.
        // `None`: the request is the history itself so far.
        let mut request = None;
        if has_thinking && !self.switches.isRedactThinkingActive && self.thinking_clear_latched {
            let mut r = history.clone();
            events.extend(clear_thinking(&mut r, 1));
            request = Some(r);
        }
        let on_history = request.is_none();
        let first_fits = on_history == self.edits_on_history;
        self.edits_on_history = on_history;
        for (k, edit) in self.edits().iter_mut().enumerate() {
            // An edit keeps its clearing between calls for a history that
            // only grows: the first one's, unless thinking was cleared.
            if k > 0 || !on_history || !first_fits {
                edit.history_replaced();
            }
            let out = match request.as_mut() {
                None => edit.prepare(history, ctx)?,
                Some(r) => edit.prepare(r, ctx)?,
            };
            request = Some(out.request);
            events.extend(out.events);
        }
        Ok(Prepared {
            request: request.unwrap_or_else(|| history.clone()),
            events,
        })
    }

    fn history_replaced(&mut self) {
        self.edits = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::model::Scripted;

    const HOUR: u64 = CACHE_TTL_1HOUR_MS;

    fn think(text: &str, id: &str) -> Message {
        Message::assistant(vec![
            Block::Thinking {
                thinking: text.into(),
            },
            Block::ToolUse {
                id: id.into(),
                name: "Read".into(),
                input: serde_json::json!({ "file_path": format!("/src/{id}.rs") }).into(),
            },
        ])
    }

    fn result(id: &str, text: &str) -> Message {
        Message::tool_results(vec![(id.into(), text.into())])
    }

    /// Three Read turns with thinking, then a thinking-only assistant message.
    fn history() -> Vec<Message> {
        vec![
            Message::user_text("fix the parser"),
            think("plan A", "t1"),
            result("t1", "fn parse() {}"),
            think("plan B", "t2"),
            result("t2", "fn lex() {}"),
            Message::assistant(vec![Block::Thinking {
                thinking: "hmm".into(),
            }]),
            Message::user_text("go on"),
            think("plan C", "t3"),
            result("t3", "fn emit() {}"),
        ]
    }

    fn run(p: &mut ApiMc, h: &mut Vec<Message>, now: Option<u64>) -> Prepared {
        let mut model = Scripted::default();
        PolicyCtx::with_test("/run/apimc", &mut model, |ctx| {
            ctx.now_ms = now;
            p.prepare(h, ctx).unwrap()
        })
    }

    #[test]
    fn the_default_edits_are_the_internal_tool_results_strategy() {
        let edits = Switches::default().tool_edits();
        assert_eq!(edits.len(), 1);
        let s = &edits[0].switches;
        assert_eq!(s.trigger, Trigger::InputTokens(180_000));
        assert_eq!(s.clear_at_least, Some(ClearAtLeast::InputTokens(140_000)));
        assert!(s.exclude_tools.is_empty());
        let external = Switches {
            USER_TYPE_ANT: false,
            ..Switches::default()
        };
        assert!(external.tool_edits().is_empty());
        let both = Switches {
            USE_API_CLEAR_TOOL_USES: true,
            ..Switches::default()
        };
        assert_eq!(
            both.tool_edits()[1].switches.exclude_tools,
            TOOLS_CLEARABLE_USES
        );
    }

    /// Derived from `getAPIContextManagement` and the documented semantics
    /// of the two edits (both run only inside Anthropic's API): before the
    /// latch nothing changes (`keep: "all"`); after an hour idle only the last
    /// thinking turn keeps its thinking, the thinking-only message leaves the
    /// request, and the client history is whole.
    #[test]
    fn golden_derived_thinking_is_kept_until_an_hour_idle_then_only_the_last_turn() {
        let mut p = ApiMc::default();
        let mut h = history();
        let warm = run(&mut p, &mut h, Some(0));
        assert_eq!(warm.request, history());
        assert!(warm.events.is_empty());
        assert!(
            run(&mut p, &mut h, Some(HOUR)).events.is_empty(),
            "an hour is not more than an hour"
        );
        let cold = run(&mut p, &mut h, Some(2 * HOUR + 1));
        let strip = |m: &Message| {
            let mut m = m.clone();
            if let Content::Blocks(b) = &mut m.content {
                b.retain(|x| !matches!(x, Block::Thinking { .. }));
            }
            m
        };
        let all = history();
        let want = vec![
            all[0].clone(),
            strip(&all[1]),
            all[2].clone(),
            strip(&all[3]),
            all[4].clone(),
            all[6].clone(),
            all[7].clone(),
            all[8].clone(),
        ];
        assert_eq!(cold.request, want);
        assert_eq!(
            cold.events,
            [PolicyEvent::Dropped {
                messages: 1,
                why: "clear_thinking_20251015: 3 thinking blocks of 1 earlier assistant turns cleared".into()
            }]
        );
        assert_eq!(h, history(), "the client history is never edited");
        // The latch holds for the rest of the session.
        assert_eq!(run(&mut p, &mut h, Some(2 * HOUR + 2)).request, want);
    }

    /// A tool loop is one assistant turn: after the latch, every thinking
    /// block of the turn in progress stays, however many calls it spans, so
    /// the cached prefix is not rewritten at each call of the loop.
    #[test]
    fn the_thinking_of_the_turn_in_progress_stays_across_its_tool_loop() {
        let mut p = ApiMc::default();
        let mut h = history()[..6].to_vec();
        run(&mut p, &mut h, Some(0));
        let cold = run(&mut p, &mut h, Some(2 * HOUR + 1));
        assert!(cold.events.is_empty(), "{:?}", cold.events);
        assert_eq!(cold.request, h);
        let mut events = 0;
        for (i, id) in ["t4", "t5"].into_iter().enumerate() {
            h.push(think("more", id));
            h.push(result(id, "ok"));
            let r = run(&mut p, &mut h, Some(2 * HOUR + 2 + i as u64));
            events += r.events.len();
        }
        assert_eq!(events, 0, "one turn: nothing of it is cleared");
    }

    #[test]
    fn redacted_thinking_gets_no_thinking_edit() {
        let mut p = ApiMc::default();
        p.switches.isRedactThinkingActive = true;
        let mut h = history();
        run(&mut p, &mut h, Some(0));
        assert_eq!(run(&mut p, &mut h, Some(3 * HOUR)).request, history());
    }

    /// Past the trigger the tool edit clears old results and the clearable
    /// tools' inputs, but only when it frees at least trigger − target.
    #[test]
    fn the_tool_edit_needs_the_trigger_and_the_floor() {
        let mut h = vec![Message::user_text("go")];
        for i in 0..6 {
            h.push(think("", &format!("r{i}")));
            h.push(result(&format!("r{i}"), &"x".repeat(4_000)));
        }
        // About 6,000 tokens: under a 5,000-token trigger with floor 1,000
        // the three oldest results (3,000 tokens) go; with floor 4,000 none.
        let mut p = ApiMc::default();
        p.switches.API_MAX_INPUT_TOKENS = 5_000;
        p.switches.API_TARGET_INPUT_TOKENS = 4_000;
        let out = run(&mut p, &mut h, None);
        let cleared: Vec<String> = out
            .events
            .iter()
            .map(|e| match e {
                PolicyEvent::Cleared { id, part, .. } => format!("{id}:{part}"),
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(
            cleared,
            [
                "r0:result",
                "r0:input",
                "r1:result",
                "r1:input",
                "r2:result",
                "r2:input"
            ]
        );
        p.switches.API_TARGET_INPUT_TOKENS = 1_000;
        assert!(run(&mut p, &mut h, None).events.is_empty());
    }
}
