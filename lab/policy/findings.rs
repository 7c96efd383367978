//! The policy-agnostic checker: what any policy lost, and what lost its pointer.
//!
//! It knows no policy. It gets the original of every tool result (the
//! [`Ledger`]), the context at the end, the policy's [`PointerRule`]s and the
//! storage under the policy's root, and classifies every original:
//! - **in context**: a `tool_result` with its id still holds the full text;
//! - **held**: a file under the root holds it, either as its whole content or
//!   as a result with its id inside an archive (any JSON or JSON-lines file
//!   whose objects carry `tool_use_id`/`tool_call_id` and a string `content`);
//! - **pointed**: its block in context names a holder with the policy's
//!   rules; or, when the block itself is gone, the chain of pointers from the
//!   context (through archives that point further) reaches a holder.
//!
//! `lost_forever` = neither in context nor held; `pointer_lost` = held but not
//! pointed; `dangling_pointers` = pointers the model sees whose target no
//! longer exists; `orphans` = files under the root nothing reaches;
//! `archive_gaps` = an archive keeps a copy of a result that is neither the
//! original nor a pointer to a holder. The definitions are the course
//! checker's, so the course policies get the same counts from both.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::PointerRule;
use crate::fingerprint::fingerprint;
use crate::message::{for_each_text, Block, Message, Thinking};
use crate::storage::{FileKind, Storage};

/// Originals of every tool result, in the order they arrived.
///
/// Every occurrence is its own original: recorded sessions reuse call ids
/// (one SWE-agent demo answers `call_5iDd…` four times), and each answer is a
/// different text the model may need.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ledger {
    /// `(tool id, original content)`.
    pub originals: Vec<(String, String)>,
}

impl Ledger {
    /// Record every result of `m`.
    pub fn record(&mut self, m: &Message) {
        for b in m.blocks() {
            if let Block::ToolResult {
                tool_use_id,
                content,
            } = b
            {
                self.originals.push((tool_use_id.clone(), content.clone()));
            }
        }
    }
}

/// A counter with a few sample ids.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Count {
    /// How many.
    pub count: u64,
    /// Up to [`SAMPLES`] ids or paths, in order.
    pub samples: Vec<String>,
}

/// Samples kept per counter.
pub const SAMPLES: usize = 3;

impl Count {
    fn push(&mut self, what: impl Into<String>) {
        self.count += 1;
        if self.samples.len() < SAMPLES {
            self.samples.push(what.into());
        }
    }
}

/// What the checker found at the end of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Findings {
    /// Originals neither in context nor held anywhere.
    pub lost_forever: Count,
    /// Originals held, but nothing the model sees leads there.
    pub pointer_lost: Count,
    /// Pointers the model sees whose target does not exist.
    pub dangling_pointers: Count,
    /// Files under the root that nothing in context reaches.
    pub orphans: Count,
    /// Archived copies that are neither the original nor lead to it.
    pub archive_gaps: Count,
    /// Originals still verbatim in context.
    pub in_context: u64,
    /// Tool results in the ledger.
    pub originals: u64,
}

/// One archived copy of a tool result.
#[derive(Debug)]
struct ArchivedCopy {
    /// The archive holding it.
    archive: String,
    /// [`fingerprint`] of the archived content.
    print: (u64, usize),
    /// Paths the archived content points to.
    pointers: Vec<String>,
}

/// Every file under the root, read once.
#[derive(Debug, Default)]
struct Files {
    /// Fingerprint of a file's whole content -> files with it.
    whole: BTreeMap<(u64, usize), BTreeSet<String>>,
    /// Tool id -> its copies across all archives.
    copies: BTreeMap<String, Vec<ArchivedCopy>>,
    /// File -> every path its texts point to.
    pointers: BTreeMap<String, BTreeSet<String>>,
    /// Every file, sorted.
    all: Vec<String>,
}

/// Every regular file below `dir` (symlinks are not followed), sorted.
pub fn walk(fs: &dyn Storage, dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for name in fs.list(&d).unwrap_or_default() {
            let p = d.join(name);
            match fs.kind(&p) {
                Some(FileKind::Dir) => stack.push(p),
                Some(FileKind::File) => out.push(p),
                _ => {}
            }
        }
    }
    out.sort();
    out
}

