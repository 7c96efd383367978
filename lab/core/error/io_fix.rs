//! The fix printed under a file-system error, from what kind it is: every
//! file-system error names its path (in the message) and a way out.

use std::io::ErrorKind;

/// What to do about an I/O error of `kind`.
pub fn fix(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::NotFound => "check the path: it, or a directory on it, does not exist",
        ErrorKind::PermissionDenied | ErrorKind::ReadOnlyFilesystem => {
            "the path is not writable (or readable) by this user: change its permissions, or choose another path"
        }
        ErrorKind::StorageFull | ErrorKind::QuotaExceeded => {
            "the disk is full: free space, or write somewhere else"
        }
        ErrorKind::AlreadyExists => "remove the existing file, or choose another path",
        ErrorKind::IsADirectory => "give the path of a file, not a directory",
        ErrorKind::NotADirectory => "a part of the path is a file, not a directory: fix the path",
        ErrorKind::InvalidData => "the file is not text in the expected encoding: check it",
        ErrorKind::Interrupted | ErrorKind::WouldBlock | ErrorKind::TimedOut => {
            "run the command again"
        }
        _ => "check the path and that the file system is healthy, then run the command again",
    }
}
