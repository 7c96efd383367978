//! Reading a session's source again, wherever it came from. A session
//! imported from a tar archive is named `ARCHIVE[MEMBER]` (its
//! [`super::ImportedSession::source`]); readers that go back to the log for
//! more than the import kept (the recorded usage of a Claude Code log) read
//! it through [`read_text`], which finds the member through the archive's
//! index ([`super::tar_index`]), so an archive replays as its unpacked
//! files do without a walk of the archive per member.

use std::path::{Path, PathBuf};

use super::corpus::Compression;
use crate::input::{check_regular, MAX_TRANSCRIPT_BYTES};

/// `ARCHIVE[MEMBER]` split into the archive's path and the member's name,
/// when `source` names a member of an archive that exists.
pub fn split(source: &Path) -> Option<(PathBuf, String)> {
    let s = source.to_str()?;
    let inner = s.strip_suffix(']')?;
    // The archive's own name may hold brackets: try every `[` from the left.
    for (at, _) in inner.match_indices('[') {
        let archive = Path::new(&inner[..at]);
        if Compression::of(archive).is_some() && archive.is_file() {
            return Some((archive.to_path_buf(), inner[at + 1..].to_string()));
        }
    }
    None
}

/// `FILE#row=N` split into the Parquet file's path and the row number,
/// when `source` names a row of a Parquet file that exists.
pub fn split_row(source: &Path) -> Option<(PathBuf, usize)> {
    let s = source.to_str()?;
    let (file, row) = s.rsplit_once("#row=")?;
    let n = row.parse().ok()?;
    let file = Path::new(file);
    (file.is_file() && super::parquet_rows::is_parquet(file)).then(|| (file.to_path_buf(), n))
}

/// Whether `source` names an archive member or a Parquet row rather than
/// a file of its own.
pub fn is_member(source: &Path) -> bool {
    !source.exists() && (split(source).is_some() || split_row(source).is_some())
}

/// The text of `source`: a file, a member of an archive named
/// `ARCHIVE[MEMBER]`, or a row of a Parquet file named `FILE#row=N`. The
/// same refusals as the importer's (a FIFO, a device, over
/// [`MAX_TRANSCRIPT_BYTES`]).
pub fn read_text(source: &Path) -> std::io::Result<String> {
    if let Some((file, n)) = split_row(source).filter(|_| !source.exists()) {
        refuse(check_regular(&file, "a Parquet file", u64::MAX))?;
        return super::parquet_rows::row_text(&file, n);
    }
    let Some((archive, member)) = split(source).filter(|_| !source.exists()) else {
        refuse(check_regular(source, "a transcript", MAX_TRANSCRIPT_BYTES))?;
        return std::fs::read_to_string(source);
    };
    refuse(check_regular(&archive, "an archive", u64::MAX))?;
    let c = Compression::of(&archive).unwrap_or(Compression::None);
    super::tar_index::read_member(&archive, c, &member)
}

fn refuse(checked: crate::error::LabResult<()>) -> std::io::Result<()> {
    checked.map_err(|e| std::io::Error::other(e.parts().0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_is_read_back_from_its_archive() {
        let dir = tempfile::tempdir().unwrap();
        let tar_path = dir.path().join("logs[1].tar");
        let mut b = tar::Builder::new(std::fs::File::create(&tar_path).unwrap());
        let mut h = tar::Header::new_gnu();
        h.set_size(5);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, "a/s.jsonl", &b"hello"[..]).unwrap();
        b.finish().unwrap();
        drop(b);
        let source = PathBuf::from(format!("{}[a/s.jsonl]", tar_path.display()));
        assert_eq!(split(&source), Some((tar_path.clone(), "a/s.jsonl".into())));
        assert_eq!(read_text(&source).unwrap(), "hello");
        let missing = PathBuf::from(format!("{}[b.jsonl]", tar_path.display()));
        let e = read_text(&missing).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
        assert!(split(Path::new("plain.jsonl")).is_none());
    }

    #[test]
    fn a_row_is_read_back_from_its_parquet_file() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/import/fixtures/parquet");
        let file = dir.join("documents.parquet");
        let source = PathBuf::from(format!("{}#row=3", file.display()));
        assert_eq!(split_row(&source), Some((file.clone(), 3)));
        assert!(is_member(&source));
        let text = read_text(&source).unwrap();
        let messages: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            messages[1]["content"]
                .as_str()
                .map(|c| c.starts_with("<uploaded_files>")),
            Some(true)
        );
        let missing = PathBuf::from(format!("{}#row=4", file.display()));
        assert_eq!(
            read_text(&missing).unwrap_err().kind(),
            std::io::ErrorKind::NotFound
        );
        assert!(split_row(Path::new("plain.jsonl#row=1")).is_none());
    }
}
