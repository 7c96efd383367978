//! A deliberately broken memory tool, shipped so the rows can be shown to
//! catch what they should: the implementation many tutorials write. It joins
//! the path onto the root as given (`..`, links and all), writes in place
//! through whatever is there, replaces every occurrence, clamps the insert
//! line, and renames over an existing file.

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
