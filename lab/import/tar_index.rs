//! Tar archives indexed once. A tar has no table of contents: finding a
//! member means walking every header before it (and, compressed,
//! decompressing every byte before it). The first walk of an archive, a
//! corpus replay's or [`index_of`]'s, leaves its index here (each member's
//! name, data offset in the uncompressed stream and size), keyed by the
//! archive's path, size and modification time; reading a member back
//! (a Claude Code log's recorded usage, [`super::member_source`]) then goes
//! straight to its offset, seeking in a plain `.tar` and skipping the
//! decompressed bytes before it in a compressed one, with no header parsed.
//!
//! **Saved for other processes.** With `CTXLAB_TAR_INDEX_DIR` set (the
//! launchers set it beside the run), a walk's index is also saved there,
//! named by the archive's size, modification time and a SHA-256 of its
//! first 64 KiB (not its path: every machine of a shared file system finds
//! it). A later process, the other shards, finds it ([`saved`]) and reads
//! its own members at their offsets without walking the archive's headers
//! ([`scans`] counts the walks).

use std::collections::HashMap;
use std::fs::File;
use std::io::BufReader;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::error::{LabError, LabResult};
use crate::input::MAX_TRANSCRIPT_BYTES;

/// How an archive is compressed, from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// A plain `.tar`.
    None,
    /// `.tar.xz` / `.txz`.
    Xz,
    /// `.tar.gz` / `.tgz`.
    Gzip,
}

impl Compression {
    /// The compression of an archive named `path`, or `None` when the name
    /// is not an archive's.
    pub fn of(path: &Path) -> Option<Compression> {
        let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
        if name.ends_with(".tar") {
            Some(Compression::None)
        } else if name.ends_with(".tar.xz") || name.ends_with(".txz") {
            Some(Compression::Xz)
        } else if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
            Some(Compression::Gzip)
        } else {
            None
        }
    }
}

/// The decompressed stream of the archive at `path`.
pub fn open_archive(path: &Path, c: Compression) -> LabResult<Box<dyn Read>> {
    let raw = open_raw(path)?;
    Ok(match c {
        Compression::None => Box::new(raw),
        Compression::Xz => Box::new(lzma_rust2::XzReader::new(raw, true)),
        Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(raw)),
    })
}

/// The archive at `path`, buffered, refused unless a regular file.
pub fn open_raw(path: &Path) -> LabResult<BufReader<File>> {
    crate::input::check_regular(path, "an archive", u64::MAX)?;
    let file = File::open(path).map_err(|e| LabError::io("opening archive", path, e))?;
    Ok(BufReader::with_capacity(256 * 1024, file))
}

/// What identifies one version of an archive: its size and modification
/// time (an index is not used for an archive rewritten since).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
}

impl Stamp {
    /// The stamp of the file at `path` now (`None` when it cannot be read).
    pub fn of(path: &Path) -> Option<Stamp> {
        let m = std::fs::metadata(path).ok()?;
        Some(Stamp {
            len: m.len(),
            modified: m.modified().ok(),
        })
    }
}

/// One member: its name, where its data starts in the uncompressed stream,
/// its size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexedMember {
    /// The member's path inside the archive.
    pub name: String,
    /// Offset of its data in the uncompressed stream.
    pub offset: u64,
    /// Its size in bytes.
    pub size: u64,
}

/// Every regular file of an archive, in archive order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TarIndex {
    /// The members, in archive order.
    pub members: Vec<IndexedMember>,
}

impl TarIndex {
    /// Add the next member.
    pub fn push(&mut self, name: &str, offset: u64, size: u64) {
        self.members.push(IndexedMember {
            name: name.to_string(),
            offset,
            size,
        });
    }

    /// The first member named `name`.
    pub fn find(&self, name: &str) -> Option<&IndexedMember> {
        self.members.iter().find(|m| m.name == name)
    }
}

type Cache = HashMap<PathBuf, (Stamp, Arc<TarIndex>)>;

fn cache() -> &'static Mutex<Cache> {
    static CACHE: std::sync::OnceLock<Mutex<Cache>> = std::sync::OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// How many times this process walked an archive's headers to index it
/// (a replay's own walk not counted): what "indexed once" is tested by.
static WALKS: AtomicUsize = AtomicUsize::new(0);

/// The number of index walks so far in this process.
pub fn walks() -> usize {
    WALKS.load(Ordering::Relaxed)
}

/// Keep the index a whole walk of `path` made, for reading its members
/// back, and save it for other processes when a directory is set.
pub fn remember(path: &Path, stamp: Stamp, index: TarIndex) {
    save(path, stamp, &index);
    let mut c = cache().lock().unwrap_or_else(|p| p.into_inner());
    c.insert(path.to_path_buf(), (stamp, Arc::new(index)));
}

