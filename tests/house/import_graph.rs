//! The module graph under `lab/` has no circles: every `use crate::…`,
//! `super::…` and inline `crate::a::b` path is an edge from the module whose
//! file holds it to the deepest module the path names, and the graph must be
//! acyclic. A circle means two modules can only be understood (and changed)
//! together, which is what splitting them was meant to avoid.
//!
//! Edges from a module to its own descendants are not counted: a parent that
//! declares or re-exports its children is their facade, not a dependant.
//! Paths inside test modules (inline `mod tests { … }` blocks and
//! `tests.rs` files) are not counted either: a unit test may borrow a helper from any module without making the
//! library's modules depend on each other.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

/// Source text with comments, string and char literals blanked out, so
/// that a `crate::` inside a doc comment or an error message is no edge.
fn strip(src: &str) -> String {
    let b: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r' && (next == Some('#') || next == Some('"')) && !ident_char(prev(&b, i)) {
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            i = j;
            out.push_str("\"\"");
        } else if c == '"' {
            i += 1;
            while i < b.len() && b[i] != '"' {
                i += if b[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' && (next == Some('\\') || b.get(i + 2) == Some(&'\'')) {
            i += 1;
            while i < b.len() && b[i] != '\'' {
                i += if b[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn prev(b: &[char], i: usize) -> char {
    if i == 0 {
        ' '
    } else {
        b[i - 1]
    }
}

fn ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Module path of a file: `lab/compact/mod.rs` -> `compact`,
/// `lab/compact/oracle.rs` -> `compact::oracle`, `lab/lib.rs` -> ``.
fn module_of(root: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(root).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// Every path (as segments) the text names: `crate::…`, `super::…`,
/// `self::…`, and the trees of `use` items, with `{a, b::c}` groups expanded.
/// Each comes with the inline modules (`mod tests { … }`) it sits in, which
/// `super::` is relative to.
fn paths_in(text: &str) -> Vec<(Vec<String>, Vec<String>)> {
    let toks = tokens(text);
    let mut out = Vec::new();
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i].as_str();
        let after_sep = is_path_sep(&toks, i.wrapping_sub(1));
        let mut found = Vec::new();
        if t == "mod" && toks.get(i + 2).is_some_and(|b| b == "{") {
            inline.push((toks[i + 1].clone(), depth));
            depth += 1;
            i += 3;
        } else if t == "{" {
            depth += 1;
            i += 1;
        } else if t == "}" {
            depth = depth.saturating_sub(1);
            if inline.last().is_some_and(|(_, d)| *d == depth) {
                inline.pop();
            }
            i += 1;
        } else if t == "use" && !after_sep {
            i = tree(&toks, i + 1, Vec::new(), &mut found);
        } else if (matches!(t, "crate" | "super" | "self") || t.starts_with("ctxlab_"))
            && !after_sep
        {
            i = tree(&toks, i, Vec::new(), &mut found);
        } else {
            i += 1;
        }
        let prefix: Vec<String> = inline.iter().map(|(n, _)| n.clone()).collect();
        // `pub(crate)`, `pub(super)` and a lone `self` name no module item.
        out.extend(
            found
                .into_iter()
                .filter(|p| p.len() > 1)
                .map(|p| (prefix.clone(), p)),
        );
    }
    out
}

fn is_path_sep(toks: &[String], i: usize) -> bool {
    toks.get(i).is_some_and(|t| t == "::")
}

/// Parse one use tree (or plain path) from `i`; pushes each leaf path.
fn tree(
    toks: &[String],
    mut i: usize,
    mut prefix: Vec<String>,
    out: &mut Vec<Vec<String>>,
) -> usize {
    if toks.get(i).is_some_and(|t| t == "::") {
        i += 1;
    }
    while let Some(t) = toks.get(i) {
        if t == "{" {
            i += 1;
            loop {
                match toks.get(i).map(String::as_str) {
                    None => return i,
                    Some("}") => return i + 1,
                    Some(",") => i += 1,
                    Some(_) => i = tree(toks, i, prefix.clone(), out),
                }
            }
        }
        if !t
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
        {
            break;
        }
        prefix.push(t.clone());
        i += 1;
        if toks.get(i).is_some_and(|t| t == "::") {
            i += 1;
        } else {
            break;
        }
    }
    if !prefix.is_empty() {
        out.push(prefix);
    }
    i
}

fn tokens(text: &str) -> Vec<String> {
    let c: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        if ident_char(c[i]) {
            let s = i;
            while i < c.len() && ident_char(c[i]) {
                i += 1;
            }
            out.push(c[s..i].iter().collect());
        } else if c[i] == ':' && c.get(i + 1) == Some(&':') {
            out.push("::".into());
            i += 2;
        } else if c[i].is_whitespace() {
            i += 1;
        } else {
            out.push(c[i].to_string());
            i += 1;
        }
    }
    out
}

/// One crate of the workspace as the module tree the code names: the
/// folder it lives in, the path its root has in that tree (`import` for
/// `ctxlab-import`, nothing for the ground floor's modules), its modules
/// that stand at the top of the tree instead (`tokens`), and the lower
/// crates' modules its root brings in under their old names.
struct CrateDir {
    dir: PathBuf,
    prefix: Vec<String>,
    hoisted: Vec<String>,
    /// Folders under `dir` that are other crates (the binary crate's `lab/`).
    skip: Vec<PathBuf>,
    aliases: BTreeMap<String, Vec<String>>,
}

impl CrateDir {
    /// The module path a file of this crate has in the whole tree.
    fn module_of(&self, file: &Path) -> Vec<String> {
        self.place(module_of(&self.dir, file))
    }

    /// A path from this crate's root, as the whole tree names it.
    fn place(&self, inner: Vec<String>) -> Vec<String> {
        match inner.first() {
            Some(first) if self.hoisted.contains(first) => inner,
            _ => [self.prefix.clone(), inner].concat(),
        }
    }
}

/// The workspace's crates, ground first, as `ctxlab`'s root re-exports
/// them (`lab/lib.rs`). `tests/house/crates.rs` checks this list against
/// `cargo metadata`.
pub const CRATES: &[(&str, &str, &str, &[&str])] = &[
    ("ctxlab-core", "lab/core", "", &[]),
    (
        "ctxlab-import",
        "lab/import",
        "import",
        &["tokens", "generate"],
    ),
    ("ctxlab-course", "lab/course", "", &[]),
    ("ctxlab-policy", "lab/policy", "policy", &[]),
    ("ctxlab-zoo", "lab/zoo", "zoo", &[]),
    ("ctxlab-measure", "lab/measure", "", &[]),
    ("ctxlab", "lab", "", &[]),
];

/// Where `ctxlab_x::a::b` sits in the whole tree.
fn extern_path(path: &[String]) -> Option<Vec<String>> {
    let name = path.first()?.replace('_', "-");
    let (_, _, prefix, hoisted) = CRATES.iter().find(|c| c.0 == name)?;
    let rest: Vec<String> = path[1..].to_vec();
    let prefix: Vec<String> = prefix
        .split("::")
        .filter(|p| !p.is_empty())
        .map(String::from)
        .collect();
    Some(match rest.first() {
        Some(f) if hoisted.contains(&f.as_str()) => rest,
        _ => [prefix, rest].concat(),
    })
}

/// The names a crate root brings in from lower crates: `use ctxlab_core::{a, b};`,
/// `use ctxlab_import::tokens;`, `use ctxlab_policy as policy;` (and `pub use`).
fn aliases(lib: &str) -> BTreeMap<String, Vec<String>> {
    let toks = tokens(&strip(lib));
    let mut out = BTreeMap::new();
    let mut i = 0;
    while i < toks.len() {
        if toks[i] == "use" && toks.get(i + 1).is_some_and(|t| t.starts_with("ctxlab_")) {
            let krate = toks[i + 1].clone();
            if toks.get(i + 2).is_some_and(|t| t == "as") {
                if let (Some(name), Some(p)) = (toks.get(i + 3), extern_path(&[krate])) {
                    out.insert(name.clone(), p);
                }
            } else {
                let mut leaves = Vec::new();
                tree(&toks, i + 1, Vec::new(), &mut leaves);
                for l in leaves {
                    if let (Some(name), Some(p)) = (l.last(), extern_path(&l)) {
                        out.insert(name.clone(), p);
                    }
                }
            }
        }
        i += 1;
    }
    out
}

/// Every crate of the workspace under `root`, from [`CRATES`].
fn workspace(root: &Path) -> Vec<CrateDir> {
    let split = |p: &str| -> Vec<String> {
        p.split("::")
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    };
    CRATES
        .iter()
        .map(|(_, dir, prefix, hoisted)| {
            let dir = root.join(dir);
            let skip = CRATES
                .iter()
                .map(|c| root.join(c.1))
                .filter(|d| d != &dir && d.starts_with(&dir))
                .collect();
            let lib = std::fs::read_to_string(dir.join("lib.rs")).unwrap();
            CrateDir {
                aliases: aliases(&lib),
                dir,
                prefix: split(prefix),
                hoisted: hoisted.iter().map(|h| h.to_string()).collect(),
                skip,
            }
        })
        .collect()
}

/// Resolve a path named in module `here` of crate `c` to the deepest known module.
fn resolve(
    c: &CrateDir,
    here: &[String],
    path: &[String],
    modules: &BTreeSet<Vec<String>>,
) -> Option<Vec<String>> {
    let (mut abs, mut rest): (Vec<String>, &[String]) = match path.first()?.as_str() {
        "crate" => match path.get(1) {
            Some(first) if c.aliases.contains_key(first) => (c.aliases[first].clone(), &path[2..]),
            Some(_) => (c.place(vec![path[1].clone()]), &path[2..]),
            None => return None,
        },
        "self" | "super" => (here.to_vec(), path),
        first if first.starts_with("ctxlab_") => {
            let p = extern_path(&path[..2.min(path.len())])?;
            (p, &path[2.min(path.len())..])
        }
        first => {
            // A bare first segment is a child module of `here`, or external.
            let mut child = here.to_vec();
            child.push(first.to_string());
            if !modules.contains(&child) {
                return None;
            }
            (here.to_vec(), path)
        }
    };
    while let Some(seg) = rest.first() {
        match seg.as_str() {
            "crate" | "self" => rest = &rest[1..],
            "super" => {
                abs.pop();
                rest = &rest[1..];
            }
            _ => break,
        }
    }
    if !modules.contains(&abs) && !abs.is_empty() {
        // A crate's root module (`import`) is a module too.
        let mut a = abs.clone();
        while !a.is_empty() && !modules.contains(&a) {
            a.pop();
        }
        abs = a;
    }
    for seg in rest {
        abs.push(seg.clone());
        if !modules.contains(&abs) {
            abs.pop();
            break;
        }
    }
    Some(abs)
}

/// The module graph of one crate tree under `root` (the synthetic tests).
fn graph(root: &Path) -> Graph {
    graph_of(&[CrateDir {
        dir: root.to_path_buf(),
        prefix: Vec::new(),
        hoisted: Vec::new(),
        skip: Vec::new(),
        aliases: BTreeMap::new(),
    }])
}

/// The module graph of the whole workspace, every crate placed where the
/// code names it.
fn workspace_graph() -> Graph {
    graph_of(&workspace(Path::new(env!("CARGO_MANIFEST_DIR"))))
}

fn graph_of(crates: &[CrateDir]) -> Graph {
    let mut per_crate: Vec<(&CrateDir, Vec<PathBuf>)> = Vec::new();
    let mut modules: BTreeSet<Vec<String>> = BTreeSet::new();
    for c in crates {
        let mut files = Vec::new();
        rust_files(&c.dir, &mut files);
        files.retain(|f| !c.skip.iter().any(|s| f.starts_with(s)));
        modules.extend(files.iter().map(|f| c.module_of(f)));
        per_crate.push((c, files));
    }
    let mut g = Graph::new();
    for (c, files) in &per_crate {
        for f in files {
            let here = c.module_of(f);
            let text = strip(&std::fs::read_to_string(f).unwrap());
            for (inline, p) in paths_in(&text) {
                if here
                    .iter()
                    .chain(&inline)
                    .any(|m| m == "tests" || m.ends_with("_tests"))
                {
                    continue;
                }
                let at = [here.clone(), inline].concat();
                let Some(to) = resolve(c, &at, &p, &modules) else {
                    continue;
                };
                if to.starts_with(&here) || to.is_empty() {
                    continue;
                }
                g.entry(here.join("::")).or_default().insert(to.join("::"));
            }
        }
    }
    g
}

/// Every circle as a list of modules, found by depth-first search.
fn circles(g: &Graph) -> Vec<Vec<String>> {
    fn visit(
        n: &str,
        g: &Graph,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        found: &mut Vec<Vec<String>>,
    ) {
        if let Some(pos) = stack.iter().position(|s| s == n) {
            // Start each circle at its smallest module so it reads the same
            // whatever module the search started from.
            let mut c = stack[pos..].to_vec();
            let min = (0..c.len()).min_by_key(|&k| &c[k]).unwrap_or(0);
            c.rotate_left(min);
            found.push(c);
            return;
        }
        if done.contains(n) {
            return;
        }
        stack.push(n.to_string());
        for m in g.get(n).into_iter().flatten() {
            visit(m, g, stack, done, found);
        }
        stack.pop();
        done.insert(n.to_string());
    }
    let mut found = Vec::new();
    let mut done = BTreeSet::new();
    for n in g.keys() {
        visit(n, g, &mut Vec::new(), &mut done, &mut found);
    }
    found
}

/// Circles whose split is under way on another branch; each line must be
/// removed once its circle is gone (the test says so), so none is forgotten.
const BEING_SPLIT: &[&str] = &[];

#[test]
fn lab_modules_import_one_way() {
    let found = circles(&workspace_graph());
    let shown: BTreeSet<String> = found
        .iter()
        .map(|c| format!("{} -> {}", c.join(" -> "), c[0]))
        .collect();
    let new: Vec<&String> = shown
        .iter()
        .filter(|c| !BEING_SPLIT.contains(&c.as_str()))
        .collect();
    assert!(
        new.is_empty(),
        "import circles between modules (each should flow one way):\n{}",
        new.iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    let gone: Vec<&&str> = BEING_SPLIT
        .iter()
        .filter(|c| !shown.contains(**c))
        .collect();
    assert!(
        gone.is_empty(),
        "circles gone, remove them from BEING_SPLIT in tests/house/import_graph.rs: {gone:?}"
    );
}

fn synthetic(files: &[(&str, &str)]) -> Graph {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    graph(dir.path())
}

#[test]
fn a_circle_through_use_trees_and_inline_paths_is_found() {
    let g = synthetic(&[
        ("lib.rs", "pub mod a; pub mod b;"),
        ("a/mod.rs", "pub mod x; use crate::{b::{self, Y}};"),
        (
            "a/x.rs",
            "mod inner { use super::super::super::b::Y; } mod tests { use crate::q::Z; }",
        ),
        ("q.rs", "use crate::a::x::W;"),
        ("b.rs", "fn f() { let _ = super::a::x::go(); }"),
    ]);
    let found = circles(&g);
    assert_eq!(
        found,
        vec![vec!["a::x".to_string(), "b".to_string()]],
        "{g:?}"
    );
}

#[test]
fn comments_strings_descendants_and_external_crates_are_no_edges() {
    let g = synthetic(&[
        ("lib.rs", "pub mod a; pub mod b;"),
        (
            "a/mod.rs",
            "pub mod x; pub use x::Z; use serde::Serialize; // crate::b::Q\n",
        ),
        (
            "a/x.rs",
            "use super::Z; /* crate::b */ const S: &str = \"crate::b::W\";",
        ),
        (
            "b.rs",
            "use crate::a::x::Z; const C: char = '\"'; const D: &str = r#\"crate::a\"#;",
        ),
    ]);
    assert!(circles(&g).is_empty(), "{g:?}");
    assert_eq!(g.get("b").unwrap().iter().collect::<Vec<_>>(), vec!["a::x"]);
    assert_eq!(g.get("a::x").unwrap().iter().collect::<Vec<_>>(), vec!["a"]);
    assert!(!g.contains_key("a"), "{g:?}");
}

/// The module graph folded per folder: for every edge `a -> b`, the two
/// children of their nearest common ancestor that hold them (`x::p -> y::q`
/// becomes `x -> y` among the crate's top-level modules, `x::p::s ->
/// x::q` becomes `p -> q` inside `x`). An edge from a module to one of its
/// ancestors is a use of the folder's own facade (its `mod.rs`) and folds to
/// nothing. Keyed by the ancestor (`""` for the crate).
fn folded(g: &Graph) -> BTreeMap<String, Graph> {
    let mut out: BTreeMap<String, Graph> = BTreeMap::new();
    for (from, tos) in g {
        let a: Vec<&str> = from.split("::").collect();
        for to in tos {
            let b: Vec<&str> = to.split("::").collect();
            let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
            if common >= b.len() || common >= a.len() {
                continue;
            }
            let parent = a[..common].join("::");
            out.entry(parent)
                .or_default()
                .entry(a[common].to_string())
                .or_default()
                .insert(b[common].to_string());
        }
    }
    out
}

/// Layers of an acyclic graph, ground first: a module sits one layer above
/// the highest module it imports.
fn layers(g: &Graph) -> Vec<BTreeSet<String>> {
    fn height(n: &str, g: &Graph, memo: &mut BTreeMap<String, usize>) -> usize {
        if let Some(h) = memo.get(n) {
            return *h;
        }
        let h = g
            .get(n)
            .into_iter()
            .flatten()
            .map(|m| height(m, g, memo) + 1)
            .max()
            .unwrap_or(0);
        memo.insert(n.to_string(), h);
        h
    }
    let mut memo = BTreeMap::new();
    let nodes: BTreeSet<&String> = g.keys().chain(g.values().flatten()).collect();
    let mut out: Vec<BTreeSet<String>> = Vec::new();
    for n in nodes {
        let h = height(n, g, &mut memo);
        if out.len() <= h {
            out.resize(h + 1, BTreeSet::new());
        }
        out[h].insert(n.clone());
    }
    out
}

/// No import runs back up between folders: inside every folder (the crate
/// included), its children, each folded with everything below it, import
/// one way. A loop between two folders is invisible to the file-level
/// test above when no single pair of files closes it.
#[test]
fn folders_import_one_way() {
    let mut loops = Vec::new();
    for (parent, g) in folded(&workspace_graph()) {
        for c in circles(&g) {
            loops.push(format!("in `{parent}`: {} -> {}", c.join(" -> "), c[0]));
        }
    }
    assert!(
        loops.is_empty(),
        "folders importing each other:\n{}",
        loops.join("\n")
    );
}

/// The crate's top-level modules stand on at most 12 layers, so the house
/// reads in a dozen floors from storage to the command line.
#[test]
fn the_crate_stands_on_at_most_twelve_layers() {
    let folded = folded(&workspace_graph());
    let top = folded.get("").cloned().unwrap_or_default();
    assert!(
        circles(&top).is_empty(),
        "top-level modules import each other"
    );
    let l = layers(&top);
    let shown: Vec<String> = l
        .iter()
        .enumerate()
        .map(|(i, s)| format!("{i}: {}", s.iter().cloned().collect::<Vec<_>>().join(", ")))
        .collect();
    eprintln!("layers, ground first:\n{}", shown.join("\n"));
    assert!(l.len() <= 12, "{} layers:\n{}", l.len(), shown.join("\n"));
}

#[test]
fn folding_finds_a_loop_between_folders_and_counts_layers() {
    let g = synthetic(&[
        ("lib.rs", "pub mod a; pub mod b; pub mod c;"),
        ("a/mod.rs", "pub mod x; pub mod y;"),
        ("a/x.rs", "use crate::b::Q;"),
        ("a/y.rs", "use super::Z;"),
        ("b/mod.rs", "pub mod p;"),
        ("b/p.rs", "use crate::a::y::W; use crate::c::V;"),
        ("c.rs", ""),
    ]);
    // No file-level circle: a::x -> b, b::p -> a::y, a::y -> a (facade).
    assert!(circles(&g).is_empty(), "{g:?}");
    let f = folded(&g);
    let top = &f[""];
    assert_eq!(circles(top), vec![vec!["a".to_string(), "b".to_string()]]);
    assert!(
        !f.contains_key("a"),
        "a child's use of its folder's facade folds to nothing: {f:?}"
    );
    let chain: Graph = [("b", "c"), ("a", "b")]
        .iter()
        .map(|(x, y)| (x.to_string(), BTreeSet::from([y.to_string()])))
        .collect();
    let l = layers(&chain);
    assert_eq!(l.len(), 3);
    assert!(l[0].contains("c") && l[2].contains("a"));
}
