//! The in-memory backend: every directory's entries, found by the
//! directory's path.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use super::{components, Backend, FileKind, Storage};

#[derive(Debug, Clone)]
enum Node {
    File(Vec<u8>),
    Dir,
    Symlink(PathBuf),
}

/// What `/` is (it is nobody's entry).
static ROOT: Node = Node::Dir;

/// The entries of one directory by name, in byte order (listings).
type Entries = BTreeMap<Box<[u8]>, Node>;

/// Every directory by its resolved path (bytes of an absolute path without
/// `.`, `..`, empty segments or a trailing slash; `/` for the root), with
/// its entries.
///
/// A lookup hashes the parent's path once and then compares short names:
/// a run's paths are up to 4096 chars and share all but their last
/// component, so an ordered map of whole paths compared that shared prefix
/// several times per lookup (a tenth of a sweep cell). A directory is an
/// entry of its parent and a key here.
#[derive(Debug, Clone)]
struct Tree {
    dirs: HashMap<Box<[u8]>, Entries, foldhash::fast::FixedState>,
}

impl Default for Tree {
    fn default() -> Self {
        // A run's layout (padding, results, transcripts) without regrowing.
        let state = foldhash::fast::FixedState::with_seed(0x006d_656d_6673);
        let mut dirs = HashMap::with_capacity_and_hasher(8, state);
        dirs.insert(Box::from(&b"/"[..]), Entries::new());
        Tree { dirs }
    }
}

/// A path's bytes (no UTF-8 validation: the tree compares bytes).
fn bytes(p: &Path) -> &[u8] {
    p.as_os_str().as_encoded_bytes()
}

/// A path's parent and name when its last component is plain (not empty,
/// `.` or `..`, no doubled slash before it) and it is absolute; the parent
/// is then a [`Tree`] key exactly when it is a resolved directory.
fn plain_split(p: &[u8]) -> Option<(&[u8], &[u8])> {
    if p.first() != Some(&b'/') {
        return None;
    }
    let i = memchr::memrchr(b'/', p)?;
    let name = &p[i + 1..];
    if matches!(name, b"" | b"." | b"..") {
        return None;
    }
    match i {
        0 => Some((b"/", name)),
        _ if p[i - 1] == b'/' => None,
        _ => Some((&p[..i], name)),
    }
}

/// A name or path from the tree's bytes, as the string keys gave it before.
fn lossy(b: &[u8]) -> String {
    lossy_str(b).into_owned()
}

/// [`String::from_utf8_lossy`], with valid UTF-8 (every name the lab
/// writes) checked by `from_utf8`, which is several times cheaper on a
/// short name than the lossy chunk walk.
fn lossy_str(b: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(b) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(b),
    }
}

impl Tree {
    /// The node at a resolved path.
    fn get(&self, p: &Path) -> Option<&Node> {
        let p = bytes(p);
        if p == b"/" {
            return Some(&ROOT);
        }
        let (parent, name) = plain_split(p)?;
        self.dirs.get(parent)?.get(name)
    }

    fn get_mut(&mut self, p: &Path) -> Option<&mut Node> {
        let (parent, name) = plain_split(bytes(p))?;
        self.dirs.get_mut(parent)?.get_mut(name)
    }

    fn contains_key(&self, p: &Path) -> bool {
        self.get(p).is_some()
    }

    /// Put `n` at resolved path `p`, whose parent must be a directory.
    fn insert(&mut self, p: &Path, n: Node) -> io::Result<()> {
        let (parent, name) = plain_split(bytes(p)).ok_or_else(|| not_found(p))?;
        name_fits(name, p)?;
        let entries = self.dirs.get_mut(parent).ok_or_else(|| not_found(p))?;
        let is_dir = matches!(n, Node::Dir);
        entries.insert(name.into(), n);
        if is_dir {
            self.dirs.entry(bytes(p).into()).or_default();
        }
        Ok(())
    }

    fn remove(&mut self, p: &Path) -> Option<Node> {
        let (parent, name) = plain_split(bytes(p))?;
        let node = self.dirs.get_mut(parent)?.remove(name)?;
        if matches!(node, Node::Dir) {
            self.dirs.remove(bytes(p));
        }
        Some(node)
    }

