//! Gemini CLI (google-gemini/gemini-cli, Apache-2.0): chat compression.
//!
//! Read in the published package `@google/gemini-cli-core@0.61.0` (npm,
//! 2026-12-03): `dist/src/context/chatCompressionService.js`
//! (`DEFAULT_COMPRESSION_TOKEN_THRESHOLD` 0.5, `COMPRESSION_PRESERVE_THRESHOLD`
//! 0.3, `COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET` 50,000,
//! `findCompressSplitPoint`, `truncateHistoryToBudget`, `compress`),
//! `dist/src/utils/fileUtils.js` (`saveTruncatedToolOutput` into
//! `tool-outputs/`, `formatTruncatedToolOutput`: first 20% / last 80% of the
//! threshold, with the file's path), `dist/src/utils/tokenCalculation.js`
//! (`estimateTokenCountSync`), `dist/src/core/client.js` (`tryCompressChat`:
//! only an inflated result sets the failed flag), `dist/src/config/config.js`
//! (`DEFAULT_TRUNCATE_TOOL_OUTPUT_THRESHOLD` 40,000, truncation ids from 1),
//! `dist/src/core/tokenLimits.js` (1,048,576 tokens).
//!
//! Before each model call, once the history reaches half the window: tool
//! responses past the newest 50,000 tokens of them are saved to a file and
//! replaced by a head/tail excerpt naming it; the oldest ~70% of the history
//! (by JSON length, cut only before a user message that is not a function
//! response) is summarised twice (a summary, then a self-check) and replaced by
//! the summary plus the model's fixed acknowledgement.

use serde::{Deserialize, Serialize};

use crate::error::{LabError, LabResult};
use crate::message::{Block, Content, Message, Role};
use crate::policy::{
    PointerRule, Policy, PolicyCtx, PolicyEvent, PolicyInfo, Prepared, Source, SummaryRequest, Unit,
};

/// The policy name in `lab policies`.
pub const NAME: &str = "gemini-cli";

/// The model's fixed reply after the summary, byte for byte.
pub const ACK: &str = "Got it. Thanks for the additional context!";

/// The summariser's instruction when no earlier snapshot is in the history.
pub const NEW_SNAPSHOT: &str = "Generate a new <state_snapshot> based on the provided history.";

/// The summariser's instruction when an earlier snapshot is in the history.
pub const UPDATE_SNAPSHOT: &str = "A previous <state_snapshot> exists in the history. You MUST integrate all still-relevant information from that snapshot into the new one, updating it with the more recent events. Do not lose established constraints or critical knowledge.";

/// What follows either instruction.
pub const SCRATCHPAD: &str =
    "\n\nFirst, reason in your scratchpad. Then, generate the updated <state_snapshot>.";

/// The self-check prompt of the second summary call.
pub const VERIFY: &str = "Critically evaluate the <state_snapshot> you just generated. Did you omit any specific technical details, file paths, tool results, or user constraints mentioned in the history? If anything is missing or could be more precise, generate a FINAL, improved <state_snapshot>. Otherwise, repeat the exact same <state_snapshot> again.";

/// Text before the saved file's path in a truncated response.
pub const SEE: &str = "For full output see: ";

/// Constants under their upstream names; `Default` is upstream's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[allow(non_snake_case)]
pub struct Switches {
    /// Compress once the prompt reaches this fraction of the window (0.5).
    pub DEFAULT_COMPRESSION_TOKEN_THRESHOLD: f64,
    /// The newest fraction of the history kept verbatim (0.3).
    pub COMPRESSION_PRESERVE_THRESHOLD: f64,
    /// Tokens of function responses kept whole, newest first (50,000).
    pub COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET: usize,
    /// `truncateToolOutputThreshold`: chars of a truncated response (40,000).
    pub DEFAULT_TRUNCATE_TOOL_OUTPUT_THRESHOLD: usize,
    /// The model's window (`tokenLimit`, 1,048,576 for the Gemini 2.5 models).
    pub token_limit: usize,
}

impl Default for Switches {
    fn default() -> Self {
        Switches {
            DEFAULT_COMPRESSION_TOKEN_THRESHOLD: 0.5,
            COMPRESSION_PRESERVE_THRESHOLD: 0.3,
            COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET: 50_000,
            DEFAULT_TRUNCATE_TOOL_OUTPUT_THRESHOLD: 40_000,
            token_limit: 1_048_576,
        }
    }
}

