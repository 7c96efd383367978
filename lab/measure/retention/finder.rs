//! Which known artifacts a text holds verbatim.
//!
//! Rebuilding one automaton over every artifact seen so far at each request
//! that brought a new one, then scanning the whole request with it,
//! dominated a retention replay of a long session. A [`Finder`] prepared
//! with the whole session ([`Patterns::new`], shared by every run of the session) builds its automata
//! once, over every artifact the session will bring, and reports a hit only
//! for artifacts already registered: an Aho-Corasick overlapping search
//! reports every occurrence of every pattern whatever the other patterns
//! are, so the hits among registered artifacts are exactly those of an
//! automaton over them alone. Since those hits never change for a given
//! text, a request's pieces (its blocks, each ending with a newline) are
//! scanned once each and remembered; an artifact with a newline may span
//! pieces and is searched for in the whole request. An artifact the
//! preparation did not foresee goes to a third automaton rebuilt when that
//! set grows (for an unprepared finder this is every artifact, which is the
//! old behaviour).

use std::collections::HashMap;
use std::sync::Arc;

use aho_corasick::{AhoCorasick, AhoCorasickKind};

use super::extract::ArtifactKind;

/// An artifact's identity: its kind and verbatim text.
pub type Key = (ArtifactKind, String);

/// Finds registered artifacts in texts; see the module documentation.
#[derive(Debug, Default)]
pub struct Finder {
    /// The foreseen patterns and their automata, shared by every finder
    /// prepared for the same session ([`Finder::sharing`]).
    patterns: Arc<Patterns>,
    /// Pattern id -> artifact index, once registered.
    slot: Vec<Option<usize>>,
    /// Piece of a request -> the pattern ids of `lines` it holds (hashed
    /// by foldhash: the keys are whole tool results, looked up for every
    /// message a run sends that retention has not read).
    seen_pieces: HashMap<String, Vec<usize>, foldhash::fast::RandomState>,
    /// File path -> the pattern ids of `lines` and of `multi` its text holds.
    seen_files: HashMap<String, (Vec<usize>, Vec<usize>)>,
    /// Registered artifacts nobody foresaw: (artifact index, text).
    extra: Vec<(usize, String)>,
    /// The automaton over `extra`, and how many of them it covers.
    extra_matcher: Option<AhoCorasick>,
    extra_built: usize,
    /// The last request's text and its hits, for [`Finder::mark_present_in`].
    whole: WholeText,
}

/// The text of the request last searched whole, the end of each message's
/// text in it, and every hit of the newline and unforeseen automata in it
/// by where it ends (an overlapping search reports each occurrence
/// whatever else surrounds it, so the hits ending in an unchanged prefix
/// of the text stay what they were).
#[derive(Debug, Default)]
struct WholeText {
    text: String,
    ends: Vec<usize>,
    hits: Vec<(usize, Hit)>,
    /// How many unforeseen artifacts the automaton covered then.
    extra_built: usize,
    /// Bytes searched, over the finder's life (read by tests only).
    #[cfg(test)]
    scanned: usize,
}

/// One hit in the whole text: a foreseen pattern id of the newline
/// automaton, or the artifact index of an unforeseen one.
#[derive(Debug, Clone, Copy)]
enum Hit {
    Multi(usize),
    Extra(usize),
}

/// The foreseen patterns of a session and their automata: built once,
/// read by every run's finder.
#[derive(Debug, Default)]
pub struct Patterns {
    /// Foreseen key -> its pattern id (an index into a finder's `slot`).
    foreseen: HashMap<Key, usize>,
    /// Foreseen patterns without a newline, and their pattern ids.
    lines: Automaton,
    /// Foreseen patterns with a newline, and their pattern ids.
    multi: Automaton,
}

impl Patterns {
    /// Automata over `patterns` (the session's artifacts, duplicates
    /// allowed: the first of a key is used).
    pub fn new(patterns: Vec<Key>) -> Self {
        let mut foreseen = HashMap::new();
        let mut texts = Vec::new();
        for key in patterns {
            if let std::collections::hash_map::Entry::Vacant(e) = foreseen.entry(key) {
                texts.push(e.key().1.clone());
                e.insert(texts.len() - 1);
            }
        }
        let (multi, lines): (Vec<usize>, Vec<usize>) =
            (0..texts.len()).partition(|&i| texts[i].contains('\n'));
        Patterns {
            lines: Automaton::new(&texts, lines),
            multi: Automaton::new(&texts, multi),
            foreseen,
        }
    }
}

/// One automaton over some of the foreseen patterns.
#[derive(Debug, Default)]
struct Automaton {
    matcher: Option<AhoCorasick>,
    /// Its pattern index -> the finder's pattern id.
    ids: Vec<usize>,
}

