//! Which format a file holds, judged from its first bytes.
//!
//! Extensions lie (a `.jsonl` saved as `.json`, a `chat.json` renamed
//! `.jsonl`), so the content decides whenever it can:
//!
//! * a document starting with `[` is an array: of trajectory objects when an
//!   element has a `traj` key ([`TranscriptFormat::Trajectories`](crate::TranscriptFormat::Trajectories)), of Claude
//!   Code records when Claude Code's keys (`parentUuid`, `sessionId`,
//!   `leafUuid`) appear ([`TranscriptFormat::ChatJson`](crate::TranscriptFormat::ChatJson)), of OpenAI messages
//!   when OpenAI's markers (`tool_calls`, `tool_call_id`, `"role": "tool"`)
//!   appear, else of Anthropic messages;
//! * a document starting with `{` whose first line is a whole JSON object
//!   followed by another line starting with `{` is JSON Lines
//!   ([`TranscriptFormat::ClaudeJsonl`](crate::TranscriptFormat::ClaudeJsonl)); so is a single-line object with a
//!   `type` key and no `messages` / `history`, or one that carries Claude
//!   Code's keys; an object with `history` or OpenAI's markers is
//!   [`TranscriptFormat::OpenAi`](crate::TranscriptFormat::OpenAi), one with `messages` Anthropic;
//! * an object whose `trajectory_format` names mini-swe-agent, whose `info`
//!   carries `mini_version`, or that opens with `{"info": {"exit_status"`
//!   (mini-swe-agent's `save_traj` writes `info` first, and its `submission`
//!   can push everything else past the sniffed head) is
//!   [`TranscriptFormat::MiniSweAgent`](crate::TranscriptFormat::MiniSweAgent);
//! * JSON Lines whose first record is `{"type": T, "payload": {...}}` with
//!   T a Codex `RolloutItem` type is [`TranscriptFormat::CodexRollout`](crate::TranscriptFormat::CodexRollout);
//! * an object (a JSON Lines record or a whole document) with `sessionId`
//!   and `projectHash` and no Claude Code chain key is a Gemini CLI chat
//!   recording ([`TranscriptFormat::GeminiCli`](crate::TranscriptFormat::GeminiCli): its recorder writes the
//!   metadata, or the whole `ConversationRecord`, first);
//! * an object whose first key is `info`, with an opencode session id
//!   (`"id": "ses_…"`), is an opencode export ([`TranscriptFormat::OpenCode`](crate::TranscriptFormat::OpenCode));
//!   an object with that id and a `projectID`, not under `info`, is the
//!   session file of opencode's storage ([`TranscriptFormat::OpenCodeStorage`](crate::TranscriptFormat::OpenCodeStorage));
//! * an array (or `{"trajectory": [...]}`) of objects with an `id`, a
//!   `source` and an `action` or `observation`, as OpenHands'
//!   `event_to_trajectory` writes events, is an OpenHands trajectory
//!   ([`TranscriptFormat::OpenHands`](crate::TranscriptFormat::OpenHands); checked before OpenAI's markers,
//!   since its `tool_call_metadata` holds a `tool_call_id`);
//! * one such object alone, or one with an `id`, a `source`, a `timestamp`
//!   and the `kind` of an openhands-sdk event class, is one file of
//!   OpenHands' per-event store ([`TranscriptFormat::OpenHandsEvents`](crate::TranscriptFormat::OpenHandsEvents));
//! * an array of Anthropic-shaped messages carrying Roo Code's `ApiMessage`
//!   keys (`ts`, `isSummary`, `condenseParent`) is a Roo Code task history
//!   ([`TranscriptFormat::RooCode`](crate::TranscriptFormat::RooCode)); Cline's, with no such key, reads as
//!   [`TranscriptFormat::Anthropic`](crate::TranscriptFormat::Anthropic);
//! * JSON Lines whose first line is goose's session metadata
//!   (`description` and `message_count`) or a goose message (`role`,
//!   `created`, a `content` list) is [`TranscriptFormat::Goose`](crate::TranscriptFormat::Goose), and so
//!   is an SQLite database (goose's `sessions.db`; opencode's `opencode.db`
//!   is told apart by its tables when read);
//! * an array of Gemini API `contents` (`parts` lists, `user` / `model`
//!   roles, no `content` key), bare or as `{"history": [...]}`, is a Gemini
//!   CLI saved chat ([`TranscriptFormat::GeminiContents`](crate::TranscriptFormat::GeminiContents));
//! * JSON Lines whose first line is a Pi `SessionHeader` (`type:
//!   session`, `id`, `cwd`) is [`TranscriptFormat::Pi`](crate::TranscriptFormat::Pi);
//! * text starting with `# aider chat started at` is aider's chat log
//!   ([`TranscriptFormat::Aider`](crate::TranscriptFormat::Aider));
//! * anything else is undecided (`None`): the extension decides.
//!
//! A UTF-8 byte-order mark, leading whitespace and `//` comment lines are
//! skipped first.

