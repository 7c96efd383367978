//! Corpus input: many sessions named by one argument.
//!
//! An input of `lab import` / `lab replay` is a file, a directory (every
//! regular file under it, recursively, in path order; in an opencode storage
//! directory, the session files only), a glob (`'trajs/*/*.json'`,
//! quoted so the shell leaves it; `**` spans directories), or a tar archive
//! (`.tar`, `.tar.xz` / `.txz`, `.tar.gz` / `.tgz`) read member by member
//! without unpacking, or a Parquet file (`.parquet`, or starting with
//! `PAR1`) read row by row, one session per row ([`super::parquet_rows`]).
//! Sessions are imported one file or member at a time and handed on before
//! the next is read, so memory is bounded by the largest session, not the
//! corpus.
//!
//! A file or member that is not a session (a CSV, a results summary, a cut
//! archive member) is a [`Member`] whose `sessions` is the error naming it
//! (`ARCHIVE[MEMBER]:line:column` for a member); the rest still imports.
//! Only an archive that cannot be read on (a corrupt compressed stream, a
//! cut tar header) ends its own iteration, with an error naming the archive
//! and the member it stopped at.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{detect_format, import_reader_sessions, ImportOptions, ImportedSession};
use crate::error::{LabError, LabResult};
use crate::input::MAX_TRANSCRIPT_BYTES;

pub use super::tar_index::Compression;

/// One thing to read: a session file, or an archive of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A file holding one session (or a trajectory array).
    File(PathBuf),
    /// A tar archive whose members are session files.
    Archive(PathBuf, Compression),
    /// A Parquet file holding one session per row ([`super::parquet_rows`]).
    Parquet(PathBuf),
}

/// One command-line input and what it names.
#[derive(Debug, Clone)]
pub struct Input {
    /// The argument as given.
    pub name: String,
    /// A corpus (directory, glob or archive) rather than one file: `lab
    /// import` summarises it in one row.
    pub corpus: bool,
    /// Its files and archives, in path order.
    pub items: Vec<Item>,
    /// The directory given, when the argument is one: keys are the paths under it.
    pub root: Option<PathBuf>,
}

impl Input {
    /// The key of `item`, fixed before it is opened: the path under the
    /// directory given (`/`-separated), or the path as given or matched.
    /// A shard is chosen by the key's hash, so moving the corpus's
    /// directory moves no session between shards.
    pub fn key_of(&self, item: &Item) -> String {
        let path = item.path();
        let rel = self
            .root
            .as_deref()
            .and_then(|r| path.strip_prefix(r).ok())
            .unwrap_or(path);
        let parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        parts.join("/")
    }

    /// How the keys of `item`'s members are formed: an archive given on its
    /// own keys its members by their names; one inside a directory or a
    /// glob by `ARCHIVE[MEMBER]`, the archive's key first.
    pub fn member_prefix(&self, item: &Item) -> Option<String> {
        match item {
            Item::Archive(..) if self.root.is_some() || self.items.len() > 1 => {
                Some(self.key_of(item))
            }
            _ => None,
        }
    }
}

impl Item {
    /// The file or archive's path.
    pub fn path(&self) -> &Path {
        match self {
            Item::File(p) | Item::Archive(p, _) | Item::Parquet(p) => p,
        }
    }
}

/// Resolve each argument: a directory is walked, a glob expanded, an archive
/// kept for member-by-member reading; anything else is a file (checked when opened).
pub fn expand(args: &[PathBuf]) -> LabResult<Vec<Input>> {
    args.iter().map(|a| expand_one(a)).collect()
}

/// The files `args` name (directories walked, globs expanded), for readers
/// that take files only; an archive is refused with a way around it.
pub fn plain_files(args: &[PathBuf]) -> LabResult<Vec<PathBuf>> {
    let mut out = Vec::new();
    for item in expand(args)?.into_iter().flat_map(|i| i.items) {
        match item {
            Item::File(p) => out.push(p),
            Item::Archive(p, _) | Item::Parquet(p) => {
                return Err(LabError::usage(
                    format!("{} is an archive: this replay reads files only", p.display()),
                    "unpack it into a temporary directory and pass the directory, or replay it with --profile",
                ))
            }
        }
    }
    Ok(out)
}

