//! One storage interface under every writer: compaction's result files and
//! transcripts, the checker's reads, the memory store.
//!
//! Two backends give identical verdicts:
//! - [`MemFs`]: an in-memory tree of virtual absolute paths. A run's root can
//!   be padded to any exact length independent of `TMPDIR` and the working
//!   directory, and creating a file costs a map insert instead of a syscall.
//! - [`DiskFs`]: the real file system (`--fs disk`), for runs a researcher wants
//!   to inspect with ordinary tools.
//!
//! [`Spill`] is the memory backend with file contents in an unnamed temp
//! file (a replay of a long session writes more than it should hold).
//!
//! [`Faulty`] wraps either backend and injects the faults the memory crash
//! experiments need: no space left after a byte budget, an I/O error at the
//! Nth operation, and a simulated kill after the Nth operation (every later
//! operation fails, as if the process had died there, while what was already
//! written stays).
//!
//! All methods take `&self` so that one store can be shared (`Arc<dyn
//! Storage>`) by the compactor, the checker and the memory store of one
//! session, or by two sessions racing on one memory directory.

mod disk;
mod faults;
mod mem;
pub mod root;
mod spill;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use disk::DiskFs;
pub use faults::{FaultPlan, Faulty, OpLog};
pub use mem::MemFs;
pub use spill::Spill;

/// What a path names, without following a final symlink.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (its target is not looked at).
    Symlink,
}

/// The storage operations the lab needs. Paths are absolute.
///
/// Every mutating method is one "operation" for fault injection; reads are not
/// counted (a kill between two reads changes nothing on disk).
pub trait Storage: Send + Sync + std::fmt::Debug {
    /// Create `dir` and its parents (no error when it exists as a directory).
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// Create `path` exclusively and write `bytes`: fails with `AlreadyExists`
    /// when anything (a file, a directory, a dangling symlink) is there. Never
    /// follows a symlink.
    fn write_new(&self, path: &Path, bytes: &[u8]) -> io::Result<()>;
    /// [`Storage::write_new`] of a buffer the caller gives up: the memory
    /// backend keeps it instead of a copy (an archived transcript is the
    /// whole context).
    fn write_new_vec(&self, path: &Path, bytes: Vec<u8>) -> io::Result<()> {
        self.write_new(path, &bytes)
    }
    /// Create or truncate `path` and write `bytes` (follows a final symlink,
    /// like `std::fs::write`: the memory lab's break experiments need that).
    fn write(&self, path: &Path, bytes: &[u8]) -> io::Result<()>;
    /// Read a whole file (follows symlinks).
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// What `path` is, without following a final symlink; `None` when nothing is there.
    fn kind(&self, path: &Path) -> Option<FileKind>;
    /// Names of the entries of `dir`, sorted bytewise.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// Remove a file or a symlink (not a directory).
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Remove an empty directory (a backend without directories to remove
    /// says so).
    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "{}: removing directories is not supported here",
                path.display()
            ),
        ))
    }
    /// Rename `from` to `to`, replacing a file or symlink at `to` (POSIX `rename`).
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Create a symlink at `link` pointing to `target` (hostile-store tests).
    fn symlink(&self, target: &Path, link: &Path) -> io::Result<()>;
    /// The target of the symlink at `link`.
    fn read_link(&self, link: &Path) -> io::Result<PathBuf>;
    /// Resolve every symlink and `.`/`..` of an existing path.
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf>;
    /// Make `path`'s content durable (fsync); a no-op in memory but still an operation.
    fn sync(&self, path: &Path) -> io::Result<()>;
    /// Which backend this is (shown in report headers).
    fn backend(&self) -> Backend;

    /// `true` when `path` is a regular file (following symlinks).
    fn is_file(&self, path: &Path) -> bool {
        match self.kind(path) {
            Some(FileKind::File) => true,
            Some(FileKind::Symlink) => self
                .canonicalize(path)
                .is_ok_and(|p| self.kind(&p) == Some(FileKind::File)),
            _ => false,
        }
    }

    /// `true` when anything is at `path` (following symlinks, like `Path::exists`).
    fn exists(&self, path: &Path) -> bool {
        match self.kind(path) {
            Some(FileKind::Symlink) => self.canonicalize(path).is_ok(),
            Some(_) => true,
            None => false,
        }
    }

    /// [`Storage::write`] unless something [`Storage::exists`] at `path`;
    /// `Ok(false)` when it did not write. (f9e8b28's `if not
    /// path.exists()`, which every saved result asks: the memory tree
    /// answers both with one lookup.)
    fn write_if_absent(&self, path: &Path, bytes: &[u8]) -> io::Result<bool> {
        if self.exists(path) {
            return Ok(false);
        }
        self.write(path, bytes).map(|()| true)
    }

    /// Names of the regular files of `dir` (following symlinks), sorted
    /// bytewise: [`Storage::list`] filtered by [`Storage::is_file`], which a
    /// backend may answer in one pass.
    fn list_files(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = self.list(dir)?;
        names.retain(|name| self.is_file(&dir.join(name)));
        Ok(names)
    }

    /// Call `f` with the bytes of a file (following symlinks), lent where
    /// the backend holds them instead of copied as by [`Storage::read`]
    /// (the checker hashes and scans every file once). `f` must not use
    /// this storage: the memory tree stays locked while it runs.
    fn read_with(&self, path: &Path, f: &mut dyn FnMut(&[u8])) -> io::Result<()> {
        f(&self.read(path)?);
        Ok(())
    }

    /// Call `f` with the name and the bytes (or the read error) of each
    /// regular file of `dir` (following symlinks), in the order of
    /// [`Storage::list_files`]: that listing, then [`Storage::read_with`]
    /// of each file, which a backend may answer with one lookup of the
    /// directory (the checker reads every transcript of a run). `f` must
    /// not use this storage, as for `read_with`.
    fn visit_files(
        &self,
        dir: &Path,
        f: &mut dyn FnMut(&str, io::Result<&[u8]>),
    ) -> io::Result<()> {
        visit_files_by_reads(self, dir, f)
    }

    /// Read a file as UTF-8 (invalid bytes are an `InvalidData` error).
    fn read_to_string(&self, path: &Path) -> io::Result<String> {
        String::from_utf8(self.read(path)?)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
    }
}

