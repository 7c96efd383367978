//! The roots of one run, with a persistence path of exact length, on the
//! run's storage backend.
//!
//! Whether a placeholder `[Earlier tool result saved at <path>]` crosses the
//! 120-char rule depends on the length of `<path>` (seed section 4), so a run
//! that used wherever the checkout happens to live would not be reproducible.
//! [`LabRoot`] pads folders so that the embedded path of a result file has
//! exactly the requested length, and [`LabRoot::redact`] replaces the
//! run-specific prefix in everything the lab prints.
//!
//! On the memory backend (the default) the roots are virtual absolute paths
//! below `/`, so any length from [`MIN_PATH_LEN`] up to [`MAX_PATH_LEN`] works
//! whatever `TMPDIR` and the working directory are. On the disk backend they
//! live under a fresh `ctxlab-*` temp dir, removed when the root is dropped
//! (and by the signal handler of [`cleanup`] on Ctrl-C or SIGTERM).

use std::borrow::Cow;
use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{LabError, LabResult};
use crate::storage::{Backend, DiskFs, MemFs, Shared, Spill, Storage};

pub mod cleanup;

/// Folder names below the padding, as in the course (`WORKDIR/.task_outputs/tool-results`).
const RESULTS_SUFFIX: &str = ".task_outputs/tool-results";
/// Archive folder, as in the course (`WORKDIR/.transcripts`).
const TRANSCRIPTS_SUFFIX: &str = ".transcripts";
/// Short layout for embedded paths too short for the course's folder names
/// (the prototype's `root/tool-results`); only the memory backend reaches it.
const SHORT_RESULTS: &str = "tool-results";
/// Archive folder of the short layout.
const SHORT_TRANSCRIPTS: &str = "transcripts";
/// Longest padding folder name (well under NAME_MAX = 255).
const MAX_SEGMENT: usize = 200;
/// Shortest `--path-len` any run accepts: `/tool-results/a1.txt` (a 2-char id).
pub const MIN_PATH_LEN: usize = 20;
/// Longest `--path-len` (Linux `PATH_MAX`).
pub const MAX_PATH_LEN: usize = 4096;

thread_local! {
    /// The backend of the run under way on this thread, set by
    /// [`with_backend`] for the run's scope: a run option, never a process
    /// global, so two runs side by side (tests, sweep workers) each keep
    /// their own. Outside any scope a run is on the memory backend.
    static THREAD_BACKEND: Cell<Option<Backend>> = const { Cell::new(None) };
}

/// The backend a run started on this thread uses: the innermost
/// [`with_backend`] scope's, else the memory backend.
pub fn current_backend() -> Backend {
    THREAD_BACKEND.with(Cell::get).unwrap_or(Backend::Mem)
}

/// Run `f` with every run on this thread using `backend` (restored afterwards,
/// also when `f` panics). Worker threads call it with the spawner's backend.
pub fn with_backend<T>(backend: Backend, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Backend>);
    impl Drop for Restore {
        fn drop(&mut self) {
            THREAD_BACKEND.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(THREAD_BACKEND.with(|c| c.replace(Some(backend))));
    f()
}

thread_local! {
    /// Whether memory roots made on this thread keep file contents in a
    /// spill file ([`with_spill`]).
    static THREAD_SPILL: Cell<bool> = const { Cell::new(false) };
}

/// Run `f` with every memory root made on this thread spilled
/// ([`LabRoot::spilled`]: the same paths and bytes, the contents in an
/// unnamed temp file), restored afterwards. For runs that write more than
/// they should hold: a long horizon archives its context at every
/// compaction, gigabytes over millions of tokens.
pub fn with_spill<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            THREAD_SPILL.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(THREAD_SPILL.with(|c| c.replace(true)));
    f()
}

/// Check a requested path length against the fixed bounds (before any run).
pub fn validate_path_len(len: usize) -> Result<(), String> {
    if (MIN_PATH_LEN..=MAX_PATH_LEN).contains(&len) {
        Ok(())
    } else {
        Err(format!("{len} is outside {MIN_PATH_LEN}..={MAX_PATH_LEN}"))
    }
}

/// `--path-len N` as a command-line value: a whole number within the bounds.
pub fn parse_path_len(s: &str) -> Result<usize, String> {
    let len: usize = s
        .parse()
        .map_err(|_| format!("{s:?} is not a whole number"))?;
    validate_path_len(len).map(|()| len)
}

