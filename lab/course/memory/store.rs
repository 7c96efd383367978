//! The memory store: one Markdown file per memory plus a derived `MEMORY.md`.
//!
//! Invariants (seed section 6): a memory is one file whose frontmatter holds
//! name, description and type and whose body is the content; the file name is
//! the slug of the name, so the same name is the same file; `MEMORY.md` is
//! derived, rebuilt from all files after every write, never edited by hand;
//! and the path guard keeps every write inside the store.

use std::io;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::frontmatter::{self, Document};
use super::journal;
pub use super::journal::Snapshot;
use super::switches::{MemorySwitches, MEMORY_TYPES};
use crate::error::{LabError, LabResult};
use crate::storage::{is_temp_name, FileKind, Shared};

/// File name of the derived index.
pub const INDEX_FILE: &str = "MEMORY.md";

/// Longest slug accepted, in bytes: `slug.md` must fit the common 255-byte
/// file-name limit (the course has no limit and fails at the OS instead).
pub const MAX_SLUG_BYTES: usize = 252;

/// One memory as the extractor, consolidator and store exchange it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Memory {
    /// Human name; its slug is the file name.
    pub name: String,
    /// One of [`MEMORY_TYPES`].
    #[serde(rename = "type")]
    pub mem_type: String,
    /// One-line summary shown in the index.
    pub description: String,
    /// The content.
    pub body: String,
}

/// A memory read back from disk, with its file name and raw bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// File name inside the store (`slug.md`).
    pub file: String,
    /// Parsed content.
    pub memory: Memory,
    /// The file's text exactly as on disk (what recall injects).
    pub raw: String,
}

/// The course's slug: lower-case, every run of non-word characters becomes
/// `-`, then leading/trailing `-` and `_` are stripped. "Word" is Python's
/// Unicode `\w`: letters and numbers by general category (L*, Nd, Nl, No) and
/// `_`, so CJK names keep their text while combining marks and symbols such
/// as `Ⓐ` (alphabetic to Rust, not to Python) become gaps.
pub fn slug(name: &str) -> String {
    let mut out = String::new();
    let mut in_gap = false;
    for c in name.to_lowercase().chars() {
        if is_word(c) {
            out.push(c);
            in_gap = false;
        } else if !in_gap {
            out.push('-');
            in_gap = true;
        }
    }
    out.trim_matches(|c| c == '-' || c == '_').to_string()
}

/// Python's `\w` for one character.
fn is_word(c: char) -> bool {
    use unicode_general_category::{get_general_category, GeneralCategory as G};
    c == '_'
        || matches!(
            get_general_category(c),
            G::UppercaseLetter
                | G::LowercaseLetter
                | G::TitlecaseLetter
                | G::ModifierLetter
                | G::OtherLetter
                | G::DecimalNumber
                | G::LetterNumber
                | G::OtherNumber
        )
}

/// The naive slug of the course README's first `write_memory_file` (lower-case,
/// spaces to `-`): what the store uses when the path guard is switched off,
/// so that a hostile name can actually escape.
pub fn naive_slug(name: &str) -> String {
    name.to_lowercase().replace(' ', "-")
}

fn refused(message: impl Into<String>, fix: impl Into<String>) -> LabError {
    LabError::Refused {
        message: message.into(),
        fix: fix.into(),
    }
}

