//! Letta MemFS: the agent's memory is a directory of Markdown files in a
//! git repository; every memory write is committed before it returns
//! (`commitMemoryWrite`), and a write is refused while the repository is
//! dirty. Reflection subagents consolidate memory "when the context window
//! is compacted": each edits a worktree on its own branch, commits there,
//! and merges into main, aborting the merge on a conflict it cannot
//! resolve. On start-up the harness runs `git pull --ff-only`, which keeps
//! uncommitted edits; its reset to the remote runs only on unrelated
//! history and refuses a dirty repository. Sources: [`super::sources`]
//! (letta-ai/letta-code `src/agent/memory-git.ts`,
//! `src/agent/subagents/builtin/reflection.md`).
//!
//! Here the repository is an in-process commit log on the storage layer:
//! content-addressed blobs in `.git/objects/` (whole files, neither
//! compressed nor packed), one file per commit in `.git/commits/` (its
//! whole tree), and `.git/HEAD` naming the last commit, replaced
//! atomically. The server's copy, the push after the turn and the start-up
//! pull are in [`super::git_remote`].

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{
    lines_of, merged, read_opt, remove_temps, render_lines, sha256_hex, Ack, Fact, Job,
    StoreProfile,
};
use crate::storage::{atomic_write, Shared};

/// The design's switches. `Default`: as documented.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GitBacked {
    /// Every edit is committed before it is acknowledged; `false`: edits
    /// are committed only at the next consolidation.
    pub commit_every_edit: bool,
    /// A reflection's merge sees main moved since its worktree's base (and
    /// aborts on a conflict); `false`: its files are copied over main.
    pub parent_check: bool,
    /// Recovery resets the working tree to HEAD, dropping uncommitted edits
    /// (the broken variant); `false`: `git pull --ff-only` keeps them.
    pub reset_on_start: bool,
}

impl Default for GitBacked {
    fn default() -> Self {
        GitBacked {
            commit_every_edit: true,
            parent_check: true,
            reset_on_start: false,
        }
    }
}

pub(super) fn git(root: &Path) -> PathBuf {
    root.join(".git")
}

/// The last commit's number (0: none yet).
pub(super) fn head(fs: &Shared, root: &Path) -> io::Result<u64> {
    Ok(read_opt(fs, &git(root).join("HEAD"))?
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(0))
}

pub(super) fn commit_path(root: &Path, n: u64) -> PathBuf {
    git(root).join("commits").join(format!("{n:08}"))
}

/// Topic -> blob hash at commit `n` (each commit lists its whole tree,
/// as a git commit names a whole tree object).
pub(super) fn tree_at(fs: &Shared, root: &Path, n: u64) -> io::Result<BTreeMap<String, String>> {
    if n == 0 {
        return Ok(BTreeMap::new());
    }
    let text = fs.read_to_string(&commit_path(root, n))?;
    Ok(text
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(t, sha)| (t.to_string(), sha.to_string()))
        .collect())
}

pub(super) fn blob(fs: &Shared, root: &Path, sha: &str) -> io::Result<String> {
    fs.read_to_string(&git(root).join("objects").join(sha))
}

/// Store `changes` (topic, new text) over the tree of commit `parent` as
/// commit `parent + 1`, and move HEAD to it.
fn commit(fs: &Shared, root: &Path, parent: u64, changes: &[(String, String)]) -> io::Result<()> {
    let objects = git(root).join("objects");
    fs.create_dir_all(&objects)?;
    fs.create_dir_all(&git(root).join("commits"))?;
    let mut tree = tree_at(fs, root, parent)?;
    for (topic, text) in changes {
        let sha = sha256_hex(text.as_bytes());
        match fs.write_new(&objects.join(&sha), text.as_bytes()) {
            Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
            _ => {}
        }
        tree.insert(topic.clone(), sha);
    }
    let entry: String = tree
        .iter()
        .map(|(t, sha)| format!("{t}\t{sha}\n"))
        .collect();
    atomic_write(
        fs.as_ref(),
        &commit_path(root, parent + 1),
        entry.as_bytes(),
    )?;
    atomic_write(
        fs.as_ref(),
        &git(root).join("HEAD"),
        format!("{}\n", parent + 1).as_bytes(),
    )
}

