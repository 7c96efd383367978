//! A deliberately broken containment check, shipped so the
//! `traversal-sibling-prefix` row is shown to catch it: the path is joined
//! onto the root and its `..` resolved, then accepted when its text
//! *starts with the root's text*. `/memories/../pwn.md` is refused, but
//! `/memories/../memories_evil/x.md` resolves to `…/memories_evil/x.md`,
//! whose text starts with `…/memories`, and is written outside. The
//! commands themselves are [`super::naive::Naive`]'s.

use std::path::{Component, Path, PathBuf};

use super::naive::Naive;
use super::{Command, Failure, MemoryTool, Reply};
use crate::storage::Shared;

/// The string-prefix containment check over the naive implementation.
pub struct Prefix {
    inner: Naive,
    root: PathBuf,
}

impl Prefix {
    /// An implementation whose `/memories` is `root` (created if missing).
    pub fn new(fs: Shared, root: &Path) -> std::io::Result<Prefix> {
        Ok(Prefix {
            inner: Naive::new(fs, root)?,
            root: root.to_path_buf(),
        })
    }

    /// The wrong check: lexical resolution, then a string prefix.
    fn contained(&self, path: &str) -> bool {
        let rest = path.strip_prefix("/memories").unwrap_or(path);
        let mut full = self.root.clone();
        for c in Path::new(rest.trim_start_matches('/')).components() {
            match c {
                Component::ParentDir => {
                    full.pop();
                }
                Component::Normal(n) => full.push(n),
                _ => {}
            }
        }
        full.to_string_lossy()
            .starts_with(self.root.to_string_lossy().as_ref())
    }
}

impl MemoryTool for Prefix {
    fn execute(&mut self, command: &Command) -> Result<Reply, Failure> {
        let paths: Vec<&String> = match command {
            Command::View { path, .. }
            | Command::Create { path, .. }
            | Command::StrReplace { path, .. }
            | Command::Insert { path, .. }
            | Command::Delete { path } => vec![path],
            Command::Rename { old_path, new_path } => vec![old_path, new_path],
        };
        if let Some(p) = paths.into_iter().find(|p| !self.contained(p)) {
            return Ok(Reply::Error(format!("Path {p} would escape /memories")));
        }
        self.inner.execute(command)
    }
}
