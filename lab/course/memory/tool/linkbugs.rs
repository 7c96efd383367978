//! Two deliberately broken ways of handling links, shipped so the link rows
//! of [`super::contain`] are shown to catch them (the commands themselves
//! are [`super::naive::Naive`]'s):
//! - [`Unresolved`]: resolves each requested path (links and `..`) and
//!   accepts it when it lies under the root *as given*, unresolved. Common
//!   and harmless until the root is reached through a symlink (macOS's
//!   `/tmp` is one): then every path resolves outside the given root, and
//!   every command is refused (`root-through-link`).
//! - [`Follow`]: deletes a directory by emptying it through the path given,
//!   links followed (`rm -r alias/`), then removing the name. A `delete`
//!   of an alias of a directory inside the root then takes the files of
//!   the directory it names (`link-dir-inside`).

use std::path::{Path, PathBuf};

use super::naive::Naive;
use super::{Command, Failure, MemoryTool, Reply};
use crate::storage::{FileKind, Shared};

/// Containment checked on the resolved path against the unresolved root.
pub struct Unresolved {
    inner: Naive,
    fs: Shared,
    root: PathBuf,
}

impl Unresolved {
    /// An implementation whose `/memories` is `root` (created if missing),
    /// kept as given.
    pub fn new(fs: Shared, root: &Path) -> std::io::Result<Unresolved> {
        Ok(Unresolved {
            inner: Naive::new(fs.clone(), root)?,
            fs,
            root: root.to_path_buf(),
        })
    }

    /// The path resolved as far as it exists (the rest appended), as
    /// Python's `Path.resolve()` does.
    fn resolved(&self, path: &str) -> PathBuf {
        let rest = path.strip_prefix("/memories").unwrap_or(path);
        let full = self.root.join(rest.trim_start_matches('/'));
        let mut head = full.clone();
        let mut tail = Vec::new();
        loop {
            if let Ok(real) = self.fs.canonicalize(&head) {
                return tail.iter().rev().fold(real, |p, c: &PathBuf| p.join(c));
            }
            match (head.file_name(), head.parent()) {
                (Some(name), Some(parent)) => {
                    tail.push(PathBuf::from(name));
                    head = parent.to_path_buf();
                }
                _ => return full,
            }
        }
    }
}

impl MemoryTool for Unresolved {
    fn execute(&mut self, command: &Command) -> Result<Reply, Failure> {
        if let Some(p) = paths(command)
            .into_iter()
            .find(|p| !self.resolved(p).starts_with(&self.root))
        {
            return Ok(Reply::Error(format!("Path {p} would escape /memories")));
        }
        self.inner.execute(command)
    }
}

/// A delete that empties a directory through the path given, links followed.
pub struct Follow {
    inner: Naive,
    fs: Shared,
    root: PathBuf,
}

impl Follow {
    /// An implementation whose `/memories` is `root` (created if missing).
    pub fn new(fs: Shared, root: &Path) -> std::io::Result<Follow> {
        Ok(Follow {
            inner: Naive::new(fs.clone(), root)?,
            fs,
            root: root.to_path_buf(),
        })
    }

    /// Remove everything below `dir`, reached through `dir` as given.
    fn empty(&self, dir: &Path) -> std::io::Result<()> {
        for name in self.fs.list(dir)? {
            let p = dir.join(name);
            // `canonicalize` follows a link: a linked directory is emptied too.
            let is_dir = self
                .fs
                .canonicalize(&p)
                .ok()
                .and_then(|real| self.fs.kind(&real))
                == Some(FileKind::Dir);
            if is_dir {
                self.empty(&p)?;
                self.remove(&p)?;
            } else {
                self.fs.remove_file(&p)?;
            }
        }
        Ok(())
    }

    fn remove(&self, p: &Path) -> std::io::Result<()> {
        match self.fs.kind(p) {
            Some(FileKind::Dir) => self.fs.remove_dir(p),
            _ => self.fs.remove_file(p),
        }
    }
}

impl MemoryTool for Follow {
    fn execute(&mut self, command: &Command) -> Result<Reply, Failure> {
        let Command::Delete { path } = command else {
            return self.inner.execute(command);
        };
        let rest = path.strip_prefix("/memories").unwrap_or(path);
        let full = self.root.join(rest.trim_start_matches('/'));
        let real = self.fs.canonicalize(&full).ok();
        if real.and_then(|r| self.fs.kind(&r)) != Some(FileKind::Dir) {
            return self.inner.execute(command);
        }
        Ok(match self.empty(&full).and_then(|()| self.remove(&full)) {
            Ok(()) => Reply::Ok(format!("Deleted {path}")),
            Err(e) => Reply::Error(e.to_string()),
        })
    }
}

/// The paths a command names.
fn paths(command: &Command) -> Vec<&String> {
    match command {
        Command::View { path, .. }
        | Command::Create { path, .. }
        | Command::StrReplace { path, .. }
        | Command::Insert { path, .. }
        | Command::Delete { path } => vec![path],
        Command::Rename { old_path, new_path } => vec![old_path, new_path],
    }
}
