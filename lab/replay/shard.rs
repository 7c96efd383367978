//! Sharded corpus replays: `lab replay CORPUS --policy … --shard i/n
//! --format json` replays the sessions whose index (in corpus order) is `i`
//! mod `n`; `lab replay --merge FILE…` puts the parts back together.
//!
//! Every corpus replay's JSON carries a [`CorpusJson`]: what was replayed
//! (inputs, policies, the options that change a number), which shard, how
//! many sessions the corpus holds, and each replayed session's records, the
//! numbers the aggregate is computed from. A shard's part is sealed with a
//! SHA-256 checksum of that object. A merge checks each part's checksum, that
//! its aggregate is its records', that every part replayed the same corpus
//! the same way, and that together they cover every session once; the
//! merged object, and so everything printed from it, is what the whole run
//! prints, byte for byte.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::aggregate::{Aggregate, PolicyAggregate, SessionRecord};
use crate::error::{LabError, LabResult};
use crate::shard::Shard;

/// What a corpus replay replayed and how: parts merge only when equal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CorpusSpec {
    /// The corpus arguments as given on the command line.
    pub inputs: Vec<String>,
    /// The policies, `all` expanded, in replay order.
    pub policies: Vec<String>,
    /// Every other option that changes a record, by flag name.
    pub options: BTreeMap<String, String>,
}

/// One replayed session's records, one per policy in policy order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SessionRecords {
    /// The session's index in corpus order (from 0, over every shard).
    pub index: usize,
    /// Its numbers under each policy.
    pub records: Vec<SessionRecord>,
}

/// The corpus part of a corpus replay's JSON (`corpus`; `null` for named
/// session files replayed whole).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CorpusJson {
    /// What was replayed, and how.
    pub spec: CorpusSpec,
    /// The shard this part is (`null`: the whole corpus, run whole or merged).
    pub shard: Option<Shard>,
    /// Sessions in the whole corpus, every shard's.
    pub sessions: usize,
    /// Files or archive members that are not sessions (named on stderr).
    pub skipped: usize,
    /// The replayed sessions' records, ascending by index.
    pub records: Vec<SessionRecords>,
    /// SHA-256 of this object without its checksum, on a shard's part
    /// (`null` otherwise): `--merge` refuses a part edited or damaged.
    pub checksum: Option<String>,
}

impl CorpusJson {
    /// The object with its checksum when it is a shard's part.
    pub fn sealed(mut self) -> CorpusJson {
        self.checksum = self.shard.map(|_| self.digest());
        self
    }

    /// SHA-256 of the object with no checksum, as compact JSON.
    fn digest(&self) -> String {
        let bare = CorpusJson {
            checksum: None,
            ..self.clone()
        };
        crate::shard::sha256_hex(&serde_json::to_vec(&bare).expect("records serialise"))
    }

    /// The aggregate of its records, in index order (the whole run's order).
    pub fn aggregate(&self) -> Aggregate {
        let mut agg = Aggregate::default();
        for r in self.records.iter().flat_map(|s| &s.records) {
            agg.add(r);
        }
        agg
    }
}

/// What `--merge` reads of a replay's JSON; the per-run arrays of a corpus
/// replay are empty and not read.
#[derive(Debug, Deserialize)]
struct Part {
    aggregate: Vec<PolicyAggregate>,
    corpus: Option<CorpusJson>,
}

/// An error at `key`'s first occurrence in `text` (the file's start without one).
fn at_key(path: &Path, text: &str, key: &str, message: String, fix: &str) -> LabError {
    let at = text.find(&format!("\"{key}\"")).unwrap_or(0);
    let (line, column) = crate::input::line_col(text, at);
    LabError::Input {
        file: path.to_path_buf(),
        line,
        column,
        message,
        fix: fix.to_string(),
    }
}

const REPLAY_SHARD: &str = "re-run that shard with `lab replay CORPUS --policy … --shard i/n --format json`; never edit shard files";