/// Roots for persisted results and archived transcripts on one storage.
#[derive(Debug)]
pub struct LabRoot {
    fs: Shared,
    // Held for its Drop: removes every file of a disk run.
    _tmp: Option<cleanup::TempRoot>,
    results: PathBuf,
    /// `results` as a string when a name can follow it after one `/`
    /// (checked once: every saved result's path starts with it).
    results_plain: Option<String>,
    transcripts: PathBuf,
}

/// The file name step 1 uses for a tool id: unsafe chars become `_`, cut to `max` chars.
pub fn safe_id(tool_use_id: &str, max: usize) -> Cow<'_, str> {
    // Most ids are short and all safe (`toolu_…`): borrowed, no per-char collect.
    let safe = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-');
    if !tool_use_id.is_empty()
        && tool_use_id.len() <= max
        && tool_use_id.as_bytes().iter().all(safe)
    {
        return Cow::Borrowed(tool_use_id);
    }
    Cow::Owned(safe_id_by_chars(tool_use_id, max))
}

/// [`safe_id`] char by char, as the course writes it.
fn safe_id_by_chars(tool_use_id: &str, max: usize) -> String {
    let s: String = tool_use_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(max)
        .collect();
    if s.is_empty() {
        "unknown".to_string()
    } else {
        s
    }
}

/// Results and transcripts folders of one run.
type Layout = (PathBuf, PathBuf);

/// The course layout below `base` (padded so a result file for an `id`-char
/// id is `want` chars); `None` when only an impossible 1-char padding fits.
/// `Err(min)` when `want` is below the layout's minimum `min`.
fn course_layout(base: &str, want: Option<usize>, id: usize) -> Result<Option<Layout>, usize> {
    let fixed = base.len() + 1 + RESULTS_SUFFIX.len() + 1 + id + ".txt".len();
    let pad = match want {
        None => 0,
        Some(w) if w < fixed => return Err(fixed),
        Some(w) => w - fixed,
    };
    if pad == 1 {
        return Ok(None);
    }
    let padded = padded(base, pad);
    Ok(Some((
        padded.join(RESULTS_SUFFIX),
        padded.join(TRANSCRIPTS_SUFFIX),
    )))
}

/// The short layout at the virtual root, for lengths the course layout cannot reach.
fn short_layout(want: usize, id: usize) -> Result<Layout, usize> {
    let fixed = 1 + SHORT_RESULTS.len() + 1 + id + ".txt".len();
    let pad = want.checked_sub(fixed).ok_or(fixed)?;
    // A 1-char padding cannot be a folder: lengthen the folder name instead.
    let (pad, results) = if pad == 1 {
        (0, format!("{SHORT_RESULTS}_"))
    } else {
        (pad, SHORT_RESULTS.to_string())
    };
    let padded = padded("", pad);
    Ok((padded.join(results), padded.join(SHORT_TRANSCRIPTS)))
}

/// A usage error for a `--path-len` out of range.
fn check_path_len(path_len: Option<usize>) -> LabResult<()> {
    if let Some(len) = path_len {
        validate_path_len(len).map_err(|m| {
            LabError::usage(
                format!("--path-len {m}"),
                format!("use a length from {MIN_PATH_LEN} to {MAX_PATH_LEN}"),
            )
        })?;
    }
    Ok(())
}

/// `base` followed by padding folders of `pad` chars in all (pad != 1).
fn padded(base: &str, pad: usize) -> PathBuf {
    let mut p = PathBuf::from(if base.is_empty() { "/" } else { base });
    for seg in padding_segments(pad) {
        p.push(seg);
    }
    p
}

impl LabRoot {
    /// A root on the current backend (see [`with_backend`]) whose result file
    /// for an id of `ref_id_chars` chars has an embedded path of exactly
    /// `path_len` chars; `None` = no padding.
    pub fn new(path_len: Option<usize>, ref_id_chars: usize) -> LabResult<Self> {
        Self::on(current_backend(), path_len, ref_id_chars)
    }

    /// [`LabRoot::new`] on a chosen backend.
    pub fn on(backend: Backend, path_len: Option<usize>, ref_id_chars: usize) -> LabResult<Self> {
        check_path_len(path_len)?;
        match backend {
            Backend::Mem if THREAD_SPILL.with(Cell::get) => Self::spilled(path_len, ref_id_chars),
            Backend::Mem => Self::fresh_memory(path_len, ref_id_chars),
            Backend::Disk => Self::on_disk(path_len, ref_id_chars),
        }
    }

