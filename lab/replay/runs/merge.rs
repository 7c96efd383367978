//! `lab replay --merge PART…`, streamed: any number of parts, never all
//! their records at once.
//!
//! A part is a corpus replay's JSON ([`super::shard::CorpusJson`] under
//! `corpus`), its records in corpus order. The merge reads each part twice,
//! record by record:
//!
//! 1. **Check** (`check_part`): the part without its records (its
//!    *skeleton*: the text with `corpus.records` emptied, a few kilobytes)
//!    is parsed for its spec, shard and checksum; then its records are read
//!    one at a time to recompute the checksum as a running SHA-256, to check
//!    that they are in corpus order and of the part's shard, and to count
//!    them into the part's aggregate and the whole one. Every refusal
//!    (another run, a shard missing or twice, a part cut or edited) happens
//!    here, before a byte is written.
//! 2. **Write**: the parts' records merged k ways by their `order`
//!    (each part already sorted), each written as it is taken. With more
//!    parts than [`OPEN_AT_ONCE`] a part is reopened at its byte offset for
//!    each record rather than kept open.
//!
//! What is held: one record per part (the merge's heads), and the
//! aggregate's numbers, one per session, policy and counter, exactly what
//! the unsharded run holds to print exact medians and 95th percentiles.
//! With `--out FILE` the output goes to `.FILE.tmp`, renamed when whole; a
//! killed merge leaves FILE as it was, and a re-run starts over (the merge
//! is a pure function of the parts).

use std::collections::{BinaryHeap, HashMap};
use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::shard::{check_same, part_error, CorpusJson, SessionRecords, REPLAY_SHARD};
use crate::error::{LabError, LabResult};
use crate::replay::observe::aggregate::{Aggregate, PolicyAggregate};

/// Parts kept open at once in the write pass; past it each is reopened at
/// its offset per record (a file descriptor limit is often 1,024).
pub const OPEN_AT_ONCE: usize = 256;

/// How the merged run is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeFormat {
    /// The aggregate table (Markdown when `true`).
    Table(bool),
    /// The whole run's JSON.
    Json,
    /// One record per line.
    Jsonl,
}

/// A place in a file: byte offset, 1-based line and character column.
#[derive(Debug, Clone, Copy)]
struct Pos {
    offset: u64,
    line: usize,
    col: usize,
}

impl Pos {
    const START: Pos = Pos {
        offset: 0,
        line: 1,
        col: 1,
    };

    fn advance(&mut self, b: u8) {
        self.offset += 1;
        if b == b'\n' {
            self.line += 1;
            self.col = 1;
        } else if b & 0xC0 != 0x80 {
            // Continuation bytes of a UTF-8 character add no column.
            self.col += 1;
        }
    }
}

/// Where a part's records are, and what lies around them.
#[derive(Debug, Clone, Copy)]
struct Gap {
    /// Offset in the skeleton of the `]` that closes the emptied array.
    skeleton_at: usize,
    /// The file just after the array's `[`.
    start: Pos,
    /// The file at the array's `]`.
    end: Pos,
}

/// A part without its records: the JSON text with `corpus.records`
/// emptied, and where in the file the records were.
struct Skeleton {
    text: Vec<u8>,
    gap: Option<Gap>,
}

impl Skeleton {
    /// The file's line and column of a byte of the skeleton.
    fn place(&self, at: usize) -> (usize, usize) {
        let text = String::from_utf8_lossy(&self.text);
        let at = at.min(text.len());
        let (line, col) = crate::input::line_col(&text, at);
        let Some(g) = self.gap else {
            return (line, col);
        };
        if at < g.skeleton_at {
            return (line, col);
        }
        let (gap_line, gap_col) = crate::input::line_col(&text, g.skeleton_at);
        if line == gap_line {
            (g.end.line, g.end.col + (col - gap_col))
        } else {
            (line + g.end.line - g.start.line, col)
        }
    }