use serde_json::{Map, Value};

use crate::format::{compact, Head};

const CLAUDE_KEYS: &[&str] = &["\"parentUuid\"", "\"sessionId\"", "\"leafUuid\""];
const OPENAI_MARKERS: &[&str] = &[
    "\"tool_calls\"",
    "\"tool_call_id\"",
    "\"role\":\"tool\"",
    "\"history\"",
];

pub(crate) fn has_any(text: &str, keys: &[&str]) -> bool {
    keys.iter().any(|k| text.contains(k))
}

/// OpenHands events as `event_to_trajectory` writes them: an `id`, a
/// `source`, and an `action` or an `observation` (in whatever key order).
fn is_openhands_event(compact: &str) -> bool {
    compact.contains("\"id\":")
        && compact.contains("\"source\":\"")
        && (compact.contains("\"action\":\"") || compact.contains("\"observation\":\""))
}

/// The event kinds openhands-sdk writes to its event store most (the
/// conversation's first event is one of them).
const OPENHANDS_SDK_KINDS: &[&str] = &[
    "SystemPromptEvent",
    "MessageEvent",
    "ActionEvent",
    "ObservationEvent",
    "AgentErrorEvent",
    "UserRejectObservation",
    "Condensation",
    "CondensationRequest",
    "ConversationStateUpdateEvent",
    "PauseEvent",
];

/// One event as openhands-sdk's `EventLog` stores it: an id, a source, a
/// timestamp and the `kind` of an SDK event class.
fn is_openhands_sdk_event(compact: &str) -> bool {
    compact.contains("\"id\":\"")
        && compact.contains("\"source\":\"")
        && compact.contains("\"timestamp\":\"")
        && OPENHANDS_SDK_KINDS
            .iter()
            .any(|k| compact.contains(&format!("\"kind\":\"{k}\"")))
}

/// Roo Code's `ApiMessage`: a role with its timestamp or condense tags.
fn is_roo_code(compact: &str) -> bool {
    compact.contains("\"role\":\"")
        && has_any(
            compact,
            &["\"ts\":", "\"isSummary\":", "\"condenseParent\":"],
        )
}

/// Gemini API `contents`: a `parts` list beside a `user` or `model` role.
fn is_gemini_contents(compact: &str) -> bool {
    compact.contains("\"parts\":[")
        && (compact.contains("\"role\":\"model\"") || compact.contains("\"role\":\"user\""))
        && !compact.contains("\"content\":")
}

/// A Codex rollout line: `RolloutItem` is `tag = "type", content = "payload"`.
fn is_codex_record(map: &Map<String, Value>) -> bool {
    const TYPES: &[&str] = &[
        "session_meta",
        "response_item",
        "event_msg",
        "turn_context",
        "compacted",
    ];
    map.get("payload").is_some_and(Value::is_object)
        && map
            .get("type")
            .and_then(Value::as_str)
            .is_some_and(|t| TYPES.contains(&t))
}

/// A goose session's first line: its `SessionMetadata` (the two fields
/// every release requires), or a message (`role`, `created`, a `content`
/// list) when the metadata is missing.
pub(crate) fn is_goose_line(map: &Map<String, Value>) -> bool {
    (map.contains_key("description") && map.contains_key("message_count"))
        || (map.get("role").is_some_and(Value::is_string)
            && map.get("created").is_some_and(Value::is_number)
            && map.get("content").is_some_and(Value::is_array))
}

