//! A deliberately broken memory tool, shipped so the rows can be shown to
//! catch what they should: the implementation many tutorials write. It joins
//! the path onto the root as given (`..`, links and all), writes in place
//! through whatever is there, replaces every occurrence, clamps the insert
//! line, and renames over an existing file. [`Cached`] is the same with the
//! store most agents keep in memory: each file read once per session and
//! written back whole from that copy, so two sessions lose each other's edits.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::{Command, Failure, MemoryTool, Reply};
use crate::storage::{FileKind, Shared};

/// The naive implementation over a storage backend rooted at `root`.
pub struct Naive {
    fs: Shared,
    root: PathBuf,
}

impl Naive {
    /// An implementation whose `/memories` is `root` (created if missing).
    pub fn new(fs: Shared, root: &Path) -> std::io::Result<Naive> {
        fs.create_dir_all(root)?;
        Ok(Naive {
            fs,
            root: root.to_path_buf(),
        })
    }

    fn path(&self, p: &str) -> PathBuf {
        let rest = p.strip_prefix("/memories").unwrap_or(p);
        self.root.join(rest.trim_start_matches('/'))
    }

    fn read(&self, p: &str) -> Result<String, String> {
        let bytes = self.fs.read(&self.path(p)).map_err(|e| e.to_string())?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    fn write(&self, p: &str, text: &str) -> Result<String, String> {
        let full = self.path(p);
        if let Some(parent) = full.parent() {
            self.fs.create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        self.fs
            .write(&full, text.as_bytes())
            .map_err(|e| e.to_string())?;
        Ok(format!("Wrote {p}"))
    }

    fn answer(&self, command: &Command) -> Result<String, String> {
        match command {
            Command::View { path, .. } => match self.fs.kind(&self.path(path)) {
                Some(FileKind::Dir) => Ok(self
                    .fs
                    .list(&self.path(path))
                    .map_err(|e| e.to_string())?
                    .join("\n")),
                _ => self.read(path),
            },
            Command::Create { path, file_text } => self.write(path, file_text),
            Command::StrReplace {
                path,
                old_str,
                new_str,
            } => {
                let text = self.read(path)?;
                self.write(path, &text.replace(old_str.as_str(), new_str))
            }
            Command::Insert {
                path,
                insert_line,
                insert_text,
            } => {
                let text = self.read(path)?;
                let mut lines: Vec<&str> = text.lines().collect();
                let at = (*insert_line).clamp(0, lines.len() as i64) as usize;
                lines.insert(at, insert_text);
                self.write(path, &(lines.join("\n") + "\n"))
            }
            Command::Delete { path } => self
                .fs
                .remove_file(&self.path(path))
                .map(|()| format!("Deleted {path}"))
                .map_err(|e| e.to_string()),
            Command::Rename { old_path, new_path } => {
                let to = self.path(new_path);
                if let Some(parent) = to.parent() {
                    let _ = self.fs.create_dir_all(parent);
                }
                self.fs
                    .rename(&self.path(old_path), &to)
                    .map(|()| format!("Renamed {old_path}"))
                    .map_err(|e| e.to_string())
            }
        }
    }
}

impl MemoryTool for Naive {
    fn execute(&mut self, command: &Command) -> Result<Reply, Failure> {
        Ok(match self.answer(command) {
            Ok(t) => Reply::Ok(t),
            Err(t) => Reply::Error(t),
        })
    }
}

/// [`Naive`] with a per-session copy of every file it has read: edits apply
/// to the copy and write it back whole.
pub struct Cached {
    inner: Naive,
    copies: HashMap<String, String>,
}

impl Cached {
    /// An implementation whose `/memories` is `root` (created if missing).
    pub fn new(fs: Shared, root: &Path) -> std::io::Result<Cached> {
        Ok(Cached {
            inner: Naive::new(fs, root)?,
            copies: HashMap::new(),
        })
    }

    fn copy(&mut self, path: &str) -> Result<String, String> {
        if let Some(t) = self.copies.get(path) {
            return Ok(t.clone());
        }
        let t = self.inner.read(path)?;
        self.copies.insert(path.to_string(), t.clone());
        Ok(t)
    }
}

impl MemoryTool for Cached {
    fn execute(&mut self, command: &Command) -> Result<Reply, Failure> {
        let answer = match command {
            Command::View {
                path,
                view_range: None,
            } if self.inner.fs.kind(&self.inner.path(path)) == Some(FileKind::File) => {
                self.copy(path)
            }
            Command::StrReplace {
                path,
                old_str,
                new_str,
            } => self.copy(path).and_then(|t| {
                let updated = t.replace(old_str.as_str(), new_str);
                self.copies.insert(path.clone(), updated.clone());
                self.inner.write(path, &updated)
            }),
            other => {
                self.copies.clear();
                return self.inner.execute(other);
            }
        };
        Ok(match answer {
            Ok(t) => Reply::Ok(t),
            Err(t) => Reply::Error(t),
        })
    }
}