    /// An error at `key`'s first occurrence in the skeleton.
    fn at_key(&self, path: &Path, key: &str, message: String, fix: &str) -> LabError {
        let text = String::from_utf8_lossy(&self.text);
        let at = text.find(&format!("\"{key}\"")).unwrap_or(0);
        let (line, column) = self.place(at);
        input_error(path, line, column, message, fix)
    }
}

fn input_error(path: &Path, line: usize, column: usize, message: String, fix: &str) -> LabError {
    LabError::Input {
        file: path.to_path_buf(),
        line,
        column,
        message,
        fix: fix.to_string(),
    }
}

const NOT_A_PART: &str = "not the JSON of a corpus replay";
const PASS_PARTS: &str =
    "pass files written by `lab replay CORPUS --policy … --shard i/n --format json`";

fn read_error(path: &Path, e: std::io::Error) -> LabError {
    LabError::io("reading a replay part", path, e)
}

/// One container the skeleton scan is inside.
struct Frame {
    object: bool,
    /// The key whose value is being read (objects).
    key: Vec<u8>,
    /// The next string is a key.
    expect_key: bool,
}

/// Where a byte of JSON text falls with respect to strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Str {
    /// Outside every string (an opening quote included: see [`Strings::open`]).
    Outside,
    /// Inside a string, an escape or escaped byte included.
    Inside,
    /// The quote that closes a string.
    Closed,
}

/// The string and escape state of a byte-wise JSON scan: the one piece
/// the skeleton scan and the record reader share.
#[derive(Debug, Default)]
struct Strings {
    inside: bool,
    escaped: bool,
}

impl Strings {
    /// Feed `b`, the next byte; says where it fell.
    fn step(&mut self, b: u8) -> Str {
        if !self.inside {
            return Str::Outside;
        }
        if self.escaped {
            self.escaped = false;
        } else if b == b'\\' {
            self.escaped = true;
        } else if b == b'"' {
            self.inside = false;
            return Str::Closed;
        }
        Str::Inside
    }

    /// The byte just stepped, outside strings, was an opening quote.
    fn open(&mut self) {
        self.inside = true;
    }
}

/// Scan a part once, copying everything but the records array's content.
fn skeleton(path: &Path) -> LabResult<Skeleton> {
    let file = File::open(path).map_err(|e| read_error(path, e))?;
    let mut r = BufReader::with_capacity(64 * 1024, file);
    let mut text = Vec::new();
    let mut pos = Pos::START;
    let mut stack: Vec<Frame> = Vec::new();
    let mut strings = Strings::default();
    let mut key: Option<Vec<u8>> = None;
    let mut gap: Option<Gap> = None;
    // Inside the records array: its nesting depth, and its own string state.
    let mut skipping: Option<usize> = None;
    loop {
        let buf = r.fill_buf().map_err(|e| read_error(path, e))?;
        if buf.is_empty() {
            break;
        }
        for &b in buf {
            let here = pos;
            pos.advance(b);
            if let Some(depth) = skipping.as_mut() {
                if strings.step(b) != Str::Outside {
                    continue;
                }
                match b {
                    b'"' => strings.open(),
                    b'{' | b'[' => *depth += 1,
                    b']' if *depth == 0 => {
                        skipping = None;
                        if let Some(g) = gap.as_mut() {
                            g.skeleton_at = text.len();
                            g.end = here;
                        }
                        text.push(b);
                    }
                    b'}' | b']' => *depth = depth.saturating_sub(1),
                    _ => {}
                }
                continue;
            }
            text.push(b);
            match strings.step(b) {
                Str::Closed => {
                    if let (Some(k), Some(top)) = (key.take(), stack.last_mut()) {
                        top.key = k;
                        top.expect_key = false;
                    }
                    continue;
                }
                Str::Inside => {
                    if let Some(k) = key.as_mut() {
                        k.push(b);
                    }
                    continue;
                }
                Str::Outside => {}
            }
            match b {
                b'"' => {
                    strings.open();
                    if stack.last().is_some_and(|f| f.object && f.expect_key) {
                        key = Some(Vec::new());
                    }
                }
                b'{' => stack.push(Frame {
                    object: true,
                    key: Vec::new(),
                    expect_key: true,
                }),
                b'[' if gap.is_none() && is_records(&stack) => {
                    skipping = Some(0);
                    gap = Some(Gap {
                        skeleton_at: 0,
                        start: pos,
                        end: pos,
                    });
                }
                b'[' => stack.push(Frame {
                    object: false,
                    key: Vec::new(),
                    expect_key: false,
                }),
                b'}' | b']' => {
                    stack.pop();
                }
                b',' => {
                    if let Some(top) = stack.last_mut() {
                        top.expect_key = top.object;
                    }
                }
                _ => {}
            }
        }
        let n = buf.len();
        r.consume(n);
    }
    if skipping.is_some() || strings.inside || !stack.is_empty() {
        return Err(input_error(
            path,
            pos.line,
            pos.col,
            format!("{NOT_A_PART}: the file ends inside its JSON (cut short, as a killed shard leaves it)"),
            REPLAY_SHARD,
        ));
    }
    Ok(Skeleton { text, gap })
}

