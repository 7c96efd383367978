//! Sharded corpus replays: `lab replay CORPUS --policy … --shard i/n
//! --format json` replays the sessions whose key (the file's path inside
//! the corpus, an archive member's name) hashes to shard `i` of `n`
//! ([`crate::shard::owner_of_key`]), opening no other file or member;
//! `lab replay --merge FILE…` puts the parts back together.
//!
//! Every corpus replay's JSON carries a [`CorpusJson`]: what was replayed
//! (inputs, policies, the options that change a number), which shard, the
//! corpus's listing (a digest of every key, which a shard reads without
//! opening a file), and each replayed session's key, place in corpus order
//! and records, the numbers the aggregate is computed from. A shard cannot
//! know how many sessions the others hold, so a part counts its own and a
//! merge adds them up. A shard's part is sealed with a SHA-256 checksum. A
//! merge reads the parts one at a time, checks each one's checksum, that its
//! aggregate is its records', that it replayed the same listing the same
//! way as the first, and that the parts are shards `0..n` once each; the
//! merged object, and so everything printed from it, is what the whole run
//! prints, byte for byte.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{LabError, LabResult};
use crate::replay::observe::aggregate::{Aggregate, PolicyAggregate, SessionRecord};
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
    /// The key of the file or member the session came from (what its shard
    /// was chosen by).
    pub key: String,
    /// Its place in corpus order: the file or archive among every input's,
    /// the member in its archive, the session in its file (a trajectory
    /// array's, a log's subagents after it). Parts merge in this order.
    pub order: [usize; 3],
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
    /// SHA-256 of every file and member key of the corpus in order, one a
    /// line: listed, not opened, so every shard has the whole corpus's.
    pub listing: String,
    /// Files and archive members listed, every shard's.
    pub items: usize,
    /// Sessions replayed: this part's, or the whole corpus's.
    pub sessions: usize,
    /// Files or archive members that are not sessions (named on stderr):
    /// this part's, or the whole corpus's.
    pub skipped: usize,
    /// The replayed sessions' records, in corpus order.
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

/// Merge parts, read one at a time by `read` (each checked by
/// [`read_part`]), into the whole corpus's [`CorpusJson`]: every part of
/// the same replay (spec, listing, shard count), shards `0..n` once each,
/// each record in its own shard. Every failure is an input error (exit 3)
/// naming the file; nothing is returned to print unless all hold.
pub fn merge(
    files: &[PathBuf],
    read: impl Fn(&Path) -> LabResult<CorpusJson>,
) -> LabResult<CorpusJson> {
    let Some(first_path) = files.first() else {
        return Err(LabError::usage(
            "--merge needs at least one file",
            "pass shard outputs, e.g. lab replay --merge a.json b.json",
        ));
    };
    let mut first: Option<CorpusJson> = None;
    let mut seen: BTreeMap<usize, &Path> = BTreeMap::new();
    let mut records = Vec::new();
    let (mut sessions, mut skipped) = (0, 0);
    for path in files {
        // One part's text at a time; only its records are kept.
        let mut part = read(path)?;
        let head = first.get_or_insert_with(|| CorpusJson {
            records: Vec::new(),
            ..part.clone()
        });
        check_same(first_path, head, path, &part)?;
        let shard = part.shard;
        if let Some(sh) = shard {
            if let Some(other) = seen.insert(sh.index, path) {
                return Err(part_error(
                    path,
                    format!(
                        "shard {}/{} is also {}: a shard passed twice",
                        sh.index,
                        sh.count,
                        other.display()
                    ),
                    "pass each shard's part once",
                ));
            }
        }
        if let Some(s) = part
            .records
            .iter()
            .find(|s| shard.is_some_and(|sh| !sh.owns_key(&s.key)))
        {
            return Err(part_error(
                path,
                format!("session {} is not of this part's shard", s.key),
                REPLAY_SHARD,
            ));
        }
        sessions += part.sessions;
        skipped += part.skipped;
        records.append(&mut part.records);
    }
    let first = first.expect("at least one part");
    let count = first.shard.map_or(1, |s| s.count);
    let missing: Vec<String> = (0..count)
        .filter(|i| first.shard.is_some() && !seen.contains_key(i))
        .map(|i| format!("{i}/{count}"))
        .collect();
    if !missing.is_empty() {
        return Err(part_error(
            first_path,
            format!(
                "the parts are {} of the {count} shards of this replay: missing {}",
                seen.len(),
                missing.join(", ")
            ),
            "pass every shard 0/n .. n-1/n of the replay (re-run the missing ones with the same command line and --shard i/n)",
        ));
    }
    if first.shard.is_none() && files.len() > 1 {
        return Err(part_error(
            &files[1],
            "a whole run merged with another part: it holds every session already".into(),
            "merge only the parts of `lab replay CORPUS --policy … --shard i/n --format json`",
        ));
    }
    records.sort_by_key(|s| s.order);
    if let Some(w) = records.windows(2).find(|w| w[0].order == w[1].order) {
        return Err(part_error(
            first_path,
            format!("session {} is in two parts", w[0].key),
            "re-run the shards with the same build and inputs",
        ));
    }
    Ok(CorpusJson {
        spec: first.spec,
        shard: None,
        listing: first.listing,
        items: first.items,
        sessions,
        skipped,
        records,
        checksum: None,
    })
}

/// An input error about a whole part (no position within it).
fn part_error(path: &Path, message: String, fix: &str) -> LabError {
    LabError::Input {
        file: path.to_path_buf(),
        line: 1,
        column: 1,
        message,
        fix: fix.to_string(),
    }
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
    } else if part.listing != first.listing || part.items != first.items {
        Some("the corpus listings (files or members were added or removed between runs)")
    } else if part.shard.map(|s| s.count) != first.shard.map(|s| s.count) {
        Some("the shard counts")
    } else {
        None
    };
    match differs {
        None => Ok(()),
        Some(what) => Err(part_error(
            path,
            format!(
                "a part of another replay than {}: {what} differ",
                first_path.display(),
            ),
            "merge only the parts of one `lab replay CORPUS --policy … --shard i/n` command line over the same corpus",
        )),
    }
}
