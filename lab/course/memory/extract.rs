//! Extraction: the only way a memory is written during normal operation.
//!
//! Runs at the end of a turn in which the model made no tool call. The
//! scripted extractor model sees recent text blocks (capped) and returns
//! candidates; each passes a validity gate (complete fields, one of the four
//! types, a declared scope) and a should-store gate (declared persistent, no
//! temporary marker word, not a duplicate by slug/description/body of an
//! existing record or an earlier candidate of the same batch). Only then is
//! it written and the index rebuilt.

use serde::{Deserialize, Serialize};

use super::recall::extract_json_array;
use super::store::{collapse, slug, Memory, Store};
use super::switches::{MemoryConstants, MEMORY_TYPES, TEMPORARY_MARKERS};
use super::transcript::{dialogue_text, Message};
use crate::error::{LabError, LabResult};

/// What the scripted extractor model does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ExtractorScript {
    /// The call succeeds with this text (normally a JSON array of candidates).
    Reply(String),
    /// The call raises; extraction is skipped with one log line.
    Fail(String),
}

impl Default for ExtractorScript {
    /// A model that finds nothing worth keeping: `Reply("[]")`.
    fn default() -> Self {
        ExtractorScript::Reply("[]".into())
    }
}

/// Why a candidate was not stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Rejection {
    /// Failed the validity gate (missing field, unknown type, no scope).
    Invalid(String),
    /// Scope was `current_task`, not `persistent`.
    NotPersistent,
    /// Contains this temporary marker word.
    Temporary(String),
    /// Duplicates an existing or earlier record: (file of the original, which field matched).
    Duplicate(String, String),
    /// The store's path guard refused the name.
    Refused(String),
    /// The write failed underneath the store (full disk, I/O error); the
    /// batch stops here, and the candidates stored before it stay
    /// acknowledged, as the course keeps files written before its exception.
    WriteFailed(String),
}

/// The fate of one candidate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Outcome {
    /// Candidate name as given (empty if missing).
    pub name: String,
    /// `Ok(file)` when stored, else why not.
    pub result: Result<String, Rejection>,
}

/// What one extraction did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ExtractReport {
    /// Characters of dialogue the extractor was given.
    pub input_chars: usize,
    /// Per-candidate outcomes, in model order.
    pub outcomes: Vec<Outcome>,
    /// Files written (acknowledged to the user as stored).
    pub stored: Vec<String>,
    /// The log line the harness prints, if any.
    pub log: Option<String>,
    /// Why the batch stopped early: a write failed underneath the store
    /// (the candidates after it were not tried).
    pub stopped: Option<String>,
    /// The prompt a real extractor model would have been sent (empty if none was).
    pub prompt: String,
}

/// The declared scope of a candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Applies in future sessions.
    Persistent,
    /// One-off: the current task only.
    CurrentTask,
}

/// The validity gate: complete string fields, a known type, and (when
/// `require_scope`) a declared scope. Values are trimmed.
pub fn validate(
    item: &serde_json::Value,
    require_scope: bool,
) -> Result<(Memory, Option<Scope>), String> {
    let obj = item.as_object().ok_or("candidate is not a JSON object")?;
    let field = |k: &str| -> Result<String, String> {
        match obj.get(k) {
            Some(serde_json::Value::String(s)) if !s.trim().is_empty() => Ok(s.trim().to_string()),
            Some(serde_json::Value::String(_)) | None => {
                Err(format!("field `{k}` is missing or empty"))
            }
            Some(_) => Err(format!("field `{k}` is not a string")),
        }
    };
    let name = field("name")?;
    let mem_type = field("type")?;
    if !MEMORY_TYPES.contains(&mem_type.as_str()) {
        return Err(format!("type {mem_type:?} is not one of {MEMORY_TYPES:?}"));
    }
    let description = field("description")?;
    let body = field("body")?;
    let scope = match obj.get("scope").and_then(|v| v.as_str()).map(str::trim) {
        Some("persistent") => Some(Scope::Persistent),
        Some("current_task") => Some(Scope::CurrentTask),
        _ if require_scope => {
            return Err("field `scope` must be \"persistent\" or \"current_task\"".into())
        }
        _ => None,
    };
    Ok((
        Memory {
            name,
            mem_type,
            description,
            body,
        },
        scope,
    ))
}

