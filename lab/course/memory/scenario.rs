//! Scenario files: scripted memory sessions with expected counters, as JSON.
//!
//! ```json
//! {
//!   "schema": "ctxlab.memory-scenario/1",
//!   "description": "what this shows",
//!   "switches": { "dedup": false },
//!   "constants": { "consolidate_threshold": 3 },
//!   "seed_store": "path/to/.memory",
//!   "seed_memories": [ {"name": "tabs", "type": "user", "description": "...", "body": "..."} ],
//!   "sessions": [ { "turns": [ {
//!       "user": "text", "assistant": "text",
//!       "tool_calls": [ {"name": "bash", "input": {}, "result": "out"} ],
//!       "selector": {"reply": "[0]"} | {"fail": "timeout"},
//!       "extractor": {"reply": "[...candidates...]"} | {"fail": "..."},
//!       "consolidator": "merge_pairs" | "keep_all" | {"reply": "[...]"} | {"fail": "..."},
//!       "faults": {"after_snapshot": false, "mid_delete_after": 2, "mid_rewrite_after": null, "during_rebuild": false},
//!       "interrupted": false
//!   } ] } ],
//!   "expect": { "duplicates_stored": 0, "index_drift": 0 }
//! }
//! ```
//!
//! Every object rejects unknown fields, so a typo is an error with its line
//! and column rather than a silently ignored setting.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::checker::check;
use super::session::{Harness, Session};
use super::store::Memory;
use super::switches::{MemoryConstants, MemorySwitches};
use crate::counters::{Counters, Value};
use crate::error::{LabError, LabResult};
use crate::storage::{Backend, Shared, Storage};

/// An expected counter value: a count or a flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ExpectValue {
    /// A count.
    Count(u64),
    /// A flag.
    Bool(bool),
}

/// The schema tag every memory scenario file carries (distinct from the
/// compaction scenarios' `ctxlab.scenario/1`, so a CLI can dispatch on it).
pub const SCHEMA: &str = "ctxlab.memory-scenario/1";

/// Does this text declare a memory scenario schema (any version)? Read
/// leniently, without parsing the whole file, so a file with a syntax error
/// elsewhere is still reported against the schema it names.
pub fn is_memory_scenario(text: &str) -> bool {
    schema_of(text).is_some_and(|s| s.starts_with("ctxlab.memory-scenario/"))
}

/// The string value of the first `"schema"` key, found by scanning the
/// text rather than parsing it.
pub fn schema_of(text: &str) -> Option<&str> {
    let after = &text[text.find("\"schema\"")? + "\"schema\"".len()..];
    let after = after
        .trim_start()
        .strip_prefix(':')?
        .trim_start()
        .strip_prefix('"')?;
    after.find('"').map(|end| &after[..end])
}

/// One scenario file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Must be [`SCHEMA`].
    pub schema: String,
    /// What the scenario demonstrates.
    #[serde(default)]
    pub description: String,
    /// Switches (defaults: the course's intact behaviour).
    #[serde(default)]
    pub switches: MemorySwitches,
    /// Limits (defaults: the course's constants).
    #[serde(default)]
    pub constants: MemoryConstants,
    /// A memory directory on disk (relative to the scenario file) whose
    /// memory files are copied into the sandbox's store before the first
    /// session: a real store under test, never written to itself.
    #[serde(default)]
    pub seed_store: Option<std::path::PathBuf>,
    /// Memories present before the first session.
    #[serde(default)]
    pub seed_memories: Vec<Memory>,
    /// Sessions in order.
    pub sessions: Vec<Session>,
    /// Counter name -> expected value.
    #[serde(default)]
    pub expect: BTreeMap<String, ExpectValue>,
}

const FORMAT_FIX: &str =
    "scenario files are JSON objects with `sessions` (a list of {\"turns\": [...]}) and optional \
`description`, `switches`, `constants`, `seed_store`, `seed_memories`, `expect`; see scenarios/memory/*.json";

/// The JSON key nearest before (line, column): names the field an error is in.
fn field_near(text: &str, line: usize, column: usize) -> Option<String> {
    let offset: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum::<usize>()
        + column;
    // serde's column counts bytes and can point inside a character.
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let head = &text[..end];
    let bytes = head.as_bytes();
    let mut i = bytes.len();
    // Walk back to a `"key"` followed (after spaces) by `:`.
    while i > 0 {
        i -= 1;
        if bytes[i] != b':' {
            continue;
        }
        let before = head[..i].trim_end();
        if let Some(stripped) = before.strip_suffix('"') {
            if let Some(start) = stripped.rfind('"') {
                let key = &stripped[start + 1..];
                if !key.is_empty() && key.chars().all(|c| c.is_alphanumeric() || c == '_') {
                    return Some(key.to_string());
                }
            }
        }
    }
    None
}

