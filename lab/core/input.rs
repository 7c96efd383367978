//! Reading a user's input file as text, the same way for every command:
//! only regular files (a FIFO or a device such as `/dev/zero` would block or
//! never end), at most [`MAX_INPUT_BYTES`], valid UTF-8 (the first bad byte
//! is reported with its line and column), a leading UTF-8 byte-order mark
//! dropped (editors on Windows write one). Positions count characters, not
//! bytes, so a column matches what an editor shows.

pub mod outputs;
use std::io::Read;
use std::path::Path;

use crate::error::{LabError, LabResult};

/// Largest input file read, 64 MiB: far above any scenario, and a cap that
/// turns an endless stream into an error instead of a hang.
pub const MAX_INPUT_BYTES: u64 = 64 * 1024 * 1024;

fn refused(file: &Path, message: String, fix: &str) -> LabError {
    LabError::Input {
        file: file.to_path_buf(),
        line: 0,
        column: 0,
        message,
        fix: fix.to_string(),
    }
}

/// Longest record, 64 MiB: a line of a line-per-record log, or one element
/// of a JSON array document (`import::stream`). The largest tool result
/// of the shared sessions is a few MiB, and parsing one record takes many
/// times its size in memory (a 200 MB line peaked at 6 GB), so a longer
/// one is refused with the line and column it starts at instead.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// Largest transcript imported, 1 GiB: real session logs run to hundreds of
/// megabytes, and the importer streams them.
pub const MAX_TRANSCRIPT_BYTES: u64 = 1024 * 1024 * 1024;

/// Refuse anything but a regular file of at most `cap` bytes, before it is
/// opened: opening a FIFO blocks until a writer comes, and a device such as
/// `/dev/zero` never ends.
pub fn check_regular(file: &Path, what: &str, cap: u64) -> LabResult<()> {
    let meta =
        std::fs::metadata(file).map_err(|e| LabError::io(format!("reading {what}"), file, e))?;
    if !meta.is_file() {
        return Err(not_regular(file, what, "give the path of a file"));
    }
    if meta.len() > cap {
        return Err(too_large(file, what, cap));
    }
    Ok(())
}

fn not_regular(file: &Path, what: &str, fix: &str) -> LabError {
    refused(
        file,
        format!("{what} must be a regular file, not a directory, FIFO or device"),
        fix,
    )
}

fn too_large(file: &Path, what: &str, cap: u64) -> LabError {
    refused(
        file,
        format!("{what} is larger than {cap} bytes"),
        "split the input, or check that the path names the intended file",
    )
}

/// The text of `file`; `what` names it in errors ("a scenario").
pub fn read_text(file: &Path, what: &str) -> LabResult<String> {
    read_text_capped(file, what, MAX_INPUT_BYTES)
}

/// [`read_text`] with an explicit size cap (tests use a small one).
pub fn read_text_capped(file: &Path, what: &str, cap: u64) -> LabResult<String> {
    let meta =
        std::fs::metadata(file).map_err(|e| LabError::io(format!("reading {what}"), file, e))?;
    if !meta.is_file() {
        return Err(not_regular(file, what, "give the path of a JSON file"));
    }
    let f =
        std::fs::File::open(file).map_err(|e| LabError::io(format!("reading {what}"), file, e))?;
    let mut bytes = Vec::new();
    f.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| LabError::io(format!("reading {what}"), file, e))?;
    if bytes.len() as u64 > cap {
        return Err(too_large(file, what, cap));
    }
    decode(file, bytes)
}

/// UTF-8 text of `bytes` without a leading byte-order mark.
pub fn decode(file: &Path, mut bytes: Vec<u8>) -> LabResult<String> {
    if bytes.starts_with(&[0xEF, 0xBB, 0xBF]) {
        bytes.drain(..3);
    }
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let bytes = e.into_bytes();
        // Everything before `at` is valid, so its lines and chars are exact.
        let before = std::str::from_utf8(&bytes[..at]).unwrap_or_default();
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        LabError::Input {
            file: file.to_path_buf(),
            line,
            column,
            message: format!(
                "not UTF-8 text: byte 0x{:02X} cannot start or continue a character",
                bytes[at]
            ),
            fix: "save the file as UTF-8 (a binary file is not an input of this command)".into(),
        }
    })
}

