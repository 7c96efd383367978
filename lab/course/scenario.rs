//! Declarative scenario files: a scripted conversation, a configuration and
//! the outcomes it must produce, so that a scenario file is also a regression test.
//!
//! Schema `ctxlab.scenario/1` (documented in `scenarios/README.md`). Errors
//! name the file, the line and column, the field and what was expected.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::compact::config::{profile, Config};
use crate::compact::probe::{self, Outcome};
use crate::compact::session::Script;
use crate::compact::Summarizer;
use crate::counters::{Counters, Value};
use crate::error::{LabError, LabResult};
use crate::message::Block;

/// The schema tag every compaction scenario file carries.
pub const SCHEMA: &str = "ctxlab.scenario/1";

/// An expected value: a flag, a count, or a list of names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Want {
    /// A flag.
    Bool(bool),
    /// A count.
    Count(u64),
    /// A list (e.g. `persisted_files`).
    List(Vec<String>),
}

impl Want {
    fn matches(&self, v: &Value) -> bool {
        match (self, v) {
            (Want::Bool(a), Value::Bool(b)) => a == b,
            (Want::Count(a), Value::Count(b)) => a == b,
            (Want::List(a), Value::List(b)) => a == b,
            _ => false,
        }
    }

    fn from_value(v: &Value) -> Want {
        match v {
            Value::Bool(b) => Want::Bool(*b),
            Value::Count(n) => Want::Count(*n),
            Value::List(l) => Want::List(l.clone()),
        }
    }
}

impl std::fmt::Display for Want {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Want::Bool(b) => write!(f, "{b}"),
            Want::Count(n) => write!(f, "{n}"),
            Want::List(l) => write!(f, "[{}]", l.join(", ")),
        }
    }
}

/// What a tool result must look like in the final context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub enum Shape {
    /// Exactly this text (paths shown as `$RESULTS/...`).
    Equals(String),
    /// Starts with this text.
    Prefix(String),
    /// Has this many chars.
    Chars(usize),
    /// Is no longer in the context at all.
    Absent,
}

/// Expected outcomes: counters for every cell, per-cell overrides, final shapes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// Counters that must hold at every path length.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub all: BTreeMap<String, Want>,
    /// Counters per cell, keyed `path_len=L`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cells: BTreeMap<String, BTreeMap<String, Want>>,
    /// Number of messages in the final context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_messages: Option<usize>,
    /// Final shape of tool results by id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub results: BTreeMap<String, Shape>,
}

/// A scenario file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Must be [`SCHEMA`].
    pub schema: String,
    /// Short name.
    pub name: String,
    /// What it shows and where the seed states it.
    #[serde(default)]
    pub description: String,
    /// Base profile (see `lab profiles`).
    pub profile: String,
    /// Switch and constant overrides by field name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub set: BTreeMap<String, serde_json::Value>,
    /// Path lengths to run at (one cell each).
    pub path_len: Vec<usize>,
    /// The summary model.
    #[serde(default)]
    pub summarizer: Summarizer,
    /// The conversation.
    pub script: Script,
    /// What must come out.
    #[serde(default)]
    pub expect: Expect,
}

/// The result of running one scenario file.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// The file.
    pub file: PathBuf,
    /// Scenario name.
    pub name: String,
    /// Counters per cell label.
    pub cells: Vec<(String, Counters)>,
    /// Broken expectations (empty = pass).
    pub failures: Vec<String>,
}

/// Position of the first `"needle"` in the file (for semantic errors serde cannot place).
fn locate(text: &str, needle: &str) -> (usize, usize) {
    text.find(&format!("\"{needle}\""))
        .map(|at| crate::input::line_col(text, at))
        .unwrap_or((0, 0))
}

fn input_err(file: &Path, (line, column): (usize, usize), message: String, fix: &str) -> LabError {
    LabError::Input {
        file: file.to_path_buf(),
        line,
        column,
        message,
        fix: fix.to_string(),
    }
}