fn item(path: PathBuf) -> Item {
    match Compression::of(&path) {
        Some(c) => Item::Archive(path, c),
        None if super::parquet_rows::is_parquet(&path) => Item::Parquet(path),
        None => Item::File(path),
    }
}

fn expand_one(arg: &Path) -> LabResult<Input> {
    let name = arg.display().to_string();
    if arg.is_dir() {
        let mut files = Vec::new();
        walk(arg, &mut files)?;
        files.sort();
        return Ok(Input {
            name,
            corpus: true,
            items: files.into_iter().map(item).collect(),
            root: Some(arg.to_path_buf()),
        });
    }
    if !arg.exists() && name.contains(['*', '?', '[']) {
        return Ok(Input {
            name: name.clone(),
            corpus: true,
            items: glob_files(&name)?.into_iter().map(item).collect(),
            root: None,
        });
    }
    let it = item(arg.to_path_buf());
    let corpus = matches!(it, Item::Archive(..) | Item::Parquet(_));
    Ok(Input {
        name,
        corpus,
        items: vec![it],
        root: None,
    })
}

/// Every regular file under `dir`, and every symbolic link under it to a
/// regular file (a corpus assembled from links is common); a link to a
/// directory is not followed (a link loop must not hang the walk) and is
/// named on stderr.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> LabResult<()> {
    // opencode's storage: its sessions are the files under `session/`;
    // their message and part files are read through them.
    if super::opencode_storage::is_storage_root(dir) {
        return walk(&dir.join("session"), out);
    }
    // An OpenHands events directory is one session, read through its first
    // event file; its conversation's other files (`base_state.json`, the
    // V0 caches) are not sessions.
    if let Some(first) = super::openhands_events::first_event_file(dir, super::format_list::sniff) {
        out.push(first);
        return Ok(());
    }
    if super::openhands_events::first_event_file(&dir.join("events"), super::format_list::sniff)
        .is_some()
    {
        return walk(&dir.join("events"), out);
    }
    let entries = std::fs::read_dir(dir).map_err(|e| LabError::io("reading directory", dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| LabError::io("reading directory", dir, e))?;
        let kind = entry
            .file_type()
            .map_err(|e| LabError::io("reading directory", dir, e))?;
        if kind.is_dir() {
            walk(&entry.path(), out)?;
        } else if kind.is_file() {
            out.push(entry.path());
        } else if kind.is_symlink() {
            match std::fs::metadata(entry.path()) {
                Ok(target) if target.is_file() => out.push(entry.path()),
                Ok(target) if target.is_dir() => eprintln!(
                    "skipped {}: a symbolic link to a directory is not followed (name the directory itself)",
                    entry.path().display()
                ),
                // A dangling link, or one to a device or socket: no file.
                _ => eprintln!(
                    "skipped {}: a symbolic link to no regular file",
                    entry.path().display()
                ),
            }
        }
    }
    Ok(())
}

fn glob_files(pattern: &str) -> LabResult<Vec<PathBuf>> {
    let bad = |message: String| {
        LabError::usage(message, "quote the pattern and use *, ? and [..] (e.g. 'trajs/*/*.traj.json'); ** spans directories")
    };
    let paths = glob::glob(pattern).map_err(|e| bad(format!("bad glob `{pattern}`: {e}")))?;
    let mut files = Vec::new();
    for p in paths {
        let p = p.map_err(|e| {
            let path = e.path().to_path_buf();
            LabError::io("expanding a glob", &path, std::io::Error::from(e))
        })?;
        if p.is_file() {
            files.push(p);
        }
    }
    if files.is_empty() {
        return Err(bad(format!("no file matches `{pattern}`")));
    }
    files.sort();
    Ok(files)
}

