//! A Roo Code or Cline task's `ui_messages.json` (`ClineMessage[]`, the
//! rows the extension shows), read for what the history beside it lacks:
//!
//! * Roo's `condense_context` rows: `contextCondense.prevContextTokens` by
//!   `condenseId`, the context's size when it condensed;
//! * Cline's `conversationHistoryDeletedRange`, which
//!   `MessageStateHandler.addToClineMessages` stamps on every row with the
//!   row's `conversationHistoryIndex` (the history's last index then): a
//!   row whose range reaches further than the row before's is the first
//!   written after `ContextManager.getNewContextMessagesAndMetadata` dropped
//!   that range (cline/cline 01cfde0d, `context-management/ContextManager.ts`);
//! * each `api_req_started` row's usage (its `text`, a JSON
//!   `ClineApiReqInfo`: `tokensIn`, `tokensOut`, `cacheWrites`,
//!   `cacheReads`, and in Roo `apiProtocol`).
//!
//! **What `tokensIn` counts** changed across releases. Cline, and Roo before
//! it moved to `ApiCostResult`, store the provider's input count as
//! reported: Anthropic's `input_tokens` leaves the cache out (the prompt is
//! `tokensIn + cacheWrites + cacheReads`, as Cline's `shouldCompactContextWindow`
//! adds them), OpenAI's `prompt_tokens` holds it (the prompt is `tokensIn`).
//! Current Roo stores `costResult.totalInputTokens`, which is the whole
//! prompt for both protocols (`calculateApiCostAnthropic` adds the cache).
//! The row does not say which release wrote it, so for any row not marked
//! `apiProtocol: "openai"`: a `tokensIn` below `cacheWrites + cacheReads`
//! can only be the old count (the prompt is the sum); otherwise both
//! readings stay possible, the current one taken, the sum the upper bound.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::stream::for_each_element;
use super::{DiagnosticKind, Sink};
use crate::error::LabResult;

/// One `api_req_started` row's usage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiRequest {
    /// The row's `ts` (milliseconds), when it has one.
    pub ts: Option<u64>,
    /// The prompt in tokens, as the row is read (see the module notes).
    pub sent: u64,
    /// The smallest prompt the row can mean.
    pub sent_min: u64,
    /// The largest prompt the row can mean.
    pub sent_max: u64,
    /// `tokensOut`.
    pub received: u64,
}

/// A deleted range that grew: Cline dropped `range` from its requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RangeChange {
    /// The inclusive range of history indices no longer sent.
    pub range: [usize; 2],
    /// The first row's `conversationHistoryIndex`: the history's last
    /// message when the truncated request was sent.
    pub history_index: Option<usize>,
    /// The usage of the request before it, which made Cline truncate.
    pub before: Option<u64>,
}

/// What a task's `ui_messages.json` adds to its history.
#[derive(Debug, Default)]
pub(crate) struct TaskUi {
    /// `prevContextTokens` of each condense, by `condenseId`.
    pub condense_tokens: BTreeMap<String, u64>,
    /// Each growth of Cline's deleted range, in order.
    pub deleted_ranges: Vec<RangeChange>,
    /// Each `api_req_started` row with usage, in order.
    pub requests: Vec<ApiRequest>,
}

/// The rows of `ui`, or an empty reading when there is no such file. A file
/// that is not a JSON array, and a row of the wrong shape, are diagnostics
/// naming it (the history is read without them).
pub(crate) fn read(ui: &Path, sink: &mut Sink<'_>) -> LabResult<TaskUi> {
    let mut out = TaskUi::default();
    let Ok(text) = std::fs::read_to_string(ui) else {
        return Ok(out);
    };
    if let Err(e) = serde_json::from_str::<Vec<Value>>(&text) {
        let msg = format!(
            "{} at {}:{}: {e}; its records are not read (fix or remove it)",
            ui.display(),
            e.line(),
            e.column()
        );
        sink.report(0, 0, DiagnosticKind::InvalidRecord, msg)?;
        return Ok(out);
    }
    let outer = sink.file.replace(ui.to_path_buf());
    let mut reader = Reader::default();
    let read = for_each_element(text.as_bytes(), ui, &[], &[], |v, line, column| {
        reader.row(&v, (line, column), &mut out, sink)
    });
    sink.file = outer;
    read.map(|_| out)
}

