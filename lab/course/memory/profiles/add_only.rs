//! Mem0 v3: ADD-only memory. Extraction adds new memories and never updates
//! or deletes one ("Memory mutations: ADD only — nothing is overwritten or
//! deleted"; "When information changes ... both facts are preserved"),
//! and a memory whose hash is already stored is skipped. There is no
//! consolidation pass: recall sees every fact ever added.
//!
//! Read in Mem0's v2-to-v3 migration page (docs/migration/platform-v2-to-v3.mdx:
//! "Single-pass ADD-only (one LLM call)") and the review of `Memory.add()`
//! at mem0ai/mem0 a3154d59 ("skip hash duplicates, insert records, write
//! ADD history"). Here each memory is one file named by the hash of its
//! line, written atomically.

use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{lines_in_files, read_opt, remove_temps, sha256_hex, Ack, Fact, Job, StoreProfile};
use crate::storage::{atomic_write, Shared};

/// The design's switches. `Default`: as documented.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AddOnly {
    /// A memory whose hash is stored already is skipped (Mem0's hash
    /// dedup); `false` stores every repeat as a new memory.
    pub dedup: bool,
}

impl Default for AddOnly {
    fn default() -> Self {
        AddOnly { dedup: true }
    }
}

impl AddOnly {
    /// The file of one memory: its hash, or a sequence number without dedup.
    fn file(&self, fs: &Shared, root: &Path, fact: &Fact) -> String {
        let line = fact.line();
        if self.dedup {
            return format!("mem-{}.md", &sha256_hex(line.as_bytes())[..16]);
        }
        let n = fs.list(root).map_or(0, |l| l.len());
        format!("mem-{n:08}.md")
    }

    fn add(&self, fs: &Shared, root: &Path, fact: &Fact) -> io::Result<Ack> {
        fs.create_dir_all(root)?;
        let path = root.join(self.file(fs, root, fact));
        if read_opt(fs, &path)?.is_some() {
            return Ok(Ack::Stored);
        }
        atomic_write(fs.as_ref(), &path, format!("{}\n", fact.line()).as_bytes())?;
        Ok(Ack::Stored)
    }
}

impl StoreProfile for AddOnly {
    fn name(&self) -> &'static str {
        "add-only"
    }

    fn design(&self) -> &'static str {
        "Mem0 v3: ADD only, no update or delete, hash duplicates skipped, no consolidation [vendor docs.mem0.ai migration v2->v3]"
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