/// One file or archive member, imported.
#[derive(Debug)]
pub struct Member {
    /// `FILE`, or `ARCHIVE[MEMBER]` for an archive member.
    pub name: String,
    /// Its key ([`Input::key_of`]; a member's is its name, or
    /// `ARCHIVE[MEMBER]` under a prefix): what a shard is chosen by.
    pub key: String,
    /// Its place among its archive's files (0 for a plain file).
    pub position: usize,
    /// Its sessions, or why it is not a session file.
    pub sessions: LabResult<Vec<ImportedSession>>,
}

/// Import every file and member of `item`, handing each to `f` before the
/// next is read. `lazy` leaves a plain file's main conversation in the file
/// ([`super::import_file_sessions_lazily`]); members are imported whole.
/// The error is the archive's own (it cannot be read on) or `f`'s.
pub fn for_each_member(
    item: &Item,
    options: &ImportOptions,
    lazy: bool,
    f: impl FnMut(Member) -> LabResult<()>,
) -> LabResult<()> {
    let keys = Keys {
        key: item.path().display().to_string(),
        prefix: None,
    };
    for_each_member_where(item, &keys, options, lazy, &mut |_| true, f)
}

/// The key of an item and how its members' keys are formed
/// ([`Input::key_of`], [`Input::member_prefix`]).
#[derive(Debug, Clone)]
pub struct Keys {
    /// The file's key (an archive's own, unused unless it is the prefix).
    pub key: String,
    /// `Some(P)`: a member's key is `P[MEMBER]`; `None`: its name.
    pub prefix: Option<String>,
}

impl Keys {
    /// The keys of `input`'s `item`.
    pub fn of(input: &Input, item: &Item) -> Keys {
        Keys {
            key: input.key_of(item),
            prefix: input.member_prefix(item),
        }
    }

    fn member(&self, member: &str) -> String {
        match &self.prefix {
            Some(p) => format!("{p}[{member}]"),
            None => member.to_string(),
        }
    }
}

/// [`for_each_member`] over the files and members whose key `wanted`
/// accepts; every key is given to `wanted` (in order, before anything of
/// the file or member is read), and only the accepted ones are opened: a
/// shard reads its own sessions. A plain `.tar` is walked by seeking past
/// the members not wanted, a compressed one decompressed through them
/// (their bytes are never imported); either way the walk leaves the
/// archive's index ([`super::tar_index`]) for reading a member back.
pub fn for_each_member_where(
    item: &Item,
    keys: &Keys,
    options: &ImportOptions,
    lazy: bool,
    wanted: &mut dyn FnMut(&str) -> bool,
    mut f: impl FnMut(Member) -> LabResult<()>,
) -> LabResult<()> {
    match item {
        Item::File(path) => {
            if !wanted(&keys.key) {
                return Ok(());
            }
            let sessions = if lazy {
                super::import_file_sessions_lazily(path, options)
            } else {
                super::import_file_sessions(path, options)
            };
            f(Member {
                name: path.display().to_string(),
                key: keys.key.clone(),
                position: 0,
                sessions: sessions.and_then(require_messages),
            })
        }
        Item::Archive(path, c) => archive_members(path, *c, keys, options, wanted, f),
        Item::Parquet(path) => {
            super::parquet_rows::for_each_row(path, &keys.key, options, wanted, &mut |row| {
                f(Member {
                    name: row.name,
                    key: row.key,
                    position: row.position,
                    sessions: row.sessions,
                })
            })
        }
    }
}

/// A single session with nothing to replay is not a session file.
fn require_messages(sessions: Vec<ImportedSession>) -> LabResult<Vec<ImportedSession>> {
    if sessions.len() == 1 {
        sessions[0].require_messages()?;
    }
    Ok(sessions)
}

