//! Sharded corpus replays: `lab replay CORPUS --policy … --shard i/n
//! --format json` replays the sessions whose key (the file's path inside
//! the corpus, an archive member's name) hashes to shard `i` of `n`
//! ([`crate::shard::owner_of_key`]), opening no other file or member;
//! `lab replay --merge FILE…` puts the parts back together ([`super::merge`]).
//!
//! Every corpus replay's JSON carries a [`CorpusJson`]: what was replayed
//! (inputs, policies, the options that change a number), which shard, the
//! corpus's listing (a digest of every key, which a shard reads without
//! opening a file), and each replayed session's key, place in corpus order
//! and records, the numbers the aggregate is computed from. A shard cannot
//! know how many sessions the others hold, so a part counts its own and a
//! merge adds them up. A shard's part is sealed with a SHA-256 checksum. A
//! merge checks each one's checksum, that its aggregate is its records', that
//! it replayed the same listing the same way as the first, and that the
//! parts are shards `0..n` once each; what it prints is what the whole run
//! prints, byte for byte.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{LabError, LabResult};
use crate::replay::observe::aggregate::{Aggregate, SessionRecord};
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

/// The fix of every refusal of a part's content.
pub(crate) const REPLAY_SHARD: &str = "re-run that shard with `lab replay CORPUS --policy … --shard i/n --format json`; never edit shard files";

/// An input error about a whole part (no position within it).
pub(crate) fn part_error(path: &Path, message: String, fix: &str) -> LabError {
    LabError::Input {
        file: path.to_path_buf(),
        line: 1,
        column: 1,
        message,
        fix: fix.to_string(),
    }
}

/// A part must come from the same replay as the first.
pub(crate) fn check_same(
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
