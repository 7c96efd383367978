//! Mem0 v3: ADD-only memory. Extraction adds new memories and never updates
//! or deletes one ("Memory mutations: ADD only"; "both facts are
//! preserved"): there is no consolidation pass, and which fact is current
//! is settled by retrieval ranking, not by a rewrite. Recall here shows
//! every fact ever added.
//!
//! What the caller is told: `Memory.add()` returns an ADD event per
//! extracted memory, and the open-source SDK returns it even for a record
//! whose insert failed (<https://github.com/mem0ai/mem0/issues/6911> and
//! <https://github.com/mem0ai/mem0/issues/7201>; switch
//! `ack_failed_inserts`). Every rule's source is in [`super::sources`].
//! Here each memory is one file named by the hash of its line, written
//! atomically (a record is inserted whole).
//!
//! The hosted platform adds asynchronously by default: `add` answers
//! `PENDING` with an event id and queues the work ([`AddOnly::platform_add`]);
//! the memory is stored when the queue is processed
//! ([`AddOnly::platform_process`]), and recall before that does not show it.

use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{lines_in_files, read_opt, remove_temps, sha256_hex, Ack, Fact, Job, StoreProfile};
use crate::storage::{atomic_write, Shared};

/// Search results a new memory's hash is compared against when `dedup` is
/// on (an assumption: see [`super::sources`]).
pub const DEDUP_SEARCH_LIMIT: usize = 10;

/// The design's switches. `Default`: as the sources describe it, with every
/// unverified assumption that changes a result off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AddOnly {
    /// A memory whose hash equals one of the [`DEDUP_SEARCH_LIMIT`] most
    /// similar stored memories is skipped. Off by default: unverified.
    pub dedup: bool,
    /// A failed insert is still returned as ADD (the SDK as reported in
    /// <https://github.com/mem0ai/mem0/issues/6911> ); `false`: the proposed
    /// fix (no ADD for it).
    pub ack_failed_inserts: bool,
}

impl Default for AddOnly {
    fn default() -> Self {
        AddOnly {
            dedup: false,
            ack_failed_inserts: true,
        }
    }
}

impl AddOnly {
    /// The file of one memory: a hash of its line and its position, so a
    /// repeat is a new record unless dedup finds it.
    fn file(fs: &Shared, root: &Path, fact: &Fact) -> String {
        let n = fs.list(root).map_or(0, |l| l.len());
        let h = sha256_hex(format!("{n}\n{}", fact.line()).as_bytes());
        format!("mem-{n:08}-{}.md", &h[..8])
    }

    /// Whether one of the [`DEDUP_SEARCH_LIMIT`] best matches (same key
    /// first, then newest) holds exactly this line.
    fn duplicate(fs: &Shared, root: &Path, fact: &Fact) -> io::Result<bool> {
        let mut stored = Vec::new();
        for name in fs.list(root).unwrap_or_default() {
            if let Some(text) = read_opt(fs, &root.join(&name))? {
                stored.push((name, text));
            }
        }
        stored.reverse();
        let key = format!("- {}: ", fact.key);
        stored.sort_by_key(|(_, t)| !t.starts_with(&key));
        let line = format!("{}\n", fact.line());
        Ok(stored
            .iter()
            .take(DEDUP_SEARCH_LIMIT)
            .any(|(_, t)| *t == line))
    }

    fn add(&self, fs: &Shared, root: &Path, fact: &Fact) -> io::Result<Ack> {
        let inserted = (|| {
            fs.create_dir_all(root)?;
            if self.dedup && Self::duplicate(fs, root, fact)? {
                return Ok(());
            }
            let path = root.join(Self::file(fs, root, fact));
            atomic_write(fs.as_ref(), &path, format!("{}\n", fact.line()).as_bytes())
        })();
        match inserted {
            Ok(()) => Ok(Ack::Stored),
            // The reported SDK logs the failed insert and still returns ADD.
            Err(e) if self.ack_failed_inserts && e.kind() != io::ErrorKind::Interrupted => {
                Ok(Ack::Stored)
            }
            Err(e) => Err(e),
        }
    }
}

