//! Gemini CLI's tool output masking (google-gemini/gemini-cli, Apache-2.0):
//! a "hybrid backward scanned FIFO" that protects the newest tool outputs
//! and offloads older ones to files, in batches.
//!
//! Read at `google-gemini/gemini-cli@00b731958a3b583218743b03591e7596d8fb4506`:
//! `packages/core/src/services/toolOutputMaskingService.ts`
//! (`DEFAULT_TOOL_PROTECTION_THRESHOLD` 50,000,
//! `DEFAULT_MIN_PRUNABLE_TOKENS_THRESHOLD` 30,000, `DEFAULT_PROTECT_LATEST_TURN`
//! true, `MASKING_INDICATOR_TAG`, `TOOL_OUTPUTS_DIR`, `mask`,
//! `formatShellPreview`, `formatSimplePreview`, `formatMaskedSnippet`),
//! `packages/core/src/utils/tokenCalculation.ts` (`estimateTokenCountSync`:
//! a function response counts `name.length / 4 + JSON.stringify(response).length / 4`,
//! floored), `packages/core/src/utils/fileUtils.ts` (`sanitizeFilenamePart`),
//! `packages/core/src/tools/tool-names.ts` (`SHELL_TOOL_NAME`),
//! `packages/core/src/core/client.ts` (`tryMaskToolOutputs`: before each
//! turn's request, on the history without it, replacing the history) and
//! `packages/core/src/config/config.ts` (masking `enabled: false` by default).
//!
//! Before each request: scanning the history backwards (skipping its newest
//! content), function responses count into a protected window until their
//! tokens pass 50,000; the one that passes it and every older one not yet
//! masked are prunable. When the prunable tokens reach 30,000, each is
//! written to `tool-outputs/` and replaced by a `<tool_output_masked>`
//! snippet (a head and tail preview and the file's path) where that saves
//! tokens.

use serde::{Deserialize, Serialize};

use crate::error::{LabError, LabResult};
use crate::gemini_cli::{safe_part, tool_names, UNKNOWN_TOOL};
use crate::message::{Block, Message, Role};
use crate::policy::{
    PointerRule, Policy, PolicyCtx, PolicyEvent, PolicyInfo, Prepared, Source, Unit,
};

/// The policy name in `lab policies`.
pub const NAME: &str = "gemini-cli-mask";

/// `MASKING_INDICATOR_TAG`: a response holding it is never masked again.
pub const MASKING_INDICATOR_TAG: &str = "<tool_output_masked";

/// `TOOL_OUTPUTS_DIR`, under the policy's root (upstream: the history dir).
pub const TOOL_OUTPUTS_DIR: &str = "tool-outputs";

/// `SHELL_TOOL_NAME`: its outputs get the sectioned shell preview.
pub const SHELL_TOOL_NAME: &str = "run_shell_command";

/// Text before the file's path in a snippet.
pub const AVAILABLE_AT: &str = "Output too large. Full output available at: ";

/// `ToolOutputMaskingConfig` without `enabled` (the lab runs it enabled);
/// `Default` is upstream's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[allow(non_snake_case)]
pub struct Switches {
    /// Newest function-response tokens kept whole (50,000).
    pub DEFAULT_TOOL_PROTECTION_THRESHOLD: usize,
    /// Masking runs only when the prunable tokens reach this (30,000).
    pub DEFAULT_MIN_PRUNABLE_TOKENS_THRESHOLD: usize,
    /// Skip the history's newest content in the scan (true).
    pub DEFAULT_PROTECT_LATEST_TURN: bool,
}

impl Default for Switches {
    fn default() -> Self {
        Switches {
            DEFAULT_TOOL_PROTECTION_THRESHOLD: 50_000,
            DEFAULT_MIN_PRUNABLE_TOKENS_THRESHOLD: 30_000,
            DEFAULT_PROTECT_LATEST_TURN: true,
        }
    }
}

/// The policy: switches and the count of files written (their names' suffix).
#[derive(Debug, Clone, Default)]
pub struct GeminiCliMask {
    /// Constants.
    pub switches: Switches,
    written: usize,
    /// What the scan measured of each result, by position.
    sized: Sized,
}

/// What the backward scan measured of each tool result of the history, by
/// (message, block): the scan sizes every result at every call, and the
/// history only grows between calls. An entry holds the measured
/// content's address and length, and is used only while the block still
/// holds that very string (a result this policy masks, or any other
/// rewrite, is a new string and is measured again); a replaced history
/// clears it, and a copy of the policy starts empty.
#[derive(Debug, Default)]
struct Sized(Vec<Vec<Option<Measured>>>);

