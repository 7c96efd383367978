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

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use super::archived::for_each_archive_text;
pub use super::pairs::pair_violations;
use super::persist::{full_output_line, is_placeholder, PERSISTED_OPEN, SAVED_PREFIX};
use super::session::{Ledger, Request};
use super::snip::marker_path;
use super::summary::FULL_TRANSCRIPT;
use super::{Compactor, Event};
use crate::counters::Counters;
use crate::message::{for_each_text, Block, Message, Thinking};
use crate::storage::{join_all, Storage};

/// Every path a text points to, by the conventions of the four steps.
pub fn pointers_in(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    // Both line conventions start with "Full ": one search rules out both
    // in a text that has neither (most results), instead of one each.
    static FULL: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new("Full "));
    let has_full = FULL.find(text.as_bytes()).is_some();
    if !has_full {
        out.extend(placeholder_or_marker(text));
        return out;
    }
    if let Some(p) = full_output_line(text) {
        out.push(p);
    }
    out.extend(placeholder_or_marker(text));
    static FINDER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(FULL_TRANSCRIPT));
    if FINDER.find(text.as_bytes()).is_some() {
        for line in text.lines() {
            if let Some(p) = line.strip_prefix(FULL_TRANSCRIPT) {
                out.push(p);
            }
        }
    }
    out
}

/// The pointer of a step-3 placeholder and of a snip marker (a text is
/// at most one of them: both span the whole text).
fn placeholder_or_marker(text: &str) -> Option<&str> {
    text.strip_prefix(SAVED_PREFIX)
        .and_then(|rest| rest.strip_suffix(']'))
        .or_else(|| marker_path(text))
}

/// The pointers of the final context, numbered in `paths`.
fn message_pointers(messages: &[Message], paths: &mut Interned) -> Vec<usize> {
    let mut out = Vec::new();
    for_each_text(messages, Thinking::Skip, |_, text| {
        out.extend(pointers_in(text).into_iter().map(|p| paths.id(p)))
    });
    out
}

/// A content's identity for the ledger and archive lookups: a 64-bit
/// foldhash (quality variant, fixed seed, so deterministic within and
/// across runs of one build) plus the length. Archives hold the whole
/// context on every snip and the ledger every original result, so keeping
/// each string to compare it later would make memory grow with the session;
/// a collision needs equal length and hash. Fingerprints are only compared
/// within a run, never stored or printed.
pub fn fingerprint(content: &str) -> (u64, usize) {
    fingerprint_bytes(content.as_bytes())
}

/// [`fingerprint`] of raw bytes; of a text's bytes, the text's. A held file
/// is compared by its bytes: only the original's bytes (valid UTF-8) can
/// match, up to the collision every fingerprint accepts, so its UTF-8 need
/// not be checked first. (The 0xFF after the bytes is what hashing a `str`
/// writes, so the numbers are those of `hash_one(content)`.)
fn fingerprint_bytes(content: &[u8]) -> (u64, usize) {
    use std::hash::{BuildHasher, Hasher};
    const STATE: foldhash::quality::FixedState =
        foldhash::quality::FixedState::with_seed(0x6374_786c_6162);
    let mut h = STATE.build_hasher();
    h.write(content);
    h.write_u8(0xff);
    (h.finish(), content.len())
}

/// Does `content` have fingerprint `print`? The length is compared first:
/// most texts that are not the original (placeholders, previews) differ in
/// length, and then need no hash.
fn has_print(content: &str, print: (u64, usize)) -> bool {
    has_print_bytes(content.as_bytes(), print)
}

