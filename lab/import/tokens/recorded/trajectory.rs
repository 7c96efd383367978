//! The API requests a mini-swe-agent trajectory records, with their usage
//! and what the provider charged.
//!
//! mini-swe-agent keeps each reply's raw API response beside the message
//! (`messages[i].extra.response`, LiteLLM's `ModelResponse`). Its `usage` is
//! OpenAI-shaped: `prompt_tokens` counts every prompt token, cached ones
//! included (`prompt_tokens_details.cached_tokens`), and `completion_tokens`
//! the generated ones, reasoning included. A router adds what the call was
//! charged: OpenRouter's `usage.cost`, in dollars. So each reply gives one
//! [`RecordedRequest`]: uncached input = prompt − cached, cache reads =
//! cached, no cache writes (an implicit cache bills none), output =
//! completion, and `charged` = `cost` where the response has it.
//!
//! The messages a request sent are the trajectory's messages before its
//! reply, as the importer reads them (the system prompt aside, as in every
//! replay); the k-th reply with usage is the k-th assistant message.

use std::path::Path;

use serde_json::Value;

use super::{Billing, RecordedRequest, Usage};
use crate::error::{LabError, LabResult};
use crate::message::Role;
use crate::{import_file, ImportOptions, ImportedSession, TranscriptFormat};

/// The file of `session` when it is a mini-swe-agent trajectory read from
/// disk; `None` for any other session and for an archive member, which is
/// not re-read (it keeps the measure's prices and envelope rules).
pub fn on_disk(session: &ImportedSession) -> Option<&Path> {
    (session.format == TranscriptFormat::MiniSweAgent && session.source.is_file())
        .then_some(session.source.as_path())
}

/// The model that answered the trajectory's first reply with a recorded
/// response (what a replay of it is priced at); `None` when no reply
/// records one, or `session` is no trajectory on disk.
pub fn first_model(session: &ImportedSession) -> LabResult<Option<String>> {
    let Some(path) = on_disk(session) else {
        return Ok(None);
    };
    let responses = crate::mini_swe::responses(path)?;
    Ok(responses
        .into_iter()
        .find_map(|(r, _)| r?.get("model").and_then(Value::as_str).map(str::to_string)))
}

/// The prompt tokens the trajectory's first reply with a recorded usage
/// reports (the request that carried the system prompt and the task);
/// `None` when no reply records one, or `session` is no trajectory on disk.
pub fn first_prompt_tokens(session: &ImportedSession) -> LabResult<Option<u64>> {
    let Some(path) = on_disk(session) else {
        return Ok(None);
    };
    let responses = crate::mini_swe::responses(path)?;
    Ok(responses
        .into_iter()
        .find_map(|(r, _)| r?.pointer("/usage/prompt_tokens").and_then(Value::as_u64)))
}

/// Reads the requests of a mini-swe-agent `.traj.json` (imported here;
/// [`requests`] reuses a session already imported).
pub fn read_trajectory(path: &Path) -> LabResult<Vec<RecordedRequest>> {
    requests_with(&import_file(path, &ImportOptions::default())?, path)
}

/// The recorded requests of `session`, a trajectory on disk, its messages
/// as imported; `None` for any other session.
pub fn requests(session: &ImportedSession) -> LabResult<Option<Vec<RecordedRequest>>> {
    on_disk(session)
        .map(|path| requests_with(session, path))
        .transpose()
}

/// Each reply's request, its messages those of `session` before the reply.
/// A reply without a `usage` is left out (an older trajectory, or a step
/// that never reached the model); a usage whose cached tokens exceed its
/// prompt tokens is inconsistent (exit 3, naming the line of the reply).
fn requests_with(session: &ImportedSession, path: &Path) -> LabResult<Vec<RecordedRequest>> {
    let responses = crate::mini_swe::responses(path)?;
    let replies: Vec<usize> = session
        .main
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::Assistant)
        .map(|(i, _)| i)
        .collect();
    let mut out = Vec::new();
    // Every request resends the conversation so far: one shared copy.
    let main = std::sync::Arc::new(session.main.clone());
    for (k, (response, at)) in responses.iter().enumerate() {
        let Some(request) = response
            .as_ref()
            .map(|r| request_of(r, at, path))
            .transpose()?
            .flatten()
        else {
            continue;
        };
        let before = replies.get(k).copied().unwrap_or(session.main.len());
        out.push(RecordedRequest {
            messages: super::Sent::prefix(&main, before),
            ..request
        });
    }
    Ok(out)
}

/// One response's request, without its messages; `None` without usage.
fn request_of(
    response: &Value,
    (line, column): &(usize, usize),
    path: &Path,
) -> LabResult<Option<RecordedRequest>> {
    let Some(usage) = response.get("usage").filter(|u| u.is_object()) else {
        return Ok(None);
    };
    let n = |p: &str| usage.pointer(p).and_then(Value::as_u64).unwrap_or(0);
    let (prompt, cached) = (
        n("/prompt_tokens"),
        n("/prompt_tokens_details/cached_tokens"),
    );
    let id = response
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if cached > prompt {
        return Err(LabError::Input {
            file: path.to_path_buf(),
            line: *line,
            column: *column,
            message: format!(
                "inconsistent usage: response `{id}` reports {cached} cached prompt tokens of {prompt} prompt tokens in all"
            ),
            fix: "the usage does not belong to this response (an edited log); repair the record or replay without --cost".into(),
        });
    }
    Ok(Some(RecordedRequest {
        id,
        chain: backend(response),
        sidechain: false,
        model: response
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        at_ms: response
            .get("created")
            .and_then(Value::as_i64)
            .map(|s| s.saturating_mul(1000)),
        sent_ms: None,
        messages: super::Sent::default(),
        resent_units: 0.0,
        prompts_after_stop_hook: 0,
        line: Some(*line),
        usage: Usage {
            input_tokens: prompt - cached,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: cached,
        },
        implicit_cache: true,
        billing: Billing {
            output_tokens: n("/completion_tokens"),
            cache_write_1h_tokens: 0,
            output_estimate: None,
        },
        charged: usage.get("cost").and_then(Value::as_f64),
    }))
}

/// The backend that served the call, as the router names it (OpenRouter's
/// `provider`: `Google` for Vertex, `Google AI Studio`), or empty. Each
/// backend keeps its own implicit cache, so it is the request's chain: a
/// call routed to the other backend reads nothing its sibling cached. In
/// the shared Gemini 3 Pro corpus, 460 of the 463 calls that were the first
/// to reach their backend in a run read nothing although the run had sent
/// cacheable prompts elsewhere, and the block rule predicts 16,605 reads
/// within 5 % with one cache per backend against 15,101 with one per run.
fn backend(response: &Value) -> String {
    response
        .get("provider")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}