/// One result as measured: its content's address and length, whether it
/// holds the masking tag, its JSON string's UTF-16 length.
#[derive(Debug, Clone, Copy)]
struct Measured {
    at: usize,
    len: usize,
    tagged: bool,
    units: usize,
}

impl Clone for Sized {
    fn clone(&self) -> Self {
        Sized::default()
    }
}

impl Sized {
    /// Drop what was measured of block `j` of message `i` (the policy
    /// rewrote it).
    fn forget(&mut self, i: usize, j: usize) {
        if let Some(m) = self.0.get_mut(i).and_then(|b| b.get_mut(j)) {
            *m = None;
        }
    }

    /// Whether `content` (block `j` of message `i`) holds the masking tag,
    /// and the UTF-16 length of its JSON string: kept, or measured now.
    fn of(&mut self, i: usize, j: usize, content: &str) -> (bool, usize) {
        if self.0.len() <= i {
            self.0.resize_with(i + 1, Vec::new);
        }
        let blocks = &mut self.0[i];
        if blocks.len() <= j {
            blocks.resize(j + 1, None);
        }
        let at = content.as_ptr() as usize;
        match blocks[j] {
            Some(m) if m.at == at && m.len == content.len() => (m.tagged, m.units),
            _ => {
                let m = Measured {
                    at,
                    len: content.len(),
                    tagged: content.contains(MASKING_INDICATOR_TAG),
                    units: json_string_utf16_len(content),
                };
                blocks[j] = Some(m);
                (m.tagged, m.units)
            }
        }
    }
}

/// A boxed policy with upstream's defaults.
pub fn make() -> Box<dyn Policy> {
    Box::new(GeminiCliMask::default())
}

fn utf16_len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// `JSON.stringify(text)` (serde_json escapes what JavaScript escapes).
fn json_string(text: &str) -> String {
    serde_json::Value::String(text.to_string()).to_string()
}

/// `estimateTokenCountSync([part])` of a function response `{output: text}` of tool `name`.
pub fn response_tokens(name: &str, output: &str) -> usize {
    tokens_of_units(name, json_string_utf16_len(output))
}

/// [`response_tokens`] of an output whose JSON string is `units` UTF-16 units long.
fn tokens_of_units(name: &str, units: usize) -> usize {
    // `{"output":` and `}` around the JSON string, measured without
    // building it: the mask sizes every tool result at every call.
    let response = "{\"output\":}".len() + units;
    ((utf16_len(name) + response) as f64 / 4.0).floor() as usize
}

/// `utf16_len(&json_string(text))`, without the string: the quotes, two
/// units for `"`, `\\` and the five short escapes, six for other control
/// characters (`\u00XX`), every other character its own UTF-16 length.
fn json_string_utf16_len(text: &str) -> usize {
    let escapes: usize = text
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 1,
            0..=0x1f => 5,
            _ => 0,
        })
        .sum();
    2 + utf16_len(text) + escapes
}

/// `getToolOutputContent`: `JSON.stringify(response, null, 2)`.
pub fn pretty_response(output: &str) -> String {
    format!("{{\n  \"output\": {}\n}}", json_string(output))
}

/// The first `n` UTF-16 units of `s` (short of a split surrogate pair).
fn head_units(s: &str, n: usize) -> &str {
    let mut units = 0;
    for (i, c) in s.char_indices() {
        units += c.len_utf16();
        if units > n {
            return &s[..i];
        }
    }
    s
}

/// The last `n` UTF-16 units of `s` (short of a split surrogate pair).
fn tail_units(s: &str, n: usize) -> &str {
    let mut units = 0;
    for (i, c) in s.char_indices().rev() {
        units += c.len_utf16();
        if units > n {
            return &s[i + c.len_utf8()..];
        }
    }
    s
}

/// `formatSimplePreview`: over 20 lines, the first and last 10.
pub fn simple_preview(content: &str) -> String {
    let lines: Vec<&str> = content.split('\n').collect();
    if lines.len() <= 20 {
        return content.to_string();
    }
    format!(
        "{}\n\n... [{} lines omitted] ...\n\n{}",
        lines[..10].join("\n"),
        lines.len() - 20,
        lines[lines.len() - 10..].join("\n")
    )
}

/// The section names `formatShellPreview` splits on.
const SECTIONS: [&str; 6] = [
    "Output",
    "Error",
    "Exit Code",
    "Signal",
    "Background PIDs",
    "Process Group PGID",
];