/// Check a memory name against the path guard and return its slug.
///
/// Pure: touches no file. The file name is the slug, in which every
/// non-word character is already a `-`, so only what could still escape or
/// clobber the index is refused: NUL, `/` and `\\`, `..`, an absolute path,
/// the index itself, and an empty or over-long slug. Everything else the
/// course stores is stored (`C: compiler flags`, `用户偏好：缩进`, `Notes…`,
/// tabs, bidi controls and device names, which the slug renders harmless).
pub fn guard_name(name: &str) -> LabResult<String> {
    let fix_plain =
        "use a plain name such as `user-preference-tabs` (letters, digits, spaces, `-`, `_`)";
    if name.trim().is_empty() {
        return Err(refused("memory name is empty", fix_plain));
    }
    if name.contains('\0') {
        return Err(refused(
            format!("memory name {name:?} contains NUL"),
            fix_plain,
        ));
    }
    if name.contains('/') || name.contains('\\') {
        return Err(refused(
            format!("memory name {name:?} contains a path separator"),
            "memory names are file names inside the store, not paths; drop `/` and `\\`",
        ));
    }
    if name.contains("..") {
        return Err(refused(
            format!("memory name {name:?} contains `..`"),
            "a memory name may not refer to a parent directory; drop `..`",
        ));
    }
    let trimmed = name.trim();
    if trimmed.eq_ignore_ascii_case(INDEX_FILE) {
        return Err(refused(
            format!("memory name {name:?} names the index {INDEX_FILE}"),
            "the index is derived from the memory files and is never a record; choose another name",
        ));
    }
    let s = slug(name);
    if s.is_empty() {
        return Err(refused(
            format!("memory name {name:?} has an empty slug (no letters or digits)"),
            fix_plain,
        ));
    }
    if s.len() > MAX_SLUG_BYTES {
        return Err(refused(
            format!(
                "memory name slug is {} bytes, over the {MAX_SLUG_BYTES}-byte limit",
                s.len()
            ),
            "shorten the memory name; put detail in the description or body",
        ));
    }
    if format!("{s}.md").eq_ignore_ascii_case(INDEX_FILE) {
        return Err(refused(
            format!("memory name {name:?} slugs to the index file name"),
            "choose a name that does not slug to `memory`",
        ));
    }
    Ok(s)
}

/// A memory file left out of the store because it cannot be read as one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Quarantined {
    /// File name inside the store.
    pub file: String,
    /// 1-based line of the problem (1 when the file is not text).
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

impl Quarantined {
    /// How to bring the file back: what the scan found is a memory file ctxlab
    /// will not read, index or overwrite until it parses.
    pub fn fix(&self) -> String {
        format!(
            "edit {} so its frontmatter holds plain string values for name, description \
             and type (or remove the file); until then it is left out of the index and recall",
            self.file
        )
    }

    /// `file:line:column: message; fix: …`, as the checker and the log print it.
    pub fn describe(&self) -> String {
        format!(
            "{}:{}:{}: {}; fix: {}",
            self.file,
            self.line,
            self.column,
            self.message,
            self.fix()
        )
    }
}

/// What a scan of the store found: readable records and quarantined files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scan {
    /// Memories, sorted by file name.
    pub records: Vec<Record>,
    /// Files that look like memories but do not parse; never deleted or indexed.
    pub quarantined: Vec<Quarantined>,
}

/// What opening a store repaired.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Recovery {
    /// Memory files restored from an interrupted consolidation's journal.
    pub restored: Vec<String>,
    /// Files the interrupted pass had written that the journal did not hold.
    pub removed: Vec<String>,
    /// Stale temp files removed.
    pub stale_temps: Vec<String>,
    /// Whether the index was rewritten because it differed from the files.
    pub index_rebuilt: bool,
    /// A journal found in the store that was not acted on, and why.
    pub untrusted_journal: Option<String>,
}

/// A memory directory plus the storage and switches that govern writes to it.
#[derive(Debug, Clone)]
pub struct Store {
    fs: Shared,
    root: PathBuf,
    workspace: PathBuf,
    switches: MemorySwitches,
    recovery: Recovery,
}

fn io_err(what: &str, path: &Path) -> impl FnOnce(io::Error) -> LabError {
    let (what, path) = (what.to_string(), path.to_path_buf());
    move |e| LabError::io(what, path, e)
}

/// `path` with `.` and `..` resolved lexically (no file-system access).
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(s) => out.push(s),
            _ => {}
        }
    }
    out
}

impl Store {
    /// Open (creating if missing) the store at `dir` inside the workspace
    /// `dir`'s parent. See [`Store::open_in`].
    pub fn open(fs: Shared, dir: &Path, switches: MemorySwitches) -> LabResult<Store> {
        let workspace = dir.parent().unwrap_or(Path::new("/")).to_path_buf();
        Store::open_in(fs, &workspace, dir, switches)
    }

