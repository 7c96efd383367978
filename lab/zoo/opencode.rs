//! opencode (sst/opencode, now anomalyco/opencode, MIT): tool-output
//! truncation to disk with a retention period, and pruning of old tool outputs.
//!
//! Read from the stored code index (2026-12-03):
//! - `packages/opencode/src/session/compaction.ts@31e22f65a23c498639b8cef24b90e6ae193cdcb6`
//!   (sst/opencode): `PRUNE_MINIMUM` 20,000, `PRUNE_PROTECT` 40,000,
//!   `PRUNE_PROTECTED_TOOLS` `["skill"]`; `prune` walks back from the newest
//!   message, skips the last two user turns, stops at a summary or at an
//!   already-compacted output, protects the newest `PRUNE_PROTECT` tokens of
//!   outputs and marks the older ones compacted only when they add up to more
//!   than `PRUNE_MINIMUM`; a compacted output reaches the model as
//!   `[Old tool result content cleared]`;
//! - `packages/opencode/src/tool/truncation.ts@2e0f23206c5c77692022d323b3a4c9682b2e37cd`
//!   (anomalyco/opencode): `Truncate.MAX_LINES` 2000, `MAX_BYTES` 50 KiB,
//!   `RETENTION_MS` 7 days; the full text goes to `tool-output/<id>`, the
//!   model sees the head, `...N lines|bytes truncated...` and the hint;
//!   `cleanup` deletes files older than the retention;
//! - `Token.estimate` = `round(length / 4)` in UTF-16 units (`util/token.ts`,
//!   as quoted by several independent readings of upstream).
//!
//! - `packages/opencode/src/session/prompt.ts@31e22f65a23c498639b8cef24b90e6ae193cdcb6`:
//!   `runLoop` forks `compaction.prune` after its `while` loop, which it
//!   leaves when the last assistant message finished without tool calls.
//!
//! Pruning is opt-in upstream at 31e22f65 (`compaction.prune` must be set in
//! the config); this policy pins it on, since it is the mechanism measured.
//! A pointer can outlive its file: the retention clock is the transcript's
//! `now_ms`, or `turn_ms` per call when the transcript recorded no times.

use std::collections::HashSet;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::{LabError, LabResult};
use crate::message::{tool_results_mut, Block, Message, Role};
use crate::policy::{
    PointerRule, Policy, PolicyCtx, PolicyEvent, PolicyInfo, Prepared, Source, Unit,
};

/// The policy name in `lab policies`.
pub const NAME: &str = "opencode";

/// What a compacted output becomes in the request.
pub const CLEARED: &str = "[Old tool result content cleared]";

/// The hint's text before the path (the agent has no task tool).
pub const SAVED_TO: &str =
    "The tool call succeeded but the output was truncated. Full output saved to: ";

/// Constants under their upstream names; `Default` is upstream's, except
/// `prune` (pinned on) and the lab's clock and fault fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[allow(non_snake_case)]
pub struct Switches {
    /// Prune only when more than this many tokens can go (20,000).
    pub PRUNE_MINIMUM: usize,
    /// The newest output tokens never pruned (40,000).
    pub PRUNE_PROTECT: usize,
    /// Tools whose outputs are never pruned (`skill`).
    pub PRUNE_PROTECTED_TOOLS: Vec<String>,
    /// `compaction.prune` (upstream config default: off; pinned on here).
    pub prune: bool,
    /// `Truncate.MAX_LINES` (2000).
    pub MAX_LINES: usize,
    /// `Truncate.MAX_BYTES` (50 KiB).
    pub MAX_BYTES: usize,
    /// `RETENTION_MS`: saved outputs older than this are deleted (7 days).
    pub RETENTION_MS: u64,
    /// The agent may use the task tool (changes the hint; default no).
    pub has_task_tool: bool,
    /// Lab clock: milliseconds per model call when the transcript has no times.
    pub turn_ms: u64,
    /// Fault (off): saved outputs are deleted after this many ms instead of
    /// `RETENTION_MS`, while the history still points at them
    /// (<https://github.com/Lingtai-AI/lingtai-kernel/issues/192>; opencode's
    /// streaming variant warns "This file will be deleted after a few more commands").
    pub fault_retention_ms: Option<u64>,
}

impl Default for Switches {
    fn default() -> Self {
        Switches {
            PRUNE_MINIMUM: 20_000,
            PRUNE_PROTECT: 40_000,
            PRUNE_PROTECTED_TOOLS: vec!["skill".into()],
            prune: true,
            MAX_LINES: 2_000,
            MAX_BYTES: 50 * 1024,
            RETENTION_MS: 7 * 24 * 60 * 60 * 1000,
            has_task_tool: false,
            turn_ms: 60_000,
            fault_retention_ms: None,
        }
    }
}

/// The policy: switches, outputs already seen, outputs marked compacted, and
/// the saved files with their creation time.
#[derive(Debug, Clone, Default)]
pub struct Opencode {
    /// Constants and faults.
    pub switches: Switches,
    seen: HashSet<String>,
    compacted: HashSet<String>,
    files: Vec<(PathBuf, u64)>,
}