    /// A memory root (the paths of [`LabRoot::new`] on the memory backend)
    /// whose file contents are kept in an unnamed temp file ([`Spill`]): for
    /// a run that writes more than it should hold, such as a replay of a
    /// long session. Falls back to [`LabRoot::new`] on the disk backend.
    pub fn spilled(path_len: Option<usize>, ref_id_chars: usize) -> LabResult<Self> {
        if current_backend() == Backend::Disk {
            return Self::new(path_len, ref_id_chars);
        }
        let dir = std::env::temp_dir();
        let spill = Spill::new().map_err(|e| LabError::io("creating a spill file", dir, e))?;
        check_path_len(path_len)?;
        Self::in_memory(path_len, ref_id_chars, Arc::new(spill))
    }

    /// [`LabRoot::in_memory`] on a new [`MemFs`], copied from this thread's
    /// template for the length: the same empty folders for every run at a
    /// length, laid out once (padding, joins, hashed directory keys were a
    /// twentieth of a sweep cell). A template holds no file.
    fn fresh_memory(path_len: Option<usize>, id: usize) -> LabResult<Self> {
        type Templates = std::collections::HashMap<
            (Option<usize>, usize),
            (LabRoot, Arc<MemFs>),
            foldhash::fast::FixedState,
        >;
        thread_local! {
            static TEMPLATES: std::cell::RefCell<Templates> = std::cell::RefCell::default();
        }
        TEMPLATES.with(|t| {
            let mut templates = t.borrow_mut();
            let key = (path_len, id);
            // Bounded (a few KB each at the longest paths): a hunt over
            // more lengths starts over.
            if templates.len() >= 512 && !templates.contains_key(&key) {
                templates.clear();
            }
            let (root, mem) = match templates.entry(key) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(v) => {
                    let mem = Arc::new(MemFs::new());
                    let root = Self::in_memory(path_len, id, mem.clone())?;
                    v.insert((root, mem))
                }
            };
            Ok(LabRoot {
                fs: Arc::new(mem.duplicate()),
                _tmp: None,
                results: root.results.clone(),
                results_plain: root.results_plain.clone(),
                transcripts: root.transcripts.clone(),
            })
        })
    }

    fn in_memory(path_len: Option<usize>, id: usize, fs: Shared) -> LabResult<Self> {
        let layout = match path_len {
            None => Ok(PathBuf::from("/ctxlab"))
                .map(|base| (base.join(RESULTS_SUFFIX), base.join(TRANSCRIPTS_SUFFIX))),
            // The disk folders whenever they fit, so both backends agree.
            Some(want) => match course_layout("", Some(want), id) {
                Ok(Some(l)) => Ok(l),
                _ => short_layout(want, id),
            },
        };
        let (results, transcripts) = layout.map_err(|min| {
            LabError::usage(
                format!(
                    "--path-len {} is shorter than the minimum {min} for a {id}-char result id \
                     (/{SHORT_RESULTS}/ + the id + .txt)",
                    path_len.unwrap_or(0)
                ),
                format!("use --path-len {min} or more"),
            )
        })?;
        Self::create(fs, None, results, transcripts)
    }

    fn on_disk(path_len: Option<usize>, id: usize) -> LabResult<Self> {
        // A TMPDIR too long for the requested length falls back to /tmp.
        let tmpdir = std::env::temp_dir();
        let base = match path_len {
            Some(want) if want < disk_minimum(&tmpdir, id) && Path::new("/tmp").is_dir() => {
                PathBuf::from("/tmp")
            }
            _ => tmpdir,
        };
        // The temp dir name is fixed-length, so one retry with a longer
        // prefix fixes the single impossible padding of exactly one char.
        for prefix in ["ctxlab-", "ctxlab--"] {
            let tmp = cleanup::TempRoot::new_in(&base, prefix)?;
            let base = tmp.path().to_string_lossy().into_owned();
            match course_layout(&base, path_len, id) {
                Ok(Some((results, transcripts))) => {
                    return Self::create(Arc::new(DiskFs), Some(tmp), results, transcripts)
                }
                Ok(None) => continue,
                Err(min) => {
                    return Err(LabError::usage(
                        format!(
                            "--path-len {} is shorter than the disk backend's minimum {min} here \
                             (temp dir {base} + /{RESULTS_SUFFIX}/ + a {id}-char id + .txt)",
                            path_len.unwrap_or(0)
                        ),
                        format!(
                            "use --path-len {min} or more, point TMPDIR at a shorter directory, \
                             or use the memory backend (--fs mem, down to {MIN_PATH_LEN})"
                        ),
                    ))
                }
            }
        }
        unreachable!("a one-char longer prefix always leaves a padding other than 1")
    }

    fn create(
        fs: Shared,
        tmp: Option<cleanup::TempRoot>,
        results: PathBuf,
        transcripts: PathBuf,
    ) -> LabResult<Self> {
        for dir in [&results, &transcripts] {
            fs.create_dir_all(dir)
                .map_err(|e| LabError::io("creating a run directory", dir.clone(), e))?;
        }
        let results_plain = crate::storage::plain_dir(&results).map(str::to_string);
        Ok(LabRoot {
            fs,
            _tmp: tmp,
            results,
            results_plain,
            transcripts,
        })
    }

    /// The storage every file of this run lives on.
    pub fn fs(&self) -> &dyn Storage {
        &*self.fs
    }

    /// A shared handle to the run's storage.
    pub fn shared(&self) -> Shared {
        Arc::clone(&self.fs)
    }

    /// Which backend this root is on.
    pub fn backend(&self) -> Backend {
        self.fs.backend()
    }

    /// Directory of persisted tool results.
    pub fn results(&self) -> &Path {
        &self.results
    }

    /// The path of result file `stem` + `suffix`: [`crate::storage::join_string`]
    /// of the results dir and the name, built in one allocation.
    pub fn result_path(&self, stem: &str, suffix: &str) -> String {
        let d = self.results_plain.as_deref();
        crate::storage::join_parts(&self.results, d, &[stem, suffix])
    }

    /// Directory of archived transcripts.
    pub fn transcripts(&self) -> &Path {
        &self.transcripts
    }

    /// Replace run-specific prefixes with `$RESULTS` / `$TRANSCRIPTS`.
    pub fn redact(&self, text: &str) -> String {
        text.replace(&*self.results.to_string_lossy(), "$RESULTS")
            .replace(&*self.transcripts.to_string_lossy(), "$TRANSCRIPTS")
    }
}

