//! The invariant checker: what was lost, what lost its pointer, what broke the API rules.
//!
//! Driven by the [`Ledger`] of every original tool result. Each original is
//! classified against the final context and the files on disk:
//! - in context: a `tool_result` with its id still holds the full text;
//! - held: a result file saved for it still holds the text, or an archived
//!   transcript holds a `tool_result` with its id and the full text;
//! - pointed: its block in context names a file that holds it; or, when the
//!   block itself was snipped or summarised away, the chain of archive markers
//!   and transcript pointers from the context leads to such a file.
//!
//! `lost_forever` = neither in context nor held; `pointer_lost` = held but not
//! pointed (the bytes are on disk, nothing the model sees leads there).
//! `recoverable_via_archive` counts the pointer-lost results that an archive
//! chain still happens to reach (an old copy of their placeholder was archived).

use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;

use super::archived::for_each_archive_text;
pub use super::pairs::pair_violations;
use super::persist::{
    at_line_start, is_placeholder, output_path, FULL_OUTPUT, PERSISTED_OPEN, SAVED_PREFIX,
};
use super::session::{Ledger, Request};
use super::snip::marker_path;
use super::summary::FULL_TRANSCRIPT;
use super::{Compactor, Event};
use crate::counters::Counters;
use crate::fingerprint::{fingerprint, fingerprint_bytes, has_print, has_print_bytes};
use crate::message::{for_each_text, Block, Message, Thinking};
use crate::storage::{Joined, Storage};

/// Every path a text points to, by the conventions of the four steps.
pub fn pointers_in(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for_each_pointer(text, |p| out.push(p));
    out
}

/// Call `f` with each path of [`pointers_in`], in its order, without
/// collecting them (the checker numbers every pointer of every text).
///
/// Both line conventions start with "Full ": one pass over the text's
/// `F`s finds the first `Full output: ` line (at a line start as the
/// course splits lines) and the first `Full transcript: ` line (at a
/// `str::lines` start), instead of a whole-text search for each. Most
/// texts have no `F` at a line start, and the byte search is cheap to set
/// up for the short ones.
fn for_each_pointer<'t>(text: &'t str, mut f: impl FnMut(&'t str)) {
    let bytes = text.as_bytes();
    let (mut output, mut transcripts) = (None, None);
    for i in memchr::memchr_iter(b'F', bytes) {
        // `F` is ASCII: `i` is a char boundary.
        let rest = &text[i..];
        if output.is_none() && rest.starts_with(FULL_OUTPUT) && at_line_start(text, i) {
            output = Some(i + FULL_OUTPUT.len());
        }
        if transcripts.is_none()
            && rest.starts_with(FULL_TRANSCRIPT)
            && (i == 0 || bytes[i - 1] == b'\n')
        {
            transcripts = Some(i);
        }
        if output.is_some() && transcripts.is_some() {
            break;
        }
    }
    if let Some(path) = output.and_then(|at| output_path(&text[at..])) {
        f(path);
    }
    if let Some(p) = placeholder_or_marker(text) {
        f(p);
    }
    if let Some(from) = transcripts {
        // A line start: the lines from here are the tail of `text.lines()`.
        for line in text[from..].lines() {
            if let Some(p) = line.strip_prefix(FULL_TRANSCRIPT) {
                f(p);
            }
        }
    }
}

/// The pointer of a step-3 placeholder and of a snip marker (a text is
/// at most one of them: both span the whole text).
fn placeholder_or_marker(text: &str) -> Option<&str> {
    text.strip_prefix(SAVED_PREFIX)
        .and_then(|rest| rest.strip_suffix(']'))
        .or_else(|| marker_path(text))
}

impl Ledger {
    /// Remember the original text of the result for `id`, as its
    /// [`fingerprint`]. Defined here, beside the checker that compares with
    /// it, so the session module does not depend on the checker.
    pub fn record(&mut self, id: &str, original: &str) {
        self.originals.push((id.to_string(), fingerprint(original)));
    }
}

/// The checker's strings by number: every archive repeats the pointers of
/// the one before (the course archives the whole context each time), so
/// each distinct path is stored once and sets hold numbers.
struct Interned {
    /// Every distinct path, one after another.
    text: String,
    /// Number -> its path's range in `text`.
    spans: Vec<Range<usize>>,
    /// The numbers, found by their path's hash.
    table: hashbrown::HashTable<usize>,
    state: foldhash::fast::FixedState,
}

