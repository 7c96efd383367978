//! Property tests: no cut of a valid file makes an importer panic or
//! silently lose its place, and pair repair always yields valid pairs.

use crate::common;
use common::{jsonl, LENIENT};

use std::path::Path;

use ctxlab::error::LabError;
use ctxlab::import::{import_str, unpaired_ids, DiagnosticKind, TranscriptFormat};
use proptest::prelude::*;
use serde_json::{json, Value};

/// A synthetic Claude Code log: `turns` tool rounds, some results missing or
/// answered out of place, with multi-byte text.
fn log(turns: &[(bool, bool)]) -> Vec<Value> {
    let mut recs = vec![json!({"type": "user", "uuid": "u0", "parentUuid": null,
        "message": {"role": "user", "content": "héllo — wörld ✓"}})];
    let mut parent = "u0".to_string();
    for (k, &(answered, extra_text)) in turns.iter().enumerate() {
        let a = format!("a{k}");
        recs.push(json!({"type": "assistant", "uuid": a, "parentUuid": parent,
            "message": {"role": "assistant", "id": format!("m{k}"),
                        "content": [{"type": "tool_use", "id": format!("t{k}"), "name": "Bash", "input": {}}]}}));
        parent = a;
        if extra_text {
            let u = format!("x{k}");
            recs.push(json!({"type": "user", "uuid": u, "parentUuid": parent,
                "message": {"role": "user", "content": "ünterbrochen"}}));
            parent = u;
        }
        if answered {
            let u = format!("r{k}");
            recs.push(json!({"type": "user", "uuid": u, "parentUuid": parent,
                "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("t{k}"), "content": "ørange"}]}}));
            parent = u;
        }
    }
    recs
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn repaired_pairs_are_always_valid(turns in proptest::collection::vec((any::<bool>(), any::<bool>()), 0..8)) {
        let text = jsonl(&log(&turns));
        let s = import_str(&text, Path::new("p.jsonl"), TranscriptFormat::ClaudeJsonl, &LENIENT).unwrap();
        prop_assert!(unpaired_ids(&s.main).is_empty(), "{:?}", unpaired_ids(&s.main));
        // Counted over every diagnostic, printed or not (at most a few per
        // kind are kept as samples).
        let counts = s.summary().diagnostics;
        let count = |k: DiagnosticKind| counts.get(k.name()).copied().unwrap_or(0);
        let dangling = count(DiagnosticKind::DanglingToolUse) + count(DiagnosticKind::OrphanToolResult);
        let damaged = turns.iter().filter(|(answered, extra)| !answered || *extra).count();
        prop_assert!(dangling >= damaged);
    }

    #[test]
    fn any_cut_of_a_jsonl_log_is_handled(turns in proptest::collection::vec((any::<bool>(), any::<bool>()), 1..5), frac in 0.0f64..1.0) {
        let text = jsonl(&log(&turns));
        // Cut at a byte, possibly inside a multi-byte char.
        let cut = ((text.len() as f64) * frac) as usize;
        let part = &text.as_bytes()[..cut];
        match ctxlab::import::import_reader(part, Path::new("p.jsonl"), TranscriptFormat::ClaudeJsonl, &LENIENT) {
            Ok(s) => {
                let complete = part.iter().filter(|&&b| b == b'\n').count();
                let truncated = s.diagnostics_of(DiagnosticKind::Truncated);
                let partial = &part[part.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1)..];
                if partial.is_empty() || serde_json::from_slice::<Value>(partial).is_ok() {
                    prop_assert!(truncated.is_empty());
                } else {
                    prop_assert_eq!(truncated.len(), 1);
                    prop_assert_eq!(truncated[0].line, complete + 1);
                }
                prop_assert!(unpaired_ids(&s.main).is_empty());
            }
            Err(e) => prop_assert!(false, "a cut line is a diagnostic, not {e}"),
        }
    }

    #[test]
    fn any_byte_cut_of_a_chat_json_is_handled(turns in proptest::collection::vec((any::<bool>(), any::<bool>()), 1..4), frac in 0.0f64..1.0) {
        let text = serde_json::to_string_pretty(&Value::Array(log(&turns))).unwrap();
        let cut = ((text.len() as f64) * frac) as usize;
        // Cut at a byte, possibly inside a multi-byte char.
        let bytes = &text.as_bytes()[..cut];
        let r = ctxlab::import::import_reader(bytes, Path::new("p.json"), TranscriptFormat::ChatJson, &LENIENT);
        match r {
            Ok(s) => {
                // Nothing but whitespace is an empty file, not a cut one.
                let empty = bytes.trim_ascii().is_empty();
                prop_assert!(cut == text.len() || empty || s.diagnostics_of(DiagnosticKind::Truncated).len() == 1);
                prop_assert!(unpaired_ids(&s.main).is_empty());
            }
            Err(LabError::Input { line, .. }) => prop_assert!(line >= 1),
            Err(e) => prop_assert!(false, "unexpected error {e}"),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn the_streamed_elements_are_what_serde_json_reads(
        texts in proptest::collection::vec("[a-z\\[\\]{}\"\\\\\n ✓é,:]{0,12}", 0..6),
        junk in "[a-z\\[\\]{}\"\\\\ ]{0,10}",
        pretty in any::<bool>(),
    ) {
        let messages: Vec<Value> = texts.iter().map(|t| json!({"role": "user", "content": t})).collect();
        let doc = json!({"junk": {"a": [junk.clone()], "b": junk}, "messages": messages, "tail": [junk]});
        let text = if pretty { serde_json::to_string_pretty(&doc).unwrap() } else { doc.to_string() };
        let s = import_str(&text, Path::new("p.json"), TranscriptFormat::Anthropic, &LENIENT).unwrap();
        let got: Vec<String> = s.main.iter().map(|m| m.text()).collect();
        prop_assert_eq!(got, texts);
        prop_assert!(s.diagnostics.is_empty());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any bytes, read as any format: sessions or an input error with a
    /// position (no panic), and every session's pairs valid.
    #[test]
    fn every_format_takes_any_bytes(
        bytes in proptest::collection::vec(
            prop_oneof![any::<u8>(), proptest::sample::select(b"{}[]\":,\n0123 abc".to_vec())],
            0..200,
        ),
    ) {
        // Every registered format, so a new importer is fed the same bytes
        // as the rest with no edit here.
        for &format in ctxlab::import::format_list::ALL {
            let name = format.name();
            let read = ctxlab::import::import_reader_sessions(bytes.as_slice(), Path::new("p"), format, &LENIENT);
            match read {
                Ok(sessions) => {
                    for s in sessions {
                        prop_assert!(unpaired_ids(&s.main).is_empty(), "{name}");
                    }
                }
                Err(e) => prop_assert_eq!(e.exit_code(), 3, "{} {}", name, e),
            }
        }
    }
}
