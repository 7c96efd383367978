//! The in-memory backend: a map from absolute virtual paths to nodes.

use std::borrow::Cow;
use std::collections::BTreeMap;
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

/// The nodes keyed by their path as a string: byte comparisons instead of
/// `PathBuf`'s component-wise ones, which were a third of a sweep cell.
#[derive(Debug, Default)]
struct Tree(BTreeMap<String, Node>);

fn key(p: &Path) -> Cow<'_, str> {
    // `to_str` validates a word at a time; `to_string_lossy` walks byte by
    // byte even when the path is valid (a tenth of a sweep cell).
    match p.to_str() {
        Some(s) => Cow::Borrowed(s),
        None => p.to_string_lossy(),
    }
}

/// `path` as a string when it is absolute and made of plain components only
/// (no empty, `.` or `..` segment, no trailing slash): then it is already in
/// the form the tree keys use, and its parent is the text before the last `/`.
fn plain_absolute(path: &Path) -> Option<&str> {
    let s = path.to_str()?;
    let rest = s.strip_prefix('/')?.as_bytes();
    if rest.is_empty() {
        return Some(s);
    }
    // Byte-wise: a `/`-split walks chars, and paths are up to 4096 long.
    let mut start = 0;
    for end in memchr::memchr_iter(b'/', rest).chain([rest.len()]) {
        if matches!(&rest[start..end], b"" | b"." | b"..") {
            return None;
        }
        start = end + 1;
    }
    Some(s)
}

/// Parent of a [`plain_absolute`] path (`None` for `/`).
fn plain_parent(s: &str) -> Option<&str> {
    match s.rfind('/')? {
        0 if s.len() == 1 => None,
        0 => Some("/"),
        i => Some(&s[..i]),
    }
}

impl Tree {
    fn get(&self, p: &Path) -> Option<&Node> {
        self.0.get(&*key(p))
    }
    fn contains_key(&self, p: &Path) -> bool {
        self.0.contains_key(&*key(p))
    }
    fn insert(&mut self, p: &Path, n: Node) {
        self.0.insert(key(p).into_owned(), n);
    }
    fn remove(&mut self, p: &Path) -> Option<Node> {
        self.0.remove(&*key(p))
    }
    fn values(&self) -> impl Iterator<Item = &Node> {
        self.0.values()
    }
    /// Names of the direct children of directory `d` (a key range: every
    /// descendant of `d` starts with `d/`).
    fn children(&self, d: &Path) -> Vec<String> {
        self.children_where(d, |_| true)
    }

    /// [`Tree::children`] whose node passes `keep`.
    fn children_where(&self, d: &Path, keep: impl Fn(&Node) -> bool) -> Vec<String> {
        let d = key(d);
        let prefix = if d == "/" {
            d.into_owned()
        } else {
            format!("{d}/")
        };
        self.0
            .range::<str, _>((
                std::ops::Bound::Included(prefix.as_str()),
                std::ops::Bound::Unbounded,
            ))
            .take_while(|(k, _)| k.starts_with(&prefix))
            .filter(|(_, n)| keep(n))
            .map(|(k, _)| &k[prefix.len()..])
            .filter(|rest| !rest.is_empty() && !rest.contains('/'))
            .map(str::to_string)
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
    /// Set once a symlink was ever created: until then a plain absolute path
    /// resolves to itself, and resolution skips the per-component walk (the
    /// hot path of every sweep cell).
    has_symlinks: AtomicBool,
}

impl Default for MemFs {
    fn default() -> Self {
        let mut nodes = Tree::default();
        nodes.insert(Path::new("/"), Node::Dir);
        MemFs {
            nodes: Mutex::new(nodes),
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

impl MemFs {
    /// An empty tree holding only `/`.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Tree> {
        // A panic while holding the lock cannot leave a half-made node (every
        // mutation is one insert/remove), so a poisoned map is still consistent.
        self.nodes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `dir` resolved, when it is a directory (the error a listing reports
    /// otherwise).
    fn dir_in<'p>(&self, nodes: &Tree, dir: &'p Path) -> io::Result<Cow<'p, Path>> {
        let d = self.resolve_in(nodes, dir, true)?;
        match nodes.get(&d) {
            Some(Node::Dir) => Ok(d),
            Some(_) => Err(err(io::ErrorKind::NotADirectory, "not a directory", dir)),
            None => Err(not_found(dir)),
        }
    }

    /// [`MemFs::resolve`], with the fast path of a tree without symlinks: a
    /// path of plain components whose parent is a directory is its own
    /// resolution, returned without a component walk or a copy.
    fn resolve_in<'p>(
        &self,
        nodes: &Tree,
        path: &'p Path,
        follow_last: bool,
    ) -> io::Result<Cow<'p, Path>> {
        if !self.has_symlinks.load(Ordering::Relaxed) {
            if let Some(s) = plain_absolute(path) {
                match plain_parent(s) {
                    None => return Ok(Cow::Borrowed(path)),
                    Some(parent) if matches!(nodes.0.get(parent), Some(Node::Dir)) => {
                        return Ok(Cow::Borrowed(path))
                    }
                    // A missing or non-directory parent: the walk names the right error.
                    Some(_) => {}
                }
            }
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

    /// [`MemFs::parent_is_dir`] for a path from [`MemFs::resolve_in`]: a
    /// borrowed answer came from the fast path, which already found the
    /// parent a directory.
    fn parent_is_dir_unless_fast(nodes: &Tree, resolved: &Path, fast: bool) -> io::Result<()> {
        if fast {
            Ok(())
        } else {
            Self::parent_is_dir(nodes, resolved)
        }
    }

    fn parent_is_dir(nodes: &Tree, p: &Path) -> io::Result<()> {
        let parent = match plain_absolute(p) {
            Some(s) => Path::new(plain_parent(s).unwrap_or("/")),
            None => p.parent().unwrap_or(Path::new("/")),
        };
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
        let mut out: Vec<(PathBuf, FileKind)> = self
            .lock()
            .0
            .iter()
            .map(|(p, n)| (PathBuf::from(p), kind_of(n)))
            .collect();
        // Path order (component-wise), as before the keys were strings.
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }
}

fn kind_of(n: &Node) -> FileKind {
    match n {
        Node::File(_) => FileKind::File,
        Node::Dir => FileKind::Dir,
        Node::Symlink(_) => FileKind::Symlink,
    }
}

impl Storage for MemFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut nodes = self.lock();
        if let Some(s) = plain_absolute(dir).filter(|_| !self.has_symlinks.load(Ordering::Relaxed))
        {
            // Without symlinks or `..`, every ancestor of a plain path is the
            // text before one of its slashes: no component walk, no copies.
            let ends = memchr::memchr_iter(b'/', s.as_bytes()).skip(1);
            for end in ends.chain([s.len()]) {
                let prefix = &s[..end];
                match nodes.0.get(prefix) {
                    Some(Node::Dir) => {}
                    Some(_) => return Err(not_a_dir_in_the_way(Path::new(prefix), end == s.len())),
                    None => {
                        nodes.0.insert(prefix.to_string(), Node::Dir);
                    }
                }
            }
            return Ok(());
        }
        let mut cur = PathBuf::from("/");
        let parts = components(dir);
        for (i, c) in parts.iter().enumerate() {
            if c == ".." {
                cur.pop();
                continue;
            }
            cur.push(c);
            let resolved = self.resolve_in(&nodes, &cur, true)?;
            match nodes.get(&resolved) {
                Some(Node::Dir) => cur = resolved.into_owned(),
                Some(_) => return Err(not_a_dir_in_the_way(&cur, i + 1 == parts.len())),
                None => {
                    nodes.insert(&resolved, Node::Dir);
                    cur = resolved.into_owned();
                }
            }
        }
        Ok(())
    }

