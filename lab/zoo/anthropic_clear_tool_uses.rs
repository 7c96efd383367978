//! Anthropic API context editing, strategy `clear_tool_uses_20250919`
//! (beta header `context-management-2025-06-27`).
//!
//! Source: the documentation page
//! <https://platform.claude.com/docs/en/build-with-claude/context-editing>
//! (English `.md` rendering and the docs.claude.com renderings, read
//! 2026-12-03 through the stored-pages index), sections "Tool result
//! clearing", "Configuration options for tool result clearing" and "Context
//! editing happens server-side". Defaults as documented: `trigger` 100,000
//! input tokens, `keep` 3 tool uses, `clear_at_least` none, `exclude_tools`
//! none, `clear_tool_inputs` false.
//!
//! The strategy runs server-side on each request: the client keeps the whole
//! history, so this is a *projecting* policy: `history` is left as it is and
//! the request is an edited copy. Once the prompt exceeds `trigger`, every
//! tool result older than the `keep` most recent tool uses is replaced with a
//! placeholder, oldest first, unless its tool is in `exclude_tools`; when the
//! tokens so freed fall short of `clear_at_least` the edit is not applied.
//!
//! The documentation does not give the placeholder text. The default here is
//! LangChain's `ClearToolUsesEdit` default `[cleared]` (a third-party mirror
//! of this strategy, reference.langchain.com, read 2026-12-03), so the
//! policy is marked approximate.

use serde::{Deserialize, Serialize};

use crate::error::LabResult;
use crate::message::{Block, Message};
use crate::policy::{
    PointerRule, Policy, PolicyCtx, PolicyEvent, PolicyInfo, Prepared, Source, Unit,
};
use crate::tokens::TokenCounter;

/// The policy name in `lab policies`.
pub const NAME: &str = "anthropic-clear-tool-uses";

/// Placeholder for a cleared result (LangChain's mirror default; the API's own
/// text is undocumented).
pub const PLACEHOLDER: &str = "[cleared]";

/// When clearing starts: the prompt exceeds this many input tokens or tool uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
pub enum Trigger {
    /// Tokens of the whole prompt (the documented default, 100,000).
    InputTokens(usize),
    /// Number of tool uses in the prompt.
    ToolUses(usize),
}

/// How many recent tool uses are kept (`{type: "tool_uses", value: N}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
pub enum Keep {
    /// The most recent N tool use/result pairs stay untouched.
    ToolUses(usize),
}

/// The least that must be freed for the edit to apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
pub enum ClearAtLeast {
    /// Input tokens.
    InputTokens(usize),
}

/// `clear_tool_inputs`: a bool, or (as the SDK type allows) a list of tool names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ClearInputs {
    /// All cleared calls, or none.
    All(bool),
    /// Only calls of these tools.
    Tools(Vec<String>),
}

impl ClearInputs {
    fn applies_to(&self, tool: &str) -> bool {
        match self {
            ClearInputs::All(b) => *b,
            ClearInputs::Tools(names) => names.iter().any(|n| n == tool),
        }
    }
}

/// The strategy's parameters, under their API names. `Default` is the
/// documented default of each.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Switches {
    /// When clearing starts (default 100,000 input tokens).
    pub trigger: Trigger,
    /// Recent tool uses kept (default 3).
    pub keep: Keep,
    /// Minimum freed for the edit to apply (default none).
    pub clear_at_least: Option<ClearAtLeast>,
    /// Tools whose uses and results are never cleared (default none).
    pub exclude_tools: Vec<String>,
    /// Also clear the parameters of cleared calls (default false).
    pub clear_tool_inputs: ClearInputs,
    /// The placeholder text (the lab's choice; see the module doc).
    pub placeholder: String,
}

impl Default for Switches {
    fn default() -> Self {
        Switches {
            trigger: Trigger::InputTokens(100_000),
            keep: Keep::ToolUses(3),
            clear_at_least: None,
            exclude_tools: Vec::new(),
            clear_tool_inputs: ClearInputs::All(false),
            placeholder: PLACEHOLDER.to_string(),
        }
    }
}

/// The policy: switches, and the clearing as of the last call (the
/// design itself is stateless between calls; `kept` says why it is kept).
#[derive(Debug, Clone, Default)]
pub struct ClearToolUses {
    /// Parameters.
    pub switches: Switches,
    /// The request as of the last call, grown by each call's new messages.
    kept: Option<kept::Kept>,
}

mod kept;

/// A boxed policy with the documented defaults.
pub fn make() -> Box<dyn Policy> {
    Box::new(ClearToolUses::default())
}

