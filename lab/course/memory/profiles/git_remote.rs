//! Letta MemFS's server copy: the remote a clone pushes to after each turn
//! (`syncPendingMemoryCommitsAfterTurn`) and pulls from at start-up
//! (`pullMemory`), as letta-ai/letta-code `src/agent/memory-git.ts` does
//! them (sources in [`super::sources`]):
//!
//! - after a turn: nothing when the repository is dirty or has no commit
//!   ahead of `origin/main`; otherwise `git push`; a push refused as
//!   non-fast-forward runs `git pull --rebase` and pushes again, and a
//!   rebase that conflicts reports `conflict` without pushing;
//! - at start-up: `git pull --ff-only`; when it fails and the histories
//!   share no commit, the clone is reset to `origin/main` (refused while
//!   the repository is dirty; the old HEAD is kept under
//!   `refs/letta-backup/`); otherwise `git pull --rebase`.
//!
//! A commit's id here is the SHA-256 of its parent's id and its tree, so a
//! clone and the server agree on ids without sharing files. The server is
//! a directory of its own on the storage layer: `history` (the ids of
//! `main`, oldest first), `trees/<id>` and `objects/<sha>`. A rebase that
//! conflicts is aborted (the clone is left as it was): upstream leaves the
//! rebase in progress and reports it, and the memory tools then refuse to
//! write, so nothing is acknowledged either way.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::Path;

use super::git_backed::{blob, commit_path, git, head, tree_at, working_tree, GitBacked};
use super::{read_opt, sha256_hex};
use crate::storage::{atomic_write, Shared};

/// What a sync told the harness (upstream's statuses and outcomes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sync {
    /// After a turn: nothing to push.
    Clean,
    /// After a turn: uncommitted changes, nothing pushed.
    Dirty,
    /// After a turn: the commits ahead are on the server.
    Pushed,
    /// After a turn or at start-up: the rebase conflicts on this file;
    /// nothing moved.
    Conflict(String),
    /// At start-up: the clone already has the server's history.
    UpToDate,
    /// At start-up: the clone moved forward to the server's history.
    FastForward,
    /// At start-up: the clone's commits replayed onto the server's.
    Rebased,
    /// At start-up: the histories share no commit; the clone was reset to
    /// the server's and its old HEAD kept in a backup ref.
    ResetToRemote,
    /// At start-up: the pull failed with this reason; nothing moved.
    PullFailed(String),
}

fn server_history(fs: &Shared, server: &Path) -> io::Result<Vec<String>> {
    Ok(read_opt(fs, &server.join("history"))?
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect())
}

fn tree_text(tree: &BTreeMap<String, String>) -> String {
    tree.iter()
        .map(|(t, sha)| format!("{t}\t{sha}\n"))
        .collect()
}

fn parse_tree(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(t, sha)| (t.to_string(), sha.to_string()))
        .collect()
}

fn commit_id(parent: &str, tree: &str) -> String {
    sha256_hex(format!("{parent}\n{tree}").as_bytes())
}

/// The ids of the clone's commits 1..=HEAD.
fn local_ids(fs: &Shared, root: &Path) -> io::Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for n in 1..=head(fs, root)? {
        let text = fs.read_to_string(&commit_path(root, n))?;
        let parent = out.last().map_or("", String::as_str);
        out.push(commit_id(parent, &text));
    }
    Ok(out)
}

fn server_tree(
    fs: &Shared,
    server: &Path,
    id: Option<&String>,
) -> io::Result<BTreeMap<String, String>> {
    match id {
        None => Ok(BTreeMap::new()),
        Some(id) => Ok(parse_tree(
            &fs.read_to_string(&server.join("trees").join(id))?,
        )),
    }
}