/// Every pointer `rules` find in what the model sees of `messages`: each
/// text, thinking and tool-result block on its own, as the checker reads a
/// request (a `Wrapped` placeholder is a whole block, so a request joined
/// into one text would never match it). Retention walks requests with this
/// same function.
pub fn pointers_in_messages(rules: &[PointerRule], messages: &[Message]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for_each_text(messages, Thinking::Read, |_, text| {
        out.extend(
            super::pointers_in(rules, text)
                .into_iter()
                .map(str::to_string),
        );
    });
    out
}

/// The JSON documents of a stored file: the whole text, else one per line
/// (JSON Lines archives); none for plain text.
fn json_docs(text: &str) -> Vec<serde_json::Value> {
    match serde_json::from_str(text) {
        Ok(v) => vec![v],
        Err(_) => text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect(),
    }
}

/// Every pointer `rules` find in a stored file: in its raw text and in each
/// string of its JSON documents (an archive holds a placeholder as one
/// escaped string). The checker and retention follow files with this.
pub fn pointers_in_file(rules: &[PointerRule], text: &str) -> BTreeSet<String> {
    pointers_in_docs(rules, text, &json_docs(text))
}

fn pointers_in_docs(
    rules: &[PointerRule],
    text: &str,
    docs: &[serde_json::Value],
) -> BTreeSet<String> {
    let mut ptrs: BTreeSet<String> = super::pointers_in(rules, text)
        .into_iter()
        .map(str::to_string)
        .collect();
    for doc in docs {
        walk_json(
            doc,
            &mut |s| ptrs.extend(super::pointers_in(rules, s).into_iter().map(str::to_string)),
            &mut |_, _| {},
        );
    }
    ptrs
}

/// Visit every string in a JSON value, and every `(id, content)` result object.
fn walk_json<'v>(
    v: &'v serde_json::Value,
    text: &mut impl FnMut(&'v str),
    result: &mut impl FnMut(&'v str, &'v str),
) {
    use serde_json::Value;
    match v {
        Value::String(s) => text(s),
        Value::Array(a) => a.iter().for_each(|x| walk_json(x, text, result)),
        Value::Object(o) => {
            let id = o.get("tool_use_id").or_else(|| o.get("tool_call_id"));
            if let (Some(Value::String(id)), Some(Value::String(c))) = (id, o.get("content")) {
                result(id, c);
            }
            o.values().for_each(|x| walk_json(x, text, result));
        }
        _ => {}
    }
}

impl Files {
    fn read(fs: &dyn Storage, root: &Path, rules: &[PointerRule]) -> Files {
        let mut files = Files::default();
        for path in walk(fs, root) {
            let key = path.to_string_lossy().into_owned();
            let Ok(bytes) = fs.read(&path) else { continue };
            let text = String::from_utf8_lossy(&bytes);
            files.index(&key, &text, rules);
            files.all.push(key);
        }
        files
    }

    fn index(&mut self, key: &str, text: &str, rules: &[PointerRule]) {
        self.whole
            .entry(fingerprint(text))
            .or_default()
            .insert(key.to_string());
        let docs = json_docs(text);
        let ptrs = pointers_in_docs(rules, text, &docs);
        for doc in &docs {
            let mut found = Vec::new();
            walk_json(doc, &mut |_| {}, &mut |id, c| found.push((id, c)));
            for (id, c) in found {
                let pointers = super::pointers_in(rules, c)
                    .into_iter()
                    .map(str::to_string)
                    .collect();
                self.copies
                    .entry(id.to_string())
                    .or_default()
                    .push(ArchivedCopy {
                        archive: key.to_string(),
                        print: fingerprint(c),
                        pointers,
                    });
            }
        }
        self.pointers.insert(key.to_string(), ptrs);
    }
}