impl Default for Interned {
    fn default() -> Self {
        // A run's few dozen paths of up to a few hundred bytes without regrowing.
        Interned {
            text: String::with_capacity(4096),
            spans: Vec::with_capacity(32),
            table: hashbrown::HashTable::with_capacity(32),
            state: foldhash::fast::FixedState::default(),
        }
    }
}

/// The hash a path is found by: its length and its last 32 bytes. A
/// run's paths share a long prefix (the run's root, padded to hundreds of
/// bytes) and differ in their names; the table compares whole paths, so
/// two paths that share a tail only probe further.
fn key(state: &foldhash::fast::FixedState, s: &str) -> u64 {
    use std::hash::BuildHasher;
    let b = s.as_bytes();
    state.hash_one((b.len(), &b[b.len().saturating_sub(32)..]))
}

impl Interned {
    /// The number of `s`, given it now if it has none.
    fn id(&mut self, s: &str) -> usize {
        let Interned {
            text,
            spans,
            table,
            state,
        } = self;
        let at = |i: &usize| &text[spans[*i].clone()];
        let entry = table.entry(key(state, s), |i| at(i) == s, |i| key(state, at(i)));
        match entry {
            hashbrown::hash_table::Entry::Occupied(e) => *e.get(),
            hashbrown::hash_table::Entry::Vacant(e) => {
                let i = spans.len();
                spans.push(text.len()..text.len() + s.len());
                text.push_str(s);
                e.insert(i);
                i
            }
        }
    }

    fn get(&self, s: &str) -> Option<usize> {
        let at = |i: &usize| &self.text[self.spans[*i].clone()];
        self.table
            .find(key(&self.state, s), |i| at(i) == s)
            .copied()
    }

    /// How many numbers are given.
    fn len(&self) -> usize {
        self.spans.len()
    }
}

/// The ledger's distinct ids, numbered in order of first appearance (an
/// id's number is its group). The checker only ever asks about ledger ids,
/// so what it gathers per id (archived copies, blocks in context, saved
/// files) is kept by group, and anything of another id is dropped as soon
/// as it is seen.
struct LedgerIds<'a> {
    /// Id -> group (a hash lookup: a binary search compared whole ids
    /// several times per lookup).
    groups: HashMap<&'a str, usize, foldhash::fast::FixedState>,
    /// Per group: the length every original of the id has, or `None` when
    /// its originals differ in length (a copy is then always hashed).
    len: Vec<Option<usize>>,
    /// The group of each ledger entry, in ledger order.
    of_entry: Vec<usize>,
}

impl<'a> LedgerIds<'a> {
    fn new(ledger: &'a Ledger) -> Self {
        let n = ledger.originals.len();
        let mut groups = HashMap::with_capacity_and_hasher(n, Default::default());
        let mut len: Vec<Option<usize>> = Vec::with_capacity(n);
        let mut of_entry = Vec::with_capacity(n);
        for (id, (_, chars)) in &ledger.originals {
            let next = groups.len();
            let g = *groups.entry(id.as_str()).or_insert(next);
            of_entry.push(g);
            if g == len.len() {
                len.push(Some(*chars));
            } else if len[g] != Some(*chars) {
                len[g] = None;
            }
        }
        LedgerIds {
            groups,
            len,
            of_entry,
        }
    }

    /// How many groups (distinct ids) there are.
    fn count(&self) -> usize {
        self.len.len()
    }

    /// The group of `id`, if the ledger has it.
    fn group(&self, id: &str) -> Option<usize> {
        self.groups.get(id).copied()
    }

    /// Can a text of `len` bytes be an original of group `g`? Only then is
    /// its fingerprint worth computing (a different length never matches).
    fn may_match(&self, g: usize, len: usize) -> bool {
        self.len[g].is_none_or(|n| n == len)
    }
}

/// Items of each group in one vector: group `g`'s items are a chain from
/// `heads[g]` through each item's successor, latest first (the checker
/// only asks whether any item of a group qualifies, never in which order).
struct Buckets<T> {
    heads: Vec<usize>,
    items: Vec<(T, usize)>,
}

/// The end of a chain in [`Buckets`].
const END: usize = usize::MAX;

impl<T> Buckets<T> {
    fn new(groups: usize) -> Self {
        Buckets {
            heads: vec![END; groups],
            // About an item per group (a copy, a block, a saved file).
            items: Vec::with_capacity(groups),
        }
    }