fn common_prefix(a: &[String], b: &[String]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

fn tracking(fs: &Shared, root: &Path) -> io::Result<Vec<String>> {
    Ok(read_opt(fs, &git(root).join("origin"))?
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect())
}

fn set_tracking(fs: &Shared, root: &Path, ids: &[String]) -> io::Result<()> {
    fs.create_dir_all(&git(root))?;
    let text: String = ids.iter().map(|i| format!("{i}\n")).collect();
    atomic_write(fs.as_ref(), &git(root).join("origin"), text.as_bytes())
}

/// `git push`: the clone's commits and blobs onto the server, and `main`
/// set to the clone's history.
fn upload(fs: &Shared, root: &Path, server: &Path) -> io::Result<()> {
    let ids = local_ids(fs, root)?;
    fs.create_dir_all(&server.join("trees"))?;
    fs.create_dir_all(&server.join("objects"))?;
    for (i, id) in ids.iter().enumerate() {
        let text = fs.read_to_string(&commit_path(root, i as u64 + 1))?;
        for sha in parse_tree(&text).values() {
            let to = server.join("objects").join(sha);
            if !fs.exists(&to) {
                atomic_write(fs.as_ref(), &to, blob(fs, root, sha)?.as_bytes())?;
            }
        }
        let to = server.join("trees").join(id);
        if !fs.exists(&to) {
            atomic_write(fs.as_ref(), &to, text.as_bytes())?;
        }
    }
    let text: String = ids.iter().map(|i| format!("{i}\n")).collect();
    atomic_write(fs.as_ref(), &server.join("history"), text.as_bytes())?;
    set_tracking(fs, root, &ids)
}

/// Make the clone's history `trees` (commit 1 first) and check out its
/// tip: only files that differ between the old HEAD and the new tip are
/// touched, as a checkout does (uncommitted edits elsewhere stay).
fn adopt(
    fs: &Shared,
    root: &Path,
    server: &Path,
    trees: &[BTreeMap<String, String>],
) -> io::Result<()> {
    let old = tree_at(fs, root, head(fs, root)?)?;
    let objects = git(root).join("objects");
    fs.create_dir_all(&objects)?;
    fs.create_dir_all(&git(root).join("commits"))?;
    for (i, tree) in trees.iter().enumerate() {
        for sha in tree.values() {
            let to = objects.join(sha);
            if !fs.exists(&to) {
                let text = fs.read_to_string(&server.join("objects").join(sha))?;
                atomic_write(fs.as_ref(), &to, text.as_bytes())?;
            }
        }
        atomic_write(
            fs.as_ref(),
            &commit_path(root, i as u64 + 1),
            tree_text(tree).as_bytes(),
        )?;
    }
    let mut extra = trees.len() as u64 + 1;
    while fs.exists(&commit_path(root, extra)) {
        fs.remove_file(&commit_path(root, extra))?;
        extra += 1;
    }
    atomic_write(
        fs.as_ref(),
        &git(root).join("HEAD"),
        format!("{}\n", trees.len()).as_bytes(),
    )?;
    let tip = trees.last().cloned().unwrap_or_default();
    for topic in old.keys().chain(tip.keys()).collect::<BTreeSet<_>>() {
        if old.get(topic) == tip.get(topic) {
            continue;
        }
        let path = root.join(format!("{topic}.md"));
        match tip.get(topic) {
            Some(sha) => atomic_write(fs.as_ref(), &path, blob(fs, root, sha)?.as_bytes())?,
            None if fs.exists(&path) => fs.remove_file(&path)?,
            None => {}
        }
    }
    Ok(())
}

/// Topics whose working text differs from HEAD.
fn dirty_topics(fs: &Shared, root: &Path) -> io::Result<BTreeSet<String>> {
    let at_head = tree_at(fs, root, head(fs, root)?)?;
    let tree = working_tree(fs, root)?;
    Ok(at_head
        .keys()
        .chain(tree.keys())
        .filter(|t| {
            at_head.get(*t)
                != tree
                    .get(*t)
                    .map(|text| sha256_hex(text.as_bytes()))
                    .as_ref()
        })
        .cloned()
        .collect())
}

fn changed(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> BTreeSet<String> {
    a.keys()
        .chain(b.keys())
        .filter(|t| a.get(*t) != b.get(*t))
        .cloned()
        .collect()
}

/// `git pull --rebase`: the clone's commits after the merge base replayed
/// onto the server's `main`; `Err(file)` on the first commit that changes
/// a file the server also changed since the base (the clone is untouched).
fn rebase(fs: &Shared, root: &Path, server: &Path) -> io::Result<Result<(), String>> {
    let local = local_ids(fs, root)?;
    let remote = server_history(fs, server)?;
    let base = common_prefix(&local, &remote);
    let base_tree = tree_at(fs, root, base as u64)?;
    let mut trees = Vec::new();
    for id in &remote {
        trees.push(server_tree(fs, server, Some(id))?);
    }
    let remote_changed = changed(&base_tree, trees.last().unwrap_or(&BTreeMap::new()));
    let mut tip = trees.last().cloned().unwrap_or_default();
    for n in base as u64 + 1..=local.len() as u64 {
        let (before, after) = (tree_at(fs, root, n - 1)?, tree_at(fs, root, n)?);
        for topic in changed(&before, &after) {
            if remote_changed.contains(&topic) {
                return Ok(Err(format!("{topic}.md")));
            }
            match after.get(&topic) {
                Some(sha) => tip.insert(topic, sha.clone()),
                None => tip.remove(&topic),
            };
        }
        trees.push(tip.clone());
    }
    // The replayed commits' blobs are the clone's own; `adopt` fetches the
    // server's.
    adopt(fs, root, server, &trees)?;
    set_tracking(fs, root, &remote)?;
    Ok(Ok(()))
}

/// `git clone`: an empty clone at `root` of the server's `main`.
pub fn clone(fs: &Shared, server: &Path, root: &Path) -> io::Result<()> {
    fs.create_dir_all(root)?;
    let remote = server_history(fs, server)?;
    let mut trees = Vec::new();
    for id in &remote {
        trees.push(server_tree(fs, server, Some(id))?);
    }
    adopt(fs, root, server, &trees)?;
    set_tracking(fs, root, &remote)
}

/// The post-turn sync (`syncPendingMemoryCommitsAfterTurn`). `force`: a
/// writer that pushes with `--force` instead (what the server does in
/// letta-ai/letta-code#2203; never the client's own rule).
pub fn push_after_turn(fs: &Shared, root: &Path, server: &Path, force: bool) -> io::Result<Sync> {
    if GitBacked::dirty(fs, root)? {
        return Ok(Sync::Dirty);
    }
    let local = local_ids(fs, root)?;
    if local.len() <= common_prefix(&local, &tracking(fs, root)?) {
        return Ok(Sync::Clean);
    }
    let remote = server_history(fs, server)?;
    if force || common_prefix(&local, &remote) == remote.len() {
        upload(fs, root, server)?;
        return Ok(Sync::Pushed);
    }
    // Refused as non-fast-forward: `git pull --rebase`, then push again.
    match rebase(fs, root, server)? {
        Err(file) => Ok(Sync::Conflict(file)),
        Ok(()) => {
            upload(fs, root, server)?;
            Ok(Sync::Pushed)
        }
    }
}

/// The start-up pull (`pullMemory`).
pub fn pull_on_start(fs: &Shared, root: &Path, server: &Path) -> io::Result<Sync> {
    let local = local_ids(fs, root)?;
    let remote = server_history(fs, server)?;
    let base = common_prefix(&local, &remote);
    if base == remote.len() {
        set_tracking(fs, root, &remote)?;
        return Ok(Sync::UpToDate);
    }
    let dirty = dirty_topics(fs, root)?;
    let mut trees = Vec::new();
    for id in &remote {
        trees.push(server_tree(fs, server, Some(id))?);
    }
    if base == local.len() {
        // `git pull --ff-only`: refused when an uncommitted edit is in a
        // file the fast-forward changes.
        let tip = trees.last().cloned().unwrap_or_default();
        let moved = changed(&tree_at(fs, root, base as u64)?, &tip);
        if let Some(t) = moved.intersection(&dirty).next() {
            return Ok(Sync::PullFailed(format!(
                "Your local changes to {t}.md would be overwritten by merge"
            )));
        }
        adopt(fs, root, server, &trees)?;
        set_tracking(fs, root, &remote)?;
        return Ok(Sync::FastForward);
    }
    if base == 0 {
        // No merge base: `recoverMemoryPullByResettingToRemote`.
        if !dirty.is_empty() {
            return Ok(Sync::PullFailed(
                "Local memory repo has uncommitted changes; refusing to auto-reset unrelated history."
                    .into(),
            ));
        }
        let backup = fs.read_to_string(&commit_path(root, head(fs, root)?))?;
        atomic_write(
            fs.as_ref(),
            &git(root).join("letta-backup"),
            backup.as_bytes(),
        )?;
        adopt(fs, root, server, &trees)?;
        set_tracking(fs, root, &remote)?;
        return Ok(Sync::ResetToRemote);
    }
    if !dirty.is_empty() {
        return Ok(Sync::PullFailed(
            "cannot pull with rebase: You have unstaged changes.".into(),
        ));
    }
    Ok(match rebase(fs, root, server)? {
        Err(file) => Sync::PullFailed(format!("rebase conflict in {file}")),
        Ok(()) => Sync::Rebased,
    })
}

/// The server replaces `main` with a new root commit chain: an empty
/// initial commit, then one commit per backfilled file (the forced update
/// letta-ai/letta-code#2203 reports). `rewrite = false`: the same files
/// as commits on top of `main` instead (no history rewritten).
pub fn server_backfill(
    fs: &Shared,
    server: &Path,
    files: &[(&str, &str)],
    rewrite: bool,
) -> io::Result<()> {
    let mut history = if rewrite {
        Vec::new()
    } else {
        server_history(fs, server)?
    };
    let mut tree = server_tree(fs, server, history.last())?;
    fs.create_dir_all(&server.join("trees"))?;
    fs.create_dir_all(&server.join("objects"))?;
    let commit_tree = |tree: &BTreeMap<String, String>, history: &mut Vec<String>| {
        let text = tree_text(tree);
        let id = commit_id(history.last().map_or("", String::as_str), &text);
        atomic_write(
            fs.as_ref(),
            &server.join("trees").join(&id),
            text.as_bytes(),
        )?;
        history.push(id);
        io::Result::Ok(())
    };
    if rewrite {
        commit_tree(&tree, &mut history)?;
    }
    for (topic, text) in files {
        let sha = sha256_hex(text.as_bytes());
        atomic_write(
            fs.as_ref(),
            &server.join("objects").join(&sha),
            text.as_bytes(),
        )?;
        tree.insert(topic.to_string(), sha);
        commit_tree(&tree, &mut history)?;
    }
    let text: String = history.iter().map(|i| format!("{i}\n")).collect();
    atomic_write(fs.as_ref(), &server.join("history"), text.as_bytes())
}

/// Every `(key, value)` line on the server's `main`.
pub fn server_recall(fs: &Shared, server: &Path) -> io::Result<Vec<(String, String)>> {
    let history = server_history(fs, server)?;
    let mut out = Vec::new();
    for sha in server_tree(fs, server, history.last())?.values() {
        out.extend(super::lines_of(
            &fs.read_to_string(&server.join("objects").join(sha))?,
        ));
    }
    Ok(out)
}