fn archive_members(
    path: &Path,
    c: Compression,
    keys: &Keys,
    options: &ImportOptions,
    wanted: &mut dyn FnMut(&str) -> bool,
    f: impl FnMut(Member) -> LabResult<()>,
) -> LabResult<()> {
    let stamp = super::tar_index::Stamp::of(path);
    // An index this process kept, or another one saved: the members are
    // listed from it and the wanted ones read at their offsets, with no
    // header walked.
    if let Some(index) = stamp.and_then(|s| super::tar_index::saved(path, s)) {
        return indexed_members(path, c, &index, keys, options, wanted, f);
    }
    super::tar_index::note_scan();
    if c == Compression::None {
        // Seekable: the members not wanted are skipped, not read.
        let mut archive = tar::Archive::new(super::tar_index::open_raw(path)?);
        let entries = archive
            .entries_with_seek()
            .map_err(|e| broken(path, "from its start", e))?;
        walk_members(path, entries, stamp, keys, options, wanted, f)
    } else {
        let mut archive = tar::Archive::new(super::tar_index::open_archive(path, c)?);
        let entries = archive
            .entries()
            .map_err(|e| broken(path, "from its start", e))?;
        walk_members(path, entries, stamp, keys, options, wanted, f)
    }
}

/// [`archive_members`] from an index: every member listed in archive
/// order, the wanted ones read from their offsets (a plain `.tar` seeks to
/// each, a compressed one is decompressed up to the last one wanted).
fn indexed_members(
    path: &Path,
    c: Compression,
    index: &super::tar_index::TarIndex,
    keys: &Keys,
    options: &ImportOptions,
    wanted: &mut dyn FnMut(&str) -> bool,
    mut f: impl FnMut(Member) -> LabResult<()>,
) -> LabResult<()> {
    use std::io::{Seek, SeekFrom};
    let mut plain: Option<BufReader<std::fs::File>> = None;
    let mut stream: Option<Box<dyn Read>> = None;
    // Where the compressed stream is, in uncompressed bytes.
    let mut at = 0u64;
    for (position, m) in index.members.iter().enumerate() {
        let key = keys.member(&m.name);
        if !wanted(&key) {
            continue;
        }
        let name = format!("{}[{}]", path.display(), m.name);
        let cut = |e: std::io::Error| broken(path, &format!("member {}", m.name), e);
        let s: &mut dyn Read = if c == Compression::None {
            if plain.is_none() {
                plain = Some(super::tar_index::open_raw(path)?);
            }
            let file = plain.as_mut().expect("opened above");
            file.seek(SeekFrom::Start(m.offset)).map_err(cut)?;
            file
        } else {
            if stream.is_none() {
                stream = Some(super::tar_index::open_archive(path, c)?);
            }
            let s = stream.as_mut().expect("opened above");
            // Members come in archive order: only forward.
            let gap = m.offset.checked_sub(at).ok_or_else(|| {
                broken(
                    path,
                    "its saved index",
                    std::io::Error::other("members out of order"),
                )
            })?;
            std::io::copy(&mut s.take(gap), &mut std::io::sink()).map_err(cut)?;
            at = m.offset + m.size;
            s
        };
        let mut member = s.take(m.size);
        let sessions =
            import_member(&mut member, m.size, &name, &m.name, options).map_err(damaged_member);
        // What the importer left unread of the member is passed over, so the
        // stream stands at the member's end.
        std::io::copy(&mut member, &mut std::io::sink()).map_err(cut)?;
        f(Member {
            name,
            key,
            position,
            sessions,
        })?;
    }
    Ok(())
}

fn broken(path: &Path, after: &str, e: std::io::Error) -> LabError {
    LabError::Input {
        file: path.to_path_buf(),
        line: 0,
        column: 0,
        message: format!("the archive cannot be read on {after}: {e}"),
        fix: "the archive is damaged or cut; check it with `tar -tf`, or unpack what it holds and import the directory".to_string(),
    }
}

