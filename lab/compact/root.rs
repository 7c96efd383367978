//! The on-disk roots of one run, with a persistence path of exact length.
//!
//! Whether a placeholder `[Earlier tool result saved at <path>]` crosses the
//! 120-char rule depends on the length of `<path>` (seed section 4), so a run
//! that used wherever the checkout happens to live would not be reproducible.
//! [`LabRoot`] pads folders under a fresh temp dir so that the embedded path of
//! a result file has exactly the requested length, and [`LabRoot::redact`]
//! replaces the machine-specific prefix in everything the lab prints.

use std::path::{Path, PathBuf};

use crate::error::{LabError, LabResult};

/// Folder names below the padding, as in the course (`WORKDIR/.task_outputs/tool-results`).
const RESULTS_SUFFIX: &str = ".task_outputs/tool-results";
/// Archive folder, as in the course (`WORKDIR/.transcripts`).
const TRANSCRIPTS_SUFFIX: &str = ".transcripts";
/// Longest padding folder name (well under NAME_MAX = 255).
const MAX_SEGMENT: usize = 200;

/// Temp-dir-backed roots for persisted results and archived transcripts.
#[derive(Debug)]
pub struct LabRoot {
    // Held for its Drop: removes every file of the run.
    _tmp: tempfile::TempDir,
    results: PathBuf,
    transcripts: PathBuf,
}

/// The file name step 1 uses for a tool id: unsafe chars become `_`, cut to `max` chars.
pub fn safe_id(tool_use_id: &str, max: usize) -> String {
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

impl LabRoot {
    /// A root whose result file for an id of `ref_id_chars` chars has an
    /// embedded path of exactly `path_len` chars; `None` = no padding.
    pub fn new(path_len: Option<usize>, ref_id_chars: usize) -> LabResult<Self> {
        // The temp dir name is fixed-length, so one retry with a longer
        // prefix fixes the single impossible padding of exactly one char.
        for prefix in ["ctxlab-", "ctxlab--"] {
            let tmp = tempfile::Builder::new()
                .prefix(prefix)
                .tempdir()
                .map_err(|e| {
                    LabError::io("creating the run's temp dir", std::env::temp_dir(), e)
                })?;
            let base = tmp.path().to_string_lossy().into_owned();
            let file_part = 1 + ref_id_chars + ".txt".len();
            let fixed = base.len() + 1 + RESULTS_SUFFIX.len() + file_part;
            let pad = match path_len {
                None => 0,
                Some(want) if want < fixed => {
                    return Err(LabError::usage(
                        format!(
                            "--path-len {want} is shorter than this machine's minimum {fixed} \
                             (temp dir {base} + /{RESULTS_SUFFIX}/ + a {ref_id_chars}-char id + .txt)"
                        ),
                        format!("use --path-len {fixed} or more, or point TMPDIR at a shorter directory"),
                    ))
                }
                Some(want) => want - fixed,
            };
            if pad == 1 {
                continue;
            }
            let padding = padding_segments(pad);
            let mut padded = tmp.path().to_path_buf();
            for seg in &padding {
                padded.push(seg);
            }
            let results = padded.join(RESULTS_SUFFIX);
            let transcripts = padded.join(TRANSCRIPTS_SUFFIX);
            for dir in [&results, &transcripts] {
                std::fs::create_dir_all(dir)
                    .map_err(|e| LabError::io("creating a run directory", dir.clone(), e))?;
            }
            return Ok(LabRoot {
                _tmp: tmp,
                results,
                transcripts,
            });
        }
        unreachable!("a one-char longer prefix always leaves a padding other than 1")
    }

    /// Directory of persisted tool results.
    pub fn results(&self) -> &Path {
        &self.results
    }

    /// Directory of archived transcripts.
    pub fn transcripts(&self) -> &Path {
        &self.transcripts
    }

    /// Replace machine-specific prefixes with `$RESULTS` / `$TRANSCRIPTS`.
    pub fn redact(&self, text: &str) -> String {
        text.replace(&*self.results.to_string_lossy(), "$RESULTS")
            .replace(&*self.transcripts.to_string_lossy(), "$TRANSCRIPTS")
    }
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
    fn embedded_path_has_the_exact_requested_length() {
        for want in [60, 89, 90, 91, 160, 250, 251, 252, 600] {
            let root = LabRoot::new(Some(want), 2).unwrap();
            let path = root.results().join("a1.txt");
            assert_eq!(path.to_string_lossy().len(), want, "{}", path.display());
            assert!(root.results().is_dir());
        }
    }

    #[test]
    fn too_short_is_a_usage_error_naming_the_minimum() {
        let err = LabRoot::new(Some(5), 2).unwrap_err();
        assert!(err.to_string().contains("--path-len 5"), "{err}");
        assert_eq!(err.exit_code(), 2);
    }

    #[test]
    fn safe_id_matches_the_course_rule() {
        assert_eq!(safe_id("toolu_01/../x", 120), "toolu_01_.._x");
        assert_eq!(safe_id("", 120), "unknown");
        assert_eq!(safe_id("abcdef", 3), "abc");
    }
}