    /// Open (creating if missing) the store at `dir`, which must resolve
    /// inside `workspace`. The root is canonicalised once so that every later
    /// "inside the store" check compares real paths. Opening recovers an
    /// interrupted consolidation from its journal, removes stale temp files
    /// and rewrites an index that differs from what the files derive.
    pub fn open_in(
        fs: Shared,
        workspace: &Path,
        dir: &Path,
        switches: MemorySwitches,
    ) -> LabResult<Store> {
        fs.create_dir_all(dir)
            .map_err(io_err("creating memory store", dir))?;
        let root = fs
            .canonicalize(dir)
            .map_err(io_err("resolving memory store", dir))?;
        let workspace = fs
            .canonicalize(workspace)
            .map_err(io_err("resolving workspace", workspace))?;
        if switches.path_guard && !root.starts_with(&workspace) {
            return Err(refused(
                format!(
                    "memory directory escapes the workspace: {} resolves to {}",
                    dir.display(),
                    root.display()
                ),
                format!(
                    "replace the link {} by a real directory inside {}",
                    dir.display(),
                    workspace.display()
                ),
            ));
        }
        let mut store = Store {
            fs,
            root,
            workspace,
            switches,
            recovery: Recovery::default(),
        };
        store.recover()?;
        Ok(store)
    }

    /// What opening repaired.
    pub fn recovery(&self) -> &Recovery {
        &self.recovery
    }

    /// The storage backend.
    pub fn fs(&self) -> &Shared {
        &self.fs
    }

    fn recover(&mut self) -> LabResult<()> {
        let mut rec = self.recover_journal()?;
        let names = self
            .fs
            .list(&self.root)
            .map_err(io_err("listing memory store", &self.root))?;
        for name in names.into_iter().filter(|n| is_temp_name(n)) {
            let p = self.root.join(&name);
            self.fs
                .remove_file(&p)
                .map_err(io_err("removing stale temp file", &p))?;
            rec.stale_temps.push(name);
        }
        if self.switches.rebuild_index {
            rec.index_rebuilt = self.rebuild_index()?;
        }
        self.recovery = rec;
        Ok(())
    }