    fn write_new(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let mut nodes = self.lock();
        let p = self.resolve_in(&nodes, path, false)?;
        Self::parent_is_dir_unless_fast(&nodes, &p, matches!(p, Cow::Borrowed(_)))?;
        if nodes.contains_key(&p) {
            return Err(err(io::ErrorKind::AlreadyExists, "file exists", path));
        }
        nodes.insert(&p, Node::File(bytes.to_vec()));
        Ok(())
    }

    fn write(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let mut nodes = self.lock();
        let p = self.resolve_in(&nodes, path, true)?;
        Self::parent_is_dir_unless_fast(&nodes, &p, matches!(p, Cow::Borrowed(_)))?;
        match nodes.0.get_mut(&*key(&p)) {
            Some(Node::Dir) => Err(err(io::ErrorKind::IsADirectory, "is a directory", path)),
            // Overwritten in place: no new key, and the old buffer is reused.
            Some(Node::File(old)) => {
                old.clear();
                old.extend_from_slice(bytes);
                Ok(())
            }
            _ => {
                nodes.insert(&p, Node::File(bytes.to_vec()));
                Ok(())
            }
        }
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let nodes = self.lock();
        let p = self.resolve_in(&nodes, path, true)?;
        match nodes.get(&p) {
            Some(Node::File(b)) => Ok(b.clone()),
            Some(_) => Err(err(io::ErrorKind::IsADirectory, "is a directory", path)),
            None => Err(not_found(path)),
        }
    }

    fn read_with(&self, path: &Path, f: &mut dyn FnMut(&[u8])) -> io::Result<()> {
        let nodes = self.lock();
        let p = self.resolve_in(&nodes, path, true)?;
        match nodes.get(&p) {
            Some(Node::File(b)) => {
                f(b);
                Ok(())
            }
            Some(_) => Err(err(io::ErrorKind::IsADirectory, "is a directory", path)),
            None => Err(not_found(path)),
        }
    }

    fn kind(&self, path: &Path) -> Option<FileKind> {
        let nodes = self.lock();
        let p = self.resolve_in(&nodes, path, false).ok()?;
        nodes.get(&p).map(kind_of)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let nodes = self.lock();
        let d = self.dir_in(&nodes, dir)?;
        let mut out = nodes.children(&d);
        out.sort();
        Ok(out)
    }

    fn list_files(&self, dir: &Path) -> io::Result<Vec<String>> {
        if self.has_symlinks.load(Ordering::Relaxed) {
            // A symlinked entry is a file when its target is: the general walk.
            let mut names = self.list(dir)?;
            names.retain(|name| self.is_file(&dir.join(name)));
            return Ok(names);
        }
        let nodes = self.lock();
        let d = self.dir_in(&nodes, dir)?;
        let mut out = nodes.children_where(&d, |n| matches!(n, Node::File(_)));
        // Already in byte order (a key range); sorting sorted names is one pass.
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
                nodes.insert(&t, node);
                Ok(())
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
        nodes.insert(&p, Node::Symlink(target.to_path_buf()));
        Ok(())
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
}