impl Scenario {
    /// Parse and validate a scenario from `text` (read from `file`).
    pub fn parse(file: &Path, text: &str) -> LabResult<(Scenario, Config)> {
        let sc = Scenario::decode(file, text)?;
        let config = sc.config(file, text)?;
        sc.check_path_lens(file, text)?;
        sc.script.normalised().map_err(|e| {
            let (message, fix) = e.parts();
            input_err(
                file,
                locate(text, "script"),
                format!("field `script`: {message}"),
                &fix,
            )
        })?;
        sc.check_expect(file, text, &config)?;
        Ok((sc, config))
    }

    /// The JSON of a scenario with the schema this version reads.
    fn decode(file: &Path, text: &str) -> LabResult<Scenario> {
        let sc: Scenario = serde_json::from_str(text).map_err(|e| {
            input_err(
                file,
                (
                    e.line(),
                    crate::input::char_column(text, e.line(), e.column()),
                ),
                // serde_json appends " at line L column C"; the position is already in front.
                e.to_string()
                    .split(" at line ")
                    .next()
                    .unwrap_or_default()
                    .to_string(),
                "see scenarios/README.md for the ctxlab.scenario/1 schema",
            )
        })?;
        if sc.schema != SCHEMA {
            return Err(input_err(
                file,
                locate(text, "schema"),
                format!("field `schema`: found {:?}, expected {SCHEMA:?}", sc.schema),
                "set \"schema\": \"ctxlab.scenario/1\"",
            ));
        }
        Ok(sc)
    }

    /// The profile with every field of `set` applied, then checked as a whole.
    fn config(&self, file: &Path, text: &str) -> LabResult<Config> {
        let mut config = profile(&self.profile)
            .map_err(|e| {
                let (message, fix) = e.parts();
                input_err(
                    file,
                    locate(text, &self.profile),
                    format!("field `profile`: {message}"),
                    &fix,
                )
            })?
            .config;
        for (k, v) in &self.set {
            config.set_field(&format!("{k}={v}")).map_err(|e| {
                let (message, fix) = e.parts();
                input_err(
                    file,
                    locate(text, k),
                    format!("field `set.{k}`: {message}"),
                    &fix,
                )
            })?;
        }
        // All of `set` first, then one check: the combination is what must hold.
        config.constants.validate().map_err(|e| {
            input_err(
                file,
                locate(text, "set"),
                format!("field `set`: {e}"),
                "see `lab profiles --format json` for every field",
            )
        })?;
        Ok(config)
    }

    /// Every path length within bounds, and at least one.
    fn check_path_lens(&self, file: &Path, text: &str) -> LabResult<()> {
        if let Some(bad) = self
            .path_len
            .iter()
            .find(|l| crate::storage::root::validate_path_len(**l).is_err())
        {
            return Err(input_err(
                file,
                locate(text, "path_len"),
                format!(
                    "field `path_len`: {}",
                    crate::storage::root::validate_path_len(*bad).unwrap_err()
                ),
                "use lengths within the bounds, e.g. [60, 160]",
            ));
        }
        if self.path_len.is_empty() {
            return Err(input_err(
                file,
                locate(text, "path_len"),
                "field `path_len`: empty list".into(),
                "give at least one length, e.g. [60, 160]",
            ));
        }
        Ok(())
    }