    /// Undo a pass that died before its commit point, from its journal:
    /// every file the pass deleted or overwrote gets its old text back, every
    /// file it created is removed, and a file changed by anyone after the
    /// pass is left alone. Idempotent: the journal goes last.
    ///
    /// A journal ctxlab cannot have written (not JSON of its schema, a
    /// symlink, or naming a file that is not a plain memory file name) is not
    /// acted on: it is removed and the reason kept in
    /// [`Recovery::untrusted_journal`]. A directory in its place is left
    /// alone (it may hold someone's files): the store opens, and the next
    /// consolidation is refused with the path to clear.
    pub fn recover_journal(&self) -> LabResult<Recovery> {
        let mut rec = Recovery::default();
        let path = journal::path(&self.root);
        let pending = match journal::read(self.fs.as_ref(), &self.root) {
            Ok(p) => p.filter(|p| self.journal_names_ok(p, &mut rec)),
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                rec.untrusted_journal = Some(e.to_string());
                None
            }
            Err(e) => return Err(LabError::io("reading consolidation journal", &path, e)),
        };
        if self.fs.kind(&path) == Some(FileKind::Dir) {
            rec.untrusted_journal = Some(format!(
                "{} is a directory, not a consolidation journal: left alone; \
                 consolidation is refused until it is moved away",
                path.display()
            ));
            return Ok(rec);
        }
        if let Some(p) = pending {
            self.undo(&p, &mut rec)?;
        }
        if self.fs.kind(&path).is_some() {
            journal::remove(self.fs.as_ref(), &self.root)
                .map_err(io_err("removing consolidation journal", &path))?;
        }
        Ok(rec)
    }

    /// Every name in the journal is a plain memory file name; otherwise the
    /// journal is not ours and nothing in it is acted on.
    fn journal_names_ok(&self, p: &journal::Pending, rec: &mut Recovery) -> bool {
        let bad = p
            .before
            .keys()
            .chain(p.writes.keys())
            .find(|f| self.child(f).is_err());
        if let Some(f) = bad {
            rec.untrusted_journal = Some(format!(
                "{} names {f:?}, which is not a memory file name in the store: \
                 not written by ctxlab, removed without acting on it",
                journal::path(&self.root).display()
            ));
        }
        bad.is_none()
    }

    /// Restore what a pending pass deleted or overwrote, remove what it created.
    fn undo(&self, p: &journal::Pending, rec: &mut Recovery) -> LabResult<()> {
        for (file, old) in &p.before {
            let now = self.current_text(file)?;
            if now.is_none() || now.as_ref() == p.writes.get(file) {
                self.atomic_write(&self.child(file)?, old.as_bytes())?;
                rec.restored.push(file.clone());
            }
        }
        for (file, new) in p.writes.iter().filter(|(f, _)| !p.before.contains_key(*f)) {
            if self.current_text(file)?.as_ref() == Some(new) {
                self.remove_file(file)?;
                rec.removed.push(file.clone());
            }
        }
        Ok(())
    }

    /// The text of a memory file, `None` when it is missing or not a regular file.
    fn current_text(&self, file: &str) -> LabResult<Option<String>> {
        let path = self.child(file)?;
        if self.fs.kind(&path) != Some(FileKind::File) {
            return Ok(None);
        }
        Ok(self
            .fs
            .read(&path)
            .ok()
            .map(|b| String::from_utf8_lossy(&b).into_owned()))
    }

    /// The canonical store directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The canonical workspace the store lives in.
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// The switches this store was opened with.
    pub fn switches(&self) -> &MemorySwitches {
        &self.switches
    }

    /// Path of the index file.
    pub fn index_path(&self) -> PathBuf {
        self.root.join(INDEX_FILE)
    }

    /// Resolve the file a memory name is stored in, applying the path guard.
    ///
    /// With the guard on, the result is a direct child of the store and, if it
    /// already exists as a symlink, its target must resolve inside the store.
    /// With the guard off, the naive slug is joined unchecked (the break); a
    /// join that leaves the workspace is re-rooted under `<workspace>/.host`
    /// so the escape is visible and counted without touching the real host.
    pub fn file_for(&self, name: &str) -> LabResult<PathBuf> {
        if !self.switches.path_guard {
            let naive = lexical(&self.root.join(format!("{}.md", naive_slug(name))));
            if naive.starts_with(&self.workspace) {
                return Ok(naive);
            }
            let rel: PathBuf = naive.components().skip(1).collect();
            return Ok(self.workspace.join(".host").join(rel));
        }
        let s = guard_name(name)?;
        let path = self.root.join(format!("{s}.md"));
        self.check_inside(&path, name)?;
        Ok(path)
    }

    /// Refuse `path` if it exists and resolves (through symlinks) outside the
    /// store, or is not a regular file.
    fn check_inside(&self, path: &Path, name: &str) -> LabResult<()> {
        match self.fs.kind(path) {
            None | Some(FileKind::File) => Ok(()),
            Some(FileKind::Symlink) => match self.fs.canonicalize(path) {
                Ok(real) if real.parent() == Some(self.root.as_path()) => Ok(()),
                Ok(real) => Err(refused(
                    format!(
                        "memory {name:?} is a symlink resolving outside the store, to {}",
                        real.display()
                    ),
                    format!("remove the symlink {} from the store", path.display()),
                )),
                Err(_) => Err(refused(
                    format!("memory {name:?} is a dangling symlink"),
                    format!("remove the symlink {} from the store", path.display()),
                )),
            },
            Some(FileKind::Dir) => Err(refused(
                format!("memory {name:?} exists in the store but is not a regular file"),
                format!("remove {} from the store", path.display()),
            )),
        }
    }

    /// Write one memory (atomically) and, if enabled, rebuild the index.
    /// Returns the file name written. Refusals write nothing.
    ///
    /// The memory is durable once its file is written: when the index
    /// rewrite after it fails (a full disk), the error says the memory was
    /// kept ([`LabError::Kept`], exit 5), since the index is derived and
    /// the next open rebuilds it.
    pub fn save(&self, m: &Memory) -> LabResult<String> {
        let file = self.write_file(m)?;
        if self.switches.rebuild_index {
            self.rebuild_index().map_err(|e| match e {
                LabError::Io { path, source, .. } => LabError::Kept {
                    context: format!(
                        "memory {:?} was written to {file} and is kept; rewriting the index \
                         failed (it is rebuilt from the files when the store next opens)",
                        m.name
                    ),
                    path,
                    source,
                },
                other => other,
            })?;
        }
        Ok(file)
    }

    /// The file name holding `m` exactly as a save of it writes it, if it
    /// does: tells a memory whose write landed from one that did not.
    pub fn written(&self, m: &Memory) -> LabResult<Option<String>> {
        let Ok((path, text)) = self.planned(m) else {
            return Ok(None);
        };
        let file = file_name(&path);
        let there = path.parent() == Some(self.root.as_path())
            && self.current_text(&file)?.as_deref() == Some(text.as_str());
        Ok(there.then_some(file))
    }

    /// Write one memory file atomically without touching the index
    /// (consolidation rewrites many files, then rebuilds once). Blank fields
    /// are refused, as the course raises on them.
    pub fn write_file(&self, m: &Memory) -> LabResult<String> {
        let (path, text) = self.planned(m)?;
        if !self.switches.path_guard {
            if let Some(dir) = path.parent() {
                self.fs
                    .create_dir_all(dir)
                    .map_err(io_err("creating directory", dir))?;
            }
        }
        self.atomic_write(&path, text.as_bytes())?;
        Ok(file_name(&path))
    }

    /// The path and text a write of `m` would produce, after every check a
    /// write makes (guard, type, blank fields, quarantine); writes nothing.
    pub fn planned(&self, m: &Memory) -> LabResult<(PathBuf, String)> {
        let path = self.file_for(&m.name)?;
        // The four types are a store invariant, whoever writes (extractor, consolidator, model tool).
        if !MEMORY_TYPES.contains(&m.mem_type.as_str()) {
            return Err(refused(
                format!("memory {:?} has unknown type {:?}", m.name, m.mem_type),
                format!("use one of {MEMORY_TYPES:?}"),
            ));
        }
        if m.description.trim().is_empty() || m.body.trim().is_empty() {
            return Err(refused(
                format!("memory {:?} has a blank description or body", m.name),
                "give every memory a one-line description and a body",
            ));
        }
        self.refuse_quarantined(&path, &m.name)?;
        let text = frontmatter::render(&Document {
            name: m.name.clone(),
            description: m.description.clone(),
            mem_type: m.mem_type.clone(),
            body: m.body.clone(),
        });
        Ok((path, text))
    }

    /// A malformed file at `path` is quarantined, not a memory to replace:
    /// overwriting it would silently lose whatever its author meant.
    fn refuse_quarantined(&self, path: &Path, name: &str) -> LabResult<()> {
        if !self.switches.path_guard || self.fs.kind(path) != Some(FileKind::File) {
            return Ok(());
        }
        let readable = self
            .fs
            .read_to_string(path)
            .ok()
            .is_some_and(|t| frontmatter::parse(&t).is_ok());
        if readable {
            return Ok(());
        }
        Err(refused(
            format!(
                "memory {name:?} would overwrite the quarantined file {}",
                path.display()
            ),
            "fix or remove the malformed file first (see the `quarantined` counter)",
        ))
    }

    fn atomic_write(&self, path: &Path, bytes: &[u8]) -> LabResult<()> {
        crate::storage::atomic_write(self.fs.as_ref(), path, bytes)
            .map_err(io_err("writing atomically", path))
    }

    /// Delete the memory stored under `name` (guarded like a write).
    /// Returns whether a file was removed.
    pub fn delete(&self, name: &str) -> LabResult<bool> {
        let path = self.file_for(name)?;
        let removed = match self.fs.remove_file(&path) {
            Ok(()) => true,
            Err(e) if e.kind() == io::ErrorKind::NotFound => false,
            Err(e) => return Err(LabError::io("deleting memory file", &path, e)),
        };
        if removed && self.switches.rebuild_index {
            self.rebuild_index()?;
        }
        Ok(removed)
    }

    /// The path of a memory file given by file name (as listed by
    /// [`Store::memory_files`]): must be a plain `*.md` child of the store and
    /// not the index, so snapshot and listing names cannot be abused either.
    fn child(&self, file: &str) -> LabResult<PathBuf> {
        let plain = Path::new(file).file_name().and_then(|n| n.to_str()) == Some(file);
        if !plain || !is_memory_file_name(file) {
            return Err(refused(
                format!("{file:?} is not a memory file name inside the store"),
                "pass a file name from the store's own listing",
            ));
        }
        Ok(self.root.join(file))
    }

    /// Delete one memory file by its file name (no index rebuild).
    pub fn remove_file(&self, file: &str) -> LabResult<()> {
        let path = self.child(file)?;
        self.fs
            .remove_file(&path)
            .map_err(io_err("deleting memory file", &path))
    }

    /// Sorted file names of memory files: `*.md`, not hidden, not the index,
    /// and (with the guard on) no symlinks leaving the store.
    pub fn memory_files(&self) -> LabResult<Vec<String>> {
        let names = self
            .fs
            .list(&self.root)
            .map_err(io_err("listing memory store", &self.root))?;
        Ok(names
            .into_iter()
            .filter(|n| is_memory_file_name(n))
            .filter(|n| {
                let path = self.root.join(n);
                // The course skips entries the guard refuses.
                !(self.switches.path_guard && self.check_inside(&path, n).is_err())
                    && self.fs.is_file(&path)
            })
            .collect())
    }

    /// Every readable memory plus the files quarantined as malformed.
    pub fn scan(&self) -> LabResult<Scan> {
        let mut scan = Scan::default();
        for file in self.memory_files()? {
            let path = self.root.join(&file);
            let bytes = self
                .fs
                .read(&path)
                .map_err(io_err("reading memory file", &path))?;
            let parsed = String::from_utf8(bytes)
                .map_err(|e| frontmatter::ParseError {
                    line: 1,
                    column: 1,
                    message: format!("not UTF-8: {e}"),
                })
                .and_then(|raw| frontmatter::parse(&raw).map(|d| (raw, d)));
            match parsed {
                Ok((raw, doc)) => scan.records.push(Record {
                    file,
                    memory: Memory {
                        name: doc.name,
                        mem_type: doc.mem_type,
                        description: doc.description,
                        body: doc.body,
                    },
                    raw,
                }),
                Err(e) => scan.quarantined.push(Quarantined {
                    file,
                    line: e.line,
                    column: e.column,
                    message: e.message,
                }),
            }
        }
        Ok(scan)
    }

    /// Every readable memory, sorted by file name (malformed files are left out).
    pub fn records(&self) -> LabResult<Vec<Record>> {
        Ok(self.scan()?.records)
    }

    /// The index text derived from the files on disk right now.
    pub fn derived_index(&self) -> LabResult<String> {
        Ok(render_index(&self.records()?))
    }

    /// Rewrite `MEMORY.md` from all files (atomically) when it differs from
    /// them; returns whether it wrote. Skipping an identical rewrite means a
    /// rollback on a full disk never needs space for the index.
    pub fn rebuild_index(&self) -> LabResult<bool> {
        let text = self.derived_index()?;
        let path = self.index_path();
        let current = match self.fs.kind(&path) {
            Some(FileKind::File) => self.fs.read(&path).ok(),
            _ => None,
        };
        // An empty store needs no index file; an identical one needs no write.
        if current.as_deref().unwrap_or_default() == text.as_bytes() {
            return Ok(false);
        }
        self.atomic_write(&path, text.as_bytes())?;
        Ok(true)
    }

    /// The index file's text, or empty if it does not exist. An index that is
    /// not a regular file (a symlink, say to a file outside the store) is
    /// never read: the course refuses it too.
    pub fn read_index(&self) -> LabResult<String> {
        let path = self.index_path();
        if self.fs.kind(&path) != Some(FileKind::File) {
            return Ok(String::new());
        }
        self.fs
            .read_to_string(&path)
            .map_err(io_err("reading memory index", &path))
    }

    /// File name -> text of every readable memory file (what consolidation replaces).
    pub fn snapshot(&self) -> LabResult<Snapshot> {
        Ok(self
            .records()?
            .into_iter()
            .map(|r| (r.file, r.raw))
            .collect())
    }

    /// Write every snapshot file back (atomically). Does not delete extras.
    pub fn restore(&self, snap: &Snapshot) -> LabResult<()> {
        for (file, text) in snap {
            self.atomic_write(&self.child(file)?, text.as_bytes())?;
        }
        Ok(())
    }
}

/// `*.md`, not hidden, not the index.
pub(crate) fn is_memory_file_name(name: &str) -> bool {
    name.ends_with(".md") && !name.starts_with('.') && !name.eq_ignore_ascii_case(INDEX_FILE)
}

/// The index line format of the course: `- [name](file) - description`, with
/// whitespace collapsed so a multi-line value cannot break the one-line rule.
pub fn render_index(records: &[Record]) -> String {
    let lines: Vec<String> = records
        .iter()
        .map(|r| {
            let first_line = r
                .memory
                .body
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            let desc = if r.memory.description.trim().is_empty() {
                first_line
            } else {
                &r.memory.description
            };
            format!(
                "- [{}]({}) - {}",
                collapse(&r.memory.name),
                r.file,
                collapse(desc)
            )
        })
        .collect();
    if lines.is_empty() {
        String::new()
    } else {
        lines.join("\n") + "\n"
    }
}

/// Collapse all whitespace runs into single spaces (the course's `" ".join(s.split())`).
pub fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