/// The scan is at `corpus.records`'s value.
fn is_records(stack: &[Frame]) -> bool {
    matches!(stack, [root, corpus]
        if root.object && root.key == b"corpus" && corpus.object && corpus.key == b"records")
}

/// What the merge reads of a part's skeleton; the per-run arrays of a
/// corpus replay are empty and not read.
#[derive(Debug, Deserialize)]
struct Part {
    aggregate: Vec<PolicyAggregate>,
    corpus: Option<CorpusJson>,
}

/// Reads a part's records one at a time from a byte offset.
struct Records {
    path: PathBuf,
    reader: Option<BufReader<File>>,
    pos: Pos,
    /// Close the file after each record (more parts than can stay open).
    reopen: bool,
    /// The part's length and time when checked: a part changed since is refused.
    stamp: Stamp,
}

/// A file's length and modification time.
type Stamp = (u64, Option<std::time::SystemTime>);

fn stamp_of(path: &Path) -> LabResult<Stamp> {
    let m = std::fs::metadata(path).map_err(|e| read_error(path, e))?;
    Ok((m.len(), m.modified().ok()))
}

impl Records {
    fn open(path: &Path, start: Pos, reopen: bool, stamp: Stamp) -> Records {
        Records {
            path: path.to_path_buf(),
            reader: None,
            pos: start,
            reopen,
            stamp,
        }
    }

    fn reader(&mut self) -> LabResult<&mut BufReader<File>> {
        if self.reader.is_none() {
            if stamp_of(&self.path)? != self.stamp {
                return Err(part_error(
                    &self.path,
                    "the part changed while it was being merged".into(),
                    "merge again once no shard writes to the parts",
                ));
            }
            let mut f = File::open(&self.path).map_err(|e| read_error(&self.path, e))?;
            f.seek(SeekFrom::Start(self.pos.offset))
                .map_err(|e| read_error(&self.path, e))?;
            // Small buffers: one per part, and parts may be many.
            self.reader = Some(BufReader::with_capacity(16 * 1024, f));
        }
        Ok(self.reader.as_mut().expect("opened above"))
    }

    fn peek(&mut self) -> LabResult<Option<u8>> {
        self.reader()?;
        let Records { reader, path, .. } = self;
        let r = reader.as_mut().expect("opened above");
        match r.fill_buf() {
            Ok(buf) => Ok(buf.first().copied()),
            Err(e) => Err(read_error(path, e)),
        }
    }

    fn bump(&mut self, b: u8) {
        if let Some(r) = self.reader.as_mut() {
            r.consume(1);
        }
        self.pos.advance(b);
    }

    /// The next record and where it starts, or `None` at the array's end.
    fn next(&mut self) -> LabResult<Option<(SessionRecords, Pos)>> {
        let got = self.next_inner();
        if self.reopen {
            self.reader = None;
        }
        got
    }