/// The platform's queue of pending adds: beside the store, not in it.
fn queue(root: &Path) -> std::path::PathBuf {
    root.with_extension("queue")
}

impl AddOnly {
    /// The hosted platform's `add` with `async_mode` (its default): the
    /// work is queued and the answer is `PENDING`, before any insert.
    pub fn platform_add(&self, fs: &Shared, root: &Path, fact: &Fact) -> io::Result<Ack> {
        fs.create_dir_all(&queue(root))?;
        let n = fs.list(&queue(root)).map_or(0, |l| l.len());
        atomic_write(
            fs.as_ref(),
            &queue(root).join(format!("event-{n:08}")),
            format!("{}\t{}\t{}\n", fact.topic, fact.key, fact.value).as_bytes(),
        )?;
        Ok(Ack::Pending)
    }

    /// The platform's background processing: every queued add inserted,
    /// oldest first; the number processed.
    pub fn platform_process(&self, fs: &Shared, root: &Path) -> io::Result<usize> {
        let mut names = fs.list(&queue(root)).unwrap_or_default();
        names.sort();
        for name in &names {
            let path = queue(root).join(name);
            let text = fs.read_to_string(&path)?;
            let mut parts = text.trim_end_matches('\n').splitn(3, '\t');
            if let (Some(topic), Some(key), Some(value)) =
                (parts.next(), parts.next(), parts.next())
            {
                self.add(fs, root, &Fact::new(topic, key, value))?;
            }
            fs.remove_file(&path)?;
        }
        Ok(names.len())
    }
}

impl StoreProfile for AddOnly {
    fn name(&self) -> &'static str {
        "add-only"
    }

    fn design(&self) -> &'static str {
        "Mem0 v3: ADD only, no update or delete, no consolidation (current = retrieval ranking) [vendor docs.mem0.ai migration v2->v3; mem0ai/mem0#6911, #7201]"
    }

    fn remember(&self, fs: &Shared, root: &Path, _: &str, fact: &Fact) -> io::Result<Ack> {
        self.add(fs, root, fact)
    }

    fn consolidate(&self, _: &Shared, _: &Path) -> io::Result<()> {
        Ok(())
    }

    fn recover(&self, fs: &Shared, root: &Path) -> io::Result<()> {
        remove_temps(fs, root)
    }

    fn recall(&self, fs: &Shared, root: &Path) -> io::Result<Vec<(String, String)>> {
        lines_in_files(fs, root)
    }

    fn versions(&self, _: &Shared, _: &Path) -> Option<u64> {
        None
    }

    fn not_applicable(&self, measure: super::Measure) -> Option<&'static str> {
        match measure {
            super::Measure::LostUpdates => {
                Some("no write reads before it writes: every memory is a new record")
            }
            super::Measure::Limits => Some("no documented limit"),
            super::Measure::Stale => Some(
                "by design: ADD only, no update, delete or conflict resolution; both facts are kept and retrieval ranking settles which is current",
            ),
            super::Measure::Kill | super::Measure::IoError | super::Measure::FullDisk => None,
        }
    }

    fn consolidator(&self, _: &str, facts: Vec<Fact>) -> Box<dyn Job> {
        Box::new(Adder {
            profile: *self,
            facts,
            done: 0,
        })
    }
}

/// Mem0 has no consolidation: a session's end only adds, one fact a step.
struct Adder {
    profile: AddOnly,
    facts: Vec<Fact>,
    done: usize,
}

impl Job for Adder {
    fn step(&mut self, fs: &Shared, root: &Path) -> io::Result<bool> {
        if let Some(f) = self.facts.get(self.done) {
            self.profile.add(fs, root, f)?;
            self.done += 1;
        }
        Ok(self.done == self.facts.len())
    }

    fn acknowledged(&self) -> Vec<Fact> {
        self.facts[..self.done].to_vec()
    }
}