/// A boxed policy with upstream's defaults.
pub fn make() -> Box<dyn Policy> {
    Box::new(Opencode::default())
}

/// `Token.estimate`: `round(utf16 length / 4)`, halves rounded up as JS does.
pub fn estimate(text: &str) -> usize {
    (text.encode_utf16().count() + 2) / 4
}

impl Opencode {
    /// `Truncate.cleanup`: delete saved outputs older than the retention.
    fn cleanup(&mut self, ctx: &PolicyCtx<'_>, now: u64, events: &mut Vec<PolicyEvent>) {
        let retention = self
            .switches
            .fault_retention_ms
            .unwrap_or(self.switches.RETENTION_MS);
        let cutoff = now.saturating_sub(retention);
        self.files.retain(|(path, created)| {
            if *created >= cutoff {
                return true;
            }
            // Upstream ignores a failed unlink; so does the lab.
            let _ = ctx.storage.remove_file(path);
            events.push(PolicyEvent::Dropped {
                messages: 0,
                why: format!(
                    "saved output {} deleted: older than the retention",
                    path.display()
                ),
            });
            false
        });
    }

    /// `Truncate.output` for every output not seen before.
    fn truncate_new(
        &mut self,
        history: &mut [Message],
        ctx: &PolicyCtx<'_>,
        now: u64,
        events: &mut Vec<PolicyEvent>,
    ) -> LabResult<()> {
        for (tool_use_id, content) in tool_results_mut(history) {
            if !self.seen.insert(tool_use_id.clone()) {
                continue;
            }
            let Some(shown) = self.truncate_one(tool_use_id, content, ctx, now, events)? else {
                continue;
            };
            *content = shown;
        }
        Ok(())
    }

    fn truncate_one(
        &mut self,
        id: &str,
        text: &str,
        ctx: &PolicyCtx<'_>,
        now: u64,
        events: &mut Vec<PolicyEvent>,
    ) -> LabResult<Option<String>> {
        let s = &self.switches;
        let lines: Vec<&str> = text.split('\n').collect();
        if lines.len() <= s.MAX_LINES && text.len() <= s.MAX_BYTES {
            return Ok(None);
        }
        let (kept, removed, unit) = head(&lines, text.len(), s.MAX_LINES, s.MAX_BYTES);
        let dir = ctx.root.join("tool-output");
        let path = dir.join(format!("tool_{:06}", self.files.len() + 1));
        ctx.storage
            .create_dir_all(&dir)
            .and_then(|()| ctx.storage.write_new(&path, text.as_bytes()))
            .map_err(|e| {
                LabError::io(
                    "saving a truncated tool output (the tool call fails upstream too)",
                    &path,
                    e,
                )
            })?;
        self.files.push((path.clone(), now));
        let hint = if s.has_task_tool {
            format!("{SAVED_TO}{}\nUse the Task tool to have explore agent process this file with Grep and Read (with offset/limit). Do NOT read the full file yourself - delegate to save context.", path.display())
        } else {
            format!("{SAVED_TO}{}\nUse Grep to search the full content or Read with offset/limit to view specific sections.", path.display())
        };
        let shown = format!("{kept}\n\n...{removed} {unit} truncated...\n\n{hint}");
        let saved = path.display().to_string();
        events.push(PolicyEvent::Persisted {
            id: id.into(),
            path: saved.clone(),
            chars: text.chars().count(),
        });
        events.push(PolicyEvent::Truncated {
            id: id.into(),
            from_chars: text.chars().count(),
            to_chars: shown.chars().count(),
            saved_to: Some(saved),
        });
        Ok(Some(shown))
    }

    /// `SessionCompaction.prune`: ids newly marked compacted.
    fn prune(&self, history: &[Message]) -> Vec<String> {
        let s = &self.switches;
        let (mut turns, mut total, mut pruned) = (0, 0, 0);
        let mut to_prune = Vec::new();
        'walk: for (mi, m) in history.iter().enumerate().rev() {
            if m.role == Role::User && !m.is_tool_result() {
                turns += 1;
            }
            if turns < 2 || m.role != Role::Assistant {
                continue;
            }
            for b in m.blocks().iter().rev() {
                let Block::ToolUse { id, name, .. } = b else {
                    continue;
                };
                let Some(output) = output_of(history, mi, id) else {
                    continue; // not completed
                };
                if s.PRUNE_PROTECTED_TOOLS.contains(name) {
                    continue;
                }
                if self.compacted.contains(id) {
                    break 'walk;
                }
                let tokens = estimate(output);
                total += tokens;
                if total <= s.PRUNE_PROTECT {
                    continue;
                }
                pruned += tokens;
                to_prune.push(id.clone());
            }
        }
        if pruned > s.PRUNE_MINIMUM {
            to_prune
        } else {
            Vec::new()
        }
    }

    /// The request: compacted outputs shown as the cleared placeholder.
    fn project(&self, history: &[Message]) -> Vec<Message> {
        let mut request = history.to_vec();
        for (tool_use_id, content) in tool_results_mut(&mut request) {
            if self.compacted.contains(tool_use_id) {
                *content = CLEARED.to_string();
            }
        }
        request
    }
}