/// [`has_print`] of raw bytes (see [`fingerprint_bytes`]).
fn has_print_bytes(content: &[u8], print: (u64, usize)) -> bool {
    content.len() == print.1 && fingerprint_bytes(content) == print
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
#[derive(Default)]
struct Interned(HashMap<Box<str>, usize, foldhash::fast::FixedState>);

impl Interned {
    /// The number of `s`, given it now if it has none.
    fn id(&mut self, s: &str) -> usize {
        if let Some(&i) = self.0.get(s) {
            return i;
        }
        let i = self.0.len();
        self.0.insert(s.into(), i);
        i
    }

    fn get(&self, s: &str) -> Option<usize> {
        self.0.get(s).copied()
    }
}

/// One archived copy of a tool result.
struct ArchivedCopy {
    /// Index into [`ArchiveIndex::paths`].
    archive: usize,
    /// [`fingerprint`] of the archived content.
    print: (u64, usize),
    /// Paths the archived content points to (numbered).
    pointers: Vec<usize>,
}

/// Every archived transcript, read once and indexed by tool id.
#[derive(Default)]
struct ArchiveIndex {
    /// Transcript paths (numbered), sorted by path.
    paths: Vec<usize>,
    /// Tool id -> its copies across all archives.
    copies: HashMap<Box<str>, Vec<ArchivedCopy>, foldhash::fast::FixedState>,
    /// Transcript (numbered path) -> every path its messages point to.
    pointers: HashMap<usize, Vec<usize>, foldhash::fast::FixedState>,
}

impl ArchiveIndex {
    fn read(fs: &dyn Storage, dir: &Path, paths: &mut Interned) -> Self {
        let mut index = ArchiveIndex::default();
        for (key, _) in sorted_files(fs, dir) {
            let archive = index.paths.len();
            // One scan per text: its pointers serve both the copy and the archive's set.
            let mut archive_ptrs = Vec::new();
            // A damaged transcript (unreadable, not UTF-8) holds nothing usable.
            let _ = fs.read_with(Path::new(&key), &mut |bytes| {
                let Ok(text) = std::str::from_utf8(bytes) else {
                    return;
                };
                index.index_text(text, archive, &mut archive_ptrs, paths);
            });
            let key = paths.id(&key);
            index.pointers.insert(key, archive_ptrs);
            index.paths.push(key);
        }
        index
    }

    /// Index the lines of archive number `archive`; its pointers go to `archive_ptrs`.
    fn index_text(
        &mut self,
        text: &str,
        archive: usize,
        archive_ptrs: &mut Vec<usize>,
        paths: &mut Interned,
    ) {
        for_each_archive_text(text, |id, text| {
            let pointers: Vec<usize> = pointers_in(text).into_iter().map(|p| paths.id(p)).collect();
            archive_ptrs.extend(&pointers);
            if let Some(id) = id {
                let copy = ArchivedCopy {
                    archive,
                    print: fingerprint(text),
                    pointers,
                };
                match self.copies.get_mut(id) {
                    Some(copies) => copies.push(copy),
                    None => {
                        self.copies.insert(id.into(), vec![copy]);
                    }
                }
            }
        });
    }
}

/// Regular files of `dir` as (path, file name), sorted (a missing dir has none).
fn sorted_files(fs: &dyn Storage, dir: &Path) -> Vec<(String, String)> {
    let names = fs.list_files(dir).unwrap_or_default();
    let paths = join_all(dir, names.iter().map(String::as_str));
    paths.into_iter().zip(names).collect()
}

fn ids(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

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
    let archives = ArchiveIndex::read(fs, root.transcripts(), &mut paths);
    let context = message_pointers(messages, &mut paths);
    let reachable = reachable_from(context, &archives, paths.0.len());
    let reached = |p: usize| reachable.get(p).copied().unwrap_or(false);
    let losses = classify(compactor, messages, ledger, &archives, &reached, &mut paths);
    let (request_violations, violations) = violations(requests, messages);
    let invalid = requests.iter().filter(|r| !r.violations.is_empty()).count() as u64;
    let (unseen, double) = placeholder_events(&compactor.events);
    let result_files = sorted_files(fs, root.results());
    let orphans: Vec<String> = result_files
        .iter()
        .filter(|(p, _)| !paths.get(p).is_some_and(reached))
        .map(|(_, name)| name.clone())
        .collect();
    let oversized = oversized(messages, compactor.config.constants.large_result_chars);
    let events = |f: fn(&Event) -> bool| compactor.events.iter().filter(|e| f(e)).count() as u64;

    let mut c = Counters::default();
    let mut count = |name: &str, v: &[&str]| c.count(name, v.len() as u64, ids(v));
    count("lost_forever", &losses.lost);
    count("pointer_lost", &losses.pointer_lost);
    count("recoverable_via_archive", &losses.via_archive);
    c.flag("pairs_intact", violations.is_empty(), violations);
    c.count("invalid_requests", invalid, request_violations);
    c.count("unseen_compacted", unseen.len() as u64, ids(&unseen));
    c.count("double_compacted", double.len() as u64, ids(&double));
    c.count("orphan_files", orphans.len() as u64, orphans);
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
    c.list(
        "persisted_files",
        result_files.into_iter().map(|(_, name)| name).collect(),
    );
    c
}

/// Which numbered paths are reachable from the context's pointers through
/// archives (indexed by number; `paths` numbers exist so far).
fn reachable_from(context: Vec<usize>, archives: &ArchiveIndex, paths: usize) -> Vec<bool> {
    let mut reachable = vec![false; paths];
    for &p in &context {
        reachable[p] = true;
    }
    let mut frontier = context;
    while let Some(p) = frontier.pop() {
        for &n in archives.pointers.get(&p).into_iter().flatten() {
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

/// Classify every original tool result that is not in context in full.
fn classify<'a>(
    compactor: &'a Compactor,
    messages: &'a [Message],
    ledger: &'a Ledger,
    archives: &ArchiveIndex,
    reached: &dyn Fn(usize) -> bool,
    paths: &mut Interned,
) -> Losses<'a> {
    let saved_for = saved_for(&compactor.events);
    let in_context = in_context(messages);
    let fs = compactor.root.fs();
    let mut out = Losses::default();
    for (id, print) in &ledger.originals {
        let print = *print;
        let blocks = in_context.get(id.as_str()).map_or(&[][..], Vec::as_slice);
        if blocks.iter().any(|b| has_print(b, print)) {
            continue;
        }
        // Held: the same text (its bytes; see `fingerprint_bytes`) under a
        // numbered path (a repeat is harmless, only membership is asked).
        let mut holders: Vec<usize> = Vec::new();
        for p in saved_for.get(id.as_str()).into_iter().flatten() {
            let mut same = false;
            let read = fs.read_with(Path::new(p), &mut |b| same = has_print_bytes(b, print));
            if read.is_ok() && same {
                holders.push(paths.id(p));
            }
        }
        let copies = archives
            .copies
            .get(id.as_str())
            .map_or(&[][..], Vec::as_slice);
        for c in copies.iter().filter(|c| c.print == print) {
            holders.push(archives.paths[c.archive]);
        }
        // An archive that kept only a stub with no way back has a gap.
        if !copies.is_empty()
            && !copies
                .iter()
                .any(|c| c.print == print || c.pointers.iter().any(|p| holders.contains(p)))
        {
            out.gaps.push(id.as_str());
        }
        if holders.is_empty() {
            out.lost.push(id.as_str());
            continue;
        }
        let reachable_holder = holders.iter().any(|&h| reached(h));
        if blocks.is_empty() {
            // Snipped or summarised away: the marker / summary chain must lead back.
            if !reachable_holder {
                out.pointer_lost.push(id.as_str());
            }
        } else if !blocks.iter().any(|c| {
            pointers_in(c)
                .iter()
                .any(|p| paths.get(p).is_some_and(|p| holders.contains(&p)))
        }) {
            // The block the model sees names no file that holds the original.
            out.pointer_lost.push(id.as_str());
            if reachable_holder {
                out.via_archive.push(id.as_str());
            }
        }
    }
    out
}

/// Result files saved for each id.
fn saved_for(events: &[Event]) -> BTreeMap<&str, BTreeSet<&str>> {
    let mut saved_for: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for e in events {
        if let Event::Saved { id, path, .. } = e {
            saved_for
                .entry(id.as_str())
                .or_default()
                .insert(path.as_str());
        }
    }
    saved_for
}

/// id -> every content its tool_result blocks have in the final context.
fn in_context(messages: &[Message]) -> BTreeMap<&str, Vec<&str>> {
    let mut in_context: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for b in messages.iter().flat_map(|m| m.blocks()) {
        if let Block::ToolResult {
            tool_use_id,
            content,
        } = b
        {
            in_context
                .entry(tool_use_id.as_str())
                .or_default()
                .push(content.as_str());
        }
    }
    in_context
}

/// Pair-rule violations of each request, then those plus the final context's.
fn violations(requests: &[Request], messages: &[Message]) -> (Vec<String>, Vec<String>) {
    // Samples name the request (1-based model call) so repeats stay distinguishable.
    let request_violations: Vec<String> = requests
        .iter()
        .enumerate()
        .flat_map(|(i, r)| {
            r.violations
                .iter()
                .map(move |v| format!("request {}: {v}", i + 1))
        })
        .collect();
    let mut all = request_violations.clone();
    all.extend(
        pair_violations(messages)
            .into_iter()
            .map(|v| format!("final: {v}")),
    );
    (request_violations, all)
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
            } if content.chars().count() > large
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

    proptest::proptest! {
        #[test]
        fn fingerprint_is_the_hash_of_the_text(s in "(?s).{0,60}", cut in 0usize..60) {
            use std::hash::BuildHasher;
            let state = foldhash::quality::FixedState::with_seed(0x6374_786c_6162);
            proptest::prop_assert_eq!(fingerprint(&s), (state.hash_one(s.as_str()), s.len()));
            proptest::prop_assert!(has_print_bytes(s.as_bytes(), fingerprint(&s)));
            // Other bytes of the same length (a non-UTF-8 one among them) do not match.
            let mut other = s.clone().into_bytes();
            if let Some(b) = other.get_mut(cut) {
                *b = if *b == 0xff { 0xfe } else { 0xff };
                proptest::prop_assert!(!has_print_bytes(&other, fingerprint(&s)));
            }
        }
    }

    #[test]
    fn pair_rules_catch_both_directions() {
        let ok = vec![
            Message::user_text("go"),
            Message::assistant(vec![Block::ToolUse {
                id: "t1".into(),
                name: "bash".into(),
                input: serde_json::json!({}),
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