/// Line and column (1-based) of the first occurrence of `needle` in `text`.
fn position_of(text: &str, needle: &str) -> (usize, usize) {
    match text.find(needle) {
        Some(off) => {
            let before = &text[..off];
            let line = before.matches('\n').count() + 1;
            let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            (line, col)
        }
        None => (0, 0),
    }
}

/// Parse scenario text; errors name the file, line:column, field and expectation.
pub fn parse_scenario(file: &Path, text: &str) -> LabResult<Scenario> {
    let scenario: Scenario = serde_json::from_str(text).map_err(|e| {
        let (line, column) = (e.line(), e.column());
        // serde's unknown/missing-field messages already name the field, and
        // sit before the key's `:`, where the nearest key is the previous one.
        let msg = e.to_string();
        let msg = msg
            .split(" at line ")
            .next()
            .unwrap_or_default()
            .to_string();
        let field = match msg.contains("field `") {
            true => String::new(),
            false => field_near(text, line, column)
                .map(|f| format!(" (in field `{f}`)"))
                .unwrap_or_default(),
        };
        LabError::Input {
            file: file.to_path_buf(),
            line,
            column: crate::input::char_column(text, line, column),
            message: format!("{msg}{field}"),
            fix: FORMAT_FIX.into(),
        }
    })?;
    if scenario.schema != SCHEMA {
        let (line, column) = position_of(text, "\"schema\"");
        return Err(LabError::Input {
            file: file.to_path_buf(),
            line,
            column,
            message: format!(
                "field `schema`: found {:?}, expected {SCHEMA:?}",
                scenario.schema
            ),
            fix: format!("set \"schema\": \"{SCHEMA}\""),
        });
    }
    let known = known_counters();
    for name in scenario.expect.keys() {
        if !known.contains(&name.as_str()) {
            let (line, column) = position_of(text, &format!("\"{name}\""));
            return Err(LabError::Input {
                file: file.to_path_buf(),
                line,
                column,
                message: format!(
                    "unknown counter {name:?} in `expect`, expected one of: {}",
                    known.join(", ")
                ),
                fix: "use a counter name the memory checker reports".into(),
            });
        }
    }
    Ok(scenario)
}

/// Counter names the memory checker reports (in its order).
pub fn known_counters() -> Vec<&'static str> {
    vec![
        "written_outside_store",
        "index_drift",
        "temporary_stored",
        "duplicates_stored",
        "acknowledged_lost",
        "garbage_fallbacks",
        "garbage_empty_selections",
        "keyword_fallbacks",
        "records_cut_midway",
        "model_writes",
        "model_write_attempts_refused",
        "consolidations_done",
        "consolidations_failed",
        "rollbacks",
        "consolidation_skipped_silently",
        "consolidation_skipped_warned",
        "refused_writes",
        "system_prompts",
        "overwritten_by_other_memory",
        "quarantined",
        "store_size",
        "store_chars",
    ]
}

/// Compare counters with expectations; one line per mismatch.
pub fn failed_expectations(c: &Counters, expect: &BTreeMap<String, ExpectValue>) -> Vec<String> {
    expect
        .iter()
        .filter_map(|(name, want)| {
            let got = c.get(name).map(|k| &k.value);
            let ok = matches!(
                (want, got),
                (ExpectValue::Count(a), Some(Value::Count(b))) if a == b
            ) || matches!((want, got), (ExpectValue::Bool(a), Some(Value::Bool(b))) if a == b);
            if ok {
                return None;
            }
            let want = match want {
                ExpectValue::Count(n) => n.to_string(),
                ExpectValue::Bool(b) => b.to_string(),
            };
            let got = got.map_or("missing".to_string(), |v| v.to_string());
            Some(format!("{name}: expected {want}, got {got}"))
        })
        .collect()
}

/// Run a parsed scenario in a fresh in-memory sandbox.
pub fn run_scenario(s: &Scenario) -> LabResult<(Counters, Vec<String>)> {
    run_scenario_from(s, None, Backend::Mem)
}