impl Automaton {
    /// Over `texts[i]` for each `i` in `ids`. A DFA: built once, it is
    /// searched at every request.
    fn new(texts: &[String], ids: Vec<usize>) -> Self {
        if ids.is_empty() {
            return Automaton::default();
        }
        let pats: Vec<&str> = ids.iter().map(|&i| texts[i].as_str()).collect();
        let matcher = AhoCorasick::builder()
            .kind(Some(AhoCorasickKind::DFA))
            .build(&pats)
            .or_else(|_| AhoCorasick::new(&pats))
            .ok();
        Automaton { matcher, ids }
    }

    /// The finder's pattern ids found in `text`, each occurrence.
    fn hits<'a>(&'a self, text: &'a str) -> impl Iterator<Item = usize> + 'a {
        self.matcher
            .iter()
            .flat_map(move |m| m.find_overlapping_iter(text))
            .map(|x| self.ids[x.pattern().as_usize()])
    }
}

impl Finder {
    /// A finder over automata built before (by [`Patterns::new`]), with
    /// nothing registered: one per run of the same session.
    pub fn sharing(patterns: Arc<Patterns>) -> Self {
        Finder {
            slot: vec![None; patterns.foreseen.len()],
            patterns,
            ..Finder::default()
        }
    }

    /// Artifact `index` with `key` is now known: later searches report it.
    pub fn register(&mut self, key: &Key, index: usize) {
        match self.patterns.foreseen.get(key) {
            Some(&p) => self.slot[p] = Some(index),
            None => self.extra.push((index, key.1.clone())),
        }
    }