fn walk_members<R: Read>(
    path: &Path,
    entries: tar::Entries<'_, R>,
    stamp: Option<super::tar_index::Stamp>,
    keys: &Keys,
    options: &ImportOptions,
    wanted: &mut dyn FnMut(&str) -> bool,
    mut f: impl FnMut(Member) -> LabResult<()>,
) -> LabResult<()> {
    let mut last = String::from("from its start");
    let mut index = super::tar_index::TarIndex::default();
    let mut position = 0;
    for entry in entries {
        let entry = entry.map_err(|e| broken(path, &last, e))?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let member = entry.path().map(|p| p.display().to_string());
        let member = member.unwrap_or_else(|_| "(undecodable name)".to_string());
        index.push(&member, entry.raw_file_position(), entry.size());
        last = format!("after member {member}");
        let key = keys.member(&member);
        position += 1;
        if !wanted(&key) {
            continue;
        }
        let name = format!("{}[{member}]", path.display());
        let size = entry.size();
        let sessions = import_member(entry, size, &name, &member, options).map_err(damaged_member);
        f(Member {
            name,
            key,
            position: position - 1,
            sessions,
        })?;
    }
    // Only a walk to the end is the archive's whole index.
    if let Some(stamp) = stamp {
        super::tar_index::remember(path, stamp, index);
    }
    Ok(())
}

/// A read error inside a member is the archive's damage, not the file
/// system's: the archive opened, and its bytes (a cut or corrupt
/// compressed stream) do not decode. Bad input (exit 3), named by member.
fn damaged_member(e: LabError) -> LabError {
    match e {
        LabError::Io { path, source, .. } => LabError::Input {
            file: path,
            line: 0,
            column: 0,
            message: format!("the archive member cannot be read to its end: {source}"),
            fix: "the archive is damaged or cut; check it with `tar -tf`, or unpack what it holds and import the directory".to_string(),
        },
        e => e,
    }
}

/// One archive member's sessions, labelled by the member's path.
fn import_member<R: Read>(
    entry: R,
    size: u64,
    name: &str,
    member: &str,
    options: &ImportOptions,
) -> LabResult<Vec<ImportedSession>> {
    let source = PathBuf::from(name);
    if size > MAX_TRANSCRIPT_BYTES {
        return Err(LabError::Input {
            file: source,
            line: 0,
            column: 0,
            message: format!(
                "member of {size} bytes, over the {MAX_TRANSCRIPT_BYTES}-byte limit for a transcript"
            ),
            fix: "split the session, or leave it out of the archive".to_string(),
        });
    }
    let mut reader = BufReader::with_capacity(64 * 1024, entry);
    let format = match options.format {
        Some(f) => f,
        None => {
            let head = reader
                .fill_buf()
                .map_err(|e| LabError::io("reading archive member", &source, e))?;
            detect_format(Path::new(member), head)
        }
    };
    let mut sessions = import_reader_sessions(reader, &source, format, options)?;
    let several = sessions.len() > 1;
    for (i, s) in sessions.iter_mut().enumerate() {
        s.label = if several {
            format!("{member}#{i}")
        } else {
            member.to_string()
        };
    }
    require_messages(sessions)
}

/// Counts over a corpus: what `lab import` prints for a directory, glob or archive.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CorpusSummary {
    /// Sessions imported.
    pub sessions: usize,
    /// Messages in their main conversations.
    pub messages: usize,
    /// Assistant messages (= model calls).
    pub assistant_messages: usize,
    /// `tool_use` blocks in the main conversations (text actions included).
    pub tool_calls: usize,
    /// `tool_result` blocks in the main conversations.
    pub tool_results: usize,
    /// Sessions whose actions were text, imported as tool calls.
    pub text_action_sessions: usize,
    /// Sessions by format name.
    pub formats: BTreeMap<String, usize>,
    /// Diagnostics by kind, over every session.
    pub damage: BTreeMap<String, usize>,
    /// Files or members that are not sessions (each reported on its own).
    pub not_sessions: usize,
}