    fn next_inner(&mut self) -> LabResult<Option<(SessionRecords, Pos)>> {
        let start = loop {
            match self.peek()? {
                Some(b']') => return Ok(None),
                Some(b) if b == b',' || b.is_ascii_whitespace() => self.bump(b),
                Some(b'{') => break self.pos,
                Some(_) => {
                    return Err(input_error(
                        &self.path,
                        self.pos.line,
                        self.pos.col,
                        format!("{NOT_A_PART}: a record of corpus.records is not an object"),
                        REPLAY_SHARD,
                    ))
                }
                None => {
                    return Err(input_error(
                        &self.path,
                        self.pos.line,
                        self.pos.col,
                        format!("{NOT_A_PART}: the file ends inside its records (it changed while being merged?)"),
                        REPLAY_SHARD,
                    ))
                }
            }
        };
        let mut bytes = Vec::new();
        let mut depth = 0usize;
        let mut strings = Strings::default();
        loop {
            let Some(b) = self.peek()? else {
                return Err(input_error(
                    &self.path,
                    self.pos.line,
                    self.pos.col,
                    format!("{NOT_A_PART}: the file ends inside a record"),
                    REPLAY_SHARD,
                ));
            };
            self.bump(b);
            bytes.push(b);
            if strings.step(b) != Str::Outside {
                continue;
            }
            match b {
                b'"' => strings.open(),
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
        }
        let record = serde_json::from_slice::<SessionRecords>(&bytes).map_err(|e| {
            let line = start.line + e.line().saturating_sub(1);
            let column = if e.line() <= 1 {
                start.col + e.column().saturating_sub(1)
            } else {
                e.column()
            };
            input_error(
                &self.path,
                line,
                column,
                format!("{NOT_A_PART}: a record: {e}"),
                REPLAY_SHARD,
            )
        })?;
        Ok(Some((record, start)))
    }
}

/// A part that passed [`check_part`], for the write pass: where its
/// records start, how many it holds and its stamp.
struct Checked {
    path: PathBuf,
    start: Option<Pos>,
    records: usize,
    stamp: Stamp,
}

/// The whole run's aggregate, counted part after part, with what puts back
/// corpus order: each policy's first place, the first run's tokenizer.
#[derive(Default)]
struct Whole {
    agg: Aggregate,
    rank: HashMap<String, ([usize; 3], usize)>,
    first: Option<(([usize; 3], usize), String)>,
}

impl Whole {
    fn add(&mut self, s: &SessionRecords) {
        for (i, r) in s.records.iter().enumerate() {
            let at = (s.order, i);
            self.agg.add(r);
            let rank = self.rank.entry(r.policy.clone()).or_insert(at);
            *rank = (*rank).min(at);
            if self.first.as_ref().is_none_or(|(f, _)| at < *f) {
                self.first = Some((at, r.tokenizer.clone()));
            }
        }
    }