    fn values(&self) -> impl Iterator<Item = &Node> {
        self.dirs.values().flat_map(|e| e.values())
    }

    /// Names of the entries of directory `d` (resolved) whose node passes `keep`.
    fn children_where(&self, d: &Path, keep: impl Fn(&Node) -> bool) -> Vec<String> {
        self.dirs
            .get(bytes(d))
            .into_iter()
            .flatten()
            .filter(|(_, n)| keep(n))
            .map(|(name, _)| lossy(name))
            .collect()
    }
}

/// Symlink hops before resolution gives up (Linux's `MAXSYMLINKS`).
const MAX_HOPS: usize = 40;

/// An in-memory file system with POSIX-like semantics for the operations of
/// [`Storage`]: directories must exist before files are created in them,
/// symlinks are followed in the middle of a path and by `read`/`write`, never
/// by `write_new`, `kind`, `remove_file` or `rename`.
#[derive(Debug)]
pub struct MemFs {
    nodes: Mutex<Tree>,
    /// Set once a symlink was ever created: until then a path whose parent
    /// is a directory of the tree and whose name is plain resolves to
    /// itself, and resolution skips the per-component walk (the hot path
    /// of every sweep cell).
    has_symlinks: AtomicBool,
}

impl Default for MemFs {
    fn default() -> Self {
        MemFs {
            nodes: Mutex::new(Tree::default()),
            has_symlinks: AtomicBool::new(false),
        }
    }
}

fn not_found(p: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{}: no such file or directory", p.display()),
    )
}

/// A file where `create_dir_all` needs a directory: as `mkdir` reports it,
/// `AlreadyExists` for the last component, `NotADirectory` for one below
/// which more is to be created.
fn not_a_dir_in_the_way(p: &Path, last: bool) -> io::Error {
    if last {
        err(
            io::ErrorKind::AlreadyExists,
            "exists and is not a directory",
            p,
        )
    } else {
        err(io::ErrorKind::NotADirectory, "not a directory", p)
    }
}

fn err(kind: io::ErrorKind, what: &str, p: &Path) -> io::Error {
    io::Error::new(kind, format!("{}: {what}", p.display()))
}

/// Longest file name, in bytes, that common file systems (ext4, APFS, NTFS
/// in UTF-16 units aside) accept: the in-memory backend refuses what the disk
/// refuses, so a store behaves the same on both.
pub const NAME_MAX: usize = 255;

/// `ENAMETOOLONG` when the name a call would create is longer than [`NAME_MAX`].
fn name_fits(name: &[u8], p: &Path) -> io::Result<()> {
    if name.len() > NAME_MAX {
        return Err(err(io::ErrorKind::InvalidInput, "file name too long", p));
    }
    Ok(())
}

/// `path` as a string when it is absolute and made of plain components only
/// (no empty, `.` or `..` segment, no trailing slash).
fn plain_absolute(path: &Path) -> Option<&str> {
    let s = path.to_str()?;
    let rest = s.strip_prefix('/')?.as_bytes();
    if rest.is_empty() {
        return Some(s);
    }
    let mut start = 0;
    for end in memchr::memchr_iter(b'/', rest).chain([rest.len()]) {
        if matches!(&rest[start..end], b"" | b"." | b"..") {
            return None;
        }
        start = end + 1;
    }
    Some(s)
}

impl MemFs {
    /// An empty tree holding only `/`.
    pub fn new() -> Self {
        Self::default()
    }