/// Refuse an output path whose directory does not exist: a mistyped
/// `--out`/`--plot` must not silently create directories. `flag` names the
/// option in the error.
pub fn output_parent_exists(path: &Path, flag: &str) -> LabResult<()> {
    match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) if !dir.is_dir() => Err(LabError::usage(
            format!(
                "{flag} {}: directory {} does not exist",
                path.display(),
                dir.display()
            ),
            format!("create {} first, or fix the path", dir.display()),
        )),
        _ => Ok(()),
    }
}

/// 1-based line and character column of byte offset `at` in `text` (for
/// errors a parser reports as a byte span: TOML, semantic checks).
pub fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// The character column of serde_json's `(line, column)`, which counts
/// bytes: the number of characters up to and including that byte.
pub fn char_column(text: &str, line: usize, byte_column: usize) -> usize {
    let Some(l) = text.split('\n').nth(line.saturating_sub(1)) else {
        return byte_column.max(1);
    };
    let mut end = byte_column.min(l.len());
    let mut inside = false;
    while !l.is_char_boundary(end) {
        end -= 1;
        inside = true;
    }
    (l[..end].chars().count() + usize::from(inside)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_with(bytes: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.json");
        std::fs::write(&p, bytes).unwrap();
        (dir, p)
    }

    #[test]
    fn a_bom_is_dropped() {
        let (_d, p) = file_with(b"\xEF\xBB\xBF{}");
        assert_eq!(read_text(&p, "a scenario").unwrap(), "{}");
    }

    #[test]
    fn invalid_utf8_is_an_input_error_with_a_position() {
        let (_d, p) = file_with(b"{\n  \"\xC3\xA9\": \"\xFF\"}");
        let e = read_text(&p, "a scenario").unwrap_err();
        assert_eq!(e.exit_code(), 3);
        let msg = e.to_string();
        assert!(
            msg.contains("s.json:2:9: not UTF-8 text: byte 0xFF"),
            "{msg}"
        );
    }

    #[test]
    fn directories_devices_and_oversized_files_are_refused() {
        let (d, p) = file_with(b"0123456789");
        let e = read_text(d.path(), "a scenario").unwrap_err();
        assert_eq!(e.exit_code(), 3, "{e}");
        assert!(e.to_string().contains("regular file"));
        let e = read_text_capped(&p, "a scenario", 4).unwrap_err();
        assert_eq!(e.exit_code(), 3);
        assert!(e.to_string().contains("larger than 4 bytes"), "{e}");
        assert_eq!(
            read_text_capped(&p, "a scenario", 10).unwrap(),
            "0123456789"
        );
        #[cfg(unix)]
        {
            let e = read_text(Path::new("/dev/zero"), "a scenario").unwrap_err();
            assert_eq!(e.exit_code(), 3, "{e}");
        }
    }

    #[test]
    fn transcripts_are_checked_before_they_are_opened() {
        let (d, p) = file_with(b"0123456789");
        assert!(check_regular(&p, "a transcript", 10).is_ok());
        assert_eq!(
            check_regular(&p, "a transcript", 9)
                .unwrap_err()
                .exit_code(),
            3
        );
        assert_eq!(
            check_regular(d.path(), "a transcript", 10)
                .unwrap_err()
                .exit_code(),
            3
        );
    }

    #[test]
    fn output_paths_need_an_existing_directory() {
        let d = tempfile::tempdir().unwrap();
        assert!(output_parent_exists(&d.path().join("out.svg"), "--plot").is_ok());
        assert!(output_parent_exists(Path::new("out.svg"), "--plot").is_ok());
        let e = output_parent_exists(&d.path().join("nope/out.svg"), "--plot").unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("does not exist"), "{e}");
        assert!(!d.path().join("nope").exists());
    }

    #[test]
    fn columns_count_characters() {
        let text = "{\n\"ééééé\": x}";
        // serde_json puts the error at byte column 15 (after `x`'s start).
        let e = serde_json::from_str::<serde_json::Value>(text).unwrap_err();
        assert_eq!((e.line(), e.column()), (2, 15));
        assert_eq!(char_column(text, e.line(), e.column()), 10);
        assert_eq!(char_column("aé", 1, 2), 2, "inside a character counts it");
        assert_eq!(char_column("", 5, 0), 1);
    }
}