/// A path as a `String`: borrowed-and-copied when it is UTF-8 (`to_str`
/// validates a word at a time), lossy otherwise (`to_string_lossy` walks
/// byte by byte even when nothing needs replacing, and the lab's paths are
/// up to 4096 chars long).
pub fn path_string(p: &Path) -> String {
    match p.to_str() {
        Some(s) => s.to_string(),
        None => p.to_string_lossy().into_owned(),
    }
}

/// `path_string(&dir.join(name))` without the joined `PathBuf`: for a
/// UTF-8 `dir` and a relative name, the two strings with a `/` between.
/// (The result and transcript paths of a run are built several times per
/// cell.)
pub fn join_string(dir: &Path, name: &str) -> String {
    join_parts(dir, plain_dir(dir), &[name])
}

/// `dir` as UTF-8 when a name can follow it after one `/`.
pub fn plain_dir(dir: &Path) -> Option<&str> {
    dir.to_str().filter(|d| !d.is_empty() && !d.ends_with('/'))
}

/// [`join_string`] of `dir` and the name that `parts` make together, in
/// one allocation; `d` is [`plain_dir`] of `dir` (a caller that joins many
/// names checks it once).
pub fn join_parts(dir: &Path, d: Option<&str>, parts: &[&str]) -> String {
    let absolute = parts
        .iter()
        .find(|p| !p.is_empty())
        .is_some_and(|p| p.starts_with('/'));
    match d {
        Some(d) if !absolute => {
            let len = parts.iter().map(|p| p.len()).sum::<usize>();
            let mut s = String::with_capacity(d.len() + 1 + len);
            s.push_str(d);
            s.push('/');
            parts.iter().for_each(|p| s.push_str(p));
            s
        }
        _ => path_string(&dir.join(parts.concat())),
    }
}

/// [`Storage::visit_files`] as its contract states it: list, then read each.
fn visit_files_by_reads<S: Storage + ?Sized>(
    fs: &S,
    dir: &Path,
    f: &mut dyn FnMut(&str, io::Result<&[u8]>),
) -> io::Result<()> {
    let mut joined = Joined::new(dir);
    for name in fs.list_files(dir)? {
        let read = fs.read_with(Path::new(joined.with(&name)), &mut |b| f(&name, Ok(b)));
        if let Err(e) = read {
            f(&name, Err(e));
        }
    }
    Ok(())
}