/// One tool use of the prompt: where its call and result sit.
#[derive(Debug, Clone)]
struct Pair {
    id: String,
    name: String,
    /// (message, block) of the call.
    call: (usize, usize),
    /// (message, block) of the result, when answered.
    result: Option<(usize, usize)>,
}

fn pairs(messages: &[Message]) -> Vec<Pair> {
    let mut out: Vec<Pair> = Vec::new();
    for (mi, m) in messages.iter().enumerate() {
        fold_pairs(&mut out, mi, m);
    }
    out
}

/// [`pairs`] one message at a time: `m` is message `mi` of the history.
fn fold_pairs(out: &mut Vec<Pair>, mi: usize, m: &Message) {
    for (bi, b) in m.blocks().iter().enumerate() {
        match b {
            Block::ToolUse { id, name, .. } => out.push(Pair {
                id: id.clone(),
                name: name.clone(),
                call: (mi, bi),
                result: None,
            }),
            Block::ToolResult { tool_use_id, .. } => {
                if let Some(p) = out
                    .iter_mut()
                    .rev()
                    .find(|p| &p.id == tool_use_id && p.result.is_none())
                {
                    p.result = Some((mi, bi));
                }
            }
            _ => {}
        }
    }
}

impl ClearToolUses {
    fn triggered(&self, history: &[Message], tokens: &dyn TokenCounter, uses: usize) -> bool {
        match self.switches.trigger {
            Trigger::InputTokens(n) => tokens.count_messages(history) > n,
            Trigger::ToolUses(n) => uses > n,
        }
    }

    /// Clear the candidates in `request`; returns the tokens freed and the events.
    fn clear(
        &self,
        request: &mut [Message],
        candidates: &[Pair],
        tokens: &dyn TokenCounter,
    ) -> (usize, Vec<PolicyEvent>) {
        let s = &self.switches;
        let placeholder_tokens = tokens.count(&s.placeholder);
        let mut freed = 0;
        let mut events = Vec::new();
        for p in candidates {
            if let Some((mi, bi)) = p.result {
                if let Block::ToolResult { content, .. } = &mut request[mi].blocks_mut()[bi] {
                    freed += tokens.count(content).saturating_sub(placeholder_tokens);
                    *content = s.placeholder.clone();
                    events.push(PolicyEvent::Cleared {
                        id: p.id.clone(),
                        part: "result",
                        placeholder: s.placeholder.clone(),
                    });
                }
            }
            if s.clear_tool_inputs.applies_to(&p.name) {
                let (mi, bi) = p.call;
                if let Block::ToolUse { input, .. } = &mut request[mi].blocks_mut()[bi] {
                    let empty = serde_json::json!({});
                    freed += tokens
                        .count_input(input)
                        .saturating_sub(tokens.count_json(&empty));
                    *input = empty.into();
                    events.push(PolicyEvent::Cleared {
                        id: p.id.clone(),
                        part: "input",
                        placeholder: "{}".into(),
                    });
                }
            }
        }
        (freed, events)
    }
}

impl Policy for ClearToolUses {
    fn configure(&mut self, overrides: &crate::policy::variant::Overrides) -> Result<(), String> {
        crate::policy::variant::set_fields(&mut self.switches, overrides)
    }

    fn variant_keys(&self) -> crate::policy::variant::Overrides {
        crate::policy::variant::fields(&self.switches)
    }

    fn info(&self) -> PolicyInfo {
        PolicyInfo {
            name: NAME.into(),
            family: "Anthropic API",
            summary: "server-side context editing: past the trigger, old tool results become a placeholder; the client history stays whole".into(),
            source: Source {
                upstream: "https://platform.claude.com/docs/en/build-with-claude/context-editing (read 2026-12-03)".into(),
                files: &[
                    "Tool result clearing",
                    "Configuration options for tool result clearing",
                    "Context editing happens server-side",
                ],
                license: "documentation (no code reproduced)",
                approximate: true,
            },
            constants: serde_json::to_value(&self.switches).unwrap_or_default(),
            unit: Unit::Tokens,
            differences: vec![
                "placeholder text is LangChain's mirror default `[cleared]`: the API's own text is undocumented",
                "a cleared call's input becomes `{}` (what the API puts there is undocumented)",
                "tokens come from the run's counter, not the API's tokenizer",
                "`keep` counts the newest tool uses of every tool, excluded ones included (the documentation does not say)",
            ],
        }
    }

    fn acts_on(&self) -> crate::policy::shape::ActsOn {
        crate::policy::shape::ActsOn::ToolResults
    }