    /// Every expected cell is one of this scenario's, every counter one the
    /// probe reports under `config`.
    fn check_expect(&self, file: &Path, text: &str, config: &Config) -> LabResult<()> {
        let known: Vec<String> = probe::run(config, &Script::default(), None)
            .map(|o| {
                o.counters
                    .0
                    .into_iter()
                    .map(|c| c.name.into_owned())
                    .collect()
            })
            .unwrap_or_default();
        let labels: Vec<String> = self
            .path_len
            .iter()
            .map(|l| format!("path_len={l}"))
            .collect();
        for (cell, map) in std::iter::once((None, &self.expect.all))
            .chain(self.expect.cells.iter().map(|(k, v)| (Some(k), v)))
        {
            if let Some(c) = cell {
                if !labels.contains(c) {
                    return Err(input_err(
                        file,
                        locate(text, c),
                        format!("field `expect.cells`: no cell {c:?} in this scenario"),
                        &format!("use one of: {}", labels.join(", ")),
                    ));
                }
            }
            for name in map.keys() {
                if !known.contains(name) {
                    return Err(input_err(
                        file,
                        locate(text, name),
                        format!("field `expect`: unknown counter {name:?}"),
                        &format!("use one of: {}", known.join(", ")),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Check one cell's outcome; returns failure lines.
    fn check_cell(&self, label: &str, o: &Outcome) -> Vec<String> {
        let mut f = Vec::new();
        let wants = self
            .expect
            .all
            .iter()
            .chain(self.expect.cells.get(label).into_iter().flatten());
        for (name, want) in wants {
            match o.counters.get(name) {
                Some(got) if want.matches(&got.value) => {}
                Some(got) => f.push(format!(
                    "[{label}] {name}: expected {want}, got {}",
                    got.value
                )),
                None => f.push(format!("[{label}] {name}: counter missing")),
            }
        }
        if let Some(n) = self.expect.final_messages {
            if o.final_messages.len() != n {
                f.push(format!(
                    "[{label}] final_messages: expected {n}, got {}",
                    o.final_messages.len()
                ));
            }
        }
        for (id, shape) in &self.expect.results {
            let content = o
                .final_messages
                .iter()
                .flat_map(|m| m.blocks())
                .find_map(|b| match b {
                    Block::ToolResult {
                        tool_use_id,
                        content,
                    } if tool_use_id == id => Some(content.as_str()),
                    _ => None,
                });
            let ok = match (shape, content) {
                (Shape::Absent, None) => true,
                (Shape::Equals(s), Some(c)) => c == s,
                (Shape::Prefix(s), Some(c)) => c.starts_with(s.as_str()),
                (Shape::Chars(n), Some(c)) => c.chars().count() == *n,
                _ => false,
            };
            if !ok {
                let got = content.map_or("absent".to_string(), |c| {
                    format!("{:?}", crate::compact::persist::prefix_chars(c, 80))
                });
                f.push(format!(
                    "[{label}] result {id}: expected {shape:?}, got {got}"
                ));
            }
        }
        f
    }

    /// Run every cell and check the expectations.
    pub fn run(&self, file: &Path, config: &Config) -> LabResult<RunReport> {
        let mut cells = Vec::new();
        let mut failures = Vec::new();
        for &len in &self.path_len {
            let label = format!("path_len={len}");
            let o = probe::run_with(config, &self.script, Some(len), self.summarizer.clone())
                .map_err(|e| match e {
                    // The length came from the file, not the command line.
                    LabError::Usage { message, fix } => LabError::Input {
                        file: file.to_path_buf(),
                        line: 0,
                        column: 0,
                        message: format!(
                            "field `path_len`: {}",
                            message.replace("--path-len ", "path_len ")
                        ),
                        fix: fix.replace("--path-len", "a `path_len`"),
                    },
                    other => other,
                })?;
            failures.extend(self.check_cell(&label, &o));
            cells.push((label, o.counters));
        }
        Ok(RunReport {
            file: file.to_path_buf(),
            name: self.name.clone(),
            cells,
            failures,
        })
    }

    /// Expectations that pin every counter of `cells` (used by `lab hunt`).
    pub fn pin(cells: &[(String, Counters)]) -> Expect {
        let mut e = Expect::default();
        for (label, counters) in cells {
            let m = e.cells.entry(label.clone()).or_default();
            for c in &counters.0 {
                m.insert(c.name.to_string(), Want::from_value(&c.value));
            }
        }
        e
    }
}

/// Read, parse and run a scenario file.
pub fn run_file(file: &Path) -> LabResult<RunReport> {
    let text = crate::input::read_text(file, "a scenario")?;
    let (sc, config) = Scenario::parse(file, &text)?;
    sc.run(file, &config)
}

/// Write a scenario atomically (temp file + rename): never half a file.
pub fn write_file(file: &Path, sc: &Scenario) -> LabResult<()> {
    let mut text = serde_json::to_string_pretty(sc).expect("scenarios serialise");
    text.push('\n');
    crate::storage::root::cleanup::write_replacing(file, text.as_bytes())
        .map_err(|e| LabError::io("writing a scenario", file, e))
}