impl CorpusSummary {
    /// Count one imported session.
    pub fn add(&mut self, s: &ImportedSession) {
        let sum = s.summary();
        self.sessions += 1;
        self.messages += sum.main_messages;
        self.assistant_messages += sum.main_assistant_messages;
        self.tool_calls += sum.main_tool_uses;
        self.tool_results += sum.main_tool_results;
        if s.action_shape == super::ActionShape::TextActions {
            self.text_action_sessions += 1;
        }
        *self.formats.entry(s.format.name().to_string()).or_insert(0) += 1;
        for (kind, n) in sum.diagnostics {
            *self.damage.entry(kind).or_insert(0) += n;
        }
    }
}

/// Import every session of `input`, one at a time: the summary, each
/// session's diagnostic lines and each refused member's error passed to
/// `warn`. Only an archive or Parquet file that cannot be read on is an
/// error (the first; [`summarise_on`] goes on past it).
pub fn summarise(
    input: &Input,
    options: &ImportOptions,
    warn: &mut dyn FnMut(String),
) -> LabResult<CorpusSummary> {
    let mut damage = Vec::new();
    let summary = summarise_on(input, options, warn, &mut damage)?;
    match damage.into_iter().next() {
        None => Ok(summary),
        Some(e) => Err(e),
    }
}

/// [`summarise`], going on past an archive or Parquet file that cannot be
/// read on: its error is pushed to `damage` and the other files are
/// read, so one damaged file does not hide a directory. A usage or
/// file-system error still ends the walk.
pub fn summarise_on(
    input: &Input,
    options: &ImportOptions,
    warn: &mut dyn FnMut(String),
    damage: &mut Vec<LabError>,
) -> LabResult<CorpusSummary> {
    let mut summary = CorpusSummary::default();
    for item in &input.items {
        let read = for_each_member(item, options, false, |m| {
            match m.sessions {
                Ok(sessions) => {
                    for s in &sessions {
                        s.diagnostic_lines().into_iter().for_each(&mut *warn);
                        summary.add(s);
                    }
                }
                Err(e) => {
                    summary.not_sessions += 1;
                    warn(not_a_session(&e));
                }
            }
            Ok(())
        });
        match read {
            Ok(()) => {}
            Err(e @ (LabError::Usage { .. } | LabError::Io { .. })) => return Err(e),
            Err(e) => damage.push(e),
        }
    }
    Ok(summary)
}

/// The warning for a corpus file or member that is not a session (the
/// error names it, with its position and a fix).
pub fn not_a_session(e: &LabError) -> String {
    let text = e.to_string();
    format!(
        "skipped, not a session: {}",
        text.trim_start_matches("error: ")
    )
}

const COLUMNS: [&str; 9] = [
    "corpus",
    "sessions",
    "messages (model calls)",
    "tool calls",
    "tool results",
    "text-action sessions",
    "formats",
    "damage",
    "not sessions",
];

/// The corpus table: one row per corpus input, as a table, Markdown or JSON.
pub fn render(rows: &[(String, CorpusSummary)], format: crate::render::Format) -> String {
    if format == crate::render::Format::Json {
        let v: Vec<serde_json::Value> = rows
            .iter()
            .map(|(c, s)| serde_json::json!({ "corpus": c, "summary": s }))
            .collect();
        let mut out = serde_json::to_string_pretty(&v).expect("summaries serialise");
        out.push('\n');
        return out;
    }
    let join = |m: &BTreeMap<String, usize>| {
        if m.is_empty() {
            "-".to_string()
        } else {
            let parts: Vec<String> = m.iter().map(|(k, v)| format!("{k} {v}")).collect();
            parts.join(", ")
        }
    };
    let cells = rows
        .iter()
        .map(|(c, s)| {
            vec![
                c.clone(),
                s.sessions.to_string(),
                format!("{} ({})", s.messages, s.assistant_messages),
                s.tool_calls.to_string(),
                s.tool_results.to_string(),
                s.text_action_sessions.to_string(),
                join(&s.formats),
                join(&s.damage),
                s.not_sessions.to_string(),
            ]
        })
        .collect();
    let mut out = crate::render::table(&COLUMNS, cells, format == crate::render::Format::Markdown);
    out.push('\n');
    out
}