    fn pointer_rules(&self) -> Vec<PointerRule> {
        // The placeholder names no place: the original lives only in the
        // client's history, which the model never sees again.
        Vec::new()
    }

    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        let mut events = Vec::new();
        if let Some(request) = self.advance(history, ctx.tokens, &mut events) {
            return Ok(Prepared { request, events });
        }
        Ok(self.whole(history, ctx.tokens))
    }

    fn history_replaced(&mut self) {
        self.kept = None;
    }
}

impl ClearToolUses {
    /// The policy with these switches.
    pub fn new(switches: Switches) -> ClearToolUses {
        ClearToolUses {
            switches,
            kept: None,
        }
    }

    /// The request of `history` from the kept clearing, when it can go on.
    fn advance(
        &mut self,
        history: &[Message],
        tokens: &dyn TokenCounter,
        events: &mut Vec<PolicyEvent>,
    ) -> Option<Vec<Message>> {
        let fits = |k: &kept::Kept| k.fits(&self.switches, tokens, history.len());
        if !self.kept.as_ref().is_some_and(fits) {
            self.kept = Some(kept::Kept::new(&self.switches, tokens));
        }
        let request = self.kept.as_mut()?.advance(history, tokens, events);
        let request = request.map(<[Message]>::to_vec);
        if request.is_none() {
            self.kept = None;
        }
        request
    }