/// Check the end of a run. Pure with respect to the run: it only reads.
pub fn check(
    context: &[Message],
    ledger: &Ledger,
    rules: &[PointerRule],
    fs: &dyn Storage,
    root: &Path,
) -> Findings {
    let files = Files::read(fs, root, rules);
    let mut in_context: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    // Every text the model sees, thinking included.
    for_each_text(context, Thinking::Read, |id, text| {
        if let Some(id) = id {
            in_context.entry(id).or_default().push(text);
        }
    });
    let seen_ptrs = pointers_in_messages(rules, context);
    let reachable = reach(&seen_ptrs, &files.pointers);
    let mut f = Findings {
        originals: ledger.originals.len() as u64,
        ..Findings::default()
    };
    for (id, original) in &ledger.originals {
        let blocks = in_context.get(id.as_str()).cloned().unwrap_or_default();
        if blocks.contains(&original.as_str()) {
            f.in_context += 1;
            continue;
        }
        classify(&mut f, id, original, &blocks, &files, &reachable, rules);
    }
    let recorded = recorded_pointers(ledger, rules);
    for p in &reachable {
        if fs.kind(Path::new(p)).is_none() && !recorded.contains(p.as_str()) {
            f.dangling_pointers.push(p.clone());
        }
    }
    for p in files.all.iter().filter(|p| !reachable.contains(*p)) {
        f.orphans.push(p.clone());
    }
    f
}

/// Pointers the recorded tool results already carry: the product wrote them
/// (Claude Code persists large outputs itself), so their targets were never
/// in the lab's storage, and a policy that keeps them has not dangled them.
fn recorded_pointers<'l>(ledger: &'l Ledger, rules: &[PointerRule]) -> BTreeSet<&'l str> {
    ledger
        .originals
        .iter()
        .flat_map(|(_, text)| super::pointers_in(rules, text))
        .collect()
}

/// Every path reachable from `start` by following pointers through files.
fn reach(start: &BTreeSet<String>, edges: &BTreeMap<String, BTreeSet<String>>) -> BTreeSet<String> {
    let mut reachable = start.clone();
    let mut frontier: Vec<String> = start.iter().cloned().collect();
    while let Some(p) = frontier.pop() {
        for n in edges.get(&p).into_iter().flatten() {
            if reachable.insert(n.clone()) {
                frontier.push(n.clone());
            }
        }
    }
    reachable
}