/// The shortest embedded path a disk run under `tmpdir` reaches for an `id`-char id.
fn disk_minimum(tmpdir: &Path, id: usize) -> usize {
    let temp_dir = tmpdir.to_string_lossy().len() + "/ctxlab-XXXXXX".len();
    temp_dir + 1 + RESULTS_SUFFIX.len() + 1 + id + ".txt".len()
}

/// Folder names whose joined form `/a/b...` is exactly `pad` chars (pad != 1).
fn padding_segments(pad: usize) -> Vec<String> {
    let mut left = pad;
    let mut segs = Vec::new();
    while left > 0 {
        let mut seg = (left - 1).min(MAX_SEGMENT);
        // Never leave exactly one char: it could only be a bare separator.
        if left - (seg + 1) == 1 {
            seg -= 1;
        }
        segs.push("p".repeat(seg));
        left -= seg + 1;
    }
    segs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_roots_spill_inside_with_spill_only_with_the_same_paths() {
        let kind = |root: &LabRoot| format!("{:?}", root.fs());
        let plain = LabRoot::new(Some(90), 2).unwrap();
        let spilled = with_spill(|| LabRoot::new(Some(90), 2).unwrap());
        let after = LabRoot::new(Some(90), 2).unwrap();
        assert!(kind(&spilled).starts_with("Spill"), "{}", kind(&spilled));
        assert!(!kind(&plain).starts_with("Spill") && !kind(&after).starts_with("Spill"));
        assert_eq!(spilled.results(), plain.results());
        assert_eq!(spilled.transcripts(), plain.transcripts());
        let file = spilled.results().join("a1.txt");
        spilled.fs().write_new(&file, b"kept bytes").unwrap();
        assert_eq!(spilled.fs().read(&file).unwrap(), b"kept bytes");
    }

    #[test]
    fn embedded_path_has_the_exact_requested_length_on_both_backends() {
        // Disk lengths start at 130: the disk minimum grows with TMPDIR (60 chars in CI's check).
        let cases = [
            (Backend::Mem, &[60, 89, 90, 91, 160, 250, 251, 252, 600][..]),
            (Backend::Disk, &[130, 160, 250, 251, 252, 600][..]),
        ];
        for (backend, lens) in cases {
            for &want in lens {
                let root = LabRoot::on(backend, Some(want), 2).unwrap();
                let path = root.results().join("a1.txt");
                assert_eq!(path.to_string_lossy().len(), want, "{}", path.display());
                assert!(root.fs().kind(root.results()).is_some());
                assert_eq!(root.backend(), backend);
            }
        }
    }

    #[test]
    fn memory_reaches_every_length_from_the_minimum_to_the_maximum() {
        for want in (MIN_PATH_LEN..=300).chain([1000, 4095, MAX_PATH_LEN]) {
            let root = LabRoot::on(Backend::Mem, Some(want), 2).unwrap();
            let path = root.results().join("a1.txt");
            assert_eq!(path.to_string_lossy().len(), want, "{}", path.display());
            assert!(!path.starts_with(std::env::temp_dir()) || want < 40);
        }
    }

    #[test]
    fn memory_uses_the_disk_folders_whenever_they_fit() {
        let mem = LabRoot::on(Backend::Mem, Some(160), 2).unwrap();
        let disk = LabRoot::on(Backend::Disk, Some(160), 2).unwrap();
        let len = |p: &Path| p.to_string_lossy().len();
        assert_eq!(len(mem.transcripts()), len(disk.transcripts()));
        assert!(mem.results().ends_with(RESULTS_SUFFIX));
    }

    #[test]
    fn too_short_is_a_usage_error_naming_a_minimum_that_works() {
        let err = LabRoot::on(Backend::Mem, Some(21), 7).unwrap_err();
        assert!(err.to_string().contains("--path-len 21"), "{err}");
        assert!(err.to_string().contains("minimum 25"), "{err}");
        assert_eq!(err.exit_code(), 2);
        assert!(LabRoot::on(Backend::Mem, Some(25), 7).is_ok());
        let err = LabRoot::on(Backend::Disk, Some(21), 2).unwrap_err();
        let text = err.to_string();
        let min: usize = text
            .split("minimum ")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .and_then(|s| s.parse().ok())
            .unwrap();
        assert!(LabRoot::on(Backend::Disk, Some(min), 2).is_ok(), "{text}");
        assert!(
            LabRoot::on(Backend::Disk, Some(min + 1), 2).is_ok(),
            "{text}"
        );
    }

    #[test]
    fn out_of_bounds_lengths_are_refused_before_allocating() {
        for bad in [0, MIN_PATH_LEN - 1, MAX_PATH_LEN + 1, 1 << 31, usize::MAX] {
            let err = LabRoot::on(Backend::Mem, Some(bad), 2).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{err}");
            assert!(err.to_string().len() < 300, "{err}");
        }
    }

    #[test]
    fn a_thread_override_wins_and_is_restored() {
        let outer = current_backend();
        let inner = with_backend(Backend::Disk, current_backend);
        assert_eq!(inner, Backend::Disk);
        assert_eq!(current_backend(), outer);
    }

    #[test]
    fn safe_id_matches_the_course_rule() {
        assert_eq!(safe_id("toolu_01/../x", 120), "toolu_01_.._x");
        assert_eq!(safe_id("", 120), "unknown");
        assert_eq!(safe_id("abcdef", 3), "abc");
    }

    #[test]
    fn memory_roots_at_one_length_share_the_layout_not_the_files() {
        let first = LabRoot::on(Backend::Mem, Some(90), 2).unwrap();
        let path = first.results().join("a1.txt");
        first.fs().write_new(&path, b"x").unwrap();
        let second = LabRoot::on(Backend::Mem, Some(90), 2).unwrap();
        let built = LabRoot::in_memory(Some(90), 2, Arc::new(MemFs::new())).unwrap();
        assert_eq!(second.results(), first.results());
        assert_eq!(second.transcripts(), built.transcripts());
        assert!(
            second.fs().kind(&path).is_none(),
            "a file leaked between runs"
        );
        assert_eq!(
            second.fs().kind(second.results()),
            Some(crate::storage::FileKind::Dir)
        );
        assert_eq!(
            second.fs().kind(second.transcripts()),
            Some(crate::storage::FileKind::Dir)
        );
    }

    #[test]
    fn result_paths_are_the_joined_paths() {
        for len in [20, 60, 90, 251, 600] {
            let root = LabRoot::on(Backend::Mem, Some(len), 2).unwrap();
            let joined = crate::storage::join_string(root.results(), "a1.txt");
            assert_eq!(root.result_path("a1", ".txt"), joined);
            assert_eq!(joined.len(), len);
        }
    }

    proptest::proptest! {
        #[test]
        fn safe_id_fast_path_equals_the_char_rule(id in "[a-z0-9_./é -]{0,8}", max in 0usize..10) {
            proptest::prop_assert_eq!(safe_id(&id, max), safe_id_by_chars(&id, max));
        }
    }
}
