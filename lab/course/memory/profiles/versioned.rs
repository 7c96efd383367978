//! Anthropic Managed Agents memory stores: a store is a set of text
//! memories addressed by path, mounted into the session under
//! `/mnt/memory/`; "every change to a memory creates an immutable memory
//! version" (platform.claude.com/docs/en/managed-agents/memory). An update
//! may carry a `content_sha256` precondition: on a mismatch the request
//! fails with `memory_precondition_failed_error` (HTTP 409), unless the
//! stored memory already is exactly the requested content (200) (API
//! reference, `BetaManagedAgentsContentSha256Precondition`). A writer
//! refused with 409 reports the fact as not kept: no source gives a retry
//! count, so none is invented.
//!
//! Acknowledged here means the API's 200 to an update. The agent's own path
//! is the mount (`/mnt/memory/`, [`Mount`]), where a file write returns
//! before the worker syncs it to the store: at most once per
//! [`SYNC_INTERVAL_SECONDS`] after a tool call, and a final sync at session
//! end (self-hosted-sandboxes-memory). Sources: [`super::sources`].
//!
//! The limits are the documented ones, each refused here before anything
//! is written. The store has no consolidation pass of its own (the
//! separate "dreams" feature is not modelled): an edit replaces the line
//! in place and the old text lives on only in the versions.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{
    lines_in_files, lines_of, read_opt, remove_temps, sha256_hex, Ack, Fact, Job, StoreProfile,
};
use crate::storage::{atomic_write, Shared};

/// Memory stores one session may attach ("A session accepts up to 8 memory
/// stores": platform.claude.com managed-agents/self-hosted-sandboxes-memory).
pub const MAX_STORES_PER_SESSION: usize = 8;
/// Memories one store holds ("A memory store can hold up to 2,000
/// memories": docs.aws.amazon.com, Bedrock Claude Managed Agents, memory stores).
pub const MAX_MEMORIES_PER_STORE: usize = 2_000;
/// Versions one store holds ("and 250,000 versions": the same page).
pub const MAX_VERSIONS_PER_STORE: usize = 250_000;
/// Bytes of one memory ("individual memories capped at 100KB (~25K
/// tokens)": docs.rs claude-api; read as 100 KiB, as the Alibaba Cloud
/// port of the same API states 102,400 UTF-8 bytes).
pub const MAX_MEMORY_BYTES: usize = 100 * 1024;

/// Seconds between two syncs of a mount at most ("at most once per sync
/// interval (15 seconds by default)": self-hosted-sandboxes-memory).
pub const SYNC_INTERVAL_SECONDS: u64 = 15;
/// Seconds the final sync at session end flushes pending uploads for
/// ("up to 30 seconds": the same page).
pub const FINAL_SYNC_SECONDS: u64 = 30;

/// The design's switches. `Default`: as documented.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Versioned {
    /// Writes past a documented limit are refused; `false`: stored anyway.
    pub enforce_limits: bool,
    /// Updates carry the `content_sha256` precondition of what was read;
    /// `false`: the last writer wins.
    pub precondition: bool,
}

impl Default for Versioned {
    fn default() -> Self {
        Versioned {
            enforce_limits: true,
            precondition: true,
        }
    }
}

/// Attaching `n` stores to one session: refused past [`MAX_STORES_PER_SESSION`].
pub fn attach_stores(n: usize) -> Result<(), String> {
    if n > MAX_STORES_PER_SESSION {
        return Err(format!(
            "{n} memory stores attached to one session; at most {MAX_STORES_PER_SESSION} are allowed"
        ));
    }
    Ok(())
}

fn memories(root: &Path) -> PathBuf {
    root.join("memories")
}

fn versions_dir(root: &Path) -> PathBuf {
    root.join("versions")
}

fn count(fs: &Shared, dir: &Path) -> usize {
    fs.list(dir).map_or(0, |l| l.len())
}

/// The new text of a topic's memory with `fact` in it: its key's line
/// replaced in place, or appended.
fn edited(old: &str, fact: &Fact) -> String {
    let mut lines = lines_of(old);
    match lines.iter_mut().find(|(k, _)| *k == fact.key) {
        Some(slot) => slot.1 = fact.value.clone(),
        None => lines.push((fact.key.clone(), fact.value.clone())),
    }
    super::render_lines(&lines)
}

impl Versioned {
    /// The API's update: the limits, the precondition (the SHA-256 of the
    /// text the writer read, `None`: the memory did not exist), then a new
    /// version and the memory. One request: one indivisible step.
    fn update(
        &self,
        fs: &Shared,
        root: &Path,
        topic: &str,
        read: Option<&str>,
        text: &str,
    ) -> io::Result<Result<(), String>> {
        let path = memories(root).join(format!("{topic}.md"));
        let stored = read_opt(fs, &path)?;
        if self.precondition
            && stored
                .as_deref()
                .map(|t| sha256_hex(t.as_bytes()))
                .as_deref()
                != read
            && stored.as_deref() != Some(text)
        {
            return Ok(Err("memory_precondition_failed_error (409)".into()));
        }
        if let Err(refusal) = self.limits(fs, root, stored.is_none(), text) {
            return Ok(Err(refusal));
        }
        fs.create_dir_all(&versions_dir(root))?;
        fs.create_dir_all(&memories(root))?;
        let n = count(fs, &versions_dir(root)) + 1;
        let version = versions_dir(root).join(format!("{n:08}-{topic}.md"));
        fs.write_new(&version, text.as_bytes())?;
        atomic_write(fs.as_ref(), &path, text.as_bytes())?;
        Ok(Ok(()))
    }