/// The working tree's topic files and their texts.
pub(super) fn working_tree(fs: &Shared, root: &Path) -> io::Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for name in fs.list(root).unwrap_or_default() {
        let Some(topic) = name.strip_suffix(".md") else {
            continue;
        };
        if let Some(text) = read_opt(fs, &root.join(&name))? {
            out.insert(topic.to_string(), text);
        }
    }
    Ok(out)
}

impl GitBacked {
    /// Commit every working-tree file that differs from HEAD.
    fn commit_dirty(&self, fs: &Shared, root: &Path) -> io::Result<()> {
        let n = head(fs, root)?;
        let at_head = tree_at(fs, root, n)?;
        let changes: Vec<(String, String)> = working_tree(fs, root)?
            .into_iter()
            .filter(|(t, text)| at_head.get(t) != Some(&sha256_hex(text.as_bytes())))
            .collect();
        if changes.is_empty() {
            return Ok(());
        }
        commit(fs, root, n, &changes)
    }

    /// Whether the working tree differs from HEAD (`git status --porcelain`).
    pub(super) fn dirty(fs: &Shared, root: &Path) -> io::Result<bool> {
        let at_head = tree_at(fs, root, head(fs, root)?)?;
        let tree = working_tree(fs, root)?;
        Ok(tree.len() != at_head.len()
            || tree
                .iter()
                .any(|(t, text)| at_head.get(t) != Some(&sha256_hex(text.as_bytes()))))
    }
}

impl StoreProfile for GitBacked {
    fn name(&self) -> &'static str {
        "git-backed"
    }

    fn design(&self) -> &'static str {
        "Letta MemFS: Markdown files in git, every memory write a commit, reflection in a worktree merged into main (abort on conflict) when the context is compacted, `git pull --ff-only` on start [src letta-ai/letta-code memory-git.ts, reflection.md; official docs.letta.com/concepts/memfs]"
    }

    fn remember(&self, fs: &Shared, root: &Path, _: &str, fact: &Fact) -> io::Result<Ack> {
        fs.create_dir_all(root)?;
        if self.commit_every_edit && Self::dirty(fs, root)? {
            return Ok(Ack::Refused(
                "Memory repo has uncommitted changes. Commit, discard, or sync them before using memory tools.".into(),
            ));
        }
        let path = root.join(format!("{}.md", fact.topic));
        let mut text = read_opt(fs, &path)?.unwrap_or_default();
        text.push_str(&format!("{}\n", fact.line()));
        atomic_write(fs.as_ref(), &path, text.as_bytes())?;
        if self.commit_every_edit {
            commit(fs, root, head(fs, root)?, &[(fact.topic.clone(), text)])?;
        }
        Ok(Ack::Stored)
    }

    /// Dreaming on compaction: each file keeps the newest line per key,
    /// and everything not yet committed is committed.
    fn consolidate(&self, fs: &Shared, root: &Path) -> io::Result<()> {
        for (topic, text) in working_tree(fs, root)? {
            let kept = render_lines(&merged(&lines_of(&text), true));
            if kept != text {
                atomic_write(
                    fs.as_ref(),
                    &root.join(format!("{topic}.md")),
                    kept.as_bytes(),
                )?;
            }
        }
        self.commit_dirty(fs, root)
    }

    /// The harness's `git pull --ff-only` on start: temp files and a commit
    /// that never reached HEAD go (git would leave an unreferenced object),
    /// uncommitted edits stay. `reset_on_start`: the working tree is reset
    /// to HEAD instead.
    fn recover(&self, fs: &Shared, root: &Path) -> io::Result<()> {
        for dir in [root.to_path_buf(), git(root), git(root).join("commits")] {
            remove_temps(fs, &dir)?;
        }
        let n = head(fs, root)?;
        let mut orphan = n + 1;
        while fs.exists(&commit_path(root, orphan)) {
            fs.remove_file(&commit_path(root, orphan))?;
            orphan += 1;
        }
        if !self.reset_on_start {
            return Ok(());
        }
        let at_head = tree_at(fs, root, n)?;
        for (topic, text) in working_tree(fs, root)? {
            if at_head.get(&topic) != Some(&sha256_hex(text.as_bytes())) {
                fs.remove_file(&root.join(format!("{topic}.md")))?;
            }
        }
        for (topic, sha) in &at_head {
            let path = root.join(format!("{topic}.md"));
            if !fs.exists(&path) {
                atomic_write(fs.as_ref(), &path, blob(fs, root, sha)?.as_bytes())?;
            }
        }
        Ok(())
    }

    fn recall(&self, fs: &Shared, root: &Path) -> io::Result<Vec<(String, String)>> {
        Ok(working_tree(fs, root)?
            .values()
            .flat_map(|t| lines_of(t))
            .collect())
    }

    fn versions(&self, fs: &Shared, root: &Path) -> Option<u64> {
        head(fs, root).ok()
    }

    fn not_applicable(&self, measure: super::Measure) -> Option<&'static str> {
        (measure == super::Measure::Limits).then_some("no documented limit")
    }

    fn consolidator(&self, _: &str, facts: Vec<Fact>) -> Box<dyn Job> {
        Box::new(Dreamer {
            profile: *self,
            facts,
            base: None,
            outcome: None,
        })
    }
}