/// Seed one memory at a time so a refused seed can be located in its file.
fn seed_located(h: &mut Harness, s: &Scenario, src: Option<(&Path, &str)>) -> LabResult<()> {
    for m in &s.seed_memories {
        match (h.seed(std::slice::from_ref(m)), src) {
            (Err(LabError::Refused { message, fix }), Some((file, text))) => {
                let needle = serde_json::to_string(&m.name).unwrap_or_default();
                let (line, column) = position_of(text, &needle);
                return Err(LabError::Input {
                    file: file.to_path_buf(),
                    line,
                    column,
                    message: format!("seed memory {:?} refused: {message}", m.name),
                    fix,
                });
            }
            (r, _) => r?,
        }
    }
    Ok(())
}

fn run_scenario_from(
    s: &Scenario,
    src: Option<(&Path, &str)>,
    backend: Backend,
) -> LabResult<(Counters, Vec<String>)> {
    match backend {
        Backend::Mem => {
            let (fs, dir) = super::session::sandbox();
            run_in(fs, &dir, s, src)
        }
        // A fresh directory, removed when the run ends (also on error).
        Backend::Disk => {
            let tmp = tempfile::Builder::new()
                .prefix("ctxlab-memory-")
                .tempdir()
                .map_err(|e| LabError::io("creating a sandbox", std::env::temp_dir(), e))?;
            let fs: Shared = std::sync::Arc::new(crate::storage::DiskFs);
            run_in(fs, tmp.path(), s, src)
        }
    }
}

fn run_in(
    fs: Shared,
    dir: &Path,
    s: &Scenario,
    src: Option<(&Path, &str)>,
) -> LabResult<(Counters, Vec<String>)> {
    if let Some(store) = &s.seed_store {
        copy_seed_store(fs.as_ref(), &dir.join(".memory"), store, src)?;
    }
    let mut h = Harness::new(fs, dir, s.switches, s.constants)?;
    seed_located(&mut h, s, src)?;
    h.run_sessions(&s.sessions)?;
    let c = check(&h)?;
    let failures = failed_expectations(&c, &s.expect);
    Ok((c, failures))
}

/// Largest memory file copied from a seed store (a memory is a paragraph;
/// this only stops a device or a stray dump from being read).
const MAX_SEED_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// Copy the memory files (`*.md`, not hidden, not the index; regular files
/// only, symlinks skipped) and the consolidation journal of `store` into `into`, before the store opens,
/// so opening it quarantines, recovers and indexes them as it would the
/// real one. Reads only: the store on disk is never written.
fn copy_seed_store(
    fs: &dyn Storage,
    into: &Path,
    store: &Path,
    src: Option<(&Path, &str)>,
) -> LabResult<()> {
    let base = src.and_then(|(f, _)| f.parent()).unwrap_or(Path::new(""));
    let dir = base.join(store);
    let bad = |message: String| match src {
        Some((file, text)) => {
            let (line, column) = position_of(text, "\"seed_store\"");
            LabError::Input {
                file: file.to_path_buf(),
                line,
                column,
                message,
                fix: "point seed_store at a memory directory (relative to the scenario file)"
                    .into(),
            }
        }
        None => LabError::usage(message, "point seed_store at a memory directory"),
    };
    let entries =
        std::fs::read_dir(&dir).map_err(|e| bad(format!("seed_store {}: {e}", dir.display())))?;
    fs.create_dir_all(into)
        .map_err(|e| LabError::io("creating the sandbox store", into, e))?;
    let mut names: Vec<std::ffi::OsString> = entries.flatten().map(|e| e.file_name()).collect();
    names.sort();
    for name in names {
        // The journal too: a pass that died in the real store is recovered
        // when the sandbox's store opens, as it would be there.
        let Some(n) = name
            .to_str()
            .filter(|n| super::store::is_memory_file_name(n) || *n == super::journal::JOURNAL_FILE)
        else {
            continue;
        };
        let path = dir.join(n);
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_file() && m.len() <= MAX_SEED_FILE_BYTES => {}
            Ok(m) if m.is_file() => {
                return Err(bad(format!(
                    "{} is over {MAX_SEED_FILE_BYTES} bytes",
                    path.display()
                )))
            }
            _ => continue,
        }
        let bytes =
            std::fs::read(&path).map_err(|e| LabError::io("reading seed store", &path, e))?;
        fs.write(&into.join(n), &bytes)
            .map_err(|e| LabError::io("copying into the sandbox store", into.join(n), e))?;
    }
    Ok(())
}

