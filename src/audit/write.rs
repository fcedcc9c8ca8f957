//! Writing: one record appended as one line, safely beside other processes
//! appending to the same file.

use std::fs::File;
use std::io::Write;
use std::sync::PoisonError;

use serde_json::{Map, Value};

use super::AuditLog;
use super::lock::Flock;
use super::timestamp::rfc3339_now;
use crate::dirfd::{self, Dir};

/// The live file and its lock file, as this process holds them.
#[derive(Debug)]
pub(super) struct Writer {
    /// The live file as this process opened it (`O_APPEND`).
    pub(super) file: Option<File>,
    /// `<path>.lock`, locked shared around each write and exclusively around
    /// a rotation, so that several processes can share one log; `None` when
    /// it cannot be created (then only this process's writers are ordered).
    pub(super) lock: Option<File>,
}

impl AuditLog {
    /// Appends one record (adding `timestamp` if missing). Never fails: a disk
    /// error is logged and the call goes on.
    ///
    /// Safe with other processes writing the same path: each line is one
    /// `write` to a file opened with `O_APPEND` while holding a shared lock on
    /// `<path>.lock`; a file that another process rotated away is noticed
    /// (its device and inode no longer match the path) and reopened; and a
    /// rotation holds the lock exclusively and re-checks the size first.
    pub fn record(&self, mut entry: Map<String, Value>) {
        entry.entry("timestamp").or_insert_with(|| Value::from(rfc3339_now()));
        let mut line = Value::Object(entry).to_string();
        line.push('\n');
        let mut writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let writer = &mut *writer;
        let Some(size) = self.append(writer, &line) else {
            return;
        };
        if size >= self.settings.max_bytes {
            self.rotate_if_full(writer);
        }
    }

    /// Writes `line` under the shared lock: the live file's size after it, or
    /// `None` when it could not be written (logged).
    fn append(&self, writer: &mut Writer, line: &str) -> Option<u64> {
        let _shared = Flock::new(writer.lock.as_ref(), rustix::fs::FlockOperation::LockShared);
        self.reopen_if_moved(&mut writer.file);
        let Some(file) = writer.file.as_mut() else {
            tracing::error!(path = %self.settings.path.display(), "audit log unavailable; record dropped");
            return None;
        };
        if let Err(e) = file.write_all(line.as_bytes()) {
            tracing::error!(path = %self.settings.path.display(), error = %e, "audit log write failed");
            return None;
        }
        Some(file.metadata().map(|m| m.len()).unwrap_or(0))
    }

    /// Reopens the live file when `file` is missing or no longer what the
    /// name in the folder leads to (another process rotated it away).
    pub(super) fn reopen_if_moved(&self, file: &mut Option<File>) {
        let dir = self.dir();
        if let Some(open) = file.as_ref()
            && self.is_live(&dir, open)
        {
            return;
        }
        *file = match dir.open_append(self.live(), 0o666) {
            Ok(reopened) => Some(reopened),
            Err(e) => {
                tracing::error!(path = %self.settings.path.display(), error = %e, "audit log cannot be reopened");
                None
            }
        };
    }

    /// Whether `open` is the file the live name leads to.
    pub(super) fn is_live(&self, dir: &Dir, open: &File) -> bool {
        match (dir.stat(self.live()), dirfd::stat_file(open)) {
            (Ok(live), Ok(open)) => live.identity == open.identity,
            _ => false,
        }
    }

    /// Size of the live file in bytes (written by any process).
    pub fn size(&self) -> u64 {
        self.dir().stat(self.live()).map(|s| s.len).unwrap_or(0)
    }
}