/// Lower-case, whitespace-collapsed text for marker and duplicate checks.
pub fn normalized(s: &str) -> String {
    collapse(&s.to_lowercase())
}

/// The first temporary marker found in name, description or body.
pub fn temporary_marker(m: &Memory) -> Option<&'static str> {
    let text = normalized(&format!("{}\n{}\n{}", m.name, m.description, m.body));
    TEMPORARY_MARKERS
        .iter()
        .copied()
        .find(|mk| text.contains(mk))
}

/// The first earlier memory `m` duplicates, and by which field.
pub fn duplicate_of<'a>(
    m: &Memory,
    earlier: &'a [(String, Memory)],
) -> Option<(&'a str, &'static str)> {
    let (s, d, b) = (
        slug(&m.name),
        normalized(&m.description),
        normalized(&m.body),
    );
    earlier.iter().find_map(|(file, e)| {
        let by = if slug(&e.name) == s {
            "slug"
        } else if normalized(&e.description) == d {
            "description"
        } else if normalized(&e.body) == b {
            "body"
        } else {
            return None;
        };
        Some((file.as_str(), by))
    })
}

/// Run one extraction over `messages` with the scripted model output.
pub fn extract(
    store: &Store,
    messages: &[Message],
    script: &ExtractorScript,
    constants: &MemoryConstants,
) -> LabResult<ExtractReport> {
    let dialogue = dialogue_text(
        messages,
        constants.extract_max_messages,
        constants.extract_char_limit,
    );
    let mut report = ExtractReport {
        input_chars: dialogue.chars().count(),
        ..ExtractReport::default()
    };
    if dialogue.is_empty() {
        return Ok(report);
    }
    let records = store.records()?;
    let existing = records
        .iter()
        .map(|r| {
            format!(
                "- {}: {}",
                collapse(&r.memory.name),
                collapse(&r.memory.description)
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    report.prompt = super::prompts::extractor_prompt(
        &existing,
        constants.existing_catalog_char_limit,
        &dialogue,
    );
    let reply = match script {
        ExtractorScript::Fail(e) => {
            report.log = Some(format!("[Memory extraction skipped: {e}]"));
            return Ok(report);
        }
        ExtractorScript::Reply(t) => t,
    };
    let switches = *store.switches();
    // Earlier records, growing as candidates are stored: later candidates of
    // the same batch are deduplicated against earlier ones.
    let mut earlier: Vec<(String, Memory)> =
        records.into_iter().map(|r| (r.file, r.memory)).collect();
    for item in extract_json_array(reply).unwrap_or_default() {
        let name = item
            .get("name")
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_string();
        let result = match validate(&item, true) {
            Err(why) => Err(Rejection::Invalid(why)),
            Ok((_, Some(Scope::CurrentTask))) | Ok((_, None)) => Err(Rejection::NotPersistent),
            Ok((m, Some(Scope::Persistent))) => {
                gate_and_write(store, &switches, m, &mut earlier, &mut report.stopped)?
            }
        };
        if let Ok(file) = &result {
            report.stored.push(file.clone());
        }
        report.outcomes.push(Outcome { name, result });
        if report.stopped.is_some() {
            break;
        }
    }
    report.log = log_line(&report);
    Ok(report)
}

/// The should-store gate's last two checks, then the write. A write that
/// fails underneath the store sets `stopped`; when the file itself was
/// written (only the index rewrite after it failed) the memory is stored.
fn gate_and_write(
    store: &Store,
    switches: &super::switches::MemorySwitches,
    m: Memory,
    earlier: &mut Vec<(String, Memory)>,
    stopped: &mut Option<String>,
) -> LabResult<Result<String, Rejection>> {
    if switches.temp_word_filter {
        if let Some(mk) = temporary_marker(&m) {
            return Ok(Err(Rejection::Temporary(mk.to_string())));
        }
    }
    if switches.dedup {
        if let Some((file, by)) = duplicate_of(&m, earlier) {
            return Ok(Err(Rejection::Duplicate(file.to_string(), by.to_string())));
        }
    }
    let saved = match store.save(&m) {
        Ok(file) => Ok(file),
        Err(LabError::Refused { message, .. }) => return Ok(Err(Rejection::Refused(message))),
        Err(e @ (LabError::Io { .. } | LabError::Kept { .. })) => {
            let why = e.to_string().trim_start_matches("error: ").to_string();
            *stopped = Some(why.clone());
            match store.written(&m)? {
                Some(file) => Ok(file),
                None => return Ok(Err(Rejection::WriteFailed(why))),
            }
        }
        Err(e) => return Err(e),
    };
    if let Ok(file) = &saved {
        earlier.push((file.clone(), m));
    }
    Ok(saved)
}

/// The line the harness prints after a batch: what was stored, and a write
/// that stopped it with what it kept.
fn log_line(report: &ExtractReport) -> Option<String> {
    let n = report.stored.len();
    match &report.stopped {
        Some(e) => Some(format!(
            "[Memory extraction stopped: {e}; kept the {n} record(s) stored]"
        )),
        None if n > 0 => Some(format!("[Memory: stored {n} records]")),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::switches::MemorySwitches;
    use crate::memory::transcript::Role;

    fn cand(name: &str, desc: &str, body: &str, scope: &str) -> serde_json::Value {
        serde_json::json!({"name": name, "type": "user", "description": desc, "body": body, "scope": scope})
    }

    fn run(sw: MemorySwitches, items: Vec<serde_json::Value>) -> (ExtractReport, Vec<String>) {
        let (fs, dir) = crate::memory::session::sandbox();
        let store = Store::open(fs, &dir.join("m"), sw).unwrap();
        store
            .save(&Memory {
                name: "tabs".into(),
                mem_type: "user".into(),
                description: "prefers tabs".into(),
                body: "Use tabs.".into(),
            })
            .unwrap();
        let msgs = vec![
            crate::memory::transcript::text_message(Role::User, "remember this"),
            crate::memory::transcript::text_message(Role::Assistant, "ok"),
        ];
        let script = ExtractorScript::Reply(serde_json::Value::Array(items).to_string());
        let r = extract(&store, &msgs, &script, &MemoryConstants::default()).unwrap();
        (r, store.memory_files().unwrap())
    }

    #[test]
    fn gates_reject_invalid_temporary_and_duplicates() {
        let items = vec![
            cand(
                "quotes",
                "single quotes",
                "Use single quotes.",
                "persistent",
            ),
            cand("port", "port 8080 for now", "dev server", "persistent"),
            cand("会话", "本次会话 使用 vim", "x", "persistent"),
            cand("jp", "今回だけ", "y", "persistent"),
            cand("one-off", "rm build dir", "z", "current_task"),
            serde_json::json!({"name": "bad", "type": "opinion", "description": "d", "body": "b", "scope": "persistent"}),
            cand("TABS", "other", "other", "persistent"),
            cand("tabs2", "Prefers  TABS", "other2", "persistent"),
            cand("quotes2", "q2", "use single   quotes.", "persistent"),
            cand("../x", "escape", "e", "persistent"),
        ];
        let (r, files) = run(MemorySwitches::default(), items);
        assert_eq!(r.stored, vec!["quotes.md"]);
        assert_eq!(files, vec!["quotes.md", "tabs.md"]);
        let reasons: Vec<String> = r
            .outcomes
            .iter()
            .map(|o| format!("{:?}", o.result))
            .collect();
        assert!(reasons[1].contains("for now"));
        assert!(reasons[2].contains("本次会话"));
        assert!(reasons[3].contains("今回だけ"));
        assert!(reasons[4].contains("NotPersistent"));
        assert!(reasons[5].contains("Invalid"));
        assert!(reasons[6].contains("slug"));
        assert!(reasons[7].contains("description"));
        assert!(
            reasons[8].contains("\"quotes.md\", \"body\""),
            "{}",
            reasons[8]
        );
        assert!(reasons[9].contains("Refused"));
    }

    #[test]
    fn switches_open_the_gates() {
        let sw = MemorySwitches {
            temp_word_filter: false,
            dedup: false,
            ..MemorySwitches::default()
        };
        let items = vec![
            cand("port", "port 8080 for now", "dev", "persistent"),
            cand("tabs2", "prefers tabs", "b", "persistent"),
        ];
        let (r, _) = run(sw, items);
        assert_eq!(r.stored, vec!["port.md", "tabs2.md"]);
    }
}