/// Read, parse and run a scenario file. Returns the counters and the failed
/// expectations (empty when all hold); malformed files are `LabError::Input`.
pub fn run_scenario_file(path: &Path) -> LabResult<(Counters, Vec<String>)> {
    let text = crate::input::read_text(path, "a scenario")?;
    run_scenario_text(path, &text, Backend::Mem)
}

/// Parse and run scenario text read from `path` (refused seeds keep their
/// positions) with its sandbox on `backend`: in memory, or in a temporary
/// directory on disk (`--fs disk`) removed when the run ends.
pub fn run_scenario_text(
    path: &Path,
    text: &str,
    backend: Backend,
) -> LabResult<(Counters, Vec<String>)> {
    run_scenario_from(&parse_scenario(path, text)?, Some((path, text)), backend)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> (usize, usize, String) {
        match parse_scenario(Path::new("s.json"), text) {
            Err(LabError::Input {
                line,
                column,
                message,
                ..
            }) => (line, column, message),
            other => panic!("expected Input error, got {other:?}"),
        }
    }

    #[test]
    fn a_refused_seed_names_file_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        let text = "{\"schema\": \"ctxlab.memory-scenario/1\", \"sessions\": [],\n \"seed_memories\": [\n  {\"name\": \"ok\", \"type\": \"user\", \"description\": \"d\", \"body\": \"b\"},\n  {\"name\": \"blank\", \"type\": \"user\", \"description\": \" \", \"body\": \"b\"}]}";
        std::fs::write(&path, text).unwrap();
        match run_scenario_file(&path) {
            Err(LabError::Input {
                file,
                line,
                column,
                message,
                ..
            }) => {
                assert_eq!(file, path);
                assert_eq!((line, column), (4, 12), "{message}");
                assert!(message.contains("blank description"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_error_inside_a_character_does_not_panic() {
        // U+0080 is two bytes; serde puts the error on its first.
        let e = parse_scenario(Path::new("s.json"), "\u{80}").unwrap_err();
        assert_eq!(e.exit_code(), 3);
        assert!(e.to_string().contains("s.json:1:1:"), "{e}");
    }

    #[test]
    fn unknown_field_is_located() {
        let (line, _, msg) = err("{\n  \"schema\": \"ctxlab.memory-scenario/1\", \"sessions\": [],\n  \"switches\": {\"dedupe\": false}\n}");
        assert_eq!(line, 3);
        assert!(msg.contains("unknown field `dedupe`"), "{msg}");
        assert!(msg.contains("expected one of"), "{msg}");
    }

    #[test]
    fn wrong_type_names_the_field() {
        let (line, col, msg) = err("{\"sessions\": [{\"turns\": [{\"user\": 5}]}]}");
        assert_eq!(line, 1);
        assert!(col > 0);
        assert!(
            msg.contains("expected a string") && msg.contains("field `user`"),
            "{msg}"
        );
    }

    #[test]
    fn missing_sessions_and_unknown_counter() {
        let (_, _, msg) = err("{}");
        assert!(msg.contains("missing field `schema`"), "{msg}");
        let (line, _, msg) = err("{\"schema\": \"ctxlab.scenario/1\",\n \"sessions\": []}");
        assert_eq!(line, 1);
        assert!(
            msg.contains("expected \"ctxlab.memory-scenario/1\""),
            "{msg}"
        );
        let (_, _, msg) = err("{\"schema\": \"ctxlab.memory-scenario/1\"}");
        assert!(msg.contains("missing field `sessions`"), "{msg}");
        let (line, col, msg) = err("{\"schema\": \"ctxlab.memory-scenario/1\", \"sessions\": [],\n \"expect\": {\"lost\": 0}}");
        assert_eq!((line, col), (2, 13));
        assert!(msg.contains("unknown counter"), "{msg}");
    }

    #[test]
    fn empty_scenario_runs_clean() {
        let s = parse_scenario(
            Path::new("s.json"),
            "{\"schema\": \"ctxlab.memory-scenario/1\", \"sessions\": [], \"expect\": {\"store_size\": 0}}",
        )
        .unwrap();
        let (_, failures) = run_scenario(&s).unwrap();
        assert!(failures.is_empty(), "{failures:?}");
    }
}
