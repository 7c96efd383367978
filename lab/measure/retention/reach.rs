//! Which artifacts the request's pointers reach: the checker's walk from
//! the pointers of a request through the files they name and the pointers
//! those files hold.
//!
//! A file is read once, when first reached (files are written once; an
//! archive appended to later is read as it was then), and its existence is
//! checked at every request. What a file holds is a pure function of its
//! text and the registered artifacts, so it is looked up once per file
//! and again only when artifacts were registered since: a request costs
//! the walk, not a search of every file for every missing artifact.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use super::finder::Finder;
use crate::policy::engine::View;
use crate::policy::findings::pointers_in_file;

/// One file as first read.
#[derive(Debug)]
struct FileScan {
    /// Its text, with the strings of its JSON lines decoded after it.
    text: String,
    /// The pointers it holds.
    pointers: Vec<String>,
    /// The registered artifacts its text holds, sorted, as of `upto`.
    found: Vec<usize>,
    /// How many artifacts were registered when `found` was looked up
    /// (`None`: not yet).
    upto: Option<usize>,
}

/// The files reached so far.
#[derive(Debug, Default)]
pub struct Reach {
    files: HashMap<String, FileScan>,
}

impl Reach {
    /// Mark in `reachable` the artifacts not `present` that some file
    /// reached from `pointers` holds (both indexed by artifact, one entry
    /// per registered artifact).
    pub fn mark(
        &mut self,
        finder: &mut Finder,
        pointers: Vec<String>,
        present: &[bool],
        reachable: &mut [bool],
        view: &View<'_>,
    ) {
        let registered = present.len();
        let mut frontier = pointers;
        let mut visited = HashSet::new();
        while let Some(p) = frontier.pop() {
            if !visited.insert(p.clone()) || view.storage.kind(Path::new(&p)).is_none() {
                continue;
            }
            let scan = self.load(&p, view);
            if scan.upto != Some(registered) {
                scan.found = finder.find_in_file(&p, &scan.text);
                scan.upto = Some(registered);
            }
            for &i in scan.found.iter().filter(|&&i| !present[i]) {
                reachable[i] = true;
            }
            frontier.extend(scan.pointers.iter().cloned());
        }
    }

    /// The file at `path`, read at its first reach.
    fn load(&mut self, path: &str, view: &View<'_>) -> &mut FileScan {
        self.files.entry(path.to_string()).or_insert_with(|| {
            let bytes = view.storage.read(Path::new(path)).unwrap_or_default();
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let pointers = pointers_in_file(view.rules, &text).into_iter().collect();
            // Archives are JSON: their strings hold the artifacts escaped, so
            // search the decoded strings too.
            let mut decoded = String::new();
            for line in text.lines() {
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
                    super::collect_strings(&v, &mut decoded);
                }
            }
            let text = if decoded.is_empty() {
                text
            } else {
                format!("{text}\n{decoded}")
            };
            FileScan {
                text,
                pointers,
                found: Vec::new(),
                upto: None,
            }
        })
    }
}
