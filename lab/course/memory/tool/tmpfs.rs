//! The full-disk rows for a process: its sandbox on a size-limited tmpfs
//! mounted under the run directory, filled once the row has planted its
//! files. Only root may mount one (Linux, `CAP_SYS_ADMIN`); elsewhere the
//! row is skipped, saying so. An in-process implementation meets a full
//! disk through the storage's fault backend instead.

use std::io::Write;
use std::path::Path;

use super::harness::{run_once, Faults, Maker, Row, ToolVerdict};
use crate::error::{LabError, LabResult};

/// Size of the tmpfs: room for a sandbox and its planted files.
const SIZE: u64 = 1024 * 1024;

/// The file that takes the tmpfs's free space, beside the sandbox.
const FILLER: &str = "filler";

/// Run a full-disk row against a process on a full tmpfs.
pub fn run(row: &Row, make: &Maker<'_>, tmp: &Path) -> LabResult<ToolVerdict> {
    let dir = tempfile::Builder::new()
        .prefix("tmpfs-")
        .tempdir_in(tmp)
        .map_err(|e| LabError::io("creating a tmpfs mount point", tmp, e))?;
    let mount = match Mount::new(dir.path()) {
        Ok(m) => m,
        Err(why) => return Ok(ToolVerdict::Skipped(why)),
    };
    let faults = Faults {
        fill_disk: Some(fill),
        ..Faults::default()
    };
    let run = run_once(row, make, dir.path(), &faults);
    drop(mount);
    Ok(run?.verdict)
}

/// Take every free byte of the tmpfs at `dir`. Refuses to go past twice
/// the tmpfs's size: `dir` is then not the small tmpfs this module mounts,
/// and filling it would fill a real disk.
pub fn fill(dir: &Path) -> LabResult<()> {
    let path = dir.join(FILLER);
    let io = |e| LabError::io("filling the tmpfs", &path, e);
    let mut f = std::fs::File::create(&path).map_err(io)?;
    let chunk = [0u8; 4096];
    let mut written = 0u64;
    while written <= 2 * SIZE {
        match f.write(&chunk) {
            Ok(0) => return Ok(()),
            Ok(n) => written += n as u64,
            Err(e) if e.kind() == std::io::ErrorKind::StorageFull => return Ok(()),
            Err(e) => return Err(io(e)),
        }
    }
    Err(LabError::io(
        "filling the tmpfs",
        &path,
        std::io::Error::other(
            "wrote twice the tmpfs size without a full disk: not a size-limited tmpfs",
        ),
    ))
}

/// A mounted tmpfs, unmounted (lazily, so nothing can keep it busy) on drop.
struct Mount {
    #[cfg(target_os = "linux")]
    target: std::ffi::CString,
}

impl Mount {
    #[cfg(target_os = "linux")]
    fn new(dir: &Path) -> Result<Mount, String> {
        use std::os::unix::ffi::OsStrExt;
        // SAFETY: geteuid takes no arguments and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return Err("a full disk for a process is a size-limited tmpfs, which only root may mount: run lab memcheck as root to include this row".into());
        }
        let target = std::ffi::CString::new(dir.as_os_str().as_bytes())
            .map_err(|_| "the run directory's path holds a NUL byte".to_string())?;
        let options = std::ffi::CString::new(format!("size={SIZE},mode=0700"))
            .expect("no NUL in the options");
        // SAFETY: every pointer is a NUL-terminated string that outlives the call.
        let r = unsafe {
            libc::mount(
                c"tmpfs".as_ptr(),
                target.as_ptr(),
                c"tmpfs".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV,
                options.as_ptr().cast(),
            )
        };
        if r != 0 {
            let e = std::io::Error::last_os_error();
            return Err(format!("mounting a size-limited tmpfs failed ({e}): run lab memcheck as root with CAP_SYS_ADMIN to include this row"));
        }
        Ok(Mount { target })
    }

    #[cfg(not(target_os = "linux"))]
    fn new(_: &Path) -> Result<Mount, String> {
        Err("a full disk for a process is a size-limited tmpfs, mounted on Linux only".into())
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        // SAFETY: the target is a NUL-terminated string this value owns.
        #[cfg(target_os = "linux")]
        unsafe {
            libc::umount2(self.target.as_ptr(), libc::MNT_DETACH);
        }
    }
}
