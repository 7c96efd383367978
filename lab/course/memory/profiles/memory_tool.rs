//! Anthropic's client-side memory tool as a store: every write is the
//! model's own command on `/memories/<topic>.md` (`create`, `insert`,
//! `str_replace`), run by ctxlab's reference implementation
//! ([`crate::memory::tool::reference`]) on the storage layer. This is the
//! seed's `I-write-tool` path as the tool's normal one: nothing gates what
//! the model writes, and there is no consolidation pass of its own.
//!
//! A reply without `is_error` is the acknowledgement; a tool error is a
//! refusal (nothing stored).

use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{lines_in_files, lines_of, read_opt, remove_temps, Ack, Fact, Job, StoreProfile};
use crate::memory::tool::reference::Reference;
use crate::memory::tool::{Command, MemoryTool as _, Reply};
use crate::storage::Shared;

/// The design's switches. `Default`: the scripted model edits a
/// superseded fact in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryToolStore {
    /// A fact whose key the memory holds already is replaced with
    /// `str_replace`; `false`: the model only ever inserts lines.
    pub edit_in_place: bool,
}

impl Default for MemoryToolStore {
    fn default() -> Self {
        MemoryToolStore {
            edit_in_place: true,
        }
    }
}

impl MemoryToolStore {
    /// The command the scripted model sends to keep `fact`.
    fn command(&self, fs: &Shared, root: &Path, fact: &Fact) -> io::Result<Command> {
        let path = format!("/memories/{}.md", fact.topic);
        let Some(text) = read_opt(fs, &root.join(format!("{}.md", fact.topic)))? else {
            return Ok(Command::Create {
                path,
                file_text: format!("{}\n", fact.line()),
            });
        };
        let old = lines_of(&text)
            .into_iter()
            .rev()
            .find(|(k, _)| *k == fact.key);
        Ok(match old {
            Some((k, v)) if self.edit_in_place => Command::StrReplace {
                path,
                old_str: format!("- {k}: {v}\n"),
                new_str: format!("{}\n", fact.line()),
            },
            _ => Command::Insert {
                path,
                insert_line: text.lines().count() as i64,
                insert_text: fact.line(),
            },
        })
    }

    fn write(&self, fs: &Shared, root: &Path, fact: &Fact) -> io::Result<Ack> {
        let mut tool = Reference::new(fs.clone(), root)?;
        let command = self.command(fs, root, fact)?;
        match tool.execute(&command) {
            Ok(Reply::Ok(_)) => Ok(Ack::Stored),
            Ok(Reply::Error(e)) => Ok(Ack::Refused(e)),
            Err(f) => Err(io::Error::other(f.message)),
        }
    }
}

impl StoreProfile for MemoryToolStore {
    fn name(&self) -> &'static str {
        "memory-tool"
    }

    fn design(&self) -> &'static str {
        "Anthropic memory tool (memory_20250818) on ctxlab's reference implementation: the model's create/insert/str_replace are the writes, no gate, no consolidation [official platform.claude.com memory tool]"
    }

    fn remember(&self, fs: &Shared, root: &Path, _: &str, fact: &Fact) -> io::Result<Ack> {
        self.write(fs, root, fact)
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
            super::Measure::LostUpdates => Some(
                "each command is one indivisible step of the reference implementation; `lab memcheck` measures the lost update between sessions",
            ),
            super::Measure::Limits => Some("no documented limit"),
            _ => None,
        }
    }

    fn consolidator(&self, _: &str, facts: Vec<Fact>) -> Box<dyn Job> {
        Box::new(Session {
            profile: *self,
            facts,
            kept: Vec::new(),
            at: 0,
        })
    }
}

/// A session's end: one command per fact (the tool has no consolidation).
struct Session {
    profile: MemoryToolStore,
    facts: Vec<Fact>,
    kept: Vec<Fact>,
    at: usize,
}

impl Job for Session {
    fn step(&mut self, fs: &Shared, root: &Path) -> io::Result<bool> {
        if let Some(f) = self.facts.get(self.at) {
            if self.profile.write(fs, root, f)? == Ack::Stored {
                self.kept.push(f.clone());
            }
            self.at += 1;
        }
        Ok(self.at == self.facts.len())
    }

    fn acknowledged(&self) -> Vec<Fact> {
        self.kept.clone()
    }
}