#[derive(Default)]
struct Reader {
    /// The deleted range of the row before.
    range: Option<[usize; 2]>,
    /// The last `api_req_started` row's prompt plus reply, as Cline adds
    /// them up (`None`: no usage), and the one's before it: the request
    /// that made Cline truncate is the one before the request in flight.
    last_total: Option<u64>,
    prev_total: Option<u64>,
}

impl Reader {
    fn row(
        &mut self,
        v: &Value,
        pos: (usize, usize),
        out: &mut TaskUi,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        match v.get("say").and_then(Value::as_str) {
            Some("condense_context") => condense(v, out),
            Some("api_req_started") => self.request(v, pos, out, sink)?,
            _ => {}
        }
        self.deleted_range(v, pos, out, sink)
    }

    fn request(
        &mut self,
        v: &Value,
        pos: (usize, usize),
        out: &mut TaskUi,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        self.prev_total = self.last_total.take();
        let Some(text) = v.get("text").and_then(Value::as_str) else {
            return Ok(());
        };
        let info = match serde_json::from_str::<Value>(text) {
            Ok(info @ Value::Object(_)) => info,
            _ => {
                let msg = "api_req_started row's text is not a JSON object; its usage is not read";
                return sink.report(pos.0, pos.1, DiagnosticKind::InvalidRecord, msg.into());
            }
        };
        let n = |k: &str| info.get(k).and_then(Value::as_u64);
        // A row still loading, or cancelled before any usage, has none.
        let (Some(tokens_in), Some(out_tokens)) = (n("tokensIn"), n("tokensOut")) else {
            return Ok(());
        };
        let cached = n("cacheWrites").unwrap_or(0) + n("cacheReads").unwrap_or(0);
        let openai = info.get("apiProtocol").and_then(Value::as_str) == Some("openai");
        let (sent, sent_min, sent_max) = if openai {
            (tokens_in, tokens_in, tokens_in)
        } else if tokens_in < cached {
            (tokens_in + cached, tokens_in + cached, tokens_in + cached)
        } else {
            (tokens_in, tokens_in, tokens_in + cached)
        };
        self.last_total = Some(tokens_in + out_tokens + cached);
        out.requests.push(ApiRequest {
            ts: v.get("ts").and_then(Value::as_u64),
            sent,
            sent_min,
            sent_max,
            received: out_tokens,
        });
        Ok(())
    }

    fn deleted_range(
        &mut self,
        v: &Value,
        pos: (usize, usize),
        out: &mut TaskUi,
        sink: &mut Sink<'_>,
    ) -> LabResult<()> {
        let Some(raw) = v.get("conversationHistoryDeletedRange") else {
            return Ok(());
        };
        let pair = raw.as_array().and_then(|a| match a.as_slice() {
            [s, e] => Some([s.as_u64()? as usize, e.as_u64()? as usize]),
            _ => None,
        });
        let Some(range) = pair.filter(|[s, e]| s <= e) else {
            let msg = format!(
                "conversationHistoryDeletedRange {raw} is not two ascending indices; ignored"
            );
            return sink.report(pos.0, pos.1, DiagnosticKind::InvalidRecord, msg);
        };
        // A range that shrinks is a checkpoint restore, not a truncation.
        if self.range.is_none_or(|before| range[1] > before[1]) {
            let history_index = v
                .get("conversationHistoryIndex")
                .and_then(Value::as_u64)
                .map(|i| i as usize);
            if history_index.is_none() {
                let msg = "row with a new conversationHistoryDeletedRange has no conversationHistoryIndex; the truncation cannot be placed";
                sink.report(pos.0, pos.1, DiagnosticKind::InvalidRecord, msg.into())?;
            }
            out.deleted_ranges.push(RangeChange {
                range,
                history_index,
                before: self.prev_total,
            });
        }
        self.range = Some(range);
        Ok(())
    }
}

fn condense(v: &Value, out: &mut TaskUi) {
    let c = v.get("contextCondense");
    let id = c.and_then(|c| c.get("condenseId")).and_then(Value::as_str);
    let prev = c
        .and_then(|c| c.get("prevContextTokens"))
        .and_then(Value::as_u64);
    if let (Some(id), Some(prev)) = (id, prev) {
        out.condense_tokens.insert(id.to_string(), prev);
    }
}