    /// A new file system holding a copy of everything this one holds (a
    /// run's empty layout is made once and copied for every run at its
    /// length: copying the tree rehashes no path).
    pub fn duplicate(&self) -> Self {
        MemFs {
            nodes: Mutex::new(self.lock().clone()),
            has_symlinks: AtomicBool::new(self.symlinks()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Tree> {
        // A panic while holding the lock cannot leave a half-made node (every
        // mutation is one insert/remove), so a poisoned map is still consistent.
        self.nodes.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn symlinks(&self) -> bool {
        self.has_symlinks.load(Ordering::Relaxed)
    }

    /// The entries of `path`'s parent and its name, when `path` resolves
    /// to itself without a walk: no symlink exists, its last component is
    /// plain and its parent is a directory of the tree. `None` sends the
    /// caller to the general walk, which also names the right error.
    fn fast<'n, 'p>(&self, nodes: &'n Tree, path: &'p Path) -> Option<(&'n Entries, &'p [u8])> {
        if self.symlinks() {
            return None;
        }
        let (parent, name) = plain_split(bytes(path))?;
        Some((nodes.dirs.get(parent)?, name))
    }

    /// [`MemFs::fast`] for a change.
    fn fast_mut<'n, 'p>(
        &self,
        nodes: &'n mut Tree,
        path: &'p Path,
    ) -> Option<(&'n mut Entries, &'p [u8])> {
        if self.symlinks() {
            return None;
        }
        let (parent, name) = plain_split(bytes(path))?;
        Some((nodes.dirs.get_mut(parent)?, name))
    }

    /// `dir` resolved, when it is a directory (the error a listing reports
    /// otherwise). A key of the tree is a resolved directory already.
    fn dir_in<'p>(&self, nodes: &Tree, dir: &'p Path) -> io::Result<Cow<'p, Path>> {
        if nodes.dirs.contains_key(bytes(dir)) {
            return Ok(Cow::Borrowed(dir));
        }
        let d = Self::resolve(nodes, dir, true)?;
        match nodes.get(&d) {
            Some(Node::Dir) => Ok(Cow::Owned(d)),
            Some(_) => Err(err(io::ErrorKind::NotADirectory, "not a directory", dir)),
            None => Err(not_found(dir)),
        }
    }

    /// [`MemFs::resolve`], borrowing a path that resolves to itself (see
    /// [`MemFs::fast`]).
    fn resolve_in<'p>(
        &self,
        nodes: &Tree,
        path: &'p Path,
        follow_last: bool,
    ) -> io::Result<Cow<'p, Path>> {
        if !self.symlinks()
            && (bytes(path) == b"/"
                || plain_split(bytes(path)).is_some_and(|(p, _)| nodes.dirs.contains_key(p)))
        {
            return Ok(Cow::Borrowed(path));
        }
        Self::resolve(nodes, path, follow_last).map(Cow::Owned)
    }

    /// Resolve `path`: symlinks in the middle are followed, the last one only
    /// when `follow_last`. The result may not exist (its parent does).
    fn resolve(nodes: &Tree, path: &Path, follow_last: bool) -> io::Result<PathBuf> {
        if !path.is_absolute() {
            return Err(err(
                io::ErrorKind::InvalidInput,
                "not an absolute path",
                path,
            ));
        }
        let mut pending: Vec<String> = components(path);
        pending.reverse();
        let mut cur = PathBuf::from("/");
        let mut hops = 0;
        while let Some(c) = pending.pop() {
            if c == ".." {
                cur.pop();
                continue;
            }
            let next = cur.join(&c);
            let last = pending.is_empty();
            match nodes.get(&next) {
                Some(Node::Symlink(target)) if !last || follow_last => {
                    hops += 1;
                    if hops > MAX_HOPS {
                        return Err(err(
                            io::ErrorKind::Other,
                            "too many levels of symbolic links",
                            path,
                        ));
                    }
                    let mut t = components(target);
                    t.reverse();
                    pending.extend(t);
                    if target.is_absolute() {
                        cur = PathBuf::from("/");
                    }
                }
                Some(Node::File(_)) if !last => {
                    return Err(err(io::ErrorKind::NotADirectory, "not a directory", path))
                }
                None if !last => return Err(not_found(path)),
                _ => cur = next,
            }
        }
        Ok(cur)
    }

    fn parent_is_dir(nodes: &Tree, p: &Path) -> io::Result<()> {
        let parent = p.parent().unwrap_or(Path::new("/"));
        match nodes.get(parent) {
            Some(Node::Dir) => Ok(()),
            Some(_) => Err(err(io::ErrorKind::NotADirectory, "not a directory", parent)),
            None => Err(not_found(parent)),
        }
    }

    /// Bytes held by every file (what a full-disk budget is measured against).
    pub fn bytes_used(&self) -> u64 {
        self.lock()
            .values()
            .map(|n| match n {
                Node::File(b) => b.len() as u64,
                _ => 0,
            })
            .sum()
    }