    fn push(&mut self, g: usize, item: T) {
        let next = std::mem::replace(&mut self.heads[g], self.items.len());
        self.items.push((item, next));
    }

    /// The items of group `g`.
    fn of(&self, g: usize) -> impl Iterator<Item = &T> + '_ {
        let mut at = self.heads[g];
        std::iter::from_fn(move || {
            let (item, next) = self.items.get(at)?;
            at = *next;
            Some(item)
        })
    }
}

/// One archived copy of a ledger id's tool result.
struct ArchivedCopy {
    /// Archive number (index into [`ArchiveIndex::paths`]).
    archive: usize,
    /// [`fingerprint`] of the archived content; `None` when its length
    /// rules out every original of its id.
    print: Option<(u64, usize)>,
    /// Its pointers: a range of [`ArchiveIndex::ptrs`].
    ptrs: Range<usize>,
}

/// Every archived transcript, read once: the pointers of each, and the
/// copies of the ledger's results.
struct ArchiveIndex {
    /// Archive number -> its numbered path (in name order).
    paths: Vec<usize>,
    /// Archive number -> its pointers, a range of `ptrs`.
    spans: Vec<Range<usize>>,
    /// Every pointer of every archived text (numbered), archive after
    /// archive: a copy's pointers lie inside its archive's span.
    ptrs: Vec<usize>,
    /// Copies by ledger group.
    copies: Buckets<ArchivedCopy>,
}

impl ArchiveIndex {
    fn read(fs: &dyn Storage, dir: &Path, ids: &LedgerIds, paths: &mut Interned) -> Self {
        let mut index = ArchiveIndex {
            paths: Vec::new(),
            spans: Vec::new(),
            // A few pointers per archived message: grown rarely.
            ptrs: Vec::with_capacity(64),
            copies: Buckets::new(ids.count()),
        };
        let mut joined = Joined::new(dir);
        // A missing directory holds no archive; a damaged transcript
        // (unreadable, not UTF-8) holds nothing usable.
        let _ = fs.visit_files(dir, &mut |name, bytes| {
            let archive = index.paths.len();
            index.paths.push(paths.id(joined.with(name)));
            let start = index.ptrs.len();
            if let Some(text) = bytes.ok().and_then(crate::scan::utf8) {
                index.index_text(text, archive, ids, paths);
            }
            index.spans.push(start..index.ptrs.len());
        });
        index
    }

    /// Index the lines of archive number `archive`.
    fn index_text(&mut self, text: &str, archive: usize, ids: &LedgerIds, paths: &mut Interned) {
        for_each_archive_text(text, |id, text| {
            let start = self.ptrs.len();
            for_each_pointer(text, |p| self.ptrs.push(paths.id(p)));
            let Some(g) = id.and_then(|id| ids.group(id)) else {
                return;
            };
            let copy = ArchivedCopy {
                archive,
                print: ids.may_match(g, text.len()).then(|| fingerprint(text)),
                ptrs: start..self.ptrs.len(),
            };
            self.copies.push(g, copy);
        });
    }

    /// The pointers of archive number `archive`.
    fn pointers_of(&self, archive: usize) -> &[usize] {
        &self.ptrs[self.spans[archive].clone()]
    }
}

/// Sample ids as strings, made only as far as a counter takes them.
fn ids<'v>(v: &'v [&str]) -> impl Iterator<Item = String> + 'v {
    v.iter().map(|s| s.to_string())
}

/// How many counters [`check`] reports.
const COUNTERS: usize = 13;