/// A Pi session's first line: its `SessionHeader` (`type: session`, an
/// `id` and the `cwd` it ran in).
fn is_pi_header(map: &Map<String, Value>) -> bool {
    map.get("type").and_then(Value::as_str) == Some("session")
        && map.get("id").is_some_and(Value::is_string)
        && map.get("cwd").is_some_and(Value::is_string)
}

/// mini-swe-agent's `save_traj` shape, in whitespace-free text.
fn is_mini_swe_agent(compact: &str) -> bool {
    compact.starts_with("{\"info\":{\"exit_status\"")
        || compact.contains("\"trajectory_format\":\"mini-swe-agent")
        || compact.contains("\"mini_version\":")
}

/// Gemini CLI's session metadata (or whole record), in whitespace-free
/// text: a session id and a project hash, and none of Claude Code's chain
/// keys (its records name their session too).
fn is_gemini_cli(compact: &str) -> bool {
    compact.contains("\"sessionId\":")
        && compact.contains("\"projectHash\":")
        && !compact.contains("\"parentUuid\"")
}

// The content tests of the formats whose shapes overlap, kept together
// because their ranks tell them apart (the module's doc above names each
// shape); a format with a shape of its own (aider, claude_trace, goose,
// atif) has its test in its module.

/// `trajectories`: an array whose elements carry `traj`.
pub(crate) fn trajectories(h: &Head<'_>) -> bool {
    h.is_array() && h.compact.contains("\"traj\":[")
}

/// `mini_swe_agent`.
pub(crate) fn mini_swe_agent(h: &Head<'_>) -> bool {
    h.is_object() && is_mini_swe_agent(&h.compact)
}

/// `gemini_cli`.
pub(crate) fn gemini_cli(h: &Head<'_>) -> bool {
    h.is_object() && is_gemini_cli(&h.compact)
}

/// `gemini_contents`: bare, or under `history`.
pub(crate) fn gemini_contents(h: &Head<'_>) -> bool {
    (h.is_array() || (h.is_object() && h.compact.starts_with("{\"history\":[")))
        && is_gemini_contents(&h.compact)
}

/// `chat_json`: an array of records with Claude Code's keys.
pub(crate) fn chat_json(h: &Head<'_>) -> bool {
    h.is_array() && has_any(&h.compact, CLAUDE_KEYS)
}

/// `opencode`: an export, its session under `info`.
pub(crate) fn opencode(h: &Head<'_>) -> bool {
    h.is_object() && h.compact.starts_with("{\"info\":{") && h.compact.contains("\"id\":\"ses_")
}

/// `opencode_storage`: a session file of the storage directory.
pub(crate) fn opencode_storage(h: &Head<'_>) -> bool {
    h.is_object() && h.compact.contains("\"id\":\"ses_") && h.compact.contains("\"projectID\":")
}

/// `openhands`: events, bare or under `trajectory` (before OpenAI's
/// markers, since `tool_call_metadata` holds a `tool_call_id`).
pub(crate) fn openhands(h: &Head<'_>) -> bool {
    (h.is_array() || (h.is_object() && h.compact.starts_with("{\"trajectory\":[")))
        && is_openhands_event(&h.compact)
}

/// `openhands_events`: one event file (Claude Code records can carry tool
/// output objects with such keys).
pub(crate) fn openhands_events(h: &Head<'_>) -> bool {
    h.is_object()
        && (is_openhands_event(&h.compact) || is_openhands_sdk_event(&h.compact))
        && !has_any(&h.compact, CLAUDE_KEYS)
}

/// `pi`: its session header first.
pub(crate) fn pi(h: &Head<'_>) -> bool {
    h.first_object.as_ref().is_some_and(is_pi_header)
}

/// `codex_rollout`: a `RolloutItem` first.
pub(crate) fn codex_rollout(h: &Head<'_>) -> bool {
    h.first_object.as_ref().is_some_and(is_codex_record)
}

/// `claude_jsonl`: JSON Lines (a whole object, then another line starting
/// with `{`), a single record with a `type` and neither `history` nor
/// `messages`, or (the first line longer than the head) Claude Code's
/// keys without OpenAI's.
pub(crate) fn claude_jsonl(h: &Head<'_>) -> bool {
    if !h.is_object() {
        return false;
    }
    match &h.first_object {
        Some(map) => {
            h.another_record
                || (!map.contains_key("history")
                    && !map.contains_key("messages")
                    && map.contains_key("type"))
        }
        None => !openai_unparsed(h) && has_any(&h.compact, CLAUDE_KEYS),
    }
}