/// One original that is not verbatim in context: lost, pointer lost, or fine.
fn classify(
    f: &mut Findings,
    id: &str,
    original: &str,
    blocks: &[&str],
    files: &Files,
    reachable: &BTreeSet<String>,
    rules: &[PointerRule],
) {
    let print = fingerprint(original);
    let mut holders: BTreeSet<&str> = files
        .whole
        .get(&print)
        .into_iter()
        .flatten()
        .map(String::as_str)
        .collect();
    let copies = files.copies.get(id).map_or(&[][..], Vec::as_slice);
    holders.extend(
        copies
            .iter()
            .filter(|c| c.print == print)
            .map(|c| c.archive.as_str()),
    );
    if !copies.is_empty()
        && !copies
            .iter()
            .any(|c| c.print == print || c.pointers.iter().any(|p| holders.contains(p.as_str())))
    {
        f.archive_gaps.push(id);
    }
    if holders.is_empty() {
        f.lost_forever.push(id);
        return;
    }
    let pointed = if blocks.is_empty() {
        holders.iter().any(|h| reachable.contains(*h))
    } else {
        blocks.iter().any(|c| {
            super::pointers_in(rules, c)
                .iter()
                .any(|p| holders.contains(p))
        })
    };
    if !pointed {
        f.pointer_lost.push(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemFs;
    use serde_json::json;

    const RULES: &[PointerRule] = &[PointerRule::line_prefix("Saved: ")];

    fn call(id: &str) -> Message {
        Message::assistant(vec![Block::ToolUse {
            id: id.into(),
            name: "read".into(),
            input: json!({}).into(),
        }])
    }
    fn result(id: &str, text: &str) -> Message {
        Message::tool_results(vec![(id.into(), text.into())])
    }
    fn ledger(items: &[(&str, &str)]) -> Ledger {
        let mut l = Ledger::default();
        for (id, text) in items {
            l.record(&result(id, text));
        }
        l
    }

    #[test]
    fn verbatim_pointed_lost_and_pointer_lost_are_told_apart() {
        let fs = MemFs::new();
        let root = Path::new("/run/p");
        fs.create_dir_all(root).unwrap();
        fs.write_new(&root.join("a.txt"), b"AAAA").unwrap();
        fs.write_new(&root.join("b.txt"), b"BBBB").unwrap();
        let l = ledger(&[("a", "AAAA"), ("b", "BBBB"), ("c", "CCCC"), ("d", "DDDD")]);
        let context = vec![
            call("a"),
            result("a", "cleared\nSaved: /run/p/a.txt"),
            call("b"),
            result("b", "[cleared]"),
            call("c"),
            result("c", "[cleared]"),
            call("d"),
            result("d", "DDDD"),
        ];
        let f = check(&context, &l, RULES, &fs, root);
        assert_eq!(f.in_context, 1);
        assert_eq!(f.lost_forever.samples, vec!["c"]);
        assert_eq!(f.pointer_lost.samples, vec!["b"]);
        assert_eq!(f.orphans.samples, vec!["/run/p/b.txt"]);
        assert_eq!(f.dangling_pointers.count, 0);
    }

    #[test]
    fn a_deleted_target_is_a_dangling_pointer_and_the_result_is_lost() {
        let fs = MemFs::new();
        let root = Path::new("/run/p");
        fs.create_dir_all(root).unwrap();
        let l = ledger(&[("a", "AAAA")]);
        let context = vec![call("a"), result("a", "Saved: /run/p/gone.txt")];
        let f = check(&context, &l, RULES, &fs, root);
        assert_eq!(f.lost_forever.count, 1);
        assert_eq!(f.dangling_pointers.samples, vec!["/run/p/gone.txt"]);
    }

    #[test]
    fn a_pointer_the_product_recorded_is_not_the_policys_dangling_pointer() {
        let fs = MemFs::new();
        let root = Path::new("/run/p");
        fs.create_dir_all(root).unwrap();
        // The recorded result already points to the product's own file.
        let l = ledger(&[("a", "Saved: /home/u/tool-results/a.txt")]);
        let kept = vec![call("a"), result("a", "Saved: /home/u/tool-results/a.txt")];
        assert_eq!(
            check(&kept, &l, RULES, &fs, root).dangling_pointers.count,
            0
        );
        // A pointer the policy wrote to a file that is gone still dangles.
        let policy = vec![call("a"), result("a", "Saved: /run/p/a.txt")];
        let f = check(&policy, &l, RULES, &fs, root);
        assert_eq!(f.dangling_pointers.samples, vec!["/run/p/a.txt"]);
    }

    #[test]
    fn archives_hold_results_and_chain_pointers() {
        let fs = MemFs::new();
        let root = Path::new("/run/p");
        fs.create_dir_all(root).unwrap();
        // An archive (JSON lines of messages) holding a's original and a stub of b.
        let lines = [
            serde_json::to_string(&result("a", "AAAA")).unwrap(),
            serde_json::to_string(&result("b", "[cleared]")).unwrap(),
        ];
        fs.write_new(&root.join("t.jsonl"), lines.join("\n").as_bytes())
            .unwrap();
        let l = ledger(&[("a", "AAAA"), ("b", "BBBB")]);
        // Both blocks are gone; a summary points at the archive.
        let context = vec![Message::user_text("summary\nSaved: /run/p/t.jsonl")];
        let f = check(&context, &l, RULES, &fs, root);
        assert_eq!(f.lost_forever.samples, vec!["b"]);
        assert_eq!(f.pointer_lost.count, 0);
        assert_eq!(f.archive_gaps.samples, vec!["b"]);
        assert_eq!(f.orphans.count, 0);

        // Without the summary's pointer the archive still holds a, unreachably.
        let f = check(&[], &l, RULES, &fs, root);
        assert_eq!(f.pointer_lost.samples, vec!["a"]);
        assert_eq!(f.orphans.samples, vec!["/run/p/t.jsonl"]);
    }
}