/// Check a finished session. Pure with respect to the run: it only reads.
pub fn check(
    compactor: &Compactor,
    messages: &[Message],
    ledger: &Ledger,
    requests: &[Request],
) -> Counters {
    let root = &compactor.root;
    let fs = root.fs();
    let mut paths = Interned::default();
    let ledger_ids = LedgerIds::new(ledger);
    let archives = ArchiveIndex::read(fs, root.transcripts(), &ledger_ids, &mut paths);
    let context = Context::read(messages, &ledger_ids, &mut paths);
    let reachable = reachable_from(&context.ptrs, &archives, paths.len());
    let reached = |p: usize| reachable.get(p).copied().unwrap_or(false);
    let found = Found {
        ids: &ledger_ids,
        archives: &archives,
        reached: &reached,
    };
    let results = ResultFiles::read(fs, root.results(), &mut paths);
    let losses = classify(compactor, &context, &results, ledger, &found, &mut paths);
    let final_violations = pair_violations(messages);
    let invalid = requests.iter().filter(|r| !r.violations.is_empty()).count() as u64;
    let (unseen, double) = placeholder_events(&compactor.events);
    let orphans: Vec<&str> = (results.names.iter().zip(&results.ids))
        .filter(|(_, &id)| !reached(id))
        .map(|(name, _)| name.as_str())
        .collect();
    let oversized = oversized(messages, compactor.config.constants.large_result_chars);
    let events = |f: fn(&Event) -> bool| compactor.events.iter().filter(|e| f(e)).count() as u64;

    // Room for every counter below: the vector is never regrown.
    let mut c = Counters(Vec::with_capacity(COUNTERS));
    let mut count = |name: &'static str, v: &[&str]| c.count(name, v.len() as u64, ids(v));
    count("lost_forever", &losses.lost);
    count("pointer_lost", &losses.pointer_lost);
    count("recoverable_via_archive", &losses.via_archive);
    // Samples are formatted lazily: only the first few are kept.
    let pairs_intact = invalid == 0 && final_violations.is_empty();
    let finals = final_violations.iter().map(|v| format!("final: {v}"));
    c.flag(
        "pairs_intact",
        pairs_intact,
        request_violations(requests).chain(finals),
    );
    c.count("invalid_requests", invalid, request_violations(requests));
    c.count("unseen_compacted", unseen.len() as u64, ids(&unseen));
    c.count("double_compacted", double.len() as u64, ids(&double));
    c.count("orphan_files", orphans.len() as u64, ids(&orphans));
    c.count("archive_gaps", losses.gaps.len() as u64, ids(&losses.gaps));
    c.count(
        "oversized_in_context",
        oversized.len() as u64,
        ids(&oversized),
    );
    let summaries = events(|e| matches!(e, Event::Summarized { .. }));
    c.count("summary_calls", summaries, std::iter::empty());
    let failures = events(|e| matches!(e, Event::SummaryFailed { .. }));
    c.count("summary_failures", failures, std::iter::empty());
    c.list("persisted_files", results.names);
    debug_assert_eq!(c.0.len(), COUNTERS);
    c
}

/// Which numbered paths are reachable from the context's pointers through
/// archives (indexed by number; `paths` numbers exist so far).
fn reachable_from(context: &[usize], archives: &ArchiveIndex, paths: usize) -> Vec<bool> {
    let mut reachable = vec![false; paths];
    for &p in context {
        reachable[p] = true;
    }
    // Numbered path -> its archive number (END: not an archive).
    let mut archive_at = vec![END; paths];
    for (a, &p) in archives.paths.iter().enumerate() {
        archive_at[p] = a;
    }
    let mut frontier = context.to_vec();
    while let Some(p) = frontier.pop() {
        let Some(&a) = archive_at.get(p).filter(|&&a| a != END) else {
            continue;
        };
        for &n in archives.pointers_of(a) {
            if !std::mem::replace(&mut reachable[n], true) {
                frontier.push(n);
            }
        }
    }
    reachable
}

/// Tool ids per loss class.
#[derive(Default)]
struct Losses<'a> {
    lost: Vec<&'a str>,
    pointer_lost: Vec<&'a str>,
    via_archive: Vec<&'a str>,
    gaps: Vec<&'a str>,
}

/// What the checker gathered before classifying.
struct Found<'f> {
    ids: &'f LedgerIds<'f>,
    archives: &'f ArchiveIndex,
    /// Is a numbered path reachable from the context?
    reached: &'f dyn Fn(usize) -> bool,
}