    fn limits(&self, fs: &Shared, root: &Path, new: bool, text: &str) -> Result<(), String> {
        if !self.enforce_limits {
            return Ok(());
        }
        if text.len() > MAX_MEMORY_BYTES {
            return Err(format!(
                "memory of {} bytes; at most {MAX_MEMORY_BYTES} per memory",
                text.len()
            ));
        }
        if new && count(fs, &memories(root)) >= MAX_MEMORIES_PER_STORE {
            return Err(format!(
                "store holds {MAX_MEMORIES_PER_STORE} memories, the most allowed"
            ));
        }
        if count(fs, &versions_dir(root)) >= MAX_VERSIONS_PER_STORE {
            return Err(format!(
                "store holds {MAX_VERSIONS_PER_STORE} versions, the most allowed"
            ));
        }
        Ok(())
    }
}

impl StoreProfile for Versioned {
    fn name(&self) -> &'static str {
        "versioned"
    }

    fn design(&self) -> &'static str {
        "Anthropic Managed Agents memory stores: every change an immutable version, <=2,000 memories, <=250,000 versions, <=100 KB a memory, content_sha256 preconditions [official platform.claude.com managed-agents/memory; docs.aws.amazon.com]"
    }

    fn remember(&self, fs: &Shared, root: &Path, _: &str, fact: &Fact) -> io::Result<Ack> {
        let path = memories(root).join(format!("{}.md", fact.topic));
        let old = read_opt(fs, &path)?;
        let sha = old.as_deref().map(|t| sha256_hex(t.as_bytes()));
        let text = edited(old.as_deref().unwrap_or(""), fact);
        Ok(
            match self.update(fs, root, &fact.topic, sha.as_deref(), &text)? {
                Ok(()) => Ack::Stored,
                Err(refusal) => Ack::Refused(refusal),
            },
        )
    }

    fn consolidate(&self, _: &Shared, _: &Path) -> io::Result<()> {
        Ok(())
    }

    fn recover(&self, fs: &Shared, root: &Path) -> io::Result<()> {
        remove_temps(fs, &memories(root))
    }

    fn recall(&self, fs: &Shared, root: &Path) -> io::Result<Vec<(String, String)>> {
        lines_in_files(fs, &memories(root))
    }

    fn versions(&self, fs: &Shared, root: &Path) -> Option<u64> {
        Some(count(fs, &versions_dir(root)) as u64)
    }

    fn over_limit(&self, fs: &Shared, root: &Path) -> Option<String> {
        let n = count(fs, &memories(root));
        if n > MAX_MEMORIES_PER_STORE {
            return Some(format!("{n} memories (limit {MAX_MEMORIES_PER_STORE})"));
        }
        let v = count(fs, &versions_dir(root));
        if v > MAX_VERSIONS_PER_STORE {
            return Some(format!("{v} versions (limit {MAX_VERSIONS_PER_STORE})"));
        }
        fs.list(&memories(root))
            .unwrap_or_default()
            .into_iter()
            .find_map(|name| {
                let bytes = fs.read(&memories(root).join(&name)).ok()?.len();
                (bytes > MAX_MEMORY_BYTES)
                    .then(|| format!("{name} holds {bytes} bytes (limit {MAX_MEMORY_BYTES})"))
            })
    }

    fn consolidator(&self, _: &str, facts: Vec<Fact>) -> Box<dyn Job> {
        Box::new(Writer {
            profile: *self,
            facts,
            at: 0,
            read: None,
            kept: Vec::new(),
        })
    }
}

/// A session's end writing its facts through the API: for each fact, read
/// the memory, then update it with the precondition of what it read.
struct Writer {
    profile: Versioned,
    facts: Vec<Fact>,
    at: usize,
    /// The hash and the text it read of the current fact's memory.
    read: Option<(Option<String>, String)>,
    kept: Vec<Fact>,
}

impl Job for Writer {
    fn step(&mut self, fs: &Shared, root: &Path) -> io::Result<bool> {
        let Some(fact) = self.facts.get(self.at).cloned() else {
            return Ok(true);
        };
        let path = memories(root).join(format!("{}.md", fact.topic));
        let Some((sha, old)) = self.read.take() else {
            let old = read_opt(fs, &path)?;
            let sha = old.as_deref().map(|t| sha256_hex(t.as_bytes()));
            self.read = Some((sha, old.unwrap_or_default()));
            return Ok(false);
        };
        let text = edited(&old, &fact);
        let answer = self
            .profile
            .update(fs, root, &fact.topic, sha.as_deref(), &text)?;
        if answer.is_ok() {
            self.kept.push(fact);
        }
        self.at += 1;
        Ok(self.at == self.facts.len())
    }

