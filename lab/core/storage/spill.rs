//! [`Spill`]: the memory backend's tree with file contents kept in an
//! unnamed temporary file, so a run that writes much (a replay of a long
//! session archives its context on every snip and persists every large
//! result) holds 16 bytes per file in memory instead of the bytes.
//!
//! The tree, paths and every rule (exclusive create, symlinks, rename) are
//! [`MemFs`]'s: each file there holds where its bytes are in the spill file
//! (offset, length). Contents are appended and never reclaimed (an
//! overwritten or removed file's old bytes stay in the spill file until the
//! store is dropped, when the OS frees it). Verdicts equal those of a plain
//! [`MemFs`]: reads give back exactly the bytes written.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::{Backend, FileKind, MemFs, Storage};

/// A [`MemFs`] whose file contents live in an unnamed temp file.
#[derive(Debug)]
pub struct Spill {
    tree: MemFs,
    /// The spill file and its length.
    bytes: Mutex<(File, u64)>,
}

impl Spill {
    /// A new empty store; its spill file is created (already unlinked) in
    /// the temp dir.
    pub fn new() -> io::Result<Self> {
        Ok(Spill {
            tree: MemFs::new(),
            bytes: Mutex::new((tempfile::tempfile()?, 0)),
        })
    }

    /// Append `bytes` to the spill file; the 16-byte locator the tree keeps.
    fn put(&self, bytes: &[u8]) -> io::Result<[u8; 16]> {
        let mut guard = self.bytes.lock().unwrap_or_else(|p| p.into_inner());
        let (file, end) = &mut *guard;
        file.seek(SeekFrom::Start(*end))?;
        file.write_all(bytes)?;
        let mut locator = [0u8; 16];
        locator[..8].copy_from_slice(&end.to_le_bytes());
        locator[8..].copy_from_slice(&(bytes.len() as u64).to_le_bytes());
        *end += bytes.len() as u64;
        Ok(locator)
    }

    /// The bytes a locator names.
    fn get(&self, locator: &[u8]) -> io::Result<Vec<u8>> {
        let field = |r: std::ops::Range<usize>| {
            locator
                .get(r)
                .and_then(|b| b.try_into().ok())
                .map(u64::from_le_bytes)
                .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "bad spill locator"))
        };
        let (offset, len) = (field(0..8)?, field(8..16)?);
        let mut guard = self.bytes.lock().unwrap_or_else(|p| p.into_inner());
        let (file, _) = &mut *guard;
        file.seek(SeekFrom::Start(offset))?;
        let mut out = vec![0u8; len as usize];
        file.read_exact(&mut out)?;
        Ok(out)
    }
}

impl Storage for Spill {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.tree.create_dir_all(dir)
    }

    fn write_new(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        // Refuse before spilling: a refused write leaves nothing behind.
        if self.tree.kind(path).is_some() {
            return self.tree.write_new(path, &[]);
        }
        let locator = self.put(bytes)?;
        self.tree.write_new(path, &locator)
    }

    fn write(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let locator = self.put(bytes)?;
        self.tree.write(path, &locator)
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.get(&self.tree.read(path)?)
    }

    fn kind(&self, path: &Path) -> Option<FileKind> {
        self.tree.kind(path)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.tree.list(dir)
    }

    fn list_files(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.tree.list_files(dir)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.tree.remove_file(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.tree.rename(from, to)
    }

    fn symlink(&self, target: &Path, link: &Path) -> io::Result<()> {
        self.tree.symlink(target, link)
    }

    fn read_link(&self, link: &Path) -> io::Result<PathBuf> {
        self.tree.read_link(link)
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        self.tree.canonicalize(path)
    }

    fn sync(&self, path: &Path) -> io::Result<()> {
        self.tree.sync(path)
    }

    fn backend(&self) -> Backend {
        Backend::Mem
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_give_back_what_was_written_through_every_tree_operation() {
        let fs = Spill::new().unwrap();
        let dir = Path::new("/r/results");
        fs.create_dir_all(dir).unwrap();
        let (a, b) = (dir.join("a.txt"), dir.join("b.txt"));
        fs.write_new(&a, b"first").unwrap();
        assert_eq!(
            fs.write_new(&a, b"again").unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
        assert_eq!(fs.read(&a).unwrap(), b"first");
        fs.write(&a, "überschrieben".as_bytes()).unwrap();
        assert_eq!(fs.read_to_string(&a).unwrap(), "überschrieben");
        fs.rename(&a, &b).unwrap();
        assert!(!fs.exists(&a));
        assert_eq!(fs.read(&b).unwrap(), "überschrieben".as_bytes());
        fs.write(&a, b"").unwrap();
        assert_eq!(fs.read(&a).unwrap(), b"");
        assert_eq!(fs.list(dir).unwrap(), vec!["a.txt", "b.txt"]);
        fs.remove_file(&b).unwrap();
        assert!(fs.read(&b).is_err());
        assert_eq!(fs.kind(dir), Some(FileKind::Dir));
    }

    #[test]
    fn large_contents_are_not_held_in_the_tree() {
        let fs = Spill::new().unwrap();
        fs.create_dir_all(Path::new("/d")).unwrap();
        let big = vec![b'x'; 1 << 20];
        fs.write(Path::new("/d/big"), &big).unwrap();
        assert_eq!(fs.tree.read(Path::new("/d/big")).unwrap().len(), 16);
        assert_eq!(fs.read(Path::new("/d/big")).unwrap(), big);
    }
}