    /// Every path with its kind, sorted (for tests that compare whole trees).
    pub fn tree(&self) -> Vec<(PathBuf, FileKind)> {
        let nodes = self.lock();
        let mut out = vec![(PathBuf::from("/"), FileKind::Dir)];
        for (dir, entries) in &nodes.dirs {
            let dir = PathBuf::from(lossy(dir));
            for (name, n) in entries {
                out.push((dir.join(lossy(name)), kind_of(n)));
            }
        }
        // Path order (component-wise).
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// `create_dir_all` of a plain path while no symlink exists: every
    /// ancestor is the text before one of its slashes, no component walk.
    fn create_plain_dirs(nodes: &mut Tree, s: &str) -> io::Result<()> {
        let ends = memchr::memchr_iter(b'/', s.as_bytes()).skip(1);
        // Below a directory just created nothing exists: no lookup.
        let mut created = false;
        for end in ends.chain([s.len()]) {
            let prefix = Path::new(&s[..end]);
            let found = if created { None } else { nodes.get(prefix) };
            match found {
                None => {
                    nodes.insert(prefix, Node::Dir)?;
                    created = true;
                }
                Some(Node::Dir) => {}
                Some(_) => return Err(not_a_dir_in_the_way(prefix, end == s.len())),
            }
        }
        Ok(())
    }

    /// Is `path` itself (its last component not followed) a symlink?
    fn is_link(&self, nodes: &Tree, path: &Path) -> io::Result<bool> {
        let p = self.resolve_in(nodes, path, false)?;
        Ok(matches!(nodes.get(&p), Some(Node::Symlink(_))))
    }

    /// `create_dir_all` through symlinks and `..`: one component at a time.
    fn create_dirs_walking(&self, nodes: &mut Tree, dir: &Path) -> io::Result<()> {
        let mut cur = PathBuf::from("/");
        let parts = components(dir);
        for (i, c) in parts.iter().enumerate() {
            if c == ".." {
                cur.pop();
                continue;
            }
            cur.push(c);
            // As on disk: `mkdir` finds a dangling symlink in the way (std
            // retries a missing parent with its own `mkdir`), and one that
            // loops too when it is the last component; a loop in the
            // middle is the loop error.
            let last = i + 1 == parts.len();
            let in_the_way = |e: io::Error| match self.is_link(nodes, &cur) {
                Ok(true) if last || e.kind() == io::ErrorKind::NotFound => {
                    not_a_dir_in_the_way(&cur, true)
                }
                _ => e,
            };
            let resolved = self
                .resolve_in(nodes, &cur, true)
                .map_err(in_the_way)?
                .into_owned();
            match nodes.get(&resolved) {
                Some(Node::Dir) => {}
                Some(_) => return Err(not_a_dir_in_the_way(&cur, last)),
                None if self.is_link(nodes, &cur)? => return Err(not_a_dir_in_the_way(&cur, true)),
                None => nodes.insert(&resolved, Node::Dir)?,
            }
            cur = resolved;
        }
        Ok(())
    }
}

fn kind_of(n: &Node) -> FileKind {
    match n {
        Node::File(_) => FileKind::File,
        Node::Dir => FileKind::Dir,
        Node::Symlink(_) => FileKind::Symlink,
    }
}

/// What `write` does to the entry it resolved to (`None`: nothing there).
fn overwrite(slot: Option<&mut Node>, bytes: &[u8], path: &Path) -> io::Result<bool> {
    match slot {
        Some(Node::Dir) => Err(err(io::ErrorKind::IsADirectory, "is a directory", path)),
        // Overwritten in place: no new key, and the old buffer is reused.
        Some(Node::File(old)) => {
            old.clear();
            old.extend_from_slice(bytes);
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// What a read finds at a resolved entry.
fn file_bytes<'n>(node: Option<&'n Node>, path: &Path) -> io::Result<&'n [u8]> {
    match node {
        Some(Node::File(b)) => Ok(b),
        Some(_) => Err(err(io::ErrorKind::IsADirectory, "is a directory", path)),
        None => Err(not_found(path)),
    }
}

impl Storage for MemFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut nodes = self.lock();
        if nodes.dirs.contains_key(bytes(dir)) {
            return Ok(());
        }
        match plain_absolute(dir).filter(|_| !self.symlinks()) {
            Some(s) => Self::create_plain_dirs(&mut nodes, s),
            None => self.create_dirs_walking(&mut nodes, dir),
        }
    }