/// `content.split(/^(Output|Error|…): /m)`: text, then (name, text) pairs.
fn split_sections(content: &str) -> (String, Vec<(&'static str, String)>) {
    let starts = std::iter::once(0).chain(
        content
            .char_indices()
            .filter(|(_, c)| matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}'))
            .map(|(i, c)| i + c.len_utf8()),
    );
    let mut cuts: Vec<(usize, usize, &'static str)> = Vec::new();
    for at in starts {
        let rest = &content[at..];
        if let Some(name) = SECTIONS
            .iter()
            .find(|n| rest.strip_prefix(**n).is_some_and(|r| r.starts_with(": ")))
        {
            cuts.push((at, at + name.len() + 2, name));
        }
    }
    let first_end = cuts.first().map_or(content.len(), |c| c.0);
    let pairs = cuts
        .iter()
        .enumerate()
        .map(|(k, &(_, body, name))| {
            let end = cuts.get(k + 1).map_or(content.len(), |c| c.0);
            (name, content[body..end].to_string())
        })
        .collect();
    (content[..first_end].to_string(), pairs)
}

/// `formatShellPreview` of a response `{output}` (no root exit code or error).
pub fn shell_preview(output: &str) -> String {
    let (lead, sections) = split_sections(output);
    if sections.is_empty() {
        return simple_preview(output);
    }
    let mut parts = Vec::new();
    if !lead.trim().is_empty() {
        parts.push(simple_preview(lead.trim()));
    }
    for (name, body) in sections {
        if name == "Output" {
            parts.push(format!("Output: {}", simple_preview(body.trim())));
        } else {
            parts.push(format!("{name}: {}", body.trim()));
        }
    }
    parts.join("\n")
}

/// The preview of one output: sectioned for the shell tool, else the
/// pretty response's first and last 250 units past 500.
pub fn preview(tool: &str, output: &str) -> String {
    if tool == SHELL_TOOL_NAME {
        return shell_preview(output);
    }
    let content = pretty_response(output);
    if utf16_len(&content) > 500 {
        format!(
            "{}\n... [TRUNCATED] ...\n{}",
            head_units(&content, 250),
            tail_units(&content, 250)
        )
    } else {
        content
    }
}

/// `formatMaskedSnippet`, byte for byte.
pub fn snippet(preview: &str, path: &str) -> String {
    format!("{MASKING_INDICATOR_TAG}>\n{preview}\n\n{AVAILABLE_AT}{path}\n</tool_output_masked>")
}

/// A prunable output: (message, block), tool, tokens.
struct Prunable {
    at: (usize, usize),
    tool: String,
    tokens: usize,
}

impl GeminiCliMask {
    /// The backward scan of `mask` over `history[..end]`: the prunable
    /// outputs, newest first, and their tokens.
    fn scan(&mut self, history: &[Message], end: usize) -> (Vec<Prunable>, usize) {
        let s = &self.switches;
        let start = if s.DEFAULT_PROTECT_LATEST_TURN {
            end.checked_sub(1)
        } else {
            Some(end)
        };
        let (mut cumulative, mut boundary, mut total) = (0, false, 0);
        let mut out = Vec::new();
        let names = tool_names(history);
        for i in (0..start.unwrap_or(0)).rev() {
            for (j, b) in history[i].blocks().iter().enumerate().rev() {
                let Block::ToolResult {
                    tool_use_id,
                    content,
                } = b
                else {
                    continue;
                };
                let (tagged, units) = self.sized.of(i, j, content);
                if tagged {
                    continue;
                }
                let tool = names
                    .get(tool_use_id.as_str())
                    .map_or(UNKNOWN_TOOL, |n| n)
                    .to_string();
                let tokens = tokens_of_units(&tool, units);
                if !boundary {
                    cumulative += tokens;
                    if cumulative <= s.DEFAULT_TOOL_PROTECTION_THRESHOLD {
                        continue;
                    }
                    boundary = true;
                }
                total += tokens;
                out.push(Prunable {
                    at: (i, j),
                    tool,
                    tokens,
                });
            }
        }
        (out, total)
    }

    /// Write one output to its file; the path.
    fn save(
        &mut self,
        tool: &str,
        id: &str,
        output: &str,
        ctx: &PolicyCtx<'_>,
    ) -> LabResult<String> {
        let dir = ctx.root.join(TOOL_OUTPUTS_DIR);
        self.written += 1;
        let name = format!("{}_{}_{}.txt", safe_part(tool), safe_part(id), self.written);
        let path = dir.join(name);
        ctx.storage
            .create_dir_all(&dir)
            .and_then(|()| ctx.storage.write(&path, output.as_bytes()))
            .map_err(|e| LabError::io("saving a masked tool output", &path, e))?;
        Ok(path.display().to_string())
    }

    /// Mask the prunable outputs of `history`; the events.
    fn mask(
        &mut self,
        history: &mut [Message],
        end: usize,
        ctx: &PolicyCtx<'_>,
    ) -> LabResult<Vec<PolicyEvent>> {
        let (prunable, total) = self.scan(history, end);
        if prunable.is_empty() || total < self.switches.DEFAULT_MIN_PRUNABLE_TOKENS_THRESHOLD {
            return Ok(Vec::new());
        }
        let mut events = Vec::new();
        for p in prunable {
            let (i, j) = p.at;
            let Block::ToolResult {
                tool_use_id,
                content,
            } = &history[i].blocks()[j]
            else {
                continue;
            };
            let (id, output) = (tool_use_id.clone(), content.clone());
            let path = self.save(&p.tool, &id, &output, ctx)?;
            events.push(PolicyEvent::Persisted {
                id: id.clone(),
                path: path.clone(),
                chars: output.chars().count(),
            });
            let masked = snippet(&preview(&p.tool, &output), &path);
            if p.tokens <= response_tokens(&p.tool, &masked) {
                // Upstream writes the file first and keeps the output when
                // masking would not save a token.
                continue;
            }
            events.push(PolicyEvent::Truncated {
                id,
                from_chars: output.chars().count(),
                to_chars: masked.chars().count(),
                saved_to: Some(path),
            });
            if let Block::ToolResult { content, .. } = &mut history[i].blocks_mut()[j] {
                *content = masked;
                // Forget the size now rather than rely on the new string's
                // address differing from the old one's.
                self.sized.forget(i, j);
            }
        }
        Ok(events)
    }
}

impl Policy for GeminiCliMask {
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
            summary: "tool output masking: past the newest 50k tokens of function responses, once 30k more are prunable, each goes to tool-outputs/ behind a <tool_output_masked> head/tail preview".into(),
            source: Source {
                upstream: "google-gemini/gemini-cli@00b731958a3b583218743b03591e7596d8fb4506".into(),
                files: &[
                    "packages/core/src/services/toolOutputMaskingService.ts",
                    "packages/core/src/utils/tokenCalculation.ts",
                    "packages/core/src/core/client.ts (tryMaskToolOutputs)",
                    "packages/core/src/config/config.ts (defaults)",
                ],
                license: "Apache-2.0 (constants and strings only)",
                approximate: false,
            },
            constants: serde_json::json!({
                "switches": self.switches,
                "MASKING_INDICATOR_TAG": MASKING_INDICATOR_TAG,
                "TOOL_OUTPUTS_DIR": TOOL_OUTPUTS_DIR,
                "SHELL_TOOL_NAME": SHELL_TOOL_NAME,
            }),
            unit: Unit::Tokens,
            differences: vec![
                "runs enabled: upstream's `toolOutputMasking.enabled` defaults to false",
                "the file holds the output text itself, not upstream's `JSON.stringify(response, null, 2)` of it, so the checker can match it to the original",
                "file names end in a running count, not `Math.random().toString(36).substring(7)`; files go under the policy's root, not the global history directory",
                "a function response is `{output: <result text>}` named by its call's tool; the request being sent (the messages since the last reply) is outside the scan, as it is outside upstream's history",
                "token counts are upstream's estimate (length / 4), not the run's counter; chat compression (the `gemini-cli` policy) is not part of this one",
            ],
        }
    }

    fn history_replaced(&mut self) {
        self.sized = Sized::default();
    }

    fn acts_on(&self) -> crate::policy::shape::ActsOn {
        crate::policy::shape::ActsOn::ToolResults
    }

    fn pointer_rules(&self) -> Vec<PointerRule> {
        vec![PointerRule::line_prefix(AVAILABLE_AT)]
    }

    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        // Upstream masks the chat history before the turn's request joins
        // it: the messages since the last reply are that request.
        let end = history
            .iter()
            .rposition(|m| m.role == Role::Assistant)
            .map_or(0, |i| i + 1);
        let events = self.mask(history, end, ctx)?;
        Ok(Prepared {
            request: history.clone(),
            events,
        })
    }
}

#[cfg(test)]
mod tests;