/// The policy: switches, the truncation id counter and the failed flag.
#[derive(Debug, Clone, Default)]
pub struct GeminiCli {
    /// Constants.
    pub switches: Switches,
    truncation_id: usize,
    failed: bool,
}

/// A boxed policy with upstream's defaults.
pub fn make() -> Box<dyn Policy> {
    Box::new(GeminiCli::default())
}

/// `estimateTextTokens` (unfloored): per UTF-16 unit, 1/4 for ASCII and 1.5
/// otherwise; texts over 100,000 units count length / 4.
pub fn text_tokens(text: &str) -> f64 {
    let units: Vec<u16> = text.encode_utf16().collect();
    if units.len() > 100_000 {
        return units.len() as f64 / 4.0;
    }
    units
        .iter()
        .map(|&u| if u <= 127 { 0.25 } else { 1.5 })
        .sum()
}

/// `estimateTokenCountSync([{ text }])`.
pub fn estimate(text: &str) -> usize {
    text_tokens(text).floor() as usize
}

/// `Number.prototype.toLocaleString()` in en-US for a non-negative integer.
fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `formatTruncatedToolOutput`: the first 20% and last 80% of `max_chars`.
pub fn format_truncated(content: &str, output_file: &str, max_chars: usize) -> String {
    let chars: Vec<char> = content.chars().collect();
    if chars.len() <= max_chars {
        return content.to_string();
    }
    let head_n = max_chars / 5;
    let tail_n = max_chars - head_n;
    let head: String = chars[..head_n].iter().collect();
    let tail: String = chars[chars.len() - tail_n..].iter().collect();
    let omitted = chars.len() - head_n - tail_n;
    format!(
        "Output too large. Showing first {} and last {} characters. {SEE}{output_file}\n{head}\n\n... [{} characters omitted] ...\n\n{tail}",
        grouped(head_n),
        grouped(tail_n),
        grouped(omitted)
    )
}