/// A pretty-printed document (or one longer than the head) that is
/// OpenAI's.
fn openai_unparsed(h: &Head<'_>) -> bool {
    h.compact.starts_with("{\"history\"") || has_any(&h.compact, OPENAI_MARKERS)
}

/// `openai`: an array with OpenAI's markers, or an object with `history`,
/// or `messages` with the markers.
pub(crate) fn openai(h: &Head<'_>) -> bool {
    if h.is_array() {
        return has_any(&h.compact, OPENAI_MARKERS);
    }
    if !h.is_object() {
        return false;
    }
    match &h.first_object {
        Some(map) => {
            map.contains_key("history")
                || (map.contains_key("messages") && has_any(&compact(h.first), OPENAI_MARKERS))
        }
        None => openai_unparsed(h),
    }
}

/// `roo_code`: an array of messages stamped with Roo's keys.
pub(crate) fn roo_code(h: &Head<'_>) -> bool {
    h.is_array() && is_roo_code(&h.compact)
}

/// `anthropic`: any other array, or an object with `messages`.
pub(crate) fn anthropic(h: &Head<'_>) -> bool {
    if h.is_array() {
        return true;
    }
    h.is_object()
        && match &h.first_object {
            Some(map) => map.contains_key("messages"),
            None => h.compact.contains("\"messages\":["),
        }
}

#[cfg(test)]
mod tests {
    use crate::format_list::sniff;
    use crate::TranscriptFormat;
    use TranscriptFormat::*;

