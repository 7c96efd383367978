//! The memory store: one Markdown file per memory plus a derived `MEMORY.md`.
//!
//! Invariants (seed section 6): a memory is one file whose frontmatter holds
//! name, description and type and whose body is the content; the file name is
//! the slug of the name, so the same name is the same file; `MEMORY.md` is
//! derived, rebuilt from all files after every write, never edited by hand;
//! and the path guard keeps every write inside the store.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::frontmatter::{self, Document};
use super::switches::{MemorySwitches, MEMORY_TYPES};
use crate::error::{LabError, LabResult};

/// File name of the derived index.
pub const INDEX_FILE: &str = "MEMORY.md";

/// Longest slug accepted, in bytes: keeps `slug.md` under common 255-byte name limits.
pub const MAX_SLUG_BYTES: usize = 200;

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

/// File name -> bytes of every memory file: what consolidation snapshots.
pub type Snapshot = BTreeMap<String, Vec<u8>>;

/// The course's slug: lower-case, every run of non-word characters becomes
/// `-`, then leading/trailing `-` and `_` are stripped. "Word" follows
/// Python's Unicode `\w` (alphanumerics and `_`), so CJK names keep their text.
pub fn slug(name: &str) -> String {
    let mut out = String::new();
    let mut in_gap = false;
    for c in name.to_lowercase().chars() {
        if c.is_alphanumeric() || c == '_' {
            out.push(c);
            in_gap = false;
        } else if !in_gap {
            out.push('-');
            in_gap = true;
        }
    }
    out.trim_matches(|c| c == '-' || c == '_').to_string()
}

/// The naive slug of the course README's first `write_memory_file` (lower-case,
/// spaces to `-`): what the store uses when the path guard is switched off,
/// so that a hostile name can actually escape.
pub fn naive_slug(name: &str) -> String {
    name.to_lowercase().replace(' ', "-")
}

/// Characters that look like a path separator or a dot but are not ASCII:
/// refusing them stops names that render as `../x` or `a/b` in a listing and
/// that NFKC-normalising tools would turn into real separators.
const LOOKALIKES: &[(char, &str)] = &[
    ('\u{2215}', "DIVISION SLASH"),
    ('\u{2044}', "FRACTION SLASH"),
    ('\u{29F8}', "BIG SOLIDUS"),
    ('\u{FF0F}', "FULLWIDTH SOLIDUS"),
    ('\u{FF3C}', "FULLWIDTH REVERSE SOLIDUS"),
    ('\u{29F5}', "REVERSE SOLIDUS OPERATOR"),
    ('\u{FE68}', "SMALL REVERSE SOLIDUS"),
    ('\u{2024}', "ONE DOT LEADER"),
    ('\u{2025}', "TWO DOT LEADER"),
    ('\u{2026}', "HORIZONTAL ELLIPSIS"),
    ('\u{FF0E}', "FULLWIDTH FULL STOP"),
    ('\u{FE52}', "SMALL FULL STOP"),
    ('\u{FF1A}', "FULLWIDTH COLON"),
];

fn refused(message: impl Into<String>, fix: impl Into<String>) -> LabError {
    LabError::Refused {
        message: message.into(),
        fix: fix.into(),
    }
}