/// [`join_string`] of one directory and many names, built in one buffer
/// that keeps the directory part (a listing's paths differ only in their
/// last component).
pub struct Joined<'d> {
    dir: &'d Path,
    /// `dir` + `/` when `dir` is [`plain_dir`], else empty.
    buf: String,
    /// Length of the directory part of `buf`.
    base: usize,
}

impl<'d> Joined<'d> {
    /// Paths under `dir`.
    pub fn new(dir: &'d Path) -> Self {
        // Room for the directory and a name (a transcript's is 42 bytes);
        // `format!` cost more than a listing's joins.
        let mut buf = String::new();
        if let Some(d) = plain_dir(dir) {
            buf.reserve(d.len() + 64);
            buf.push_str(d);
            buf.push('/');
        }
        let base = buf.len();
        Joined { dir, buf, base }
    }

    /// `join_string(dir, name)`, valid until the next call.
    pub fn with(&mut self, name: &str) -> &str {
        if self.base == 0 || name.starts_with('/') {
            self.buf = join_string(self.dir, name);
            // The directory part is gone: every later name takes this path too.
            self.base = 0;
        } else {
            self.buf.truncate(self.base);
            self.buf.push_str(name);
        }
        &self.buf
    }
}

/// A shared handle to a storage backend.
pub type Shared = Arc<dyn Storage>;

/// Which backend a run uses; `Default` is memory (sweeps, hunts, property tests
/// and the registry are fast and independent of `TMPDIR`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// [`MemFs`]: virtual paths of exact length, nothing touches the disk.
    #[default]
    Mem,
    /// [`DiskFs`]: real files under a fresh temp dir.
    Disk,
}

impl Backend {
    /// The name used by `--fs`.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Mem => "mem",
            Backend::Disk => "disk",
        }
    }

    /// Parse a `--fs` value.
    pub fn parse(s: &str) -> Option<Backend> {
        match s {
            "mem" | "memory" => Some(Backend::Mem),
            "disk" => Some(Backend::Disk),
            _ => None,
        }
    }
}

/// A filename that no other writer picks: `.<name>.<pid>.<n>.<random>.tmp`.
///
/// Atomic writes go through such a name created with [`Storage::write_new`]
/// (exclusive, never following a symlink), so a planted file or link at a
/// predictable temp name cannot redirect the write. Only the first
/// [`TEMP_STEM_BYTES`] of `name` are kept: the temp name of any name that
/// fits the file system fits it too (a 240-byte name plus its suffix would not).
pub fn temp_name(name: &str) -> String {
    use rand::Rng;
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let r: u64 = rand::thread_rng().gen();
    let mut end = name.len().min(TEMP_STEM_BYTES);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    format!(".{}.{}.{n}.{r:016x}.tmp", &name[..end], std::process::id())
}

/// Bytes of the target's name a temp name keeps: with the dots, a 10-digit
/// pid, a 20-digit counter, 16 hex digits and `.tmp` (53 bytes), a temp name
/// stays under 255 bytes.
pub const TEMP_STEM_BYTES: usize = 128;

/// `true` for names [`temp_name`] produces (stale ones are cleaned up on open).
pub fn is_temp_name(name: &str) -> bool {
    name.starts_with('.') && name.ends_with(".tmp")
}

/// Write `bytes` to `path` atomically: exclusive temp file in the same
/// directory, fsync, rename over `path`. The temp file is removed on every
/// error path (as far as the storage still lets us).
pub fn atomic_write(fs: &dyn Storage, path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("/"));
    let base = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut attempt = 0;
    let tmp = loop {
        let tmp = dir.join(temp_name(&base));
        match fs.write_new(&tmp, bytes) {
            Ok(()) => break tmp,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 8 => attempt += 1,
            Err(e) => {
                // A partial temp file (no space) must not keep the space.
                if e.kind() != io::ErrorKind::AlreadyExists {
                    let _ = fs.remove_file(&tmp);
                }
                return Err(e);
            }
        }
    };
    let done = fs.sync(&tmp).and_then(|()| fs.rename(&tmp, path));
    if done.is_err() {
        let _ = fs.remove_file(&tmp);
    }
    done
}

/// Split an absolute path into its normal components (`.` dropped, `..` kept
/// as `".."`), as strings.
pub(crate) fn components(path: &Path) -> Vec<String> {
    use std::path::Component;
    path.components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            Component::ParentDir => Some("..".to_string()),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests;