    fn acknowledged(&self) -> Vec<Fact> {
        self.kept.clone()
    }
}

/// A session's mount of a store: the worker downloads every memory into
/// `dir`, the agent's file tool writes there and returns at once, and the
/// worker syncs after a tool call at most once per
/// [`SYNC_INTERVAL_SECONDS`] (uploading the files the agent changed,
/// downloading the memories the store changed) and once more at session
/// end. A sandbox killed between a write and the next sync loses it.
pub struct Mount {
    /// The store's rules (limits, precondition) for uploads.
    profile: Versioned,
    /// The store's directory.
    store: PathBuf,
    /// The mount's directory in the sandbox.
    dir: PathBuf,
    /// When the last sync ran.
    last_sync: u64,
    /// Each memory's SHA-256 as last downloaded or uploaded.
    base: BTreeMap<String, String>,
    /// Uploads the store refused (409), by memory.
    pub refused: Vec<String>,
}

impl Mount {
    /// The worker's download at session start (`now`). `upload_precondition`:
    /// each upload carries the SHA-256 the mount last synced (a stale one is
    /// refused, 409); `false`: an upload replaces the memory.
    pub fn open(
        fs: &Shared,
        store: &Path,
        dir: &Path,
        now: u64,
        upload_precondition: bool,
    ) -> io::Result<Mount> {
        fs.create_dir_all(dir)?;
        let mut m = Mount {
            profile: Versioned {
                precondition: upload_precondition,
                ..Versioned::default()
            },
            store: store.to_path_buf(),
            dir: dir.to_path_buf(),
            last_sync: now,
            base: BTreeMap::new(),
            refused: Vec::new(),
        };
        m.download(fs)?;
        Ok(m)
    }

    fn download(&mut self, fs: &Shared) -> io::Result<()> {
        for name in fs.list(&memories(&self.store)).unwrap_or_default() {
            let Some(topic) = name.strip_suffix(".md") else {
                continue;
            };
            let Some(stored) = read_opt(fs, &memories(&self.store).join(&name))? else {
                continue;
            };
            let local = read_opt(fs, &self.dir.join(&name))?;
            let unchanged_here =
                local.as_deref().map(|t| sha256_hex(t.as_bytes())) == self.base.get(topic).cloned();
            if unchanged_here || local.is_none() {
                atomic_write(fs.as_ref(), &self.dir.join(&name), stored.as_bytes())?;
                self.base
                    .insert(topic.to_string(), sha256_hex(stored.as_bytes()));
            }
        }
        Ok(())
    }

    /// The agent's file tool writes `fact` into its memory in the mount
    /// and returns: the acknowledgement. The worker then syncs if the
    /// interval has passed.
    pub fn write(&mut self, fs: &Shared, fact: &Fact, now: u64) -> io::Result<Ack> {
        let path = self.dir.join(format!("{}.md", fact.topic));
        let old = read_opt(fs, &path)?.unwrap_or_default();
        fs.write(&path, edited(&old, fact).as_bytes())?;
        if now >= self.last_sync + SYNC_INTERVAL_SECONDS {
            self.sync(fs, now)?;
        }
        Ok(Ack::Stored)
    }

    /// One sync: every file the agent changed since the last sync is
    /// uploaded as an update, then the store's changes are downloaded.
    pub fn sync(&mut self, fs: &Shared, now: u64) -> io::Result<()> {
        for name in fs.list(&self.dir).unwrap_or_default() {
            let Some(topic) = name.strip_suffix(".md").map(str::to_string) else {
                continue;
            };
            let Some(text) = read_opt(fs, &self.dir.join(&name))? else {
                continue;
            };
            let sha = sha256_hex(text.as_bytes());
            if self.base.get(&topic) == Some(&sha) {
                continue;
            }
            let read = self.base.get(&topic).cloned();
            match self
                .profile
                .update(fs, &self.store, &topic, read.as_deref(), &text)?
            {
                Ok(()) => {
                    self.base.insert(topic, sha);
                }
                Err(_) => self.refused.push(topic),
            }
        }
        self.download(fs)?;
        self.last_sync = now;
        Ok(())
    }

    /// Session end: the final sync (within [`FINAL_SYNC_SECONDS`]), then
    /// the worker removes the mount.
    pub fn end(mut self, fs: &Shared, now: u64) -> io::Result<Vec<String>> {
        self.sync(fs, now)?;
        Ok(self.refused)
    }
}

/// Every `(key, value)` line in the store's memories.
pub fn store_recall(fs: &Shared, store: &Path) -> io::Result<Vec<(String, String)>> {
    lines_in_files(fs, &memories(store))
}
