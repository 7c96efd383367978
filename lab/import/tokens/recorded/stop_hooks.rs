//! Prompts that follow a Stop hook, where the recorded cache breaks.
//!
//! In the shared sessions every new prompt that followed a turn ending with
//! a Stop hook read back only the system prompt and tools (or nothing after
//! a pause over the TTL): 9 of 9, in three Claude Code versions (1.0.57,
//! 1.0.70, 2.0.42), two of them within 84 and 259 s of the previous
//! request. Prompts after turns without one (no hooks configured, or an
//! interrupted turn, where the hook does not run) kept their cache, 6 of 6,
//! unless a cause already modelled broke it (a pause over the TTL, a switch
//! to Haiku).
//! The log does not show what changes early in the prompt (the hooks here
//! export the transcript; Claude Code's own code was not traced that far),
//! so the cache replay can key the conversation's first message by the number
//! of such prompts: the prefix after the system prompt changes once per
//! Stop-hook prompt, as recorded. The four sessions added later contradict
//! it (14 false alarms in one Claude Code 2.1.38 session), so the cache
//! model applies it only under `cache::recorded::RewriteRules`, off by
//! default.

use serde_json::Value;

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// Whether a record logs a Stop hook: Claude Code 2.x writes a
/// `stop_hook_summary` system record, 1.x a system record whose content
/// names the `Stop` event (with terminal styling around it).
pub fn is_stop_hook(r: &Value) -> bool {
    if str_of(r, "type") != Some("system") {
        return false;
    }
    if str_of(r, "subtype") == Some("stop_hook_summary") {
        return true;
    }
    let content: String = str_of(r, "content")
        .unwrap_or_default()
        .replace("\u{1b}[1m", "")
        .replace("\u{1b}[22m", "");
    let event = content.strip_prefix("Running ").unwrap_or(&content);
    event.starts_with("Stop ") || event.starts_with("Stop.")
}

/// Whether a record is a user prompt (not tool results, not a meta record).
fn is_prompt(r: &Value) -> bool {
    if str_of(r, "type") != Some("user") || r.get("isMeta").and_then(Value::as_bool) == Some(true) {
        return false;
    }
    match r.pointer("/message/content") {
        Some(Value::String(_)) => true,
        Some(Value::Array(a)) => a.iter().any(|b| str_of(b, "type") == Some("text")),
        _ => false,
    }
}

/// The prompts on a chain (root first) that came after a Stop hook with no
/// response between them.
pub fn prompts_after(chain: &[&Value]) -> u32 {
    let mut stopped = false;
    let mut count = 0;
    for r in chain {
        if is_stop_hook(r) {
            stopped = true;
        } else if is_prompt(r) {
            count += stopped as u32;
            stopped = false;
        } else if str_of(r, "type") == Some("assistant") {
            stopped = false;
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn system(content: &str) -> Value {
        json!({"type": "system", "content": content})
    }

    fn prompt(text: &str) -> Value {
        json!({"type": "user", "message": {"role": "user", "content": text}})
    }

    fn answer() -> Value {
        json!({"type": "assistant", "message": {"role": "assistant", "content": []}})
    }

    #[test]
    fn stop_hook_records_of_both_generations_are_recognised() {
        assert!(is_stop_hook(
            &json!({"type": "system", "subtype": "stop_hook_summary"})
        ));
        assert!(is_stop_hook(&system(
            "\u{1b}[1mStop\u{1b}[22m [uv run stop.py] completed successfully"
        )));
        assert!(is_stop_hook(&system("Running \u{1b}[1mStop\u{1b}[22m...")));
        assert!(!is_stop_hook(&system(
            "\u{1b}[1mSubagentStop\u{1b}[22m [x] completed"
        )));
        assert!(!is_stop_hook(&system(
            "\u{1b}[1mPostToolUse:Read\u{1b}[22m [x]"
        )));
        assert!(!is_stop_hook(
            &json!({"type": "user", "subtype": "stop_hook_summary"})
        ));
    }

    #[test]
    fn only_prompts_right_after_a_stop_hook_count() {
        let stop = json!({"type": "system", "subtype": "stop_hook_summary"});
        let meta = json!({"type": "user", "isMeta": true, "message": {"content": "caveat"}});
        let chain = [
            prompt("a"),
            answer(),
            stop.clone(),
            meta,
            prompt("b"),
            answer(),
            prompt("c"),
            answer(),
            stop.clone(),
            answer(),
            prompt("d"),
        ];
        let refs: Vec<&Value> = chain.iter().collect();
        assert_eq!(prompts_after(&refs[..5]), 1);
        assert_eq!(
            prompts_after(&refs),
            1,
            "c followed no hook; d followed a response"
        );
    }
}