    fn write_new(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        self.write_new_vec(path, bytes.to_vec())
    }

    fn write_new_vec(&self, path: &Path, bytes: Vec<u8>) -> io::Result<()> {
        let mut nodes = self.lock();
        if let Some((entries, name)) = self.fast_mut(&mut nodes, path) {
            return match entries.entry(name.into()) {
                std::collections::btree_map::Entry::Occupied(_) => {
                    Err(err(io::ErrorKind::AlreadyExists, "file exists", path))
                }
                std::collections::btree_map::Entry::Vacant(v) => {
                    name_fits(v.key(), path)?;
                    v.insert(Node::File(bytes));
                    Ok(())
                }
            };
        }
        let p = Self::resolve(&nodes, path, false)?;
        Self::parent_is_dir(&nodes, &p)?;
        if nodes.contains_key(&p) {
            return Err(err(io::ErrorKind::AlreadyExists, "file exists", path));
        }
        nodes.insert(&p, Node::File(bytes))
    }

    fn write(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let mut nodes = self.lock();
        if let Some((entries, name)) = self.fast_mut(&mut nodes, path) {
            if !overwrite(entries.get_mut(name), bytes, path)? {
                name_fits(name, path)?;
                entries.insert(name.into(), Node::File(bytes.to_vec()));
            }
            return Ok(());
        }
        let p = Self::resolve(&nodes, path, true)?;
        Self::parent_is_dir(&nodes, &p)?;
        if matches!(nodes.get(&p), Some(Node::Dir)) {
            // The root, which no map holds as an entry.
            return Err(err(io::ErrorKind::IsADirectory, "is a directory", path));
        }
        if !overwrite(nodes.get_mut(&p), bytes, path)? {
            nodes.insert(&p, Node::File(bytes.to_vec()))?;
        }
        Ok(())
    }

    fn write_if_absent(&self, path: &Path, bytes: &[u8]) -> io::Result<bool> {
        let mut nodes = self.lock();
        // Without symlinks anything at the entry exists; a vacant entry is written.
        if let Some((entries, name)) = self.fast_mut(&mut nodes, path) {
            return Ok(match entries.entry(name.into()) {
                std::collections::btree_map::Entry::Occupied(_) => false,
                std::collections::btree_map::Entry::Vacant(v) => {
                    v.insert(Node::File(bytes.to_vec()));
                    true
                }
            });
        }
        drop(nodes);
        if self.exists(path) {
            return Ok(false);
        }
        self.write(path, bytes).map(|()| true)
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        self.read_with(path, &mut |b| out = b.to_vec())?;
        Ok(out)
    }

    fn read_with(&self, path: &Path, f: &mut dyn FnMut(&[u8])) -> io::Result<()> {
        let nodes = self.lock();
        let found = match self.fast(&nodes, path) {
            Some((entries, name)) => file_bytes(entries.get(name), path)?,
            None => {
                let p = Self::resolve(&nodes, path, true)?;
                file_bytes(nodes.get(&p), path)?
            }
        };
        f(found);
        Ok(())
    }

    fn kind(&self, path: &Path) -> Option<FileKind> {
        let nodes = self.lock();
        if let Some((entries, name)) = self.fast(&nodes, path) {
            return entries.get(name).map(kind_of);
        }
        let p = Self::resolve(&nodes, path, false).ok()?;
        nodes.get(&p).map(kind_of)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let nodes = self.lock();
        let d = self.dir_in(&nodes, dir)?;
        let mut out = nodes.children_where(&d, |_| true);
        out.sort();
        Ok(out)
    }