    /// The edit made on a fresh copy of the whole history.
    fn whole(&self, history: &[Message], tokens: &dyn TokenCounter) -> Prepared {
        let all = pairs(history);
        let mut request = history.to_vec();
        if !self.triggered(history, tokens, all.len()) {
            return Prepared {
                request,
                events: Vec::new(),
            };
        }
        let Keep::ToolUses(keep) = self.switches.keep;
        let older = &all[..all.len().saturating_sub(keep)];
        let candidates: Vec<Pair> = older
            .iter()
            .filter(|p| !self.switches.exclude_tools.contains(&p.name))
            .cloned()
            .collect();
        let (freed, events) = self.clear(&mut request, &candidates, tokens);
        if let Some(ClearAtLeast::InputTokens(min)) = self.switches.clear_at_least {
            if freed < min {
                // Documented: if the API cannot clear at least this much, the
                // strategy is not applied (breaking the cache would not pay).
                return Prepared {
                    request: history.to_vec(),
                    events: Vec::new(),
                };
            }
        }
        Prepared { request, events }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::model::Scripted;
    use crate::storage::MemFs;
    use crate::tokens::Approx;
    use std::path::Path;

    fn call(id: &str, name: &str) -> Message {
        Message::assistant(vec![Block::ToolUse {
            id: id.into(),
            name: name.into(),
            input: serde_json::json!({"path": format!("/src/{id}.rs")}).into(),
        }])
    }

    fn result(id: &str, text: &str) -> Message {
        Message::tool_results(vec![(id.into(), text.into())])
    }

    /// A task, then five read calls (`t4` by the excluded tool) with 400-char results.
    fn history() -> Vec<Message> {
        let mut h = vec![Message::user_text("fix the parser")];
        for (id, tool) in [
            ("t1", "read"),
            ("t2", "read"),
            ("t3", "read"),
            ("t4", "grep"),
            ("t5", "read"),
        ] {
            h.push(call(id, tool));
            h.push(result(id, &format!("{id}:{}", "x".repeat(397))));
        }
        h
    }

    fn run(p: &mut ClearToolUses, h: &mut Vec<Message>) -> Prepared {
        let fs = MemFs::new();
        let mut model = Scripted::default();
        let mut ctx = PolicyCtx {
            storage: &fs,
            root: Path::new("/run/p"),
            tokens: &Approx,
            turn: 0,
            envelope: 0,
            anchor: None,
            read_lines: None,
            now_ms: None,
            model: &mut model,
        };
        p.prepare(h, &mut ctx).unwrap()
    }

    /// Expected output derived from the documentation (the strategy runs only
    /// inside Anthropic's API, so no upstream implementation can be run): over
    /// the trigger, all but the 3 newest tool uses lose their result, an
    /// excluded tool's result stays, inputs stay, the client history is whole.
    #[test]
    fn golden_clears_old_results_keeps_three_and_excluded() {
        let mut p = ClearToolUses::default();
        p.switches.trigger = Trigger::InputTokens(400);
        p.switches.exclude_tools = vec!["grep".into()];
        let mut h = history();
        let before = h.clone();
        let out = run(&mut p, &mut h);
        assert_eq!(h, before, "the client history is never edited");
        let mut want = history();
        want[2] = result("t1", "[cleared]");
        want[4] = result("t2", "[cleared]");
        assert_eq!(out.request, want);
        let ids: Vec<_> = out
            .events
            .iter()
            .map(|e| match e {
                PolicyEvent::Cleared { id, part, .. } => format!("{id}:{part}"),
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(ids, ["t1:result", "t2:result"]);
    }

    #[test]
    fn under_the_trigger_nothing_changes() {
        let mut p = ClearToolUses::default();
        let mut h = history();
        let out = run(&mut p, &mut h);
        assert_eq!(out.request, history());
        assert!(out.events.is_empty());
    }

    #[test]
    fn clear_at_least_unmet_leaves_the_prompt_whole() {
        let mut p = ClearToolUses::default();
        p.switches.trigger = Trigger::ToolUses(2);
        // Two 100-token results can free at most ~198 tokens.
        p.switches.clear_at_least = Some(ClearAtLeast::InputTokens(500));
        let mut h = history();
        let out = run(&mut p, &mut h);
        assert_eq!(out.request, history());
        assert!(out.events.is_empty());
        p.switches.clear_at_least = Some(ClearAtLeast::InputTokens(150));
        assert_eq!(run(&mut p, &mut h).events.len(), 2);
    }

    #[test]
    fn clear_tool_inputs_by_name_empties_those_calls_only() {
        let mut p = ClearToolUses::default();
        p.switches.trigger = Trigger::ToolUses(0);
        p.switches.keep = Keep::ToolUses(1);
        p.switches.clear_tool_inputs = ClearInputs::Tools(vec!["grep".into()]);
        let mut h = history();
        let out = run(&mut p, &mut h);
        let Block::ToolUse { input, .. } = &out.request[7].blocks()[0] else {
            panic!("t4 call moved")
        };
        assert_eq!(input, &serde_json::json!({}));
        let Block::ToolUse { input, .. } = &out.request[1].blocks()[0] else {
            panic!("t1 call moved")
        };
        assert_ne!(input, &serde_json::json!({}));
        assert_eq!(out.events.len(), 5, "four results and one input");
    }

    /// Requests and events of one policy kept across the calls of a
    /// generated session equal the whole edit of each call's history.
    fn kept_equals_whole(switches: Switches, tokens: &dyn TokenCounter) -> usize {
        let mut p = ClearToolUses::new(switches);
        let mut h = Vec::new();
        let mut cleared = 0;
        for m in ctxlab_import::generate::Generator::new(9, 80_000) {
            if m.role == crate::message::Role::Assistant {
                let fs = MemFs::new();
                let mut model = Scripted::default();
                let mut ctx = PolicyCtx {
                    storage: &fs,
                    root: Path::new("/run/p"),
                    tokens,
                    turn: 0,
                    envelope: 0,
                    anchor: None,
                    read_lines: None,
                    now_ms: None,
                    model: &mut model,
                };
                let got = p.prepare(&mut h, &mut ctx).unwrap();
                let want = p.whole(&h, tokens);
                assert_eq!(got, want, "after {} messages", h.len());
                cleared = got.events.len();
            }
            h.push(m);
        }
        cleared
    }

    #[test]
    fn the_kept_clearing_equals_the_whole_edit_at_every_call() {
        let claude = crate::tokens::claude::Claude::default();
        let counters: [&dyn TokenCounter; 2] = [&Approx, &claude];
        for tokens in counters {
            let low = Switches {
                trigger: Trigger::InputTokens(3_000),
                ..Switches::default()
            };
            assert!(kept_equals_whole(low.clone(), tokens) > 30);
            let inputs = Switches {
                keep: Keep::ToolUses(0),
                clear_tool_inputs: ClearInputs::Tools(vec!["Read".into()]),
                exclude_tools: vec!["Bash".into()],
                ..low.clone()
            };
            assert!(kept_equals_whole(inputs, tokens) > 30);
            let at_least = Switches {
                trigger: Trigger::ToolUses(10),
                clear_at_least: Some(ClearAtLeast::InputTokens(12_000)),
                ..low
            };
            assert!(kept_equals_whole(at_least, tokens) > 30);
        }
    }

    #[test]
    fn switches_parse_the_api_shape() {
        let s: Switches = serde_json::from_str(
            r#"{"trigger":{"type":"input_tokens","value":30000},"keep":{"type":"tool_uses","value":3},
                "clear_at_least":{"type":"input_tokens","value":5000},"exclude_tools":["web_search"],
                "clear_tool_inputs":false}"#,
        )
        .unwrap();
        assert_eq!(s.trigger, Trigger::InputTokens(30_000));
        assert_eq!(s.clear_at_least, Some(ClearAtLeast::InputTokens(5_000)));
        assert_eq!(s.placeholder, PLACEHOLDER);
        assert!(serde_json::from_str::<Switches>(r#"{"keep":5}"#).is_err());
    }
}