    #[test]
    fn content_decides() {
        let rec = r#"{"type":"user","uuid":"a","parentUuid":null,"message":{"role":"user","content":"x"}}"#;
        let jsonl = format!("{rec}\n{rec}\n");
        assert_eq!(sniff(jsonl.as_bytes()), Some(ClaudeJsonl));
        assert_eq!(
            sniff(format!("// header\n{rec}\n").as_bytes()),
            Some(ClaudeJsonl)
        );
        assert_eq!(sniff(format!("[{rec}]").as_bytes()), Some(ChatJson));
        assert_eq!(
            sniff(br#"[{"task_id": 1, "traj": [{"role": "user", "content": "x"}]}]"#),
            Some(Trajectories)
        );
        assert_eq!(
            sniff(b"{\n  \"history\": [\n {\"role\": \"user\"}]}"),
            Some(OpenAi)
        );
        assert_eq!(
            sniff(br#"{"messages": [{"role": "user", "content": "x"}]}"#),
            Some(Anthropic)
        );
        assert_eq!(
            sniff(br#"[{"role": "tool", "tool_call_id": "c", "content": "x"}]"#),
            Some(OpenAi)
        );
        assert_eq!(sniff(b"\xEF\xBB\xBF  [ ]"), Some(Anthropic));
        assert_eq!(sniff(b""), None);
        assert_eq!(sniff(b"not json"), None);
        assert_eq!(sniff(br#"{"a": 1}"#), None);
        let mini = br#"{
  "info": {
    "exit_status": "Submitted",
    "submission": "diff --git"#;
        assert_eq!(sniff(mini), Some(MiniSweAgent));
        let codex = br#"{"timestamp":"t","type":"session_meta","payload":{"id":"x"}}
{"timestamp":"t","type":"response_item","payload":{"type":"message"}}
"#;
        assert_eq!(sniff(codex), Some(CodexRollout));
        assert_eq!(
            sniff(b"\n# aider chat started at 2025-07-15 11:38:37\n\n"),
            Some(Aider)
        );
        assert_eq!(
            sniff(br#"{"messages": [], "trajectory_format": "mini-swe-agent-1"}"#),
            Some(MiniSweAgent)
        );
        let gemini = br#"{"sessionId":"s","projectHash":"h","startTime":"t","kind":"main"}
{"id":"m1","type":"user","content":[{"text":"x"}]}
"#;
        assert_eq!(sniff(gemini), Some(GeminiCli));
        assert_eq!(
            sniff(b"{\n  \"sessionId\": \"s\",\n  \"projectHash\": \"h\",\n  \"messages\": ["),
            Some(GeminiCli)
        );
        assert_eq!(
            sniff(b"{\n  \"info\": {\n    \"id\": \"ses_1\",\n    \"slug\": \"x\""),
            Some(OpenCode)
        );
        let oh = br#"[{"id": 0, "timestamp": "t", "source": "agent", "message": "m", "action": "system", "args": {}},
  {"id": 4, "source": "environment", "observation": "run", "tool_call_metadata": {"tool_call_id": "c"}}]"#;
        assert_eq!(sniff(oh), Some(OpenHands));
        let mut wrapped = b"{\"trajectory\": ".to_vec();
        wrapped.extend_from_slice(oh);
        assert_eq!(sniff(&wrapped), Some(OpenHands));
        // One event alone is a file of the per-event store, V0 or V1.
        let v0 = br#"{"id": 4, "timestamp": "t", "source": "environment", "observation": "run", "content": "x"}"#;
        assert_eq!(sniff(v0), Some(OpenHandsEvents));
        let v1 = br#"{"id":"00000000-0000-4000-8000-000000000000","timestamp":"t","source":"agent","system_prompt":{"type":"text","text":"s"},"tools":[],"kind":"SystemPromptEvent"}"#;
        assert_eq!(sniff(v1), Some(OpenHandsEvents));
        // Keys in another order (a re-serialised file) decide the same.
        assert_eq!(
            sniff(br#"{"kind":"main","projectHash":"h","sessionId":"s"}"#),
            Some(GeminiCli)
        );
        assert_eq!(
            sniff(br#"{"info":{"directory":"/w","id":"ses_1"},"messages":[]}"#),
            Some(OpenCode)
        );
        assert_eq!(
            sniff(b"{\n  \"id\": \"ses_1\",\n  \"slug\": \"x\",\n  \"version\": \"1\",\n  \"projectID\": \"p\""),
            Some(OpenCodeStorage)
        );
        let goose = br#"{"working_dir":"/w","description":"d","schedule_id":null,"message_count":2}
{"id":null,"role":"user","created":1,"content":[{"type":"text","text":"x"}],"metadata":{"userVisible":true,"agentVisible":true}}
"#;
        assert_eq!(sniff(goose), Some(Goose));
        // A Claude Code record names its session too, but no project hash.
        let claude = br#"{"sessionId":"s","type":"user","uuid":"a","parentUuid":null}"#;
        assert_eq!(sniff(claude), Some(ClaudeJsonl));
        // Roo Code's history stamps each message; Cline's plain one does not.
        let roo = br#"[{"role":"user","content":[{"type":"text","text":"t"}],"ts":1}]"#;
        assert_eq!(sniff(roo), Some(RooCode));
        let sorted = b"[\n  {\n    \"content\": \"t\",\n    \"role\": \"user\",\n    \"ts\": 1";
        assert_eq!(sniff(sorted), Some(RooCode));
        let cline = br#"[{"role":"user","content":[{"type":"text","text":"t"}]}]"#;
        assert_eq!(sniff(cline), Some(Anthropic));
    }

    #[test]
    fn pi_sessions_and_gemini_contents_are_told_apart() {
        let pi = b"{\"type\":\"session\",\"id\":\"s\",\"timestamp\":\"t\",\"cwd\":\"/w\"}\n{\"type\":\"message\"}\n";
        assert_eq!(sniff(pi), Some(Pi));
        // A Claude Code record with a `type` but no `cwd` header stays Claude's.
        let claude = b"{\"type\":\"session\",\"id\":\"s\"}\n{\"type\":\"user\"}\n";
        assert_eq!(sniff(claude), Some(ClaudeJsonl));
        let bare = b"[\n  {\n    \"role\": \"user\",\n    \"parts\": [{\"text\": \"hi\"}]\n  }\n]";
        assert_eq!(sniff(bare), Some(GeminiContents));
        let saved = b"{\n  \"history\": [\n    {\"role\": \"model\", \"parts\": []}\n  ],\n  \"authType\": \"x\"\n}";
        assert_eq!(sniff(saved), Some(GeminiContents));
        // SWE-agent's `history` of chat messages is still OpenAI's.
        assert_eq!(
            sniff(b"{\"history\": [{\"role\": \"user\", \"content\": \"x\"}]}"),
            Some(OpenAi)
        );
    }
}