    /// The registered artifacts found verbatim in the text of the file at
    /// `path`, sorted, each once. The text must be the same at every call
    /// (the observer reads a file once): it is scanned for foreseen
    /// artifacts once, and later calls only look up which of them are
    /// registered by now.
    pub fn find_in_file(&mut self, path: &str, text: &str) -> Vec<usize> {
        if !self.seen_files.contains_key(path) {
            let lines = distinct(self.patterns.lines.hits(text));
            let multi = distinct(self.patterns.multi.hits(text));
            self.seen_files.insert(path.to_string(), (lines, multi));
        }
        let (lines, multi) = &self.seen_files[path];
        let mut out: Vec<usize> = lines
            .iter()
            .chain(multi)
            .filter_map(|&p| self.slot[p])
            .collect();
        self.refresh_extra();
        if let Some(m) = &self.extra_matcher {
            out.extend(
                m.find_overlapping_iter(text)
                    .map(|x| self.extra[x.pattern().as_usize()].0),
            );
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The foreseen patterns without a newline (registered or not) that a
    /// `text` made of pieces ending at `ends`, each with a newline, holds:
    /// pattern ids, sorted, each once. Each distinct piece is scanned once
    /// over the finder's life. Such a pattern cannot span two pieces, so
    /// the ids of a request are the union of its messages' ids.
    pub fn lines_in(&mut self, text: &str, ends: &[usize]) -> Vec<usize> {
        let mut out = Vec::new();
        let mut start = 0;
        for &end in ends {
            let piece = &text[start..end];
            start = end;
            match self.seen_pieces.get(piece) {
                Some(hits) => out.extend_from_slice(hits),
                None => {
                    let hits = distinct(self.patterns.lines.hits(piece));
                    out.extend_from_slice(&hits);
                    self.seen_pieces.insert(piece.to_string(), hits);
                }
            }
        }
        out.extend(self.patterns.lines.hits(&text[start..]));
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Mark in `present` (indexed by artifact) the registered artifacts
    /// among the pattern ids `lines` (from [`Finder::lines_in`] over the
    /// request's pieces), and, when [`Finder::needs_whole_text`], those
    /// with a newline and the unforeseen ones found in the text of
    /// `request`. The first `kept` messages of `request` are those of the
    /// request last given here, unchanged and in place: their text and
    /// the hits that end in it are kept from then, and only the rest of
    /// the text (from a pattern's length before it) is searched.
    pub fn mark_present_in(
        &mut self,
        lines: impl Iterator<Item = usize>,
        request: &[crate::message::Message],
        kept: usize,
        present: &mut [bool],
    ) {
        for i in lines.filter_map(|p| self.slot[p]) {
            present[i] = true;
        }
        if !self.needs_whole_text() {
            self.whole = WholeText::default();
            return;
        }
        self.refresh_extra();
        let multi = &self.patterns.multi;
        let whole = &mut self.whole;
        // A rebuilt automaton over the unforeseen artifacts may hit
        // anywhere: the text is searched from its start.
        let kept = if whole.extra_built == self.extra_built {
            kept.min(whole.ends.len())
        } else {
            0
        };
        let kept_end = kept.checked_sub(1).map_or(0, |i| whole.ends[i]);
        whole.text.truncate(kept_end);
        whole.ends.truncate(kept);
        for m in &request[kept..] {
            let (text, _) = super::request_pieces(std::slice::from_ref(m));
            whole.text.push_str(&text);
            whole.ends.push(whole.text.len());
        }
        whole.hits.retain(|&(end, _)| end <= kept_end);
        // A hit ending past the kept text starts at most a pattern's
        // length minus one before its end; one ending inside it was kept.
        let longest = [multi.matcher.as_ref(), self.extra_matcher.as_ref()]
            .into_iter()
            .flatten()
            .map(|m| m.max_pattern_len())
            .max()
            .unwrap_or(1);
        let from = kept_end.saturating_sub(longest.saturating_sub(1));
        let tail = &whole.text.as_bytes()[from..];
        #[cfg(test)]
        {
            whole.scanned += tail.len();
        }
        if let Some(m) = &multi.matcher {
            for x in m.find_overlapping_iter(tail) {
                if from + x.end() > kept_end {
                    let id = multi.ids[x.pattern().as_usize()];
                    whole.hits.push((from + x.end(), Hit::Multi(id)));
                }
            }
        }
        if let Some(m) = &self.extra_matcher {
            for x in m.find_overlapping_iter(tail) {
                if from + x.end() > kept_end {
                    let index = self.extra[x.pattern().as_usize()].0;
                    whole.hits.push((from + x.end(), Hit::Extra(index)));
                }
            }
        }
        whole.extra_built = self.extra_built;
        for &(_, hit) in &whole.hits {
            match hit {
                Hit::Multi(p) => {
                    if let Some(i) = self.slot[p] {
                        present[i] = true;
                    }
                }
                Hit::Extra(i) => present[i] = true,
            }
        }
    }

    /// Bytes of request text searched by [`Finder::mark_present_in`] so
    /// far (what keeping the unchanged text saves is visible in tests).
    #[cfg(test)]
    pub fn whole_text_scanned(&self) -> usize {
        self.whole.scanned
    }

    /// Whether [`Finder::mark_present_in`] needs the whole request's text:
    /// patterns with a newline may span pieces and messages, and the
    /// unforeseen ones were never split by line.
    pub fn needs_whole_text(&self) -> bool {
        self.patterns.multi.matcher.is_some() || !self.extra.is_empty()
    }

    /// Mark in `present` (indexed by artifact) the registered artifacts
    /// among the pattern ids `lines` (from [`Finder::lines_in`] over the
    /// request's pieces), and, in `whole` (the request's text, given when
    /// [`Finder::needs_whole_text`]), those with a newline and the
    /// unforeseen ones.
    #[cfg(test)]
    pub fn mark_present(
        &mut self,
        lines: impl Iterator<Item = usize>,
        whole: Option<&str>,
        present: &mut [bool],
    ) {
        let multi = whole.into_iter().flat_map(|t| self.patterns.multi.hits(t));
        for i in lines.chain(multi).filter_map(|p| self.slot[p]) {
            present[i] = true;
        }
        self.refresh_extra();
        if let (Some(m), Some(text)) = (&self.extra_matcher, whole) {
            for x in m.find_overlapping_iter(text) {
                present[self.extra[x.pattern().as_usize()].0] = true;
            }
        }
    }

    /// Rebuild the automaton over every unforeseen artifact when one was added.
    fn refresh_extra(&mut self) {
        if self.extra_built != self.extra.len() {
            let pats: Vec<&str> = self.extra.iter().map(|(_, t)| t.as_str()).collect();
            self.extra_matcher = AhoCorasick::new(pats).ok();
            self.extra_built = self.extra.len();
        }
    }
}

/// Each pattern id once, sorted.
fn distinct(hits: impl Iterator<Item = usize>) -> Vec<usize> {
    let mut out: Vec<usize> = hits.collect();
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// The registered artifacts in a request `text` of pieces ending at `ends`.
    fn find_pieces(f: &mut Finder, text: &str, ends: &[usize]) -> BTreeSet<usize> {
        let lines = f.lines_in(text, ends);
        let whole = f.needs_whole_text().then_some(text);
        let mut present = vec![false; 8];
        f.mark_present(lines.into_iter(), whole, &mut present);
        (0..present.len()).filter(|&i| present[i]).collect()
    }

    /// A finder whose automata cover `patterns`.
    fn for_patterns(patterns: Vec<Key>) -> Finder {
        Finder::sharing(Arc::new(Patterns::new(patterns)))
    }

    /// A whole text as one piece.
    fn find(f: &mut Finder, text: &str) -> BTreeSet<usize> {
        find_pieces(f, text, &[text.len()])
    }

    fn key(text: &str) -> Key {
        (ArtifactKind::File, text.to_string())
    }

    #[test]
    fn only_registered_artifacts_are_reported_whatever_was_foreseen() {
        let mut prepared = for_patterns(vec![key("abc"), key("bcd"), key("zz")]);
        let mut plain = Finder::default();
        let text = "xabcdx zz";
        assert!(find(&mut prepared, text).is_empty());
        for (i, t) in ["bcd", "abc", "unforeseen"].into_iter().enumerate() {
            prepared.register(&key(t), i);
            plain.register(&key(t), i);
            assert_eq!(
                find(&mut prepared, text),
                find(&mut plain, text),
                "after {t}"
            );
        }
        assert_eq!(find(&mut prepared, text), BTreeSet::from([0, 1]));
        assert_eq!(
            find(&mut prepared, "unforeseen bcd"),
            BTreeSet::from([0, 2])
        );
        assert!(prepared.extra.len() == 1 && plain.extra.len() == 3);
    }

    #[test]
    fn overlapping_and_repeated_occurrences_are_all_found() {
        let mut f = for_patterns(vec![key("aa"), key("a"), key("aaa")]);
        for (i, t) in ["aa", "a", "aaa"].into_iter().enumerate() {
            f.register(&key(t), i);
        }
        assert_eq!(find(&mut f, "aaaa"), BTreeSet::from([0, 1, 2]));
        assert_eq!(find(&mut f, "a"), BTreeSet::from([1]));
    }

    #[test]
    fn pieces_find_what_the_whole_text_holds_even_across_pieces() {
        let keys = [key("alpha"), key("beta\ngamma"), key("delta")];
        let mut prepared = for_patterns(keys.to_vec());
        let mut plain = Finder::default();
        for (i, k) in keys.iter().enumerate() {
            prepared.register(k, i);
            plain.register(k, i);
        }
        let text = "alpha beta\ngamma\nzeta\n";
        let ends = [11, 17, text.len()];
        for _ in 0..2 {
            // The second round reads every piece from the cache.
            assert_eq!(
                find_pieces(&mut prepared, text, &ends),
                BTreeSet::from([0, 1])
            );
        }
        assert_eq!(find_pieces(&mut plain, text, &ends), BTreeSet::from([0, 1]));
        assert_eq!(prepared.seen_pieces.len(), 3);
    }

    /// The whole-text search keeps the text and hits of the unchanged
    /// messages in front: a pattern spanning the kept text and a new
    /// message is found, one wholly in the kept text stays found, one in
    /// a message no longer sent is gone; a foreseen finder and one that
    /// foresaw nothing (its automaton rebuilt as artifacts arrive) agree
    /// with a search of the whole text at every request.
    #[test]
    fn the_kept_whole_text_finds_what_a_whole_search_finds() {
        use crate::message::Message;
        let keys = [
            key("one
two"),
            key("tail
head"),
            key("x
y"),
        ];
        let msg = |t: &str| Message::user_text(t);
        // (request, messages kept in place from the request before)
        let requests = [
            (vec![msg("a one"), msg("two b")], 0),
            (vec![msg("a one"), msg("two b"), msg("c tail")], 2),
            (
                vec![msg("a one"), msg("two b"), msg("c tail"), msg("head d")],
                3,
            ),
            (vec![msg("a one"), msg("two b"), msg("c tail"), msg("x")], 3),
            (vec![msg("y"), msg("c tail"), msg("x")], 0),
            (vec![msg("y"), msg("c tail"), msg("x"), msg("y")], 3),
        ];
        let mut prepared = for_patterns(keys.to_vec());
        let mut plain = Finder::default();
        for (i, k) in keys.iter().enumerate() {
            prepared.register(k, i);
        }
        let mut total = 0;
        for (n, (request, kept)) in requests.iter().enumerate() {
            if n < keys.len() {
                plain.register(&keys[n], n);
            }
            let text = super::super::request_text(request);
            total += text.len();
            for f in [&mut prepared, &mut plain] {
                let mut want = vec![false; 8];
                let whole = f.needs_whole_text().then_some(text.as_str());
                f.mark_present(std::iter::empty(), whole, &mut want);
                let mut got = vec![false; 8];
                f.mark_present_in(std::iter::empty(), request, *kept, &mut got);
                assert_eq!(got, want, "request {n}");
            }
        }
        assert!(prepared.whole_text_scanned() < total);
    }

    #[test]
    fn the_same_text_under_two_kinds_is_found_as_both() {
        let command = (ArtifactKind::Command, "ls".to_string());
        let mut prepared = for_patterns(vec![key("ls"), command.clone()]);
        let mut plain = Finder::default();
        for f in [&mut prepared, &mut plain] {
            f.register(&command, 0);
            f.register(&key("ls"), 1);
            assert_eq!(find(f, "$ ls"), BTreeSet::from([0, 1]));
        }
    }
}