/// A reflection writing its thread's facts: commit them in a worktree
/// branched at HEAD, then merge the branch into main.
struct Dreamer {
    profile: GitBacked,
    facts: Vec<Fact>,
    /// The worktree's base commit, and the texts committed on its branch.
    base: Option<(u64, Vec<(String, String)>)>,
    /// `Some(true)`: merged; `Some(false)`: the merge was aborted.
    outcome: Option<bool>,
}

impl Dreamer {
    /// `git worktree add` at HEAD, the edits, and the branch's commit.
    fn worktree(&self, fs: &Shared, root: &Path) -> io::Result<(u64, Vec<(String, String)>)> {
        let n = head(fs, root)?;
        let at_head = tree_at(fs, root, n)?;
        let mut texts: BTreeMap<String, String> = BTreeMap::new();
        for f in &self.facts {
            let text = match texts.get(&f.topic) {
                Some(t) => t.clone(),
                None => match at_head.get(&f.topic) {
                    Some(sha) => blob(fs, root, sha)?,
                    None => String::new(),
                },
            };
            let mut lines = lines_of(&text);
            lines.push((f.key.clone(), f.value.clone()));
            texts.insert(f.topic.clone(), render_lines(&merged(&lines, true)));
        }
        Ok((n, texts.into_iter().collect()))
    }

    /// Whether main changed one of the branch's files since the base.
    fn conflicts(
        fs: &Shared,
        root: &Path,
        base: u64,
        now: u64,
        texts: &[(String, String)],
    ) -> io::Result<bool> {
        let (then, main) = (tree_at(fs, root, base)?, tree_at(fs, root, now)?);
        Ok(texts.iter().any(|(t, _)| then.get(t) != main.get(t)))
    }
}

impl Job for Dreamer {
    fn step(&mut self, fs: &Shared, root: &Path) -> io::Result<bool> {
        let Some((base, texts)) = self.base.take() else {
            self.base = Some(self.worktree(fs, root)?);
            return Ok(false);
        };
        // `git merge $BRANCH`: one step, as git holds `index.lock` for it.
        let now = head(fs, root)?;
        if self.profile.parent_check && now != base && Self::conflicts(fs, root, base, now, &texts)?
        {
            // `git merge --abort`: main is left as it was, nothing is kept.
            self.outcome = Some(false);
            return Ok(true);
        }
        for (topic, text) in &texts {
            atomic_write(
                fs.as_ref(),
                &root.join(format!("{topic}.md")),
                text.as_bytes(),
            )?;
        }
        commit(fs, root, now, &texts)?;
        self.outcome = Some(true);
        Ok(true)
    }

    fn acknowledged(&self) -> Vec<Fact> {
        match self.outcome {
            Some(true) => self.facts.clone(),
            _ => Vec::new(),
        }
    }
}