/// Classify every original tool result that is not in context in full.
fn classify<'a>(
    compactor: &'a Compactor,
    context: &Context,
    results: &ResultFiles,
    ledger: &'a Ledger,
    found: &Found,
    paths: &mut Interned,
) -> Losses<'a> {
    let ids = found.ids;
    let saved_for = saved_for(&compactor.events, ids);
    let in_context = &context.blocks;
    let mut out = Losses::default();
    // Numbered paths that hold the current original (reused: one per id).
    let mut holders = Vec::new();
    for ((id, print), &g) in ledger.originals.iter().zip(&ids.of_entry) {
        let (id, print) = (id.as_str(), *print);
        if in_context.of(g).any(|(b, _)| has_print(b, print)) {
            continue;
        }
        holders.clear();
        let fs = compactor.root.fs();
        let saved = saved_for.of(g).copied();
        held_in_files(fs, saved, (print, results), paths, &mut holders);
        if held_in_archives(found.archives, g, print, &mut holders) {
            out.gaps.push(id);
        }
        if holders.is_empty() {
            out.lost.push(id);
            continue;
        }
        let reachable_holder = holders.iter().any(|&h| (found.reached)(h));
        let mut blocks = in_context.of(g).peekable();
        if blocks.peek().is_none() {
            // Snipped or summarised away: the marker / summary chain must lead back.
            if !reachable_holder {
                out.pointer_lost.push(id);
            }
        } else if !blocks.any(|(_, ptrs)| {
            context.ptrs[ptrs.clone()]
                .iter()
                .any(|p| holders.contains(p))
        }) {
            // The block the model sees names no file that holds the original.
            out.pointer_lost.push(id);
            if reachable_holder {
                out.via_archive.push(id);
            }
        }
    }
    out
}

/// Held: add to `holders` each saved file that holds the original's text
/// `print` (its bytes; see [`fingerprint_bytes`]), numbered. A file the
/// results visit read is compared by the fingerprint taken there; any
/// other path (elsewhere, or not read) is read now.
fn held_in_files<'p>(
    fs: &dyn Storage,
    saved: impl Iterator<Item = &'p str>,
    (print, results): ((u64, usize), &ResultFiles),
    paths: &mut Interned,
    holders: &mut Vec<usize>,
) {
    for p in saved {
        let visited = paths.get(p).and_then(|i| Some((i, results.print_at(i)?)));
        if let Some((i, file)) = visited {
            if file == print {
                holders.push(i);
            }
            continue;
        }
        let mut same = false;
        let read = fs.read_with(Path::new(p), &mut |b| same = has_print_bytes(b, print));
        if read.is_ok() && same {
            holders.push(paths.id(p));
        }
    }
}

/// The results directory as the checker reads it, in one visit: each
/// file's name (the `persisted_files` list, in listing order), its
/// numbered path, and the fingerprint of its bytes (a saved file is then
/// compared without a second lookup of its path).
struct ResultFiles {
    names: Vec<String>,
    /// Numbered path of each name.
    ids: Vec<usize>,
    /// Numbered path -> fingerprint of the file read there.
    prints: Vec<Option<(u64, usize)>>,
}

impl ResultFiles {
    /// A missing directory holds no file; an unreadable file has no fingerprint.
    fn read(fs: &dyn Storage, dir: &Path, paths: &mut Interned) -> Self {
        // Room for a run's usual few files and the paths numbered so far.
        let mut out = ResultFiles {
            names: Vec::with_capacity(16),
            ids: Vec::with_capacity(16),
            prints: vec![None; paths.len() + 16],
        };
        let mut joined = Joined::new(dir);
        let _ = fs.visit_files(dir, &mut |name, bytes| {
            let id = paths.id(joined.with(name));
            out.names.push(name.to_string());
            out.ids.push(id);
            if let Ok(b) = bytes {
                if out.prints.len() <= id {
                    out.prints.resize(id + 1, None);
                }
                out.prints[id] = Some(fingerprint_bytes(b));
            }
        });
        out
    }

    /// The fingerprint of the visited file at numbered path `id`.
    fn print_at(&self, id: usize) -> Option<(u64, usize)> {
        self.prints.get(id).copied().flatten()
    }
}

/// Add to `holders` each archive with a copy of group `g`'s original;
/// `true` when the group has an archive gap: copies, none of them the
/// original nor pointing to a holder (an archive kept only a stub with no
/// way back).
fn held_in_archives(
    archives: &ArchiveIndex,
    g: usize,
    print: (u64, usize),
    holders: &mut Vec<usize>,
) -> bool {
    let copies = || archives.copies.of(g);
    let same = copies().filter(|c| c.print == Some(print));
    holders.extend(same.map(|c| archives.paths[c.archive]));
    let mut copies = copies().peekable();
    copies.peek().is_some()
        && !copies.any(|c| {
            c.print == Some(print)
                || archives.ptrs[c.ptrs.clone()]
                    .iter()
                    .any(|p| holders.contains(p))
        })
}