/// `sanitizeFilenamePart` then lower case.
pub(crate) fn safe_part(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// The message as a Gemini `Content` (`role`, `parts`), for its JSON length.
fn as_gemini(m: &Message, name_of: &dyn Fn(&str) -> String) -> serde_json::Value {
    use serde_json::json;
    let role = if m.role == Role::User {
        "user"
    } else {
        "model"
    };
    let parts: Vec<serde_json::Value> = match &m.content {
        Content::Text(t) => vec![json!({ "text": t })],
        Content::Blocks(blocks) => blocks
            .iter()
            .map(|b| match b {
                Block::Text { text } => json!({ "text": text }),
                Block::Thinking { thinking } => json!({ "text": thinking, "thought": true }),
                Block::ToolUse { id, name, input } => {
                    json!({ "functionCall": { "id": id, "name": name, "args": input } })
                }
                Block::ToolResult { tool_use_id, content } => json!({ "functionResponse": {
                    "id": tool_use_id, "name": name_of(tool_use_id), "response": { "output": content }
                } }),
                Block::Image { source } => json!({ "inlineData": { "mimeType": source } }),
                Block::Unlogged { what, tokens } => {
                    json!({ "text": crate::message::unlogged_text(what, *tokens) })
                }
            })
            .collect(),
    };
    json!({ "role": role, "parts": parts })
}

/// `findCompressSplitPoint`: index of the oldest message to keep.
pub fn split_point(history: &[Message], fraction: f64) -> usize {
    let name_of = |id: &str| tool_name(history, id);
    let counts: Vec<usize> = history
        .iter()
        .map(|m| as_gemini(m, &name_of).to_string().encode_utf16().count())
        .collect();
    let target = counts.iter().sum::<usize>() as f64 * fraction;
    let mut last = 0;
    let mut cumulative = 0usize;
    for (i, m) in history.iter().enumerate() {
        if m.role == Role::User && !m.is_tool_result() {
            if cumulative as f64 >= target {
                return i;
            }
            last = i;
        }
        cumulative += counts[i];
    }
    match history.last() {
        Some(m) if m.role == Role::Assistant && !m.has_tool_use() => history.len(),
        _ => last,
    }
}

/// The name of the tool call `id` (what a function response carries).
pub(crate) fn tool_name(history: &[Message], id: &str) -> String {
    history
        .iter()
        .flat_map(|m| m.blocks())
        .find_map(|b| match b {
            Block::ToolUse { id: i, name, .. } if i == id => Some(name.clone()),
            _ => None,
        })
        .unwrap_or_else(|| UNKNOWN_TOOL.into())
}

/// The name a function response carries when no call in the history has
/// its id.
pub(crate) const UNKNOWN_TOOL: &str = "unknown_tool";

/// [`tool_name`] of every call id in `history` at once (the first call of
/// an id wins, as there): a policy naming every tool result at every call
/// looks each up instead of searching the history for each.
pub(crate) fn tool_names(history: &[Message]) -> std::collections::HashMap<&str, &str> {
    let mut names = std::collections::HashMap::new();
    for b in history.iter().flat_map(|m| m.blocks()) {
        if let Block::ToolUse { id, name, .. } = b {
            names.entry(id.as_str()).or_insert(name.as_str());
        }
    }
    names
}

impl GeminiCli {
    /// `truncateHistoryToBudget`: newest responses first; past the budget a
    /// response is saved and replaced by its excerpt.
    fn truncate_to_budget(
        &mut self,
        history: &[Message],
        ctx: &PolicyCtx<'_>,
        max_chars: usize,
        events: &mut Vec<PolicyEvent>,
        applied: &mut Vec<PolicyEvent>,
    ) -> LabResult<Vec<Message>> {
        let mut out = history.to_vec();
        let mut counter = 0usize;
        for mi in (0..out.len()).rev() {
            for bi in (0..out[mi].blocks().len()).rev() {
                let Block::ToolResult {
                    tool_use_id,
                    content,
                } = &out[mi].blocks()[bi]
                else {
                    continue;
                };
                let tokens = estimate(content);
                if counter + tokens <= self.switches.COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET {
                    counter += tokens;
                    continue;
                }
                let (id, full) = (tool_use_id.clone(), content.clone());
                let path = self.save(&tool_name(history, &id), &full, ctx)?;
                let shown = format_truncated(&full, &path, max_chars);
                counter += estimate(&shown);
                events.push(PolicyEvent::Persisted {
                    id: id.clone(),
                    path: path.clone(),
                    chars: full.chars().count(),
                });
                applied.push(PolicyEvent::Truncated {
                    id,
                    from_chars: full.chars().count(),
                    to_chars: shown.chars().count(),
                    saved_to: Some(path),
                });
                if let Block::ToolResult { content, .. } = &mut out[mi].blocks_mut()[bi] {
                    *content = shown;
                }
            }
        }
        Ok(out)
    }

    /// `saveTruncatedToolOutput` under `<root>/tool-outputs/`.
    fn save(&mut self, tool: &str, content: &str, ctx: &PolicyCtx<'_>) -> LabResult<String> {
        self.truncation_id += 1;
        let (tool, id) = (safe_part(tool), safe_part(&self.truncation_id.to_string()));
        let file = if id.starts_with(&tool) {
            format!("{id}.txt")
        } else {
            format!("{tool}_{id}.txt")
        };
        let dir = ctx.root.join("tool-outputs");
        let path = dir.join(file);
        // Upstream overwrites (`writeFile`); ids never repeat within a run.
        ctx.storage
            .create_dir_all(&dir)
            .and_then(|()| ctx.storage.write(&path, content.as_bytes()))
            .map_err(|e| LabError::io("saving a truncated function response", &path, e))?;
        Ok(path.display().to_string())
    }

    /// The summary and its self-check; `None` when either call fails or the
    /// result is empty.
    fn summarise(
        &self,
        messages: &[Message],
        ctx: &mut PolicyCtx<'_>,
        events: &mut Vec<PolicyEvent>,
    ) -> Option<String> {
        let has_snapshot = messages
            .iter()
            .any(|m| m.text().contains("<state_snapshot>"));
        let anchor = if has_snapshot {
            UPDATE_SNAPSHOT
        } else {
            NEW_SNAPSHOT
        };
        let prompt = format!("{anchor}{SCRATCHPAD}");
        let first = ctx.model.summarise(&SummaryRequest {
            prompt: &prompt,
            messages,
            previous: None,
        });
        let result = first.and_then(|summary| {
            let check = ctx.model.summarise(&SummaryRequest {
                prompt: VERIFY,
                messages,
                previous: Some(&summary),
            })?;
            let check = check.trim();
            Ok(if check.is_empty() {
                summary.trim().to_string()
            } else {
                check.to_string()
            })
        });
        match result {
            Ok(s) if !s.is_empty() => Some(s),
            Ok(_) => {
                events.push(PolicyEvent::ModelFailed {
                    role: "summary",
                    outcome: "empty summary: history unchanged".into(),
                });
                None
            }
            Err(e) => {
                events.push(PolicyEvent::ModelFailed {
                    role: "summary",
                    outcome: format!("summary call failed, history unchanged: {e}"),
                });
                None
            }
        }
    }

    /// `ChatCompressionService.compress` past the threshold.
    fn compress(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
        tokens: usize,
        events: &mut Vec<PolicyEvent>,
    ) -> LabResult<()> {
        let s = self.switches.clone();
        let max_chars = (4 * s.token_limit.saturating_sub(tokens))
            .min(s.DEFAULT_TRUNCATE_TOOL_OUTPUT_THRESHOLD);
        // Files are written even when the truncated history is then not used
        // (upstream too): `Persisted` always, `Truncated` only once applied.
        let mut applied = Vec::new();
        let truncated = self.truncate_to_budget(history, ctx, max_chars, events, &mut applied)?;
        if self.failed {
            // After an inflated summary only truncation runs.
            if ctx.tokens.count_messages(&truncated) < tokens {
                events.append(&mut applied);
                *history = truncated;
            }
            return Ok(());
        }
        let split = split_point(&truncated, 1.0 - s.COMPRESSION_PRESERVE_THRESHOLD);
        if split == 0 {
            return Ok(());
        }
        let original = &history[..split];
        let for_summary = if ctx.tokens.count_messages(original) < s.token_limit {
            original.to_vec()
        } else {
            truncated[..split].to_vec()
        };
        let Some(summary) = self.summarise(&for_summary, ctx, events) else {
            return Ok(());
        };
        let mut new = vec![
            Message::user_text(summary),
            Message::assistant(vec![Block::Text { text: ACK.into() }]),
        ];
        new.extend_from_slice(&truncated[split..]);
        if ctx.tokens.count_messages(&new) > tokens {
            self.failed = true;
            events.push(PolicyEvent::ModelFailed { role: "summary", outcome: "summary inflated the history: kept the old one, later compressions only truncate".into() });
            return Ok(());
        }
        events.append(&mut applied);
        events.push(PolicyEvent::Summarised {
            replaced: split,
            kept: history.len() - split,
            archive: None,
        });
        *history = new;
        Ok(())
    }
}

impl Policy for GeminiCli {
    fn configure(&mut self, overrides: &crate::policy::variant::Overrides) -> Result<(), String> {
        crate::policy::variant::set_fields(&mut self.switches, overrides)
    }

    fn variant_keys(&self) -> crate::policy::variant::Overrides {
        crate::policy::variant::fields(&self.switches)
    }

    fn info(&self) -> PolicyInfo {
        PolicyInfo {
            name: NAME.into(),
            family: "Gemini CLI",
            summary: "at half the window: old function responses past a 50k-token budget saved to files with a head/tail excerpt; the oldest ~70% summarised into a <state_snapshot>".into(),
            source: Source {
                upstream: "@google/gemini-cli-core@0.61.0 (npm, google-gemini/gemini-cli)".into(),
                files: &[
                    "dist/src/context/chatCompressionService.js",
                    "dist/src/utils/fileUtils.js",
                    "dist/src/utils/tokenCalculation.js",
                    "dist/src/core/client.js",
                    "dist/src/config/config.js",
                ],
                license: "Apache-2.0 (constants and strings reproduced, no code copied)",
                approximate: false,
            },
            constants: serde_json::json!({ "switches": self.switches, "ACK": ACK }),
            unit: Unit::Tokens,
            differences: vec![
                "the trigger uses the run's token count of the history, not the API's last prompt token count",
                "the compression system prompt (getCompressionPrompt) is not sent: the deterministic model ignores prompts",
                "function calls and responses carry their call id in the JSON the split point measures",
                "head/tail excerpts are cut at characters, not UTF-16 units",
                "tool output masking (tryMaskToolOutputs) and the initial environment context are not modelled",
            ],
        }
    }

    fn pointer_rules(&self) -> Vec<PointerRule> {
        vec![PointerRule::after(SEE)]
    }

    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        let mut events = Vec::new();
        let tokens = ctx.tokens.count_messages(history);
        let threshold =
            self.switches.DEFAULT_COMPRESSION_TOKEN_THRESHOLD * self.switches.token_limit as f64;
        if !history.is_empty() && tokens as f64 >= threshold {
            self.compress(history, ctx, tokens, &mut events)?;
        }
        Ok(Prepared {
            request: history.clone(),
            events,
        })
    }
}

#[cfg(test)]
mod tests;
