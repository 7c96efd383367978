//! Observations that checkers return: named counters with a few sample ids.
//!
//! Every checker in the lab (compaction invariants, memory-store invariants)
//! reports through this one shape so that verdicts, reports and snapshots can
//! be rendered by pure functions without knowing which mechanism produced them.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// How many sample ids a counter keeps: enough to find the case, few enough to print.
pub const MAX_SAMPLES: usize = 3;

/// The value of one observation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Value {
    /// A yes/no invariant such as `pairs_intact`.
    Bool(bool),
    /// A count of violations or events such as `lost_forever`.
    Count(u64),
    /// A sorted list, e.g. the names of persisted files.
    List(Vec<String>),
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Bool(b) => write!(f, "{b}"),
            Value::Count(n) => write!(f, "{n}"),
            Value::List(items) => write!(f, "[{}]", items.join(", ")),
        }
    }
}

/// One named observation plus up to [`MAX_SAMPLES`] ids that illustrate it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counter {
    /// Stable snake_case name; tests and scenario expectations refer to it.
    /// (Borrowed when a checker names it with a literal: every sweep cell
    /// reports a dozen counters, and copying each name was a fiftieth of it.)
    pub name: Cow<'static, str>,
    /// The observed value.
    pub value: Value,
    /// A few ids (tool_use ids, memory slugs, file names) behind the value.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<String>,
}

/// An ordered set of counters; order is the order a checker reports them in.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Counters(pub Vec<Counter>);

impl Counters {
    /// Add a count with its samples (samples are truncated to [`MAX_SAMPLES`]).
    pub fn count(
        &mut self,
        name: impl Into<Cow<'static, str>>,
        n: u64,
        samples: impl IntoIterator<Item = String>,
    ) {
        self.push(name, Value::Count(n), samples);
    }

    /// Add a boolean invariant with the ids that violate it.
    pub fn flag(
        &mut self,
        name: impl Into<Cow<'static, str>>,
        ok: bool,
        samples: impl IntoIterator<Item = String>,
    ) {
        self.push(name, Value::Bool(ok), samples);
    }

    /// Add a list-valued observation.
    pub fn list(&mut self, name: impl Into<Cow<'static, str>>, items: Vec<String>) {
        self.push(name, Value::List(items), std::iter::empty());
    }

    fn push(
        &mut self,
        name: impl Into<Cow<'static, str>>,
        value: Value,
        samples: impl IntoIterator<Item = String>,
    ) {
        let name = name.into();
        debug_assert!(self.get(&name).is_none(), "duplicate counter {name}");
        self.0.push(Counter {
            name,
            value,
            samples: samples.into_iter().take(MAX_SAMPLES).collect(),
        });
    }

    /// Look a counter up by name.
    pub fn get(&self, name: &str) -> Option<&Counter> {
        self.0.iter().find(|c| c.name == name)
    }

    /// The value of a count, or `None` if absent or not a count.
    pub fn count_of(&self, name: &str) -> Option<u64> {
        match self.get(name)?.value {
            Value::Count(n) => Some(n),
            _ => None,
        }
    }

    /// The value of a flag, or `None` if absent or not a flag.
    pub fn flag_of(&self, name: &str) -> Option<bool> {
        match self.get(name)?.value {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// Names whose values differ between `self` (baseline) and `other`.
    pub fn diff<'a>(&'a self, other: &'a Counters) -> Vec<(&'a Counter, &'a Counter)> {
        self.0
            .iter()
            .filter_map(|a| other.get(&a.name).map(|b| (a, b)))
            .filter(|(a, b)| a.value != b.value)
            .collect()
    }
}