/// Result files saved for each ledger group (each path once).
fn saved_for<'e>(events: &'e [Event], ids: &LedgerIds) -> Buckets<&'e str> {
    let mut saved_for = Buckets::new(ids.count());
    for e in events {
        if let Event::Saved { id, path, .. } = e {
            let Some(g) = ids.group(id) else { continue };
            if !saved_for.of(g).any(|p| *p == path.as_str()) {
                saved_for.push(g, path.as_str());
            }
        }
    }
    saved_for
}

/// The final context as the checker reads it.
struct Context<'m> {
    /// Every pointer of every text (numbered), in message order.
    ptrs: Vec<usize>,
    /// Ledger group -> every content its tool_result blocks have, with
    /// their pointers (a range of `ptrs`).
    blocks: Buckets<(&'m str, Range<usize>)>,
}

impl<'m> Context<'m> {
    /// One pass over the texts: pointers numbered in `paths`, the blocks
    /// of ledger ids kept (a block's pointers are asked again when it is
    /// not the original).
    fn read(messages: &'m [Message], ids: &LedgerIds, paths: &mut Interned) -> Self {
        let mut ptrs = Vec::with_capacity(messages.len());
        let mut blocks = Buckets::new(ids.count());
        for_each_text(messages, Thinking::Skip, |id, text| {
            let start = ptrs.len();
            for_each_pointer(text, |p| ptrs.push(paths.id(p)));
            if let Some(g) = id.and_then(|id| ids.group(id)) {
                blocks.push(g, (text, start..ptrs.len()));
            }
        });
        Context { ptrs, blocks }
    }
}

/// Pair-rule violations of each request, named by the request (1-based
/// model call) so repeats stay distinguishable.
fn request_violations(requests: &[Request]) -> impl Iterator<Item = String> + '_ {
    requests.iter().enumerate().flat_map(|(i, r)| {
        r.violations
            .iter()
            .map(move |v| format!("request {}: {v}", i + 1))
    })
}

/// Ids compacted before the model saw them, and ids compacted a second time.
fn placeholder_events(events: &[Event]) -> (Vec<&str>, Vec<&str>) {
    let (mut unseen, mut double) = (vec![], vec![]);
    for e in events {
        if let Event::Placeholder {
            id,
            was_placeholder,
            unseen: u,
            ..
        } = e
        {
            if *u {
                unseen.push(id.as_str());
            }
            if *was_placeholder {
                double.push(id.as_str());
            }
        }
    }
    (unseen, double)
}

