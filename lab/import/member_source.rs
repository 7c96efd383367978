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

/// The text of `source`: a file, or a member of an archive named
/// `ARCHIVE[MEMBER]`. The same refusals as the importer's (a FIFO, a
/// device, over [`MAX_TRANSCRIPT_BYTES`]).
pub fn read_text(source: &Path) -> std::io::Result<String> {
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
}
