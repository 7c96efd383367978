//! ctxlab's memory-tool implementation, on the storage layer (so every fault
//! of that layer applies). Result and error strings are those of the
//! Anthropic Python SDK's `BetaLocalFilesystemMemoryTool`
//! (anthropics/anthropic-sdk-python, `src/anthropic/lib/tools/_beta_builtin_memory_tool.py`
//! at 091e868d), so a model sees the same text from either.
//!
//! Deliberate differences from that implementation:
//! - a path must be `/memories` or start with `/memories/` (the SDK maps
//!   `/memoriesX` to `X` inside its root); any `..` component, a NUL and a
//!   component over 255 bytes are refused before anything is touched;
//! - a symlink anywhere on the path is refused when it resolves outside the
//!   root (the SDK resolves and compares the same way), and a regular file
//!   with more than one link (a hard link, maybe to a file outside) is
//!   refused (the SDK reads and writes through it);
//! - a directory's size in a listing is `-` (the SDK prints the file
//!   system's own directory size, which differs between file systems);
//! - every writing command holds the store lock ([`super::lock`]), so
//!   sessions running at once never lose each other's acknowledged edits
//!   (the SDK reads, edits and writes back unlocked);
//! - `create` writes a temporary file and renames it into place (the SDK
//!   writes the file in place, so a kill or a full disk mid-create leaves
//!   part of it).

use std::path::{Path, PathBuf};

use super::{Command, Failure, MemoryTool, Reply};
use crate::storage::{atomic_write, FileKind, Shared};

/// The SDK's line-number width (`len(str(999999))`).
const LINE_NUMBER_WIDTH: usize = 6;

/// The reference implementation over a storage backend, rooted at `root`
/// (the directory that `/memories` names).
pub struct Reference {
    fs: Shared,
    root: PathBuf,
}

type Answer = Result<String, String>;

impl Reference {
    /// An implementation whose `/memories` is `root` (created if missing).
    pub fn new(fs: Shared, root: &Path) -> std::io::Result<Reference> {
        fs.create_dir_all(root)?;
        let root = fs.canonicalize(root)?;
        Ok(Reference { fs, root })
    }

    /// The real path of a `/memories` path, or the SDK's error text.
    fn resolve(&self, path: &str) -> Result<PathBuf, String> {
        let rest = match path.strip_prefix("/memories") {
            Some(r) if r.is_empty() || r.starts_with('/') => r,
            _ => return Err(format!("Path must start with /memories, got: {path}")),
        };
        let mut full = self.root.clone();
        for c in rest.split('/').filter(|c| !c.is_empty() && *c != ".") {
            if c == ".." || c.contains('\0') || c.len() > 255 {
                return Err(format!("Path {path} would escape /memories directory"));
            }
            full.push(c);
            self.no_link_out(&full)?;
        }
        if self.hard_linked(&full) {
            return Err(format!(
                "Path {path} would escape /memories directory via a hard link"
            ));
        }
        Ok(full)
    }