/// Check a memory name against the path guard and return its slug.
///
/// Pure: touches no file. Refuses separators, backslashes, NUL and other
/// control characters, `..`, absolute or drive-letter paths, the index
/// itself in any case, Unicode look-alikes of separators and dots, and
/// names whose slug is empty, too long, or names the index.
pub fn guard_name(name: &str) -> LabResult<String> {
    let fix_plain =
        "use a short plain name such as `user-preference-tabs` (letters, digits, spaces, `-`, `_`)";
    if name.trim().is_empty() {
        return Err(refused("memory name is empty", fix_plain));
    }
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        let what = if c == '\0' {
            "NUL".to_string()
        } else {
            format!("U+{:04X}", c as u32)
        };
        return Err(refused(
            format!("memory name {name:?} contains control character {what}"),
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
    let bytes = name.as_bytes();
    if Path::new(name).is_absolute()
        || (bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':')
    {
        return Err(refused(
            format!("memory name {name:?} is an absolute path"),
            "memory names are file names inside the store; drop the drive or root prefix",
        ));
    }
    if let Some((c, what)) = LOOKALIKES.iter().find(|(c, _)| name.contains(*c)) {
        return Err(refused(
            format!(
                "memory name {name:?} contains U+{:04X} {what}, a look-alike of a separator or dot",
                *c as u32
            ),
            "use ASCII letters, digits, spaces, `-` or `_` instead of look-alike punctuation",
        ));
    }
    let trimmed = name.trim();
    if trimmed.eq_ignore_ascii_case(INDEX_FILE) || trimmed.eq_ignore_ascii_case("MEMORY") {
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

/// A memory directory on disk plus the switches that govern writes to it.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
    switches: MemorySwitches,
}

impl Store {
    /// Open (creating if missing) the store at `dir`. The root is canonicalised
    /// once so that every later "inside the store" check compares real paths.
    pub fn open(dir: &Path, switches: MemorySwitches) -> LabResult<Store> {
        fs::create_dir_all(dir).map_err(|e| LabError::io("creating memory store", dir, e))?;
        let root =
            fs::canonicalize(dir).map_err(|e| LabError::io("resolving memory store", dir, e))?;
        Ok(Store { root, switches })
    }

    /// The canonical store directory.
    pub fn root(&self) -> &Path {
        &self.root
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
    /// With the guard off, the naive slug is joined unchecked (the break).
    pub fn file_for(&self, name: &str) -> LabResult<PathBuf> {
        if !self.switches.path_guard {
            return Ok(self.root.join(format!("{}.md", naive_slug(name))));
        }
        let s = guard_name(name)?;
        let path = self.root.join(format!("{s}.md"));
        self.check_inside(&path, name)?;
        Ok(path)
    }

    /// Refuse `path` if it exists and resolves (through symlinks) outside the
    /// store, or is not a regular file.
    fn check_inside(&self, path: &Path, name: &str) -> LabResult<()> {
        let Ok(meta) = fs::symlink_metadata(path) else {
            return Ok(()); // does not exist yet: the parent is the canonical root
        };
        if meta.file_type().is_symlink() {
            match fs::canonicalize(path) {
                Ok(real) if real.parent() == Some(self.root.as_path()) => {}
                Ok(real) => {
                    return Err(refused(
                        format!(
                            "memory {name:?} is a symlink resolving outside the store, to {}",
                            real.display()
                        ),
                        format!("remove the symlink {} from the store", path.display()),
                    ))
                }
                Err(_) => {
                    return Err(refused(
                        format!("memory {name:?} is a dangling symlink"),
                        format!("remove the symlink {} from the store", path.display()),
                    ))
                }
            }
        } else if !meta.is_file() {
            return Err(refused(
                format!("memory {name:?} exists in the store but is not a regular file"),
                format!("remove {} from the store", path.display()),
            ));
        }
        Ok(())
    }

    /// Write one memory (atomically) and, if enabled, rebuild the index.
    /// Returns the file name written. Refusals write nothing. If some other
    /// file in the store is malformed, the write lands but the rebuild fails
    /// with `LabError::Input` naming that file: the index is never guessed.
    pub fn save(&self, m: &Memory) -> LabResult<String> {
        let file = self.write_file(m)?;
        if self.switches.rebuild_index {
            self.rebuild_index()?;
        }
        Ok(file)
    }

    /// Write one memory file atomically without touching the index
    /// (consolidation rewrites many files, then rebuilds once).
    pub fn write_file(&self, m: &Memory) -> LabResult<String> {
        let path = self.file_for(&m.name)?;
        // The four types are a store invariant, whoever writes (extractor, consolidator, model tool).
        if !MEMORY_TYPES.contains(&m.mem_type.as_str()) {
            return Err(refused(
                format!("memory {:?} has unknown type {:?}", m.name, m.mem_type),
                format!("use one of {MEMORY_TYPES:?}"),
            ));
        }
        let text = frontmatter::render(&Document {
            name: m.name.clone(),
            description: m.description.clone(),
            mem_type: m.mem_type.clone(),
            body: m.body.clone(),
        });
        atomic_write(&path, text.as_bytes())?;
        Ok(file_name(&path))
    }

    /// Delete the memory stored under `name` (guarded like a write).
    /// Returns whether a file was removed.
    pub fn delete(&self, name: &str) -> LabResult<bool> {
        let path = self.file_for(name)?;
        let removed = match fs::remove_file(&path) {
            Ok(()) => true,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
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
        if !plain
            || !file.ends_with(".md")
            || file.starts_with('.')
            || file.eq_ignore_ascii_case(INDEX_FILE)
        {
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
        fs::remove_file(&path).map_err(|e| LabError::io("deleting memory file", &path, e))
    }

    /// Sorted file names of memory files: `*.md`, not hidden, not the index,
    /// and (with the guard on) no symlinks leaving the store.
    pub fn memory_files(&self) -> LabResult<Vec<String>> {
        let mut files = Vec::new();
        let entries = fs::read_dir(&self.root)
            .map_err(|e| LabError::io("listing memory store", &self.root, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| LabError::io("listing memory store", &self.root, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.ends_with(".md")
                || name.starts_with('.')
                || name.eq_ignore_ascii_case(INDEX_FILE)
            {
                continue;
            }
            let path = entry.path();
            if self.switches.path_guard && self.check_inside(&path, &name).is_err() {
                continue; // the course skips entries the guard refuses
            }
            if path.is_file() {
                files.push(name);
            }
        }
        files.sort();
        Ok(files)
    }

    /// Every memory on disk, sorted by file name.
    pub fn records(&self) -> LabResult<Vec<Record>> {
        self.memory_files()?
            .into_iter()
            .map(|file| {
                let path = self.root.join(&file);
                let raw = fs::read_to_string(&path).map_err(|e| LabError::io("reading memory file", &path, e))?;
                let doc = frontmatter::parse(&raw).map_err(|e| LabError::Input {
                    file: path.clone(),
                    line: e.line,
                    column: e.column,
                    message: e.message,
                    fix: "memory files are `---`, name/description/type lines, `---`, a blank line, then the body".into(),
                })?;
                Ok(Record {
                    file,
                    memory: Memory {
                        name: doc.name,
                        mem_type: doc.mem_type,
                        description: doc.description,
                        body: doc.body,
                    },
                    raw,
                })
            })
            .collect()
    }

    /// The index text derived from the files on disk right now.
    pub fn derived_index(&self) -> LabResult<String> {
        Ok(render_index(&self.records()?))
    }

    /// Rewrite `MEMORY.md` from all files (atomically).
    pub fn rebuild_index(&self) -> LabResult<()> {
        let text = self.derived_index()?;
        atomic_write(&self.index_path(), text.as_bytes())
    }

    /// The index file's text, or empty if it does not exist.
    pub fn read_index(&self) -> LabResult<String> {
        let path = self.index_path();
        match fs::read_to_string(&path) {
            Ok(t) => Ok(t),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
            Err(e) => Err(LabError::io("reading memory index", &path, e)),
        }
    }

    /// File name -> bytes of every memory file.
    pub fn snapshot(&self) -> LabResult<Snapshot> {
        let mut snap = Snapshot::new();
        for file in self.memory_files()? {
            let path = self.root.join(&file);
            let bytes =
                fs::read(&path).map_err(|e| LabError::io("snapshotting memory file", &path, e))?;
            snap.insert(file, bytes);
        }
        Ok(snap)
    }

    /// Write every snapshot file back (atomically). Does not delete extras.
    pub fn restore(&self, snap: &Snapshot) -> LabResult<()> {
        for (file, bytes) in snap {
            atomic_write(&self.child(file)?, bytes)?;
        }
        Ok(())
    }
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

/// Write via a hidden temp file in the same directory, then rename: a reader
/// (or a crash) sees the old file or the new one, never a torn one.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> LabResult<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(".{}.tmp", file_name(path)));
    fs::write(&tmp, bytes).map_err(|e| LabError::io("writing temp file", &tmp, e))?;
    fs::rename(&tmp, path).map_err(|e| {
        let _ = fs::remove_file(&tmp);
        LabError::io("renaming temp file into place", path, e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mem(name: &str, desc: &str) -> Memory {
        Memory {
            name: name.into(),
            mem_type: "user".into(),
            description: desc.into(),
            body: format!("body of {name}"),
        }
    }

    #[test]
    fn slug_matches_course_rule() {
        assert_eq!(slug("User Preference: Tabs!"), "user-preference-tabs");
        assert_eq!(slug("__a__"), "a");
        assert_eq!(slug("用户 偏好"), "用户-偏好");
        assert_eq!(slug("!!!"), "");
    }

    #[test]
    fn same_name_same_file_and_index_rebuilt() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("m"), MemorySwitches::default()).unwrap();
        assert_eq!(store.save(&mem("Tabs", "one")).unwrap(), "tabs.md");
        assert_eq!(store.save(&mem("tabs", "two")).unwrap(), "tabs.md");
        store.save(&mem("quotes", "single quotes")).unwrap();
        assert_eq!(store.memory_files().unwrap(), vec!["quotes.md", "tabs.md"]);
        assert_eq!(
            store.read_index().unwrap(),
            "- [quotes](quotes.md) - single quotes\n- [tabs](tabs.md) - two\n"
        );
        assert_eq!(store.read_index().unwrap(), store.derived_index().unwrap());
    }

    #[test]
    fn guard_refuses_hostile_names() {
        for n in [
            "",
            "a/b",
            "a\\b",
            "a\0b",
            "..",
            "../x",
            "/etc/x",
            "C:x",
            "MEMORY.md",
            "memory",
            "a\u{2215}b",
            "a\u{FF0F}b",
            "\u{2024}\u{2024}x",
            "!!!",
            "a\nb",
        ] {
            assert!(
                matches!(guard_name(n), Err(LabError::Refused { .. })),
                "{n:?}"
            );
        }
        assert_eq!(guard_name("user tabs").unwrap(), "user-tabs");
    }

    #[test]
    fn file_name_operations_refuse_paths() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("m"), MemorySwitches::default()).unwrap();
        fs::write(dir.path().join("victim.md"), b"x").unwrap();
        for f in ["../victim.md", "MEMORY.md", "a/b.md", ".hidden.md", "x.txt"] {
            assert!(
                matches!(store.remove_file(f), Err(LabError::Refused { .. })),
                "{f}"
            );
            let snap: Snapshot = [(f.to_string(), b"y".to_vec())].into_iter().collect();
            assert!(
                matches!(store.restore(&snap), Err(LabError::Refused { .. })),
                "{f}"
            );
        }
        assert_eq!(fs::read(dir.path().join("victim.md")).unwrap(), b"x");
    }

    #[test]
    fn guard_off_lets_dotdot_escape() {
        let dir = tempfile::tempdir().unwrap();
        let sw = MemorySwitches {
            path_guard: false,
            ..MemorySwitches::default()
        };
        let store = Store::open(&dir.path().join("m"), sw).unwrap();
        store.save(&mem("../escaped", "x")).unwrap();
        assert!(dir.path().join("escaped.md").exists());
    }
}
