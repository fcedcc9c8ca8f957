//! The lock file (`<path>.lock`) whose `flock` orders writers and rotations
//! of one audit log across processes.

use std::ffi::{OsStr, OsString};
use std::fs::File;

use crate::dirfd::Dir;

/// Opens (creating) the lock file of the log `name` in `dir`; `None`,
/// logged, when it cannot be created.
pub(super) fn open_lock_file(dir: &Dir, name: &OsStr) -> Option<File> {
    match dir.open_append(&lock_name(name), 0o666) {
        Ok(lock) => Some(lock),
        Err(e) => {
            tracing::warn!(
                path = %dir.path().join(name).display(), error = %e,
                "audit lock file cannot be created; only this process's writes are ordered across rotations"
            );
            None
        }
    }
}

/// `<name>.lock`: the file whose `flock` orders writers and rotations of
/// the log `name` across processes.
fn lock_name(name: &OsStr) -> OsString {
    let mut lock = name.to_owned();
    lock.push(".lock");
    lock
}

/// An `flock` held until dropped; nothing when there is no lock file or the
/// lock cannot be taken (logged: the write goes on unordered rather than lost).
pub(super) struct Flock<'a>(Option<&'a File>);

impl<'a> Flock<'a> {
    pub(super) fn new(file: Option<&'a File>, operation: libc::c_int) -> Self {
        use std::os::fd::AsRawFd;
        let Some(file) = file else { return Self(None) };
        loop {
            // SAFETY: `file` is an open descriptor for the duration of the call.
            if unsafe { libc::flock(file.as_raw_fd(), operation) } == 0 {
                return Self(Some(file));
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                tracing::error!(error = %e, "audit lock failed");
                return Self(None);
            }
        }
    }
}

impl Drop for Flock<'_> {
    fn drop(&mut self) {
        use std::os::fd::AsRawFd;
        if let Some(file) = self.0 {
            // SAFETY: as above; unlocking a descriptor this process locked.
            unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_UN) };
        }
    }
}