    /// A regular file with another name somewhere (a hard link) may be a
    /// file outside the root: reading or editing it in place would read or
    /// write that file. Only a disk has hard links.
    fn hard_linked(&self, p: &Path) -> bool {
        #[cfg(unix)]
        if self.fs.backend() == crate::storage::Backend::Disk {
            use std::os::unix::fs::MetadataExt;
            return std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file() && m.nlink() > 1);
        }
        let _ = p;
        false
    }

    /// A symlink at `p` must resolve inside the root.
    fn no_link_out(&self, p: &Path) -> Result<(), String> {
        if self.fs.kind(p) != Some(FileKind::Symlink) {
            return Ok(());
        }
        match self.fs.canonicalize(p) {
            Ok(real) if real.starts_with(&self.root) => Ok(()),
            _ => Err("Path would escape /memories directory via symlink".into()),
        }
    }

    fn read_text(&self, full: &Path, path: &str) -> Result<String, String> {
        let bytes = self.fs.read(full).map_err(|_| {
            format!(
                "The file {path} no longer exists (may have been deleted or renamed concurrently)."
            )
        })?;
        String::from_utf8(bytes).map_err(|_| format!("The file {path} is not UTF-8 text"))
    }

    fn existing_file(&self, path: &str) -> Result<(PathBuf, String), String> {
        let full = self.resolve(path)?;
        match self.fs.kind(&full) {
            None => Err(format!(
                "The path {path} does not exist. Please provide a valid path."
            )),
            Some(FileKind::Dir) => Err(format!("The path {path} is not a file.")),
            Some(_) => Ok((full.clone(), self.read_text(&full, path)?)),
        }
    }

    fn write(&self, full: &Path, text: &str) -> Result<(), String> {
        atomic_write(self.fs.as_ref(), full, text.as_bytes()).map_err(|e| e.to_string())
    }

    fn view(&self, path: &str, range: Option<[i64; 2]>) -> Answer {
        let full = self.resolve(path)?;
        match self.fs.kind(&full) {
            None => Err(format!(
                "The path {path} does not exist. Please provide a valid path."
            )),
            Some(FileKind::Dir) => self.listing(&full, path),
            Some(_) => {
                let text = self.read_text(&full, path)?;
                Ok(numbered(path, &text, range))
            }
        }
    }

    fn listing(&self, full: &Path, path: &str) -> Answer {
        let mut lines = vec![format!("-\t{path}")];
        self.collect(full, &format!("{path}/"), 1, &mut lines);
        let header = format!(
            "Here're the files and directories up to 2 levels deep in {path}, excluding hidden items:"
        );
        Ok(format!("{header}\n{}", lines.join("\n")))
    }

    /// The SDK's two-level walk: hidden names skipped, directories marked
    /// `/`; `prefix` is the shown path of `dir` with its trailing slash.
    fn collect(&self, dir: &Path, prefix: &str, depth: usize, out: &mut Vec<String>) {
        let Ok(names) = self.fs.list(dir) else {
            return;
        };
        for name in names.into_iter().filter(|n| !n.starts_with('.')) {
            let item = dir.join(&name);
            let shown = format!("{prefix}{name}");
            match self.fs.kind(&item) {
                Some(FileKind::Dir) => {
                    out.push(format!("-\t{shown}/"));
                    if depth < 2 {
                        self.collect(&item, &format!("{shown}/"), depth + 1, out);
                    }
                }
                Some(FileKind::File) => {
                    let size = self.fs.read(&item).map_or(0, |b| b.len() as u64);
                    out.push(format!("{}\t{shown}", file_size(size)));
                }
                _ => {}
            }
        }
    }

    /// Whole or not at all: a temporary file renamed into place, under the
    /// lock (so no other session creates the same path between the check
    /// and the rename).
    fn create(&self, path: &str, text: &str) -> Answer {
        let full = self.resolve(path)?;
        let _lock = super::lock::acquire(&self.fs, &self.root)?;
        if self.fs.kind(&full).is_some() {
            return Err(format!("File {path} already exists"));
        }
        if let Some(parent) = full.parent() {
            self.fs.create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        self.write(&full, text)?;
        Ok(format!("File created successfully at: {path}"))
    }

    fn str_replace(&self, path: &str, old: &str, new: &str) -> Answer {
        let _lock = super::lock::acquire(&self.fs, &self.root)?;
        let (full, content) = self.existing_file(path)?;
        let count = py_count(&content, old);
        if count == 0 {
            return Err(format!(
                "No replacement was performed, old_str `{old}` did not appear verbatim in {path}."
            ));
        }
        if count > 1 {
            let lines: Vec<String> = match_lines(&content, old)
                .iter()
                .map(|l| l.to_string())
                .collect();
            return Err(format!(
                "No replacement was performed. Multiple occurrences of old_str `{old}` in lines: {}. Please ensure it is unique",
                lines.join(", ")
            ));
        }
        let pos = content.find(old).unwrap_or(0);
        let changed = content[..pos].matches('\n').count();
        let updated = content.replacen(old, new, 1);
        self.write(&full, &updated)?;
        Ok(format!(
            "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n{}",
            snippet(&updated, changed)
        ))
    }

    fn insert(&self, path: &str, at: i64, text: &str) -> Answer {
        let _lock = super::lock::acquire(&self.fs, &self.root)?;
        let (full, content) = self.existing_file(path)?;
        let mut lines = crate::compact::course::splitlines(&content);
        let n = lines.len();
        let Some(at) = usize::try_from(at).ok().filter(|a| *a <= n) else {
            return Err(format!(
                "Invalid `insert_line` parameter: {at}. It should be within the range [0, {n}]."
            ));
        };
        lines.insert(at, text.trim_end_matches('\n'));
        let mut updated = lines.join("\n");
        if !updated.ends_with('\n') {
            updated.push('\n');
        }
        self.write(&full, &updated)?;
        Ok(format!("The file {path} has been edited."))
    }

    fn delete(&self, path: &str) -> Answer {
        let full = self.resolve(path)?;
        if path == "/memories" {
            return Err("Cannot delete the /memories directory itself".into());
        }
        let _lock = super::lock::acquire(&self.fs, &self.root)?;
        match self.fs.kind(&full) {
            None => Err(format!("The path {path} does not exist")),
            Some(FileKind::Dir) => self.remove_tree(&full),
            Some(_) => self.fs.remove_file(&full).map_err(|e| e.to_string()),
        }?;
        Ok(format!("Successfully deleted {path}"))
    }

    /// Remove a directory and everything below it, links removed as links.
    fn remove_tree(&self, dir: &Path) -> Result<(), String> {
        for name in self.fs.list(dir).map_err(|e| e.to_string())? {
            let p = dir.join(name);
            match self.fs.kind(&p) {
                Some(FileKind::Dir) => self.remove_tree(&p)?,
                Some(_) => self.fs.remove_file(&p).map_err(|e| e.to_string())?,
                None => {}
            }
        }
        self.fs.remove_dir(dir).map_err(|e| e.to_string())
    }

    fn rename(&self, old: &str, new: &str) -> Answer {
        let from = self.resolve(old)?;
        let to = self.resolve(new)?;
        let _lock = super::lock::acquire(&self.fs, &self.root)?;
        if self.fs.kind(&to).is_some() {
            return Err(format!("The destination {new} already exists"));
        }
        if self.fs.kind(&from).is_none() {
            return Err(format!("The path {old} does not exist"));
        }
        if let Some(parent) = to.parent() {
            self.fs.create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        self.fs.rename(&from, &to).map_err(|e| e.to_string())?;
        Ok(format!("Successfully renamed {old} to {new}"))
    }
}

impl MemoryTool for Reference {
    fn execute(&mut self, command: &Command) -> Result<Reply, Failure> {
        let answer = match command {
            Command::View { path, view_range } => self.view(path, *view_range),
            Command::Create { path, file_text } => self.create(path, file_text),
            Command::StrReplace {
                path,
                old_str,
                new_str,
            } => self.str_replace(path, old_str, new_str),
            Command::Insert {
                path,
                insert_line,
                insert_text,
            } => self.insert(path, *insert_line, insert_text),
            Command::Delete { path } => self.delete(path),
            Command::Rename { old_path, new_path } => self.rename(old_path, new_path),
        };
        Ok(match answer {
            Ok(t) => Reply::Ok(t),
            Err(t) => Reply::Error(t),
        })
    }
}

/// The file with line numbers, the view range applied as the SDK's Python
/// slice `lines[max(1, a) - 1 : b]` (`-1`: to the end) applies it.
fn numbered(path: &str, text: &str, range: Option<[i64; 2]>) -> String {
    let lines: Vec<&str> = text.split('\n').collect();
    let n = lines.len() as i64;
    let (start, end) = match range {
        Some([a, b]) => {
            let start = a.max(1) - 1;
            let end = if b == -1 { n } else { py_index(b, n) };
            (start.min(n), end)
        }
        None => (0, n),
    };
    let shown = if start < end {
        &lines[start as usize..end as usize]
    } else {
        &[][..]
    };
    let body: Vec<String> = shown
        .iter()
        .enumerate()
        .map(|(i, l)| format!("{:>w$}\t{l}", i as i64 + start + 1, w = LINE_NUMBER_WIDTH))
        .collect();
    format!(
        "Here's the content of {path} with line numbers:\n{}",
        body.join("\n")
    )
}

/// A Python slice bound: negative counts from the end, clamped to `0..=n`.
fn py_index(i: i64, n: i64) -> i64 {
    if i < 0 {
        (n + i).max(0)
    } else {
        i.min(n)
    }
}

/// The SDK's size text: `0B`, `12B`, `1.5K`, `3M`.
fn file_size(bytes: u64) -> String {
    if bytes == 0 {
        return "0B".into();
    }
    let i = ((63 - bytes.leading_zeros()) / 10).min(3);
    let size = bytes as f64 / 1024f64.powi(i as i32);
    let unit = ["B", "K", "M", "G"][i as usize];
    if size.fract() == 0.0 {
        format!("{}{unit}", size as u64)
    } else {
        format!("{size:.1}{unit}")
    }
}

/// Python's `str.count`: non-overlapping occurrences; the empty string
/// occurs before every character and at the end.
fn py_count(text: &str, needle: &str) -> usize {
    if needle.is_empty() {
        return text.chars().count() + 1;
    }
    text.matches(needle).count()
}

/// The SDK's line list for several matches: `find` from one character after
/// each match, so overlapping matches count.
fn match_lines(text: &str, needle: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut start = 0;
    while let Some(off) = text[start..].find(needle) {
        let pos = start + off;
        out.push(text[..pos].matches('\n').count() + 1);
        match text[pos..].chars().next() {
            Some(c) => start = pos + c.len_utf8(),
            None => break,
        }
    }
    out
}

/// Lines around the change, numbered from 1 (two before, two after).
fn snippet(text: &str, changed: usize) -> String {
    let lines: Vec<&str> = text.split('\n').collect();
    let from = changed.saturating_sub(2);
    let to = (changed + 3).min(lines.len());
    (from..to)
        .map(|i| format!("{:>w$}\t{}", i + 1, lines[i], w = LINE_NUMBER_WIDTH))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_helpers_match_python() {
        assert_eq!(py_count("aaaa", "aa"), 2);
        assert_eq!(match_lines("aaa\naa", "aa"), vec![1, 1, 2]);
        assert_eq!(py_count("ab", ""), 3);
        assert_eq!(file_size(0), "0B");
        assert_eq!(file_size(1536), "1.5K");
        assert_eq!(file_size(2048), "2K");
        assert_eq!(py_index(-2, 5), 3);
    }
}