    fn finish(self) -> Aggregate {
        let rank = self.rank;
        self.agg.reordered(
            |p| rank.get(p).copied(),
            self.first.map(|(_, tokenizer)| tokenizer),
        )
    }
}

/// The compact JSON of `head` (no records, no checksum) cut where its
/// records go: what the part's checksum hashes before and after them.
fn digest_frame(head: &CorpusJson) -> (Vec<u8>, &'static [u8]) {
    const TAIL: &[u8] = b"],\"checksum\":null}";
    let bare = CorpusJson {
        records: Vec::new(),
        checksum: None,
        ..head.clone()
    };
    let mut text = serde_json::to_vec(&bare).expect("records serialise");
    // The records and the checksum are the last two fields.
    text.truncate(text.len() - TAIL.len());
    (text, TAIL)
}

/// Check one part, counting its records into `whole`: its corpus object
/// without records, and where they are.
fn check_part(path: &Path, whole: &mut Whole) -> LabResult<(CorpusJson, Checked)> {
    let stamp = stamp_of(path)?;
    let skel = skeleton(path)?;
    let part: Part = serde_json::from_slice(&skel.text).map_err(|e| {
        let text = String::from_utf8_lossy(&skel.text);
        let at = line_offset(&text, e.line())
            + crate::input::char_column(&text, e.line(), e.column()).saturating_sub(1);
        let (line, column) = skel.place(at);
        input_error(path, line, column, format!("{NOT_A_PART}: {e}"), PASS_PARTS)
    })?;
    let Some(head) = part.corpus else {
        return Err(skel.at_key(
            path,
            "corpus",
            "a replay of named session files, not of a corpus: it has no sessions to merge".into(),
            "merge the parts of `lab replay CORPUS --policy … --shard i/n --format json`",
        ));
    };
    let start = skel.gap.map(|g| g.start);
    let (before, after) = digest_frame(&head);
    let mut hasher = Sha256::new();
    hasher.update(&before);
    let mut own = Aggregate::default();
    let mut count = 0usize;
    let mut last: Option<[usize; 3]> = None;
    if let Some(start) = start {
        let mut records = Records::open(path, start, false, stamp);
        while let Some((s, at)) = records.next()? {
            if count > 0 {
                hasher.update(b",");
            }
            hasher.update(serde_json::to_vec(&s).expect("records serialise"));
            if last.is_some_and(|l| l >= s.order) {
                return Err(input_error(
                    path,
                    at.line,
                    at.col,
                    format!("session {} is out of corpus order in its part", s.key),
                    REPLAY_SHARD,
                ));
            }
            if let Some(sh) = head.shard.filter(|sh| !sh.owns_key(&s.key)) {
                return Err(input_error(
                    path,
                    at.line,
                    at.col,
                    format!(
                        "session {} is not of this part's shard {}/{}",
                        s.key, sh.index, sh.count
                    ),
                    REPLAY_SHARD,
                ));
            }
            last = Some(s.order);
            for r in &s.records {
                own.add(r);
            }
            whole.add(&s);
            count += 1;
        }
    }
    hasher.update(after);
    if let Some(shard) = head.shard {
        let digest: String = hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        if head.checksum.as_deref() != Some(digest.as_str()) {
            return Err(skel.at_key(
                path,
                "checksum",
                format!(
                    "shard {}/{}: the checksum does not match its content (the file was edited or damaged)",
                    shard.index, shard.count
                ),
                REPLAY_SHARD,
            ));
        }
    }
    if serde_json::to_value(own.rows()).ok() != serde_json::to_value(&part.aggregate).ok() {
        return Err(skel.at_key(
            path,
            "aggregate",
            "the aggregate is not that of the part's records (the file was edited)".into(),
            REPLAY_SHARD,
        ));
    }
    let checked = Checked {
        path: path.to_path_buf(),
        start,
        records: count,
        stamp,
    };
    Ok((head, checked))
}

/// Byte offset of the start of 1-based `line` in `text`.
fn line_offset(text: &str, line: usize) -> usize {
    text.split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum()
}

/// Merge `files` into `out` as `format` prints the whole run. Every part is
/// checked before anything is written; every refusal is an input error
/// (exit 3) naming the file.
pub fn merge(files: &[PathBuf], format: MergeFormat, out: &mut dyn Write) -> LabResult<()> {
    let Some(first_path) = files.first() else {
        return Err(LabError::usage(
            "--merge needs at least one file",
            "pass shard outputs, e.g. lab replay --merge a.json b.json",
        ));
    };
    let mut whole = Whole::default();
    let mut first: Option<CorpusJson> = None;
    let mut seen: std::collections::BTreeMap<usize, PathBuf> = Default::default();
    let mut parts = Vec::with_capacity(files.len());
    let (mut sessions, mut skipped) = (0, 0);
    for path in files {
        let (part, checked) = check_part(path, &mut whole)?;
        let head = first.get_or_insert_with(|| part.clone());
        check_same(first_path, head, path, &part)?;
        if let Some(sh) = part.shard {
            if let Some(other) = seen.insert(sh.index, path.clone()) {
                return Err(part_error(
                    path,
                    format!(
                        "shard {}/{} is also {}: a shard passed twice",
                        sh.index,
                        sh.count,
                        other.display()
                    ),
                    "pass each shard's part once",
                ));
            }
        }
        sessions += part.sessions;
        skipped += part.skipped;
        parts.push(checked);
    }
    let first = first.expect("at least one part");
    let count = first.shard.map_or(1, |s| s.count);
    let missing: Vec<String> = (0..count)
        .filter(|i| first.shard.is_some() && !seen.contains_key(i))
        .map(|i| format!("{i}/{count}"))
        .collect();
    if !missing.is_empty() {
        return Err(part_error(
            first_path,
            format!(
                "the parts are {} of the {count} shards of this replay: missing {}",
                seen.len(),
                missing.join(", ")
            ),
            "pass every shard 0/n .. n-1/n of the replay (re-run the missing ones with the same command line and --shard i/n)",
        ));
    }
    if first.shard.is_none() && files.len() > 1 {
        return Err(part_error(
            &files[1],
            "a whole run merged with another part: it holds every session already".into(),
            "merge only the parts of `lab replay CORPUS --policy … --shard i/n --format json`",
        ));
    }
    let agg = whole.finish();
    let head = CorpusJson {
        shard: None,
        sessions,
        skipped,
        records: Vec::new(),
        checksum: None,
        ..first
    };
    let write = |out: &mut dyn Write, bytes: &[u8]| {
        out.write_all(bytes)
            .map_err(|e| LabError::io("writing the output", Path::new("<output>"), e))
    };
    match format {
        MergeFormat::Table(markdown) => write(
            out,
            crate::replay::observe::aggregate::table(&agg, markdown, skipped).as_bytes(),
        ),
        MergeFormat::Jsonl => each_record(&parts, |s| {
            for r in &s.records {
                let mut line = serde_json::to_vec(r).expect("records serialise");
                line.push(b'\n');
                write(out, &line)?;
            }
            Ok(())
        }),
        MergeFormat::Json => {
            let text = super::policies::render_corpus_json_with(&head, agg.rows());
            // The whole run's JSON with its records array left empty, cut
            // where the records go: they are written between, indented as
            // the pretty printer indents them inside `corpus`.
            const OPEN: &str = "\n    \"records\": [";
            let at = text
                .find(&format!("{OPEN}]"))
                .expect("the corpus JSON has an empty records array")
                + OPEN.len();
            write(out, &text.as_bytes()[..at])?;
            let mut any = false;
            each_record(&parts, |s| {
                let pretty = serde_json::to_string_pretty(s).expect("records serialise");
                let sep = if any { ",\n      " } else { "\n      " };
                any = true;
                write(out, sep.as_bytes())?;
                write(out, pretty.replace('\n', "\n      ").as_bytes())
            })?;
            if any {
                write(out, b"\n    ")?;
            }
            write(out, &text.as_bytes()[at..])
        }
    }
}

/// Every part's records in corpus order, by a k-way merge of the parts
/// (each already in that order): one record per part held at a time.
fn each_record(
    parts: &[Checked],
    mut each: impl FnMut(&SessionRecords) -> LabResult<()>,
) -> LabResult<()> {
    let reopen = parts.len() > OPEN_AT_ONCE;
    let mut cursors: Vec<Option<Records>> = parts
        .iter()
        .map(|p| {
            p.start
                .filter(|_| p.records > 0)
                .map(|s| Records::open(&p.path, s, reopen, p.stamp))
        })
        .collect();
    let mut heads: Vec<Option<SessionRecords>> = (0..parts.len()).map(|_| None).collect();
    let mut heap = BinaryHeap::new();
    for (i, c) in cursors.iter_mut().enumerate() {
        if let Some((s, _)) = c.as_mut().map(Records::next).transpose()?.flatten() {
            heap.push(std::cmp::Reverse((s.order, i)));
            heads[i] = Some(s);
        }
    }
    let mut last: Option<(SessionRecords, usize)> = None;
    let mut taken = vec![0usize; parts.len()];
    while let Some(std::cmp::Reverse((_, i))) = heap.pop() {
        let s = heads[i].take().expect("a head for every part in the heap");
        if let Some((prev, j)) = &last {
            if prev.order == s.order {
                return Err(part_error(
                    &parts[i].path,
                    format!(
                        "session {} is in two parts (also {})",
                        s.key,
                        parts[*j].path.display()
                    ),
                    "re-run the shards with the same build and inputs",
                ));
            }
        }
        each(&s)?;
        taken[i] += 1;
        if taken[i] < parts[i].records {
            if let Some((next, _)) = cursors[i]
                .as_mut()
                .map(Records::next)
                .transpose()?
                .flatten()
            {
                heap.push(std::cmp::Reverse((next.order, i)));
                heads[i] = Some(next);
            }
        } else {
            cursors[i] = None;
        }
        last = Some((s, i));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A part whose strings hold brackets, braces, escaped quotes and
    /// non-ASCII text, its keys in another order: the skeleton drops the
    /// records only, and the records read back one by one, in order.
    #[test]
    fn the_skeleton_drops_only_the_records_and_they_read_back() {
        let record = |key: &str, j: usize| {
            serde_json::json!({"key": key, "order": [j, 0, 0], "records": [{
                "session": format!("é \"]}}[{{ {key}"), "policy": "none", "calls": j,
                "peak_chars": 1, "last_tokens": 2, "lost_forever": 0, "pointer_lost": 0,
                "dangling_pointers": 0, "orphans": 0, "invalid_requests": 0, "events": 0,
                "dollars": null, "recall_percent": null, "tokenizer": "approx"}]})
        };
        let text = serde_json::to_string_pretty(&serde_json::json!({
            "corpus": {"records": [record("a]", 1), record("b\"", 2)], "spec": {"inputs": ["x[\"records\": ["], "policies": [], "options": {}},
                "shard": null, "listing": "l", "items": 2, "sessions": 2, "skipped": 0, "checksum": null},
            "aggregate": []
        }))
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.json");
        std::fs::write(&path, &text).unwrap();
        let skel = skeleton(&path).unwrap();
        let part: Part = serde_json::from_slice(&skel.text).unwrap();
        let head = part.corpus.unwrap();
        assert!(head.records.is_empty());
        assert_eq!(head.spec.inputs, ["x[\"records\": ["]);
        let gap = skel.gap.unwrap();
        let mut records = Records::open(&path, gap.start, true, stamp_of(&path).unwrap());
        let mut keys = Vec::new();
        while let Some((s, at)) = records.next().unwrap() {
            // Each record starts where the text has its `{`.
            let line = text.lines().nth(at.line - 1).unwrap();
            assert_eq!(line.chars().nth(at.col - 1), Some('{'));
            keys.push(s.key);
        }
        assert_eq!(keys, ["a]", "b\""]);
        // A place after the records maps back to the file's line.
        let (line, _) = skel.place(
            String::from_utf8_lossy(&skel.text)
                .find("\"spec\"")
                .unwrap(),
        );
        assert_eq!(
            text.lines().nth(line - 1).map(|l| l.contains("\"spec\"")),
            Some(true)
        );
    }

    /// The checksum hashed record by record is the one a part is sealed with.
    #[test]
    fn the_running_checksum_is_the_sealed_one() {
        let part = CorpusJson {
            spec: super::super::shard::CorpusSpec {
                inputs: vec!["c".into()],
                policies: vec!["none".into()],
                options: Default::default(),
            },
            shard: Some(crate::shard::Shard { index: 0, count: 1 }),
            listing: "l".into(),
            items: 2,
            sessions: 2,
            skipped: 0,
            records: (0..2)
                .map(|j| SessionRecords {
                    key: format!("k{j}"),
                    order: [j, 0, 0],
                    records: Vec::new(),
                })
                .collect(),
            checksum: None,
        }
        .sealed();
        let (before, after) = digest_frame(&part);
        let mut h = Sha256::new();
        h.update(&before);
        for (i, s) in part.records.iter().enumerate() {
            if i > 0 {
                h.update(b",");
            }
            h.update(serde_json::to_vec(s).unwrap());
        }
        h.update(after);
        let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(part.checksum.as_deref(), Some(hex.as_str()));
    }
}