/// The environment variable naming the directory indexes are saved in.
pub const INDEX_DIR_VAR: &str = "CTXLAB_TAR_INDEX_DIR";

/// Set by [`set_index_dir`]; `None` reads [`INDEX_DIR_VAR`].
static DIR: Mutex<Option<Option<PathBuf>>> = Mutex::new(None);

/// Save and look up indexes in `dir` (`None`: nowhere), whatever
/// [`INDEX_DIR_VAR`] says: for a program embedding the library, and tests.
pub fn set_index_dir(dir: Option<PathBuf>) {
    *DIR.lock().unwrap_or_else(|p| p.into_inner()) = Some(dir);
}

fn index_dir() -> Option<PathBuf> {
    if let Some(dir) = DIR.lock().unwrap_or_else(|p| p.into_inner()).clone() {
        return dir;
    }
    std::env::var_os(INDEX_DIR_VAR)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

thread_local! {
    /// Walks of an archive's headers on this thread (per thread, so tests
    /// running beside each other do not see each other's).
    static SCANS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Count one walk of an archive's headers (a corpus replay's or an index's).
pub fn note_scan() {
    SCANS.with(|s| s.set(s.get() + 1));
}

/// The walks of archive headers on this thread so far: a shard that found
/// a saved index makes none.
pub fn scans() -> usize {
    SCANS.with(std::cell::Cell::get)
}

/// Bytes of an archive's start hashed into its saved index's name.
const HEAD_BYTES: u64 = 64 * 1024;

/// A saved index: the archive version it is of, and its members.
#[derive(Serialize, Deserialize)]
struct Saved {
    stamp: Stamp,
    head: String,
    index: TarIndex,
}

/// The saved index's file for this version of the archive, and the hash
/// of its head (`None` without a directory or when it cannot be read).
fn saved_file(path: &Path, stamp: Stamp) -> Option<(PathBuf, String)> {
    use ctxlab_core::shard::sha256_hex;
    let dir = index_dir()?;
    let mut head = Vec::new();
    File::open(path)
        .ok()?
        .take(HEAD_BYTES)
        .read_to_end(&mut head)
        .ok()?;
    let head = sha256_hex(&head);
    let modified = stamp
        .modified
        .and_then(|m| m.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    let name = sha256_hex(format!("{}:{modified}:{head}", stamp.len).as_bytes());
    Some((dir.join(format!("{}.tar-index.json", &name[..32])), head))
}

/// Save `index` of the archive at `path` when a directory is set. A
/// failure only costs the next process a walk, so it is not an error.
fn save(path: &Path, stamp: Stamp, index: &TarIndex) {
    let Some((file, head)) = saved_file(path, stamp) else {
        return;
    };
    let saved = Saved {
        stamp,
        head,
        index: index.clone(),
    };
    let Ok(bytes) = serde_json::to_vec(&saved) else {
        return;
    };
    if let Some(dir) = file.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    // Shards saving the same index at once write the same bytes, each
    // through its own temp file and a rename.
    let tmp = file.with_extension(format!("{}.tmp", std::process::id()));
    if std::fs::write(&tmp, bytes).is_err() || std::fs::rename(&tmp, &file).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// The index of this version of the archive at `path`: kept by this process
/// or saved by another, `None` when neither has it.
pub fn saved(path: &Path, stamp: Stamp) -> Option<Arc<TarIndex>> {
    {
        let cached = cache().lock().unwrap_or_else(|p| p.into_inner());
        if let Some((s, index)) = cached.get(path) {
            if *s == stamp {
                return Some(index.clone());
            }
        }
    }
    let (file, head) = saved_file(path, stamp)?;
    let saved: Saved = serde_json::from_slice(&std::fs::read(file).ok()?).ok()?;
    if saved.stamp != stamp || saved.head != head {
        return None;
    }
    let index = Arc::new(saved.index);
    let mut c = cache().lock().unwrap_or_else(|p| p.into_inner());
    c.insert(path.to_path_buf(), (stamp, index.clone()));
    Some(index)
}

/// Forget every index this process keeps (the saved ones stay): as a
/// fresh process would start.
pub fn forget_kept() {
    cache().lock().unwrap_or_else(|p| p.into_inner()).clear();
}

/// The index of the archive at `path`: the one kept when the archive is
/// unchanged since, else made by one walk of its headers (seeking over the
/// data of a plain `.tar`) and kept.
pub fn index_of(path: &Path, c: Compression) -> LabResult<Arc<TarIndex>> {
    let stamp = Stamp::of(path);
    if let Some(index) = stamp.and_then(|stamp| saved(path, stamp)) {
        return Ok(index);
    }
    WALKS.fetch_add(1, Ordering::Relaxed);
    note_scan();
    let index = walk(path, c).map_err(|e| LabError::Input {
        file: path.to_path_buf(),
        line: 0,
        column: 0,
        message: format!("the archive cannot be indexed: {e}"),
        fix: "the archive is damaged or cut; check it with `tar -tf`".into(),
    })?;
    if let Some(stamp) = stamp {
        remember(path, stamp, index.clone());
    }
    Ok(Arc::new(index))
}

fn walk(path: &Path, c: Compression) -> std::io::Result<TarIndex> {
    fn collect<R: Read>(entries: tar::Entries<'_, R>) -> std::io::Result<TarIndex> {
        let mut index = TarIndex::default();
        for entry in entries {
            let entry = entry?;
            if !entry.header().entry_type().is_file() {
                continue;
            }
            let name = entry.path().map(|p| p.display().to_string());
            let name = name.unwrap_or_else(|_| "(undecodable name)".to_string());
            index.push(&name, entry.raw_file_position(), entry.size());
        }
        Ok(index)
    }
    let io = |e: LabError| std::io::Error::other(e.parts().0);
    if c == Compression::None {
        let file = std::fs::File::open(path)?;
        let mut archive = tar::Archive::new(std::io::BufReader::new(file));
        collect(archive.entries_with_seek()?)
    } else {
        let mut archive = tar::Archive::new(open_archive(path, c).map_err(io)?);
        collect(archive.entries()?)
    }
}

/// The text of member `name` of the archive at `path`, read from its index.
pub fn read_member(path: &Path, c: Compression, name: &str) -> std::io::Result<String> {
    let index = index_of(path, c).map_err(|e| std::io::Error::other(e.parts().0))?;
    let Some(m) = index.find(name) else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("no member {name} in the archive"),
        ));
    };
    if m.size > MAX_TRANSCRIPT_BYTES {
        return Err(std::io::Error::other(format!(
            "member over the {MAX_TRANSCRIPT_BYTES}-byte limit for a transcript"
        )));
    }
    let mut bytes = Vec::with_capacity(m.size as usize);
    if c == Compression::None {
        let mut file = std::fs::File::open(path)?;
        file.seek(SeekFrom::Start(m.offset))?;
        file.take(m.size).read_to_end(&mut bytes)?;
    } else {
        let mut stream = open_archive(path, c).map_err(|e| std::io::Error::other(e.parts().0))?;
        std::io::copy(&mut (&mut stream).take(m.offset), &mut std::io::sink())?;
        stream.take(m.size).read_to_end(&mut bytes)?;
    }
    if bytes.len() as u64 != m.size {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("member {name} is cut short (the archive changed since it was indexed)"),
        ));
    }
    String::from_utf8(bytes).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn archive(path: &Path, members: &[(&str, &str)]) {
        let mut b = tar::Builder::new(std::fs::File::create(path).unwrap());
        for (name, text) in members {
            let mut h = tar::Header::new_gnu();
            h.set_size(text.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            b.append_data(&mut h, name, text.as_bytes()).unwrap();
        }
        b.finish().unwrap();
    }

    #[test]
    fn members_are_read_from_one_index() {
        let dir = tempfile::tempdir().unwrap();
        let members = [("a.txt", "first"), ("d/b.txt", "second member"), ("c", "")];
        let plain = dir.path().join("x.tar");
        archive(&plain, &members);
        let gz = dir.path().join("x.tar.gz");
        let mut enc = flate2::write::GzEncoder::new(
            std::fs::File::create(&gz).unwrap(),
            flate2::Compression::fast(),
        );
        std::io::copy(&mut std::fs::File::open(&plain).unwrap(), &mut enc).unwrap();
        enc.finish().unwrap();
        for (path, c) in [(&plain, Compression::None), (&gz, Compression::Gzip)] {
            let before = walks();
            for _ in 0..2 {
                for (name, text) in members.iter().rev() {
                    assert_eq!(read_member(path, c, name).unwrap(), *text, "{name}");
                }
            }
            // Other tests may index other archives at the same time: at
            // least this one's walk, and not one per read.
            let walked = walks() - before;
            assert!((1..6).contains(&walked), "{walked} walks for 6 reads");
            let e = read_member(path, c, "missing").unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
            let index = index_of(path, c).unwrap();
            let names: Vec<&str> = index.members.iter().map(|m| m.name.as_str()).collect();
            assert_eq!(names, ["a.txt", "d/b.txt", "c"]);
        }
    }

    #[test]
    fn a_rewritten_archive_is_indexed_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("y.tar");
        archive(&path, &[("a", "one")]);
        assert_eq!(read_member(&path, Compression::None, "a").unwrap(), "one");
        archive(&path, &[("b", "zz"), ("a", "longer text")]);
        assert_eq!(
            read_member(&path, Compression::None, "a").unwrap(),
            "longer text"
        );
    }
}