    fn list_files(&self, dir: &Path) -> io::Result<Vec<String>> {
        if self.symlinks() {
            // A symlinked entry is a file when its target is: the general walk.
            let mut names = self.list(dir)?;
            names.retain(|name| self.is_file(&dir.join(name)));
            return Ok(names);
        }
        let nodes = self.lock();
        let d = self.dir_in(&nodes, dir)?;
        let mut out = nodes.children_where(&d, |n| matches!(n, Node::File(_)));
        // Already in byte order (names of one map); sorting sorted names is one pass.
        out.sort();
        Ok(out)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut nodes = self.lock();
        let p = self.resolve_in(&nodes, path, false)?;
        match nodes.get(&p) {
            Some(Node::Dir) => Err(err(io::ErrorKind::IsADirectory, "is a directory", path)),
            Some(_) => {
                nodes.remove(&p);
                Ok(())
            }
            None => Err(not_found(path)),
        }
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        let mut nodes = self.lock();
        let p = self.resolve_in(&nodes, path, false)?;
        match nodes.get(&p) {
            Some(Node::Dir) if nodes.dirs.get(bytes(&p)).is_some_and(|e| !e.is_empty()) => {
                Err(err(
                    io::ErrorKind::DirectoryNotEmpty,
                    "directory not empty",
                    path,
                ))
            }
            Some(Node::Dir) => {
                nodes.remove(&p);
                Ok(())
            }
            Some(_) => Err(err(io::ErrorKind::NotADirectory, "not a directory", path)),
            None => Err(not_found(path)),
        }
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut nodes = self.lock();
        let f = self.resolve_in(&nodes, from, false)?;
        let t = self.resolve_in(&nodes, to, false)?;
        Self::parent_is_dir(&nodes, &t)?;
        match (nodes.get(&f), nodes.get(&t)) {
            (None, _) => Err(not_found(from)),
            (Some(Node::Dir), _) | (_, Some(Node::Dir)) => Err(err(
                io::ErrorKind::IsADirectory,
                "renaming directories is not supported",
                from,
            )),
            (Some(_), _) => {
                let node = nodes.remove(&f).expect("checked above");
                nodes.insert(&t, node)
            }
        }
    }

    fn symlink(&self, target: &Path, link: &Path) -> io::Result<()> {
        let mut nodes = self.lock();
        let p = self.resolve_in(&nodes, link, false)?;
        Self::parent_is_dir(&nodes, &p)?;
        if nodes.contains_key(&p) {
            return Err(err(io::ErrorKind::AlreadyExists, "file exists", link));
        }
        self.has_symlinks.store(true, Ordering::Relaxed);
        nodes.insert(&p, Node::Symlink(target.to_path_buf()))
    }

    fn read_link(&self, link: &Path) -> io::Result<PathBuf> {
        let nodes = self.lock();
        let p = self.resolve_in(&nodes, link, false)?;
        match nodes.get(&p) {
            Some(Node::Symlink(t)) => Ok(t.clone()),
            Some(_) => Err(err(io::ErrorKind::InvalidInput, "not a symlink", link)),
            None => Err(not_found(link)),
        }
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        let nodes = self.lock();
        let p = self.resolve_in(&nodes, path, true)?;
        if nodes.contains_key(&p) {
            Ok(p.into_owned())
        } else {
            Err(not_found(path))
        }
    }

    fn sync(&self, path: &Path) -> io::Result<()> {
        let nodes = self.lock();
        let p = self.resolve_in(&nodes, path, true)?;
        if nodes.contains_key(&p) {
            Ok(())
        } else {
            Err(not_found(path))
        }
    }

    fn backend(&self) -> Backend {
        Backend::Mem
    }

    fn visit_files(
        &self,
        dir: &Path,
        f: &mut dyn FnMut(&str, io::Result<&[u8]>),
    ) -> io::Result<()> {
        if self.symlinks() {
            // A symlinked entry is a file when its target is: the general walk.
            return super::visit_files_by_reads(self, dir, f);
        }
        let nodes = self.lock();
        let d = self.dir_in(&nodes, dir)?;
        // Names of one byte-ordered map: the order of `list_files`.
        for (name, node) in nodes.dirs.get(bytes(&d)).into_iter().flatten() {
            if let Node::File(b) = node {
                f(&lossy_str(name), Ok(b));
            }
        }
        Ok(())
    }
}