/// Ids whose block in context is a raw result over the per-item threshold.
///
/// A pointer (a step-3 placeholder or a step-1 `<persisted-output>` text) is
/// not a result: at long paths a placeholder alone exceeds a small threshold.
fn oversized(messages: &[Message], large: usize) -> Vec<&str> {
    messages
        .iter()
        .flat_map(|m| m.blocks())
        .filter_map(|b| match b {
            Block::ToolResult {
                tool_use_id,
                content,
            } if content.len() > large // chars <= bytes: most need no count
                && super::persist::chars(content) > large
                && !is_placeholder(content)
                && !content.starts_with(PERSISTED_OPEN) =>
            {
                Some(tool_use_id.as_str())
            }
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pointers as three whole-text searches found them.
    fn pointers_by_search(text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        out.extend(super::super::persist::full_output_line(text));
        out.extend(placeholder_or_marker(text));
        for line in text.lines() {
            out.extend(line.strip_prefix(FULL_TRANSCRIPT));
        }
        out
    }

    proptest::proptest! {
        #[test]
        fn one_pass_finds_what_the_searches_find(
            parts in proptest::collection::vec(
                proptest::sample::select(vec![
                    "Full output: ", "Full transcript: ", "Full ", "F", "/p", "x", "é",
                    "\n", "\r", "\r\n", "\u{2028}", "\u{b}", "[", "]", "3",
                    " messages archived at ", SAVED_PREFIX,
                ]),
                0..12,
            ),
        ) {
            let text = parts.concat();
            proptest::prop_assert_eq!(pointers_in(&text), pointers_by_search(&text));
        }
    }

    /// A result file altered in storage after the run holds nothing: the
    /// checker compares what storage holds, not what was written.
    #[test]
    fn an_altered_saved_file_is_no_longer_held() {
        use super::super::probe::scenario_b;
        use super::super::session::Session;
        use super::super::LabRoot;
        let config = super::super::config::profile("prototype").unwrap().config;
        let script = scenario_b().normalised().unwrap();
        let root = LabRoot::new(None, script.reference_id_chars()).unwrap();
        let mut session = Session::new(Compactor::new(config, root).unwrap());
        session.run(&script).unwrap();
        let s = &session;
        let lost =
            || check(&s.compactor, &s.messages, &s.ledger, &s.requests).count_of("lost_forever");
        assert_eq!(lost(), Some(0));
        let saved = s.compactor.events.iter().find_map(|e| match e {
            Event::Saved { path, .. } => Some(Path::new(path)),
            _ => None,
        });
        let (fs, saved) = (s.compactor.root.fs(), saved.unwrap());
        let mut bytes = fs.read(saved).unwrap();
        bytes[0] ^= 1;
        fs.write(saved, &bytes).unwrap();
        assert_eq!(lost(), Some(1));
    }

    #[test]
    fn paths_sharing_a_tail_keep_their_own_numbers() {
        let mut paths = Interned::default();
        let tail = format!("/results/{}", "n".repeat(40));
        // Same length and last 32 bytes: one hash for all, past the table's first size.
        let all: Vec<String> = (100..200).map(|i| format!("/{i}{tail}")).collect();
        let ids: Vec<usize> = all.iter().map(|p| paths.id(p)).collect();
        assert_eq!(ids, (0..100).collect::<Vec<_>>());
        for (p, &i) in all.iter().zip(&ids) {
            assert_eq!((paths.id(p), paths.get(p)), (i, Some(i)));
        }
        assert_eq!((paths.get(&format!("/99{tail}")), paths.len()), (None, 100));
    }

    #[test]
    fn ledger_groups_hash_only_lengths_an_original_has() {
        let mut ledger = Ledger {
            originals: Vec::new(),
        };
        for (id, text) in [("b", "xx"), ("a", "y"), ("b", "zzz"), ("c", "q")] {
            ledger.record(id, text);
        }
        let ids = LedgerIds::new(&ledger);
        assert_eq!(ids.count(), 3);
        let groups = ["b", "a", "c", "d"].map(|id| ids.group(id));
        assert_eq!(groups, [Some(0), Some(1), Some(2), None]);
        assert_eq!(ids.of_entry, [0, 1, 0, 2]);
        // "a" has one original of 1 byte; "b" two of different lengths.
        assert!(ids.may_match(1, 1) && !ids.may_match(1, 2));
        assert!(ids.may_match(0, 7));
        let mut b = Buckets::new(3);
        for (g, item) in [(1, "x"), (0, "y"), (1, "z")] {
            b.push(g, item);
        }
        assert_eq!(b.of(1).copied().collect::<Vec<_>>(), ["z", "x"]);
        assert_eq!((b.of(0).count(), b.of(2).count()), (1, 0));
    }

    #[test]
    fn pair_rules_catch_both_directions() {
        let ok = vec![
            Message::user_text("go"),
            Message::assistant(vec![Block::ToolUse {
                id: "t1".into(),
                name: "bash".into(),
                input: serde_json::json!({}).into(),
            }]),
            Message::tool_results(vec![("t1".into(), "out".into())]),
        ];
        assert!(pair_violations(&ok).is_empty());
        let orphan_call = vec![
            ok[0].clone(),
            ok[1].clone(),
            Message::user_text("[1 messages archived at /x]"),
        ];
        assert_eq!(
            pair_violations(&orphan_call),
            vec!["msg 1: tool_use t1 unanswered"]
        );
        let orphan_result = vec![ok[0].clone(), ok[2].clone()];
        assert_eq!(
            pair_violations(&orphan_result),
            vec!["msg 1: tool_result t1 without its tool_use"]
        );
    }

    #[test]
    fn pointers_follow_every_convention() {
        assert_eq!(
            pointers_in("<persisted-output>\nFull output: /r/a.txt\nPreview:\nx"),
            vec!["/r/a.txt"]
        );
        assert_eq!(
            pointers_in("[Earlier tool result saved at /r/a.txt]"),
            vec!["/r/a.txt"]
        );
        assert_eq!(
            pointers_in("[3 messages archived at /t/1.jsonl]"),
            vec!["/t/1.jsonl"]
        );
        assert_eq!(
            pointers_in("[Compacted]\n\nFull transcript: /t/2.jsonl"),
            vec!["/t/2.jsonl"]
        );
        assert!(pointers_in("[Earlier tool result omitted.]").is_empty());
    }
}
