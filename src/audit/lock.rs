//! The lock file (`<path>.lock`) whose `flock` orders writers and rotations
//! of one audit log across processes.

use std::ffi::{OsStr, OsString};
use std::fs::File;

use rustix::fs::FlockOperation;

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
    pub(super) fn new(file: Option<&'a File>, operation: FlockOperation) -> Self {
        let Some(file) = file else { return Self(None) };
        loop {
            match rustix::fs::flock(file, operation) {
                Ok(()) => return Self(Some(file)),
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => {
                    tracing::error!(error = %e, "audit lock failed");
                    return Self(None);
                }
            }
        }
    }
}

impl Drop for Flock<'_> {
    fn drop(&mut self) {
        if let Some(file) = self.0 {
            let _ = rustix::fs::flock(file, FlockOperation::Unlock);
        }
    }
}