/// Read one part for `--merge`: a corpus replay's JSON whose checksum and
/// aggregate match its records.
pub fn read_part(path: &Path) -> LabResult<CorpusJson> {
    let text = crate::input::read_text(path, "a replay part")?;
    let part: Part = serde_json::from_str(&text).map_err(|e| LabError::Input {
        file: path.to_path_buf(),
        line: e.line(),
        column: crate::input::char_column(&text, e.line(), e.column()),
        message: format!("not the JSON of a corpus replay: {e}"),
        fix: "pass files written by `lab replay CORPUS --policy … --shard i/n --format json`"
            .into(),
    })?;
    let Some(corpus) = part.corpus else {
        return Err(at_key(
            path,
            &text,
            "corpus",
            "a replay of named session files, not of a corpus: it has no sessions to merge".into(),
            "merge the parts of `lab replay CORPUS --policy … --shard i/n --format json`",
        ));
    };
    if let Some(shard) = corpus.shard {
        if corpus.checksum.as_deref() != Some(corpus.digest().as_str()) {
            return Err(at_key(
                path,
                &text,
                "checksum",
                format!(
                    "shard {}/{}: the checksum does not match its content (the file was edited or damaged)",
                    shard.index, shard.count
                ),
                REPLAY_SHARD,
            ));
        }
    }
    let rows = corpus.aggregate().rows();
    if serde_json::to_value(&rows).ok() != serde_json::to_value(&part.aggregate).ok() {
        return Err(at_key(
            path,
            &text,
            "aggregate",
            "the aggregate is not that of the part's records (the file was edited)".into(),
            REPLAY_SHARD,
        ));
    }
    Ok(corpus)
}

/// Merge parts into the whole corpus's [`CorpusJson`]: every part of the
/// same replay (spec, corpus size, skipped members), each session covered
/// once (a session in two parts must be identical in both).
pub fn merge(parts: Vec<(PathBuf, CorpusJson)>) -> LabResult<CorpusJson> {
    let mut parts = parts.into_iter();
    let (first_path, first) = parts.next().ok_or_else(|| {
        LabError::usage(
            "--merge needs at least one file",
            "pass shard outputs, e.g. lab replay --merge a.json b.json",
        )
    })?;
    let mut by_index: BTreeMap<usize, SessionRecords> = BTreeMap::new();
    for (path, part) in std::iter::once((first_path.clone(), first.clone())).chain(parts) {
        check_same(&first_path, &first, &path, &part)?;
        for s in part.records {
            if s.index >= first.sessions || part.shard.is_some_and(|sh| !sh.owns(s.index)) {
                return Err(LabError::usage(
                    format!(
                        "{}: session {} does not belong to its shard of a {}-session corpus",
                        path.display(),
                        s.index,
                        first.sessions
                    ),
                    REPLAY_SHARD,
                ));
            }
            if by_index.get(&s.index).is_some_and(|prev| *prev != s) {
                return Err(LabError::usage(
                    format!(
                        "{}: session {} differs from another part's",
                        path.display(),
                        s.index
                    ),
                    "re-run the shards with the same build and inputs",
                ));
            }
            by_index.insert(s.index, s);
        }
    }
    let missing: Vec<String> = (0..first.sessions)
        .filter(|i| !by_index.contains_key(i))
        .map(|i| i.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(LabError::usage(
            format!(
                "the parts cover {} of {} sessions (missing e.g. {})",
                by_index.len(),
                first.sessions,
                missing
                    .iter()
                    .take(5)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "pass every shard 0/n .. n-1/n of the replay",
        ));
    }
    Ok(CorpusJson {
        spec: first.spec,
        shard: None,
        sessions: first.sessions,
        skipped: first.skipped,
        records: by_index.into_values().collect(),
        checksum: None,
    })
}

/// A part must come from the same replay as the first.
fn check_same(
    first_path: &Path,
    first: &CorpusJson,
    path: &Path,
    part: &CorpusJson,
) -> LabResult<()> {
    let differs = if part.spec.inputs != first.spec.inputs {
        Some("the corpus inputs")
    } else if part.spec.policies != first.spec.policies {
        Some("the policies")
    } else if part.spec.options != first.spec.options {
        Some("the options (path length, retention, cost, tokens, envelope, import)")
    } else if part.sessions != first.sessions {
        Some("the number of sessions in the corpus (it changed between runs)")
    } else if part.skipped != first.skipped {
        Some("the number of members that are not sessions (the corpus changed between runs)")
    } else {
        None
    };
    match differs {
        None => Ok(()),
        Some(what) => Err(LabError::usage(
            format!(
                "{} and {} come from different replays: {what} differ",
                first_path.display(),
                path.display()
            ),
            "merge only the parts of one `lab replay CORPUS --policy … --shard i/n` command line over the same corpus",
        )),
    }
}

/// The sessions a shard replays, of the indices read so far (all without one).
pub fn owned(shard: Option<Shard>, index: usize) -> bool {
    shard.is_none_or(|s| s.owns(index))
}
