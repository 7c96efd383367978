//! What a Claude Code log records beside its requests, read from its
//! records alone (no token counter, no replay type): the release that
//! wrote it, where the session was resumed, the response id and model
//! each record carries, by the place the record starts, and how many
//! lines each file a Read showed has. The replay's
//! `RecordedLog` keeps these beside the requests it reads with the token
//! counter (`tokens::recorded`).

use std::collections::HashMap;

use serde_json::Value;

/// A record's 1-based (line, column): where it starts in its file.
pub type Place = (usize, usize);

/// What a log's records say beside their usage.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogFacts {
    /// The Claude Code release of the first main-agent record that names one.
    pub version: Option<String>,
    /// The places of the main-agent records that mark a resume of the
    /// session (the `SessionStart` hook with the `resume` matcher).
    pub resumes: Vec<Place>,
    /// The response id (`message.id`) of each record that carries one,
    /// sidechain records included.
    pub reply_ids: HashMap<Place, String>,
    /// The model each record names (`message.model`), `<synthetic>` for a
    /// reply the product made without a call.
    pub reply_models: HashMap<Place, String>,
    /// Lines in the file each Read showed (`toolUseResult.file.totalLines`),
    /// by the `tool_use_id` its result answers: a Read with an offset or a
    /// limit shows part of a file, and this says how much more there is.
    pub read_lines: HashMap<String, usize>,
    /// The working directory each main-agent record names (`cwd`), by
    /// place: where a shell command without a `cd` ran (Claude Code keeps
    /// the shell's directory from call to call), so which files it could
    /// rewrite.
    pub cwds: HashMap<Place, String>,
}

/// The facts of `records`, each at the place of the same index in `places`
/// (as `log_records::read_placed` gives them).
pub fn read(records: &[Value], places: &[Place]) -> LogFacts {
    let version = records
        .iter()
        .filter(|r| r.get("isSidechain").and_then(Value::as_bool) != Some(true))
        .find_map(|r| r.get("version").and_then(Value::as_str))
        .map(str::to_string);
    let cwds = records
        .iter()
        .zip(places)
        .filter(|(r, _)| r.get("isSidechain").and_then(Value::as_bool) != Some(true))
        .filter_map(|(r, &place)| Some((place, r.get("cwd")?.as_str()?.to_string())))
        .collect();
    let resumes = records
        .iter()
        .zip(places)
        .filter(|(r, _)| marks_resume(r))
        .map(|(_, &place)| place)
        .collect();
    let at = |pointer: &str| -> HashMap<Place, String> {
        records
            .iter()
            .zip(places)
            .filter_map(|(r, &place)| {
                let s = r.pointer(pointer).and_then(Value::as_str)?;
                Some((place, s.to_string()))
            })
            .collect()
    };
    LogFacts {
        version,
        resumes,
        reply_ids: at("/message/id"),
        reply_models: at("/message/model"),
        read_lines: records.iter().filter_map(read_lines).collect(),
        cwds,
    }
}

/// The file's line count a Read's result record gives, with the id of the
/// call it answers: Claude Code writes the tool's own result beside the
/// message (`toolUseResult`; for a text file `{file: {filePath, content,
/// numLines, startLine, totalLines}}`, 1.0.70 to 2.1.38 alike in the
/// shared logs).
fn read_lines(record: &Value) -> Option<(String, usize)> {
    let total = record.pointer("/toolUseResult/file/totalLines")?.as_u64()?;
    let content = record.pointer("/message/content")?.as_array()?;
    let id = content
        .iter()
        .find(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))?
        .get("tool_use_id")?
        .as_str()?;
    Some((id.to_string(), usize::try_from(total).ok()?))
}

/// Whether a record marks a resume of the main conversation: the
/// `SessionStart` hook with the `resume` matcher, which Claude Code runs as
/// a resumed process starts (2.1: a `progress` record, `hook_progress`
/// with `hookName` `SessionStart:resume`; 1.x: a `system` record naming
/// the hook). A resume with no hook record is not seen; a subagent's
/// record is never one.
pub fn marks_resume(record: &Value) -> bool {
    const HOOK: &str = "SessionStart:resume";
    let str_at = |p: &str| record.pointer(p).and_then(Value::as_str);
    if record.get("isSidechain").and_then(Value::as_bool) == Some(true) {
        return false;
    }
    match str_at("/type") {
        Some("progress") => str_at("/data/hookName").is_some_and(|h| h.starts_with(HOOK)),
        Some("system") => str_at("/content").is_some_and(|c| c.contains(HOOK)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_resume_is_read_from_the_session_start_hook_of_either_release() {
        let progress = json!({"type": "progress", "isSidechain": false,
            "data": {"type": "hook_progress", "hookName": "SessionStart:resume"}});
        let system = json!({"type": "system", "isSidechain": false,
            "content": "\u{1b}[1mSessionStart:resume\u{1b}[22m [sh hook.sh] completed successfully"});
        assert!(marks_resume(&progress) && marks_resume(&system));
        // A fresh start, another hook, a subagent's record: no resume.
        let startup = json!({"type": "progress",
            "data": {"type": "hook_progress", "hookName": "SessionStart:startup"}});
        let edit = json!({"type": "system", "content": "PostToolUse:Edit [fmt] completed"});
        let mut sidechain = progress.clone();
        sidechain["isSidechain"] = true.into();
        assert!(![startup, edit, sidechain].iter().any(marks_resume));
    }

    #[test]
    fn facts_are_keyed_by_place_and_the_version_is_the_main_agents() {
        let records = [
            json!({"isSidechain": true, "version": "9.9.9", "message": {"id": "a", "model": "haiku"}}),
            json!({"type": "user", "version": "2.0.22", "cwd": "/home/u/p"}),
            json!({"type": "system", "content": "SessionStart:resume [x] completed"}),
            json!({"message": {"id": "b", "model": "<synthetic>"}}),
            json!({"type": "user", "message": {"content": [
                {"type": "tool_result", "tool_use_id": "t", "content": "     9→x"}]},
                "toolUseResult": {"file": {"startLine": 9, "numLines": 1, "totalLines": 40}}}),
        ];
        let places = [(1, 1), (2, 1), (3, 1), (3, 40), (4, 1)];
        let f = read(&records, &places);
        assert_eq!(f.version.as_deref(), Some("2.0.22"));
        assert_eq!(f.cwds.get(&(2, 1)).map(String::as_str), Some("/home/u/p"));
        assert_eq!(f.cwds.len(), 1);
        assert_eq!(f.resumes, [(3, 1)]);
        assert_eq!(f.reply_ids.len(), 2);
        assert_eq!(f.reply_ids[&(1, 1)], "a");
        assert_eq!(f.reply_models[&(3, 40)], "<synthetic>");
        assert!(!f.reply_ids.contains_key(&(2, 1)));
        assert_eq!(f.read_lines.get("t"), Some(&40));
        assert_eq!(f.read_lines.len(), 1);
    }
}