/// The head of a long output (`direction: "head"`): at most `max_lines`
/// lines and `max_bytes` bytes; returns the kept text, what was removed and its unit.
fn head(
    lines: &[&str],
    total_bytes: usize,
    max_lines: usize,
    max_bytes: usize,
) -> (String, usize, &'static str) {
    let mut out: Vec<&str> = Vec::new();
    let mut bytes = 0;
    let mut hit_bytes = false;
    for (i, line) in lines.iter().enumerate().take(max_lines) {
        let size = line.len() + usize::from(i > 0);
        if bytes + size > max_bytes {
            hit_bytes = true;
            break;
        }
        out.push(line);
        bytes += size;
    }
    if hit_bytes {
        (out.join("\n"), total_bytes - bytes, "bytes")
    } else {
        (out.join("\n"), lines.len() - out.len(), "lines")
    }
}

/// When this call opens a new prompt loop and the previous loop ended (its
/// last message is a reply without tool calls, the condition on which
/// `runLoop` leaves its `while`), the length of the history as it stood at
/// that end: upstream prunes then, before the new prompt is in the history,
/// so the two turns it protects are the last two finished ones. A loop that
/// did not end (interrupted, or a prompt typed while it ran) never prunes.
/// The lab acts at the next call, but no request falls between, so every
/// request is the one upstream sends.
fn ended_loop(history: &[Message]) -> Option<usize> {
    let prompts = history
        .iter()
        .rev()
        .take_while(|m| m.role == Role::User && !m.is_tool_result())
        .count();
    let end = history.len() - prompts;
    let last = history[..end].last()?;
    (prompts > 0 && last.role == Role::Assistant && !last.has_tool_use()).then_some(end)
}

/// The output answering call `id` of the assistant message at `mi`.
fn output_of<'h>(history: &'h [Message], mi: usize, id: &str) -> Option<&'h str> {
    history.get(mi + 1)?.blocks().iter().find_map(|b| match b {
        Block::ToolResult {
            tool_use_id,
            content,
        } if tool_use_id == id => Some(content.as_str()),
        _ => None,
    })
}

impl Policy for Opencode {
    fn configure(&mut self, overrides: &crate::policy::variant::Overrides) -> Result<(), String> {
        crate::policy::variant::set_fields(&mut self.switches, overrides)
    }

    fn variant_keys(&self) -> crate::policy::variant::Overrides {
        crate::policy::variant::fields(&self.switches)
    }

    fn info(&self) -> PolicyInfo {
        PolicyInfo {
            name: NAME.into(),
            family: "opencode",
            summary: "outputs over 2000 lines / 50 KiB saved to tool-output/ (7-day retention) with a head preview; old outputs past the newest 40k tokens pruned to a placeholder".into(),
            source: Source {
                upstream: "sst/opencode@31e22f65a23c498639b8cef24b90e6ae193cdcb6 (compaction.ts); anomalyco/opencode@2e0f23206c5c77692022d323b3a4c9682b2e37cd (truncation.ts)".into(),
                files: &[
                    "packages/opencode/src/session/compaction.ts",
                    "packages/opencode/src/session/prompt.ts (runLoop: prune when the loop ends)",
                    "packages/opencode/src/tool/truncation.ts",
                    "packages/opencode/src/util/token.ts",
                ],
                license: "MIT (constants and strings reproduced, no code copied)",
                approximate: false,
            },
            constants: serde_json::json!({ "switches": self.switches, "CLEARED": CLEARED }),
            unit: Unit::Tokens,
            differences: vec![
                "pruning is on (upstream config default at this commit: off)",
                "saved files are named tool_000001, ... (upstream: time-ordered random ids)",
                "retention cleanup runs before every call (upstream: hourly scheduler) on the transcript clock",
                "summarisation (compaction with a kept tail) is not modelled",
            ],
        }
    }

    fn acts_on(&self) -> crate::policy::shape::ActsOn {
        // Truncation and pruning touch tool outputs only (summarisation is
        // not modelled).
        crate::policy::shape::ActsOn::ToolResults
    }

    fn pointer_rules(&self) -> Vec<PointerRule> {
        vec![PointerRule::line_prefix(SAVED_TO)]
    }

    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        let now = ctx
            .now_ms
            .unwrap_or(ctx.turn as u64 * self.switches.turn_ms);
        let mut events = Vec::new();
        self.cleanup(ctx, now, &mut events);
        self.truncate_new(history, ctx, now, &mut events)?;
        let ended = ended_loop(history).filter(|_| self.switches.prune);
        if let Some(end) = ended {
            for id in self.prune(&history[..end]) {
                events.push(PolicyEvent::Cleared {
                    id: id.clone(),
                    part: "result",
                    placeholder: CLEARED.into(),
                });
                self.compacted.insert(id);
            }
        }
        Ok(Prepared {
            request: self.project(history),
            events,
        })
    }
}

#[cfg(test)]
mod tests;
